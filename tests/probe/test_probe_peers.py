"""The peer suite: real captures other projects keep as test data, checked against the values
those projects' own tests assert (tests/probe/fixtures/SOURCES.md, "Peer captures").

One row per capture. ``devices`` lists, per device in the peer's order, the values the peer
asserts: PCI id, unique id (as HIP prints it: 16 hex digits), VRAM bytes, target. A device whose
target no source names is still counted and keeps its facts (``host.unidentified_gpus``); an
accelerator that is not an AMD GPU (a Hygon DCU) is found but not resolved (``host.other_devices``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from resolver.data.node import Node
from resolver.probe import probe_files
from tests.probe_data import probe_matrix

FIXTURES = Path(__file__).parent / "fixtures"
PEERS = FIXTURES / "peers"
GIB = 1024**3
MIB = 1024**2


@dataclass(frozen=True)
class Row:
    inputs: dict[str, Path]
    logical: int
    targets: tuple[str, ...]
    # (pci_device_id, unique_id, vram_bytes, gfx) per device; None where the peer asserts nothing
    devices: tuple[tuple[str | None, str | None, int | None, str | None], ...]
    extra: dict[str, Any] = field(default_factory=dict)


def _telegraf(name: str) -> dict[str, Path]:
    return {"rocm_smi": PEERS / "telegraf" / name}


def _slurm(name: str) -> dict[str, Path]:
    return {"rocm_smi": PEERS / "slurm-monitor" / name}


MI100 = 34342961152  # 32 GiB HBM2 (MI100, Radeon Instinct MI50 32GB)
RX6700XT = 12868124672

ROWS: dict[str, Row] = {
    # telegraf: gpu_id, gpu_unique_id ("N/A" is no id) and memory_total per cardN
    "telegraf/mi100_rocm571": Row(
        _telegraf("mi100_rocm571.json"), 6, ("gfx908",), (("738c", None, MI100, "gfx908"),) * 6
    ),
    "telegraf/mi100_rocm602": Row(
        _telegraf("mi100_rocm602.json"),
        4,
        ("gfx908",),
        (
            ("738c", "79ccd55167a2124a", MI100, "gfx908"),
            ("738c", "04edfb117a17a07d", MI100, "gfx908"),
            ("738c", "d4a9ec48d03d261d", MI100, "gfx908"),
            ("738c", "1b9dd972253c3736", MI100, "gfx908"),
        ),
    ),
    "telegraf/rx6700xt_rocm430": Row(
        _telegraf("rx6700xt_rocm430.json"), 1, ("gfx1031",), (("73df", None, RX6700XT, "gfx1031"),)
    ),
    "telegraf/rx6700xt_rocm571": Row(
        _telegraf("rx6700xt_rocm571.json"), 1, ("gfx1031",), (("73df", None, RX6700XT, "gfx1031"),)
    ),
    "telegraf/rx6700xt_rocm602": Row(
        _telegraf("rx6700xt_rocm602.json"), 1, ("gfx1031",), (("73df", None, RX6700XT, "gfx1031"),)
    ),
    "telegraf/rx6700xt_rocm612": Row(
        _telegraf("rx6700xt_rocm612.json"), 1, ("gfx1031",), (("73df", None, RX6700XT, "gfx1031"),)
    ),
    # 0x6861 (Vega 10 XT) is not in the PCI table and the JSON names no target: the GPU still
    # counts and keeps its id and VRAM
    "telegraf/vega-10-XT": Row(
        _telegraf("vega-10-XT.json"), 1, (), (("6861", "02150e7d042a1124", 17163091968, None),)
    ),
    "telegraf/vega-20-WKS-GL-XE": Row(
        _telegraf("vega-20-WKS-GL-XE.json"),
        1,
        ("gfx906",),
        (("66a1", "02f048617326b1ea", MI100, "gfx906"),),
    ),
    # gpustack reads rocminfo and rocm-smi --json together
    "gpustack/amd-gpu-6.2.4": Row(
        {
            "rocminfo": PEERS / "gpustack/amd-gpu-6.2.4-rocminfo.txt",
            "rocm_smi": PEERS / "gpustack/amd-gpu-6.2.4-rocm-smi.json",
        },
        1,
        ("gfx1101",),
        (("747e", "5c88007d760374f3", 16368 * MIB, "gfx1101"),),
        {"compute_units": 60, "marketing_name": "AMD Radeon RX 7800 XT"},
    ),
    "gpustack/hygon-gpu-24.04.3": Row(
        {
            "rocminfo": PEERS / "gpustack/hygon-gpu-24.04.3-rocminfo.txt",
            "rocm_smi": PEERS / "gpustack/hygon-gpu-24.04.3-rocm-smi.json",
        },
        0,
        (),
        (),
        {
            "other": [
                {
                    "vendor": "hygon",
                    "kind": "DCU",
                    "unique_id": "7100fa8866904061",
                    "name": "K1xx_AI",
                    "vram_bytes": 65520 * MIB,
                    "compute_units": 12,
                    "gfx": "gfx928",
                }
            ]
        },
    ),
    # slurm-monitor: rocm-smi --csv from ROCm 5 to 6.x; the peer asserts the GPU count and the
    # first GPU's VRAM (and, for the reduced "detect" CSV, model and VRAM)
    "slurm-monitor/rocm-smi-csv-v1": Row(
        _slurm("rocm-smi-csv-v1.csv"),
        1,
        ("gfx906",),
        ((None, "2490210172fc1a88", 17163091968, "gfx906"),),
    ),
    "slurm-monitor/rocm-smi-csv-v1dot4": Row(
        _slurm("rocm-smi-csv-v1dot4.csv"),
        2,
        ("gfx90a",),
        (
            (None, "18f68e602b8a790f", 68702699520, "gfx90a"),
            (None, "95a1ca7691e7c391", 68702699520, "gfx90a"),
        ),
    ),
    "slurm-monitor/rocm-smi-csv-v2": Row(
        _slurm("rocm-smi-csv-v2.csv"),
        2,
        ("gfx90a",),
        (
            (None, "18f68e602b8a790f", 68702699520, "gfx90a"),
            (None, "95a1ca7691e7c391", 68702699520, "gfx90a"),
        ),
    ),
    "slurm-monitor/rocm-smi-csv-v2dot3": Row(
        _slurm("rocm-smi-csv-v2dot3.csv"),
        1,
        ("gfx908",),
        (("738c", "19645d9a01fc11bd", MI100, "gfx908"),),
    ),
    "slurm-monitor/rocm-smi-csv-v2dot3dot1": Row(
        _slurm("rocm-smi-csv-v2dot3dot1.csv"),
        1,
        ("gfx908",),
        (("738c", "19645d9a01fc11bd", MI100, "gfx908"),),
    ),
    "slurm-monitor/rocm-smi-csv-detect": Row(
        _slurm("rocm-smi-csv-detect.csv"),
        1,
        ("gfx906",),
        ((None, None, 17163091968, "gfx906"),),
        {"marketing_name": "Vega 20 [Radeon Pro VII/Radeon Instinct MI50 32GB]"},
    ),
    # rocm-doctor (trimmed outputs): the RAM/VRAM check reads VRAM from a rocm-smi that names no
    # target; the rocminfo check passes with a GPU agent and warns without one
    "rocm-doctor/rocm_smi_vram": Row(
        {"rocm_smi": PEERS / "rocm-doctor/rocm_smi_vram.txt"}, 1, (), ((None, None, MI100, None),)
    ),
    "rocm-doctor/rocminfo_gpu_found": Row(
        {"rocminfo": PEERS / "rocm-doctor/rocminfo_gpu_found.txt"},
        1,
        ("gfx1201",),
        ((None, None, None, "gfx1201"),),
    ),
    "rocm-doctor/rocminfo_no_gpu": Row(
        {"rocminfo": PEERS / "rocm-doctor/rocminfo_no_gpu.txt"}, 0, (), (), {"no_gpu": True}
    ),
    # procfs: card0 amdgpu (0x687f Vega 10) with VRAM and unique_id, card1 an Intel i915
    "procfs/drm-gfx900-vega10-i915": Row(
        {"sysfs": PEERS / "procfs/drm-gfx900-vega10-i915"},
        1,
        ("gfx900",),
        (("687f", "0123456789abcdef", 8573157376, "gfx900"),),
        {"other": [{"vendor": "intel", "kind": "GPU", "driver": "i915"}]},
    ),
}


def _devices(node: Node) -> list[tuple[str | None, str | None, int | None, str | None]]:
    listed = [
        (g.pci_device_id, g.unique_id, g.vram_bytes, g.gfx) for g in node.gpus if not g.integrated
    ]
    listed += [
        (d.get("pci_device_id"), d.get("unique_id"), d.get("vram_bytes"), None)
        for d in node.host.get("unidentified_gpus") or []
    ]
    return listed


@pytest.mark.parametrize("name", sorted(ROWS))
def test_peer_capture(name: str) -> None:
    row = ROWS[name]
    node = probe_files(**row.inputs, matrix=probe_matrix())  # type: ignore[arg-type]
    assert node.logical_gpu_count == row.logical
    assert node.gfx_targets == row.targets
    assert _devices(node) == list(row.devices)
    if "compute_units" in row.extra:
        assert node.gpus[0].compute_units == row.extra["compute_units"]
    if "marketing_name" in row.extra:
        assert node.gpus[0].marketing_name == row.extra["marketing_name"]
    others = node.host.get("other_devices") or []
    expected = row.extra.get("other", [])
    assert len(others) == len(expected)
    for found, want in zip(others, expected, strict=True):
        assert {k: found.get(k) for k in want} == want
    codes = [p.code for p in node.problems]
    if row.logical:
        assert "no-gpu" not in codes
    if expected and not row.logical:
        assert codes[0] == "not-an-amd-gpu"
        assert "no-gpu" not in codes
    if row.extra.get("no_gpu"):
        assert codes[-1] == "no-gpu"


K8S_MI308_UNIQUE = (
    598046273873802902,
    11803749423592941193,
    10187445671099294242,
    9604994527082705072,
    17466021589395472075,
    1044926823201815193,
    13372828617950681944,
    6576958293045616595,
)


def test_k8s_device_plugin_mi308_render_nodes_and_unique_ids(
    make_root: Callable[[str], Path],
) -> None:
    """ROCm/k8s-device-plugin TestRenderDevIdsFromTopology: 32 render nodes, 4 per device, 8
    unique ids (128-131 -> the first, 136-139 -> the second, ...)."""
    node = probe_files(sysfs=make_root("kfd-gfx942-mi308x-8gpu-cpx-k8sdp"), matrix=probe_matrix())
    assert (node.logical_gpu_count, node.physical_gpu_count) == (32, 8)
    expected = [f"{uid:016x}" for uid in K8S_MI308_UNIQUE for _ in range(4)]
    assert [g.unique_id for g in node.gpus] == expected


def test_k8s_device_plugin_vega10_topology_properties(make_root: Callable[[str], Path]) -> None:
    """ROCm/k8s-device-plugin TestParseTopologyProperties: node 1 has 17163091968 bytes of VRAM,
    node 2 simd_count 256 (64 CUs at 4 SIMDs per CU)."""
    node = probe_files(sysfs=make_root("kfd-gfx900-vega10-legacy-k8sdp"), matrix=probe_matrix())
    assert node.gpus[0].vram_bytes == 17163091968
    assert node.gpus[1].compute_units == 64


@pytest.mark.parametrize(
    ("tree", "devices", "partitions"),
    [
        # plugin_test.go TestCountGPUDevFromTopology: 2 GPUs in topology-parsing
        ("kfd-gfx900-vega10-legacy-k8sdp", 2, 2),
        # besteffort_policy_test.go: topo-mi210-xgmi-pcie 8 devices x 1 partition (KFD nodes 2-9)
        ("kfd-gfx90a-mi210-8gpu-k8sdp", 8, 8),
        # topo-mi300-cpx: 8 devices in CPX, KFD nodes 2-64 (63 of the 64 partitions present)
        ("kfd-gfx942-mi300x-8gpu-cpx-k8sdp", 8, 63),
    ],
)
def test_k8s_device_plugin_device_counts(
    make_root: Callable[[str], Path], tree: str, devices: int, partitions: int
) -> None:
    node = probe_files(sysfs=make_root(tree), matrix=probe_matrix())
    assert (node.physical_gpu_count, node.logical_gpu_count) == (devices, partitions)


def test_every_peer_capture_has_a_row_and_a_source() -> None:
    used = {p.resolve() for row in ROWS.values() for p in row.inputs.values()}
    files = {p.resolve() for p in PEERS.glob("*/*") if p.is_file()}
    trees = {p.resolve() for p in PEERS.glob("procfs/*") if p.is_dir()}
    assert files | trees == used
    sources = (FIXTURES / "SOURCES.md").read_text()
    for path in files | trees:
        folder = path.parent.name
        assert folder in sources and (path.stem in sources or path.name in sources), path.name
