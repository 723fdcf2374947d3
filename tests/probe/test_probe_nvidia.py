"""NVIDIA GPUs in the probe (issue 26, first step): nvidia-smi's XML and CSV as recorded on the
lent H200 machine (fixtures/nvidia, SOURCES.md), saved or live through a stand-in nvidia-smi that
prints those recordings; nothing here plans for NVIDIA yet."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resolver.probe import nvidia, probe_files, probe_live
from tests.helpers import run_cli
from tests.probe_data import probe_matrix

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia"
XML = FIXTURES / "nvidia-smi-q-x-h200.xml"
CSV = FIXTURES / "nvidia-smi-query-h200.csv"
SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "probe.schema.json").read_text())


def test_the_xml_names_driver_cuda_and_the_gpu() -> None:
    reading = nvidia.parse_xml(XML.read_text())
    assert reading is not None
    assert (reading.driver, reading.cuda) == ("580.159.04", "13.0")
    (gpu,) = reading.gpus
    assert gpu["name"] == "NVIDIA H200" and gpu["architecture"] == "Hopper"
    assert gpu["pci_device_id"] == "2335" and gpu["pci_bdf"] == "0000:00:06.0"
    assert gpu["vram_bytes"] == 143771 * 1024 * 1024 and gpu["mig"] is False
    assert gpu["compute_capability"] is None  # the XML does not carry it


def test_the_csv_gives_the_compute_capability_and_both_merge_by_bus_id() -> None:
    csv = nvidia.parse_csv(CSV.read_text())
    assert csv is not None and csv.gpus[0]["compute_capability"] == "9.0"
    merged = nvidia.merge([nvidia.parse_xml(XML.read_text()), csv])  # type: ignore[list-item]
    assert merged is not None
    (gpu,) = merged.gpus
    assert gpu["compute_capability"] == "9.0" and gpu["architecture"] == "Hopper"
    assert merged.sources == ["nvidia-smi -q -x", "nvidia-smi --query-gpu"]


def test_saved_outputs_make_a_node_that_says_what_is_there() -> None:
    node = probe_files(nvidia_smi=[XML, CSV], matrix=probe_matrix())
    assert node.gpus == () and node.host["nvidia"]["cuda"] == "13.0"
    # issue 38: one NVIDIA GPU, counted and attributed; not a problem of the node
    assert node.problems == ()
    data = node.to_json()
    assert (data["physical_gpu_count"], data["logical_gpu_count"]) == (1, 1)
    assert data["gpu_vendor"] == "nvidia"
    import jsonschema

    jsonschema.validate(json.loads(json.dumps({"schema_version": 1, **node.to_json()})), SCHEMA)


def test_the_live_probe_asks_nvidia_smi_and_never_advises_amdgpu(tmp_path: Path) -> None:
    """The live path on a machine like the H200 one: no AMD GPU, nvidia-smi on PATH (a stand-in
    that prints the recorded outputs)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "nvidia-smi"
    tool.write_text(
        "#!/bin/sh\n"
        f'case "$1" in -q) exec cat {XML} ;; --query-gpu=*) exec cat {CSV} ;; esac\nexit 6\n'
    )
    tool.chmod(0o755)
    root = tmp_path / "root"
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n"
    )
    node = probe_live(
        root=root, env={"PATH": f"{bin_dir}:{os.environ['PATH']}"}, matrix=probe_matrix()
    )
    assert node.host["nvidia"] == {
        "driver": "580.159.04",
        "cuda": "13.0",
        "sources": ["nvidia-smi -q -x", "nvidia-smi --query-gpu"],
    }
    (gpu,) = [d for d in node.host["other_devices"] if d["vendor"] == "nvidia"]
    assert gpu["compute_capability"] == "9.0"
    # issue 38: an NVIDIA node is a node: its GPUs counted, its vendor said, no problem raised
    assert (node.physical_gpu_count, node.logical_gpu_count, node.gpu_vendor) == (1, 1, "nvidia")
    assert "not-an-amd-gpu" not in [p.code for p in node.problems]
    for problem in node.problems:
        assert "modprobe amdgpu" not in problem.hint, problem


