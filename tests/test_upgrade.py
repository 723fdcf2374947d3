"""`rocm-vllm upgrade` (issue 22): the fewest ordered host changes to a release, as golden
texts on the shipped data (the routes it must get right), and the promise a route makes: taken,
its steps make `check` accept the plan it names."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from resolver.data import matrix
from resolver.data.node import from_flags
from resolver.solve import OK_VERDICTS, Request, solve
from resolver.solve.routes import plan_upgrade
from resolver.util.versions import parse_spec

from .conftest import LIVE_MATRIX
from .helpers import applied, run_cli

GOLDEN = Path(__file__).parent / "golden" / "upgrade"
NODES = Path(__file__).parent / "data" / "nodes"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
CASES = {
    # Ubuntu 20.04 with amdgpu 6.1: the OS release first, then the driver AMD supports there.
    "os-then-driver": [
        "--gfx",
        "gfx942",
        "--gpus",
        "8",
        "--driver",
        "6.1.3",
        "--os",
        "ubuntu-20.04",
        "--vllm",
        "==0.33.0",
    ],
    # MI355X on amdgpu 6.2: the driver predates the GPU; the step names the series that knows it.
    "gpu-newer-than-driver": [
        "--gfx",
        "gfx950",
        "--gpus",
        "8",
        "--driver",
        "6.2.4",
        "--os",
        "ubuntu-22.04",
    ],
    # MI355X on amdgpu 6.4.3 (its first ROCm is 7.0.0): the driver step is also a move to
    # TheRock's stream, said so.
    "stream-change": [
        "--gfx",
        "gfx950",
        "--gpus",
        "1",
        "--driver",
        "6.4.3",
        "--os",
        "ubuntu-24.04",
        "--vllm",
        "==0.33.0",
    ],
    # A wheel on RHEL 8.10 (glibc 2.28) with Python 3.11: the OS release that ships the glibc the
    # wheel needs, and the venv's Python.
    "wheel-python-glibc": [
        "--gfx",
        "gfx942",
        "--driver",
        "30.30.3",
        "--os",
        "rhel-8.10",
        "--python",
        "3.11",
        "--prefer",
        "wheel",
    ],
    # Strix Halo on Ubuntu 24.04's GA kernel: check accepts it with a warning, upgrade names the
    # kernel floor AMD lists as a step.
    "kernel-floor": ["--node", str(NODES / "strix-halo-kernel-6.8.json")],
    # The same on Ubuntu 22.04, which AMD does not list for the GPU: the OS step, then the kernel.
    "os-then-kernel": [
        "--node",
        str(NODES / "strix-halo-kernel-6.8.json"),
        "--os",
        "ubuntu-22.04",
    ],
    "nothing-to-change": ["--example", "mi300x-8"],
    "no-route": ["--gfx", "gfx906", "--gpus", "8", "--driver", "30.30.3"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_routes(name: str) -> None:
    env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX), "COLUMNS": "100"}
    result = run_cli("upgrade", *CASES[name], env=env)
    assert result.exit_code in (0, 1), result.stderr
    text = result.stdout.replace(str(NODES), "tests/data/nodes")  # the clone's path, not ours
    file = GOLDEN / f"{name}.txt"
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
    assert text == file.read_text(), f"{file.name} differs; UPDATE_GOLDEN=1 regenerates it"
    as_json = json.loads(run_cli("upgrade", *CASES[name], "--json", env=env).stdout)
    assert as_json["exit_code"] == result.exit_code
    if name == "os-then-driver":
        assert [s["change"] for s in as_json["steps"]] == ["os", "driver"]
        assert as_json["steps"][0]["to"] == "ubuntu-22.04"
    if name == "stream-change":
        (step,) = as_json["steps"]
        assert step["stream_change"] == {"from": "legacy", "to": "therock", "rocm": "10.0.0"}
    if name == "wheel-python-glibc":
        assert [(s["change"], s["to"]) for s in as_json["steps"]] == [
            ("os", "rhel-10"),
            ("python", "3.12"),
        ]
    if name == "kernel-floor":
        assert [(s["change"], s["to"]) for s in as_json["steps"]] == [("kernel", "6.17")]
    if name == "os-then-kernel":
        assert [s["change"] for s in as_json["steps"]] == ["os", "kernel"]
    if name == "nothing-to-change":
        assert as_json["steps"] == [] and as_json["found"] is True
    if name == "no-route":
        assert as_json["found"] is False and as_json["blocked"]


def test_the_route_command_confirms_the_route() -> None:
    """The check command a route prints, run as printed, accepts the plan."""
    import shlex

    env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    data = json.loads(run_cli("upgrade", *CASES["os-then-driver"], "--json", env=env).stdout)
    words = shlex.split(data["check"])
    check = json.loads(run_cli(*words[1:], "--json", env=env).stdout)
    assert check["verdict"] in OK_VERDICTS and check["plan"]["label"] == data["plan"]["label"]


M = matrix.load_dir(LIVE_MATRIX)
GFX = ["gfx942", "gfx950", "gfx90a", "gfx1100", "gfx1201", "gfx1151", "gfx906", "gfx1030"]
DRIVERS = [None, "6.1.3", "6.2.4", "6.4.3", "30.10.1", "30.30.3", "31.40.0"]
OSES = [None, "ubuntu-20.04", "ubuntu-22.04", "ubuntu-24.04", "rhel-9.4"]


@pytest.mark.parametrize("gfx", GFX)
def test_a_route_taken_gives_what_it_promised(gfx: str) -> None:
    """For nodes drawn from the data (gfx x driver series x OS x wanted release): when a route is
    found, the node with its steps taken is accepted, with the plan the route names; the OS
    step, where there is one, comes first; when none is found, the node has no plan."""
    for driver in DRIVERS:
        for os_id in OSES:
            for want in (None, "==0.33.0", "==0.24.0"):
                node = from_flags(gfx=gfx, gpus=8, driver=driver, os=os_id, rocm=None, python=None)
                request = Request(vllm=parse_spec(want) if want else None)
                route = plan_upgrade(M, node, request)
                if route.steps is None:
                    assert route.before.plan is None or route.before.verdict not in OK_VERDICTS
                    continue
                kinds = [s.change.kind for s in route.steps]
                assert "os" not in kinds or kinds.index("os") == 0, kinds
                again = solve(M, applied(node, route), request)
                assert again.verdict in OK_VERDICTS, (gfx, driver, os_id, want, kinds)
                assert route.plan is not None and again.plan is not None
                assert again.plan.candidate.label == route.plan.candidate.label


def test_each_step_says_why_in_terms_of_the_plan_the_route_ends_on() -> None:
    """issue 34: MI355X on amdgpu 6.2.4: the route ends on v0.33.0 (rocm100), yet its "because"
    cited v0.33.0-rocm72, the stack that seeded the search. Every reason a step gives is about the
    plan the route ends on, and the step's driver is the one that plan asked for."""
    for gfx, driver, os_id, want in (
        ("gfx950", "6.2.4", "ubuntu-24.04", None),
        ("gfx1201", "6.3.1", "ubuntu-20.04", None),
        ("gfx942", "6.1.3", "ubuntu-20.04", "==0.33.0"),
    ):
        node = from_flags(gfx=gfx, gpus=8, driver=driver, os=os_id, rocm=None, python=None)
        route = plan_upgrade(M, node, Request(vllm=parse_spec(want) if want else None))
        assert route.plan is not None and route.steps, (gfx, driver)
        plan = route.plan.candidate
        stack = plan.stack.variant if plan.stack is not None else None
        about = [r for s in route.steps for r in s.reasons if r.release is not None]
        assert about, (gfx, driver)
        assert all((r.release, r.stack) == (plan.vllm, stack) for r in about), (gfx, driver)


