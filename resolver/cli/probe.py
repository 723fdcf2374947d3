"""CLI for ``rocm-vllm probe``: the node's GPUs and host facts, as a summary or JSON."""

from pathlib import Path
from typing import Annotated, Any

import typer

from resolver.cli._common import (
    DEFAULT_WIDTH,
    JsonOpt,
    emit_json,
    format_table,
    handle_errors,
    terminal_width,
    wrapped,
)

AmdSmiOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--amd-smi", help="A saved `amd-smi static` / `list` output (text or --json); repeatable."
    ),
]
RocmSmiOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--rocm-smi",
        help="A saved `rocm-smi` output: text (`--showproductname`, `-a`, concise) or `--json`; "
        "repeatable.",
    ),
]
AgentEnumeratorOpt = Annotated[
    Path | None,
    typer.Option(
        "--agent-enumerator",
        help="A saved `rocm_agent_enumerator` output (one gfx name per agent, gfx000 = CPU).",
    ),
]
SysfsOpt = Annotated[
    Path | None,
    typer.Option(
        "--sysfs",
        help="Read ROOT/sys/class/kfd/..., ROOT/sys/class/drm/... and ROOT/sys/module/amdgpu/... "
        "as if ROOT were /; ROOT may also be a copy of /sys itself.",
    ),
]
NvidiaSmiOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--nvidia-smi",
        help="A saved `nvidia-smi -q -x`, `nvidia-smi --query-gpu=... --format=csv` or plain "
        "`nvidia-smi` output (`check` plans vLLM's CUDA builds for NVIDIA GPUs); repeatable.",
    ),
]
RocminfoFileOpt = Annotated[
    Path | None, typer.Option("--rocminfo", help="A saved `rocminfo` output.")
]


