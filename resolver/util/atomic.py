"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

# A writer killed between mkstemp and rename (kill -9, power loss) leaves its temp file behind;
# the next write into the same directory removes such leftovers once they are this old (no live
# writer takes that long for the files this tool writes).
STALE_AFTER = 15 * 60.0
# What mkstemp(prefix=".NAME.", suffix=".tmp") makes: 8 random characters from [a-z0-9_].
# A pattern ``re`` compiles on first use (a check writes no file).
_TEMP_RE = r"\..+\.[a-z0-9_]{8}\.tmp\Z"


def write_atomic(
    path: Path, data: bytes | str, *, mode: int | None = None, make_parent: bool = True
) -> None:
    """Write to a temporary file next to ``path``, fsync it, then rename it over ``path``.

    Creates the parent directory unless told not to (a user's ``-o DIR/FILE`` should not invent
    directories); raises ``OSError`` (callers say what it means for them)."""
    if make_parent:
        path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # only where a file is written (not on `check`'s path)

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            Path(tmp).chmod(mode)
        Path(tmp).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise
    sweep_stale(path.parent)


def sweep_stale(
    directory: Path, *, older_than: float = STALE_AFTER, now: float | None = None
) -> list[Path]:
    """Remove this module's leftover temp files (``.NAME.XXXXXXXX.tmp``) older than
    ``older_than`` seconds from ``directory``; returns what was removed. Never raises."""
    removed: list[Path] = []
    cutoff = (time.time() if now is None else now) - older_than
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not re.fullmatch(_TEMP_RE, entry.name, re.DOTALL):
            continue
        with contextlib.suppress(OSError):
            st = entry.stat(follow_symlinks=False)
            if entry.is_file(follow_symlinks=False) and st.st_mtime < cutoff:
                Path(entry.path).unlink()
                removed.append(Path(entry.path))
    return removed


def check_output(path: Path) -> None:
    """Refuse, before anything is written, a user's ``-o``/``--lock`` target that
    ``write_output`` would refuse (a directory, a missing or unwritable directory), so a command
    with two outputs never leaves one written and then fails on the other. Raises the same
    ``InputError`` (exit 2)."""
    from resolver.util.errors import InputError
    from resolver.util.safety import shown

    why = None
    try:
        path.lstat()
    except FileNotFoundError:
        pass
    except OSError as exc:  # a name of 256+ bytes, a loop, a file as a parent: said, not a crash
        raise InputError(
            f"cannot write {shown(str(path))}: {exc.strerror or type(exc).__name__}",
            hint="give a file in an existing, writable directory (or -o /dev/stdout)",
        ) from None
    if path.is_dir():
        why = "Is a directory"
    elif path.exists() and not path.is_file():
        if not os.access(path, os.W_OK):
            why = "Permission denied"
    elif not path.resolve().parent.is_dir():
        why = "No such file or directory"
    elif not os.access(path.resolve().parent, os.W_OK | os.X_OK):
        why = "Permission denied"
    if why is not None:
        raise InputError(
            f"cannot write {shown(str(path))}: {why}",
            hint="give a file in an existing, writable directory (or -o /dev/stdout)",
        )


def write_output(path: Path, text: str) -> None:
    """A user's ``-o FILE``: a regular file is replaced atomically (mode 0644); a device or pipe
    that already exists (``-o /dev/stdout``, a FIFO) is written into, never renamed over; a
    directory is refused. Raises ``InputError`` (exit 2) saying what went wrong."""
    from resolver.util.errors import InputError

    try:
        if path.is_dir():
            raise IsADirectoryError(21, "Is a directory")
        if path.exists() and not path.is_file():
            with path.open("w", encoding="utf-8") as fh:
                fh.write(text)
            return
        write_atomic(path.resolve(), text, mode=0o644, make_parent=False)
    except OSError as exc:
        raise InputError(
            f"cannot write {path}: {exc.strerror or exc.__class__.__name__}",
            hint="give a file in an existing, writable directory (or -o /dev/stdout)",
        ) from None
