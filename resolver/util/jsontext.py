"""JSON text as the tool prints it: what ``json.dumps(data, indent=2, default=str)`` writes,
written by msgspec's encoder (a ``check --json`` report is ~65 KB; the standard library's
pure-Python indenting encoder costs more than the rest of rendering it)."""

from __future__ import annotations

import codecs
from typing import Any

# What json.dumps's ensure_ascii escapes beyond what msgspec's encoder already does: everything
# outside printable ASCII (so any terminal or locale reads the report). The ASCII codec finds
# them (in C, however long the report) and this handler writes each one's escape.
_ESCAPES = "rocm-vllm-json-escape"


def _escape_char(char: str) -> str:
    code = ord(char)
    if code > 0xFFFF:  # outside the BMP: a surrogate pair, as json writes it
        code -= 0x10000
        return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def _escapes(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "".join(map(_escape_char, error.object[error.start : error.end])), error.end


codecs.register_error(_ESCAPES, _escapes)


def dumps(data: Any) -> str:
    """``data`` as indented JSON text, exactly as ``json.dumps(data, indent=2, default=str)``
    writes it, with two exceptions that keep the value: a float below 1e-4 or from 1e16 up is
    spelled as msgspec spells it (``1e16``, ``0.00001``; json.dumps: ``1e+16``, ``1e-05``), and
    NaN and the infinities are ``null`` (json.dumps writes ``NaN``, which is not JSON)."""
    import msgspec

    try:
        raw = msgspec.json.encode(data, enc_hook=str)
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
        # What msgspec does not take the same way (a lone surrogate from a mis-encoded argument,
        # an int beyond 64 bits, a key that is not a string or an int): the standard library's.
        import json

        return json.dumps(data, indent=2, default=str)
    text = msgspec.json.format(raw, indent=2).decode()
    if "\x7f" in text:  # DEL is ASCII, and json escapes it too
        text = text.replace("\x7f", "\\u007f")
    if text.isascii():
        return text
    return text.encode("ascii", _ESCAPES).decode("ascii")
