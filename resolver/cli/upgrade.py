"""`rocm-vllm upgrade`: the fewest ordered host changes that get this node to a vLLM release."""

from typing import Annotated, Any, assert_never

import typer

from resolver.cli._common import (
    CcOpt,
    DriverOpt,
    ExampleOpt,
    GfxOpt,
    GpuMemoryUtilizationOpt,
    GpusOpt,
    JsonOpt,
    MaxModelLenOpt,
    ModelSpecOpt,
    NodeFileOpt,
    NvidiaDriverOpt,
    NvidiaGpuOpt,
    OnlineOpt,
    OsOpt,
    PythonOpt,
    RocminfoOpt,
    RocmOpt,
    TensorParallelOpt,
    TextOrJson,
    emit_json,
    format_option,
    handle_errors,
    model_request,
    pick_format,
    resolve_node,
    terminal_width,
    wrapped,
)

SCHEMA_VERSION = 1
_NOT_A_FLAG = ("kernel", "nvidia_driver", "groups", "platform")
_STREAMS = {"legacy": "legacy (7.x)", "therock": "TheRock (7.14, 10.x)"}
# How a step names what it changes.
_WHAT = {
    "os": "OS release",
    "kernel": "Linux kernel",
    "driver": "amdgpu driver",
    "nvidia_driver": "NVIDIA driver",
    "rocm": "host ROCm",
    "glibc": "glibc",
    "python": "Python",
    "groups": "the user's groups",
    "platform": "host platform",
}


