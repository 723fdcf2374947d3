"""Slurm host lists: ``gpu[001-003,007],login1`` <-> the names they stand for.

The syntax is Slurm's (``scontrol show hostnames`` / ``scontrol show hostlist``): a prefix and a
bracketed list of numbers or zero-padded ranges, then an optional suffix; ranges keep the width
of their lower bound. Names are compressed by prefix, suffix and number width, in order.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from resolver.util.errors import InputError

# One name or pattern at a time: ``gpu[001-004,9]`` or ``n1``. Nested brackets are not Slurm's.
_BRACKET_RE = re.compile(r"^([^\[\],]*)\[([0-9,\-]+)\]([^\[\],]*)$")
# A host name as util.safety's node_name has it (fullmatch: "$" would take a trailing "\n").
_NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,251}[A-Za-z0-9])?")
# The last run of ASCII digits, at most 18 (a longer run stays a plain name: no int() of it).
_NUMBERED_RE = re.compile(r"(.*?)(?<![0-9])([0-9]{1,18})([^0-9]*)")
_DIGITS_RE = re.compile(r"[0-9]{1,18}")
MAX_HOSTS = 1_000_000


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def expand(text: str) -> list[str]:
    """The names a host list stands for, in order, without duplicates."""
    out: dict[str, None] = {}
    for part in _split_top(text):
        match = _BRACKET_RE.match(part)
        if match is None:
            if not _NAME_RE.fullmatch(part):
                raise InputError(
                    f"{part!r} is not a host name or host list",
                    hint="write names like gpu[001-004],gpu010",
                )
            out[part] = None
            continue
        prefix, body, suffix = match.groups()
        for item in body.split(","):
            lo, sep, hi = item.partition("-")
            if not _DIGITS_RE.fullmatch(lo) or (sep and not _DIGITS_RE.fullmatch(hi)):
                raise InputError(
                    f"{part!r}: {item!r} is not a number or range",
                    hint="write ranges like [001-004]",
                )
            start, end = int(lo), int(hi) if sep else int(lo)
            if end < start or end - start > MAX_HOSTS:
                raise InputError(
                    f"{part!r}: range {item!r} is empty or too large", hint="write ranges low-high"
                )
            width = len(lo)
            for n in range(start, end + 1):
                name = f"{prefix}{n:0{width}d}{suffix}"
                if not _NAME_RE.fullmatch(name):
                    raise InputError(
                        f"{part!r} makes {name!r}, not a host name",
                        hint="check the prefix and suffix",
                    )
                out[name] = None
        if len(out) > MAX_HOSTS:
            raise InputError(
                "the host list names more than a million hosts", hint="give a smaller node list"
            )
    return list(out)


def _ranges(numbers: list[int], width: int) -> str:
    spans: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        spans.append(
            f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}"
        )
        if n is not None:
            start = prev = n
    return ",".join(spans)


def compress(names: Iterable[str]) -> str:
    """The shortest Slurm host list for ``names``: ``gpu001 gpu002 gpu003`` -> ``gpu[001-003]``."""
    return _compress(tuple(names))


# A fleet plan asks for each group's list several times (its scripts, manifests, table and JSON):
# once each, not ~5 regex passes over every name (150 ms of a 10,000-node plan).
@functools.lru_cache(maxsize=256)
def _compress(names: tuple[str, ...]) -> str:
    padded: dict[tuple[str, str], dict[int, set[int]]] = {}
    free: dict[tuple[str, str], set[int]] = {}
    order: list[tuple[str, str] | str] = []
    plain: set[str] = set()
    for name in names:
        match = _NUMBERED_RE.fullmatch(name)
        if match is None:
            if name not in plain:
                plain.add(name)
                order.append(name)
            continue
        prefix, digits, suffix = match.groups()
        key = (prefix, suffix)
        if key not in padded:
            padded[key], free[key] = {}, set()
            order.append(key)
        if digits.startswith("0") and len(digits) > 1:
            padded[key].setdefault(len(digits), set()).add(int(digits))
        else:
            free[key].add(int(digits))
    parts: list[str] = []
    for item in order:
        if isinstance(item, str):
            parts.append(item)
            continue
        widths = padded[item]
        rest: set[int] = set()
        for n in free[item]:
            # 100 fits a width-3 list ([098-101]); 7 does not fit [001-003] and stays apart.
            fits = [w for w in widths if len(str(n)) >= w]
            (widths[max(fits)] if fits else rest).add(n)
        groups = [(w, sorted(ns)) for w, ns in sorted(widths.items())]
        if rest:
            groups.append((0, sorted(rest)))
        prefix, suffix = item
        for width, numbers in groups:
            if len(numbers) == 1 or suffix:
                # Slurm reads no text after a bracket (`n[1-2]a` expands to nothing): names
                # with a suffix are listed one by one.
                parts += [f"{prefix}{n:0{width}d}{suffix}" for n in numbers]
            else:
                parts.append(f"{prefix}[{_ranges(numbers, width)}]{suffix}")
    return ",".join(parts)
