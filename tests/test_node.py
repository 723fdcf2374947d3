"""Node facts from flags, examples and probe JSON files."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resolver.data.examples import example_node
from resolver.data.node import from_flags, from_json, read_node_file
from resolver.util.errors import InputError


def test_flags_build_a_node() -> None:
    n = from_flags(
        gfx="gfx950,gfx942",
        gpus=8,
        driver="30.30.3",
        os="Ubuntu-24.04",
        rocm="7.2.3",
        python="3.12.1",
    )
    assert n.gfx_targets == ("gfx942", "gfx950") and n.logical_gpu_count == 8 and len(n.gpus) == 8
    assert n.os == "ubuntu-24.04" and n.python == "3.12"


def test_json_round_trip(tmp_path: Path) -> None:
    n = example_node("mi300x-8")
    path = tmp_path / "node.json"
    path.write_text(json.dumps(n.to_json()))
    back = read_node_file(path)
    assert (
        back.gfx_targets == n.gfx_targets
        and back.logical_gpu_count == 8
        and back.driver_version == "30.30.3"
    )
    assert back.origin == f"file:{path}"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a probe JSON object"),
        ('{"gpus": [{"gfx": 3}]}', "has no 'gfx'"),
        ('{"gpus": "gfx942"}', "'gpus' must be list"),
    ],
)
def test_bad_node_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "node.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        read_node_file(path)


def test_missing_and_unreadable_node_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_node_file(tmp_path / "absent.json")
    with pytest.raises(InputError, match="cannot read it"):
        read_node_file(tmp_path)  # a directory
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError, match="not UTF-8 text"):
        read_node_file(binary)


def test_unknown_example_lists_the_choices() -> None:
    with pytest.raises(InputError, match="not an embedded example") as info:
        example_node("dgx")
    assert info.value.hint is not None and "mi300x-8" in info.value.hint


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
        max_leaves=12,
    )
)
def test_any_json_gives_a_node_or_an_input_error(data: object) -> None:
    with contextlib.suppress(InputError):
        from_json(data, where="x.json")


def test_a_nodes_origin_yields_the_flags_that_describe_it_again() -> None:
    """issue 21: the origin is typed; it says which flags make a follow-up read the same facts."""
    from resolver.data.node import Origin

    assert Origin("example:mi300x-8").flags() == ["--example", "mi300x-8"]
    assert Origin("file:/r/node.json").flags() == ["--node", "/r/node.json"]
    assert Origin("file:rocminfo:/r/rocminfo.txt").flags() == ["--rocminfo", "/r/rocminfo.txt"]
    # Saved outputs of several tools, a live probe, flags alone: the follow-up spells the facts.
    assert Origin("file:rocminfo:/a,amd-smi:/b").flags() is None
    assert Origin("probe").flags() is None and Origin("flags").flags() is None
    origin = Origin("srun:ws1")
    assert origin == "srun:ws1" and (origin.kind, origin.detail) == ("srun", "ws1")
