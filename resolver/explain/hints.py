"""Hints: the smallest changes that would give a (better) plan, each re-checked by solving again
(host changes: driver, Python, glibc; request changes: an older vLLM, no quantization, a source
build; unofficial routes with their risk), and their wording. They come apart from the proof.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import replace

from resolver.errors import ResolverError
from resolver.explain.chain import (
    GATE_CODES,
    HINT_ORDER,
    _Context,
    _join,
)
from resolver.explain.derivation import Hint
from resolver.explain.steps import node_flags
from resolver.node import Node
from resolver.solve import Decision, Evaluation, Reason, Request, rank, solve
from resolver.solve.rank import fix_order
from resolver.versions import driver_series, series


def _resolve(
    ctx: _Context, node: Node | None = None, request: Request | None = None
) -> Decision | None:
    try:
        return solve(ctx.m, node or ctx.node, request or ctx.request)
    except ResolverError:
        return None


def _ok_plan(d: Decision | None) -> Evaluation | None:
    return d.plan if d is not None and d.plan is not None and d.exit_code == 0 else None


def _apply_fixes(ctx: _Context, reasons: Sequence[Reason]) -> tuple[Node, Request] | None:
    """The node and request with each reason's fix applied, where the fix is something we can model."""
    node, request = ctx.node, ctx.request
    for r in reasons:
        fix = r.fix
        if fix is None:
            return None
        if fix.kind == "driver" and fix.value:
            node = replace(node, driver_version=f"{fix.value}.0")
        elif fix.kind == "python" and fix.value:
            node = replace(node, python=fix.value)
        elif fix.kind == "os" and fix.value:
            node = replace(node, glibc=fix.value)
        elif fix.kind == "quantization":
            request = replace(request, quantization=None, kv_cache_dtype=None)
        else:
            return None
    return node, request


def _then(ev: Evaluation) -> str:
    c = ev.candidate
    rocm = f" on ROCm {c.rocm}" if c.rocm is not None else ""
    return f"{c.label.removesuffix(' (wheel)')} ({c.channel}{rocm})"