def test_cli_text_and_bad_input() -> None:
    result = run_cli("probe", "--nvidia-smi", str(XML), "--nvidia-smi", str(CSV))
    assert result.exit_code == 0
    assert "NVIDIA driver 580.159.04, supports CUDA 13.0" in result.stdout
    bad = run_cli("probe", "--nvidia-smi", str(FIXTURES / "host-h200.txt"))
    assert bad.exit_code == 2
    assert bad.stderr.startswith("error: --nvidia-smi ") and "\nhint: " in bad.stderr


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=400))
def test_any_text_parses_or_is_refused_without_raising(text: str) -> None:
    for parse in (nvidia.parse, nvidia.parse_csv):
        reading = parse(text)
        if reading is not None:
            for gpu in reading.gpus:
                for value in gpu.values():  # nothing kept that a pattern did not accept
                    assert not isinstance(value, str) or value.isprintable()


@pytest.mark.parametrize(
    "xml",
    [
        (
            '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]>'
            "<nvidia_smi_log>&a;</nvidia_smi_log>"
        ),
        "<nvidia_smi_log><gpu><product_name>H200\x1b[31m</product_name></gpu></nvidia_smi_log>",
        "<nvidia_smi_log><driver_version>5; rm -rf /</driver_version></nvidia_smi_log>",
    ],
)
def test_hostile_xml_is_refused_or_its_values_dropped(xml: str) -> None:
    reading = nvidia.parse_xml(xml)
    if reading is not None:
        assert reading.driver is None
        assert all(g["name"] is None for g in reading.gpus)


def test_the_live_probe_on_the_h200_machine_reads_back() -> None:
    """What the live path wrote on the lent H200 (fixtures/nvidia/probe-live-h200.json): valid
    against the schema, and read back by --node as the node it describes."""
    import jsonschema

    from resolver.data.node import from_json

    data = json.loads((FIXTURES / "probe-live-h200.json").read_text())
    jsonschema.validate(data, SCHEMA)
    assert data["host"]["nvidia"]["cuda"] == "13.0"
    (gpu,) = [d for d in data["host"]["other_devices"] if d["vendor"] == "nvidia"]
    assert (gpu["name"], gpu["compute_capability"], gpu["mig"]) == ("NVIDIA H200", "9.0", False)
    node = from_json(data, where="probe-live-h200.json")
    # written before issue 38 (0 GPUs, not-an-amd-gpu): read back as the 1-GPU NVIDIA node it is
    assert node.gpus == () and (node.logical_gpu_count, node.gpu_vendor) == (1, "nvidia")
    assert "not-an-amd-gpu" not in [p.code for p in node.problems]


TABLE = FIXTURES / "nvidia-smi-h200.txt"


def test_the_plain_table_is_read_and_the_data_gives_the_compute_capability() -> None:
    """issue 38: plain `nvidia-smi` (the table most people paste) is an nvidia-smi output: the
    driver, the CUDA it supports and each GPU; the compute capability it never prints comes from
    nvidia-gpus.toml by product name, and says so."""
    for path in (TABLE, FIXTURES / "nvidia-smi-h200-20261202.txt"):
        reading = nvidia.parse(path.read_text())
        assert reading is not None and reading.sources == ["nvidia-smi"]
        assert (reading.driver, reading.cuda) == ("580.159.04", "13.0")
        (gpu,) = reading.gpus
        assert (gpu["name"], gpu["pci_bdf"], gpu["mig"]) == ("NVIDIA H200", "0000:00:06.0", False)
        assert gpu["vram_bytes"] == 143771 * 1024 * 1024 and gpu["compute_capability"] is None
    node = probe_files(nvidia_smi=TABLE, matrix=probe_matrix())
    (gpu,) = node.nvidia_gpus
    assert (gpu["compute_capability"], gpu["compute_capability_source"]) == (
        "9.0",
        "nvidia-gpus.toml",
    )