def register(app: typer.Typer, matrix_app: typer.Typer) -> None:
    @app.command("probe")
    @handle_errors
    def probe(
        rocminfo: RocminfoFileOpt = None,
        amd_smi: AmdSmiOpt = None,
        rocm_smi: RocmSmiOpt = None,
        sysfs: SysfsOpt = None,
        agent_enumerator: AgentEnumeratorOpt = None,
        nvidia_smi: NvidiaSmiOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        """The node's GPUs (gfx, product, CUs, VRAM, partition), counts and host problems.

        Without options this probes this machine; with saved outputs it reads those instead.
        """
        from resolver import probe as probe_mod
        from resolver.data import matrix

        if any(v for v in (rocminfo, amd_smi, rocm_smi, sysfs, agent_enumerator, nvidia_smi)):
            node = probe_mod.probe_files(
                rocminfo=rocminfo,
                amd_smi=amd_smi,
                rocm_smi=rocm_smi,
                sysfs=sysfs,
                agent_enumerator=agent_enumerator,
                nvidia_smi=nvidia_smi,
                matrix=matrix.load(),
            )
        else:
            node = probe_mod.probe_live(matrix=matrix.load())
        if json_out:
            # schema_version first, as in every other --json document (docs/probe.schema.json)
            data = {"schema_version": 1, **node.to_json()}
            data["confidence"] = probe_mod.confidence(node)
            from resolver import __version__

            data["tool"] = {"name": "rocm-vllm", "version": __version__}
            if node.origin == "probe":  # a saved output's host is not this machine
                import socket

                data["hostname"] = socket.gethostname().split(".")[0]
            emit_json(data)
        else:
            typer.echo(render(node, width=terminal_width()))


def _gib(value: int | None) -> str:
    return f"{value / 1024**3:.1f} GiB" if value else "-"


def render(node: Any, width: int = DEFAULT_WIDTH) -> str:
    """A short readable summary: GPU table, counts, host line, problems with their hints, filled
    to ``width`` (the table narrows its widest columns; prose wraps)."""
    lines: list[str] = []
    laid_out: range = range(0)
    if node.gpus:
        rows: list[tuple[str, ...]] = [("#", "gfx", "product", "CUs", "VRAM", "partition", "note")]
        for i, gpu in enumerate(node.gpus):
            part = gpu.partition
            partition = (
                "/".join(p for p in ((part.compute, part.memory) if part else ()) if p) or "-"
            )
            notes = []
            if gpu.integrated:
                notes.append("integrated, not counted")
            elif gpu.apu:
                notes.append("APU")
            if gpu.runtime_gfx:
                notes.append(f"runtime sees {gpu.runtime_gfx}")
            rows.append(
                (
                    str(i),
                    gpu.gfx,
                    gpu.product or gpu.marketing_name or "-",
                    str(gpu.compute_units) if gpu.compute_units is not None else "-",
                    _gib(gpu.vram_bytes),
                    partition,
                    ", ".join(notes),
                )
            )
        rows = _shorten(rows)
        table = format_table(rows[0], rows[1:], width=width, rule=False).splitlines()
        laid_out = range(len(lines), len(lines) + len(table))  # already fitted: not re-wrapped
        lines += table
        lines.append("")
        lines.append(
            f"gfx targets: {', '.join(node.gfx_targets) or '-'}   "
            f"GPUs: {node.logical_gpu_count} logical, {node.physical_gpu_count} physical"
        )
    elif node.logical_gpu_count and not node.nvidia_gpus:
        lines.append(
            f"{node.logical_gpu_count} GPU(s) listed, but no source names their gfx target."
        )
    else:
        lines.append("No AMD GPU found.")
    others = (node.host or {}).get("other_devices") or []
    nv = [d for d in others if d.get("vendor") == "nvidia"]
    rest = [d for d in others if d.get("vendor") != "nvidia"]
    if nv:
        lines.append(
            "NVIDIA GPUs (`rocm-vllm check` plans vLLM's CUDA images for them): "
            + ", ".join(_other(d) for d in nv)
        )
    if rest:
        lines.append(
            "Also found (not resolved by this tool): " + ", ".join(_other(d) for d in rest)
        )
    nvidia = (node.host or {}).get("nvidia")
    if isinstance(nvidia, dict) and (nvidia.get("driver") or nvidia.get("cuda")):
        said = ", ".join(str(x) for x in nvidia.get("sources") or [])
        driver, cuda = nvidia.get("driver") or "?", nvidia.get("cuda") or "?"
        lines.append(
            f"NVIDIA driver {driver}, supports CUDA {cuda}" + (f" (from {said})" if said else "")
        )
    unidentified = (node.host or {}).get("unidentified_gpus") or []
    for device in unidentified:
        lines.append(
            f"  GPU without a known target: PCI id {device.get('pci_device_id') or '?'}, "
            f"VRAM {_gib(device.get('vram_bytes'))}"
            + (f", {device['marketing_name']}" if device.get("marketing_name") else "")
        )
    facts = [
        ("driver", _release(node) or _module(node.host or {})),
        ("ROCm", node.rocm_version),
        ("override", node.hsa_override_gfx_version),
        ("OS", node.os),
        ("kernel", node.kernel),
        ("glibc", node.glibc),
    ]
    shown = [f"{k} {v}" for k, v in facts if v]
    if shown:
        lines.append("   ".join(shown))
    read_from = _sources((node.host or {}).get("gpu_sources") or [])
    if read_from:
        lines.append(f"read from: {read_from}")
    if node.problems:
        lines.append("")
        lines.append("Problems:")
        for problem in node.problems:
            lines.append(f"  - [{problem.code}] {problem.message}")
            lines.append(f"    fix: {problem.hint}")
    return "\n".join(
        line if i in laid_out else wrapped(line, width=width) for i, line in enumerate(lines)
    )


_VENDORS = {"nvidia": "NVIDIA", "hygon": "Hygon", "intel": "Intel", "amd": "AMD"}


def _other(device: dict[str, Any]) -> str:
    vendor = str(device.get("vendor") or "?")
    parts = [_VENDORS.get(vendor, vendor), str(device.get("kind") or "GPU")]
    parts += [str(v) for v in (device.get("name"), device.get("gfx"), device.get("pci_bdf")) if v]
    if device.get("compute_capability"):
        parts.append(
            f"(compute capability {device['compute_capability']}, {_gib(device.get('vram_bytes'))})"
        )
    return " ".join(parts)


def _shorten(rows: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """63 CPX partitions of 8 GPUs are not worth 63 lines: collapse runs of identical rows."""
    out: list[tuple[str, ...]] = []
    run: list[tuple[str, ...]] = []
    for row in rows:
        if run and row[1:] == run[-1][1:]:
            run.append(row)
            continue
        out.extend(_flush(run))
        run = [row]
    out.extend(_flush(run))
    return out


def _flush(run: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    if len(run) <= 2:
        return run
    first, last = run[0], run[-1]
    return [(f"{first[0]}-{last[0]}", *first[1:])]


# How the sources' field names read in text, in the order a reader wants them.
_FIELDS = {
    "gfx": "gfx",
    "marketing_name": "name",
    "pci_device_id": "PCI id",
    "compute_units": "CUs",
    "vram_bytes": "VRAM",
    "compute_partition": "partition",
    "memory_partition": "partition",
    "unique_id": "unique id",
}


def _sources(per_gpu: list[dict[str, str]]) -> str:
    """``host.gpu_sources`` as one line: each source with the fields it gave for any GPU."""
    given: dict[str, list[str]] = {}
    for said in per_gpu:
        for field_name, label in _FIELDS.items():
            source = said.get(field_name)
            if source and label not in given.setdefault(source, []):
                given[source].append(label)
    return "; ".join(f"{src} ({', '.join(labels)})" for src, labels in given.items() if labels)


def _release(node: Any) -> str | None:
    """The AMD GPU Driver release, the source that named it, and how sure that is."""
    from resolver.probe import MODULE_PAIRED

    if not node.driver_version:
        return None
    host = node.host or {}
    source = host.get("driver_release_source")
    module = host.get("amdgpu_module_version") or (host.get("driver") or {}).get("module_version")
    if source == MODULE_PAIRED and module:
        source = f"amdgpu module {module}, which the data pairs with this series"
    sure = host.get("driver_release_confidence")
    said = f"{source}, {sure}" if source and sure and sure != "exact" else source
    return f"{node.driver_version} (from {said})" if said else str(node.driver_version)


def _module(host: dict[str, object]) -> str | None:
    """What the probe can say about the driver: the kernel module's version, or that it is inbox."""
    module = host.get("amdgpu_module_version")
    if module:
        return f"amdgpu module {module} ({host.get('driver_kind') or 'dkms'}; release unknown)"
    kind = host.get("driver_kind")
    return str(kind) if kind else None
