"""The records of an explanation: a ``Derivation`` is numbered ``Step``s of sourced ``Premise``s, a
conclusion, ``Hint``s (what would change the answer), ``Note``s (warnings) and a ``PlanSummary``.
Plain data: ``derive`` builds them, ``text``/``rich`` render them, ``check --json`` carries them
(``to_json``/``from_json``).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from resolver.util.errors import InputError

DERIVATION_VERSION = 1


class Premise(msgspec.Struct, frozen=True, kw_only=True):
    """One fact a step rests on, with every source it came from and how sure that source is."""

    text: str
    sources: tuple[str, ...]
    confidence: str = "exact"


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """ "Because <premises> [and (cites)], <conclusion>." Numbered from 1."""

    number: int
    premises: tuple[Premise, ...]
    conclusion: str
    cites: tuple[int, ...] = ()
    codes: tuple[str, ...] = ()
    subjects: tuple[str, ...] = ()  # the candidates it covers (labels), for --json readers


HintKind = Literal[
    "driver",
    "vllm",
    "image",
    "quantization",
    "source-build",
    "python",
    "os",
    "rocm",
    "gfx",
    "host",
    "data",
    "override",
    "other",
]


class Hint(msgspec.Struct, frozen=True, kw_only=True):
    """A change that would give a (better) plan, apart from the proof; host hints were re-solved.

    Two hints are one when they are of one kind and point at one thing (``about``: the path it
    opens, the changes, the code and values of the finding it words), whatever their words."""

    kind: HintKind
    text: str
    about: tuple[str, ...] = ()
    unofficial: bool = False
    command: str | None = None
    # Host hints: the node facts the hint changes, e.g. (("driver", "31.40"),), and the plan that
    # solving again with all of them gave (a hint is printed only when that plan exists).
    changes: tuple[tuple[str, str], ...] = ()
    then: str | None = None

    @property
    def identity(self) -> tuple[str, tuple[str, ...]]:
        return (self.kind, self.about)


class Note(msgspec.Struct, frozen=True, kw_only=True):
    """A warning or remark about the decision, with what to do about it."""

    severity: str  # "warning" | "info"
    message: str
    hint: str
    source: str = ""


class PlanSummary(msgspec.Struct, frozen=True, kw_only=True):
    """The chosen path as text: what it is, how sure the data is, and the commands it runs."""

    channel: str
    label: str
    vllm: str
    rocm: str | None
    confidence: str
    unofficial: bool
    override: str | None
    commands: tuple[str, ...]


class Derivation(msgspec.Struct, frozen=True, kw_only=True):
    """A whole explanation: headline, numbered steps, conclusion, hints, notes, plan. Built only
    from data, so ``to_json``/``from_json`` carry it through ``check --json`` and it renders to the
    same text either way."""

    verdict: str
    exit_code: int
    node: str  # one line: "gfx942 x8 · amdgpu 30.30.3   [flags]"
    request: str  # "vLLM >=0.20, fp8 quantization" or "" for defaults
    headline: str
    steps: tuple[Step, ...]
    conclusion: str
    confidence: str | None = None  # weakest fact under the plan (successes)
    confidence_note: str = ""
    plan: PlanSummary | None = None
    hints: tuple[Hint, ...] = ()
    notes: tuple[Note, ...] = ()
    alternatives: tuple[str, ...] = ()
    version: int = DERIVATION_VERSION

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def sources(self) -> list[str]:
        """Every source in order of first citation: the numbering the text uses ([1], [2], ...)."""
        return list(
            dict.fromkeys(s for step in self.steps for p in step.premises for s in p.sources)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "node": self.node,
            "request": self.request,
            "headline": self.headline,
            "steps": [
                {
                    "number": s.number,
                    "premises": [
                        {"text": p.text, "sources": list(p.sources), "confidence": p.confidence}
                        for p in s.premises
                    ],
                    "cites": list(s.cites),
                    "conclusion": s.conclusion,
                    "codes": list(s.codes),
                    "subjects": list(s.subjects),
                }
                for s in self.steps
            ],
            "conclusion": self.conclusion,
            "confidence": self.confidence,
            "confidence_note": self.confidence_note,
            "plan": None
            if self.plan is None
            else {
                "channel": self.plan.channel,
                "label": self.plan.label,
                "vllm": self.plan.vllm,
                "rocm": self.plan.rocm,
                "confidence": self.plan.confidence,
                "unofficial": self.plan.unofficial,
                "override": self.plan.override,
                "commands": list(self.plan.commands),
            },
            "hints": [
                {
                    "kind": h.kind,
                    "text": h.text,
                    "about": list(h.about),
                    "unofficial": h.unofficial,
                    "command": h.command,
                    "changes": dict(h.changes),
                    "then": h.then,
                }
                for h in self.hints
            ],
            "notes": [
                {"severity": n.severity, "message": n.message, "hint": n.hint, "source": n.source}
                for n in self.notes
            ],
            "alternatives": list(self.alternatives),
            "sources": self.sources(),
        }

    @classmethod
    def from_json(cls, data: Any) -> Derivation:
        """Read back what ``to_json`` wrote: ``check --json``'s "derivation" is a contract
        (docs/explaining.md: it renders to exactly the ``--explain`` text; the golden tests
        round-trip every case). A wrong shape is an ``InputError``, not a traceback."""
        try:
            # The one field ``to_json`` writes in another shape: a hint's changes as an object.
            hints = [
                {**h, "changes": list(dict(h.get("changes") or {}).items())} for h in data["hints"]
            ]
            # "sources" is derived (``sources()``): an unknown field, ignored.
            return msgspec.convert({**data, "hints": hints}, cls)
        except (KeyError, TypeError, ValueError, AttributeError, msgspec.ValidationError) as exc:
            raise InputError(
                f"not a derivation object ({exc.__class__.__name__}: {exc})",
                hint="pass the 'derivation' value of `rocm-vllm check --json`",
            ) from None
