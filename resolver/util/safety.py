"""Strict patterns for every value that can reach a shell line, a Dockerfile, a batch script, a
manifest or a URL.

Data files, upstream responses, probe reports, node lists and scheduler output are not trusted: a
repo, ref, image tag, gfx name, node name or label value that does not match is refused where it
enters, so nothing can inject shell into a generated RUN line or batch script, or a YAML document
into a manifest. ``check_tree`` refuses the characters no fact needs in any string of a parsed
report (control characters, line and paragraph separators, lone surrogates, bidi overrides): a
terminal escape or a line break never reaches a terminal or a generated file.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Final

from resolver.util.errors import UnsafeInputError, UnsafeValueError

# The patterns as text, compiled on first use (``_pattern``): a `check` that never meets one pays
# nothing for it.
_SOURCES: Final[dict[str, str]] = {
    # GitHub owner/name
    "repo": r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}\Z",
    # git commit, tag or branch: no spaces, no shell or Dockerfile metacharacters, no "..".
    "ref": r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._/+-]{0,127}\Z",
    # OCI repository path (registry host optional) and tag, per the distribution spec grammar.
    "image_repo": (
        r"^(?:[a-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._-][a-z0-9]+)*"
        r"(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*\Z"
    ),
    "image_tag": r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z",
    "digest": r"^sha256:[0-9a-f]{64}\Z",
    "gfx": r"^gfx[0-9a-f]{3,4}\Z",
    "version": r"^[0-9]{1,9}(?:\.[0-9]{1,9}){0,3}(?:[a-z0-9.+-]{0,40})\Z",
    # a CPython minor as uv/pip take it, and HSA_OVERRIDE_GFX_VERSION's major.minor.stepping
    "python": r"^3\.[0-9]{1,2}\Z",
    "gfx_override": r"^[0-9]{1,2}\.[0-9]{1,3}\.[0-9]{1,3}\Z",
    "env_name": r"^[A-Z][A-Z0-9_]{0,63}\Z",
    "env_value": r"^[A-Za-z0-9_.,:;=/+-]{0,200}\Z",
    # A Slurm node name or host name (RFC 1123 labels; Slurm also takes "_"): what becomes a
    # file name in `fleet gather -o DIR`, so no "/", no leading "." or "-".
    "node_name": r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,251}[A-Za-z0-9])?\Z",
    # A Kubernetes object name (DNS subdomain, RFC 1123) and a label value (63 characters).
    "k8s_name": (
        r"^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)*\Z"
    ),
    "label_value": r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?\Z",
    "label_key": r"^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}"
    r"[A-Za-z0-9])?\Z",
    # uname -r: 6.8.0-45-generic, 5.14.0-427.13.1.el9_4.x86_64, 6.6.87.2-microsoft-standard-WSL2
    "kernel": r"^[A-Za-z0-9][A-Za-z0-9._+~-]{0,127}\Z",
    "pci_id": r"^(?:0[xX])?[0-9A-Fa-f]{1,8}\Z",
    "pci_bdf": r"^(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\Z",
    "unique_id": r"^[A-Za-z0-9][A-Za-z0-9:._-]{0,63}\Z",
    # A Slurm partition name (sinfo's answer, --partition).
    "partition": r"^[A-Za-z0-9_.-]{1,64}\Z",
    "url": r"^https?://(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%/+-]*)?\Z",
}


@functools.cache
def _pattern(kind: str) -> re.Pattern[str]:
    return re.compile(_SOURCES[kind])


# What no fact in a report needs and what breaks a line, a comment or a terminal: C0 and C1
# control characters (ESC starts terminal escapes; NEL, CR and LF end lines in YAML or bash), DEL,
# the line and paragraph separators YAML breaks at, bidi overrides and isolates (they reorder what
# a reader sees), lone surrogates (they cannot be written as UTF-8) and the BOM.
_UNSAFE: Final = "\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff"
# Tabs and newlines are kept in free text that is only ever shown quoted (a problem's message).
_UNSAFE_IN_TEXT: Final = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff"
)


@functools.cache
def _unsafe(multiline: bool) -> re.Pattern[str]:
    return re.compile(f"[{_UNSAFE_IN_TEXT if multiline else _UNSAFE}]")  # compiled on first use


MAX_TEXT = 4096  # longer than any message, product name or path a probe reports


def unsafe_char(value: str, *, multiline: bool = False) -> str | None:
    """The first character ``value`` must not carry, as ``U+XXXX``; None when it is clean."""
    found = _unsafe(multiline).search(value)
    return f"U+{ord(found.group()):04X}" if found else None


def shown(text: str, *, limit: int = 512) -> str:
    """Untrusted ``text`` as it may be printed or written into a message, a comment or a report
    listing: itself when it is printable ASCII of at most ``limit`` characters, else escaped
    (``ascii``), so that no line break, escape sequence or bidi override is shown as such."""
    if text.isascii() and text.isprintable() and len(text) <= limit:
        return text
    return ascii(text[:limit])


def check_tree(value: object, *, where: str) -> None:
    """Refuse (``InputError``) any string in a parsed report, key or value, that carries a
    character ``unsafe_char`` names or is longer than ``MAX_TEXT``."""
    # Most strings are printable ASCII and pass two C-level tests where they sit; only containers
    # travel on the stack, each with where it sits as (parent's place, key or index, kind), worded
    # only for the one refused.
    if isinstance(value, str):
        _check_text(value, None, where)
    stack: list[tuple[object, _Place | None]] = [(value, None)]
    while stack:
        item, place = stack.pop()
        if isinstance(item, dict):
            for k, v in item.items():
                if not (
                    isinstance(k, str) and len(k) <= MAX_TEXT and k.isascii() and k.isprintable()
                ):
                    _check_text(k, (place, k, _KEY), where)
                if isinstance(v, str):
                    if not (len(v) <= MAX_TEXT and v.isascii() and v.isprintable()):
                        _check_text(v, (place, k, _MEMBER), where)
                elif isinstance(v, (dict, list)):
                    stack.append((v, (place, k, _MEMBER)))
        elif isinstance(item, list):
            for i, v in enumerate(item):
                if isinstance(v, str):
                    if not (len(v) <= MAX_TEXT and v.isascii() and v.isprintable()):
                        _check_text(v, (place, i, _ITEM), where)
                elif isinstance(v, (dict, list)):
                    stack.append((v, (place, i, _ITEM)))


def _check_text(item: object, place: _Place | None, where: str) -> None:
    if not isinstance(item, str):
        return
    bad = unsafe_char(item, multiline=True)
    if bad is not None or len(item) > MAX_TEXT:
        from resolver.util.errors import InputError

        why = f"carries {bad}" if bad else f"is longer than {MAX_TEXT} characters"
        raise InputError(
            f"{where}: {_worded(place) or 'a value'} {why}",
            hint="a probe report holds plain names and versions; write it with "
            "`rocm-vllm probe --json`",
        )


_MEMBER, _ITEM, _KEY = 0, 1, 2
_Place = tuple[Any, object, int]  # (the parent's _Place or None, key or index, kind)


def _worded(place: _Place | None) -> str:
    """Where an item sits, as ``check_tree`` names it: ``gpus[0].product``, ``a key in host``."""
    steps: list[tuple[object, int]] = []
    while place is not None:
        place, step, kind = place
        steps.append((step, kind))
    path = ""
    for step, kind in reversed(steps):
        if kind == _KEY:
            path = f"a key in {path or 'the report'}"
        elif kind == _ITEM:
            path = f"{path}[{step}]"
        else:
            # repr() escapes what is not printable: the message itself stays one clean line.
            name = (
                step
                if isinstance(step, str) and step.isprintable() and len(step) <= 64
                else repr(step)
            )
            path = f"{path}.{name}" if path else str(name)
    return path


def is_safe(kind: str, value: str) -> bool:
    # fullmatch, not match: a pattern ending in `$` still accepts a trailing newline.
    return bool(_pattern(kind).fullmatch(value))


def require_safe(kind: str, value: str, *, where: str) -> str:
    """Return ``value`` when it matches the ``kind`` pattern, else raise ``UnsafeValueError``."""
    if not isinstance(value, str) or not _pattern(kind).fullmatch(value):
        shown = repr(value[:80] + "..." if isinstance(value, str) and len(value) > 80 else value)
        if where.startswith("--"):  # a flag: the user's input (exit 2), not broken data (exit 3)
            raise UnsafeInputError(
                f"{where}: {shown} is not an acceptable {kind.replace('_', ' ')}",
                hint="only plain names, versions, commits and tags are accepted (no shell or "
                "Dockerfile syntax)",
            )
        raise UnsafeValueError(
            f"{where}: {shown} is not an acceptable {kind.replace('_', ' ')}",
            hint="only plain names, versions, commits and tags are accepted; "
            "fix the data (shell and Dockerfile syntax are refused)",
        )
    return value
