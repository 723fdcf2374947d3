"""The facts a check cites: about the candidate itself, or stated by a data record (with
that record's source and confidence)."""

from __future__ import annotations

from resolver.data.model import DriverSeries, GfxTarget, GpuProduct, RocmRelease, WheelVariant
from resolver.solve.finding import Phrase
from resolver.solve.types import Candidate, Fact


def _about_path(cand: Candidate, text: Phrase, source: str | None = None) -> Fact:
    """A fact about the candidate itself (the chain files it under the candidate), from its own
    record unless ``source`` says otherwise."""
    return Fact(
        text=text, source=source or cand.source, confidence=cand.confidence, about=cand.label
    )


def _from_record(
    text: Phrase, record: GfxTarget | GpuProduct | DriverSeries | RocmRelease | WheelVariant
) -> Fact:
    """A fact a data record states, with that record's source and confidence."""
    return Fact(text=text, source=record.provenance.source, confidence=record.provenance.confidence)
