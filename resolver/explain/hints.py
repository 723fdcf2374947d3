"""Hints: the wording of the what-if search's result (``resolver.solve.routes``: host changes,
an older vLLM, no quantization, a source build, each solved again there), plus the routes the
data names (unofficial overrides and forks, with their risk) and data refreshes. They come apart
from the proof. Nothing here solves.
"""

from __future__ import annotations

from packaging.version import Version

from resolver.data.codes import GATE_CODES, QUANT_CODES
from resolver.data.model import Matrix
from resolver.data.node import Node
from resolver.explain.chain import (
    HINT_ORDER,
    _Context,
    _join,
)
from resolver.explain.derivation import Hint
from resolver.explain.steps import node_flags
from resolver.explain.words import word
from resolver.solve import Candidate, Evaluation
from resolver.solve.checks import node_release, shipped_with
from resolver.solve.finding import Phrase
from resolver.solve.provider import override_ok
from resolver.solve.routes import Route, Routes
from resolver.util import shell
from resolver.util.versions import driver_label, driver_series, series


def _then(ev: Evaluation) -> str:
    c = ev.candidate
    rocm = f" on ROCm {c.rocm}" if c.rocm is not None else ""
    return f"{c.name} ({c.channel}{rocm})"


def _hints(ctx: _Context, plan: Evaluation | None, found: Routes) -> list[Hint]:
    """The hints for ``ctx``'s decision: what the what-if search ``found``, then the routes and
    refreshes the data names, in ``HINT_ORDER``."""
    hints: list[Hint] = []

    def add(h: Hint | None) -> None:
        if h is not None and h.identity not in {x.identity for x in hints}:
            hints.append(h)

    for route in found.host:
        add(_host_hint(ctx, route))
    ok_now = plan is not None and ctx.d.exit_code == 0
    add(_unknown_driver_hint(ctx, plan))
    add(_older_vllm_hint(ctx, found, driver_hint=any(h.kind == "driver" for h in hints)))
    for h in _quantization_hints(ctx, found):
        add(h)
    add(_source_hint(ctx, found))
    for h in _data_hints(ctx, ok_now):
        add(h)
    for h in _override_hints(ctx, plan):
        add(h)
    if plan is None:  # a fork or llama.cpp only where no vLLM path exists at all
        overridden = any(h.kind == "override" for h in hints)
        for h in _other_routes(ctx, overridden):
            add(h)
    return sorted(hints, key=_order)


def phrase_about(p: Phrase) -> tuple[str, ...]:
    """What a hint worded from a finding points at: its wording and values (never its words)."""
    return (p.key, *(f"{name}={value}" for name, value in p.values))


def path_about(c: Candidate) -> tuple[str, ...]:
    """What a hint that opens a path points at: the path's key."""
    return c.key


def _order(h: Hint) -> int:
    return HINT_ORDER.index(h.kind) if h.kind in HINT_ORDER else len(HINT_ORDER)


def _unknown_driver_hint(ctx: _Context, plan: Evaluation | None) -> Hint | None:
    """The driver is not in AMD's table (or not known): say which flag makes the check."""
    if plan is None or plan.candidate.rocm is None or ctx.driver is not None:
        return None
    rocm = series(plan.candidate.rocm)
    what = (
        "unknown"
        if ctx.node.driver_version is None
        else f"{ctx.node.driver_version}, not in AMD's table"
    )
    # The example release is the series AMD shipped with that ROCm (else the newest that runs
    # it), from the data; the node's own --driver is left out, so the flag is given once.
    runs = [d for d in ctx.m.drivers if d.runs(plan.candidate.rocm)]
    paired = [d for d in runs if d.paired_rocm and series(Version(d.paired_rocm)) == rocm]
    example = (paired or runs)[0].series if (paired or runs) else None
    argv = node_flags(ctx.node, without=frozenset({"--driver"}))
    return Hint(
        kind="driver",
        about=("rocm", str(rocm)),
        text=f"the amdgpu driver is {what}, so whether it runs ROCm {rocm} was not checked: "
        "give the AMD GPU Driver release you installed (the amdgpu-install version) with --driver",
        command=shell.join(["rocm-vllm", "check", *argv, "--driver", example])
        if example is not None
        else None,
    )


