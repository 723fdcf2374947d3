"""`rocm-vllm check`: can this node run vLLM, and how?"""

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, assert_never

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
    emit_json,
    format_option,
    handle_errors,
    model_request,
    pick_format,
    resolve_node,
    terminal_width,
    use_color,
)

if TYPE_CHECKING:
    from resolver.data.model import Matrix
    from resolver.solve import Decision
    from resolver.solve.routes import Routes

REQUEST_PANEL = "Request"


class CheckFormat(StrEnum):
    """What `check` prints; --json, --explain, --verbose and --quiet are aliases of its values."""

    text = "text"
    json = "json"
    explain = "explain"
    verbose = "verbose"
    quiet = "quiet"


@handle_errors
def check(
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
        typer.Option(
            "--vllm",
            help="vLLM version or PEP 440 spec (default: newest that fits).",
            rich_help_panel=REQUEST_PANEL,
        ),
    ] = None,
    quantization: Annotated[
        str | None,
        typer.Option(
            "--quantization", help="fp8, mxfp4, awq, gptq, ...", rich_help_panel=REQUEST_PANEL
        ),
    ] = None,
    kv_cache_dtype: Annotated[
        str | None,
        typer.Option(
            "--kv-cache-dtype", help="auto, fp8, fp8_e4m3, fp8_e5m2.", rich_help_panel=REQUEST_PANEL
        ),
    ] = None,
    prefer: Annotated[
        str | None,
        typer.Option("--prefer", help="image, wheel or source.", rich_help_panel=REQUEST_PANEL),
    ] = None,
    vendor: Annotated[
        str | None,
        typer.Option(
            "--vendor",
            help="amd or nvidia: whose GPUs to plan for on a node with both (default: the "
            "vendor whose GPUs the node has, AMD when it has both).",
            rich_help_panel=REQUEST_PANEL,
        ),
    ] = None,
    model: ModelSpecOpt = None,
    online: OnlineOpt = False,
    tensor_parallel_size: TensorParallelOpt = None,
    max_model_len: MaxModelLenOpt = None,
    gpu_memory_utilization: GpuMemoryUtilizationOpt = None,
    output_format: Annotated[
        CheckFormat | None, format_option("What to print (default: text)")
    ] = None,
    json_out: JsonOpt = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain", "-e", help="Why, step by step: the facts with their sources, then hints."
        ),
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="List every rejected candidate.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the verdict.")] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="For CI: an answer that rests on a requirement nobody checked (the driver "
            "release, a kernel floor, an arch list only a docs page claims) is unknown (exit 6), "
            "naming what to give.",
            rich_help_panel=REQUEST_PANEL,
        ),
    ] = False,
) -> None:
    """Decide whether the node can run vLLM and how (exit 0 yes, 1 no, 2 bad input, 6 unknown).

    Exit 6 (unknown): the data lacks a fact the answer needs; the output says which and how.
    """
    from resolver.data import matrix
    from resolver.solve import KINDS, Request, solve
    from resolver.util.errors import UsageError
    from resolver.util.versions import parse_spec

    if vendor is not None and vendor not in ("amd", "nvidia"):
        raise UsageError(
            f"--vendor {vendor!r} is not a GPU vendor", hint="use --vendor amd or nvidia"
        )
    if prefer is not None and prefer not in KINDS:
        raise UsageError(
            f"--prefer {prefer!r} is not a path kind", hint="use --prefer image, wheel or source"
        )
    fmt = pick_format(
        output_format,
        {
            CheckFormat.json: json_out,
            CheckFormat.explain: explain,
            CheckFormat.verbose: verbose,
            CheckFormat.quiet: quiet,
        },
        CheckFormat.text,
    )
    # Bad sizing flags and an unreadable model fail before the data loads (exit 2).
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
        vendor=vendor,
        cc=cc,
        nvidia_gpu=nvidia_gpu,
        nvidia_driver=nvidia_driver,
    )
    request = Request(
        vllm=parse_spec(vllm) if vllm else None,
        quantization=quantization,
        kv_cache_dtype=kv_cache_dtype,
        prefer=prefer,
        vendor=vendor,  # type: ignore[arg-type]  # checked above
        strict=strict,
        model=wanted,
    )
    decision = solve(m, node, request)
    what_if = None
    wants_routes = fmt in (CheckFormat.json, CheckFormat.explain)
    if wants_routes or decision.verdict == "blocked_host_fix":
        # The what-if search (host changes, an older vLLM, ...): the short form prints its best
        # host route, --explain words every route, --json carries them.
        from resolver.solve.routes import search

        what_if = search(m, decision)
    # One branch per format; mypy's assert_never fails the build when a new one has none.
    match fmt:
        case CheckFormat.json:
            from resolver.explain import decision_json

            emit_json(decision_json(decision, m, what_if))
        case CheckFormat.quiet:
            typer.echo(decision.verdict)
        case CheckFormat.explain:
            _explain(decision, m, what_if)
        case CheckFormat.text | CheckFormat.verbose:
            from resolver.explain import render

            typer.echo(
                render(
                    decision,
                    m,
                    color=use_color(),
                    verbose=fmt is CheckFormat.verbose,
                    width=terminal_width(),
                    route=what_if.best if what_if is not None else None,
                ),
                nl=False,
            )
        case _:
            assert_never(fmt)
    raise typer.Exit(decision.exit_code)


def _explain(decision: "Decision", m: "Matrix", what_if: "Routes | None") -> None:
    """--explain: the derivation, in rich's colours on a terminal, else as plain text."""
    from resolver.explain import derive

    derivation = derive(decision, m, what_if)
    if use_color():
        from resolver.explain import render_rich, rich_console

        render_rich(derivation, rich_console(), model=decision.model)
    else:
        from resolver.explain import render_derivation

        typer.echo(
            render_derivation(derivation, width=terminal_width(), model=decision.model), nl=False
        )


def register(app: typer.Typer, matrix_app: typer.Typer) -> None:
    app.command("check")(check)
