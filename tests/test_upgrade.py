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
