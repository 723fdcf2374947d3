"""`rocm-vllm audit ARTIFACT`: which GPUs the code inside a wheel, library, directory or image
archive was built for, read from the code itself."""

from typing import Annotated, Any

import typer

from resolver.cli._common import JsonOpt, emit_json, handle_errors, terminal_width, wrapped

SCHEMA_VERSION = 1


@handle_errors
def audit(
    artifact: Annotated[
        str,
        typer.Argument(
            help="A wheel, a library (.so, .hsaco), a directory, a `docker save` archive, an "
            "image layer, an OCI image layout directory, docker-daemon:IMAGE (the local engine) "
            "or docker://REPO:TAG (a registry, layers streamed)."
        ),
    ],
    gfx: Annotated[
        str | None,
        typer.Option(
            "--gfx",
            help="Comma-separated gfx targets: exit 0 when the libraries that decide 'invalid "
            "device function' carry code for each, 1 when not.",
        ),
    ] = None,
    registry: Annotated[
        str | None,
        typer.Option(
            "--registry",
            help="The registry a docker:// reference is read from (default: $ROCM_VLLM_REGISTRY, "
            "else Docker Hub).",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the GPU targets of every library inside ARTIFACT (offload bundles, compressed or
    not, and bare code objects); with --gfx, whether they cover the node (exit 0 covered, 1 not,
    2 bad input)."""
    from resolver.artifacts.audit import audit as run_audit
    from resolver.data import matrix
    from resolver.util.versions import check_gfx_name

    m = matrix.load()
    wanted = [check_gfx_name(g.strip()) for g in gfx.split(",") if g.strip()] if gfx else []
    result = run_audit(m, artifact, registry=registry)
    data = audit_json(result, m, wanted)
    if json_out:
        emit_json(data)
    else:
        typer.echo(render(data, width=terminal_width()), nl=False)
    raise typer.Exit(data["exit_code"])


def audit_json(result: Any, m: Any, wanted: list[str]) -> dict[str, Any]:
    said = result.labelled_gfx  # the image's rocm-vllm.gfx label, where it has one
    # No GPU code is not coverage: an artifact with only CPU code (or whose code lies in
    # archives nested deeper than read) covers no gfx.
    has_code = bool(result.libraries)
    covers = {
        g: {
            "covered": has_code and not result.lacking(m, g) and (said is None or g in said),
            "reason": _reason(result, m, g, said),
            "lacking": [lib.path for lib in result.lacking(m, g)],
            # None: the image states no targets; False: its label leaves this gfx out.
            "labelled": None if said is None else g in said,
        }
        for g in wanted
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "artifact": result.artifact,
        "exit_code": 1 if any(not c["covered"] for c in covers.values()) else 0,
        "labels": {k: v for k, v in sorted(result.labels.items()) if k.startswith("rocm-vllm.")},
        "files": result.files,
        "elf_files": result.elf,
        "unread_archives": result.unread,
        "libraries": [
            {
                "path": lib.path,
                "targets": list(lib.targets),
                "compressed": lib.compressed,
                "kind": lib.kind,
                "decisive": lib.decisive,
            }
            for lib in sorted(result.libraries, key=lambda lib: lib.path)
        ],
        "targets": list(result.targets),
        "judged": "decisive" if any(lib.decisive for lib in result.libraries) else "all",
        "covers": covers,
    }


def _reason(result: Any, m: Any, gfx: str, said: tuple[str, ...] | None) -> str:
    """Why ``gfx`` is covered or not, as a code (docs/audit.schema.json)."""
    if not result.libraries:
        return "no-gpu-code-unread-archives" if result.unread else "no-gpu-code"
    if result.lacking(m, gfx):
        return "lacking"
    if said is not None and gfx not in said:
        return "label"
    return "covered"


def render(data: dict[str, Any], *, width: int = 100) -> str:
    n = len(data["libraries"])
    read = f"{data['elf_files']} ELF files of {data['files']} read"
    lines = [f"{data['artifact']}: {n} librar{'y' if n == 1 else 'ies'} with GPU code ({read})"]
    for lib in data["libraries"]:
        how = ", compressed" if lib["compressed"] else ""
        lines.append(f"  {lib['path']}  ({lib['kind']}{how})")
        lines.append(f"    {' '.join(lib['targets'])}")
    if data["targets"]:
        lines.append(f"targets (all libraries): {' '.join(data['targets'])}")
    else:
        lines.append("no GPU code found")
    if data["unread_archives"]:
        lines.append(
            f"{data['unread_archives']} archive(s) nested deeper than read: their code is unknown"
        )
    which = (
        "vLLM's, torch's, AITER's and FlashAttention's libraries"
        if data["judged"] == "decisive"
        else "every library with GPU code"
    )
    said = data["labels"].get("rocm-vllm.gfx")
    if said is not None:
        lines.append(f"label rocm-vllm.gfx: {said}")
    for gfx, c in data["covers"].items():
        if c["covered"]:
            lines.append(f"{gfx}: covered ({which}{', and the label says so' if said else ''})")
        elif c["reason"].startswith("no-gpu-code"):
            deeper = (
                " (some archives are nested too deep to read)" if data["unread_archives"] else ""
            )
            lines.append(f"{gfx}: NOT covered: the artifact carries no GPU code{deeper}")
        elif c["lacking"]:
            lines.append(f"{gfx}: NOT covered: no {gfx} code in {', '.join(c['lacking'][:5])}")
            if len(c["lacking"]) > 5:
                lines.append(f"  and {len(c['lacking']) - 5} more")
        else:
            lines.append(
                f"{gfx}: NOT covered: the image's rocm-vllm.gfx label says it was built for "
                f"{said} only"
            )
    return "\n".join(wrapped(line, width=width) for line in lines) + "\n"


def register(app: typer.Typer, matrix_app: typer.Typer) -> None:
    app.command("audit")(audit)
