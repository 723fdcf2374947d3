"""Bounded, validating readers shared by every input channel.

Every file, cache entry and response body the tool reads goes through one of these: a regular
file only (a FIFO, device or socket is refused instead of blocking or reading forever), a size
cap, a nesting limit on JSON/TOML (a RecursionError is a parse error here, not a crash), and
ASCII-only integers of bounded length (``isdigit()`` accepts superscripts and other scripts'
digits; Python's int-string limit turns a 5,000-digit number into a ValueError).

The OS errors raised are ``OSError`` subclasses with a readable ``strerror``, so every caller's
existing ``except OSError`` says what was wrong.
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
from pathlib import Path
from typing import Any, Final

MiB: Final = 1024 * 1024
# Deeper than any real probe JSON, overlay or TOML data file (they nest 5-6 levels).
MAX_DEPTH: Final = 64
MAX_INT_DIGITS: Final = 20  # 2**64 - 1 (a KFD unique_id) has 20 digits

# Strings: re compiles (and caches) each on first use, not at every start of the CLI.
_ASCII_INT = r"[0-9]{1,20}"
_ASCII_HEX = r"(?:0[xX])?[0-9a-fA-F]{1,16}"


class NotRegularFileError(OSError):
    """A FIFO, character or block device, or socket where a file was expected."""

    def __init__(self, path: Path | str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"is a {kind}, not a regular file")
        self.filename = str(path)


class TooLargeError(OSError):
    def __init__(self, path: Path | str, limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than {_size(limit)}")
        self.filename = str(path)
        self.limit = limit


class TooDeepError(ValueError):
    """JSON or TOML nested deeper than ``MAX_DEPTH`` (or than the interpreter can parse)."""

    def __init__(self) -> None:
        super().__init__(f"nested deeper than {MAX_DEPTH} levels")


def _size(limit: int) -> str:
    return (
        f"{limit // MiB} MiB"
        if limit >= MiB
        else f"{limit // 1024} KiB"
        if limit >= 1024
        else f"{limit} bytes"
    )


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISDIR(mode):
        return "directory"
    return "special file"


_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


def read_bytes(path: Path | str, limit: int) -> bytes:
    """The content of the regular file ``path`` (symlinks followed), at most ``limit`` bytes.

    Opened non-blocking so that a FIFO cannot hang the open; anything but a regular file raises
    ``NotRegularFileError``, a longer file ``TooLargeError``; other failures are plain OSError."""
    fd = os.open(path, _READ_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(path, _kind(mode))
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, min(1 * MiB, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise TooLargeError(path, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_stdin(limit: int) -> bytes:
    """Standard input, at most ``limit`` bytes (``TooLargeError`` past it): ``--node -`` and
    ``--kube -`` read a report or node list piped in, under the same cap as a file."""
    import sys

    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise TooLargeError("stdin", limit)
    return data


def read_text(path: Path | str, limit: int, *, errors: str = "strict") -> str:
    """``read_bytes`` decoded as UTF-8 (``UnicodeDecodeError`` unless ``errors`` says otherwise)."""
    return read_bytes(path, limit).decode("utf-8", errors=errors)


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Raise ``TooDeepError`` when lists/dicts in ``value`` nest deeper than ``limit``."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= limit:
            raise TooDeepError()
        stack.extend((child, depth + 1) for child in children)


def loads_json(data: str | bytes | bytearray, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` that never raises RecursionError and refuses non-finite numbers and
    numbers past the int-string limit as ValueError."""
    import json  # here: a `check` that reads no JSON file never needs it

    try:
        value = json.loads(data, parse_constant=_no_constant)
    except RecursionError:
        raise TooDeepError() from None
    check_depth(value, max_depth)
    return value


def json_failure(exc: ValueError, what: str) -> str:
    """Why ``loads_json`` refused a text, in words: where the syntax broke, or why the value is
    not ``what`` (nested too deep, NaN, a number past the int-string limit)."""
    import json

    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON (line {exc.lineno}, column {exc.colno})"
    return f"not {what} ({exc})"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_toml(text: str, *, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """``tomllib.loads`` with the same guarantees as ``loads_json`` (errors are TOMLDecodeError,
    a ValueError). tomllib is imported here: a run that reads the compiled matrix never needs it."""
    import tomllib

    try:
        value = tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError(f"nested deeper than {max_depth} levels") from None
    except tomllib.TOMLDecodeError:
        raise
    except ValueError as exc:  # a number past the int-string limit (not a TOMLDecodeError)
        raise tomllib.TOMLDecodeError(str(exc).split(";", 1)[0]) from None
    try:
        check_depth(value, max_depth)
    except TooDeepError as exc:
        raise tomllib.TOMLDecodeError(str(exc)) from None
    _check_toml_numbers(value)
    return value


def _check_toml_numbers(value: Any) -> None:
    import tomllib

    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise tomllib.TOMLDecodeError("a number is infinite or not a number")
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 2**63:
            raise tomllib.TOMLDecodeError("a number is too large")


def load_toml(path: Path | str, limit: int) -> dict[str, Any]:
    """A bounded read of a TOML file; OSError, UnicodeDecodeError or TOMLDecodeError."""
    return loads_toml(read_text(path, limit))


def ascii_int(text: object, *, max_digits: int = MAX_INT_DIGITS) -> int | None:
    """``text`` as a non-negative decimal integer when it is 1-``max_digits`` ASCII digits
    (surrounding blanks allowed), else None. ``"²"``, ``"٣"``, ``"1_0"`` and ``"9" * 5000`` are
    None, where ``isdigit()``/``int()`` accept them or raise."""
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    if len(stripped) > max_digits or not re.fullmatch(_ASCII_INT, stripped):
        return None
    return int(stripped)


def ascii_hex_int(text: object) -> int | None:
    """``0x74a1`` / ``74a1`` -> the number; None for anything else (ASCII only, 16 digits max)."""
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    if not re.fullmatch(_ASCII_HEX, stripped):
        return None
    return int(stripped, 16)