def _hints(ctx: _Context, plan: Evaluation | None, better: Sequence[Evaluation]) -> list[Hint]:
    hints: list[Hint] = []
    seen_kinds: set[str] = set()

    def add(h: Hint) -> None:
        if h.text not in {x.text for x in hints}:
            hints.append(h)
            seen_kinds.add(h.kind)

    # 1. Host changes that open a better path than today's (driver, Python, glibc). Each hint is the
    # change re-solved: one fix alone where it is enough, else the fixes together.
    def opens(reasons: Sequence[Reason]) -> tuple[Node, Evaluation] | None:
        applied = _apply_fixes(ctx, reasons)
        if applied is None:
            return None
        again = _ok_plan(_resolve(ctx, *applied))
        if again is None or (
            plan is not None
            and not rank(again, ctx.request.prefer) < rank(plan, ctx.request.prefer)
        ):
            return None
        return applied[0], again

    # The solver's order for offering host fixes (solve.rank.fix_order), the same it picks host_fix by.
    for e in fix_order(better):
        together = opens(e.reasons)
        if together is None:
            continue
        fixes = [r for r in e.reasons if r.fix is not None and r.fix.kind not in seen_kinds]
        alone = [(r, opened) for r in fixes if (opened := opens([r])) is not None]
        if alone:
            for r, (fixed, unlocked) in alone:
                add(_host_hint(ctx, [r], fixed, unlocked))
        elif fixes:
            add(_host_hint(ctx, fixes, *together))
        if {"driver", "python", "os"} & seen_kinds:
            break

    ok_now = plan is not None and ctx.d.exit_code == 0
    if plan is not None and plan.candidate.rocm is not None and ctx.driver is None:
        rocm = series(plan.candidate.rocm)
        what = (
            "unknown"
            if ctx.node.driver_version is None
            else f"{ctx.node.driver_version}, not in AMD's table"
        )
        add(
            Hint(
                kind="driver",
                text=f"the amdgpu driver is {what}, so whether it runs ROCm {rocm} was not checked: "
                "give the AMD GPU Driver release you installed (the amdgpu-install version) with --driver",
                command=shlex.join(
                    ["rocm-vllm", "check", *_node_argv(ctx.node), "--driver", "30.30.3"]
                ),
            )
        )
    # 2. Request changes: an older vLLM, no quantization, a source build.
    if ctx.request.vllm is not None and str(ctx.request.vllm) and not ok_now:
        again = _ok_plan(_resolve(ctx, request=replace(ctx.request, vllm=None)))
        if again is not None:
            c = again.candidate
            cmd = shlex.join(["rocm-vllm", "check", *_node_argv(ctx.node), "--vllm", f"=={c.vllm}"])
            lead = "or keep this host as it is and pick" if "driver" in seen_kinds else "pick"
            add(
                Hint(
                    kind="vllm",
                    text=f"{lead} vLLM <= {c.vllm}, the newest that fits it: {c.label} ({c.channel})",
                    command=cmd,
                )
            )
    gate = [r for r in ctx.d.blockers if r.code in GATE_CODES]
    if gate:
        again = _ok_plan(
            _resolve(ctx, request=replace(ctx.request, quantization=None, kv_cache_dtype=None))
        )
        for r in gate:
            tail = f"; without it, {_then(again)} runs" if again is not None else ""
            add(Hint(kind="quantization", text=f"{r.hint}{tail}"))
    if plan is None or (plan.unofficial and plan.candidate.kind != "source"):
        src = _ok_plan(_resolve(ctx, request=replace(ctx.request, paths=frozenset({"source"}))))
        if src is None:
            d = _resolve(ctx, request=replace(ctx.request, paths=frozenset({"source"})))
            src = d.plan if d is not None and d.plan is not None else None
        if src is not None:
            gfx = ",".join(ctx.node.gfx_targets)
            cmd = shlex.join(
                [
                    "rocm-vllm",
                    "dockerfile",
                    "--gfx",
                    gfx,
                    "--vllm",
                    str(src.candidate.vllm),
                    "-o",
                    "Dockerfile.vllm-rocm",
                ]
            )
            add(
                Hint(
                    kind="source-build",
                    text=f"build vLLM {src.candidate.vllm} from source for {gfx} only"
                    + (
                        " (unofficial: vLLM accepts this target in CMake but ships and tests no artifact for it)"
                        if src.unofficial
                        else ""
                    ),
                    unofficial=src.unofficial,
                    command=cmd,
                )
            )
    node_level = any(r.code in GATE_CODES or r.code == "gfx-unsupported" for r in ctx.d.blockers)
    if (
        any(r.code == "release-facts-unknown" for e in ctx.d.rejected for r in e.reasons)
        and not ok_now
        and not node_level
    ):
        add(
            Hint(
                kind="data",
                text="read the missing releases' build facts from upstream",
                command="rocm-vllm matrix refresh --source sdist",
            )
        )
    if (
        any(r.code == "artifact-facts-unknown" for e in ctx.d.rejected for r in e.reasons)
        and not ok_now
        and not node_level
    ):
        add(
            Hint(
                kind="data",
                text="read the unknown images' arch lists from upstream, or try one with `rocm-vllm image --smoke`",
                command="rocm-vllm matrix refresh",
            )
        )
    # 3. Unofficial routes, each with its risk.
    for name in ctx.node.gfx_targets:
        t = ctx.m.gfx_target(name)
        if t is None or not t.override or t.vllm_status == "official":
            continue
        if plan is not None and plan.override == t.override:
            continue
        # Without any plan, no prebuilt artifact carries the near target's code either: it needs a build for it.
        build = (
            f" in a build for {t.override_target} (`rocm-vllm dockerfile --gfx {t.override_target}`)"
            if plan is None
            else ""
        )
        add(
            Hint(
                kind="override",
                unofficial=True,
                text=f"unofficial: HSA_OVERRIDE_GFX_VERSION={t.override} makes the runtime load {t.override_target} code on {name}{build}; "
                "risk: crashes or wrong results, so test outputs before serving",
                command=shlex.join(["export", f"HSA_OVERRIDE_GFX_VERSION={t.override}"]),
            )
        )
    if not ok_now:
        for e in ctx.d.rejected:
            for r in e.reasons:
                if (
                    r.code == "gfx-unsupported"
                    and r.fix is None
                    and not ("override" in seen_kinds and "HSA_OVERRIDE" in r.hint)
                ):
                    add(Hint(kind="other", text=r.hint, unofficial="unofficial" in r.hint))
            if any(h.kind == "other" for h in hints):
                break
    return sorted(
        hints, key=lambda h: HINT_ORDER.index(h.kind) if h.kind in HINT_ORDER else len(HINT_ORDER)
    )


def _host_hint(ctx: _Context, reasons: Sequence[Reason], node: Node, again: Evaluation) -> Hint:
    """One hint for host changes that, applied together, were re-solved to open ``again``."""
    parts: list[str] = []
    kinds: list[str] = []
    command: str | None = None
    verbs: list[str] = []
    changes: list[tuple[str, str]] = []
    for r in reasons:
        fix = r.fix
        assert fix is not None
        kinds.append(fix.kind)
        if fix.value:
            changes.append((fix.kind, fix.value))
        if fix.kind == "driver":
            part = f"{fix.direction or 'upgrade'} the host's amdgpu driver to {fix.value}.x"
            paired = ctx.m.driver(driver_series(node.driver_version or ""))
            if paired is not None and paired.paired_rocm:
                part += f" (AMD released it with ROCm {paired.paired_rocm})"
            parts.append(part)
            verbs.append("fits")
        elif fix.kind == "python":
            parts.append(f"use {fix.text} for the venv")
            command = shlex.join(["uv", "venv", "--python", str(node.python)])
            verbs.append("installs")
        elif fix.kind == "os":
            parts.append(f"use {fix.text} (Ubuntu 22.04 has 2.35)")
            verbs.append("loads")
        else:
            parts.append(fix.text)
    kind = max(kinds, key=lambda k: HINT_ORDER.index(k) if k in HINT_ORDER else len(HINT_ORDER))
    lead = _join(parts)
    if len(parts) > 1:
        lead += " (each alone is not enough)"
    verb = " and ".join(dict.fromkeys(verbs)) or "fits"
    return Hint(
        kind=kind,
        text=f"{lead}: then {_then(again)} {verb}",
        command=command,
        changes=tuple(changes),
        then=again.candidate.label,
    )


def _node_argv(node: Node) -> list[str]:
    return list(node_flags(node))
