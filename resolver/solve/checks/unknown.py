"""Facts the data lacks: ``release-facts-unknown`` (the release's ROCm build files were never
read) and ``artifact-facts-unknown`` (an artifact's arch list was never read)."""

from __future__ import annotations

from resolver.solve.finding import finding
from resolver.solve.types import Candidate, Fact, Fix, Reason


def release_facts_unknown(cand: Candidate) -> Reason:
    """``release-facts-unknown``: the release exists, its ROCm build files were never read."""
    src = cand.release.provenance.source if cand.release else "matrix/vllm.toml"
    w = finding("release-facts-unknown", vllm=cand.vllm)
    return Reason(
        code="release-facts-unknown",
        message=w.message,
        facts=(Fact(text=w.facts[0], source=src, confidence="unknown", about=cand.label),),
        hint=w.hint,
        fix=Fix(kind="data", text=w.fix, host=False),
    )


def artifact_facts_unknown(cand: Candidate, src: str) -> Reason:
    """``artifact-facts-unknown``: the artifact exists, its arch list was never read."""
    w = finding("artifact-facts-unknown", label=cand.label)
    return Reason(
        code="artifact-facts-unknown",
        message=w.message,
        facts=(Fact(text=w.facts[0], source=src, confidence="unknown", about=cand.label),),
        hint=w.hint,
        fix=Fix(kind="data", text=w.fix, host=False),
    )
