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
from resolver.explain.steps import plan_commands, serve_sizing
from resolver.explain.words import text, word
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


_GiB = 1024**3
FIT_SOURCE = (
    "docs/model-fit.md; resolver/solve/fit.py (vLLM's kv_cache_interface page sizes and "
    "gpu_worker's KV budget)"
)


def _gib(n: float) -> str:
    return f"{n / _GiB:.1f}"


def _model_step(decision: Decision, matrix: Matrix, b: _Builder) -> int | None:
    """--model: the fit as a step: the config fields, the GPU's memory and where it was read,
    the release's gpu_memory_utilization, the weights and the KV cache per token; its
    conclusion what fits (or does not). None: no --model, or nothing sized."""
    answer, wanted = decision.model, decision.request.model
    if answer is None or wanted is None or answer.memory is None:
        return None
    cfg, memory = wanted.config, answer.memory
    # Nothing fits: the largest size this node allows, at the context asked (the fit table's).
    context = wanted.max_model_len or cfg.max_position_embeddings or 4096
    at = [t for t in answer.table if t.max_model_len == context]
    f = answer.fit or max(at, key=lambda t: t.tensor_parallel_size, default=None)
    if f is None:
        return None
    config = text(
        "fit/step-config",
        spec=answer.spec,
        arch=answer.architecture or "an unnamed architecture",
        layers=cfg.num_hidden_layers,
        heads=cfg.num_attention_heads,
        kv_heads=cfg.num_key_value_heads,
        head_dim=cfg.head_dim,
        dtype=cfg.dtype or "unstated",
    )
    support = matrix.model_support(answer.release) if answer.release is not None else None
    gmu_source = (
        "--gpu-memory-utilization"
        if wanted.gpu_memory_utilization is not None
        else support.record.provenance.source
        if support is not None and support.gpu_memory_utilization is not None
        else "vLLM's default before 0.20.0 (vllm/engine/arg_utils.py), assumed"
    )
    assumed = memory.source.key == "fit/memory-assumed"
    premises = [
        Premise(text=config, sources=(cfg.source,)),
        Premise(
            text=text("fit/step-memory", gib=_gib(memory.bytes), how=word(memory.source)),
            sources=(memory.cited,),
            confidence="inferred" if assumed else "exact",
        ),
        Premise(
            text=text(
                "fit/step-gmu",
                vllm=answer.release or "?",
                gmu=f"{f.gpu_memory_utilization:g}",
                allowance=_gib(f.allowance_bytes),
            ),
            sources=(gmu_source,),
        ),
        Premise(
            text=text(
                "fit/step-weights",
                weights=_gib(f.weights_bytes_per_gpu),
                tp=f.tensor_parallel_size,
                how=f.weights_source,
            ),
            sources=(cfg.source, FIT_SOURCE),
        ),
        Premise(
            text=text("fit/step-kv", kv=f.kv_cache_bytes_per_token, kv_dtype=f.kv_cache_dtype),
            sources=(FIT_SOURCE,),
        ),
    ]
    values = {
        "tp": f.tensor_parallel_size,
        "context": f.max_model_len,
        # report.need_bytes's sum (report imports this module): weights, allowance, its KV
        "need": _gib(f.weights_bytes_per_gpu + f.allowance_bytes + f.seq_bytes),
        "usable": _gib(f.gpu_bytes * f.gpu_memory_utilization),
        "largest": f.largest_max_model_len,
        "min_gpus": answer.min_gpus or "more than 64",
        "gpus": f.gpus,
    }
    key = (
        "fit/step-fits"
        if f.fits
        else "fit/step-capped"
        if f.largest_max_model_len > 0
        else "fit/step-does-not-fit"
    )
    return b.add(premises, text(key, **values), codes=("model-fit",), subjects=(answer.spec,))


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
        _model_step(decision, matrix, b)
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
        fitted = _model_step(decision, matrix, b)
        holds = f"({n})" if fitted is None else f"({n}) and ({fitted})"
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
                f"So, because {refs} {verb} out the paths ranked above it and {holds} "
                f"{'hold' if fitted else 'holds'}, {why}."
            )
        else:
            conclusion = f"So, by {holds}, {why}."
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
            # --model: the commands carry its sizes, as check's short form prints them
            commands=tuple(
                plan_commands(
                    plan, decision.node, serve_sizing(decision.model, decision.request.model)
                )
            ),
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
