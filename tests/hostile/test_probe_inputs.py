"""Channel: probe inputs (--node JSON, --rocminfo/--amd-smi/--rocm-smi texts, --sysfs trees).
Bounded reads (no FIFO, device or endless file), depth-limited JSON, linear-time parsers, and a
documented exit code for anything."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from resolver.probe import enumerator, rocminfo, smi
from tests.probe_data import probe_gfx

from .conftest import HOSTILE, assert_clean, cli, write

FIXTURES = Path(__file__).resolve().parent.parent / "probe" / "fixtures"

# --- --node JSON ------------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**30, max_value=10**40),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
NODE_KEYS = [
    "gpus",
    "gfx_targets",
    "physical_gpu_count",
    "logical_gpu_count",
    "hsa_override_gfx_version",
    "rocm_version",
    "driver_version",
    "os",
    "kernel",
    "glibc",
    "python",
    "problems",
    "host",
]
GPU_KEYS = [
    "gfx",
    "product",
    "pci_device_id",
    "compute_units",
    "vram_bytes",
    "unique_id",
    "partition",
    "integrated",
    "runtime_gfx",
    "xnack",
    "sramecc",
    "apu",
    "marketing_name",
    "pci_bdf",
]


@st.composite
def node_docs(draw: st.DrawFn) -> object:
    """Probe JSON with the right keys and any values: the wrong type anywhere."""
    gpu = draw(st.fixed_dictionaries({}, optional={k: json_values for k in GPU_KEYS}))
    if draw(st.booleans()):
        gpu["gfx"] = draw(
            st.sampled_from(["gfx942", "gfx90a", "GFX942", "gfx9010", "gfx942:sramecc+", "gfx٩٤٢"])
        )
    doc = draw(st.fixed_dictionaries({}, optional={k: json_values for k in NODE_KEYS}))
    doc["gpus"] = draw(st.one_of(st.just([gpu] * draw(st.integers(0, 3))), json_values))
    return doc


@HOSTILE
@given(doc=node_docs())
@example(doc={"gpus": [{"gfx": "gfx942", "partition": []}]})
@example(
    doc={
        "gpus": [{"gfx": "gfx942", "partition": {"compute": 5, "memory": ["x"]}}],
        "gfx_targets": ["gfx942"],
    }
)
@example(doc={"gpus": [{"gfx": "gfx942"}], "host": {"groups": 7, "render_gid": "x", "numa": [[]]}})
@example(
    doc={
        "gpus": [{"gfx": "gfx942", "vram_bytes": 10**40, "compute_units": -5}],
        "logical_gpu_count": 10**30,
    }
)
@example(doc={"gpus": "gfx942", "problems": [{"code": 1}], "os": "ubuntu-٢٢.04", "python": "3.٣"})
def test_node_json_any_shape(doc: object, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = write(tmp_path_factory.mktemp("node") / "node.json", json.dumps(doc))
    for command in (
        ["check", "--node", str(path), "--json"],
        ["image", "--node", str(path)],
        ["dockerfile", "--node", str(path)],
    ):
        assert_clean(cli(command))


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        '{"gpus": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"gpus": [{"gfx": "gfx942", "vram_bytes": ' + "9" * 5000 + "}]}",
        '{"gpus": [], "physical_gpu_count": 1e400}',
        '{"gpus": [], "physical_gpu_count": NaN}',
        '{"gpus": [{"gfx": "gfx942"}], "host": ' + '{"a":' * 70 + "1" + "}" * 70 + "}",
    ],
    ids=["deep-list", "deep-gpus", "huge-int", "float-overflow", "nan", "deep-host"],
)
def test_node_json_structure(text: str, tmp_path: Path) -> None:
    o = cli(["check", "--node", str(write(tmp_path / "n.json", text)), "--quiet"])
    assert_clean(o)
    assert o.code == 2, str(o)


# Each text parser, with the data it needs (the gfx table; rocm_agent_enumerator needs none).
_PARSERS: tuple[tuple[Any, dict[str, Any]], ...] = (
    (rocminfo.parse, {"gfx_table": probe_gfx()}),
    (smi.parse_amd_smi, {"gfx_table": probe_gfx()}),
    (smi.parse_rocm_smi, {"gfx_table": probe_gfx()}),
    (enumerator.parse, {}),
)


def test_node_not_utf8(tmp_path: Path) -> None:
    o = cli(["check", "--node", str(write(tmp_path / "n.json", b"\xff\xfe{}")), "--quiet"])
    assert o.code == 2 and "UTF-8" in o.err, str(o)


# --- unbounded and blocking inputs ------------------------------------------------------------


def test_node_dev_zero_is_refused() -> None:
    o = cli(["check", "--node", "/dev/zero", "--quiet"])
    assert o.code == 2 and "not a regular file" in o.err, str(o)


@pytest.mark.parametrize("flag", ["--node", "--rocminfo"])
def test_fifo_is_refused_not_waited_on(flag: str, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    o = cli(["check", flag, str(fifo), "--quiet"])
    assert o.code == 2 and "FIFO" in o.err, str(o)
    assert o.seconds < 2


@pytest.mark.parametrize("flag", ["--rocminfo", "--amd-smi", "--rocm-smi"])
def test_probe_file_special_files(flag: str, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target in (str(fifo), "/dev/zero", "/dev/null"):
        o = cli(["probe", flag, target, "--json"])
        assert_clean(o)
        assert o.code == 2, str(o)


def _sysfs_copy(tmp_path: Path) -> Path:
    import shutil

    src = next(
        p
        for p in sorted((FIXTURES / "sysfs").iterdir())
        if (p / "sys").is_dir() or (p / "topology").is_dir()
    )
    dest = tmp_path / "sysfs"
    shutil.copytree(src, dest, symlinks=True)
    return dest


@pytest.mark.parametrize(
    "kind", ["fifo", "dev-zero-link", "huge-number", "superscript", "deep-dir-loop"]
)
def test_sysfs_hostile_files(kind: str, tmp_path: Path) -> None:
    root = _sysfs_copy(tmp_path)
    props = sorted(root.rglob("properties"))
    assert props, "fixture without properties files"
    target = props[0]
    if kind == "fifo":
        target.unlink()
        os.mkfifo(target)
    elif kind == "dev-zero-link":
        target.unlink()
        target.symlink_to("/dev/zero")
    elif kind == "huge-number":
        target.write_text("simd_count " + "9" * 5000 + "\ngfx_target_version 90402\n")
    elif kind == "superscript":
        target.write_text("simd_count ²\ngfx_target_version ٩0402\n")
    else:
        (target.parent / "loop").symlink_to(target.parent)
    o = cli(["probe", "--sysfs", str(root), "--json"])
    assert_clean(o)
    assert o.seconds < 5, str(o)


# --- probe texts: any content, linear time ----------------------------------------------------

FRAGMENTS = [
    "Agent 1",
    "*******",
    "  Name:                    gfx942",
    "  Marketing Name:          AMD Instinct MI300X",
    "  Compute Unit:            304",
    "GPU: 0",
    "    TARGET_GRAPHICS_VERSION: gfx942",
    "    NUM_COMPUTE_UNITS: ²",
    "GPU[0]\t\t: Card Series: \t\tAMD Instinct",
    "GPU[0] : VRAM Total Memory (B): " + "9" * 400,
    "card0,0x74a1,gfx942",
    "  Size:                    " + "9" * 400 + "(0x0) KB",
    "gfx942",
    "gfx000",
    "ESC[37m",
    "\x1b[0m",
    "> > quoted",
    "[1/2]",
    "ROCk module version 6.10.5 is loaded",
    "[GPU 0] gfx942: AMD GCN Arch Name",
    'user is not member of "render" group',
]
long_line = st.builds(
    lambda ch, n: ch * n,
    st.sampled_from([" ", "a", "A ", "a:", "GPU[0] : ", "\t", "[", "-", "1 ", "Name: gfx942 "]),
    st.integers(1000, 20_000),
)
probe_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=40), long_line), max_size=12
).map("\n".join)


@HOSTILE
@given(text=probe_text)
def test_text_parsers_any_content(text: str) -> None:
    for parse, data in _PARSERS:
        started = time.perf_counter()
        parse(text, **data)
        assert time.perf_counter() - started < 1.0, parse.__module__


@pytest.mark.parametrize(
    "line",
    [
        "A" + " " * 80_000 + "x",
        "A:" + " " * 80_000 + "x",
        "GPU[0] : " + " " * 80_000 + "x",
        "GPU[0] : a" + " " * 80_000 + "x",
        "x" * 80_000,
        " " * 80_000 + "[1/2] x",
        "Name:" + " " * 80_000 + "gfx",
        "[GPU 0]" + " " * 80_000 + "x",
    ],
    ids=["blanks", "colon-blanks", "smi-kv", "smi-kv-value", "one-word", "tmux", "name", "hip"],
)
def test_long_single_line_parses_fast(line: str) -> None:
    for parse, data in _PARSERS:
        started = time.perf_counter()
        parse(line, **data)
        assert time.perf_counter() - started < 0.5, parse.__module__


@HOSTILE
@given(text=probe_text, flag=st.sampled_from(["--rocminfo", "--amd-smi", "--rocm-smi"]))
def test_probe_files_through_the_cli(
    text: str, flag: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = write(tmp_path_factory.mktemp("probe") / "out.txt", text)
    assert_clean(cli(["probe", flag, str(path), "--json"]))


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        '{"card0": ' + "{" * 50_000,
        '{"gpu_data": [{"gpu": 0, "asic": {"num_compute_units": ' + "9" * 5000 + "}}]}",
        '[{"gpu": 0, "vram": {"size": {"value": 1e999}}}]',
    ],
    ids=["deep", "deep-card", "huge-int", "inf"],
)
def test_smi_json_structure(text: str) -> None:
    smi.parse_amd_smi(text, gfx_table=probe_gfx())
    smi.parse_rocm_smi(text, gfx_table=probe_gfx())
