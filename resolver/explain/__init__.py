"""A ``Decision`` in words: the verdict, the plan, why (numbered "Because ..." steps with sources),
and what would change the answer. Pure: no I/O, no printing; the CLI prints.

``derive`` turns a ``Decision`` into a ``Derivation`` (the records are in ``derivation``): the
steps from ``chain``, the hints from ``hints`` (the wording of the solve stage's what-if
search). ``steps`` says which commands a plan runs; ``text`` renders the short form and the
derivation as plain text, ``rich`` the derivation for a terminal (rich itself is imported only
when it renders); ``report`` gives the ``check --json`` object. Every name callers use is
re-exported here; the renderers' (``text``, ``rich``) on first use, so that ``check --json``
loads no more than it needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from resolver.explain.chain import (
    CODE_ORDER,
    HEDGED,
    HINT_ORDER,
    describe_node,
    describe_request,
)
from resolver.explain.derivation import (
    DERIVATION_VERSION,
    Derivation,
    Hint,
    Note,
    PlanSummary,
    Premise,
    Step,
)
from resolver.explain.derive import derive
from resolver.explain.report import (
    SCHEMA_VERSION,
    candidate_json,
    decision_json,
    missing_json,
    plan_json,
    reason_json,
    warning_json,
)
from resolver.explain.steps import node_flags, plan_commands, plan_steps

if TYPE_CHECKING:
    from resolver.explain.rich import render_rich, rich_console
    from resolver.explain.text import (
        MAX_CITED,
        WIDTH,
        cited_sources,
        render,
        render_derivation,
        step_sentence,
    )

# Loaded on first use (PEP 562): name -> module under resolver.explain.
_LAZY: dict[str, str] = {
    "MAX_CITED": "text",
    "WIDTH": "text",
    "cited_sources": "text",
    "render": "text",
    "render_derivation": "text",
    "step_sentence": "text",
    "render_rich": "rich",
    "rich_console": "rich",
}

__all__ = [
    "CODE_ORDER",
    "DERIVATION_VERSION",
    "HEDGED",
    "HINT_ORDER",
    "MAX_CITED",
    "SCHEMA_VERSION",
    "WIDTH",
    "Derivation",
    "Hint",
    "Note",
    "PlanSummary",
    "Premise",
    "Step",
    "candidate_json",
    "cited_sources",
    "decision_json",
    "derive",
    "describe_node",
    "describe_request",
    "missing_json",
    "node_flags",
    "plan_commands",
    "plan_json",
    "plan_steps",
    "reason_json",
    "render",
    "render_derivation",
    "render_rich",
    "rich_console",
    "step_sentence",
    "warning_json",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
