"""A ``Decision`` as plain data: the ``check --json`` schema (docs/check.schema.json), and the
commands a plan tells the user to run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resolver.data.model import Matrix
from resolver.data.node import Node
from resolver.explain.derive import derive
from resolver.explain.steps import ServeSizing, plan_steps, serve_sizing
from resolver.explain.words import word
from resolver.solve import Advisory, Candidate, Decision, Evaluation, Reason
from resolver.solve.routes import Route, Routes, Step, search
from resolver.solve.types import HostChange, MissingFact

if TYPE_CHECKING:  # a check without --model loads no model code
    from resolver.solve.fit import Fit
    from resolver.solve.model import ModelAnswer

SCHEMA_VERSION = 1


def candidate_json(c: Candidate) -> dict[str, Any]:
    record = c.record
    return {
        "kind": c.kind,
        "channel": c.channel,
        "label": c.label,
        "vllm": str(c.vllm),
        "rocm": str(c.rocm) if c.rocm is not None else None,
        "image": c.image.ref if c.image else None,
        "digest": c.image.digest if c.image else None,
        "wheel": c.wheel.name if c.wheel else None,
        "confidence": c.confidence,
        "source": record.provenance.source if record else None,
        "stack": c.stack.variant if c.stack is not None else None,
    }


def reason_json(r: Reason) -> dict[str, Any]:
    return {
        "code": r.code,
        "message": word(r.message),
        "hint": word(r.hint),
        "source": r.source,
        # What it is about, as data: the node's gfx targets, the release and stack it rejects.
        "gfx": list(r.gfx),
        "release": str(r.release) if r.release is not None else None,
        "stack": r.stack,
        "facts": [
            {"text": word(f.text), "source": f.source, "confidence": f.confidence} for f in r.facts
        ],
        "fix": {
            "kind": r.fix.kind,
            "text": word(r.fix.text),
            "host": r.fix.host,
            "value": r.fix.change.value if r.fix.change else None,
            "direction": r.fix.change.direction if r.fix.change else None,
        }
        if r.fix
        else None,
    }


def missing_json(f: MissingFact, *, hint: bool = False) -> dict[str, Any]:
    """A fact an ``unknown`` answer lacks (``hint``: with what to give, as ``check`` says it)."""
    out: dict[str, Any] = {
        "kind": f.kind,
        "subject": f.subject,
        "detail": word(f.detail),
        "fetch": f.fetch,
    }
    if hint:
        out["hint"] = word(f.hint) or None
    return out


def warning_json(w: Advisory) -> dict[str, Any]:
    out: dict[str, Any] = {
        "code": w.code,
        "message": word(w.message),
        "hint": word(w.hint),
        "severity": w.severity,
        "source": word(w.source),
    }
    if (
        w.env
    ):  # advice that asks for environment variables says which, and whether the plan sets them
        out["env"] = dict(w.env)
        out["applied_by_plan"] = w.applied_by_plan
    return out


def plan_json(
    ev: Evaluation, node: Node, m: Matrix, sizing: ServeSizing | None = None
) -> dict[str, Any]:
    c = ev.candidate
    arch = c.arch  # the record the path rests on says it (a source build: its stack)
    env: dict[str, str] = {}
    for name in node.gfx_targets:
        target = m.gfx_target(name)
        env.update(dict(target.env) if target else {})
    if ev.override:
        env["HSA_OVERRIDE_GFX_VERSION"] = ev.override
    return {
        **candidate_json(c),
        "rocm_stream": _stream(m, c),
        "python": (
            c.image.python
            if c.image
            else c.wheel.python[0]
            if c.wheel
            else c.release.python
            if c.release
            else None
        ),
        "arch": list(arch),
        # What the artifact carries code for: a source build builds for this node's targets
        # only (the text's "builds for ... only"); a prebuilt one, its own arch list.
        "built_for": list(ev.built_for(node.gfx_targets)),
        "unofficial": ev.unofficial,
        "override": ev.override,
        "env": env,
        "commands": [cmd for cmd, _why in plan_steps(ev, node, sizing)],
        "driver": _driver_needed(m, node, ev),
    }


def _driver_needed(m: Matrix, node: Node, ev: Evaluation) -> dict[str, Any] | None:
    """What the plan needs of the host's amdgpu driver, as structure: the series that run it,
    and whether the node's own driver was checked against them (not when it is unknown)."""
    from resolver.solve.checks import drivers_for

    c = ev.candidate
    if c.rocm is None:  # a path whose ROCm the data does not know needs nothing it can name
        return None
    return {
        "rocm": f"{c.rocm.major}.{c.rocm.minor}",
        "series": [d.series for d in drivers_for(m, node, c)],
        "checked": node.driver_version is not None,
    }


def _stream(m: Matrix, c: Candidate) -> str | None:
    if c.stack is not None:
        return c.stack.stream
    rel = m.rocm_for(c.rocm) if c.rocm is not None else None
    return rel.stream if rel else None


def step_json(step: Step) -> dict[str, Any]:
    """One host change of a route: what it changes, from what to what, why, and the sources."""
    why = [word(r.message) for r in step.reasons] + [word(w.message) for w in step.warnings]
    why += [word(f.text) for f in step.facts]
    if step.needed_for:
        why.append(f"AMD supports {step.needed_for} on {step.change.value}, not on the host's")
    sources = [r.source for r in step.reasons] + [word(w.source) for w in step.warnings]
    sources += [f.source for f in step.facts] + [step.source]
    return {
        "change": step.change.kind,
        "from": step.before,
        "to": step.change.value,
        "direction": step.change.direction,
        "why": why,
        "source": "; ".join(dict.fromkeys(x for x in sources if x)) or None,
    }


