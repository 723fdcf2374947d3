"""Merging sources: a second source never erases the first (issue 11, item 1); disagreement is a
problem; every field says which tool gave it (issue 12)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from resolver.probe import probe_files
from tests.probe_data import probe_matrix

FIXTURES = Path(__file__).parent / "fixtures"
MI300X_ROCMINFO = FIXTURES / "rocminfo-gfx942-mi300x-4gpu-thamada.txt"
# The BDFs of that rocminfo's four GPUs (BDFID 9728, 17920, 25856, 34048), in `amd-smi list`'s
# layout (ROCm/amdsmi CHANGELOG example): the list names devices, never their target.
BDFS = ("0000:26:00.0", "0000:46:00.0", "0000:65:00.0", "0000:85:00.0")


def _amd_smi_list(tmp_path: Path, bdfs: tuple[str, ...]) -> Path:
    blocks = [
        f"GPU: {i}\n    BDF: {bdf}\n    UUID: <redacted>\n    KFD_ID: {4000 + i}\n"
        f"    NODE_ID: {i + 2}\n    PARTITION_ID: 0\n"
        for i, bdf in enumerate(bdfs)
    ]
    path = tmp_path / "amd-smi-list.txt"
    path.write_text("\n".join(blocks))
    return path


def test_amd_smi_list_beside_rocminfo_keeps_the_gpus(tmp_path: Path) -> None:
    node = probe_files(
        rocminfo=MI300X_ROCMINFO, amd_smi=_amd_smi_list(tmp_path, BDFS), matrix=probe_matrix()
    )
    assert node.gfx_targets == ("gfx942",)
    assert (node.logical_gpu_count, node.physical_gpu_count) == (4, 4)
    assert [g.pci_bdf for g in node.gpus] == list(BDFS)
    codes = [p.code for p in node.problems]
    assert "no-gpu" not in codes and "sources-disagree" not in codes
    assert node.host["gpu_sources"][0]["gfx"] == "rocminfo"
    assert node.host["gpu_sources"][0]["bdf"] == "amd-smi"


def test_disagreeing_counts_are_a_problem_not_a_wipe(tmp_path: Path) -> None:
    """amd-smi lists two of the four GPUs rocminfo sees (by PCI address): the other two are kept
    (they have their own addresses), and the disagreement is reported."""
    node = probe_files(
        rocminfo=MI300X_ROCMINFO, amd_smi=_amd_smi_list(tmp_path, BDFS[:2]), matrix=probe_matrix()
    )
    assert node.gfx_targets == ("gfx942",)
    assert node.logical_gpu_count == 4
    assert [g.pci_bdf for g in node.gpus] == list(BDFS)
    assert "gpu-count-differs" in [p.code for p in node.problems]
    assert [s["bdf"] for s in node.host["gpu_sources"]] == [
        "amd-smi",
        "amd-smi",
        "rocminfo",
        "rocminfo",
    ]


def test_the_kernel_view_is_never_added_to(make_root: Callable[[str], Path]) -> None:
    """sysfs lists every GPU the kernel has: a tool's device that sysfs does not know is a
    disagreement, not one more GPU."""
    node = probe_files(
        sysfs=make_root("kfd-gfx90a-mi210-8gpu-k8sdp"),
        rocminfo=MI300X_ROCMINFO,
        matrix=probe_matrix(),
    )
    assert node.logical_gpu_count == 8
    assert node.gfx_targets == ("gfx90a",)
    assert "gpu-count-differs" in [p.code for p in node.problems]


def test_rocm_smi_and_rocminfo_name_where_each_fact_came_from() -> None:
    node = probe_files(
        rocminfo=FIXTURES / "peers/gpustack/amd-gpu-6.2.4-rocminfo.txt",
        rocm_smi=FIXTURES / "peers/gpustack/amd-gpu-6.2.4-rocm-smi.json",
        matrix=probe_matrix(),
    )
    sources = node.host["gpu_sources"][0]
    assert sources["vram_bytes"] == "rocm-smi"
    assert sources["compute_units"] == "rocminfo"
    assert sources["marketing_name"] == "rocminfo"
    # rocm-smi's misprint is corrected and said so
    assert "smi-misprinted-target" in [p.code for p in node.problems]


def test_strix_halo_amd_smi_table_beside_rocminfo_keeps_the_gpu() -> None:
    """The second case of issue 11, item 1: one user's `amd-smi` table and `rocminfo | grep`."""
    node = probe_files(
        rocminfo=FIXTURES / "rocminfo-flattened-gfx1151-npu-rocm5902.txt",
        amd_smi=FIXTURES / "amd-smi-default-gfx1151-strixhalo-rocm5902.txt",
        matrix=probe_matrix(),
    )
    assert (node.gfx_targets, node.logical_gpu_count) == (("gfx1151",), 1)
    assert node.gpus[0].pci_bdf == "0000:c5:00.0"
    assert node.rocm_version == "7.2.0"
    assert "no-gpu" not in [p.code for p in node.problems]
