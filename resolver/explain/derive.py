"""A ``Decision`` as a derivation: numbered steps of sourced facts and what follows from them
(``chain``), then hints, the smallest changes that would work (``hints``). Pure: no I/O, no
printing, no rich. The records are in ``derivation``; ``text`` and ``rich`` turn a ``Derivation``
into words; ``to_json``/``from_json`` carry it through ``check --json`` unchanged.
"""

from __future__ import annotations

from resolver.data.codes import GATE_CODES
from resolver.data.model import Matrix
from resolver.explain.chain import (
    _CONF_NOTE,
    HEDGED,
    HINT_ORDER,
    _Builder,
    _Context,
    _explain_rejected,
    _gate_step,
    _join,
    _plan_premises,
    _unsupported_step,
    _wanted,
    _weakest,
    _why_this,
    describe_node,
    describe_request,
)
from resolver.explain.derivation import Derivation, Hint, Note, PlanSummary, Premise
from resolver.explain.hints import _hints, phrase_about
from resolver.explain.steps import plan_commands
from resolver.explain.words import word
from resolver.solve import Decision
from resolver.solve.finding import Phrase
from resolver.solve.routes import Routes, better_than, search


def _sources(source: Phrase) -> tuple[str, ...]:
    said = word(source)
    return (said,) if said else ()


def _unknown(decision: Decision, matrix: Matrix, found: Routes) -> Derivation:
    """The data lacks what the answer depends on: say what, and how to get it; never "no"."""
    wanted = _wanted(decision.request)
    b = _Builder()
    for m in decision.missing:
        b.add(
            [Premise(text=word(m.detail), sources=_sources(m.source), confidence="unknown")],
            f"whether {wanted} runs on this node depends on facts about {m.subject} the data does "
            "not hold",
            codes=(f"missing-{m.kind}",),
            subjects=(m.subject,),
        )
    hints: list[Hint] = []
    for m in decision.missing:
        if m.fetch:
            hints.append(
                Hint(
                    kind="data",
                    about=(f"missing-{m.kind}", m.subject),
                    text=f"read the facts of vLLM {m.subject} from its sdist",
                    command=m.fetch,
                )
            )
        elif m.kind == "driver":
            hints.append(
                Hint(
                    kind="data",
                    about=(f"missing-{m.kind}", m.subject),
                    text="give the AMD GPU driver release with --driver (the amdgpu-install "
                    "version, e.g. 30.30.3 or 6.4.3), not the kernel module's own number",
                )
            )
        elif m.kind == "gfx":
            hints.append(
                Hint(
                    kind="data",
                    about=(f"missing-{m.kind}", m.subject),
                    text=f"check the name {m.subject} (rocminfo | grep gfx prints it); "
                    "a GPU newer than this data needs a newer rocm-vllm-resolver",
                )
            )
    if decision.rejected:  # what is known still helps: the newest release that does fit, if any
        known = _hints(_Context(decision, matrix), None, found)
        hints += [
            h for h in known if h.kind != "data" and h.identity not in {x.identity for x in hints}
        ]
    hints.sort(key=lambda h: HINT_ORDER.index(h.kind))
    refs = _join([f"({s.number})" for s in b.steps])
    return Derivation(
        verdict=decision.verdict,
        exit_code=decision.exit_code,
        node=describe_node(decision.node),
        request=describe_request(decision.request),
        headline=f"The data cannot tell yet whether {wanted} runs on this node.",
        steps=tuple(b.steps),
        conclusion=f"So, by {refs}, the answer is unknown (not unsupported).",
        hints=tuple(hints),
        notes=tuple(
            Note(
                severity=w.severity,
                message=word(w.message),
                hint=word(w.hint),
                source=word(w.source),
            )
            for w in decision.warnings
        ),
    )


