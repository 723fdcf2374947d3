"""What an unexpected exception leaves behind: a crash report in the cache dir, never a traceback.

Every expected failure is a ``ResolverError`` with its own exit code (2-5). Anything else is a
bug: the CLI saves the traceback with the command line and version to
``<cache dir>/crash/crash-<time>-<pid>.txt`` and exits with ``EXIT_INTERNAL`` (70, ``EX_SOFTWARE``
in sysexits.h), printing one ``error:`` line and one ``hint:`` line with the report's path.
"""

import contextlib
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Final

EXIT_INTERNAL: Final = 70


def save_report(exc: BaseException, argv: list[str]) -> Path | None:
    """Write the report; None when no directory can take it (the message then says so)."""
    from resolver import __version__
    from resolver.data import resources

    try:
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=60)
    except (RecursionError, MemoryError):  # pragma: no cover - a traceback too big to format
        lines = [f"{type(exc).__name__}\n"]
    text = (
        f"rocm-vllm {__version__} crash report\n"
        f"python: {sys.version.split()[0]}\n"
        f"argv: {argv!r}\n\n" + "".join(lines)[-200_000:]
    )
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    candidates = []
    with contextlib.suppress(Exception):  # the platform cache dir itself failed: fall back below
        candidates.append(resources.cache_dir() / "crash")
    candidates.append(Path(tempfile.gettempdir()))
    for directory in candidates:
        path = directory / f"crash-{stamp}-{os.getpid()}.txt"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as fh:
                fh.write(text)
        except OSError:
            continue
        return path
    return None


def one_line(exc: BaseException) -> str:
    """The exception's type and the first line of its message, at most 200 characters."""
    try:
        text = str(exc).splitlines()[0] if str(exc) else ""
    except Exception:  # noqa: BLE001 - a __str__ that fails
        text = ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__