def _older_vllm_hint(ctx: _Context, found: Routes, *, driver_hint: bool) -> Hint | None:
    if found.older_vllm is None:
        return None
    c = found.older_vllm.opens.candidate
    cmd = shell.join(["rocm-vllm", "check", *_node_argv(ctx.node), "--vllm", f"=={c.vllm}"])
    lead = "or keep this host as it is and pick" if driver_hint else "pick"
    return Hint(
        kind="vllm",
        about=path_about(c),
        text=f"{lead} vLLM <= {c.vllm}, the newest that fits it: {c.label} ({c.channel})",
        command=cmd,
    )


def _quantization_hints(ctx: _Context, found: Routes) -> list[Hint]:
    again = found.without_quantization
    tail = f"; without it, {_then(again.opens)} runs" if again is not None else ""
    return [
        Hint(kind="quantization", about=phrase_about(r.hint), text=f"{word(r.hint)}{tail}")
        for r in ctx.d.blockers
        if r.code in QUANT_CODES
    ]


def _source_hint(ctx: _Context, found: Routes) -> Hint | None:
    route = found.source_build
    if route is None:
        return None
    src = route.opens
    gfx = ",".join(ctx.node.gfx_targets)
    cmd = shell.join(
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
    unofficial = (
        f" and run it under HSA_OVERRIDE_GFX_VERSION={src.override} (unofficial: the runtime "
        "loads another GPU's code)"
        if src.override
        else " (unofficial: vLLM accepts this target in CMake but ships and tests no artifact for "
        "it)"
    )
    built = ",".join(src.built_for(ctx.node.gfx_targets))
    return Hint(
        kind="source-build",
        about=path_about(src.candidate),
        text=f"build vLLM {src.candidate.vllm} from source for {built} only"
        + (unofficial if src.unofficial else ""),
        unofficial=src.unofficial,
        command=cmd,
    )


def _data_hints(ctx: _Context, ok_now: bool) -> list[Hint]:
    """Facts the data lacks that rejected paths depend on (not when the GPU itself is the cause)."""
    node_level = any(r.code in GATE_CODES or r.code == "gfx-unsupported" for r in ctx.d.blockers)
    if ok_now or node_level:
        return []
    codes = {r.code for e in ctx.d.rejected for r in e.reasons}
    hints: list[Hint] = []
    if "release-facts-unknown" in codes:
        hints.append(
            Hint(
                kind="data",
                about=("release-facts-unknown",),
                text="read the missing releases' build facts from upstream",
                command="rocm-vllm matrix refresh --source sdist",
            )
        )
    if "artifact-facts-unknown" in codes:
        hints.append(
            Hint(
                kind="data",
                about=("artifact-facts-unknown",),
                text="read the unknown images' arch lists from upstream, "
                "or try one with `rocm-vllm image --smoke`",
                command="rocm-vllm matrix refresh",
            )
        )
    return hints


def _override_hints(ctx: _Context, plan: Evaluation | None) -> list[Hint]:
    """Unofficial routes the data names for near targets (HSA_OVERRIDE_GFX_VERSION), with risk."""
    hints: list[Hint] = []
    known = tuple(t for n in ctx.node.gfx_targets if (t := ctx.m.gfx_target(n)) is not None)
    if not override_ok(known):  # the override would make the node's other GPUs load its code
        return hints
    for name in ctx.node.gfx_targets:
        t = ctx.m.gfx_target(name)
        if t is None or not t.override or t.vllm_status == "official":
            continue
        if plan is not None and plan.override == t.override:
            continue
        # Without any plan, no prebuilt artifact carries the near target's code either: it needs
        # a build for it, which `dockerfile --gfx` of this GPU writes with the override set.
        build = (
            f" in a build for {t.override_target} (`rocm-vllm dockerfile --gfx {name}`)"
            if plan is None
            else ""
        )
        hints.append(
            Hint(
                kind="override",
                about=(name, t.override),
                unofficial=True,
                text=f"unofficial: HSA_OVERRIDE_GFX_VERSION={t.override} makes the runtime load "
                f"{t.override_target} code on {name}{build}; "
                "risk: crashes or wrong results, so test outputs before serving",
                command=shell.join(["export", f"HSA_OVERRIDE_GFX_VERSION={t.override}"]),
            )
        )
    return hints


def _other_routes(ctx: _Context, overridden: bool) -> list[Hint]:
    """The route a GPU vLLM does not support has in the data (a fork, llama.cpp): the first one."""
    for e in ctx.d.rejected:
        hints = [
            Hint(
                kind="other",
                about=phrase_about(r.hint),
                text=word(r.hint),
                unofficial=r.unofficial,
            )
            for r in e.reasons
            if r.code == "gfx-unsupported"
            and r.fix is None
            and not (overridden and r.override is not None)
        ]
        if hints:
            return hints
    return []


def route_words(m: Matrix, route: Route) -> tuple[str, str]:
    """A host route in words, the one wording `check` and `--explain` print: what to change, in
    the order the host takes it, and the verb for what then happens ("fits", "installs")."""
    parts: list[str] = []
    verbs: list[str] = []
    for change in route.host_changes:
        if change.kind == "driver":
            part = (
                f"{change.direction or 'upgrade'} the host's amdgpu driver to "
                f"{driver_label(change.value)}"
            )
            paired = m.driver(driver_series(route.node.driver_version or ""))
            shipped = (
                shipped_with(paired, node_release(paired, route.node.driver_version))
                if paired is not None
                else None
            )
            if shipped is not None:
                part += f" (AMD released it with ROCm {shipped})"
            os_first = next(
                (
                    r.fix.os_first
                    for r in route.reasons
                    if r.fix is not None and r.fix.change == change and r.fix.os_first
                ),
                None,
            )
            if os_first:  # AMD does not support that driver on the host's OS: that step first
                part = f"move the host to {os_first}, then {part}"
            parts.append(part)
            verbs.append("fits")
        elif change.kind == "nvidia_driver":
            parts.append(f"upgrade the host's NVIDIA driver to the {change.value} branch or newer")
            verbs.append("fits")
        elif change.kind == "gpus":
            parts.append(f"run it on {change.value} GPUs of this kind (tensor parallelism)")
            verbs.append("fits")
        elif change.kind == "gtt":
            parts.append(
                f"raise the APU's GTT limit to {change.value} GiB (ttm.pages_limit="
                f"{int(change.value) * 2**30 // 4096} on the kernel command line)"
            )
            verbs.append("fits")
        elif change.kind == "python":
            parts.append(f"use Python {change.value} for the venv")
            verbs.append("installs")
        elif change.kind == "glibc":
            release = next((st for st in route.steps if st.stands_for == change), None)
            parts.append(
                f"move the host to {release.change.value} ({word(release.facts[0].text)})"
                if release is not None and release.facts
                else f"use a host OS with glibc >= {change.value}"
            )
            verbs.append("loads")
        else:  # the fix's own words (an OS release, a host ROCm, a kernel)
            texts = [
                word(r.fix.text)
                for r in route.reasons
                if r.fix is not None and r.fix.change == change
            ]
            parts.append(
                texts[0] if texts else f"change the host's {change.kind} to {change.value}"
            )
            verbs.append("fits")
    lead = _join(parts)
    if route.together:
        lead += " (each alone is not enough)"
    return lead, " and ".join(dict.fromkeys(verbs)) or "fits"


def _host_hint(ctx: _Context, route: Route) -> Hint:
    """One hint for host changes that, applied together, were solved again to open a plan."""
    lead, verb = route_words(ctx.m, route)
    python = next((c for c in route.host_changes if c.kind == "python"), None)
    command = shell.join(["uv", "venv", "--python", str(route.node.python)]) if python else None
    kinds = [r.fix.kind for r in route.reasons if r.fix is not None]
    kind = max(kinds, key=lambda k: HINT_ORDER.index(k) if k in HINT_ORDER else len(HINT_ORDER))
    changes = tuple((c.kind, c.value) for c in route.host_changes)
    return Hint(
        kind=kind,
        about=(*(f"{k}={v}" for k, v in changes), *path_about(route.opens.candidate)),
        text=f"{lead}: then {_then(route.opens)} {verb}",
        command=command,
        changes=changes,
        then=route.opens.candidate.label,
    )


def _node_argv(node: Node) -> list[str]:
    return list(node_flags(node))