def derive(decision: Decision, matrix: Matrix, what_if: Routes | None = None) -> Derivation:
    """Explain ``decision`` as numbered steps of sourced facts, then hints: the wording of
    ``what_if``, the solve stage's what-if search (run here when the caller did not)."""
    found = what_if if what_if is not None else search(matrix, decision)
    if decision.verdict == "unknown":
        return _unknown(decision, matrix, found)
    ctx = _Context(decision, matrix)
    b = _Builder()
    plan = decision.plan
    wanted = _wanted(decision.request)
    if plan is None:
        gate = [r for r in decision.blockers if r.code in GATE_CODES]
        unsupported = [r for r in decision.blockers if r.code == "gfx-unsupported"]
        if gate:
            cited = [_gate_step(ctx, b, gate)]
        elif unsupported:
            cited = [_unsupported_step(ctx, b, unsupported[0], decision.rejected)]
        else:
            cited = _explain_rejected(ctx, b, decision.rejected)
        refs = _join([f"({n})" for n in cited])
        if decision.verdict == "blocked_host_fix":
            tail = "no path fits this host as it is; a host change opens one (see the hints)"
            headline = f"No path runs {wanted} on this node as it is."
        else:
            tail = f"no path runs {wanted} on this node"
            headline = f"No path runs {wanted} on this node."
        conclusion = (
            f"So, because {refs} cover every candidate, {tail}."
            if len(cited) > 1
            else f"So {tail}."
        )
        confidence = None
        confidence_note = ""
    else:
        cited = _explain_rejected(ctx, b, better_than(decision))
        premises, conclusion_text = _plan_premises(ctx, plan)
        n = b.add(
            premises, conclusion_text, cites=(), codes=("plan",), subjects=(plan.candidate.label,)
        )
        why = _why_this(ctx, plan)
        # Warnings that qualify the verdict belong in the chain, not only in the notes.
        serious = [w for w in decision.warnings if w.severity == "warning" and w.code not in HEDGED]
        if serious:
            w_premises = [
                Premise(text=word(w.message), sources=_sources(w.source), confidence="exact")
                for w in serious
            ]
            k = b.add(
                w_premises,
                f"{plan.candidate.label} runs here only with the warnings below heeded",
                cites=(n,),
                codes=tuple(w.code for w in serious),
            )
            why += f"; by ({k}), heed the warnings"
        if cited:
            refs = _join([f"({k})" for k in cited])
            verb = "rule" if len(cited) > 1 else "rules"
            conclusion = (
                f"So, because {refs} {verb} out the paths ranked above it and ({n}) holds, {why}."
            )
        else:
            conclusion = f"So, by ({n}), {why}."
        if decision.verdict == "unofficial_only":
            headline = f"No official path runs {wanted} on this node; an unofficial one does."
        elif decision.verdict == "source_build_required":
            headline = f"{wanted} runs on this node when built from source."
        else:
            headline = (
                f"{wanted} runs on this node: {plan.candidate.channel} {plan.candidate.label}."
            )
        plan_step = b.steps[n - 1]
        confidence = _weakest(p.confidence for p in plan_step.premises)
        confidence_note = _CONF_NOTE.get(confidence, "")
    hints = _hints(ctx, plan, found)
    if plan is not None:  # what to do about each warning the chain relied on
        seen = {h.identity for h in hints}
        for w in decision.warnings:
            h = Hint(
                kind="other", about=phrase_about(w.hint), text=word(w.hint), unofficial=w.unofficial
            )
            if w.severity == "warning" and w.code not in HEDGED and h.identity not in seen:
                seen.add(h.identity)
                hints.append(h)
    notes = tuple(
        Note(severity=w.severity, message=word(w.message), hint=word(w.hint), source=word(w.source))
        for w in sorted(decision.warnings, key=lambda w: w.severity != "warning")
    )
    plan_summary = None
    if plan is not None:
        c = plan.candidate
        plan_summary = PlanSummary(
            channel=c.channel,
            label=c.label,
            vllm=str(c.vllm),
            rocm=str(c.rocm) if c.rocm is not None else None,
            confidence=c.confidence,
            unofficial=plan.unofficial,
            override=plan.override,
            commands=tuple(plan_commands(plan, decision.node)),
        )
    return Derivation(
        verdict=decision.verdict,
        exit_code=decision.exit_code,
        node=describe_node(decision.node),
        request=describe_request(decision.request),
        headline=headline,
        steps=tuple(b.steps),
        conclusion=conclusion,
        confidence=confidence,
        confidence_note=confidence_note,
        plan=plan_summary,
        hints=tuple(hints),
        notes=notes,
        alternatives=tuple(
            f"{e.candidate.channel}: {e.candidate.label}" for e in decision.alternatives
        ),
    )
