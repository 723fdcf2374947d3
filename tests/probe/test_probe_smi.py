"""rocm-smi: text and --json, every key spelling the peers' captures show, misprinted targets,
and devices kept (with their VRAM) when no target is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from resolver.probe import probe_files, smi
from tests.probe_data import probe_gfx, probe_matrix

FIXTURES = Path(__file__).parent / "fixtures"


def test_json_is_told_from_text_by_content() -> None:
    text = (FIXTURES / "peers/telegraf/mi100_rocm602.json").read_text()
    view = smi.parse_rocm_smi(text, gfx_table=probe_gfx())
    assert len(view.gpus) == 4
    assert view.driver_version == "6.3.6"  # the "system" entry


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (
            {"GPU ID": "0x738c", "Unique ID": "N/A", "VRAM Total Memory (B)": "34342961152"},
            ("738c", None, 34342961152, "gfx908"),
        ),
        (
            {"Device ID": "0x740f", "Unique ID": "0x79ccd55167a2124a", "GFX Version": "gfx9010"},
            ("740f", "79ccd55167a2124a", None, "gfx90a"),
        ),
        (
            {"Device ID": "0x747e", "GFX Version": "gfx11001", "vram Total Memory (MiB)": "16368"},
            ("747e", None, 16368 * 1024**2, "gfx1101"),
        ),
        (
            {"Card series": "0x1002", "Card model": "0x1002", "GPU ID": "0x73df"},
            ("73df", None, None, "gfx1031"),
        ),
        (
            {"Device ID": "0x74a1", "Compute Partition": "CPX", "Memory Partition": "NPS4"},
            ("74a1", None, None, "gfx942"),
        ),
    ],
)
def test_json_key_variants(keys: dict[str, str], expected: tuple[object, ...]) -> None:
    view = smi.parse_rocm_smi(
        json.dumps({"card0": keys, "system": {"Driver version": "6.8.5"}}), gfx_table=probe_gfx()
    )
    gpu = view.gpus[0]
    assert (gpu.pci_device_id, gpu.unique_id, gpu.vram_bytes, gpu.gfx) == expected
    assert gpu.marketing_name is None or not gpu.marketing_name.startswith("0x")


def test_json_partitions() -> None:
    view = smi.parse_rocm_smi(
        json.dumps(
            {
                "card0": {
                    "Device ID": "0x74a1",
                    "Compute Partition": "CPX",
                    "Memory Partition": "NPS4",
                }
            }
        ),
        gfx_table=probe_gfx(),
    )
    assert (view.gpus[0].compute_partition, view.gpus[0].memory_partition) == ("CPX", "NPS4")


def test_text_misprint_is_corrected_and_said(tmp_path: Path) -> None:
    """ROCm 6's rocm-smi prints MI250's gfx90a as gfx9010 (issue 12)."""
    path = tmp_path / "rocm-smi.txt"
    path.write_text(
        "GPU[0]\t\t: Device ID: 0x7408\nGPU[0]\t\t: GFX Version: \t\tgfx9010\n"
        "GPU[0]\t\t: VRAM Total Memory (B): 68702699520\n"
    )
    node = probe_files(rocm_smi=path, matrix=probe_matrix())
    assert node.gfx_targets == ("gfx90a",)
    assert node.gpus[0].vram_bytes == 68702699520
    problem = next(p for p in node.problems if p.code == "smi-misprinted-target")
    assert "gfx9010" in problem.message and "gfx90a" in problem.message


def test_vram_is_kept_when_no_target_is_named(tmp_path: Path) -> None:
    """A device no source names a target for still counts, keeps its VRAM, and the node is not
    called GPU-less."""
    path = tmp_path / "rocm-smi.txt"
    path.write_text(
        "GPU[0]\t\t: Device ID: 0x6861\nGPU[0]\t\t: VRAM Total Memory (B): 17163091968\n"
    )
    node = probe_files(rocm_smi=path, matrix=probe_matrix())
    assert node.logical_gpu_count == 1
    assert node.gpus == ()
    assert node.host["unidentified_gpus"][0]["vram_bytes"] == 17163091968
    codes = [p.code for p in node.problems]
    assert "gpu-target-unknown" in codes and "no-gpu" not in codes


def test_hygon_dcu_is_found_but_not_resolved() -> None:
    node = probe_files(
        rocm_smi=FIXTURES / "peers/gpustack/hygon-gpu-24.04.3-rocm-smi.json", matrix=probe_matrix()
    )
    assert node.logical_gpu_count == 0
    assert node.host["other_devices"][0]["vendor"] == "hygon"
    assert node.problems[0].code == "not-an-amd-gpu"
    assert "Hygon" in node.problems[0].message
    assert not any("modprobe" in p.hint for p in node.problems)


@pytest.mark.parametrize("text", ["{", "{}", '{"card0": 3}', '{"card0": {"GPU ID": []}}', "[]"])
def test_broken_json_is_no_gpu_not_an_error(text: str) -> None:
    view = smi.parse_rocm_smi(text, gfx_table=probe_gfx())
    assert view.gpus == []
    assert view.problems


def test_each_flag_reads_the_other_tools_format_too() -> None:
    """A rocm-smi JSON given to --amd-smi (issue 12: it gave one logical GPU, none listed) and an
    amd-smi output given to --rocm-smi are read as what they are."""
    rocm = FIXTURES / "peers/telegraf/mi100_rocm602.json"
    amd = FIXTURES / "amd-smi-static-gfx942-mi300a-4gpu-amdsmi-readme.txt"
    node = probe_files(amd_smi=rocm, matrix=probe_matrix())
    assert (node.gfx_targets, node.logical_gpu_count, len(node.gpus)) == (("gfx908",), 4, 4)
    node = probe_files(rocm_smi=amd, matrix=probe_matrix())
    assert (node.gfx_targets, node.logical_gpu_count) == (("gfx942",), 4)
    assert (
        smi.parse_rocm_smi(
            '[{"gpu": 0, "asic": {"market_name": "MI300A"}}]', gfx_table=probe_gfx()
        ).source
        == "amd-smi"
    )
