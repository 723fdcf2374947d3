"""resolver.solve.routes: the one what-if search returns changes as data, each set solved again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec.structs
import pytest
from packaging.version import Version

from resolver.data import matrix
from resolver.data.node import from_flags
from resolver.solve import Decision, Request, checks, solve
from resolver.solve.provider import MatrixProvider
from resolver.solve.routes import STEP_ORDER, Routes, better_than, search
from resolver.solve.types import HostChange
from resolver.util.versions import parse_spec

from .conftest import LIVE_MATRIX
from .helpers import applied, run_cli
from .helpers import decide as solve_for

M = matrix.load()


def decide(gfx: str, **kw: object) -> tuple[Decision, Routes]:
    d = solve_for(gfx, **kw)  # type: ignore[arg-type]
    return d, search(M, d)


def test_a_driver_change_is_the_smallest_forward_move_and_opens_a_plan() -> None:
    d, found = decide("gfx942", driver="31.10.0")
    route = found.host[0]
    assert route.changes == (HostChange(kind="driver", value="31.40", direction="upgrade"),)
    assert not route.together and route.node.driver_version == "31.40.0"
    # The route is a plan the solver gave for the changed node, better than today's.
    again = solve(M, route.node, d.request)
    assert again.plan is not None and again.plan.candidate.label == route.opens.candidate.label


def test_changes_that_only_work_together_are_one_route() -> None:
    # RHEL 8.10 has glibc 2.28: Python 3.12 alone still leaves the wheel blocked.
    _, found = decide("gfx942", os="rhel-8.10", prefer="wheel", python="3.11")
    assert len(found.host) == 1
    route = found.host[0]
    assert route.together
    assert {c.kind for c in route.changes} == {"python", "glibc"}
    assert route.opens.candidate.kind == "wheel"


def test_nothing_to_search_when_the_plan_is_the_best() -> None:
    d, found = decide("gfx942", driver="30.30.3")
    assert d.exit_code == 0
    assert found.host == () and found.older_vllm is None and found.source_build is None


def test_request_changes_are_solved_too() -> None:
    # FP8 on an RDNA3 GPU: the gate blocks every path; without the quantization one runs.
    d, found = decide("gfx1100", driver="30.30.3", quantization="fp8")
    assert d.plan is None
    assert found.without_quantization is not None and found.without_quantization.opens.ok
    # An old driver with a pinned new release: an older release fits the host as it is.
    d, found = decide("gfx942", driver="6.1.3", vllm="==0.24.0")
    assert d.plan is None
    assert found.older_vllm is not None and found.older_vllm.opens.candidate.vllm < Version(
        "0.24.0"
    )


def test_better_than_skips_unread_older_releases() -> None:
    # gfx908: the plan is a source build of 0.33.0, so older images rank above it. An older
    # release whose facts were never read says nothing about this node and is left out.
    d, _ = decide("gfx908", driver="30.30.3")
    assert d.plan is not None and d.plan.candidate.kind == "source"
    older = next(e for e in better_than(d) if e.candidate.vllm < d.plan.candidate.vllm)
    unread = msgspec.structs.replace(
        older, reasons=(checks.release_facts_unknown(older.candidate),)
    )
    rest = tuple(e for e in d.rejected if e is not older)
    assert older in better_than(d)
    assert unread not in better_than(msgspec.structs.replace(d, rejected=(unread, *rest)))


# -- one search, three askers -------------------------------------------------------------------

LIVE = matrix.load_dir(LIVE_MATRIX)
GOLDEN = Path(__file__).parent / "golden" / "routes"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
# Ubuntu 20.04 + amdgpu 6.1 wanting 0.33.0 (issue 22's example): the OS release, then the driver.
FOCAL = ["--gfx", "gfx942", "--gpus", "8", "--driver", "6.1.3", "--os", "ubuntu-20.04"]


def test_check_explain_and_upgrade_print_the_same_best_route() -> None:
    env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX), "COLUMNS": "100"}
    args = [*FOCAL, "--vllm", "==0.33.0"]
    short = run_cli("check", *args, env=env)
    assert short.exit_code == 1
    file = GOLDEN / "check-os-then-driver.txt"
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        file.write_text(short.stdout)
    assert short.stdout == file.read_text(), f"{file.name} differs; UPDATE_GOLDEN=1 regenerates it"
    data = json.loads(run_cli("check", *args, "--json", env=env).stdout)
    route = data["route"]
    assert [(s["change"], s["to"]) for s in route["steps"]] == [
        ("os", "ubuntu-22.04"),
        ("driver", "6.4"),
    ]
    hint = data["derivation"]["hints"][0]  # --explain's first hint is the same route
    assert hint["changes"] == {"driver": "6.4"} and hint["then"] == route["plan"]["label"]
    up = json.loads(run_cli("upgrade", *args, "--json", env=env).stdout)
    assert [(s["change"], s["to"]) for s in up["steps"]] == [
        (s["change"], s["to"]) for s in route["steps"]
    ]
    assert up["plan"]["label"] == route["plan"]["label"]


NODES = [
    {"driver": drv, "os": os_id}
    for drv in ("6.1.3", "6.2.4", "6.4.3", "30.10.1", "31.40.0")
    for os_id in ("ubuntu-20.04", "ubuntu-22.04", "rhel-8.10")
]


@pytest.mark.parametrize("gfx", ["gfx942", "gfx950", "gfx1100", "gfx1201", "gfx90a"])
def test_every_route_taken_gives_the_plan_it_names(gfx: str) -> None:
    """Property over nodes drawn from the data: each route the search returns, its host steps
    taken and its request changes made, is solved to the plan it names, accepted."""
    for facts in NODES:
        for want in (None, "==0.33.0"):
            node = from_flags(gfx=gfx, gpus=8, rocm=None, python="3.11", **facts)
            d = solve(LIVE, node, Request(vllm=parse_spec(want) if want else None, prefer="wheel"))
            found = search(LIVE, d)
            for route in (*found.host, found.older_vllm, found.without_quantization):
                if route is None:
                    continue
                again = solve(LIVE, applied(node, route), route.request)
                assert again.exit_code == 0 and again.plan is not None, (gfx, facts, want)
                assert again.plan.candidate.label == route.opens.candidate.label
                kinds = [s.change.kind for s in route.steps]
                assert kinds == sorted(kinds, key=STEP_ORDER.index)


def test_a_fleet_group_is_routed_to_the_main_plan_by_the_same_search() -> None:
    node = from_flags(
        gfx="gfx942", gpus=8, driver="6.1.3", os="ubuntu-20.04", rocm=None, python=None
    )
    d = solve(LIVE, node, Request())
    goal = solve(
        LIVE, msgspec.structs.replace(node, driver_version="30.30.3", os="ubuntu-22.04"), Request()
    )
    assert goal.plan is not None
    (route,) = search(LIVE, d, goal=goal.plan.candidate).host[:1]
    assert route.after is None and route.opens.candidate.label == goal.plan.candidate.label
    assert [s.change.kind for s in route.steps] == ["os", "driver"]
    assert MatrixProvider(LIVE, applied(node, route), Request()).evaluate(goal.plan.candidate).ok


@pytest.mark.parametrize(
    "flags",
    [
        ["--gfx", "gfx950", "--driver", "6.2.4"],
        ["--gfx", "gfx942", "--driver", "6.1.3", "--vllm", "==0.33.0"],
        ["--gfx", "gfx1201", "--driver", "6.3.1", "--os", "ubuntu-20.04"],
        ["--gfx", "gfx1102", "--driver", "6.2.4", "--os", "ubuntu-20.04"],
    ],
)
def test_host_fix_names_the_plan_the_route_opens(flags: list[str]) -> None:
    """issue 36: `check --json` named v0.33.0-rocm72 in `host_fix` and v0.33.0 in `route` for one
    driver change. The host fix is the path the solver ranks first among those asking the
    smallest change (an official one before one that runs only under an override), which is the
    plan solving the changed node gives."""
    env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    doc = json.loads(run_cli("check", *flags, "--json", env=env).stdout)
    assert doc["verdict"] == "blocked_host_fix"
    assert doc["host_fix"]["candidate"]["label"] == doc["route"]["plan"]["label"]
