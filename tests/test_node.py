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


def _report(**fields: object) -> dict[str, object]:
    return {"gpus": [{"gfx": "gfx942"}] * 4, "logical_gpu_count": 4, **fields}


def test_visibility_variables_are_read_and_applied_as_the_runtime_does() -> None:
    node = from_json(
        _report(visible_devices={"ROCR_VISIBLE_DEVICES": "1,2,3", "HIP_VISIBLE_DEVICES": "0,2"}),
        where="t",
    )
    # ROCR picks GPUs 1,2,3; HIP's 0 and 2 index those: GPUs 1 and 3
    assert node.visible_gpus() == (1, 3) and node.visible_gpu_count == 2
    assert node.to_json()["visible_devices"] == {
        "ROCR_VISIBLE_DEVICES": "1,2,3",
        "HIP_VISIBLE_DEVICES": "0,2",
    }
    # a list ends at the first entry that names no GPU; CUDA_VISIBLE_DEVICES is HIP's alias
    cut = from_json(_report(visible_devices={"CUDA_VISIBLE_DEVICES": "3,9,0"}), where="t")
    assert cut.visible_gpus() == (3,)
    # empty: no GPU; unset: every GPU, and the report says nothing of it
    assert (
        from_json(_report(visible_devices={"HIP_VISIBLE_DEVICES": ""}), where="t").visible_gpus()
        == ()
    )
    plain = from_json(_report(), where="t")
    assert plain.visible_gpus() is None and plain.visible_gpu_count == 4
    assert "visible_devices" not in plain.to_json()


def test_visibility_by_uuid_matches_the_gpus_unique_ids() -> None:
    gpus = [{"gfx": "gfx942", "unique_id": f"aa0000000000000{i}"} for i in range(4)]
    node = from_json(
        _report(gpus=gpus, visible_devices={"ROCR_VISIBLE_DEVICES": "GPU-AA00000000000002,0"}),
        where="t",
    )
    assert node.visible_gpus() == (2, 0)
    unknown = from_json(_report(visible_devices={"HIP_VISIBLE_DEVICES": "GPU-aa01"}), where="t")
    assert unknown.visible_gpus() is None  # the GPUs carry no UUID: not guessed


@pytest.mark.parametrize(
    "visible",
    [
        {"HIP_VISIBLE_DEVICES": "0;rm -rf /"},
        {"HIP_VISIBLE_DEVICES": "0, 1"},
        {"HIP_VISIBLE_DEVICES": "-1"},
        {"HIP_VISIBLE_DEVICES": 0},
        {"LD_PRELOAD": "x.so"},
        "0,1",
    ],
)
def test_a_hostile_visibility_value_is_refused(visible: object) -> None:
    with pytest.raises(InputError, match=r"visible_devices|VISIBLE_DEVICES"):
        from_json(_report(visible_devices=visible), where="t")


def test_the_what_if_changes_of_the_host_blockers() -> None:
    node = from_json(
        _report(
            kernel="6.6.87.2-microsoft-standard-WSL2",
            host={
                "user": "al",
                "groups": ["al"],
                "kfd": {"openable": False, "error": "EACCES"},
                "wsl": True,
            },
            problems=[
                {"code": "wsl", "message": "m", "hint": "h"},
                {"code": "not-in-gpu-group", "message": "m", "hint": "h"},
            ],
        ),
        where="t",
    )
    joined = node.with_gpu_groups()
    assert joined.host["groups"] == ["al", "render", "video"]
    assert joined.host["kfd"]["openable"] is None
    assert [p.code for p in joined.problems] == ["wsl"]
    native = node.on_native_linux()
    assert native.host["wsl"] is False and native.kernel is None
    assert "wsl" not in [p.code for p in native.problems]
