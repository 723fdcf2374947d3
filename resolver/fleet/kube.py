"""Kubernetes nodes as fleet reports: ``kubectl get nodes -o json`` read through AMD's labels.

AMD's node labeller (ROCm/k8s-device-plugin ``cmd/k8s-node-labeller``, also deployed by the AMD
GPU operator) writes, per node: ``amd.com/gpu.device-id`` (PCI device id, hex without 0x),
``amd.com/gpu.family`` (two-letter family: AI, NV, RV, ...), ``amd.com/gpu.product-name``,
``amd.com/gpu.vram`` (``192G``), ``amd.com/gpu.cu-count``, ``amd.com/gpu.simd-count``,
``amd.com/gpu.driver-version`` (the amdgpu kernel module's version) and
``amd.com/gpu.compute-memory-partition`` (``spx_nps1``, ``cpx_nps4``...; labellers before
2025-04 wrote it as ``amd.com/compute-memory-partition``, and both are read); older labellers
write the rest under ``beta.amd.com/gpu.*`` and count labels ``beta.amd.com/gpu.device-id.74a1=8``.
``amd.com/gpu.family`` is libdrm's family name: ``AI`` (CDNA), ``NV`` (RDNA1/2) and, for RDNA3
and RDNA4, ``GC_11_0_0``... ``GC_12_0_0`` (the kernel's ``AMDGPU_FAMILY_GC_*``). The
device plugin advertises ``amd.com/gpu`` (or, with the mixed naming strategy, one resource per
partition type such as ``amd.com/cpx_nps4``) in the node's capacity.

The rest of a node's facts are read into the same ``Node`` fields the probe fills, through the
same functions: the OS from Node Feature Discovery's ``feature.node.kubernetes.io/
system-os_release.ID`` and ``.VERSION_ID`` labels (the os-release fields the probe reads, through
``probe.host.os_id``), else from ``status.nodeInfo.osImage`` (the kubelet's copy of os-release's
PRETTY_NAME, "Ubuntu 22.04.4 LTS"); the kernel from ``status.nodeInfo.kernelVersion`` (``uname
-r``); and the labeller's module version becomes a driver release only where the data pairs it
with one (``probe.driver.release_of_module``, as for rocminfo's "ROCk module version").

Partitions: the partition label where there is one; a node whose GPUs are in several modes (the
labeller then writes none, and the device plugin one resource per type) is kept as ``unknown``,
"mixed partition types: not planned"; an older labeller's node (no partition label) is read from
its counts and CU counts (``_unlabelled``), and is ``unknown`` where they show partitions in no
mode they name, so that no plan spans partitions.

A node whose labels do not name a GPU the data knows is kept as ``unknown`` with the reason; a
node whose labels contradict each other, or whose facts no kubelet or API server would write, is
listed as failed, with why.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple

from msgspec.structs import replace

from resolver.data.node import MAX_GPUS, Gpu, Node, Origin, Partition
from resolver.fleet.reports import NodeReport
from resolver.probe import driver as driver_mod
from resolver.probe.gfx import PARTITIONABLE, GfxTable, PciEntry, gfx_for_pci, product_for_pci
from resolver.probe.host import os_id
from resolver.probe.sysfs import _MAX_CU_PER_XCD as MAX_CU_PER_XCD
from resolver.probe.sysfs import infer_compute_partition
from resolver.util import bounded
from resolver.util.errors import InputError
from resolver.util.safety import is_safe, shown, unsafe_char

if TYPE_CHECKING:
    from resolver.data.model import Matrix

PREFIXES = ("amd.com/gpu.", "beta.amd.com/gpu.")
PARTITION_LABEL = "amd.com/gpu.compute-memory-partition"  # the labeller since 2025-04
OLD_PARTITION_LABEL = "amd.com/compute-memory-partition"  # its name before
GPU_RESOURCE = "amd.com/gpu"
_PARTITION_RE = re.compile(r"(spx|dpx|tpx|qpx|cpx)_(nps1|nps2|nps4|nps8)")
_VRAM_RE = re.compile(r"([0-9]{1,7})G")
# The labeller's family acronym (libdrm's family names) and the gfx major it covers.
_FAMILY_GFX = {
    "AI": ("gfx9",),
    "RV": ("gfx9",),
    "NV": ("gfx10", "gfx11", "gfx12"),
    "VGH": ("gfx10",),
    "YC": ("gfx10",),
    # include/uapi/drm/amdgpu_drm.h AMDGPU_FAMILY_GC_*: GC 10.3.6/10.3.7 APUs, RDNA3, RDNA4
    "GC_10_3_6": ("gfx10",),
    "GC_10_3_7": ("gfx10",),
    "GC_11_0_0": ("gfx11",),
    "GC_11_0_1": ("gfx11",),
    "GC_11_5_0": ("gfx11",),
    "GC_12_0_0": ("gfx12",),
}
# Node Feature Discovery's system labels (kubernetes-sigs/node-feature-discovery docs, "System"
# features: os_release ID and VERSION_ID; "Kernel": kernel-version.full), which the AMD GPU
# operator deploys and reads (ROCm/gpu-operator internal/kmmmodule/kmmmodule.go).
NFD_OS_ID = "feature.node.kubernetes.io/system-os_release.ID"
NFD_OS_VERSION = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
NFD_KERNEL = "feature.node.kubernetes.io/kernel-version.full"
DRIVER_LABEL = "amd.com/gpu.driver-version"
# osImage is os-release's PRETTY_NAME; for the distributions the data has OS records for it is
# NAME, a space, then VERSION_ID or more of the version: "Ubuntu 22.04.4 LTS", "Red Hat Enterprise
# Linux 9.4 (Plow)", "SUSE Linux Enterprise Server 15 SP5", "Oracle Linux Server 9.4", "Debian
# GNU/Linux 12 (bookworm)", "Rocky Linux 9.3 (Blue Onyx)", "Microsoft Azure Linux 3.0", "CentOS
# Linux 7 (Core)" (each distribution's /etc/os-release). -> os-release ID. Any other name (RHEL
# CoreOS "Red Hat Enterprise Linux CoreOS 415.92...", Talos, Bottlerocket) leaves the OS unknown.
_PRETTY_NAMES = (
    ("Ubuntu", "ubuntu"),
    ("Red Hat Enterprise Linux", "rhel"),
    ("SUSE Linux Enterprise Server", "sles"),
    ("Oracle Linux Server", "ol"),
    ("Debian GNU/Linux", "debian"),
    ("Rocky Linux", "rocky"),
    ("Microsoft Azure Linux", "azurelinux"),
    ("CentOS Linux", "centos"),
)
_PRETTY_VERSION_RE = re.compile(r"([0-9]{1,4}(?:\.[0-9]{1,4})*)(?: SP([0-9]{1,2}))?(?: .*)?")
MAX_NODES = 100_000
MAX_OS_IMAGE = 256  # os-release's PRETTY_NAME is a line, not a page
MAX_NODE_LIST = 64 * 1024 * 1024  # kubectl's node list for thousands of nodes is a few MiB

KUBERNETES = Origin("kubernetes")  # nodes read from `kubectl get nodes`


class Contradiction(Exception):
    pass


def _values(labels: dict[str, str], prop: str) -> dict[str, set[str]]:
    """Each spelling of one property: ``amd.com/gpu.X``, ``beta.amd.com/gpu.X`` and the count
    labels ``beta.amd.com/gpu.X.VALUE=N``; -> {value: {label keys}}."""
    found: dict[str, set[str]] = {}
    for prefix in PREFIXES:
        key = prefix + prop
        if labels.get(key):
            found.setdefault(labels[key], set()).add(key)
        for k in labels:
            if k.startswith(key + "."):
                found.setdefault(k[len(key) + 1 :], set()).add(k)
    return found


def _one(labels: dict[str, str], prop: str) -> str | None:
    values = _values(labels, prop)
    if len(values) > 1:
        said = "; ".join(
            f"{', '.join(sorted(keys))} say {value}" for value, keys in sorted(values.items())
        )
        raise Contradiction(f"the labels disagree on {prop}: {said}")
    return next(iter(values), None)


def _gpu_count(text: object) -> int | None:
    """A count label or capacity: ASCII digits, at most ``MAX_GPUS`` (``"²"``, 5,000 digits or
    ``"99999999999999999999"`` GPUs are not a count)."""
    value = bounded.ascii_int(text, max_digits=7)
    return value if value is not None and value <= MAX_GPUS else None


def _counts(labels: dict[str, str], prop: str) -> dict[str, int]:
    """``beta.amd.com/gpu.device-id.74a1=8`` -> {"74a1": 8} (a count per value, when present;
    the beta count label, written for one value or several, else ``amd.com/gpu.X.V``, written
    only for several)."""
    out: dict[str, int] = {}
    for prefix in reversed(PREFIXES):
        key = f"{prefix}{prop}."
        for k, v in labels.items():
            if k.startswith(key) and (n := _gpu_count(v)) is not None:
                out.setdefault(k[len(key) :], n)
    return out


def _several(labels: dict[str, str], prop: str) -> dict[str, int | None]:
    """A property the labeller writes per GPU (cu-count, vram) -> {value: how many GPUs have it,
    None where no count label says}. Its ``createLabels`` writes one value as plain labels
    (``amd.com/gpu.X=V``, ``beta.amd.com/gpu.X=V``) beside ``beta.amd.com/gpu.X.V=N``, and
    several values as count labels only: several values are GPUs that differ, not labels that
    disagree; a plain label beside another value is a ``Contradiction``."""
    values = _values(labels, prop)
    if len(values) > 1 and any(labels.get(prefix + prop) for prefix in PREFIXES):
        _one(labels, prop)  # raises, saying what each label says
    counts = _counts(labels, prop)
    return {value: counts.get(value) for value in sorted(values)}


def _capacity(node: dict[str, Any]) -> tuple[str, int]:
    status = node.get("status")
    capacity: Any = status.get("capacity") if isinstance(status, dict) else None
    if not isinstance(capacity, dict):
        capacity = {}
    amd = {
        k: v for k, v in capacity.items() if k.startswith("amd.com/") and k != "amd.com/gpu.memory"
    }
    for key in (GPU_RESOURCE, *sorted(amd)):
        value = amd.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        count = _gpu_count(value)
        if count is not None and count > 0 and is_safe("label_key", key):
            return key, count
        if value is not None and count is None and key == GPU_RESOURCE:
            raise Contradiction(f"capacity {key} is {shown(str(value))[:40]}, not a GPU count")
    return GPU_RESOURCE, 0


def _offered_modes(node: dict[str, Any]) -> dict[str, int]:
    """The partition resources the device plugin's mixed naming strategy offers, one per
    partition type on the node (``amd.com/cpx_nps1``: 32, ``amd.com/spx_nps1``: 4) -> counts."""
    status = node.get("status")
    capacity: Any = status.get("capacity") if isinstance(status, dict) else None
    out: dict[str, int] = {}
    for key, value in (capacity if isinstance(capacity, dict) else {}).items():
        mode = key[len("amd.com/") :] if key.startswith("amd.com/") else ""
        count = _gpu_count(str(value)) if not isinstance(value, bool) else None
        if _PARTITION_RE.fullmatch(mode) and count:
            out[mode] = count
    return out


def os_from_image(text: str) -> str | None:
    """``status.nodeInfo.osImage`` (os-release's PRETTY_NAME) -> the OS id the probe reads from
    os-release (``ubuntu-22.04``, ``sles-15.5``), through the probe's own ``os_id``; None for a
    name it does not know."""
    for name, ident in _PRETTY_NAMES:
        rest = text[len(name) + 1 :] if text.startswith(name + " ") else None
        match = _PRETTY_VERSION_RE.fullmatch(rest) if rest is not None else None
        if match is not None:
            version = match.group(1) + (f".{match.group(2)}" if match.group(2) else "")
            return os_id(f"ID={ident}\nVERSION_ID={version}")
    return None


def _system(item: dict[str, Any], labels: dict[str, str]) -> tuple[str | None, str | None]:
    """(OS id, kernel release) from NFD's labels and ``status.nodeInfo``; a value no kubelet
    writes (a control character, an over-long or malformed one) is a ``Contradiction``."""
    status = item.get("status")
    info: Any = status.get("nodeInfo") if isinstance(status, dict) else None
    info = info if isinstance(info, dict) else {}
    image, kernel = info.get("osImage"), info.get("kernelVersion")
    if image is not None and (
        not isinstance(image, str) or len(image) > MAX_OS_IMAGE or unsafe_char(image) is not None
    ):
        raise Contradiction(f"status.nodeInfo.osImage {shown(str(image))[:80]} is not an OS name")
    if kernel is not None and (not isinstance(kernel, str) or not is_safe("kernel", kernel)):
        raise Contradiction(
            f"status.nodeInfo.kernelVersion {shown(str(kernel))[:80]} is not a kernel release"
        )
    ident, version = labels.get(NFD_OS_ID), labels.get(NFD_OS_VERSION)
    os = os_id(f"ID={ident}\nVERSION_ID={version}") if ident and version else None
    if os is None and image:
        os = os_from_image(image)
    return os, kernel or labels.get(NFD_KERNEL) or None


def _read_driver(node: Node, module: str | None, matrix: Matrix) -> Node:
    """The labeller's module version read as rocminfo's is: a release where the data pairs it with
    one (``driver_release_source`` and ``driver_release_confidence`` say so), else kept as
    ``host.amdgpu_module_version`` with the release unknown."""
    if module is None:
        return node
    reading = driver_mod.DriverReading(
        module_version=module, source=f"{DRIVER_LABEL} label", tried=[f"{DRIVER_LABEL} label"]
    )
    host = {**node.host, "driver": reading.to_json()}
    return driver_mod.release_of_module(replace(node, driver_version=module, host=host), matrix)


def node_report(
    item: Any, *, index: int, matrix: Matrix, gfx_table: GfxTable | None = None
) -> NodeReport:
    """One item of ``kubectl get nodes -o json``; ``matrix`` is the data: its gfx records turn the
    labels' PCI device ids into gfx targets and products (``gfx_table``, when the caller has made
    it already), its driver records pair module versions with releases."""
    if isinstance(item, dict) and item.get("kind") not in (None, "Node"):
        kind = shown(str(item.get("kind")))[:40]
        return NodeReport(
            name=f"items[{index}]",
            source=f"kubernetes:items[{index}]",
            reason=f"a {kind}, not a Node object",
        )
    if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict):
        return NodeReport(
            name=f"items[{index}]", source=f"kubernetes:items[{index}]", reason="not a Node object"
        )
    meta = item["metadata"]
    raw_name = meta.get("name")
    if not isinstance(raw_name, str) or not is_safe("k8s_name", raw_name):
        # A node name the API server could not have accepted: never a file name or selector.
        shown_name = f"items[{index}]"
        why = (
            "metadata.name is missing"
            if raw_name is None
            else (f"metadata.name {shown(str(raw_name))[:80]} is not a Kubernetes node name")
        )
        return NodeReport(name=shown_name, source=f"kubernetes:{shown_name}", reason=why)
    name = raw_name
    source = f"kubernetes:{name}"
    raw_labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    labels = {str(k): str(v) for k, v in raw_labels.items()}
    amd_labels = {k: v for k, v in labels.items() if k.startswith(("amd.com/", "beta.amd.com/"))}
    refused = _refused_label({**amd_labels, **{k: labels[k] for k in _NFD if k in labels}})
    if refused is not None:  # the API server accepts no such label: the node list was edited
        return NodeReport(name=name, source=source, reason=refused)
    try:
        os, kernel = _system(item, labels)
    except Contradiction as exc:
        return NodeReport(name=name, source=source, reason=str(exc), labels=amd_labels)
    nvidia = _nvidia_node(labels, item)
    if nvidia is not None and not amd_labels:
        node, unplaced, kept = nvidia
        return NodeReport(
            name=name,
            source=source,
            node=replace(node, os=os, kernel=kernel),
            reason=unplaced,
            labels=kept,
            resource=NVIDIA_RESOURCE,
        )
    try:
        resource, count = _capacity(item)
        table = gfx_table or GfxTable.of(matrix.gfx)
        node, unplaced, notes = _node(labels, resource, count, table, _offered_modes(item))
    except Contradiction as exc:
        return NodeReport(name=name, source=source, reason=str(exc), labels=amd_labels)
    node = _read_driver(replace(node, os=os, kernel=kernel), _one(labels, "driver-version"), matrix)
    return NodeReport(
        name=name,
        source=source,
        node=node,
        reason=unplaced,
        notes=notes,
        labels=amd_labels,
        resource=resource,
    )


_NFD = (NFD_OS_ID, NFD_OS_VERSION, NFD_KERNEL)


def _refused_label(labels: dict[str, str]) -> str | None:
    """Why one of ``labels`` could not be on a Node (key or value outside Kubernetes' label
    syntax), or None."""
    for key, value in labels.items():
        part = "key" if not is_safe("label_key", key) else None
        part = part or ("value" if not is_safe("label_value", value) else None)
        if part is not None:
            return f"label {shown(key, limit=80)} has no valid Kubernetes label {part}"
    return None


NVIDIA_RESOURCE = "nvidia.com/gpu"
# NVIDIA GPU feature discovery's labels (NVIDIA/k8s-device-plugin
# docs/gpu-feature-discovery/README.md, "Generated Labels"): product, count, compute capability
# major/minor, driver major/minor/rev, CUDA runtime major/minor, memory in MB.
_GFD = "nvidia.com/"


def _nvidia_node(
    labels: dict[str, str], item: dict[str, Any]
) -> tuple[Node, str | None, dict[str, str]] | None:
    """An NVIDIA node from its GFD labels and its ``nvidia.com/gpu`` capacity, as the probe would
    describe it (``host.nvidia``, ``host.other_devices``); None when it has neither."""
    status = item.get("status")
    capacity: Any = status.get("capacity") if isinstance(status, dict) else None
    raw = capacity.get(NVIDIA_RESOURCE) if isinstance(capacity, dict) else None
    count = _gpu_count(str(raw)) if raw is not None and not isinstance(raw, bool) else None
    gfd = {k: v for k, v in labels.items() if k.startswith(_GFD)}
    product = gfd.get("nvidia.com/gpu.product")
    if not product and not count:
        return None
    kept = {k: v for k, v in gfd.items() if is_safe("label_key", k) and is_safe("label_value", v)}
    count = count or _gpu_count(gfd.get("nvidia.com/gpu.count"))
    if not count:
        return (
            Node(origin=KUBERNETES, host={"kubernetes_resource": NVIDIA_RESOURCE}),
            "the node offers no nvidia.com/gpu (is NVIDIA's device plugin running on it?)",
            kept,
        )

    def num(key: str) -> int | None:
        return bounded.ascii_int(gfd.get(key) or "", max_digits=5)

    major, minor = num("nvidia.com/gpu.compute.major"), num("nvidia.com/gpu.compute.minor")
    cap = f"{major}.{minor}" if major is not None and minor is not None else None
    parts = [gfd.get(f"nvidia.com/cuda.driver.{p}") or "" for p in ("major", "minor", "rev")]
    driver = ".".join(p for p in parts if p) if bounded.ascii_int(parts[0]) is not None else None
    if driver is not None and not all(p.isascii() and p.isdigit() for p in driver.split(".")):
        driver = None
    rmaj, rmin = num("nvidia.com/cuda.runtime.major"), num("nvidia.com/cuda.runtime.minor")
    memory = num("nvidia.com/gpu.memory")
    name = product if product and is_safe("label_value", product) else "NVIDIA GPU"
    device = {
        "vendor": "nvidia",
        "kind": "GPU",
        "name": name,
        "compute_capability": cap,
        "driver": driver,
        "vram_bytes": memory * 1024**2 if memory else None,
    }
    host: dict[str, Any] = {
        "kubernetes_resource": NVIDIA_RESOURCE,
        "nvidia": {
            "driver": driver,
            "cuda": f"{rmaj}.{rmin}" if rmaj is not None and rmin is not None else None,
            "sources": ["kubernetes labels (GPU feature discovery)"],
        },
        "other_devices": [dict(device) for _ in range(count)],
    }
    return Node(host=host, origin=KUBERNETES), None, kept


# One kind of GPU on a node in mixed partition modes: (what, partition, CUs, how many).
_Kind = tuple[str, Partition | None, int | None, int | None]


class _Unlabelled(NamedTuple):
    """What the labels of a partitionable GPU with no partition label say of its partitions."""

    mode: str | None = None  # CPX, DPX, TPX, QPX; None: whole GPUs, or (with why) unknown
    per_gpu: int | None = None  # partitions per physical GPU, where the labels tell
    evidence: tuple[str, ...] = ()
    why: str | None = None  # partitioned, but in which mode the labels do not say


def _cu_mode(cu: int, wholes: set[int]) -> tuple[str | None, int | None]:
    """A device of ``cu`` CUs on a GPU whose whole-device count the data states (``wholes``:
    304 for an MI300X) -> (mode, partitions per GPU), as the probe reads KFD nodes
    (``probe.sysfs.infer_compute_partition``): at most one XCD's CUs is CPX, the whole count is
    SPX, a share of it DPX/TPX/QPX."""
    if cu in wholes:
        return "SPX", 1
    shares = {w // cu for w in wholes if w % cu == 0 and w > cu}
    per_gpu = shares.pop() if len(shares) == 1 else None
    if cu <= MAX_CU_PER_XCD:
        return "CPX", per_gpu
    return (infer_compute_partition(per_gpu, None, cu) if per_gpu else None), per_gpu


def _unlabelled(
    entries: tuple[PciEntry, ...], device_id: str, cu: int | None, agents: int, physical: int | None
) -> _Unlabelled:
    """A labeller before 2025-04 writes no partition label; its other labels still say how the
    GPUs are split. Each partition is a device of its own to the labeller, but ``device-id`` is
    read from the PCI function, which partitions do not have (ROCm/k8s-device-plugin PR #108
    prints ``beta.amd.com/gpu.device-id.74a1: "1"`` beside ``beta.amd.com/gpu.cu-count.38:
    "8"`` for one MI300X in CPX): more devices than the device-id count are partitions, and a
    device's CU count against the whole GPU's says which mode."""
    wholes = {e.compute_units for e in entries if e.compute_units}
    evidence: list[str] = []
    split = physical is not None and 0 < physical < agents
    # Fewer CUs than any whole GPU of the id has: a share of one.
    shrunk = cu is not None and bool(wholes) and cu < min(wholes)
    per_gpu = agents // physical if split and physical and agents % physical == 0 else None
    if split:
        gpus = f"{physical} GPU" + ("s" if physical != 1 else "")
        evidence.append(
            f"{agents} devices on {gpus}, beta.amd.com/gpu.device-id.{device_id}={physical}"
        )
    mode = None
    if cu is not None:
        mode, share = _cu_mode(cu, wholes)
        per_gpu = per_gpu or share
        evidence.append(f"{cu} CUs per device")
        if mode == "SPX" and split:  # the counts say partitions, the CUs a whole GPU
            mode = None
        elif per_gpu and per_gpu > 1 and mode is None and cu > MAX_CU_PER_XCD:
            mode = infer_compute_partition(per_gpu, None, cu)
    elif per_gpu and per_gpu > 4:  # DPX, TPX and QPX are 2, 3 and 4 per GPU
        mode = "CPX"
    if not (split or shrunk or mode == "CPX") or mode == "SPX":
        return _Unlabelled()  # whole GPUs, or nothing says otherwise
    why = None
    if mode is None:
        why = (
            f"partitioned GPUs in a mode the labels do not name ({'; '.join(evidence)}): not "
            "planned, since a plan must not span partitions; label the node with a node labeller "
            "from 2025-04 on (it writes amd.com/gpu.compute-memory-partition), or add -cu-count to "
            "the labeller's flags"
        )
    return _Unlabelled(mode, per_gpu, tuple(evidence), why)


def _mixed(
    offered: dict[str, int],
    cu_values: dict[str, int | None],
    vram_values: dict[str, int | None],
    wholes: set[int],
) -> list[_Kind]:
    """GPUs of one node in different partition modes -> (what, partition, CUs, how many) per
    kind; empty when they are in one mode. The device plugin offers one resource per partition
    type under its mixed strategy (``getResourceList``; a node with several types needs it), and
    the labeller then writes no partition label, and count labels for each CU count and VRAM size
    (``createLabels``: ``cu-count.38=32``, ``cu-count.304=4``)."""
    if len(offered) > 1:
        out: list[_Kind] = []
        for name, count in sorted(offered.items()):
            match = _PARTITION_RE.fullmatch(name)
            assert match is not None
            partition = Partition(compute=match.group(1).upper(), memory=match.group(2).upper())
            out.append((f"{partition.compute}/{partition.memory}", partition, None, count))
        return out
    if len(cu_values) > 1:
        out = []
        for value, how_many in cu_values.items():
            cu = bounded.ascii_int(value, max_digits=6)
            mode = _cu_mode(cu, wholes)[0] if cu else None
            out.append(
                (mode or f"{value} CUs", Partition(compute=mode) if mode else None, cu, how_many)
            )
        return sorted(out, key=lambda kind: kind[0])
    sizes = [int(m.group(1)) for v in vram_values if (m := _VRAM_RE.fullmatch(v))]
    # One CU count, memory split differently (NPS1 and NPS4): a share of it, not a rounding.
    if len(sizes) > 1 and max(sizes) >= 2 * min(sizes):
        return [(f"{value} VRAM", None, None, count) for value, count in vram_values.items()]
    return []


def _mixed_reason(kinds: list[_Kind]) -> str:
    said = ", ".join(what + (f" x{count}" if count else "") for what, _, _, count in kinds[:8])
    if len(kinds) > 8:  # a line, not a page, whatever the labels hold
        said += f" and {len(kinds) - 8} more"
    return (
        f"mixed partition types on one node ({said}): not planned; set all its GPUs to one "
        "partition mode (amd-smi set --compute-partition MODE --memory-partition MODE) to plan it"
    )


def _labelled_partition(
    labels: dict[str, str], resource: str, offered: dict[str, int]
) -> Partition | None:
    """The partition mode the labeller's label names (either of its names), else the one the
    device plugin's mixed strategy names the node's only resource after (``amd.com/cpx_nps4``)."""
    modes = {k: labels[k] for k in (PARTITION_LABEL, OLD_PARTITION_LABEL) if labels.get(k)}
    if len({v.lower() for v in modes.values()}) > 1:
        raise Contradiction(
            "the labels disagree on the partition mode: "
            + "; ".join(f"{k} says {v}" for k, v in modes.items())
        )
    label_key, partition_text = next(iter(modes.items()), (PARTITION_LABEL, None))
    if partition_text is None:
        mode = resource[len("amd.com/") :] if len(offered) == 1 else ""
        match = _PARTITION_RE.fullmatch(mode)
    else:
        match = _PARTITION_RE.fullmatch(partition_text.lower())
        if match is None:
            raise Contradiction(
                f"{label_key}={partition_text} is not a compute_memory partition mode"
            )
        # The labeller writes the label only where the GPUs share one mode (IsHomogeneous).
        theirs = sorted(f"amd.com/{m}" for m in offered)
        if theirs and theirs != [f"amd.com/{partition_text.lower()}"]:
            raise Contradiction(
                f"capacity offers {', '.join(theirs)} but {label_key} is {partition_text}"
            )
    if match is None:
        return None
    return Partition(compute=match.group(1).upper(), memory=match.group(2).upper())


def _node(
    labels: dict[str, str],
    resource: str,
    count: int,
    gfx_table: GfxTable,
    offered: dict[str, int] | None = None,
) -> tuple[Node, str | None, tuple[str, ...]]:
    """The node the labels describe, why it cannot be placed (or None), and notes on how it was
    read."""
    from resolver.util.versions import check_gfx_name

    offered = offered or {}
    device_ids = _values(labels, "device-id")
    per_id = _counts(labels, "device-id")
    singles = {
        key: labels[key]
        for key in ("amd.com/gpu.device-id", "beta.amd.com/gpu.device-id")
        if labels.get(key)
    }
    if len(set(singles.values())) > 1:
        said = "; ".join(f"{k} says {v}" for k, v in singles.items())
        raise Contradiction(f"the labels disagree on device-id: {said}")
    main = next(iter(singles.values()), None)
    if main and per_id and set(per_id) != {main}:
        raise Contradiction(
            f"amd.com/gpu.device-id says {main} but the count labels list "
            f"{', '.join(sorted(per_id))}"
        )
    ids = sorted(set(device_ids) | set(per_id))
    family = _one(labels, "family")
    cu_values = _several(labels, "cu-count")
    vram_values = _several(labels, "vram")
    module = _one(labels, "driver-version")
    product_label = _one(labels, "product-name")
    partition = _labelled_partition(labels, resource, offered)
    cu_text = next(iter(cu_values)) if len(cu_values) == 1 else None
    vram_text = next(iter(vram_values)) if len(vram_values) == 1 else None
    cu = bounded.ascii_int(cu_text, max_digits=6)
    vram_match = _VRAM_RE.fullmatch(vram_text or "")
    vram = int(vram_match.group(1)) * 1024**3 if vram_match else None
    if module and not is_safe("version", module):
        raise Contradiction(f"{DRIVER_LABEL}={module} is not a kernel module version")
    host: dict[str, Any] = {"kubernetes_resource": resource}
    gfx_by_id = {i: gfx_for_pci(gfx_table, i) for i in ids}
    if not ids and not product_label:
        why = "no AMD GPU labels (deploy AMD's node labeller with -device-id)"
        return (
            Node(logical_gpu_count=count, physical_gpu_count=count, host=host, origin=KUBERNETES),
            why,
            (),
        )
    unknown = [i for i, g in gfx_by_id.items() if g is None]
    targets = sorted({g for g in gfx_by_id.values() if g})
    if unknown or not targets:
        what = f"PCI device id {', '.join(unknown)}" if unknown else f"product {product_label}"
        return (
            Node(
                logical_gpu_count=count,
                physical_gpu_count=count,
                host={**host, "pci_device_ids": ids},
                origin=KUBERNETES,
            ),
            (
                f"{what} is not a GPU the compatibility data knows; the node cannot be placed from "
                "its labels"
            ),
            (),
        )
    if family in _FAMILY_GFX and not all(t.startswith(_FAMILY_GFX[family]) for t in targets):
        raise Contradiction(
            f"amd.com/gpu.family={family} contradicts device id {', '.join(ids)} "
            f"({', '.join(targets)})"
        )
    one_kind = len(ids) == 1 and targets[0] in PARTITIONABLE
    entries = gfx_table.pci.get(ids[0], ()) if len(ids) == 1 else ()
    wholes = {e.compute_units for e in entries if e.compute_units}
    kinds = _mixed(offered, cu_values if one_kind else {}, vram_values if one_kind else {}, wholes)
    if partition is None and kinds:
        cus = {c for v in cu_values if (c := bounded.ascii_int(v, max_digits=6))}
        mixed = _mixed_node(kinds, ids, targets, gfx_table, host, per_id, cus & wholes)
        return mixed, _mixed_reason(kinds), ()
    if count == 0:
        return (
            Node(gfx_targets=tuple(targets), host=host, origin=KUBERNETES),
            f"the node offers no {GPU_RESOURCE} (is AMD's device plugin running on it?)",
            (),
        )
    notes: tuple[str, ...] = ()
    physical: int | None = None
    whole_cu = cu  # the product by the whole GPU's CUs (8 CPX partitions of 38: an MI300X's 304)
    if partition is None and one_kind:
        read = _unlabelled(entries, ids[0], cu, count, per_id.get(ids[0]))
        if read.why is not None:
            return (
                Node(
                    gfx_targets=tuple(targets),
                    logical_gpu_count=count,
                    physical_gpu_count=per_id.get(ids[0], 0),
                    host=host,
                    origin=KUBERNETES,
                ),
                read.why,
                (),
            )
        if read.mode is not None:
            partition = Partition(compute=read.mode)
            host["partition_inferred"] = True  # as the probe says of partitions it infers
            physical = count // read.per_gpu if read.per_gpu else per_id.get(ids[0])
            whole_cu = cu * read.per_gpu if cu and read.per_gpu else None
            each = f", {read.per_gpu} per GPU" if read.per_gpu else ""
            said = "; ".join(read.evidence)
            why = f"no partition label (a node labeller before 2025-04): read as {read.mode}"
            notes = (f"{why}{each}, from {said}",)
    gpus: list[Gpu] = []
    if len(ids) == 1:
        product = product_for_pci(gfx_table, ids[0], compute_units=whole_cu)
        gpus = [
            Gpu(
                gfx=check_gfx_name(targets[0]),
                product=product,
                pci_device_id=ids[0],
                compute_units=cu,
                vram_bytes=vram,
                partition=partition,
            )
            for _ in range(count)
        ]
    else:
        # A node with two GPU types: the count labels say how many of each, where present.
        for i in ids:
            gfx = gfx_by_id[i]
            assert gfx is not None
            gpus += [
                Gpu(gfx=gfx, pci_device_id=i, partition=partition) for _ in range(per_id.get(i, 0))
            ]
    # Partitions per physical GPU differ by product (MI300X CPX: 8, MI300A CPX: 6): unless the
    # labels say how many are on one GPU, a partitioned node's physical count stays unknown (0).
    if physical is None:
        physical = count if partition is None or partition.compute == "SPX" else 0
    return (
        Node(
            gpus=tuple(gpus),
            gfx_targets=tuple(targets),
            physical_gpu_count=physical or 0,
            logical_gpu_count=count,
            host=host,
            origin=KUBERNETES,
        ),
        None,
        notes,
    )


def _mixed_node(
    kinds: list[_Kind],
    ids: list[str],
    targets: list[str],
    gfx_table: GfxTable,
    host: dict[str, Any],
    per_id: dict[str, int],
    whole: set[int],
) -> Node:
    """A node whose GPUs are in several partition modes, each GPU with its own (where the labels
    count them), listed but not planned; ``whole``: CU counts of its labels that are a whole
    GPU's, which name the product (an MI300X's 304 beside its CPX partitions' 38)."""
    from resolver.util.versions import check_gfx_name

    gpus: list[Gpu] = []
    counts = [count or 0 for *_, count in kinds]
    if len(ids) == 1 and all(counts) and sum(counts) <= MAX_GPUS:  # one Gpu each, within bounds
        cu = next(iter(whole)) if len(whole) == 1 else None
        product = product_for_pci(gfx_table, ids[0], compute_units=cu)
        for _, partition, cu, count in kinds:
            gpus += [
                Gpu(
                    gfx=check_gfx_name(targets[0]),
                    product=product,
                    pci_device_id=ids[0],
                    compute_units=cu,
                    partition=partition,
                )
                for _ in range(count or 0)
            ]
    return Node(
        gpus=tuple(gpus),
        gfx_targets=tuple(targets),
        physical_gpu_count=sum(per_id.values()) if len(ids) == 1 else 0,
        logical_gpu_count=len(gpus) or min(sum(counts), MAX_GPUS),
        host=host,
        origin=KUBERNETES,
    )


