"""`rocm-vllm audit ARTIFACT`: which GPUs the code inside a wheel, library, directory or image
archive was built for, read from the code itself."""

from pathlib import Path
from typing import Annotated, Any

import typer

from resolver.cli._common import JsonOpt, emit_json, handle_errors, terminal_width, wrapped

SCHEMA_VERSION = 1
CUDA_ERROR = "no kernel image is available for execution on the device"


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
    cc: Annotated[
        str | None,
        typer.Option(
            "--cc",
            help="Comma-separated CUDA compute capabilities (9.0): exit 0 when the libraries "
            "that decide 'no kernel image is available' carry a cubin or PTX for each (PTX only: "
            "a warning), 1 when not.",
        ),
    ] = None,
    node_file: Annotated[
        Path | None,
        typer.Option(
            "--node",
            help="Probe JSON written by `rocm-vllm probe --json`: its gfx targets (AMD) or "
            "compute capabilities (NVIDIA) are judged, as --gfx and --cc are.",
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
    """List the GPU targets of every library inside ARTIFACT (AMD offload bundles and code
    objects, CUDA fat binaries, compressed or not); with --gfx, --cc or --node, whether they
    cover the node (exit 0 covered, 1 not, 2 bad input)."""
    from resolver.artifacts.audit import audit as run_audit
    from resolver.data import matrix
    from resolver.util.versions import check_gfx_name

    m = matrix.load()
    wanted = [check_gfx_name(g.strip()) for g in gfx.split(",") if g.strip()] if gfx else []
    caps = [_capability(c, "--cc") for c in cc.split(",") if c.strip()] if cc else []
    if cc is not None and not caps:
        _capability(cc, "--cc")  # "--cc ''" or "--cc ,": refused like any other bad value
    if node_file is not None:
        node_gfx, node_caps = _node_targets(m, node_file)
        wanted += [g for g in node_gfx if g not in wanted]
        caps += [c for c in node_caps if c not in caps]
    result = run_audit(m, artifact, registry=registry)
    data = audit_json(result, m, wanted, caps)
    if json_out:
        emit_json(data)
    else:
        typer.echo(render(data, width=terminal_width()), nl=False)
    raise typer.Exit(data["exit_code"])


def _capability(text: str, where: str) -> str:
    """A compute capability as given (``9.0``), checked; anything else is bad input."""
    from resolver.artifacts.audit.fatbin import capability
    from resolver.util.errors import InputError

    parsed = capability(text)
    if parsed is None:
        shown = text.strip()[:40].encode("ascii", "backslashreplace").decode()
        raise InputError(
            f"{where} {shown!r}: not a CUDA compute capability",
            hint="write it as MAJOR.MINOR, e.g. --cc 9.0 (an H100/H200) or --cc 8.0,10.0",
        )
    return f"{parsed[0]}.{parsed[1]}"


def _node_targets(m: Any, path: Path) -> tuple[list[str], list[str]]:
    """What a node file's GPUs need code for: its gfx targets (AMD) and its NVIDIA GPUs'
    compute capabilities (nvidia-smi's, else the data's by PCI device id)."""
    from resolver.data import node as node_mod
    from resolver.util.errors import InputError

    node = node_mod.read_node_file(path)
    gfx = list(dict.fromkeys([*node.gfx_targets, *(g.gfx for g in node.gpus)]))
    caps: list[str] = []
    unplaced: list[str] = []
    for gpu in node.nvidia_gpus:
        known = m.nvidia_gpu(gpu.get("pci_device_id"))
        said = gpu.get("compute_capability") or (known.compute_capability if known else None)
        if said is None:
            unplaced.append(str(gpu.get("name") or gpu.get("pci_device_id") or "an NVIDIA GPU"))
            continue
        cap = _capability(str(said), f"--node {path}: compute capability")
        if cap not in caps:
            caps.append(cap)
    if unplaced:
        raise InputError(
            f"--node {path}: no compute capability for {', '.join(unplaced[:3])}",
            hint="probe with nvidia-smi on the PATH, or give it: --cc MAJOR.MINOR",
        )
    if not gfx and not caps:
        raise InputError(
            f"--node {path}: the node has no GPU whose code could be judged",
            hint="probe a node with GPUs, or give --gfx or --cc",
        )
    return gfx, caps


def audit_json(
    result: Any, m: Any, wanted: list[str], caps: list[str] | None = None
) -> dict[str, Any]:
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
    cuda = {c: cuda_judgement(result, c) for c in caps or []}
    missing = any(not c["covered"] for c in covers.values()) or any(
        not c["covered"] for c in cuda.values()
    )
    return {
        "schema_version": SCHEMA_VERSION,
        "artifact": result.artifact,
        "exit_code": 1 if missing else 0,
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
        "cuda_judged": ("decisive" if any(lib.decisive for lib in result.judged_cuda()) else "all"),
        "cuda_covers": cuda,
    }


def cuda_judgement(result: Any, cap: str) -> dict[str, Any]:
    """How the judged CUDA libraries run on compute capability ``cap`` (docs/audit.schema.json):
    a cubin in each (covered), PTX only in some (covered through a JIT compile, a warning), or
    nothing in some (not covered: those decide CUDA's "no kernel image is available")."""
    from resolver.artifacts.audit.fatbin import capability, parse_target, runs

    cc = capability(cap)
    assert cc is not None  # checked where it entered
    ways = result.cuda_coverage(cc)
    lacking = sorted(p for p, w in ways.items() if w is None)
    ptx_only = sorted(p for p, w in ways.items() if w == "ptx")
    # What a JIT compile cannot give: the a/f targets the PTX-only libraries carry that do not
    # run here (a Hopper-only sm_90a kernel is not there on 10.0 however the PTX compiles).
    specific = sorted(
        {
            t
            for lib in result.judged_cuda()
            if lib.path in ptx_only
            for t in lib.targets
            if (parsed := parse_target(t)) is not None and parsed[2] and runs(t, cc) is None
        }
    )
    if not ways:
        reason = "no-cuda-code-unread-archives" if result.unread else "no-cuda-code"
    else:
        reason = "lacking" if lacking else "ptx-jit" if ptx_only else "cubin"
    return {
        "covered": bool(ways) and not lacking,
        "reason": reason,
        "how": None if reason not in ("cubin", "ptx-jit") else "ptx" if ptx_only else "cubin",
        "lacking": lacking,
        "ptx_only": ptx_only,
        "specific_not_jit": specific,
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
    lines += _render_cuda(data)
    return "\n".join(wrapped(line, width=width) for line in lines) + "\n"


def _render_cuda(data: dict[str, Any]) -> list[str]:
    which = (
        "vLLM's, torch's and FlashAttention's CUDA libraries"
        if data["cuda_judged"] == "decisive"
        else "every CUDA library"
    )
    lines = []
    for cap, c in data["cuda_covers"].items():
        name = f"compute capability {cap}"
        if c["reason"] == "cubin":
            lines.append(f"{name}: covered by a cubin ({which})")
        elif c["reason"] == "ptx-jit":
            only = ", ".join(c["ptx_only"][:5]) + (" ..." if len(c["ptx_only"]) > 5 else "")
            lines.append(f"{name}: covered only through a PTX JIT compile in {only}")
            specific = c["specific_not_jit"]
            lost = f" (here: {' '.join(specific)})" if specific else ""
            lines.append(
                "warning: the driver compiles that PTX at the first start (a slower first "
                "start, minutes for a large library, cached afterwards), and a JIT compile never "
                f"gives code for arch-specific (a) or family (f) targets{lost}: their kernels "
                "are not there"
            )
        elif c["reason"].startswith("no-cuda-code"):
            deeper = (
                " (some archives are nested too deep to read)" if data["unread_archives"] else ""
            )
            lines.append(f"{name}: NOT covered: the artifact carries no CUDA code{deeper}")
        else:
            lines.append(
                f"{name}: NOT covered: no cubin or PTX for it in "
                f"{', '.join(c['lacking'][:5])}: CUDA says '{CUDA_ERROR}'"
            )
            if len(c["lacking"]) > 5:
                lines.append(f"  and {len(c['lacking']) - 5} more")
    return lines


def register(app: typer.Typer, matrix_app: typer.Typer) -> None:
    app.command("audit")(audit)
