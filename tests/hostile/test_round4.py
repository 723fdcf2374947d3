"""Issue 35 (hostile inputs, round 4), outside `audit`: srun output bounded in lines as well as
bytes, an nvidia-smi CSV field past csv's limit, sysfs values that are not what they claim.
Every hostile input is built here, at run time."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import assert_clean, cli

FIXTURES = Path(__file__).resolve().parent.parent / "probe" / "fixtures"


# -- fleet plan --slurm: 256 MiB of short lines ---------------------------------------------------


def test_srun_output_of_short_lines_is_bounded_in_lines() -> None:
    """256 MiB of four-byte `srun --label` lines (stdout and stderr) are not split into tens of
    millions of strings: under a 3 GiB address-space limit (the old split took ~3 GiB a stream)
    the node still gets its report (its output is not JSON), in bounded time."""
    code = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 * 1024**3, 3 * 1024**3))\n"
        "from resolver.fleet.slurm import MARKER, SRUN_LIMIT, parse_output\n"
        "flood = f'0: {MARKER}n1\\n' + '0: x\\n' * (SRUN_LIMIT // 5)\n"
        "(r,) = parse_output(flood, '0: y\\n' * (SRUN_LIMIT // 5), ['n1'])\n"
        "print(r.name, r.node is None, bool(r.reason))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["n1", "True", "True"]


def test_lines_past_the_bound_are_dropped_and_said() -> None:
    from resolver.fleet.slurm import SRUN_LINES, parse_output

    (quiet,) = parse_output("0: z\n" * (SRUN_LINES + 10), "", ["n2"])
    assert quiet.node is None and str(SRUN_LINES) in (quiet.reason or "")


def test_srun_exit_status_of_5000_digits_is_not_a_crash() -> None:
    from resolver.fleet.slurm import MARKER, parse_output

    err = "srun: error: n1: task 0: Exited with exit code " + "9" * 5000 + "\n"
    (report,) = parse_output(f"0: {MARKER}n1\n", err, ["n1"])
    assert report.node is None and report.reason


# -- nvidia-smi: a CSV field over csv's 131,072-character limit -----------------------------------


def test_an_nvidia_smi_csv_field_past_the_csv_limit_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "smi.csv"
    path.write_text('name, pci.bus_id\n"' + "A" * 140_000 + '", 00000000:01:00.0\n')
    o = cli(["probe", "--nvidia-smi", str(path), "--json"])
    assert_clean(o)
    assert o.code == 2 and json.loads(o.out)["error"]["exit_code"] == 2


# -- probe --sysfs: values that are not what they claim -------------------------------------------


def _tree(tmp_path: Path) -> Path:
    src = FIXTURES / "sysfs" / "kfd-gfx942-mi300x-8gpu-cpx-k8sdp"
    root = tmp_path / "sysfs"
    # As a copy of /sys: the module directory beside the topology.
    shutil.copytree(
        src / "topology", root / "sys" / "class" / "kfd" / "kfd" / "topology", symlinks=True
    )
    return root


def _module_version(tmp_path: Path, text: str) -> tuple[Path, dict[str, object]]:
    root = _tree(tmp_path)
    module = root / "sys" / "module" / "amdgpu"
    module.mkdir(parents=True)
    (module / "version").write_text(text)
    o = cli(["probe", "--sysfs", str(root), "--json"])
    assert_clean(o)
    report = tmp_path / "node.json"
    report.write_text(o.out)
    return report, json.loads(o.out)


def test_a_module_version_that_is_no_version_is_left_out_and_the_report_checks(
    tmp_path: Path,
) -> None:
    for i, text in enumerate(["6.10.5\x1b[2J\x07\n", "6." + "9" * 5000 + "\n"]):
        where = tmp_path / str(i)
        where.mkdir()
        report, data = _module_version(where, text)
        raw = json.dumps(data)
        assert "\\u001b" not in raw and "9" * 100 not in raw
        codes = [p["code"] for p in data.get("problems", [])]
        assert "driver-release-unknown" in codes
        # The report probe wrote is one check takes (the round-4 failure: exit 2 on its own file).
        o = cli(["check", "--node", str(report), "--json"])
        assert_clean(o)
        assert o.code in (0, 1), o.out[:400]


def test_a_good_module_version_is_kept(tmp_path: Path) -> None:
    _, data = _module_version(tmp_path, "6.10.5\n")
    assert "6.10.5" in json.dumps(data)


def test_sysfs_text_reaches_no_terminal_raw(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    module = root / "sys" / "module" / "amdgpu"
    module.mkdir(parents=True)
    (module / "version").write_text("6.10.5\n")
    (module / "initstate").write_text("live\x1b]0;owned\x07\n")
    o = cli(["probe", "--sysfs", str(root)])
    assert_clean(o)
    assert "\x1b" not in o.out and "\x07" not in o.out


# -- GraphML: characters XML 1.0 cannot carry -----------------------------------------------------


def test_graphml_with_noncharacters_is_well_formed() -> None:
    from xml.etree import ElementTree

    import networkx as nx

    from resolver.data.graph import to_graphml

    g = nx.MultiDiGraph()
    bad = "vllm:0.33\ufffe\uffff\x01\ud800"
    g.add_node(bad, note="x\uffff", aliases=["a\x00", "b"])
    g.add_edge(bad, "gfx:gfx942", key="runs-on\x02", source="s\ufffe")
    text = to_graphml(g)
    ElementTree.fromstring(text.encode("utf-8"))  # well-formed: parses
    back = nx.read_graphml(io.StringIO(text))
    assert any(n.startswith("vllm:0.33\\ufffe\\uffff\\u0001") for n in back.nodes)


# -- outputs, flags and data that were accepted or crashed ----------------------------------------


def test_an_output_name_of_256_bytes_is_bad_input(tmp_path: Path) -> None:
    long = tmp_path / ("a" * 300)
    nodes = Path(__file__).resolve().parent.parent / "data" / "nodes"
    for argv in (
        ["fleet", "plan", str(nodes), "-o", str(long)],
        ["image", "--gfx", "gfx942", "-o", str(long)],
        ["dockerfile", "--gfx", "gfx942", "-o", str(long)],
        ["image", "--gfx", "gfx942", "-o", str(tmp_path / "file" / "x")],
    ):
        (tmp_path / "file").write_text("")
        o = cli(argv)
        assert_clean(o)
        assert o.code == 2, str(o)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_max_jobs_is_bounded() -> None:
    for jobs in ("99999999999999999999", "0", "4097"):
        o = cli(["dockerfile", "--gfx", "gfx942", "--max-jobs", jobs])
        assert_clean(o)
        assert o.code == 2, str(o)
    assert cli(["dockerfile", "--gfx", "gfx942", "--max-jobs", "4096"]).code == 0


def test_a_wheel_variant_named_with_shell_syntax_fails_validate(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[2] / "matrix"
    data = tmp_path / "matrix"
    shutil.copytree(src, data)
    wheels = data / "wheels.toml"
    wheels.write_text(wheels.read_text().replace('name = "rocm700"', 'name = "x;id"', 1))
    o = cli(["matrix", "validate", "--json"], env={"ROCM_VLLM_MATRIX_DIR": str(data)})
    assert_clean(o)
    assert o.code == 3 and json.loads(o.out)["error"]["exit_code"] == 3


def test_a_data_dir_under_a_file_is_no_overlay_and_refresh_write_is_bad_input(
    tmp_path: Path,
) -> None:
    import pytest

    from resolver.data import overlay
    from resolver.util.errors import InputError

    (tmp_path / "file").write_text("")
    under = tmp_path / "file" / "data"
    o = cli(["check", "--gfx", "gfx942", "--json"], env={"ROCM_VLLM_DATA_DIR": str(under)})
    assert_clean(o)
    assert o.code != 3, str(o)
    assert overlay.read(under / overlay.OVERLAY_NAME) == {}
    with pytest.raises(InputError) as caught:
        overlay.write({}, written_at="2026-12-02T00:00:00Z", path=under / overlay.OVERLAY_NAME)
    assert caught.value.exit_code == 2


def test_a_model_config_that_is_deep_or_a_fifo_is_no_config(tmp_path: Path) -> None:
    """The model's config.json (heads for --tp) is read like every JSON input: bounded in size
    and depth, a FIFO never waited on."""
    import os

    from resolver.artifacts.parallel import _heads_in

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert _heads_in(deep) is None
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert _heads_in(fifo) is None
    good = tmp_path / "config.json"
    good.write_text(json.dumps({"num_attention_heads": 64, "num_key_value_heads": 8}))
    assert _heads_in(good) == (64, 8)
