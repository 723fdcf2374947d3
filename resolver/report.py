"""A ``Decision`` as plain data: the ``check --json`` schema (docs/check.schema.json), and the
commands a plan tells the user to run."""

from __future__ import annotations

import shlex
from typing import Any

from resolver.model import Matrix
from resolver.node import Node
from resolver.solve import Candidate, Decision, Evaluation, Reason, Warning

SCHEMA_VERSION = 1


def _source_flags(node: Node) -> list[str] | None:
    if node.origin.startswith("example:"):
        return ["--example", node.origin.split(":", 1)[1]]
    if node.origin.startswith("file:"):
        source = node.origin.split(":", 1)[1]
        kind, _, path = source.partition(":")
        if kind == "rocminfo" and "," not in path:
            return ["--rocminfo", path]
        if kind not in ("rocminfo", "amd-smi", "rocm-smi", "sysfs"):
            return ["--node", source]
    return None


def _node_flags(node: Node) -> list[str]:
    """Flags that describe ``node`` to a follow-up command: its source, then the flags that were
    laid over it (``--example mi300x-8 --gpus 2`` stays a 2-GPU node in the next command)."""
    base = _source_flags(node)
    if base is not None:
        return base + [part for flag, value in node.overrides for part in (flag, value)]
    flags = ["--gfx", ",".join(node.gfx_targets)]
    if node.logical_gpu_count:
        flags += ["--gpus", str(node.logical_gpu_count)]
    if node.driver_version:
        flags += ["--driver", node.driver_version]
    return flags


node_flags = _node_flags  # public name for resolver.derive's hints


def plan_steps(ev: Evaluation, node: Node) -> list[tuple[str, str]]:
    """What to run for this path: (copy-pasteable shell line, why) pairs; ``why`` may be empty."""
    c = ev.candidate
    flags = _node_flags(node)
    if c.kind == "image" and c.image is not None:
        return [
            (shlex.join(["docker", "pull", c.image.ref]), ""),
            (
                shlex.join(["rocm-vllm", "image", *flags, "--vllm", f"=={c.vllm}", "--digest"]),
                "pin by digest, print the docker run command",
            ),
        ]
    if c.kind == "wheel" and c.wheel is not None:
        py = c.wheel.python[0]
        index = f"https://wheels.vllm.ai/rocm/{c.vllm}/{c.wheel.name}"
        return [
            (shlex.join(["uv", "venv", "--python", py, ".venv"]) + " && . .venv/bin/activate", ""),
            (shlex.join(["uv", "pip", "install", f"vllm=={c.vllm}+{c.wheel.name}", "--extra-index-url", index]), ""),
            (
                "python -c 'import torch; assert torch.version.hip and not torch.version.cuda, torch.__version__'",
                "a CUDA wheel must not have slipped in",
            ),
        ]
    gfx = ",".join(node.gfx_targets)
    stack: list[str] = []
    if c.stack is not None and c.release is not None and len(c.release.stacks) > 1:
        stack = ["--stack", c.stack.variant]
        if c.stack.preview:
            stack.append("--allow-preview")
        if c.stack.moving_pins:
            stack.append("--allow-moving-refs")
    return [
        (
            shlex.join(["rocm-vllm", "dockerfile", *flags, "--vllm", str(c.vllm), *stack, "-o", "Dockerfile.vllm-rocm"]),
            f"built for {gfx} only" if gfx else "",
        ),
        (shlex.join(["env", "DOCKER_BUILDKIT=1", "docker", "build", "-f", "Dockerfile.vllm-rocm", "-t", f"vllm-rocm:{c.vllm}", "."]), ""),
    ]


def plan_commands(ev: Evaluation, node: Node) -> list[str]:
    """The plan's steps as text lines, each with its reason as a shell comment."""
    return [f"{cmd}   # {why}" if why else cmd for cmd, why in plan_steps(ev, node)]


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
        "message": r.message,
        "hint": r.hint,
        "source": r.source,
        "facts": [{"text": f.text, "source": f.source, "confidence": f.confidence} for f in r.facts],
        "fix": {"kind": r.fix.kind, "text": r.fix.text, "host": r.fix.host, "value": r.fix.value, "direction": r.fix.direction}
        if r.fix
        else None,
    }


def warning_json(w: Warning) -> dict[str, Any]:
    out: dict[str, Any] = {"code": w.code, "message": w.message, "hint": w.hint, "severity": w.severity, "source": w.source}
    if w.env:  # advice that asks for environment variables says which, and whether the plan sets them
        out["env"] = dict(w.env)
        out["applied_by_plan"] = w.applied_by_plan
    return out


def plan_json(ev: Evaluation, node: Node, m: Matrix) -> dict[str, Any]:
    c = ev.candidate
    arch = c.image.arch if c.image else c.wheel.arch if c.wheel else c.release.arch if c.release else ()
    env: dict[str, str] = {}
    for name in node.gfx_targets:
        target = m.gfx_target(name)
        env.update(dict(target.env) if target else {})
    if ev.override:
        env["HSA_OVERRIDE_GFX_VERSION"] = ev.override
    return {
        **candidate_json(c),
        "rocm_stream": _stream(m, c),
        "python": (c.image.python if c.image else c.wheel.python[0] if c.wheel else c.release.python if c.release else None),
        "arch": list(arch),
        "unofficial": ev.unofficial,
        "override": ev.override,
        "env": env,
        "commands": [cmd for cmd, _why in plan_steps(ev, node)],
    }


def _stream(m: Matrix, c: Candidate) -> str | None:
    if c.stack is not None:
        return c.stack.stream
    rel = m.rocm_for(c.rocm) if c.rocm is not None else None
    return rel.stream if rel else None


def decision_json(d: Decision, m: Matrix) -> dict[str, Any]:
    from resolver.derive import derive  # derive imports this module for plan commands

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
        },
        "plan": plan_json(d.plan, d.node, m) if d.plan else None,
        "warnings": [warning_json(w) for w in d.warnings],
        "blockers": [reason_json(r) for r in d.blockers],
        "missing": [
            {"kind": f.kind, "subject": f.subject, "detail": f.detail, "fetch": f.fetch} for f in d.missing
        ],
        "host_fix": {
            "candidate": candidate_json(d.host_fix.candidate),
            "fixes": [reason_json(r) for r in d.host_fix.reasons],
        }
        if d.host_fix
        else None,
        "reasons": [
            {"candidate": candidate_json(e.candidate), "reasons": [reason_json(r) for r in e.reasons]} for e in d.rejected
        ],
        "alternatives": [plan_json(e, d.node, m) for e in d.alternatives],
        "derivation": derive(d, m).to_json(),
    }
