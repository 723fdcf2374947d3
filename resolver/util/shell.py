"""Printed commands that paste into bash, zsh and fish alike.

``shlex.quote`` is POSIX-sh quoting: it leaves ``==0.33.0`` bare, which zsh expands as a command
path (``zsh: =0.33.0 not found``). Every command the tool prints is joined here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Self

# What an Expansion may hold: plain word characters and $name references, nothing else the
# shell would act on inside double quotes (no `, \, ", $( or ${). Compiled on first use (fleet
# scripts), not at every start.
_EXPANSION = r"(?:[A-Za-z0-9_./:=@+,-]|\$[A-Za-z_][A-Za-z0-9_]*)+"


class Expansion(str):
    """A word of a generated script that names shell variables (``vllm-g1-$n``,
    ``$port:$port``): written in double quotes so that they expand, and nothing else does."""

    __slots__ = ()

    def __new__(cls, word: str) -> Self:
        if not re.fullmatch(_EXPANSION, word):
            raise ValueError(f"not a plain word with $variables: {word!r}")
        return super().__new__(cls, word)


# The characters ``shlex.quote`` leaves bare (``[\w@%+=:,./-]`` under re.ASCII). Its rule, not
# its module: importing shlex compiles a pattern at every start, and a check prints commands.
_BARE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def _posix_quote(word: str) -> str:
    """``shlex.quote``: bare when every character is safe, else single-quoted with each ``'``
    spelled ``'"'"'`` (tests/test_cli_check.py proves them equal on any text)."""
    if not word:
        return "''"
    if _BARE.issuperset(word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def quote(word: str) -> str:
    """``word`` as one shell word in bash, zsh and fish (an ``Expansion`` in double quotes)."""
    if isinstance(word, Expansion):
        return f'"{word}"'
    quoted = _posix_quote(word)
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
