"""Printed commands that paste into bash, zsh and fish alike.

``shlex.quote`` is POSIX-sh quoting: it leaves ``==0.33.0`` bare, which zsh expands as a command
path (``zsh: =0.33.0 not found``). Every command the tool prints is joined here.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable


def quote(word: str) -> str:
    """``word`` as one shell word in bash, zsh and fish."""
    quoted = shlex.quote(word)
    if quoted == word and word.startswith("="):
        return f"'{word}'"  # zsh's EQUALS expansion; fish and bash take the quotes as nothing
    return quoted


def join(words: Iterable[str]) -> str:
    return " ".join(quote(w) for w in words)


def home_word(word: str) -> str:
    """Like ``quote``, but a leading ``~/`` stays the user's home: quoted, ``~`` would be a
    directory named "~" (``"$HOME"/...`` expands in bash, zsh and fish alike)."""
    if word.startswith("~/") and quote(word[1:]) == word[1:]:
        return '"$HOME"' + word[1:]
    return quote(word)
