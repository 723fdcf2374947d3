"""What stops vLLM at start on a host, whatever the path (issue 34): WSL, a user the GPUs refuse,
a driver AMD does not support on the host's OS. Each is a reason with a host change that the
what-if search takes, so the verdict is blocked_host_fix with the fix; the environment a report
records (GPU visibility variables) decides the GPUs the plan uses."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace
from packaging.version import Version

from resolver.data import matrix
from resolver.data.node import Node, from_flags, from_json
from resolver.solve import Decision, Request, solve
from resolver.solve.routes import plan_upgrade, search
from resolver.solve.types import HostChange

from .helpers import decide, run_cli, said

M = matrix.load()


def _node(**fields: Any) -> Node:
    """An 8x MI300X report on a supported host, with ``fields`` laid over it."""
    data: dict[str, Any] = {
        "gpus": [{"gfx": "gfx942"}] * 8,
        "physical_gpu_count": 8,
        "logical_gpu_count": 8,
        "driver_version": "30.10.1",
        "os": "ubuntu-24.04",
        "problems": [],
        "host": {"user": "alice", "groups": ["alice", "render", "video"]},
    }
    data.update(fields)
    return from_json(data, where="test")


def _blockers(d: Decision) -> set[str]:
    return {r.code for r in d.blockers}


def _host_changes(d: Decision) -> set[HostChange]:
    assert d.host_fix is not None
    return {r.fix.change for r in d.host_fix.reasons if r.fix is not None and r.fix.change}


def test_a_user_outside_render_and_video_is_blocked_with_the_usermod_fix() -> None:
    node = _node(host={"user": "alice", "groups": ["alice", "sudo"], "kfd": {"present": True}})
    d = solve(M, node, Request())
    assert d.verdict == "blocked_host_fix" and d.exit_code == 1
    assert _blockers(d) == {"gpu-access-denied"}
    assert _host_changes(d) == {HostChange(kind="groups", value="render,video")}
    reason = d.blockers[0]
    assert reason.fix is not None and reason.fix.kind == "host"
    # The hint is a command the user copies: a printed promise, so its words are checked.
    assert "usermod -aG render,video" in said(reason.hint)
    # the search takes the change: with the groups the same node has a plan
    best = search(M, d).best
    assert best is not None and best.host_changes == (
        HostChange(kind="groups", value="render,video"),
    )
    assert best.after is not None and best.after.verdict in ("supported", "supported_with_warnings")
    assert set(best.node.host["groups"]) >= {"render", "video"}


def test_group_membership_decides_only_where_it_is_known() -> None:
    # nobody read the groups (flags, a report without them): not a block
    assert decide("gfx942", gpus=8, driver="30.10.1", os="ubuntu-24.04").verdict == "supported"
    assert solve(M, _node(host={}), Request()).verdict == "supported"
    # root needs no group; a probe that opened /dev/kfd proves access (ACLs, uaccess)
    assert solve(M, _node(host={"user": "root", "groups": ["root"]}), Request()).plan is not None
    opened = _node(host={"user": "alice", "groups": [], "kfd": {"present": True, "openable": True}})
    assert "gpu-access-denied" not in _blockers(solve(M, opened, Request()))


def test_kfd_refusing_the_user_blocks_even_with_the_groups_listed() -> None:
    node = _node(
        host={
            "user": "alice",
            "groups": ["render", "video"],
            "kfd": {"present": True, "openable": False, "error": "EACCES (Permission denied)"},
        }
    )
    d = solve(M, node, Request())
    assert _blockers(d) == {"gpu-access-denied"} and d.verdict == "blocked_host_fix"


def test_a_docker_daemon_runs_its_containers_as_root_so_only_wheels_are_refused() -> None:
    node = _node(
        host={
            "user": "alice",
            "groups": ["alice", "docker"],
            "kfd": {"present": True},
            "container_engines": {"docker": True, "podman": False},
        }
    )
    d = solve(M, node, Request())
    assert d.plan is not None and d.plan.candidate.image is not None
    wheels = [e for e in d.rejected if e.candidate.wheel is not None]
    assert wheels and all("gpu-access-denied" in {r.code for r in e.reasons} for e in wheels)
    images = [e for e in d.rejected if e.candidate.image is not None]
    assert not any("gpu-access-denied" in {r.code for r in e.reasons} for e in images)
    assert solve(M, node, Request(paths=frozenset({"wheel"}))).verdict == "blocked_host_fix"


def test_wsl_blocks_every_path_with_native_linux_as_the_fix() -> None:
    node = _node(kernel="6.6.87.2-microsoft-standard-WSL2", host={"user": "root", "wsl": True})
    d = solve(M, node, Request())
    assert d.verdict == "blocked_host_fix" and _blockers(d) == {"wsl-host"}
    assert _host_changes(d) == {HostChange(kind="platform", value="linux")}
    reason = d.blockers[0]
    assert any("howto_wsl" in f.source for f in reason.facts)
    upgrade = plan_upgrade(M, node, Request())
    assert upgrade.steps is not None and [s.change.kind for s in upgrade.steps] == ["platform"]
    assert upgrade.node.host["wsl"] is False and upgrade.node.kernel is None


def test_a_driver_off_its_os_list_blocks_with_the_nearest_listed_release() -> None:
    # amdgpu 6.4 shipped with ROCm 6.4.0, which AMD lists for Ubuntu 24.04 and 22.04, not 26.04
    driver = M.driver("6.4")
    assert driver is not None and driver.paired_rocm is not None
    rocm = M.rocm_release(Version(driver.paired_rocm))
    assert rocm is not None and not any(o.startswith("ubuntu-26.04") for o in rocm.os)
    d = decide("gfx942", gpus=8, driver="6.4.3", os="ubuntu-26.04")
    assert d.verdict == "blocked_host_fix" and d.host_fix is not None
    # the paths amdgpu 6.4 runs: the OS is what stops them
    on_it = [e for e in d.rejected if all(r.code == "driver-os-unsupported" for r in e.reasons)]
    assert on_it and d.host_fix in on_it
    reason = d.host_fix.reasons[0]
    assert reason.fix is not None and reason.fix.change == HostChange(
        kind="os", value="ubuntu-24.04"
    )
    # a path that needs another driver is about that driver: one AMD supports on 26.04 needs no
    # OS change
    moved = [e for e in d.rejected if any(r.code == "driver-window" for r in e.reasons)]
    assert any("driver-os-unsupported" not in {r.code for r in e.reasons} for e in moved)
    assert {f.source for f in reason.facts} >= {rocm.provenance.source}
    best = search(M, d).best
    assert best is not None and best.after is not None and best.after.plan is not None
    # a probe that saw the module loaded: it built here, so it stays the advisory
    loaded = replace(
        from_flags(gfx="gfx942", gpus=8, driver="6.4.3", os="ubuntu-26.04", rocm=None, python=None),
        host={"amdgpu_module": "loaded"},
    )
    d2 = solve(M, loaded, Request())
    assert "driver-os-unsupported" not in _blockers(d2) and d2.plan is not None
    assert "os-not-supported" in {w.code for w in d2.warnings}


def test_an_unread_release_is_blocked_by_the_host_too() -> None:
    """A host blocker stops a release whose build files were never read: the answer is the host
    fix, not unknown."""
    node = _node(kernel="5.15.146.1-microsoft-standard-WSL2", host={"user": "root"})
    d = solve(M, node, Request())
    unread = [e for e in d.rejected if "release-facts-unknown" in {r.code for r in e.reasons}]
    assert all("wsl-host" in {r.code for r in e.reasons} for e in unread)
    assert d.verdict == "blocked_host_fix"


# --- the environment a report records -------------------------------------------------------


def test_visibility_variables_choose_the_gpus_the_run_uses() -> None:
    from resolver.artifacts.parallel import place

    node = _node(visible_devices={"HIP_VISIBLE_DEVICES": "2,3,5"}, host={"user": "root"})
    assert node.visible_gpus() == (2, 3, 5) and node.visible_gpu_count == 3
    d = solve(M, node, Request())
    assert d.plan is not None
    warnings = {w.code: w for w in d.warnings}
    assert warnings["visible-devices-count"].severity == "info"
    assert "visible-devices-ray" not in warnings
    placed = place(node, devices=None, model=None, hf_cache="/nonexistent")
    assert placed.devices == (2, 3, 5) and placed.tensor_parallel == 2


def test_rocr_alone_or_with_hip_is_said_for_ray() -> None:
    alone = _node(visible_devices={"ROCR_VISIBLE_DEVICES": "0,1"}, host={"user": "root"})
    d = solve(M, alone, Request())
    ray = next(w for w in d.warnings if w.code == "visible-devices-ray")
    assert ray.hint.key == "visible-devices-ray" and ray.hint.value("rocr") == "0,1"
    assert "ray-project/ray" in said(ray.source)  # the advice cites Ray's own check
    both = _node(
        visible_devices={"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "1"},
        host={"user": "root"},
    )
    assert both.visible_gpus() == ()  # HIP's 1 indexes what ROCR left: one GPU, index 0
    codes = [w.code for w in solve(M, both, Request()).warnings]
    assert "visible-devices-ray" in codes and "visible-devices-hide-gfx" in codes


def test_a_set_that_hides_the_planned_gfx_is_said() -> None:
    node = from_json(
        {
            "gpus": [{"gfx": "gfx942"}, {"gfx": "gfx90a"}],
            "gfx_targets": ["gfx90a", "gfx942"],
            "logical_gpu_count": 2,
            "physical_gpu_count": 2,
            "driver_version": "30.10.1",
            "os": "ubuntu-24.04",
            "visible_devices": {"CUDA_VISIBLE_DEVICES": "1"},
        },
        where="test",
    )
    d = solve(M, node, Request())
    hidden = [w for w in d.warnings if w.code == "visible-devices-hide-gfx"]
    assert len(hidden) == 1 and hidden[0].message.key == "visible-devices-hide-gfx"
    assert hidden[0].message.value("gfx") == "gfx942" and hidden[0].hint.value("indices") == "0"


# --- what the user reads (golden files: UPDATE_GOLDEN=1 regenerates them) --------------------

NODES = Path(__file__).parent / "data" / "nodes"
GOLDEN = Path(__file__).parent / "golden" / "host"
GOLDEN_CASES = {
    "not-in-gpu-groups": ["check", "--node", str(NODES / "mi300x-user-not-in-gpu-groups.json")],
    "not-in-gpu-groups-explain": [
        "check",
        "--node",
        str(NODES / "mi300x-user-not-in-gpu-groups.json"),
        "--explain",
    ],
    "not-in-gpu-groups-upgrade": [
        "upgrade",
        "--node",
        str(NODES / "mi300x-user-not-in-gpu-groups.json"),
    ],
    "wsl": ["check", "--node", str(NODES / "rx7900xtx-wsl.json")],
    "wsl-explain": ["check", "--node", str(NODES / "rx7900xtx-wsl.json"), "--explain"],
    "driver-off-its-os": ["check", "--gfx", "gfx942", "--driver", "6.4.3", "--os", "ubuntu-26.04"],
    "visible-devices": ["check", "--node", str(NODES / "mi300x-visible-devices.json")],
    "visible-devices-image": ["image", "--node", str(NODES / "mi300x-visible-devices.json")],
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden(name: str) -> None:
    result = run_cli(*GOLDEN_CASES[name], env={"COLUMNS": "100"})
    assert result.exit_code in (0, 1), result.stderr
    text = result.stdout.replace(str(NODES), "tests/data/nodes")
    file = GOLDEN / f"{name}.txt"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
    assert text == file.read_text(), f"{file.name} differs; UPDATE_GOLDEN=1 regenerates it"


def test_check_json_and_upgrade_json_carry_the_new_change_kinds() -> None:
    import json

    import jsonschema

    node = str(NODES / "mi300x-user-not-in-gpu-groups.json")
    docs = Path(__file__).parents[1] / "docs"
    checked = json.loads(run_cli("check", "--node", node, "--json").stdout)
    jsonschema.validate(checked, json.loads((docs / "check.schema.json").read_text()))
    assert [s["change"] for s in checked["route"]["steps"]] == ["groups"]
    up = json.loads(run_cli("upgrade", "--node", node, "--json").stdout)
    jsonschema.validate(up, json.loads((docs / "upgrade.schema.json").read_text()))
    assert [(s["change"], s["to"]) for s in up["steps"]] == [("groups", "render,video")]
    assert up["check"] == "rocm-vllm check"  # confirmed by a probe on the node after the change
