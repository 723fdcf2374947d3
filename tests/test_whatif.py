"""resolver.solve.whatif: the what-if search returns changes as data, each one solved again."""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from resolver import matrix
from resolver.solve import Decision, checks, solve
from resolver.solve.types import HostChange
from resolver.solve.whatif import WhatIf, better_than, search

from .helpers import decide as solve_for

M = matrix.load()


def decide(gfx: str, **kw: object) -> tuple[Decision, WhatIf]:
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
    assert found.without_quantization is not None and found.without_quantization.ok
    # An old driver with a pinned new release: an older release fits the host as it is.
    d, found = decide("gfx942", driver="6.1.3", vllm="==0.24.0")
    assert d.plan is None
    assert found.older_vllm is not None and found.older_vllm.candidate.vllm < Version("0.24.0")


def test_better_than_skips_unread_older_releases() -> None:
    # gfx908: the plan is a source build of 0.33.0, so older images rank above it. An older
    # release whose facts were never read says nothing about this node and is left out.
    d, _ = decide("gfx908", driver="30.30.3")
    assert d.plan is not None and d.plan.candidate.kind == "source"
    older = next(e for e in better_than(d) if e.candidate.vllm < d.plan.candidate.vllm)
    unread = replace(older, reasons=(checks.release_facts_unknown(older.candidate),))
    rest = tuple(e for e in d.rejected if e is not older)
    assert older in better_than(d)
    assert unread not in better_than(replace(d, rejected=(unread, *rest)))
