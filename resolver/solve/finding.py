"""Findings as data: what a check found, named by a wording key and the values it rests on.

A check decides which code applies, which of its wordings, and with which values; it never
writes the sentence. A ``Phrase`` names one part (message, hint, fix, a fact, the source the
advice cites) of one wording of ``resolver.explain.words`` with its values, and the explanation
layer words it (``resolver.explain.words.word``) for text, ``--explain``, JSON, hints, Dockerfile
headers and fleet reports alike, as uv's resolver keeps ``UnavailableVersion`` causes as data and
words them in its report. Values are plain data (versions, names, counts, tuples of names, and
other phrases for a clause that depends on the data).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import msgspec

Part = Literal["message", "hint", "fix", "fact", "source"]


class Phrase(msgspec.Struct, frozen=True, kw_only=True):
    """One part of one wording with its values; ``then``: clauses said right after it.

    ``key`` "" is text the data or the probe already holds (a GPU's documented alternative, a
    probe problem a node file carries): said as it is."""

    key: str
    values: tuple[tuple[str, object], ...] = ()
    part: Part = "message"
    index: int = 0  # which fact, for part "fact"
    then: tuple[Phrase, ...] = ()

    def __add__(self, other: Phrase) -> Phrase:
        return msgspec.structs.replace(self, then=(*self.then, other))

    def value(self, name: str) -> object:
        """One of the values the wording is filled with (``None`` where it has none)."""
        return dict(self.values).get(name)

    @property
    def code(self) -> str:
        """The code the wording words: the key's first part."""
        return self.key.partition("/")[0]

    @classmethod
    def verbatim(cls, text: str) -> Phrase:
        """Text worded before the solver met it (data, a probe's report)."""
        return cls(key="", values=(("text", text),))


_UNHASHABLE = (list, set, frozenset)


def _values(values: dict[str, object]) -> tuple[tuple[str, object], ...]:
    # Lists become tuples so that phrases hash (reasons are grouped and deduplicated by value);
    # the common case, no list, is one pass (a finding is made per candidate).
    items = tuple(values.items())
    if any(type(v) in _UNHASHABLE for _, v in items):
        return tuple((k, tuple(v) if type(v) in _UNHASHABLE else v) for k, v in items)  # type: ignore[arg-type]
    return items


class Found(msgspec.Struct, frozen=True):
    """A wording chosen with its values: each of its parts as a ``Phrase``."""

    key: str
    values: tuple[tuple[str, object], ...] = ()

    def part(self, part: Part, index: int = 0) -> Phrase:
        return Phrase(key=self.key, values=self.values, part=part, index=index)

    @property
    def message(self) -> Phrase:
        return self.part("message")

    @property
    def hint(self) -> Phrase:
        return self.part("hint")

    @property
    def fix(self) -> Phrase:
        return self.part("fix")

    @property
    def source(self) -> Phrase:
        return self.part("source")

    def fact(self, index: int) -> Phrase:
        return self.part("fact", index)

    @property
    def facts(self) -> _Facts:
        return _Facts(self)


class _Facts:
    """``found.facts[i]``: the i-th fact of the wording."""

    __slots__ = ("_found",)

    def __init__(self, found: Found) -> None:
        self._found = found

    def __getitem__(self, index: int) -> Phrase:
        return self._found.fact(index)


def finding(key: str, /, **values: object) -> Found:
    """Wording ``key`` of ``resolver.explain.words`` chosen, with ``values``."""
    return Found(key, _values(values))


def phrase(key: str, /, **values: object) -> Phrase:
    """The message of wording ``key`` with ``values``: a clause, or a value of another wording."""
    return Phrase(key=key, values=_values(values))


def arch_phrase(arch: Iterable[str]) -> Phrase:
    """An arch list as a sentence says it."""
    names = tuple(arch)
    return phrase("arch-list", arch=names) if names else phrase("arch-list/unknown")


NO_TEXT = Phrase.verbatim("")
