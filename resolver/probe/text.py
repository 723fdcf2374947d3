"""Cleaning pasted tool output: ANSI colour codes (real or printed by a pager as ``ESC[37m``),
carriage returns, tmux scroll-position markers, markdown quote prefixes, and number parsing."""

from __future__ import annotations

import re

from resolver.util import bounded

_ANSI_RE = re.compile(r"(?:\x1b|\bESC)\[[0-9;?]*[A-Za-z]")
_OTHER_CTRL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# tmux copy-mode shows "[12/345]" at the right edge of the first line of the pane.
# Matched against the last 48 characters only: an unanchored `\s*...$` search is quadratic in a
# long run of blanks.
_TMUX_RE = re.compile(r"\[[0-9]{1,20}/[0-9]{1,20}\]\Z")
_QUOTE_RE = re.compile(r"^(?:>\s?)+")
_NUM_RE = re.compile(r"^\s*([0-9]+)\s*(?:\((0x[0-9a-fA-F]+)\))?")


def _strip_tmux(line: str) -> str:
    stripped = line.rstrip()
    if not stripped.endswith("]"):
        return line
    match = _TMUX_RE.search(stripped[-48:])
    return stripped[: len(stripped) - (match.end() - match.start())].rstrip() if match else line


def clean(text: str) -> list[str]:
    """The lines of a pasted output with terminal noise removed; indentation is kept."""
    text = _ANSI_RE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = []
    for raw in text.split("\n"):
        line = _OTHER_CTRL_RE.sub("", raw.replace("\t", "    "))
        line = _strip_tmux(line)
        line = _QUOTE_RE.sub("", line)
        lines.append(line.rstrip())
    return lines


def int_value(text: str | None) -> int | None:
    """``29857(0x74a1)`` -> 29857, ``304`` -> 304; anything else -> None."""
    if text is None:
        return None
    match = _NUM_RE.match(text)
    return bounded.ascii_int(match.group(1)) if match else None


def hex_in_parens(text: str | None) -> str | None:
    """``29857(0x74a1)`` -> ``"0x74a1"``, else the text itself."""
    if text is None:
        return None
    match = _NUM_RE.match(text)
    if match and match.group(2):
        return match.group(2)
    return text.strip()


def size_to_bytes(text: str | None) -> int | None:
    """``196592 MB`` / ``192 GB`` / ``201310208 KB`` / ``16760832(0xffc000) KB`` -> bytes."""
    if not text:
        return None
    match = re.match(
        r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(?:\(0x[0-9a-fA-F]+\))?\s*([KMGT]i?B|B)?\s*\Z",
        text.strip(),
        re.IGNORECASE,
    )
    if not match:
        return None
    unit = (match.group(2) or "B").upper().replace("I", "")
    factor = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}[unit]
    if len(match.group(1)) > 24:  # no memory size has more digits; float() would overflow
        return None
    value = float(match.group(1)) * factor
    return int(value) if value < 2**63 else None
