"""`rocm-vllm image`: the verified image for the node, pinned by digest on request, and its run
command."""

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

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
    NodeFileOpt,
    NvidiaDriverOpt,
    NvidiaGpuOpt,
    OnlineOpt,
    OsOpt,
    PythonOpt,
    RocminfoOpt,
    RocmOpt,
    TensorParallelOpt,
    completer,
    emit_json,
    handle_errors,
    resolve_node,
    serving_request,
    stdout_file,
    terminal_width,
    wrapped,
)

IMAGE_PANEL = "Image"
RUN_PANEL = "Run command"


@handle_errors
def image(
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
            rich_help_panel=IMAGE_PANEL,
        ),
    ] = None,
    registry: Annotated[
        str | None,
        typer.Option(
            "--registry",
            envvar="ROCM_VLLM_REGISTRY",
            help="Registry or mirror base URL (default: Docker Hub), e.g. http://127.0.0.1:5000.",
            rich_help_panel=IMAGE_PANEL,
        ),
    ] = None,
    digest: Annotated[
        bool,
        typer.Option(
            "--digest",
            help="Pin the tag to its manifest digest (asks the registry).",
            rich_help_panel=IMAGE_PANEL,
        ),
    ] = False,
    pull: Annotated[
        bool,
        typer.Option(
            "--pull",
            help="Pull through the Docker Engine and verify the digest.",
            rich_help_panel=IMAGE_PANEL,
        ),
    ] = False,
    audit_it: Annotated[
        bool,
        typer.Option(
            "--audit",
            help="Read the GPU code of the pinned image from the registry (implies --digest): "
            "exit 1 when its libraries lack the node's gfx; the audited arch list is kept in the "
            "data overlay, so `check` trusts it over any docs claim.",
            rich_help_panel=IMAGE_PANEL,
        ),
    ] = False,
    smoke: Annotated[
        bool,
        typer.Option(
            "--smoke",
            help="Prove the image works here: its versions against the data, the HIP devices it "
            "sees (gcnArchName against the node), a matrix product on the GPU against the CPU.",
            rich_help_panel=IMAGE_PANEL,
        ),
    ] = False,
    smoke_serve: Annotated[
        bool,
        typer.Option(
            "--smoke-serve",
            help="--smoke, and start vLLM on --model from the Hugging Face cache, asking for "
            "/v1/models and one completion (also spelled --smoke=serve).",
            rich_help_panel=IMAGE_PANEL,
        ),
    ] = False,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="docker, podman, compose or apptainer (also Singularity: the .def file; its exec "
            "command on stderr).",
            rich_help_panel=RUN_PANEL,
            autocompletion=completer("docker", "podman", "compose", "apptainer"),
        ),
    ] = "docker",
    port: Annotated[
        int,
        typer.Option(
            "--port", help="Port vLLM serves on (host and container).", rich_help_panel=RUN_PANEL
        ),
    ] = 8000,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Model to serve (Hugging Face id or path); where its config.json is here (the "
            "Hugging Face cache, a directory, the file), the run command is sized for it. A "
            "local model is served from its absolute directory, mounted read-only at that path.",
            rich_help_panel=RUN_PANEL,
        ),
    ] = None,
    online: OnlineOpt = False,
    tensor_parallel_size: TensorParallelOpt = None,
    max_model_len: MaxModelLenOpt = None,
    gpu_memory_utilization: GpuMemoryUtilizationOpt = None,
    quantization: Annotated[
        str | None,
        typer.Option(
            "--quantization",
            help="fp8, mxfp4, awq, gptq, ... (default: the checkpoint's own).",
            rich_help_panel=RUN_PANEL,
        ),
    ] = None,
    kv_cache_dtype: Annotated[
        str | None,
        typer.Option(
            "--kv-cache-dtype", help="auto, fp8, fp8_e4m3, fp8_e5m2.", rich_help_panel=RUN_PANEL
        ),
    ] = None,
    devices: Annotated[
        str | None,
        typer.Option(
            "--devices",
            help="GPU indices for HIP_VISIBLE_DEVICES, e.g. 0,1,2,3.",
            rich_help_panel=RUN_PANEL,
        ),
    ] = None,
    hf_cache: Annotated[
        str,
        typer.Option(
            "--hf-cache",
            help="Host Hugging Face cache mounted into the container.",
            rich_help_panel=RUN_PANEL,
        ),
    ] = "~/.cache/huggingface",
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="Write the run command (or compose.yaml) to this file, atomically, instead of "
            "stdout.",
            rich_help_panel=RUN_PANEL,
        ),
    ] = None,
    lock: Annotated[
        Path | None,
        typer.Option(
            "--lock",
            help="Also write the image as a CycloneDX 1.5 bill of materials (JSON) to this file.",
            rich_help_panel=IMAGE_PANEL,
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Pick the verified vLLM image for the node and print how to run it (exit 0: found, 1: none \
or a failed check)."""
    from resolver.artifacts import workflow
    from resolver.data import matrix

    # The model's config where it is here (an id not in the cache stays a name to serve,
    # unsized; bad sizes fail first), then the run command's own checks.
    wanted, model = serving_request(
        model,
        online=online,
        tensor_parallel_size=tensor_parallel_size,
        max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization,
        port=port,
        hf_cache=hf_cache,
    )
    opts = workflow.ImageOptions(
        vllm=vllm,
        registry=registry,
        digest=digest,
        pull=pull,
        audit=audit_it,
        smoke="serve" if smoke_serve else "gpu" if smoke else None,
        fmt=fmt,
        port=port,
        model=model,
        devices=_parse_devices(devices),
        hf_cache=hf_cache,
        compose_file=_artifact_file(output, json_out, "compose.yaml"),
        definition_file=_artifact_file(output, json_out, "vllm.def"),
        model_request=wanted,
        quantization=quantization,
        kv_cache_dtype=kv_cache_dtype,
    )
    workflow.check_options(opts)
    # Every target is checked before anything slow runs, so a bad --lock never leaves -o written
    # (issue 35).
    from resolver.util.atomic import check_output

    for target in (output, lock):
        if target is not None:
            check_output(target)
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
    if pull and not json_out:
        with _pull_progress() as on_pull:
            answer = workflow.run(m, node, opts, on_pull=on_pull)
    else:
        answer = workflow.run(m, node, opts)
    out = answer.out
    unsized = model is not None and wanted is None  # no config here: said under the image
    if answer.image is None:
        _finish(out, json_out, exit_code=answer.exit_code)
        return
    out["output"] = None
    out["lock"] = None
    if answer.artifact is None:
        # The image failed a check: what was found is said, nothing runnable is printed or
        # written, and an existing -o/--lock file is left as it was (issue 34).
        if json_out:
            emit_json(out)
        else:
            _print_text(out, None, None, model=model, unsized=unsized)
            kept = [str(p) for p in (output, lock) if p is not None]
            typer.echo(
                wrapped(
                    f"no run command: the image failed the checks above (exit {answer.exit_code})"
                    + (f"; nothing written to {', '.join(kept)}" if kept else ""),
                    width=terminal_width(err=True),
                ),
                err=True,
            )
        raise typer.Exit(answer.exit_code)
    from resolver.util.atomic import write_output

    lock_text = None
    if lock is not None and answer.ref is not None:
        from resolver.artifacts.lock import dumps, image_bom

        lock_text = dumps(image_bom(answer.image, answer.ref))
    if output is not None:
        write_output(output, answer.artifact)
        out["output"] = str(output)
    if lock is not None and lock_text is not None:
        write_output(lock, lock_text)
        out["lock"] = str(lock)
    if json_out:
        emit_json(out)
    else:
        # stdout carries only the artifact (redirectable as is); everything else goes to stderr.
        # Up to v0.8.2 `vllm serve` requires its positional model (serve_model_tag, read from
        # each sdist): without --model the printed command would stop at argument parsing.
        required = model is None and any(
            r.version == answer.image.vllm and r.serve_model_tag == "required" for r in m.vllm
        )
        _print_text(
            out,
            answer.file_text,
            output,
            definition=fmt == "apptainer",
            model=model,
            model_required=required,
            unsized=unsized,
        )
        if output is None:
            typer.echo(answer.artifact, nl=False)
    raise typer.Exit(answer.exit_code)


def _artifact_file(output: Path | None, json_out: bool, default: str) -> str:
    """Where the artifact lands, for the follow-up that uses it: -o as given, else the file stdout
    is redirected to (`> my-compose.yaml`), else the name the follow-up assumes."""
    if output is not None:
        return str(output)
    if not json_out:  # under --json, stdout is the JSON document, not the artifact
        redirected = stdout_file()
        if redirected is not None:
            return redirected
    return default


def _parse_devices(text: str | None) -> tuple[int, ...] | None:
    from resolver.data.node import MAX_GPUS
    from resolver.util.bounded import ascii_int
    from resolver.util.errors import UsageError

    if text is None:
        return None
    # ASCII digits only: int() reads "1_0" as 10 and "٣" as 3, and a 5,000-digit index raises.
    parsed = [ascii_int(p, max_digits=4) for p in text.split(",") if p.strip()]
    ids = tuple(i for i in parsed if i is not None)
    if (
        not ids
        or len(ids) != len(parsed)
        or any(i >= MAX_GPUS for i in ids)
        or len(set(ids)) != len(ids)
    ):
        raise UsageError(
            f"--devices {text!r} is not a list of GPU indices",
            hint="give distinct indices such as 0,1,2,3",
        )
    return ids


@contextlib.contextmanager
def _pull_progress() -> Iterator[Callable[[Any], None]]:
    """A rich progress bar per layer while the image is pulled (on stderr, so stdout stays the
    answer). It starts with the first layer: an engine that is not there prints nothing else."""
    bars: list[Any] = []
    tasks: dict[str, Any] = {}

    def on_progress(event: Any) -> None:
        if not event.layer:
            return
        if not bars:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

            bars.append(
                Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    DownloadColumn(),
                    console=Console(stderr=True),
                    transient=False,
                )
            )
            bars[0].start()
        bar = bars[0]
        task = tasks.get(event.layer)
        if task is None:
            task = tasks[event.layer] = bar.add_task(
                f"{event.layer[:12]} {event.status}", total=None
            )
        bar.update(task, description=f"{event.layer[:12]} {event.status}")
        if event.total:
            bar.update(task, completed=event.current or 0, total=event.total)
        elif event.status in ("Pull complete", "Already exists", "Download complete"):
            current = bar.tasks[task].total or 1
            bar.update(task, completed=current, total=current)

    try:
        yield on_progress
    finally:
        if bars:
            bars[0].stop()


def _finish(out: dict[str, Any], json_out: bool, *, exit_code: int) -> None:
    if json_out:
        emit_json(out)
    else:
        width = terminal_width(err=True)

        # Nothing to redirect: stdout stays empty, so `> compose.yaml` never captures prose.
        def say(text: str) -> None:
            typer.echo(wrapped(text, width=width), err=True)

        src = out.get("source_plan")
        if src:  # the images' verdict beside check's, so the two answers read as one
            say(
                f"no verified image fits this node (images: {out['verdict']}; "
                f"`rocm-vllm check`: {src['verdict']}, a source build)"
            )
        else:
            say(f"no verified image fits this node (verdict: {out['verdict']})")
        for reason in out["blockers"]:
            say(f"  - {reason['message']}")
            say(f"    hint: {reason['hint']}")
        for fact in out["missing"]:
            say(f"  ? {fact['detail']}")
            if fact["fetch"]:
                say(f"    fetch: {fact['fetch']}")
        if not out["blockers"] and not out["missing"]:
            say("  every candidate was rejected; --json lists each with its reasons")
        if src:  # check's answer: a source build (under an override, where it needs one)
            needs = f" under HSA_OVERRIDE_GFX_VERSION={src['override']}" if src["override"] else ""
            say(
                f"  plan: {src['plan']['label']}, built for {', '.join(src['built_for'])}{needs}"
                + (" (unofficial)" if src["unofficial"] else "")
            )
            for cmd in src["commands"]:
                typer.echo(f"    $ {cmd}", err=True)  # a command: never wrapped
        elif "source_plan" in out:
            say("  no source build fits either: `rocm-vllm check --explain` says why")
        else:
            say("  a source build may still work: rocm-vllm check, then rocm-vllm dockerfile")
    raise typer.Exit(exit_code)


def _print_text(
    out: dict[str, Any],
    compose_text: str | None,
    output: Path | None,
    *,
    definition: bool = False,
    model: str | None = None,
    model_required: bool = False,
    unsized: bool = False,
) -> None:
    """The commentary, on stderr: what the image is, warnings, problems, and where the artifact
    went."""

    width = terminal_width(err=True)

    def echo(text: str, *, command: bool = False) -> None:
        # Prose fills the screen it is read on; a line that carries a command is never wrapped.
        for line in text.split("\n"):
            typer.echo(line if command else wrapped(line, width=width), err=True)

    label = (
        "official vLLM image"
        if out["official"]
        else ("deprecated image" if out["deprecated"] else "AMD image")
    )
    echo(f"image: {out['image']}", command=True)  # a reference to copy, whole
    echo(
        f"  {label}; vLLM {out['vllm']}, "
        + (f"CUDA {out['cuda']}" if out["vendor"] == "nvidia" else f"ROCm {out['rocm']}")
        + f", torch {out['torch'] or 'unknown'}; "
        f"facts {out['confidence']}"
    )
    echo(f"  source: {out['source']}")
    if out["digest"] is None:
        echo("  not pinned: add --digest to pin the tag to its manifest digest")
    if out.get("pull"):
        pulled = out["pull"]
        if pulled["verified"]:  # the digest the plan pins is the one the engine holds
            echo(f"pull: verified {pulled['ref']}@{pulled['expected_digest']}")
        else:
            echo(
                f"pull: pulled {pulled['ref']} (image {pulled['image_id'][:19]}; no pinned digest "
                "to check it against: add --digest)"
            )
    if out.get("smoke"):
        found = out["smoke"]["found"]
        echo(
            f"smoke: vllm {found['vllm']}, torch {found['torch']}, rocm "
            f"{found['rocm'] or found['hip']}"
        )
    for w in out["warnings"]:
        kind = "warning" if w["severity"] == "warning" else "note"
        echo(f"{kind}: {w['message']}\n  hint: {w['hint']}")
    for p in out["problems"]:
        echo(f"problem: {p['message']}\n  hint: {p['hint']}")
    for line in _model_lines(out, compose_text, model, model_required, unsized):
        echo(line)
    if output is not None:
        what = (
            "definition file"
            if definition
            else "compose file"
            if compose_text is not None
            else "run command"
        )
        echo(f"wrote the {what} to {output}", command=True)
    if definition:
        for line in out["follow_up"]:
            echo(f"then: {line}", command=True)
        echo(f"  or straight from the registry: {out['run_command']}", command=True)
    elif compose_text is not None:
        echo(f"then: {out['run_command']}", command=True)


def _model_lines(
    out: dict[str, Any],
    compose_text: str | None,
    model: str | None,
    model_required: bool,
    unsized: bool,
) -> list[str]:
    """What the commentary says of --model."""
    # The model is a positional word of the run command (vllm serve MODEL), so ask the option.
    if model_required:
        return [
            (
                f"  no --model given: vLLM {out['vllm']}'s `vllm serve` requires the model; "
                "add --model ORG/NAME"
            )
        ]
    if out["run_args"] and model is None and compose_text is None:
        return ["  no --model given: vLLM serves its default model; add --model ORG/NAME"]
    if unsized:
        return [
            (
                f"  not sized for {model}: no config.json of it here (Hugging Face cache, "
                "directory or file); add --online to fetch it"
            )
        ]
    return []


def register(app: typer.Typer, matrix_app: typer.Typer) -> None:
    app.command("image")(image)