@handle_errors
def upgrade(
    gfx: GfxOpt = None,
    gpus: GpusOpt = None,
    driver: DriverOpt = None,
    cc: CcOpt = None,
    nvidia_gpu: NvidiaGpuOpt = None,
    nvidia_driver: NvidiaDriverOpt = None,
    os_id: OsOpt = None,
    rocm: RocmOpt = None,
    python: PythonOpt = None,
    node_file: NodeFileOpt = None,
    rocminfo: RocminfoOpt = None,
    example: ExampleOpt = None,
    vllm: Annotated[
        str | None,
        typer.Option("--vllm", help="The release wanted (PEP 440 spec; default: the newest)."),
    ] = None,
    prefer: Annotated[
        str | None,
        typer.Option(
            "--prefer",
            help="image, wheel or source: plan the route to that kind of path only (a pip "
            "install: --prefer wheel).",
        ),
    ] = None,
    model: ModelSpecOpt = None,
    online: OnlineOpt = False,
    tensor_parallel_size: TensorParallelOpt = None,
    max_model_len: MaxModelLenOpt = None,
    gpu_memory_utilization: GpuMemoryUtilizationOpt = None,
    output_format: Annotated[
        TextOrJson | None, format_option("What to print (default: text)")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """The fewest ordered host changes that make `check` accept the release (exit 0 a route, 1
    none, 2 bad input, 6 unknown).

    Each step is one the host can take where it is (a driver series AMD supports on its OS
    release, the OS step first where it needs one); the end state is solved again."""
    from resolver.data import matrix
    from resolver.solve import Request
    from resolver.solve.routes import plan_upgrade
    from resolver.util.versions import parse_spec

    fmt = pick_format(output_format, {TextOrJson.json: json_out}, TextOrJson.text)
    wanted = model_request(
        model,
        online=online,
        tensor_parallel_size=tensor_parallel_size,
        max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization,
    )
    m = matrix.load()
    node = resolve_node(
        gfx=gfx,
        gpus=gpus,
        driver=driver,
        os_id=os_id,
        rocm=rocm,
        python=python,
        node_file=node_file,
        rocminfo=rocminfo,
        example=example,
        cc=cc,
        nvidia_gpu=nvidia_gpu,
        nvidia_driver=nvidia_driver,
    )
    from resolver.solve.types import KINDS
    from resolver.util.errors import InputError

    if prefer is not None and prefer not in KINDS:
        raise InputError(
            f"--prefer {prefer!r} is not a path kind", hint="use --prefer image, wheel or source"
        )
    request = Request(
        vllm=parse_spec(vllm) if vllm else None,
        prefer=prefer,  # checked against KINDS above
        paths=frozenset({prefer}) if prefer else None,
        model=wanted,
    )
    route = plan_upgrade(m, node, request)
    data = route_json(route, node, m)
    match fmt:
        case TextOrJson.json:
            emit_json(data)
        case TextOrJson.text:
            typer.echo(render(data, width=terminal_width()), nl=False)
        case _:
            assert_never(fmt)
    raise typer.Exit(data["exit_code"])


def _stream_change(m: Any, node: Any, route: Any) -> dict[str, str] | None:
    """A driver step that moves the host from one ROCm stream to another (the legacy 7.x stream
    to TheRock's 7.14/10.x): the stream the host's driver shipped with, and the plan's."""
    from packaging.version import Version

    from resolver.util.versions import driver_series

    plan = route.plan
    if plan is None or plan.candidate.rocm is None or not node.driver_version:
        return None
    theirs = m.rocm_for(plan.candidate.rocm)
    current = m.driver(driver_series(node.driver_version))
    paired = (
        m.rocm_release(Version(current.paired_rocm)) if current and current.paired_rocm else None
    )
    if theirs is None or paired is None or theirs.stream == paired.stream:
        return None
    return {"from": paired.stream, "to": theirs.stream, "rocm": str(theirs.version)}


def route_json(route: Any, node: Any, m: Any) -> dict[str, Any]:
    """The route as structure (docs/upgrade.schema.json)."""
    from resolver.explain import candidate_json, missing_json, node_flags, reason_json
    from resolver.explain.report import step_json

    steps = []
    stream = _stream_change(m, node, route)
    for step in route.steps or ():
        out = step_json(step)
        out["stream_change"] = stream if step.change.kind == "driver" else None
        steps.append(out)
    plan = route.plan
    check = None
    # A step no node flag states (a kernel, an NVIDIA driver): the confirming check is a live
    # probe on the node after the change, not a command that describes it from here.
    on_node = any(s.change.kind in _NOT_A_FLAG for s in route.steps or ())
    if route.found and route.steps:
        from resolver.util import shell

        flags = [] if on_node else [*node_flags(route.node)]
        want = route.before.request.vllm
        if want is not None and str(want):
            flags += ["--vllm", str(want)]
        if route.before.request.prefer:
            flags += ["--prefer", route.before.request.prefer]
        wanted = route.before.request.model
        if wanted is not None:  # the confirming check asks about the same model, same sizes
            flags += ["--model", wanted.spec]
            for flag, value in (
                ("--tensor-parallel-size", wanted.tensor_parallel_size),
                ("--max-model-len", wanted.max_model_len),
                ("--gpu-memory-utilization", wanted.gpu_memory_utilization),
            ):
                if value is not None:
                    flags += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
        check = shell.join(["rocm-vllm", "check", *flags])
    # The data cannot tell (a release or driver it does not know): unknown, never "no route".
    unknown = not route.found and route.before.verdict == "unknown"
    # --model: check's model section for the end state (the changed node solved again).
    end = route.after if route.after is not None else route.before
    model = None
    if end.model is not None:
        from resolver.explain.report import model_json

        model = model_json(end.model)
    return {
        "schema_version": SCHEMA_VERSION,
        "exit_code": 0 if route.found else 6 if unknown else 1,
        "found": route.found,
        "verdict_before": route.verdict_before,
        "verdict_after": route.after.verdict if route.after is not None else None,
        "steps": steps,
        "plan": candidate_json(plan.candidate) if plan is not None else None,
        "check": check,
        "check_on_node": on_node,
        "blocked": [reason_json(r) for r in route.blocked],
        "missing": [missing_json(f) for f in (route.before.missing if not route.found else ())],
        "model": model,
        "node": {
            "gfx_targets": list(node.gfx_targets),
            "driver_version": node.driver_version,
            "os": node.os,
            "nvidia_gpus": sorted({str(g.get("name") or "NVIDIA GPU") for g in node.nvidia_gpus}),
            "nvidia_driver": node.nvidia_driver,
        },
    }


def render(data: dict[str, Any], *, width: int = 100) -> str:
    lines: list[str] = []
    node = data["node"]
    if not node["gfx_targets"] and node["nvidia_gpus"]:
        gpu = "+".join(node["nvidia_gpus"])
        driver = f"NVIDIA driver {node['nvidia_driver'] or '?'}"
    else:
        gpu = "+".join(node["gfx_targets"]) or "?"
        driver = f"amdgpu {node['driver_version']}" if node["driver_version"] else "amdgpu ?"
    where = " · ".join(x for x in (gpu, driver, node["os"] or "") if x)
    if data["missing"]:
        lines.append(f"unknown: the data lacks facts the route depends on ({where})")
        for fact in data["missing"]:
            lines.append(f"  ? {fact['detail']}")
            if fact["fetch"]:
                lines.append(f"    fetch: {fact['fetch']}")
        return "\n".join(wrapped(line, width=width) for line in lines) + "\n"
    if not data["found"] and data["verdict_before"] == "unofficial_only":
        # Not "no plan": check gives one, off the supported path; no host change gives a better.
        lines.append(
            f"no route: no host change gives this node an official plan ({where}); as it is, "
            "`rocm-vllm check` answers unofficial_only (its plan says how)"
        )
        return "\n".join(wrapped(line, width=width) for line in lines) + "\n"
    if not data["found"]:
        lines.append(f"no route: no host change gives this node a plan ({where})")
        for reason in data["blocked"][:5]:
            lines.append(f"  - {reason['message']}")
            lines.append(f"    hint: {reason['hint']}")
        return "\n".join(wrapped(line, width=width) for line in lines) + "\n"
    plan = data["plan"]
    label = plan["label"] if plan else "?"
    if not data["steps"]:
        lines.append(f"nothing to change: {where} runs {label} as it is")
        lines += _model_lines(data["model"])
        return "\n".join(wrapped(line, width=width) for line in lines) + "\n"
    lines.append(f"route: {where} -> {label}")
    for i, step in enumerate(data["steps"], 1):
        lines.append(_step_line(i, step))
        for why in step["why"]:
            lines.append(f"     because {why}")
        if step["stream_change"]:
            moved = step["stream_change"]
            old, new = (_STREAMS.get(moved[k], moved[k]) for k in ("from", "to"))
            lines.append(
                f"     note: the host moves from ROCm's {old} stream to {new} (the plan runs ROCm "
                f"{moved['rocm']})"
            )
        if step["source"]:
            lines.append(f"     source: {step['source']}")
    lines.append(f"then: {label} ({data['verdict_after']}, solved again on the changed host)")
    lines += _model_lines(data["model"])
    out = [wrapped(line, width=width) for line in lines]
    if data["check"] and data["check_on_node"]:
        out.append("  on the node after the change (a live probe reads the new facts):")
        out.append(f"  $ {data['check']}")
    elif data["check"]:
        out.append(f"  $ {data['check']}")  # a command: never wrapped
    return "\n".join(out) + "\n"


def _step_line(i: int, step: dict[str, Any]) -> str:
    if step["change"] == "gpus":  # another machine: the model needs more GPUs of this kind
        had = f" (this node has {step['from']})" if step["from"] else ""
        return f"  {i}. use {step['to']} GPUs{had}"
    what = _WHAT.get(step["change"], step["change"])
    return f"  {i}. {what}: {step['from'] or '?'} -> {step['to']}"


def _model_lines(model: dict[str, Any] | None) -> list[str]:
    """--model at the end state: the size that fits, from the JSON's model section."""
    if model is None:
        return []
    fit = model["fit"]
    if fit is None:
        return [f"model {model['spec']}: not sized (the memory of the GPUs is not known)"]
    verdict = "fits" if fit["fits"] else f"fits only up to --max-model-len {fit['max_model_len']}"
    fewest = model["min_gpus"] if model["min_gpus"] is not None else "more than 64"
    said = (
        f"model {model['spec']}: TP {fit['tensor_parallel_size']}, context {fit['context']} "
        f"{verdict}; the fewest GPUs of this kind: {fewest}"
    )
    return [said]


def register(app: typer.Typer, matrix_app: typer.Typer) -> None:
    app.command("upgrade")(upgrade)
