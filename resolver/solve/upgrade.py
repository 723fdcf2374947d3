"""The upgrade planner: the fewest ordered host changes that make the solver accept a release.

It asks nothing new of the data: the solver's own fixes (``Decision.host_fix``: the changes a
rejected path needs, each a ``HostChange``; a driver move AMD does not support on the host's OS
carries the OS step, ``Fix.os_first``) and, where the best path has none, the what-if search's
host routes. The changes are put in the order a host can take them (the OS release first, then the
kernel driver, then the host's ROCm, glibc and Python), applied, and the end state is solved again:
a route is returned only when that gives the plan it promises. The result is data; the CLI words
it (``cli/upgrade.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from resolver.errors import ResolverError
from resolver.model import Matrix
from resolver.node import Node
from resolver.solve.types import OK_VERDICTS, Decision, Evaluation, HostChange, Reason, Request

# The order a host takes its changes in: an OS release before the driver AMD supports there.
STEP_ORDER = ("os", "driver", "rocm", "glibc", "python")


@dataclass(frozen=True, kw_only=True, slots=True)
class Step:
    """One host change, with what it replaces and the reason it removes (its facts' sources)."""

    change: HostChange
    before: str | None  # the node's value before the change
    reasons: tuple[Reason, ...]  # what the change removes (a step the next one needs: none)
    needed_for: str | None = None  # an OS step: the change it makes possible ("driver 30.10")


@dataclass(frozen=True, kw_only=True, slots=True)
class Route:
    """The steps (empty when the node runs the release as it is), the node after them, and the
    decision solving that node again gave. ``steps`` is None when no host change gives a plan;
    ``blocked`` then says what stops every path."""

    steps: tuple[Step, ...] | None
    before: Decision
    after: Decision | None
    node: Node

    @property
    def plan(self) -> Evaluation | None:
        return self.after.plan if self.after is not None else None

    @property
    def found(self) -> bool:
        return self.steps is not None

    @property
    def blocked(self) -> tuple[Reason, ...]:
        return () if self.found else self.before.blockers


def plan_upgrade(m: Matrix, node: Node, request: Request) -> Route:
    """The route from ``node`` to a plan for ``request`` (module docstring)."""
    from resolver.solve import solve
    from resolver.solve.whatif import search

    before = solve(m, node, request)
    if before.plan is not None and before.verdict in OK_VERDICTS and before.exit_code == 0:
        return Route(steps=(), before=before, after=before, node=node)
    candidates: list[tuple[tuple[HostChange, ...], tuple[Reason, ...]]] = []
    if before.host_fix is not None:
        reasons = tuple(r for r in before.host_fix.reasons if r.fix is not None and r.fix.change)
        candidates.append((tuple(r.fix.change for r in reasons if r.fix and r.fix.change), reasons))
    for route in search(m, before).host:
        candidates.append((route.changes, route.reasons))
    for changes, reasons in candidates:
        steps = _ordered(m, node, changes, reasons)
        changed = node
        for step in steps:
            changed = step.change.apply(changed)
        try:
            after = solve(m, changed, request)
        except ResolverError:
            continue
        if after.plan is not None and after.verdict in OK_VERDICTS:
            return Route(steps=steps, before=before, after=after, node=changed)
    return Route(steps=None, before=before, after=None, node=node)


def ordered_steps(m: Matrix, node: Node, reasons: tuple[Reason, ...]) -> tuple[Step, ...]:
    """The host changes ``reasons``' fixes carry, as ordered steps (the fleet's route of a group
    to the main plan; the same order and OS steps as ``plan_upgrade``)."""
    changes = tuple(r.fix.change for r in reasons if r.fix is not None and r.fix.change)
    return _ordered(m, node, changes, reasons)


def _ordered(
    m: Matrix, node: Node, changes: tuple[HostChange, ...], reasons: tuple[Reason, ...]
) -> tuple[Step, ...]:
    """One step per distinct change, the OS steps the driver fixes need added, in STEP_ORDER."""
    steps: dict[tuple[str, str], Step] = {}
    for change in dict.fromkeys(changes):
        removes = tuple(r for r in reasons if r.fix is not None and r.fix.change == change)
        steps[(change.kind, change.value)] = Step(
            change=change, before=_value(node, change.kind), reasons=removes
        )
        for r in removes:
            first = r.fix.os_first if r.fix is not None else None
            target = m.os_listed_as(first) if first else None
            if target is not None and (("os", target.id) not in steps):
                steps[("os", target.id)] = Step(
                    change=HostChange(kind="os", value=target.id),
                    before=node.os,
                    reasons=(),
                    needed_for=f"amdgpu {change.value}",
                )
    return tuple(sorted(steps.values(), key=lambda s: STEP_ORDER.index(s.change.kind)))


def _value(node: Node, kind: str) -> str | None:
    return {
        "os": node.os,
        "driver": node.driver_version,
        "rocm": node.rocm_version,
        "glibc": node.glibc,
        "python": node.python,
    }.get(kind)


def applied(node: Node, route: Route) -> Node:
    """``node`` with the route's steps taken (what a property test re-solves)."""
    out = node
    for step in route.steps or ():
        out = step.change.apply(out)
    return out
