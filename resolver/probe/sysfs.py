"""KFD sysfs topology -> the kernel's view of the GPUs (works without any ROCm user space).

Reads ``ROOT/sys/class/kfd/kfd/topology/nodes/*/{properties,gpu_id,mem_banks/*/properties}``,
``ROOT/sys/module/amdgpu/{version,initstate}`` and the PCI partition files
(``ROOT/sys/bus/pci/devices/<BDF>/current_{compute,memory}_partition``). Facts and their sources
are in shared/reference/probe.md §1, §2, §6, §7.
"""

from __future__ import annotations

import re
from pathlib import Path

from resolver.probe import gfx as gfxmod
from resolver.probe.facts import GpuFact, SourceView

KFD_NODES = "sys/class/kfd/kfd/topology/nodes"
_SRAM_EDC_BIT = 1 << 26  # HSA_CAPABILITY.SRAM_EDCSupport: the runtime's sramecc default
_VRAM_HEAPS = {1, 2}  # HSA_HEAPTYPE frame buffer public / private
_SRAMECC_TARGETS = frozenset({"gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"})
# Each MI300-series XCD has at most 40 active CUs (38 on MI300X, 20 on MI308X, 32 on MI355X):
# a partition with no more CUs than that holds one XCD, which is CPX.
_MAX_CU_PER_XCD = 40


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return None


def properties(text: str | None) -> dict[str, int]:
    """``key value`` lines, all values decimal; lines that are not that are skipped."""
    props: dict[str, int] = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and re.fullmatch(r"-?\d+", parts[1]):
            props[parts[0]] = int(parts[1])
    return props


def _node_number(path: Path) -> int:
    try:
        return int(path.name)
    except ValueError:
        return 1 << 30


def parse(root: Path) -> SourceView:
    view = SourceView(source="sysfs")
    _driver(root, view)
    nodes_dir = root / KFD_NODES
    try:
        nodes = sorted(
            (p for p in nodes_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=_node_number
        )
    except OSError:
        nodes = []
    view.facts["kfd_present"] = bool(nodes)
    for node in nodes:
        gpu = _gpu(root, node, view)
        if gpu is not None:
            view.gpus.append(gpu)
    _infer_partitions(view)
    return view


def _driver(root: Path, view: SourceView) -> None:
    module = root / "sys/module/amdgpu"
    view.amdgpu_loaded = module.is_dir()
    version = read_text(module / "version")
    if version and version.strip():
        view.driver_version = version.strip()
        view.facts["driver_kind"] = "dkms"
    elif view.amdgpu_loaded:
        # The in-tree (distro kernel) amdgpu has no version file.
        view.facts["driver_kind"] = "in-tree"
    initstate = read_text(module / "initstate")
    if initstate is not None:
        view.facts["amdgpu_initstate"] = initstate.strip()


def _gpu(root: Path, node: Path, view: SourceView) -> GpuFact | None:
    props = properties(read_text(node / "properties"))
    gpu_id = read_text(node / "gpu_id")
    # CPU nodes: no SIMDs, gpu_id 0, gfx_target_version 0 (the thunk's and ollama's tests).
    if props.get("simd_count", 0) == 0 or (gpu_id is not None and gpu_id.strip() == "0"):
        return None
    if props.get("vendor_id", 4098) != 4098:  # 0x1002; another vendor's KFD-like node
        return None
    gpu = GpuFact(kfd_node=_node_number(node))
    gpu.pci_device_id = gfxmod.pci_id(props.get("device_id"))
    target = gfxmod.from_target_version(props.get("gfx_target_version", 0))
    if target is None:
        # Old kernels have no gfx_target_version: fall back to the PCI id table.
        target = gfxmod.gfx_for_pci(gpu.pci_device_id)
        if target is None:
            view.problem(
                "gpu-target-unknown",
                f"sysfs: KFD node {node.name} (PCI id {gpu.pci_device_id or '?'}) has no gfx_target_version "
                "and the PCI id is not in the data",
                "give --rocminfo FILE as well, or pass --gfx",
            )
    gpu.gfx = gpu.runtime_gfx = target
    simd, per_cu = props.get("simd_count", 0), props.get("simd_per_cu", 0)
    if per_cu:
        gpu.compute_units = simd // per_cu
    gpu.vram_bytes = _vram(node) or (props.get("local_mem_size") or None)
    unique = props.get("unique_id", 0)
    gpu.unique_id = f"{unique:016x}" if unique else None
    loc, domain = props.get("location_id"), props.get("domain", 0)
    if loc:
        gpu.bdf = f"{domain:04x}:{(loc >> 8) & 0xFF:02x}:{(loc >> 3) & 0x1F:02x}.{loc & 0x7}"
    gpu.num_xcc = props.get("num_xcc")
    gpu.render_minor = props.get("drm_render_minor") or None
    if "capability" in props and target in _SRAMECC_TARGETS:
        gpu.sramecc = bool(props["capability"] & _SRAM_EDC_BIT)
    if gfxmod.is_apu_target(target) or props.get("cpu_cores_count", 0) > 0:
        gpu.apu = True
    if gpu.bdf:
        gpu.compute_partition, gpu.memory_partition = _pci_partition(root, gpu.bdf)
    return gpu


def _vram(node: Path) -> int | None:
    total = 0
    try:
        banks = sorted((node / "mem_banks").iterdir())
    except OSError:
        return None
    for bank in banks:
        props = properties(read_text(bank / "properties"))
        if props.get("heap_type") in _VRAM_HEAPS:
            total += props.get("size_in_bytes", 0)
    return total or None


def _pci_partition(root: Path, bdf: str) -> tuple[str | None, str | None]:
    """Partition modes live on the PCI function of the physical GPU (function 0)."""
    base = bdf.rsplit(".", 1)[0] + ".0"
    for directory in (
        root / "sys/bus/pci/devices" / base,
        root / "sys/module/amdgpu/drivers/pci:amdgpu" / base,
    ):
        compute = read_text(directory / "current_compute_partition")
        memory = read_text(directory / "current_memory_partition")
        if compute is not None or memory is not None:
            return (compute.strip().upper() or None) if compute else None, (
                memory.strip().upper() or None
            ) if memory else None
    return None, None


def _infer_partitions(view: SourceView) -> None:
    """Without the PCI files: MI300-class GPUs whose unique_id/PCI slot appears on several KFD
    nodes are partitioned. One XCD per node (num_xcc 1, or few CUs) is CPX; else 2/3/4 nodes per GPU
    are DPX/TPX/QPX. A lone node of such a GPU is SPX."""
    groups: dict[str, list[GpuFact]] = {}
    for i, gpu in enumerate(view.gpus):
        groups.setdefault(gpu.physical_key(i), []).append(gpu)
    inferred = False
    for members in groups.values():
        for gpu in members:
            if gpu.compute_partition or gpu.gfx not in gfxmod.PARTITIONABLE:
                continue
            gpu.compute_partition = infer_compute_partition(
                len(members), gpu.num_xcc, gpu.compute_units
            )
            inferred = inferred or gpu.compute_partition is not None
    if inferred:
        view.facts["partition_inferred"] = True


def infer_compute_partition(agents: int, num_xcc: int | None, cus: int | None) -> str | None:
    if agents <= 1:
        return "SPX"
    if num_xcc == 1 or (num_xcc is None and cus is not None and cus <= _MAX_CU_PER_XCD):
        return "CPX"
    return {2: "DPX", 3: "TPX", 4: "QPX"}.get(agents)
