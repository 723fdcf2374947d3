"""Strict patterns for every value that can reach a shell line, a Dockerfile or a URL.

Data files and upstream responses are not trusted: a repo, ref, image tag or gfx name that does
not match is refused before it is used, so nothing can inject shell into a generated RUN line.
"""

from __future__ import annotations

import re
from typing import Final

from resolver.errors import UnsafeInputError, UnsafeValueError

PATTERNS: Final[dict[str, re.Pattern[str]]] = {
    # GitHub owner/name
    "repo": re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}\Z"),
    # git commit, tag or branch: no spaces, no shell or Dockerfile metacharacters, no "..".
    "ref": re.compile(r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._/+-]{0,127}\Z"),
    # OCI repository path (registry host optional) and tag, per the distribution spec grammar.
    "image_repo": re.compile(
        r"^(?:[a-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*\Z"
    ),
    "image_tag": re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z"),
    "digest": re.compile(r"^sha256:[0-9a-f]{64}\Z"),
    "gfx": re.compile(r"^gfx[0-9a-f]{3,4}\Z"),
    "version": re.compile(r"^[0-9]{1,9}(?:\.[0-9]{1,9}){0,3}(?:[a-z0-9.+-]{0,40})\Z"),
    # a CPython minor as uv/pip take it, and HSA_OVERRIDE_GFX_VERSION's major.minor.stepping
    "python": re.compile(r"^3\.[0-9]{1,2}\Z"),
    "gfx_override": re.compile(r"^[0-9]{1,2}\.[0-9]{1,3}\.[0-9]{1,3}\Z"),
    "env_name": re.compile(r"^[A-Z][A-Z0-9_]{0,63}\Z"),
    "env_value": re.compile(r"^[A-Za-z0-9_.,:;=/+-]{0,200}\Z"),
    "url": re.compile(
        r"^https?://(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%/+-]*)?\Z"
    ),
}


def is_safe(kind: str, value: str) -> bool:
    # fullmatch, not match: a pattern ending in `$` still accepts a trailing newline.
    return bool(PATTERNS[kind].fullmatch(value))


def require_safe(kind: str, value: str, *, where: str) -> str:
    """Return ``value`` when it matches the ``kind`` pattern, else raise ``UnsafeValueError``."""
    if not isinstance(value, str) or not PATTERNS[kind].fullmatch(value):
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