def cluster_nodes(*, timeout: float = 60, limit: int = MAX_NODE_LIST) -> str:
    """``kubectl get nodes -o json`` against the current kubeconfig context: at most ``timeout``
    seconds and ``limit`` bytes (the same cap as a node list read from a file)."""
    import shutil

    from resolver.util import capture
    from resolver.util.errors import KubectlError

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise KubectlError(
            "kubectl is not on PATH",
            hint="install kubectl, or save the list elsewhere and give --kube FILE",
        )
    try:
        run = capture.run([kubectl, "get", "nodes", "-o", "json"], timeout=timeout, limit=limit)
    except OSError as exc:
        raise KubectlError(
            f"kubectl could not start ({exc.strerror or type(exc).__name__})",
            hint="check the kubectl on PATH",
        ) from None
    if run.timed_out:
        raise KubectlError(
            f"kubectl get nodes did not answer within {timeout:g}s",
            hint="check the cluster (`kubectl cluster-info`)",
        )
    if run.truncated:
        raise KubectlError(
            f"kubectl get nodes printed more than {limit // (1024 * 1024)} MiB",
            hint="save the list with `kubectl get nodes -o json > nodes.json` and split it",
        )
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or [f"exit {run.returncode}"])[-1]
        raise KubectlError(
            f"kubectl get nodes failed: {shown(last)[:300]}",
            hint="check the current context (`kubectl config current-context`) and your access",
        )
    return run.stdout


