"""`rocm-vllm probe`: exit codes, one-line errors, JSON that validates and reads back."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from resolver.cli import app
from resolver.data.node import from_json

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA = json.loads((Path(__file__).parents[2] / "docs/probe.schema.json").read_text())
runner = CliRunner()


def test_live_probe_without_gpu_exits_0_and_says_why() -> None:
    result = runner.invoke(app, ["probe"])
    assert result.exit_code == 0
    if not Path("/dev/kfd").exists():
        assert "No AMD GPU found" in result.stdout
        assert "/dev/kfd does not exist" in result.stdout


def test_missing_file_is_exit_2_one_line() -> None:
    result = runner.invoke(app, ["probe", "--rocminfo", "/no/such/file"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == "error: --rocminfo /no/such/file: no such file"
    assert "Traceback" not in result.output


def test_directory_and_unreadable_inputs(tmp_path: Path) -> None:
    result = runner.invoke(app, ["probe", "--rocminfo", str(tmp_path)])
    assert result.exit_code == 2
    assert "is a directory" in result.stderr
    result = runner.invoke(app, ["probe", "--sysfs", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "no such directory" in result.stderr


def test_garbage_input_is_no_gpu_not_a_traceback(tmp_path: Path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 50)
    result = runner.invoke(app, ["probe", "--rocminfo", str(junk)])
    assert result.exit_code == 0
    assert "No AMD GPU found" in result.stdout
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["--rocminfo", "rocminfo-gfx1201-with-igpu-gfx1036-rocm5861.txt"],
        ["--rocminfo", "rocminfo-gfx1030-override-rx6700xt-1gpu-ega4l-vbsnn.txt"],
        ["--rocminfo", "rocminfo-error-eperm-rocmdocker116.txt"],
        [
            "--amd-smi",
            "amd-smi-static-asic-gfx942-mi308x-cpx-amdsmi-changelog.txt",
            "--amd-smi",
            "amd-smi-static-partition-mi308x-cpx-nps4-amdsmi-changelog.txt",
        ],
        ["--rocm-smi", "rocm-smi-concise-gfx942-mi300x-4gpu-thamada.txt"],
        ["--rocm-smi", "peers/telegraf/mi100_rocm602.json"],
        ["--rocm-smi", "peers/telegraf/vega-10-XT.json"],
        [
            "--rocminfo",
            "peers/gpustack/hygon-gpu-24.04.3-rocminfo.txt",
            "--rocm-smi",
            "peers/gpustack/hygon-gpu-24.04.3-rocm-smi.json",
        ],
        ["--sysfs", "peers/procfs/drm-gfx900-vega10-i915"],
        ["--agent-enumerator", "agents-gfx90a.txt"],
        [],
    ],
)
def test_json_validates_and_reads_back(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "agents-gfx90a.txt").write_text("gfx000\ngfx90a\ngfx90a\n")
    full = [
        a if a.startswith("--") else str(tmp_path / a if a.startswith("agents") else FIXTURES / a)
        for a in args
    ]
    result = runner.invoke(app, ["probe", "--json", *full])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    jsonschema.validate(data, SCHEMA)
    node = from_json(data, where="probe.json")
    assert node.gfx_targets == tuple(data["gfx_targets"])
    assert [g.gfx for g in node.gpus] == [g["gfx"] for g in data["gpus"]]


def test_human_summary_table() -> None:
    result = runner.invoke(
        app, ["probe", "--rocminfo", str(FIXTURES / "rocminfo-gfx942-mi300x-4gpu-thamada.txt")]
    )
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["#", "gfx", "product", "CUs", "VRAM", "partition", "note"]
    assert lines[1].split()[:5] == ["0-3", "gfx942", "Instinct", "MI300X", "304"]
    assert "gfx targets: gfx942   GPUs: 4 logical, 4 physical" in result.stdout


def test_summary_names_what_it_found_that_it_does_not_resolve() -> None:
    result = runner.invoke(
        app,
        [
            "probe",
            "--rocminfo",
            str(FIXTURES / "peers/gpustack/hygon-gpu-24.04.3-rocminfo.txt"),
        ],
    )
    assert result.exit_code == 0
    assert "No AMD GPU found." in result.stdout
    assert "Hygon DCU K1xx_AI gfx928" in result.stdout
    assert "[not-an-amd-gpu]" in result.stdout


def test_summary_keeps_a_gpu_without_a_target() -> None:
    result = runner.invoke(
        app, ["probe", "--rocm-smi", str(FIXTURES / "peers/telegraf/vega-10-XT.json")]
    )
    assert "1 GPU(s) listed, but no source names their gfx target." in result.stdout
    assert "PCI id 6861, VRAM 16.0 GiB" in result.stdout


def test_probe_text_fits_the_terminal() -> None:
    """Issue 19: probe's problems ran to 190 columns at COLUMNS=60."""
    from typer.testing import CliRunner

    from resolver.cli import app

    fixtures = Path(__file__).parent / "fixtures"
    result = CliRunner().invoke(
        app,
        [
            "probe",
            "--rocminfo",
            str(fixtures / "rocminfo-gfx942-mi300x-4gpu-thamada.txt"),
            "--amd-smi",
            str(fixtures / "amd-smi-static-gfx950-mi350x-rocmsystems2987.txt"),
        ],
        env={"COLUMNS": "60"},
    )
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 60
    assert "[driver-release-unknown]" in result.stdout
