"""KFD sysfs topology -> the kernel's view of the GPUs (works without any ROCm user space).

Reads ``ROOT/sys/class/kfd/kfd/topology/nodes/*/{properties,gpu_id,mem_banks/*/properties}``,
``ROOT/sys/module/amdgpu/{version,initstate}``, the PCI partition files
(``ROOT/sys/bus/pci/devices/<BDF>/current_{compute,memory}_partition``) and the DRM device
attributes under ``ROOT/sys/class/drm/{card*,renderD*}/device`` (``vendor``, ``device``,
``revision``, ``unique_id``, ``mem_info_vram_total``, ``mem_info_vram_vendor``,
``mem_info_gtt_total``, ``board_info``, ``current_compute_partition``), which fill in what the KFD
topology leaves out (VRAM on kernels whose KFD reports 0, partitions) and stand in for it when
there is no KFD at all. Facts and their sources are in shared/reference/probe.md §1, §2, §6, §7.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resolver.probe import gfx as gfxmod
from resolver.probe.facts import GpuFact, SourceView
from resolver.probe.gfx import GfxTable
from resolver.util import bounded
from resolver.util.safety import is_safe, shown

KFD_NODES = "sys/class/kfd/kfd/topology/nodes"
_SRAM_EDC_BIT = 1 << 26  # HSA_CAPABILITY.SRAM_EDCSupport: the runtime's sramecc default
_VRAM_HEAPS = {1, 2}  # HSA_HEAPTYPE frame buffer public / private
_SRAMECC_TARGETS = frozenset({"gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"})
# Each MI300-series XCD has at most 40 active CUs (38 on MI300X, 20 on MI308X, 32 on MI355X):
# a partition with no more CUs than that holds one XCD, which is CPX.
_MAX_CU_PER_XCD = 40


_MAX_ATTR = 1024 * 1024  # a sysfs attribute is at most a page; a copy's file is refused past this


def read_text(path: Path) -> str | None:
    """A sysfs (or /proc, /etc) file's text, or None when it is missing, unreadable, not a
    regular file (a FIFO or a link to /dev/zero in a copied tree) or larger than 1 MiB."""
    try:
        return bounded.read_text(path, _MAX_ATTR, errors="replace")
    except (OSError, ValueError):
        return None


def properties(text: str | None) -> dict[str, int]:
    """``key value`` lines, all values decimal; lines that are not that are skipped."""
    props: dict[str, int] = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and re.fullmatch(r"-?[0-9]{1,20}", parts[1]):
            props[parts[0]] = int(parts[1])
    return props


def _node_number(path: Path) -> int:
    try:
        return int(path.name)
    except ValueError:
        return 1 << 30


def parse(root: Path, *, gfx_table: GfxTable) -> SourceView:
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
        gpu = _gpu(root, node, view, gfx_table)
        if gpu is not None:
            view.gpus.append(gpu)
    drm = drm_devices(root)
    view.facts["drm_present"] = bool(drm)
    _apply_drm(drm, view, gfx_table)
    _infer_partitions(view)
    return view


DRM_CLASS = "sys/class/drm"
_DRM_NAME_RE = re.compile(r"^(?:card|renderD)([0-9]+)\Z")
_BDF_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\Z")
_VENDORS = {0x1002: "amd", 0x10DE: "nvidia", 0x8086: "intel", 0x1D94: "hygon"}


@dataclass(slots=True)
class DrmDevice:
    """What ``/sys/class/drm/<card|renderD>/device`` says of one PCI GPU function."""

    name: str  # card0 / renderD128
    bdf: str | None
    vendor_id: int | None
    device_id: str | None
    revision: str | None
    driver: str | None
    unique_id: str | None
    vram_total: int | None
    vram_vendor: str | None
    gtt_total: int | None
    board_info: bool
    compute_partition: str | None
    memory_partition: str | None
    product_name: str | None

    @property
    def vendor(self) -> str | None:
        return _VENDORS.get(self.vendor_id or 0)


def _attr(directory: Path, name: str) -> str | None:
    """An attribute's text, escaped (``shown``): a copied tree's value is never printed raw."""
    text = read_text(directory / name)
    if text is None:
        return None
    value = text.strip()
    return shown(value) if value else None


def _int_attr(directory: Path, name: str) -> int | None:
    value = _attr(directory, name)
    if value is None:
        return None
    if value.lower().startswith("0x"):
        return bounded.ascii_hex_int(value)
    return bounded.ascii_int(value)


def drm_devices(root: Path) -> list[DrmDevice]:
    """Every GPU function under ``ROOT/sys/class/drm`` (cards and render nodes of one function
    are one device), in card order."""
    base = root / DRM_CLASS
    try:
        entries = sorted((p for p in base.iterdir() if _DRM_NAME_RE.match(p.name)), key=_drm_order)
    except OSError:
        return []
    seen: set[str] = set()
    devices = []
    for entry in entries:
        directory = entry / "device"
        if not directory.is_dir():
            continue
        uevent = _uevent(read_text(directory / "uevent"))
        bdf = (uevent.get("PCI_SLOT_NAME") or "").lower() or None
        target = _resolved(directory)
        if bdf is None:
            bdf = target.name.lower() if _BDF_RE.match(target.name.lower()) else None
        key = bdf or str(target)
        if key in seen:
            continue
        seen.add(key)
        driver = uevent.get("DRIVER") or _link_name(directory / "driver")
        unique = _attr(directory, "unique_id")
        pci = re.fullmatch(r"([0-9A-Fa-f]{4}):([0-9A-Fa-f]{4})", uevent.get("PCI_ID", ""))
        vendor_id = _int_attr(directory, "vendor") or (int(pci.group(1), 16) if pci else None)
        device_attr = _attr(directory, "device") or (f"0x{pci.group(2)}" if pci else None)
        devices.append(
            DrmDevice(
                name=entry.name,
                bdf=bdf if bdf and _BDF_RE.match(bdf) else None,
                vendor_id=vendor_id,
                device_id=gfxmod.pci_id(device_attr),
                revision=_revision(_attr(directory, "revision")),
                driver=driver,
                unique_id=unique.lower().zfill(16)
                if unique and re.fullmatch(r"[0-9a-fA-F]{1,16}", unique) and unique.strip("0")
                else None,
                vram_total=_int_attr(directory, "mem_info_vram_total") or None,
                vram_vendor=_attr(directory, "mem_info_vram_vendor"),
                gtt_total=_int_attr(directory, "mem_info_gtt_total"),
                board_info=(directory / "board_info").exists(),
                compute_partition=(_attr(directory, "current_compute_partition") or "").upper()
                or None,
                memory_partition=(_attr(directory, "current_memory_partition") or "").upper()
                or None,
                product_name=_attr(directory, "product_name"),
            )
        )
    return devices


def _revision(text: str | None) -> str | None:
    """A PCI revision ("0xc1" -> "c1"); None when the file holds anything else."""
    value = (text or "").lower().removeprefix("0x")
    return value.zfill(2) if re.fullmatch(r"[0-9a-f]{1,2}", value) else None


def _drm_order(path: Path) -> tuple[bool, int]:
    """card0, card1, ... before renderD128, ...: a render node of a card already seen adds
    nothing."""
    match = _DRM_NAME_RE.match(path.name)
    return (not path.name.startswith("card"), int(match.group(1)) if match else 0)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop in a copied tree
        return path


def _link_name(path: Path) -> str | None:
    try:
        return path.readlink().name if path.is_symlink() else None
    except OSError:
        return None


def _uevent(text: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = shown(value.strip())
    return out


def integrated_by_memory(device: DrmDevice) -> bool | None:
    """ollama's rule without libdrm (ollama discover/amd.go readROCmDRMDevice): a device with
    ``mem_info_vram_vendor`` or ``board_info`` is discrete; one with at most 4 GiB of VRAM carve-out
    and at least 8 GiB (and 4x the VRAM) of GTT is integrated; else unknown."""
    if device.vram_vendor or device.board_info:
        return False
    vram, gtt = device.vram_total, device.gtt_total
    if (
        vram is not None
        and gtt is not None
        and vram <= 4 << 30
        and gtt >= 8 << 30
        and gtt >= 4 * vram
    ):
        return True
    return None


def _apply_drm(devices: list[DrmDevice], view: SourceView, gfx_table: GfxTable) -> None:
    amd = [d for d in devices if d.vendor == "amd"]
    for device in devices:
        if device.vendor not in (None, "amd"):
            view.facts.setdefault("other_devices", []).append(_other(device))
    if not amd:
        return
    if not view.gpus:
        # No KFD topology (no ROCm-capable kernel driver, or a copy without it): DRM alone.
        for device in amd:
            gpu = GpuFact(
                pci_device_id=device.device_id, pci_revision=device.revision, bdf=device.bdf
            )
            gpu.gfx = gpu.runtime_gfx = gfxmod.gfx_for_pci(gfx_table, device.device_id)
            _fill(gpu, device, alone=True)
            view.gpus.append(gpu)
        view.facts["drm_only"] = True
        return
    groups: dict[str, int] = {}
    for index, gpu in enumerate(view.gpus):
        key = gpu.physical_key(index)
        groups[key] = groups.get(key, 0) + 1
    for index, gpu in enumerate(view.gpus):
        match = _match_drm(gpu, amd)
        if match is not None:
            _fill(gpu, match, alone=groups[gpu.physical_key(index)] == 1)


def _match_drm(gpu: GpuFact, devices: list[DrmDevice]) -> DrmDevice | None:
    """The DRM device of a KFD node: same unique_id, else same PCI bus:device, else the render
    node KFD names (``drm_render_minor``)."""
    for device in devices:
        if gpu.unique_id and device.unique_id == gpu.unique_id:
            return device
    for device in devices:
        if gpu.bdf and device.bdf and device.bdf.rsplit(".", 1)[0] == gpu.bdf.rsplit(".", 1)[0]:
            return device
    if gpu.render_minor is not None:
        return next((d for d in devices if d.name == f"renderD{gpu.render_minor}"), None)
    return None


def _fill(gpu: GpuFact, device: DrmDevice, *, alone: bool) -> None:
    """DRM fills what KFD left unknown. VRAM only for an unpartitioned device: DRM reports the
    whole device, KFD the partition."""
    if gpu.vram_bytes is None and alone and device.vram_total:
        gpu.vram_bytes = device.vram_total
    gpu.unique_id = gpu.unique_id or device.unique_id
    gpu.pci_revision = gpu.pci_revision or device.revision
    gpu.pci_device_id = gpu.pci_device_id or device.device_id
    gpu.bdf = gpu.bdf or device.bdf
    if device.product_name and not gpu.marketing_name:
        gpu.marketing_name = device.product_name
    if gpu.compute_partition is None and device.compute_partition in _PARTITIONS:
        gpu.compute_partition = device.compute_partition
    if gpu.memory_partition is None and device.memory_partition in _MEM_PARTITIONS:
        gpu.memory_partition = device.memory_partition
    if gpu.apu is None:
        gpu.apu = integrated_by_memory(device)


_PARTITIONS = frozenset({"SPX", "DPX", "TPX", "QPX", "CPX"})
_MEM_PARTITIONS = frozenset({"NPS1", "NPS2", "NPS4", "NPS8"})


def _other(device: DrmDevice) -> dict[str, Any]:
    return {
        "vendor": device.vendor,
        "kind": "GPU",
        "gfx": None,
        "name": device.product_name,
        "pci_device_id": device.device_id,
        "unique_id": device.unique_id,
        "vram_bytes": device.vram_total,
        "compute_units": None,
        "pci_bdf": device.bdf,
        "driver": device.driver,
        "source": "sysfs",
    }


def _driver(root: Path, view: SourceView) -> None:
    module = root / "sys/module/amdgpu"
    view.amdgpu_loaded = module.is_dir()
    version = read_text(module / "version")
    if version and version.strip():
        value = version.strip()
        # Kept only as a version: a copied tree's file with control characters or 5,000 digits
        # would reach the terminal, and the report written would be refused by `check`.
        if is_safe("version", value):
            view.driver_version = value
        else:
            view.said(
                "driver-release-unknown/not-a-version",
                path=module / "version",
                value=shown(value, limit=40),
            )
        view.facts["driver_kind"] = "dkms"
    elif view.amdgpu_loaded:
        # The in-tree (distro kernel) amdgpu has no version file.
        view.facts["driver_kind"] = "in-tree"
    initstate = read_text(module / "initstate")
    if initstate is not None:
        view.facts["amdgpu_initstate"] = shown(initstate.strip(), limit=64)


def _gpu(root: Path, node: Path, view: SourceView, gfx_table: GfxTable) -> GpuFact | None:
    props = properties(read_text(node / "properties"))
    gpu_id = read_text(node / "gpu_id")
    # CPU nodes: no SIMDs, gpu_id 0, gfx_target_version 0 (the thunk's and ollama's tests).
    if props.get("simd_count", 0) == 0 or (gpu_id is not None and gpu_id.strip() == "0"):
        return None
    if props.get("vendor_id", 4098) != 4098:
        # another vendor's device in the KFD topology (a Hygon DCU is 0x1d94): found, not resolved
        _foreign_node(node, props, view)
        return None
    gpu = GpuFact(kfd_node=_node_number(node))
    gpu.pci_device_id = gfxmod.pci_id(props.get("device_id"))
    target = gfxmod.from_target_version(props.get("gfx_target_version", 0))
    if target is None:
        # Old kernels have no gfx_target_version: fall back to the PCI id table.
        target = gfxmod.gfx_for_pci(gfx_table, gpu.pci_device_id)
        if target is None:
            view.said("gpu-target-unknown/sysfs", node=node.name, pci=gpu.pci_device_id or "?")
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
    if gfxmod.is_apu_target(gfx_table, target) or props.get("cpu_cores_count", 0) > 0:
        gpu.apu = True
    if gpu.bdf:
        gpu.compute_partition, gpu.memory_partition = _pci_partition(root, gpu.bdf)
    return gpu


def _foreign_node(node: Path, props: dict[str, int], view: SourceView) -> None:
    vendor = _VENDORS.get(props.get("vendor_id", 0)) or f"{props.get('vendor_id', 0):04x}"
    simd, per_cu = props.get("simd_count", 0), props.get("simd_per_cu", 0)
    unique = props.get("unique_id", 0)
    view.facts.setdefault("other_devices", []).append(
        {
            "vendor": vendor,
            "kind": "DCU" if vendor == "hygon" else "GPU",
            "gfx": gfxmod.from_target_version(props.get("gfx_target_version", 0)),
            "name": None,
            "pci_device_id": gfxmod.pci_id(props.get("device_id")),
            "unique_id": f"{unique:016x}" if unique else None,
            "vram_bytes": _vram(node),
            "compute_units": simd // per_cu if per_cu else None,
            "source": "sysfs",
        }
    )


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
