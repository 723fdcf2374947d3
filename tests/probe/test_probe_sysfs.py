"""DRM sysfs beside the KFD topology, and the layouts --sysfs accepts."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from resolver.probe import probe_files, sysfs
from tests.probe_data import probe_gfx, probe_matrix

FIXTURES = Path(__file__).parent / "fixtures"


def _drm_card(root: Path, index: int, bdf: str, **attrs: str) -> None:
    device = root / "sys/devices/pci0000:00" / bdf
    device.mkdir(parents=True)
    for name, value in attrs.items():
        (device / name).write_text(value + "\n")
    (device / "uevent").write_text(f"DRIVER=amdgpu\nPCI_SLOT_NAME={bdf}\n")
    card = root / f"sys/class/drm/card{index}"
    card.mkdir(parents=True)
    (card / "device").symlink_to(device, target_is_directory=True)


def test_drm_fills_vram_kfd_leaves_out(make_root: Callable[[str], Path]) -> None:
    """The MI210 capture has no mem_banks: VRAM comes from mem_info_vram_total, matched by BDF."""
    root = make_root("kfd-gfx90a-mi210-8gpu-k8sdp")
    before = probe_files(sysfs=root, matrix=probe_matrix())
    assert all(g.vram_bytes is None for g in before.gpus)
    for index, gpu in enumerate(before.gpus):
        assert gpu.pci_bdf is not None
        _drm_card(
            root,
            index,
            gpu.pci_bdf,
            vendor="0x1002",
            device="0x740f",
            mem_info_vram_total=str(64 * 1024**3),
            mem_info_vram_vendor="samsung",
            board_info="type : oam",
        )
    after = probe_files(sysfs=root, matrix=probe_matrix())
    assert [g.vram_bytes for g in after.gpus] == [64 * 1024**3] * 8
    assert after.host["gpu_sources"][0]["gfx"] == "sysfs"
    assert not any(g.apu for g in after.gpus)


def test_drm_integrated_by_memory_rule(tmp_path: Path) -> None:
    root = tmp_path
    _drm_card(
        root,
        0,
        "0000:c3:00.0",
        vendor="0x1002",
        device="0x1586",
        mem_info_vram_total=str(512 * 1024**2),
        mem_info_gtt_total=str(64 * 1024**3),
    )
    device = sysfs.drm_devices(root)[0]
    assert sysfs.integrated_by_memory(device) is True
    node = probe_files(sysfs=root, matrix=probe_matrix())
    assert node.gfx_targets == ("gfx1151",)
    assert node.gpus[0].apu


def test_sysfs_accepts_a_copy_of_sys_itself(tmp_path: Path) -> None:
    """ollama's tests lay a copy out as /sys itself (class/kfd/kfd/topology/nodes at the top)."""
    copy = tmp_path / "sys-copy"
    shutil.copytree(FIXTURES / "sysfs/kfd-gfx90a-mi210-8gpu-k8sdp", copy / "class/kfd/kfd")
    (copy / "module/amdgpu").mkdir(parents=True)
    (copy / "module/amdgpu/version").write_text("6.8.5\n")
    node = probe_files(sysfs=copy, matrix=probe_matrix())
    assert (node.gfx_targets, node.logical_gpu_count) == (("gfx90a",), 8)
    assert node.host["amdgpu_module_version"] == "6.8.5"
    assert "no-kfd-topology" not in [p.code for p in node.problems]


def test_sysfs_root_with_drm_only_and_a_foreign_card() -> None:
    tree = FIXTURES / "peers/procfs/drm-gfx900-vega10-i915"
    for root in (tree, tree / "sys"):
        node = probe_files(sysfs=root, matrix=probe_matrix())
        assert node.gfx_targets == ("gfx900",)
        assert [d["vendor"] for d in node.host["other_devices"]] == ["intel"]


def test_nothing_under_the_root_says_where_it_looked(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    node = probe_files(sysfs=tmp_path, matrix=probe_matrix())
    problem = next(p for p in node.problems if p.code == "no-kfd-topology")
    assert "sys/class/drm" in problem.message


def test_broken_and_looping_links_in_a_copied_tree_are_no_device(tmp_path: Path) -> None:
    card = tmp_path / "sys/class/drm/card0"
    card.mkdir(parents=True)
    (card / "device").symlink_to(card / "device")  # a loop
    dangling = tmp_path / "sys/class/drm/card1"
    dangling.mkdir()
    (dangling / "device").symlink_to(tmp_path / "nowhere")
    assert sysfs.drm_devices(tmp_path) == []
    assert sysfs.parse(tmp_path, gfx_table=probe_gfx()).gpus == []


def test_a_hygon_kfd_node_is_found_but_not_resolved(tmp_path: Path) -> None:
    """KFD lists a Hygon DCU (vendor 0x1d94) like a GPU: it is named, not dropped as 'no GPU'."""
    node_dir = tmp_path / "sys/class/kfd/kfd/topology/nodes/1"
    node_dir.mkdir(parents=True)
    (node_dir / "gpu_id").write_text("4660\n")
    (node_dir / "properties").write_text(
        "simd_count 48\nsimd_per_cu 4\nvendor_id 7572\ndevice_id 25104\n"
        "gfx_target_version 90208\nunique_id 8142783590029082721\n"
    )
    node = probe_files(sysfs=tmp_path, matrix=probe_matrix())
    assert node.logical_gpu_count == 0
    device = node.host["other_devices"][0]
    assert (device["vendor"], device["kind"], device["gfx"], device["compute_units"]) == (
        "hygon",
        "DCU",
        "gfx928",
        12,
    )
    assert device["unique_id"] == "7100fa8866904061"
    assert node.problems[0].code == "not-an-amd-gpu"
