"""`rocm-vllm image`: the verified image for the node, pinned by digest on request, and its run
command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from resolver.cli._common import (
    DriverOpt,
    ExampleOpt,
    GfxOpt,
    GpusOpt,
    JsonOpt,
    NodeFileOpt,
    OsOpt,
    PythonOpt,
    RocminfoOpt,
    RocmOpt,
    completer,
    emit_json,
    handle_errors,
    resolve_node,
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
            help="Run a version check inside the image and compare with the data.",
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
            "--model", help="Model to serve (Hugging Face id or path).", rich_help_panel=RUN_PANEL
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
    json_out: JsonOpt = False,
) -> None:
    """Pick the verified vLLM image for the node and print how to run it (exit 0: found, 1: none \
or a failed check)."""
    from resolver.artifacts import images
    from resolver.artifacts.runcmd import FORMATS, render
    from resolver.data import matrix
    from resolver.util.errors import UsageError
    from resolver.util.versions import parse_spec

    if fmt not in (*FORMATS, "apptainer"):
        raise UsageError(
            f"--format {fmt!r} is not one of {', '.join(FORMATS)}, apptainer",
            hint="use --format docker, podman, compose or apptainer",
        )
    device_ids = _parse_devices(devices)
    from resolver.artifacts.runcmd import RunSpec

    # Check the run-command inputs before anything slow (registry, engine) happens.
    RunSpec(image="check", entrypoint="vllm-serve", model=model, port=port, hf_cache=hf_cache)
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
    )
    decision = images.choose_image(m, node, parse_spec(vllm) if vllm else None)
    chosen = images.chosen(decision)
    out: dict[str, Any] = _base_json(decision, m)
    if chosen is None:
        # "unknown" keeps its own exit code: the data cannot tell, which is not a no.
        _finish(out, json_out, exit_code=decision.exit_code if decision.verdict == "unknown" else 1)
        return

    from resolver.artifacts.registry import parse_registry

    reg = parse_registry(registry)
    warnings = list(decision.warnings)
    digest = digest or audit_it
    if digest:
        from resolver.artifacts.registry import DigestCache, RegistryClient

        client = RegistryClient(reg, cache=DigestCache())
        try:
            pinned = images.pin(chosen, client)
        finally:
            client.close()
        chosen = pinned.image
        warnings += pinned.warnings
        resolved = pinned.resolved
        age = resolved.age_seconds()
        out["digest_source"] = {
            "registry": resolved.registry,
            "media_type": resolved.media_type,
            "cached": resolved.from_cache,
            # Set only when the registry was unreachable and the cache answered instead.
            "cached_at": _iso(resolved.cached_at),
            "cache_age_seconds": round(age) if age is not None else None,
            "registry_unreachable": resolved.unreachable,
        }
    ref = images.image_ref(chosen, reg)
    env, env_warnings = images.serving_env(m, node, decision)
    warnings += env_warnings
    placed = images.placement(node, devices=device_ids, model=model, hf_cache=hf_cache)
    warnings += placed.warnings
    spec = images.run_spec(
        ref=ref,
        image=chosen,
        env=env,
        node=node,
        model=model,
        port=port,
        devices=device_ids,
        hf_cache=hf_cache,
        placed=placed,
    )
    out.update(_image_json(chosen, ref, reg.url))
    artifact: str
    file_text: str | None
    if fmt == "apptainer":
        from resolver.artifacts import apptainer

        run = apptainer.run_command(spec)
        # The artifact is the .def file (what `> vllm.def` should hold); the exec command goes to
        # stderr.
        file_text = apptainer.definition(spec, labels={"org.rocm-vllm.vllm": str(chosen.vllm)})
        artifact = file_text
        out.update(run.to_json())
        out["definition"] = file_text
        out["follow_up"] = apptainer.follow_up(spec, _artifact_file(output, json_out, "vllm.def"))
    else:
        compose_file = _artifact_file(output, json_out, "compose.yaml")
        rendered = render(spec, fmt, compose_file=compose_file)  # type: ignore[arg-type]
        file_text, artifact = rendered.file_text, rendered.artifact
        out.update(rendered.to_json())
    out["parallel"] = {
        "devices": list(placed.devices) if placed.devices is not None else None,
        "tensor_parallel_size": placed.tensor_parallel,
        "gpus": placed.gpus,
        "replicas": placed.replicas,
        "attention_heads": placed.heads,
        "kv_heads": placed.kv_heads,
        "attention_heads_source": placed.heads_source,
    }
    problems: list[Any] = []
    if audit_it and chosen.vendor == "amd":
        from resolver.data import overlay
        from resolver.refresh.common import now

        record, audit_problems, audited = images.audit_image(m, chosen, reg.url, node)
        problems += audit_problems
        out["audit"] = {
            "libraries": len(audited.libraries),
            "judged": len(audited.judged()),
            "arch": record["arch"] if record else [],
            "written": None,
        }
        if record is not None:
            out["audit"]["written"] = str(
                overlay.write({"images.toml": [record]}, written_at=now())
            )

    if pull or smoke:
        from resolver.artifacts.engine import DockerEngine

        engine = DockerEngine()
        try:
            problems += _engine_steps(
                engine, images, reg, chosen, ref, out, pull=pull, smoke=smoke, quiet=json_out
            )
        finally:
            engine.close()

    from resolver.explain import warning_json
    from resolver.solve.advisories import after_registry_checks

    warnings = after_registry_checks(
        warnings,
        image=f"{chosen.repo}:{chosen.tag}",
        pinned=out["digest"] is not None and "digest_source" in out,
        contents_checked=bool(out.get("smoke")) and not any(p.code for p in problems),
    )
    out["warnings"] = [warning_json(w) for w in dict.fromkeys(warnings)]
    out["problems"] = [warning_json(p) for p in problems]
    if problems:
        # The pulled image failed its checks (digest, smoke): this image does not run the plan
        # here, whatever the data said; the verdict says so, not only the exit status.
        out["verdict"] = "unsupported"
        out["verdict_before_checks"] = decision.verdict
    out["exit_code"] = 1 if problems else decision.exit_code
    out["output"] = str(output) if output is not None else None
    if output is not None:
        from resolver.util.atomic import write_output

        write_output(output, artifact)
    if json_out:
        emit_json(out)
    else:
        # stdout carries only the artifact (redirectable as is); everything else goes to stderr.
        _print_text(out, file_text, output, definition=fmt == "apptainer")
        if output is None:
            typer.echo(artifact, nl=False)
    # Same exit as `check` for the same verdict (an unofficial image is printed, but is not a yes).
    raise typer.Exit(1 if problems else decision.exit_code)


def _engine_steps(
    engine: Any,
    images: Any,
    reg: Any,
    chosen: Any,
    ref: str,
    out: dict[str, Any],
    *,
    pull: bool,
    smoke: bool,
    quiet: bool,
) -> list[Any]:
    problems: list[Any] = []
    if pull:
        from resolver.artifacts.credentials import lookup

        name, tag = reg.image_name(chosen.repo), chosen.tag
        creds = lookup(reg.host)  # the same Docker config credentials --digest used; never printed
        auth = creds.engine_auth() if creds is not None else None
        report = _pull_with_progress(
            engine, images, name, tag, chosen.digest, quiet=quiet, auth=auth
        )
        out["pull"] = report.to_json()
        problems += report.problems
    if smoke:
        smoke_report = images.smoke(engine, ref, chosen)
        out["smoke"] = smoke_report.to_json()
        problems += smoke_report.problems
    return problems


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


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


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


def _base_json(decision: Any, m: Any) -> dict[str, Any]:
    from resolver.explain import candidate_json, reason_json, warning_json

    return {
        "schema_version": 1,
        "verdict": decision.verdict,
        "exit_code": decision.exit_code,
        "node": {
            "gfx_targets": list(decision.node.gfx_targets),
            "gpus": decision.node.logical_gpu_count,
            "driver_version": decision.node.driver_version,
        },
        "request": {
            "vllm": str(decision.request.vllm) if decision.request.vllm is not None else None
        },
        "image": None,
        "digest": None,
        "run_command": None,
        "run_args": None,
        "warnings": [warning_json(w) for w in decision.warnings],
        "blockers": [reason_json(r) for r in decision.blockers],
        "missing": [
            {"kind": f.kind, "subject": f.subject, "detail": f.detail, "fetch": f.fetch}
            for f in decision.missing
        ],
        "rejected": [
            {
                "image": e.candidate.label,
                "candidate": candidate_json(e.candidate),
                "reasons": [reason_json(r) for r in e.reasons],
            }
            for e in decision.rejected
        ],
        "pull": None,
        "smoke": None,
        "problems": [],
    }


def _image_json(chosen: Any, ref: str, registry_url: str) -> dict[str, Any]:
    return {
        "image": ref,
        "digest": chosen.digest,
        "repo": chosen.repo,
        "tag": chosen.tag,
        "registry": registry_url,
        "official": chosen.official,
        "deprecated": chosen.deprecated,
        "entrypoint": chosen.entrypoint,
        "vllm": str(chosen.vllm) if chosen.vllm else None,
        "rocm": str(chosen.rocm) if chosen.rocm else None,
        "vendor": chosen.vendor,
        "cuda": str(chosen.cuda) if chosen.cuda else None,
        "torch": chosen.torch,
        "python": chosen.python,
        "arch": list(chosen.arch),
        "confidence": chosen.provenance.confidence,
        "source": chosen.provenance.source,
    }


def _pull_with_progress(
    engine: Any,
    images: Any,
    name: str,
    tag: str,
    expected: str | None,
    *,
    quiet: bool,
    auth: dict[str, str] | None = None,
) -> Any:
    """Pull with a rich progress bar per layer (on stderr, so stdout stays the answer)."""
    if quiet:
        return images.pull_verified(engine, name, tag, expected, auth=auth)
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    console = Console(stderr=True)
    tasks: dict[str, Any] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        console=console,
        transient=False,
    ) as bar:

        def on_progress(event: Any) -> None:
            if not event.layer or event.layer == tag:
                return
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

        return images.pull_verified(engine, name, tag, expected, on_progress, auth=auth)


def _finish(out: dict[str, Any], json_out: bool, *, exit_code: int) -> None:
    if json_out:
        emit_json(out)
    else:
        width = terminal_width(err=True)

        # Nothing to redirect: stdout stays empty, so `> compose.yaml` never captures prose.
        def say(text: str) -> None:
            typer.echo(wrapped(text, width=width), err=True)

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
        say("  a source build may still work: rocm-vllm check, then rocm-vllm dockerfile")
    raise typer.Exit(exit_code)


def _print_text(
    out: dict[str, Any], compose_text: str | None, output: Path | None, *, definition: bool = False
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
    if out["run_args"] and "--model" not in out["run_args"] and compose_text is None:
        echo("  no --model given: vLLM serves its default model; add --model ORG/NAME")
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


def register(app: typer.Typer, matrix_app: typer.Typer) -> None:
    app.command("image")(image)