def test_the_xml_alone_gets_the_compute_capability_from_the_pci_id() -> None:
    """issue 38: the XML prints the PCI device id (0x2335), not the capability: the probe fills
    it from nvidia-gpus.toml; nvidia-smi's own value, where the CSV gives it, wins."""
    node = probe_files(nvidia_smi=XML, matrix=probe_matrix())
    (gpu,) = node.nvidia_gpus
    assert (gpu["compute_capability"], gpu["compute_capability_source"]) == (
        "9.0",
        "nvidia-gpus.toml",
    )
    both = probe_files(nvidia_smi=[XML, CSV], matrix=probe_matrix())
    assert both.nvidia_gpus[0]["compute_capability_source"] == "nvidia-smi"
    result = run_cli("probe", "--nvidia-smi", str(XML), "--json")
    assert result.exit_code == 0
    jsonschema_validate(json.loads(result.stdout))


def jsonschema_validate(data: object) -> None:
    import jsonschema

    jsonschema.validate(data, SCHEMA)


def test_a_table_of_several_gpus_lists_each_and_an_unknown_one_stays_unknown() -> None:
    """Two GPU blocks (the recorded one and a copy on another bus, named as a GPU the data does
    not list): two GPUs; the unknown product gets no capability, and no source."""
    text = TABLE.read_text()
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "NVIDIA H200" in line)
    block = lines[start : start + 3]
    other = [
        block[0]
        .replace("   0  NVIDIA H200   ", "   1  NVIDIA X9999   ")
        .replace("00:06.0", "00:07.0"),
        *block[1:],
    ]
    two = "\n".join([*lines[: start + 3], lines[start + 3], *other, *lines[start + 3 :]])
    reading = nvidia.parse(two)
    assert reading is not None
    assert [g["pci_bdf"] for g in reading.gpus] == ["0000:00:06.0", "0000:00:07.0"]
    nvidia.fill_capabilities(
        reading.gpus, lambda pci, name: "9.0" if name == "NVIDIA H200" else None
    )
    assert [g["compute_capability"] for g in reading.gpus] == ["9.0", None]
    assert [g["compute_capability_source"] for g in reading.gpus] == ["nvidia-gpus.toml", None]


def test_the_issue_38_live_run_on_the_h200_reads_back_the_same() -> None:
    """What the live path wrote on a lent H200 with issue 38's code (fixtures/nvidia/*-38.*):
    an NVIDIA node of one GPU with no problem, and check's answer there is the one this tree
    gives for that report."""
    import jsonschema

    from resolver.data import matrix
    from resolver.data.node import from_json
    from resolver.solve import Request, solve

    data = json.loads((FIXTURES / "probe-live-h200-38.json").read_text())
    jsonschema.validate(data, SCHEMA)
    assert (data["physical_gpu_count"], data["gpu_vendor"], data["problems"]) == (1, "nvidia", [])
    (gpu,) = data["host"]["other_devices"]
    assert (gpu["compute_capability"], gpu["compute_capability_source"]) == ("9.0", "nvidia-smi")
    live = json.loads((FIXTURES / "check-live-h200-38.json").read_text())
    d = solve(matrix.load(), from_json(data, where="probe-live-h200-38.json"), Request())
    assert d.plan is not None
    assert (live["verdict"], live["plan"]["label"]) == (d.verdict, d.plan.candidate.label)
    assert "Because ," not in (FIXTURES / "check-live-h200-38.txt").read_text()


def test_a_table_of_an_a100_gets_its_capability_by_name() -> None:
    """The table names an A100 as nvidia-smi does ("NVIDIA A100-SXM4-80GB"): the data's NVIDIA
    A100 (8.0) by name; a name the data does not list stays unknown."""
    text = TABLE.read_text().replace("NVIDIA H200       ", "NVIDIA A100-SXM4-80GB")
    reading = nvidia.parse(text)
    assert reading is not None and reading.gpus[0]["name"] == "NVIDIA A100-SXM4-80GB"
    from resolver.data import matrix
    from resolver.probe import _known_capability
    from tests.conftest import LIVE_MATRIX

    known = _known_capability(matrix.load_dir(LIVE_MATRIX))
    assert known(None, "NVIDIA A100-SXM4-80GB") == "8.0" and known("20b2", None) == "8.0"
    assert known(None, "NVIDIA A1000") is None and known(None, "NVIDIA H100 80GB HBM3") == "9.0"