def read_nodes(text: str, *, where: str, matrix: Matrix) -> list[NodeReport]:
    """``kubectl get nodes -o json`` (a ``List``, or the API's ``NodeList``) or ``kubectl get node
    NAME -o json`` (one ``Node``, read as a list of one: the command a user runs for one node);
    ``matrix`` as for ``node_report``."""
    try:
        data = bounded.loads_json(text)
    except ValueError as exc:
        raise InputError(
            f"{where}: {bounded.json_failure(exc, 'a usable node list')}",
            hint="give the output of `kubectl get nodes -o json`",
        ) from None
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == "Node":
        items: Any = [data]
    elif (
        isinstance(data, dict)
        and kind in (None, "List", "NodeList")
        and isinstance(data.get("items"), list)
    ):
        items = data["items"]
    else:
        what = f" (kind {shown(str(kind))[:40]})" if isinstance(kind, str) else ""
        raise InputError(
            f"{where}: not a Kubernetes node list{what}",
            hint="give the output of `kubectl get nodes -o json` (or `kubectl get node NAME -o "
            "json` for one node)",
        )
    if len(items) > MAX_NODES:
        raise InputError(f"{where}: more than {MAX_NODES} nodes", hint="split the list")
    gfx_table = GfxTable.of(matrix.gfx)
    return [
        node_report(item, index=i, matrix=matrix, gfx_table=gfx_table)
        for i, item in enumerate(items)
    ]
