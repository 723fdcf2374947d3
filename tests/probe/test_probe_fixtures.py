"""Every published output parses to the gfx targets and counts its source states (SOURCES.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from resolver.probe import confidence as probe_confidence
from resolver.probe import probe_files
from tests.probe_data import probe_gfx, probe_matrix

FIXTURES = Path(__file__).parent / "fixtures"

# file -> (gfx_targets, logical, physical, extra assertions on gpus[0] / node)
CASES: dict[str, tuple[tuple[str, ...], int, int, dict[str, Any]]] = {
    "rocminfo-gfx942-mi300x-4gpu-thamada.txt": (
        ("gfx942",),
        4,
        4,
        {
            "product": "Instinct MI300X",
            "compute_units": 304,
            "vram_bytes": 201310208 * 1024,
            "unique_id": "8d1457e2c20f59d2",
            "sramecc": True,
            "xnack": False,
        },
    ),
    "rocminfo-gfx906-mi50-8gpu-delaunay-regression.txt": (
        ("gfx906",),
        8,
        8,
        {"compute_units": 60, "pci_device_id": "66a1"},
    ),
    "rocminfo-gfx900-mi25-7gpu-bankh-gpucompute.txt": (("gfx900",), 7, 7, {"xnack": False}),
    "rocminfo-gfx1030-override-rx6700xt-1gpu-ega4l-vbsnn.txt": (
        ("gfx1031",),
        1,
        1,
        {"runtime_gfx": "gfx1030", "pci_device_id": "73df", "product": "Radeon RX 6700 XT"},
    ),
    "rocminfo-gfx1151-strixhalo-dkms-rocm5817.txt": (
        ("gfx1151",),
        1,
        1,
        {
            "compute_units": 40,
            "apu": True,
            "integrated": False,
            "pci_device_id": "1586",
            "unique_id": None,
        },
    ),
    "rocminfo-gfx1150-890m-npu-rocm5108.txt": (
        ("gfx1150",),
        1,
        1,
        {"compute_units": 16, "apu": True, "pci_device_id": "150e"},
    ),
    "rocminfo-gfx1200-rx9060xt-generic-name-rocm6295.txt": (
        ("gfx1200",),
        1,
        1,
        {
            "marketing_name": "AMD Radeon Graphics",
            "pci_device_id": "7590",
            "compute_units": 32,
            "unique_id": "1c5501acaf387d69",
        },
    ),
    "rocminfo-gfx1201-with-igpu-gfx1036-rocm5861.txt": (
        ("gfx1201",),
        1,
        1,
        {"product": "Radeon RX 9070 XT", "compute_units": 64, "integrated": False},
    ),
    "rocminfo-gfx1101-rx7800xt-empty-name-rocm2625.txt": (
        ("gfx1101",),
        1,
        1,
        {"marketing_name": "", "compute_units": 60},
    ),
    "rocminfo-gfx1103-780m-fragment-rocm5316.txt": (("gfx1103",), 1, 1, {"apu": True}),
    "rocminfo-gfx90a-mi250-fragment-aiter179.txt": (
        ("gfx90a",),
        1,
        1,
        {"pci_device_id": "740c", "unique_id": "124d13ccd7b050e5"},
    ),
    "rocminfo-gfx1100-rx7900xtx-fragment-ollama3158.txt": (
        ("gfx1100",),
        1,
        1,
        {"product": "Radeon RX 7900 XTX", "compute_units": 96},
    ),
    "rocminfo-flattened-gfx950-mi350x-rocm5992.txt": (
        ("gfx950",),
        1,
        1,
        {"marketing_name": "AMD Instinct MI350X", "sramecc": True, "xnack": False},
    ),
    "rocminfo-flattened-gfx1151-npu-rocm5902.txt": (
        ("gfx1151",),
        1,
        1,
        {"marketing_name": "AMD Radeon Graphics"},
    ),
    "hip-devicequery-gfx942-mi300x-4gpu-thamada.txt": (
        ("gfx942",),
        4,
        4,
        {"compute_units": 304, "sramecc": True},
    ),
    "rocm-smi-concise-gfx942-mi300x-4gpu-thamada.txt": (
        ("gfx942",),
        4,
        4,
        {"product": "Instinct MI300X", "partition": {"compute": "SPX", "memory": "NPS1"}},
    ),
    "rocm-smi-showall-gfx942-mi300x-4gpu-thamada.txt": (
        ("gfx942",),
        4,
        4,
        {"unique_id": "8d1457e2c20f59d2"},
    ),
    "rocm-smi-concise-gfx1031-rx6700xt-1gpu-ega4l-vbsnn.txt": (
        ("gfx1031",),
        1,
        1,
        {"pci_device_id": "73df", "partition": None},
    ),
    "amd-smi-static-asic-gfx942-mi308x-cpx-amdsmi-changelog.txt": (
        ("gfx942",),
        1,
        1,
        {"product": "Instinct MI308X", "compute_units": 20, "pci_device_id": "74a2"},
    ),
    # AMD's own `amd-smi static` example (4x MI300A, CPU blocks first, no TARGET_GRAPHICS_VERSION):
    # the target comes from DEVICE_ID 0x74a0, the unique_id from ASIC_SERIAL.
    "amd-smi-static-gfx942-mi300a-4gpu-amdsmi-readme.txt": (
        ("gfx942",),
        4,
        4,
        {
            "product": "Instinct MI300A",
            "pci_device_id": "74a0",
            "unique_id": "7e8f7e20764e2714",
            "vram_bytes": 64289 * 1024**2,
            "partition": {"compute": "SPX", "memory": "NPS1"},
            "pci_bdf": "0000:01:00.0",
        },
    ),
    # an AMD engineer's `amd-smi static` on an MI350X: 0x75a0 is MI350X (libdrm amdgpu.ids, IFWI
    # name)
    "amd-smi-static-gfx950-mi350x-rocmsystems2987.txt": (
        ("gfx950",),
        1,
        1,
        {
            "product": "Instinct MI350X",
            "pci_device_id": "75a0",
            "compute_units": 128,
            "pci_bdf": "0000:05:00.0",
        },
    ),
    # `amd-smi list` names no target; its UUID carries the PCI id (amdsmi_uuid_gen) and the serial
    "amd-smi-list-gfx90a-mi210-ainic-rocmsystems3654.txt": (
        ("gfx90a",),
        1,
        1,
        {
            "product": "Instinct MI210",
            "pci_device_id": "740f",
            "unique_id": "67e6b5bb3c3ce0db",
            "pci_bdf": "0000:23:00.0",
        },
    ),
    "rocm-smi-id-gfx942-mi300a-rocm4750.txt": (
        ("gfx942",),
        1,
        1,
        {
            "product": "Instinct MI300A",
            "pci_device_id": "74a0",
            "marketing_name": "AMD Instinct MI300A",
        },
    ),
    # rocm_agent_enumerator: one name per agent, gfx000 for the CPU (older ROCm only)
    "agent-enumerator-gfx942-mi300x-8gpu-iree22283.txt": (("gfx942",), 8, 8, {"gfx": "gfx942"}),
    "agent-enumerator-gfx803-gfx902-llamacpp11209.txt": (
        ("gfx803", "gfx902"),
        2,
        2,
        {"gfx": "gfx803"},
    ),
    "agent-enumerator-gfx900-rocmbuild223.txt": (("gfx900",), 1, 1, {"gfx": "gfx900"}),
    # a fragment without "Agent N" lines: chip id and Uuid are still read
    "rocminfo-gfx942-mi300x-asicrev1-fragment-rocm4414.txt": (
        ("gfx942",),
        1,
        1,
        {"product": "Instinct MI300X", "pci_device_id": "74a1", "unique_id": "8af705259683161c"},
    ),
}

SOURCE_FLAG = {
    "rocminfo": "rocminfo",
    "hip": "rocminfo",
    "rocm": "rocm_smi",
    "amd": "amd_smi",
    "agent": "agent_enumerator",
}


def _probe(name: str):
    prefix = name.split("-")[0]
    flag = SOURCE_FLAG["rocm" if name.startswith("rocm-smi") else prefix]
    return probe_files(**{flag: FIXTURES / name}, matrix=probe_matrix())


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_states_targets_and_counts(name: str) -> None:
    targets, logical, physical, expected = CASES[name]
    node = _probe(name)
    assert node.gfx_targets == targets
    assert node.logical_gpu_count == logical
    assert node.physical_gpu_count == physical
    gpu = node.to_json()["gpus"][0]
    for key, value in expected.items():
        assert gpu[key] == value, key


def test_every_output_fixture_has_a_case_or_is_an_error_or_list() -> None:
    named = {p.name for p in FIXTURES.glob("*.txt") if not p.name.startswith("rocminfo-error")}
    others = {
        "amd-smi-list-mi3xx-amdsmi-changelog.txt",
        "amd-smi-static-partition-mi308x-cpx-nps4-amdsmi-changelog.txt",
        "amd-smi-default-gfx1151-strixhalo-rocm5902.txt",
        "agent-enumerator-cpu-only-rocmbuild223.txt",
    }
    assert named - set(CASES) == others
    sources = (FIXTURES / "SOURCES.md").read_text()
    for path in FIXTURES.glob("*.txt"):
        assert path.name in sources, f"{path.name} has no source note"


def test_override_is_reported_with_physical_and_runtime_target() -> None:
    node = _probe("rocminfo-gfx1030-override-rx6700xt-1gpu-ega4l-vbsnn.txt")
    assert node.hsa_override_gfx_version == "10.3.0"
    assert [p.code for p in node.problems] == ["gfx-override"]
    assert "gfx1031" in node.problems[0].message
    assert "gfx1030" in node.problems[0].message


def test_igpu_beside_dgpu_is_listed_but_not_counted() -> None:
    node = _probe("rocminfo-gfx1201-with-igpu-gfx1036-rocm5861.txt")
    assert [(g.gfx, g.integrated) for g in node.gpus] == [("gfx1201", False), ("gfx1036", True)]
    assert node.host.get("amdgpu_module_version") == "6.16.6"
    assert "integrated-gpu-present" in [p.code for p in node.problems]


def test_npu_and_cpu_agents_never_count() -> None:
    node = _probe("rocminfo-gfx1150-890m-npu-rocm5108.txt")
    assert [g.gfx for g in node.gpus] == ["gfx1150"]
    assert node.problems == ()


def test_in_tree_driver_has_no_version_but_dkms_does() -> None:
    assert (
        _probe("rocminfo-gfx942-mi300x-4gpu-thamada.txt").host.get("amdgpu_module_version") is None
    )
    assert (
        _probe("rocminfo-gfx90a-mi250-fragment-aiter179.txt").host.get("amdgpu_module_version")
        == "6.10.5"
    )


def test_flattened_paste_says_the_count_may_be_incomplete() -> None:
    node = _probe("rocminfo-flattened-gfx950-mi350x-rocm5992.txt")
    assert "partial-input" in [p.code for p in node.problems]


@pytest.mark.parametrize(
    ("name", "code", "hint_part"),
    [
        ("rocminfo-error-eperm-rocmdocker116.txt", "kfd-permission", "usermod -aG render,video"),
        ("rocminfo-error-enomem-rocminfo41.txt", "kfd-enomem", "dmesg"),
        ("rocminfo-error-not-loaded-roct44.txt", "amdgpu-not-loaded", "modprobe amdgpu"),
    ],
)
def test_error_outputs_give_no_gpu_and_the_fix(name: str, code: str, hint_part: str) -> None:
    node = _probe(name)
    assert node.gpus == ()
    assert node.logical_gpu_count == 0
    problem = next(p for p in node.problems if p.code == code)
    assert hint_part in problem.hint
    assert node.problems[-1].code == "no-gpu"


def test_amd_smi_default_table_gives_rocm_version_but_no_target() -> None:
    node = probe_files(
        amd_smi=FIXTURES / "amd-smi-default-gfx1151-strixhalo-rocm5902.txt", matrix=probe_matrix()
    )
    assert node.rocm_version == "7.2.0"
    assert node.driver_version is None  # "amdgpu version: Linuxver": in-tree driver
    assert node.logical_gpu_count == 1
    assert node.gpus == ()
    assert "gpu-target-unknown" in [p.code for p in node.problems]


def test_amd_smi_list_counts_devices() -> None:
    node = probe_files(
        amd_smi=FIXTURES / "amd-smi-list-mi3xx-amdsmi-changelog.txt", matrix=probe_matrix()
    )
    assert node.logical_gpu_count == 2
    assert node.physical_gpu_count == 2


def test_amd_smi_driver_version_is_the_driver_sections_not_vbios_or_ifwi() -> None:
    # VBIOS VERSION: N/A and IFWI VERSION: 00154951 come before DRIVER VERSION in these outputs
    mi300a = probe_files(
        amd_smi=FIXTURES / "amd-smi-static-gfx942-mi300a-4gpu-amdsmi-readme.txt",
        matrix=probe_matrix(),
    )
    mi350x = probe_files(
        amd_smi=FIXTURES / "amd-smi-static-gfx950-mi350x-rocmsystems2987.txt", matrix=probe_matrix()
    )
    assert mi300a.host.get("amdgpu_module_version") == "6.9.0-rc5+"
    assert mi350x.host.get("amdgpu_module_version") == "6.18.3"
    assert [g.unique_id for g in mi300a.gpus] == [
        "7e8f7e20764e2714",
        "b6ae7c8cefe1f084",
        "367125d815189854",
        "f4c44c2be5e66537",
    ]


def test_amd_smi_blocks_that_are_not_gpus_are_ignored() -> None:
    # CPU: n blocks before the GPUs, an AI_NIC: n block after the GPU
    node = probe_files(
        amd_smi=FIXTURES / "amd-smi-list-gfx90a-mi210-ainic-rocmsystems3654.txt",
        matrix=probe_matrix(),
    )
    assert node.problems == ()
    assert [g.pci_bdf for g in node.gpus] == ["0000:23:00.0"]


def test_amd_smi_market_name_gives_the_target_without_a_pci_id() -> None:
    from resolver.probe import smi

    partition = (
        FIXTURES / "amd-smi-static-partition-mi308x-cpx-nps4-amdsmi-changelog.txt"
    ).read_text()
    asic = (FIXTURES / "amd-smi-static-asic-gfx942-mi308x-cpx-amdsmi-changelog.txt").read_text()
    # the --asic block without its DEVICE_ID / TARGET lines: MARKET_NAME MI308X alone names gfx942
    named_only = "\n".join(
        line for line in asic.splitlines() if "DEVICE_ID" not in line and "TARGET" not in line
    )
    assert [g.gfx for g in smi.parse_amd_smi(named_only, gfx_table=probe_gfx()).gpus] == ["gfx942"]
    # the --partition and list outputs name neither: the target stays unknown
    assert [g.gfx for g in smi.parse_amd_smi(partition, gfx_table=probe_gfx()).gpus] == [None]


def test_flattened_and_fragment_pastes_are_partial() -> None:
    node = _probe("rocminfo-gfx942-mi300x-asicrev1-fragment-rocm4414.txt")
    assert [p.code for p in node.problems] == ["partial-input"]


def test_two_amd_smi_files_combine_asic_and_partition() -> None:
    node = probe_files(
        amd_smi=[
            FIXTURES / "amd-smi-static-asic-gfx942-mi308x-cpx-amdsmi-changelog.txt",
            FIXTURES / "amd-smi-static-partition-mi308x-cpx-nps4-amdsmi-changelog.txt",
        ],
        matrix=probe_matrix(),
    )
    gpu = node.gpus[0]
    assert (gpu.gfx, gpu.compute_units, gpu.partition.compute, gpu.partition.memory) == (
        "gfx942",
        20,
        "CPX",
        "NPS4",
    )
    assert node.problems == ()


SYSFS = {
    "kfd-gfx942-mi300x-8gpu-cpx-k8sdp": (("gfx942",), 63, 8, 38, "CPX", None),
    "kfd-gfx942-mi308x-8gpu-cpx-k8sdp": (("gfx942",), 32, 8, 20, "CPX", 51539607552),
    "kfd-gfx90a-mi210-8gpu-k8sdp": (("gfx90a",), 8, 8, 104, None, None),
    "kfd-gfx900-vega10-legacy-k8sdp": (("gfx900",), 2, 2, 64, None, 17163091968),
}


@pytest.mark.parametrize("tree", sorted(SYSFS))
def test_sysfs_tree(make_root: Callable[[str], Path], tree: str) -> None:
    targets, logical, physical, cus, compute, vram = SYSFS[tree]
    node = probe_files(sysfs=make_root(tree), matrix=probe_matrix())
    assert (node.gfx_targets, node.logical_gpu_count, node.physical_gpu_count) == (
        targets,
        logical,
        physical,
    )
    gpu = node.gpus[0]
    assert gpu.compute_units == cus
    assert (gpu.partition.compute if gpu.partition else None) == compute
    assert gpu.vram_bytes == vram
    # The MI300X capture shows 63 of 64 CPX partitions: one device has 7 where its peers have 8.
    missing = ["partition-missing"] if tree == "kfd-gfx942-mi300x-8gpu-cpx-k8sdp" else []
    assert [p.code for p in node.problems] == missing


def test_sysfs_mi210_product_and_sramecc(make_root: Callable[[str], Path]) -> None:
    node = probe_files(sysfs=make_root("kfd-gfx90a-mi210-8gpu-k8sdp"), matrix=probe_matrix())
    assert {g.product for g in node.gpus} == {"Instinct MI210"}
    assert all(g.sramecc for g in node.gpus)
    assert len({g.unique_id for g in node.gpus}) == 8


def test_sysfs_mi300x_cpx_is_told_from_mi300a_by_its_cu_total(
    make_root: Callable[[str], Path],
) -> None:
    # KFD gives 0x74a1 without a revision (GPUOpen: rev 00 MI300X, rev 01 MI300A); 8 partitions of
    # 38 CUs add up to MI300X's 304 (MI300A: 228). The device missing a partition (7 x 38) takes
    # the product its siblings resolved to.
    node = probe_files(sysfs=make_root("kfd-gfx942-mi300x-8gpu-cpx-k8sdp"), matrix=probe_matrix())
    assert {g.product for g in node.gpus} == {"Instinct MI300X"}


def test_pci_id_shared_by_products_is_narrowed_by_revision_then_cus() -> None:
    from resolver.probe import gfx

    assert gfx.product_for_pci(probe_gfx(), "74a1") == "Instinct MI300X / Instinct MI300A"
    assert gfx.product_for_pci(probe_gfx(), "74a1", compute_units=304) == "Instinct MI300X"
    assert gfx.product_for_pci(probe_gfx(), "74a1", compute_units=228) == "Instinct MI300A"
    assert (
        gfx.product_for_pci(probe_gfx(), "74a1", compute_units=38)
        == "Instinct MI300X / Instinct MI300A"
    )
    # 66a1: rev 02 MI60 / MI50 (libdrm), rev 06 Radeon PRO VII; 60 CUs rule out MI60 only
    assert (
        gfx.product_for_pci(probe_gfx(), "66a1", compute_units=60)
        == "Instinct MI50 / Radeon PRO VII"
    )
    assert gfx.product_for_pci(probe_gfx(), "66a1", "02", compute_units=64) == "Instinct MI60"
    assert gfx.product_for_pci(probe_gfx(), "66a1", "06") == "Radeon PRO VII"


def test_mi50_node_without_revision_stays_ambiguous() -> None:
    node = _probe("rocminfo-gfx906-mi50-8gpu-delaunay-regression.txt")
    assert {g.product for g in node.gpus} == {"Instinct MI50 / Radeon PRO VII"}


def test_igpu_pci_id_is_known() -> None:
    node = _probe("rocminfo-gfx1201-with-igpu-gfx1036-rocm5861.txt")
    igpu = node.gpus[1]
    assert (igpu.pci_device_id, igpu.product) == ("13c0", "Radeon Graphics (gfx1036 iGPU)")


def test_sysfs_pci_partition_files_win_over_inference(make_root: Callable[[str], Path]) -> None:
    root = make_root("kfd-gfx942-mi308x-8gpu-cpx-k8sdp")
    node = probe_files(sysfs=root, matrix=probe_matrix())
    bdf = node.gpus[0].pci_bdf
    assert bdf is not None
    pci = root / "sys/bus/pci/devices" / (bdf.rsplit(".", 1)[0] + ".0")
    pci.mkdir(parents=True)
    (pci / "current_compute_partition").write_text("CPX\n")
    (pci / "current_memory_partition").write_text("NPS4\n")
    gpu = probe_files(sysfs=root, matrix=probe_matrix()).gpus[0]
    assert (gpu.partition.compute, gpu.partition.memory) == ("CPX", "NPS4")


def test_sysfs_driver_version_and_rocminfo_merge(make_root: Callable[[str], Path]) -> None:
    root = make_root("kfd-gfx942-mi308x-8gpu-cpx-k8sdp")
    (root / "sys/module/amdgpu").mkdir(parents=True)
    (root / "sys/module/amdgpu/version").write_text("6.12.12\n")
    node = probe_files(
        sysfs=root,
        amd_smi=FIXTURES / "amd-smi-static-asic-gfx942-mi308x-cpx-amdsmi-changelog.txt",
        matrix=probe_matrix(),
    )
    assert node.host.get("amdgpu_module_version") == "6.12.12"
    assert node.host["driver_kind"] == "dkms"
    # amd-smi shows one GPU of the 32: the counts disagree, sysfs wins
    assert node.logical_gpu_count == 32
    assert "gpu-count-differs" in [p.code for p in node.problems]


def test_sysfs_wins_and_disagreement_is_a_problem(make_root: Callable[[str], Path]) -> None:
    root = make_root("kfd-gfx90a-mi210-8gpu-k8sdp")
    node = probe_files(
        sysfs=root,
        rocminfo=FIXTURES / "rocminfo-gfx942-mi300x-4gpu-thamada.txt",
        matrix=probe_matrix(),
    )
    assert node.gfx_targets == ("gfx90a",)
    assert "gpu-count-differs" in [p.code for p in node.problems]
    # A cut paste says nothing about the count: it cannot disagree with the whole tree.
    cut = probe_files(
        sysfs=root,
        rocminfo=FIXTURES / "rocminfo-gfx1100-rx7900xtx-fragment-ollama3158.txt",
        matrix=probe_matrix(),
    )
    codes = [p.code for p in cut.problems]
    assert "sources-disagree" in codes and "gpu-count-differs" not in codes


@pytest.mark.parametrize(
    "name",
    [
        "rocminfo-gfx90a-mi250-fragment-aiter179.txt",  # starts at Agent 16 after "..."
        "rocminfo-gfx1100-rx7900xtx-fragment-ollama3158.txt",  # starts at Agent 3
        "rocminfo-gfx1101-rx7800xt-empty-name-rocm2625.txt",  # starts at Agent 2
    ],
)
def test_a_cut_paste_is_partial_not_the_whole_node(name: str) -> None:
    """issue 19: a paste whose agents do not start at 1 (or that elides some with "...") was
    counted as the whole node (1 GPU); it is partial input, a lower bound."""
    node = probe_files(rocminfo=FIXTURES / name, matrix=probe_matrix())
    assert "partial-input" in [p.code for p in node.problems]


def test_a_whole_output_is_not_partial() -> None:
    for name in (
        "rocminfo-gfx942-mi300x-4gpu-thamada.txt",
        "rocminfo-gfx900-mi25-7gpu-bankh-gpucompute.txt",
    ):
        node = probe_files(rocminfo=FIXTURES / name, matrix=probe_matrix())
        assert "partial-input" not in [p.code for p in node.problems], name


def test_module_version_is_kept_apart_from_the_driver_release() -> None:
    """A kernel module version no data pairs with a series (6.18.3) is not an AMD GPU Driver
    release: it is kept as a host fact, the release stays unknown, and a problem says how to give
    it."""
    node = _probe("amd-smi-static-gfx950-mi350x-rocmsystems2987.txt")
    assert node.driver_version is None and node.host["amdgpu_module_version"] == "6.18.3"
    problem = next(p for p in node.problems if p.code == "driver-release-unknown")
    assert "6.18.3" in problem.message and "--driver" in problem.hint
    assert probe_confidence(node)["driver_version"] == "unknown"


def test_a_paired_module_version_gives_the_series_marked_inferred() -> None:
    """DKMS 6.16.6 (ROCm/ROCm#5861) is 30.20 by AMD's package versions: the series is used, the
    confidence says inferred, and the text says where it came from."""
    from resolver.cli.probe import render
    from resolver.data import matrix
    from tests.conftest import LIVE_MATRIX

    node = probe_files(
        rocminfo=FIXTURES / "rocminfo-gfx1201-with-igpu-gfx1036-rocm5861.txt",
        matrix=matrix.load_dir(LIVE_MATRIX),
    )
    assert node.driver_version == "30.20" and node.host["amdgpu_module_version"] == "6.16.6"
    assert node.host["driver_release_confidence"] == "inferred"
    assert "driver-release-unknown" not in [p.code for p in node.problems]
    assert probe_confidence(node) == {
        "gpu_count": "exact",
        "gfx_targets": "exact",
        "driver_version": "inferred",
    }
    text = render(node)
    assert (
        "driver 30.20 (from amdgpu module 6.16.6, which the data pairs with this series, inferred)"
        in text
    )
    assert "read from: rocminfo (gfx, name, PCI id, CUs, VRAM, unique id)" in text


def test_a_cut_paste_says_its_count_is_a_floor() -> None:
    node = _probe("rocminfo-gfx1100-rx7900xtx-fragment-ollama3158.txt")
    assert probe_confidence(node)["gpu_count"] == "at_least"


@pytest.mark.parametrize("sub", ["", "topology"])
def test_sysfs_accepts_a_bare_copy_of_the_kfd_directory(sub: str) -> None:
    """`cp -r /sys/class/kfd/kfd copy` (or just its topology/) is read like a whole tree."""
    root = FIXTURES / "sysfs" / "kfd-gfx942-mi300x-8gpu-cpx-k8sdp"
    node = probe_files(sysfs=root / sub if sub else root, matrix=probe_matrix())
    assert (node.gfx_targets, node.logical_gpu_count, node.physical_gpu_count) == (
        ("gfx942",),
        63,
        8,
    )


def test_agent_enumerator_with_only_the_cpu_is_no_gpu() -> None:
    node = _probe("agent-enumerator-cpu-only-rocmbuild223.txt")
    assert node.logical_gpu_count == 0
    codes = [p.code for p in node.problems]
    assert codes == ["no-gpu-agent-enumerator", "no-gpu"]