def test_check_and_upgrade_name_one_os_target_with_its_source() -> None:
    """issue 34: `check` said "ubuntu-22.04.5" where `upgrade` said "ubuntu-22.04", and the OS
    step's source was null: both name the data's OS record, and the step cites it."""
    env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    flags = CASES["os-then-driver"]
    check = json.loads(run_cli("check", *flags, "--json", env=env).stdout)
    up = json.loads(run_cli("upgrade", *flags, "--json", env=env).stdout)
    os_step = up["steps"][0]
    assert os_step["change"] == "os"
    record = M.os_release(os_step["to"])
    assert record is not None and record.id == os_step["to"]
    assert os_step["source"] and record.provenance.source in os_step["source"]
    assert check["route"]["steps"][0]["to"] == os_step["to"]
    node = from_flags(
        gfx="gfx942", gpus=8, driver="6.1.3", os="ubuntu-20.04", rocm=None, python=None
    )
    d = solve(M, node, Request(vllm=parse_spec("==0.33.0")))
    assert d.host_fix is not None
    firsts = {r.fix.os_first for r in d.host_fix.reasons if r.fix is not None and r.fix.os_first}
    assert firsts == {os_step["to"]}


@pytest.mark.parametrize(
    "flags",
    [
        ["--gfx", "gfx950", "--gpus", "8", "--driver", "6.2.4", "--os", "ubuntu-24.04"],
        ["--gfx", "gfx1201", "--gpus", "1", "--driver", "6.3.1", "--os", "ubuntu-20.04"],
        ["--gfx", "gfx942", "--gpus", "1", "--driver", "6.1.3", "--os", "ubuntu-20.04"],
    ],
)
def test_prefer_source_promises_the_verdict_its_check_gives(flags: list[str]) -> None:
    """issue 35: `upgrade --prefer source` said `source_build_required` where the check it prints
    (`--prefer source` moves source builds to the front, beside images that fit) says
    `supported`: the verdicts before and after are check's."""
    import shlex

    env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    up = json.loads(run_cli("upgrade", *flags, "--prefer", "source", "--json", env=env).stdout)
    now = json.loads(run_cli("check", *flags, "--prefer", "source", "--json", env=env).stdout)
    assert up["verdict_before"] == now["verdict"]
    assert up["found"] and up["plan"]["kind"] == "source"
    if up["check"] is None:  # nothing to change: check as it is is the promise
        assert up["verdict_after"] == now["verdict"]
        assert now["plan"]["label"] == up["plan"]["label"]
        return
    after = json.loads(run_cli(*shlex.split(up["check"])[1:], "--json", env=env).stdout)
    assert (after["verdict"], after["plan"]["label"]) == (up["verdict_after"], up["plan"]["label"])