def route_json(route: Route) -> dict[str, Any]:
    """A route of the what-if search as structure: its changes (host and request), the host's
    steps in order, and the plan solving the changed node again gave."""
    return {
        "changes": [
            {
                "kind": c.kind,
                "value": c.value if isinstance(c, HostChange) else None,
                "host": c.host,
            }
            for c in route.changes
        ],
        "steps": [step_json(st) for st in route.steps],
        "cost": route.cost,
        "plan": candidate_json(route.opens.candidate),
        "verdict_after": route.after.verdict if route.after is not None else None,
    }


def fit_json(f: Fit) -> dict[str, Any]:
    """One fit (``resolver.solve.fit.Fit``): every byte count per GPU. ``max_model_len`` is the
    largest context one sequence of which fits; ``context`` the one asked (or the model's
    default), which ``fits`` is about."""
    return {
        "tensor_parallel_size": f.tensor_parallel_size,
        "pipeline_parallel_size": f.pipeline_parallel_size,
        "gpus": f.gpus,
        "gpu_bytes": f.gpu_bytes,
        "gpu_memory_utilization": f.gpu_memory_utilization,
        "kv_cache_dtype": f.kv_cache_dtype,
        "weights_bytes_per_gpu": f.weights_bytes_per_gpu,
        "weights_source": f.weights_source,
        "allowance_bytes": f.allowance_bytes,
        "kv_budget_bytes": f.kv_budget_bytes,
        "kv_cache_bytes_per_token": f.kv_cache_bytes_per_token,
        "context": f.max_model_len,
        "seq_bytes": f.seq_bytes,
        "kv_tokens": f.kv_tokens,
        "max_model_len": f.largest_max_model_len,
        "fits": f.fits,
        "concurrency": f.concurrency,
        # What one GPU needs for one sequence of ``context``: weights, the allowance, its KV.
        "needed_bytes_per_gpu": need_bytes(f),
    }


def need_bytes(f: Fit) -> int:
    """Bytes one GPU needs for one sequence of the fit's context (the text's "GiB per GPU")."""
    return f.weights_bytes_per_gpu + f.allowance_bytes + f.seq_bytes


def model_json(a: ModelAnswer) -> dict[str, Any]:
    """The ``model`` section of ``check --json`` (docs/check.schema.json): the decision's answer
    about ``--model``, every phrase worded here."""
    fit = fit_json(a.fit) if a.fit is not None else None
    if fit is not None:
        fit["min_gpus"] = a.min_gpus
    return {
        "spec": a.spec,
        "architecture": a.architecture,
        "architecture_supported": a.architecture_supported,
        "first_release": str(a.first_release) if a.first_release is not None else None,
        "release": str(a.release) if a.release is not None else None,
        "quantization": a.quantization,
        "kv_cache_dtype": a.kv_cache_dtype,
        "attention": [word(p) for p in a.attention],
        "memory": {
            "bytes": a.memory.bytes,
            "source": word(a.memory.source),
            "unified": a.memory.unified,
        }
        if a.memory is not None
        else None,
        "fit": fit,
        "min_gpus": a.min_gpus,
        "table": [fit_json(f) for f in a.table],
        "notes": [word(n) for n in a.notes],
    }


def decision_json(d: Decision, m: Matrix, what_if: Routes | None = None) -> dict[str, Any]:
    """The ``check --json`` object; its derivation words ``what_if`` (searched here if not
    given), and ``route`` is the search's best route (the one the short form prints)."""
    if what_if is None:
        what_if = search(m, d)
    best = what_if.best
    sizing = serve_sizing(d.model, d.request.model)
    return {
        "schema_version": SCHEMA_VERSION,
        "verdict": d.verdict,
        "exit_code": d.exit_code,
        "node": d.node.to_json(),
        "request": {
            "vllm": str(d.request.vllm) if d.request.vllm is not None else None,
            "quantization": d.request.quantization,
            "kv_cache_dtype": d.request.kv_cache_dtype,
            "prefer": d.request.prefer,
            "model": d.request.model.spec if d.request.model is not None else None,
        },
        "plan": plan_json(d.plan, d.node, m, sizing) if d.plan else None,
        # --model: the answer about the model (null without --model).
        "model": model_json(d.model) if d.model is not None else None,
        "warnings": [warning_json(w) for w in d.warnings],
        "blockers": [reason_json(r) for r in d.blockers],
        "missing": [missing_json(f, hint=True) for f in d.missing],
        # The one answer to "what would a host change open": the what-if search's best host
        # route, solved again (``route`` below is the same route when it is the best one).
        "host_fix": {
            "candidate": candidate_json(what_if.host[0].opens.candidate),
            "fixes": [reason_json(r) for r in what_if.host[0].reasons],
        }
        if what_if.host and d.verdict == "blocked_host_fix"
        else None,
        "reasons": [
            {
                "candidate": candidate_json(e.candidate),
                "reasons": [reason_json(r) for r in e.reasons],
            }
            for e in d.rejected
        ],
        "alternatives": [plan_json(e, d.node, m) for e in d.alternatives],
        "route": route_json(best) if best is not None else None,
        "derivation": derive(d, m, what_if).to_json(),
    }
