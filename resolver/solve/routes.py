"""The what-if search: the fewest changes that give this node a (better) plan, or a given plan.

One search answers the three what-if questions the tool asks: what `check` and `--explain` say
would fix a node, what `rocm-vllm upgrade` plans, and what a fleet group needs to run the main
plan. Changes are data (``HostChange``: driver series, OS release, kernel, host ROCm, glibc,
Python; ``RequestChange``: no vLLM range, no quantization, a source build), each applying itself
and with a cost. The search is best-first over sets of changes, fewest changes first, then the
cheapest: the seeds are the fixes the solver's rejected paths carry, a set is taken in the order
a host takes its changes (``STEP_ORDER``, with the OS release first where AMD does not support a
driver on the host's OS), and every set is verified by the solver itself. A set that verifies
short of the goal, with new host fixes, grows by them. Nothing here words anything;
``resolver.explain.hints`` and the CLI do.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence

import msgspec
from packaging.version import Version

from resolver.data.codes import QUANT_CODES, UNKNOWN_CODES
from resolver.data.model import Matrix, OsRelease
from resolver.data.node import Node
from resolver.solve.finding import phrase
from resolver.solve.rank import fix_order, rank
from resolver.solve.types import (
    OK_VERDICTS,
    Advisory,
    Candidate,
    Change,
    Decision,
    Evaluation,
    Fact,
    HostChange,
    Reason,
    Request,
    RequestChange,
)
from resolver.util.errors import ResolverError

# The order a host takes its changes in: native Linux instead of WSL first, an OS release before
# the kernel and the driver AMD supports there, the host's ROCm, the user's GPU groups (the
# driver's packages create them), glibc and Python after.
STEP_ORDER = (
    "platform",
    "gpus",
    "gtt",
    "os",
    "kernel",
    "driver",
    "nvidia_driver",
    "rocm",
    "groups",
    "glibc",
    "python",
)
# How many rejected paths seed the host search, and how many solves one search may spend: a
# bound, so a node no change fixes answers as fast as one that needs one.
SEED_PATHS = 4
MAX_SOLVES = 24


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """One host change, with what it replaces and why: the reasons it removes (their facts hold
    the sources), the advisories it heeds (a kernel floor), or the change it makes possible."""

    change: HostChange
    before: str | None  # the node's value before the change
    reasons: tuple[Reason, ...] = ()
    warnings: tuple[Advisory, ...] = ()
    needed_for: str | None = None  # an OS step: the change it makes possible ("amdgpu 30.10")
    # An OS step that takes a change no host makes alone (a newer glibc): that change, and the
    # fact that the OS release makes it.
    stands_for: HostChange | None = None
    facts: tuple[Fact, ...] = ()
    source: str = ""  # where an OS step's target is recorded (its reasons and facts hold theirs)


class Route(msgspec.Struct, frozen=True, kw_only=True):
    """Changes that, taken together, were solved again to give ``opens``. ``steps`` are its host
    changes in the order a host takes them; ``after`` is the decision on the changed node (None
    when the route was checked against a given plan only)."""

    changes: tuple[Change, ...]
    steps: tuple[Step, ...]
    reasons: tuple[Reason, ...]  # the reasons the changes remove (their fixes hold the changes)
    node: Node  # the node with the host changes taken
    request: Request  # the request with the request changes made
    opens: Evaluation
    after: Decision | None
    together: bool  # several changes, none of which opens it alone

    @property
    def host_changes(self) -> tuple[HostChange, ...]:
        return tuple(c for c in self.changes if isinstance(c, HostChange))

    @property
    def cost(self) -> int:
        return sum(s.change.cost for s in self.steps) + sum(
            c.cost for c in self.changes if isinstance(c, RequestChange)
        )


class Routes(msgspec.Struct, frozen=True, kw_only=True):
    """Every route the search verified, best first; empty/None where none does."""

    host: tuple[Route, ...] = ()
    older_vllm: Route | None = None  # the request without its vLLM range
    without_quantization: Route | None = None  # no quantization, no FP8 KV cache
    source_build: Route | None = None  # the best source build (may be unofficial)

    @property
    def best(self) -> Route | None:
        """The route `check` prints: host changes that open the release asked for, else the
        cheapest request change."""
        if self.host:
            return self.host[0]
        return next(
            (r for r in (self.older_vllm, self.without_quantization) if r is not None), None
        )


def better_than(decision: Decision) -> list[Evaluation]:
    """The rejected paths the solver ranks above the plan (all rejected ones without a plan).
    Releases the data knows nothing about say nothing about older plans."""
    plan = decision.plan
    if plan is None:
        return list(decision.rejected)
    prefer = decision.request.prefer
    mine = rank(plan, prefer)
    return [
        e
        for e in decision.rejected
        if rank(e, prefer) < mine
        and not (
            {r.code for r in e.reasons} <= UNKNOWN_CODES and e.candidate.vllm < plan.candidate.vllm
        )
    ]


class _Search:
    """One search's solver, with the solves it spent and their results remembered."""

    def __init__(self, matrix: Matrix, decision: Decision, budget: int) -> None:
        self.m = matrix
        self.decision = decision
        self.budget = budget
        self._seen: dict[tuple[object, ...], Decision | None] = {}

    def solve(self, node: Node, request: Request) -> Decision | None:
        # Every node of one search is the searched node with host changes taken: the facts the
        # changes touch tell them apart.
        key = (*(_value(node, kind) for kind in STEP_ORDER), request)
        if key not in self._seen:
            if self.budget <= 0:
                return None
            self.budget -= 1
            from resolver.solve import solve  # the search solves again; solve never searches

            try:
                self._seen[key] = solve(self.m, node, request)
            except ResolverError:
                self._seen[key] = None
        return self._seen[key]

    def evaluate(self, node: Node, request: Request, goal: Candidate) -> Evaluation:
        from resolver.solve import evaluate_pinned

        return evaluate_pinned(self.m, node, request, goal)


def search(
    matrix: Matrix, decision: Decision, *, goal: Candidate | None = None, budget: int = MAX_SOLVES
) -> Routes:
    """The routes to a plan better than ``decision``'s (among the paths ranked above it,
    ``better_than``), or, with ``goal``, to that one plan passing every check on the node (a
    fleet group's route to the main plan; host changes only)."""
    s = _Search(matrix, decision, budget)
    if goal is not None:
        return Routes(host=tuple(_host_routes(s, _goal_seeds(s, goal), _goal_check(s, goal))))
    plan, request = decision.plan, decision.request
    ok_now = plan is not None and decision.exit_code == 0
    host = _host_routes(s, _seeds(decision), _better_check(s))
    older = without = source = None
    if request.vllm is not None and str(request.vllm) and not ok_now:
        older = _request_route(s, RequestChange(kind="vllm"), ok_only=True)
    if any(r.code in QUANT_CODES for r in decision.blockers):
        without = _request_route(s, RequestChange(kind="quantization"), ok_only=True)
    if plan is None or (plan.unofficial and not plan.candidate.from_source):
        source = _request_route(s, RequestChange(kind="source"), ok_only=False)
    return Routes(
        host=tuple(host), older_vllm=older, without_quantization=without, source_build=source
    )


def finish(matrix: Matrix, route: Route, *, budget: int = 4) -> Route:
    """``route`` with the host changes its end state's advisories ask for (a kernel floor, the
    OS release AMD lists for the GPU) taken too, where the solver still accepts the plan after
    them: what `rocm-vllm upgrade` hands over is a host AMD supports, not one check tolerates."""
    if route.after is None:
        return route
    s = _Search(matrix, route.after, budget)
    current = route
    for _ in range(budget):
        after = current.after
        if after is None:
            break
        have = {(st.change.kind, st.change.value) for st in current.steps}
        heed = [
            w
            for w in after.warnings
            if w.change is not None and (w.change.kind, w.change.value) not in have
        ]
        if not heed:
            break
        change = heed[0].change
        assert change is not None
        node = change.apply(current.node)
        again = s.solve(node, current.request)
        if (
            again is None
            or again.plan is None
            or again.verdict not in OK_VERDICTS
            or again.plan.candidate.key != current.opens.candidate.key
        ):
            break
        step = Step(
            change=change,
            before=_value(current.node, change.kind),
            warnings=tuple(w for w in heed if w.change == change),
        )
        steps = _in_order((*current.steps, step))
        current = msgspec.structs.replace(
            current,
            changes=(*current.changes, change),
            steps=steps,
            node=node,
            opens=again.plan,
            after=again,
        )
    return current


# -- seeds and checks --------------------------------------------------------------------------

Seed = tuple[tuple[HostChange, ...], tuple[Reason, ...]]  # one path's changes and its reasons
Check = Callable[[Node, Request], tuple[Evaluation | None, Decision | None, tuple[Reason, ...]]]


def _path_seed(e: Evaluation) -> Seed | None:
    """A rejected path's host changes, when every reason it has is one a host change removes."""
    changes = tuple(dict.fromkeys(r.fix.change for r in e.reasons if r.fix and r.fix.change))
    if not changes or any(r.fix is None or r.fix.change is None for r in e.reasons):
        return None
    return changes, e.reasons


def _seeds(decision: Decision) -> list[Seed]:
    seeds = [seed for e in fix_order(better_than(decision)) if (seed := _path_seed(e))]
    return list(dict.fromkeys(seeds))[:SEED_PATHS]


def _goal_seeds(s: _Search, goal: Candidate) -> list[Seed]:
    seed = _path_seed(s.evaluate(s.decision.node, s.decision.request, goal))
    return [seed] if seed else []


def _better_check(s: _Search) -> Check:
    """A changed node passes when the solver gives it an accepted plan ranked above today's;
    otherwise the fixes its own closest path carries say how the set may grow."""
    plan, prefer = s.decision.plan, s.decision.request.prefer

    def check(
        node: Node, request: Request
    ) -> tuple[Evaluation | None, Decision | None, tuple[Reason, ...]]:
        d = s.solve(node, request)
        if d is None:
            return None, None, ()
        if d.plan is not None and d.exit_code == 0:
            if plan is None or rank(d.plan, prefer) < rank(plan, prefer):
                return d.plan, d, ()
            return None, d, ()
        more = d.host_fix.reasons if d.host_fix is not None else ()
        return None, d, more

    return check


def _goal_check(s: _Search, goal: Candidate) -> Check:
    def check(
        node: Node, request: Request
    ) -> tuple[Evaluation | None, Decision | None, tuple[Reason, ...]]:
        ev = s.evaluate(node, request, goal)
        if ev.ok and not ev.unofficial:
            return ev, None, ()
        return None, None, ev.reasons if ev.host_fixable else ()

    return check


# -- the search --------------------------------------------------------------------------------


def _host_routes(s: _Search, seeds: Sequence[Seed], check: Check) -> list[Route]:
    """Best-first over sets of host changes, one seed path at a time in the solver's order
    (``fix_order``): the first path some set opens gives the routes, each of the fewest changes
    that does (so one change alone before changes together)."""
    for changes, reasons in seeds:
        found = _best_first(s, changes, reasons, check)
        if found:
            return found
    return []


def _best_first(
    s: _Search, changes: tuple[HostChange, ...], reasons: tuple[Reason, ...], check: Check
) -> list[Route]:
    by_change = {c: tuple(r for r in reasons if r.fix and r.fix.change == c) for c in changes}
    frontier: list[tuple[int, int, int, tuple[HostChange, ...]]] = []
    order = 0

    def push(group: tuple[HostChange, ...]) -> None:
        nonlocal order
        key = tuple(dict.fromkeys(group))
        heapq.heappush(frontier, (len(key), sum(c.cost for c in key), order, key))
        order += 1

    for c in changes:
        push((c,))
    if len(changes) > 1:
        push(changes)
    tried: set[frozenset[HostChange]] = set()
    found: list[Route] = []
    size_found: int | None = None
    while frontier:
        size, _, _, group = heapq.heappop(frontier)
        if size_found is not None and size > size_found:
            break
        if frozenset(group) in tried:
            continue
        tried.add(frozenset(group))
        removes = tuple(dict.fromkeys(r for c in group for r in by_change.get(c, ())))
        steps = _steps(s.m, s.decision.node, group, removes)
        node = s.decision.node
        for step in steps:
            node = step.change.apply(node)
        opens, after, more = check(node, s.decision.request)
        if opens is not None:
            steps, removes = _about_opened(s, opens, steps, removes)
            found.append(
                Route(
                    changes=group,
                    steps=steps,
                    reasons=removes,
                    node=node,
                    request=s.decision.request,
                    opens=opens,
                    after=after,
                    together=len(group) > 1,
                )
            )
            size_found = size
            continue
        grow = tuple(r.fix.change for r in more if r.fix and r.fix.change)
        if grow and any(c not in group for c in grow) and s.budget > 0:
            for r in more:
                if r.fix and r.fix.change:
                    by_change.setdefault(r.fix.change, ())
                    by_change[r.fix.change] += (r,)
            push((*group, *grow))
    return found  # the fewest changes that work: one alone, else the set that works together


def _about_opened(
    s: _Search, opens: Evaluation, steps: tuple[Step, ...], removes: tuple[Reason, ...]
) -> tuple[tuple[Step, ...], tuple[Reason, ...]]:
    """The steps' "because" about the plan the route ends on: the seed path's reasons may be
    another stack's (v0.33.0-rocm72 seeds the driver move that opens v0.33.0), so each step takes
    the reasons the opened path itself had on the node as it is, where it had one for that kind
    of change."""
    here = next(
        (e for e in s.decision.rejected if e.candidate.key == opens.candidate.key),
        None,
    )
    if here is None:
        here = s.evaluate(s.decision.node, s.decision.request, opens.candidate)
    own = [r for r in here.reasons if r.fix is not None and r.fix.change is not None]
    if not own:
        return steps, removes

    def kind_of(st: Step) -> str:
        return (st.stands_for or st.change).kind

    out = []
    for st in steps:
        mine = tuple(
            r
            for r in own
            if r.fix is not None and r.fix.change is not None and r.fix.change.kind == kind_of(st)
        )
        out.append(msgspec.structs.replace(st, reasons=mine) if mine and st.reasons else st)
    kinds = {kind_of(st) for st in steps}
    taken = tuple(
        r
        for r in own
        if r.fix is not None and r.fix.change is not None and r.fix.change.kind in kinds
    )
    return tuple(out), taken or removes


def _request_route(s: _Search, change: RequestChange, *, ok_only: bool) -> Route | None:
    request = change.apply_to(s.decision.request)
    d = s.solve(s.decision.node, request)
    if d is None or d.plan is None or (ok_only and d.exit_code != 0):
        return None
    return Route(
        changes=(change,),
        steps=(),
        reasons=(),
        node=s.decision.node,
        request=request,
        opens=d.plan,
        after=d,
        together=False,
    )


# -- steps -------------------------------------------------------------------------------------


def _steps(
    m: Matrix, node: Node, changes: Iterable[HostChange], reasons: tuple[Reason, ...]
) -> tuple[Step, ...]:
    """One step per distinct change, the OS steps the driver fixes need added, in STEP_ORDER."""
    steps: dict[tuple[str, str], Step] = {}
    for change in dict.fromkeys(changes):
        removes = tuple(r for r in reasons if r.fix is not None and r.fix.change == change)
        release = _os_with_glibc(m, node, change) if change.kind == "glibc" else None
        if release is not None:  # glibc comes with the OS: the nearest release of its family
            steps[("os", release.id)] = Step(
                change=HostChange(kind="os", value=release.id),
                before=node.os,
                reasons=removes,
                stands_for=change,
                facts=(
                    Fact(
                        text=phrase("os-ships-glibc", os=release.id, glibc=release.glibc),
                        source=release.provenance.source,
                    ),
                ),
            )
            continue
        before = _value(node, change.kind)
        if change.kind == "glibc" and before is None and node.os:
            found = m.os_listed_as(node.os)
            before = str(found.glibc) if found is not None and found.glibc else None
        steps[(change.kind, change.value)] = Step(change=change, before=before, reasons=removes)
        for r in removes:
            first = r.fix.os_first if r.fix is not None else None
            target = m.os_listed_as(first) if first else None
            if target is not None and ("os", target.id) not in steps:
                steps[("os", target.id)] = Step(
                    change=HostChange(kind="os", value=target.id),
                    before=node.os,
                    needed_for=f"amdgpu {change.value}",
                    source=_os_source(m, target, change.value),
                )
    return _in_order(steps.values())


def _os_source(m: Matrix, target: OsRelease, driver: str) -> str:
    """Where the OS step's facts are recorded: the OS record, and the ROCm release whose OS list
    says AMD supports the driver there (the release the driver series shipped with)."""
    series = m.driver(driver)
    paired = (
        m.rocm_release(Version(series.paired_rocm))
        if series is not None and series.paired_rocm
        else None
    )
    sources = [target.provenance.source, paired.provenance.source if paired else ""]
    return "; ".join(dict.fromkeys(x for x in sources if x))


def _os_with_glibc(m: Matrix, node: Node, change: HostChange) -> OsRelease | None:
    """The oldest release of the host's OS family that ships glibc >= the change's floor."""
    if not node.os or "-" not in node.os:
        return None
    family = node.os.partition("-")[0]
    floor = Version(change.value)
    fits = [
        o
        for o in m.os
        if o.id.partition("-")[0] == family and o.glibc is not None and o.glibc >= floor
    ]
    return min(fits, key=lambda o: (o.glibc, o.id)) if fits else None


def _in_order(steps: Iterable[Step]) -> tuple[Step, ...]:
    return tuple(sorted(steps, key=lambda st: STEP_ORDER.index(st.change.kind)))


def _value(node: Node, kind: str) -> str | None:
    return {
        "os": node.os,
        "kernel": node.kernel,
        "driver": node.driver_version,
        "nvidia_driver": node.nvidia_driver,
        "rocm": node.rocm_version,
        "glibc": node.glibc,
        "python": node.python,
        "groups": _groups(node),
        "platform": "wsl" if node.host.get("wsl") else None,
        "gpus": str(node.logical_gpu_count) if node.logical_gpu_count else None,
        "gtt": str(min(g.vram_bytes or 0 for g in node.gpus) // 2**30) if node.gpus else None,
    }.get(kind)


def _groups(node: Node) -> str | None:
    groups = node.host.get("groups")
    return ",".join(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else None


def empty_route(decision: Decision) -> Route:
    """The route of a node that runs the plan as it is: no change."""
    assert decision.plan is not None
    return Route(
        changes=(),
        steps=(),
        reasons=(),
        node=decision.node,
        request=decision.request,
        opens=decision.plan,
        after=decision,
        together=False,
    )


def plan_upgrade(matrix: Matrix, node: Node, request: Request) -> Upgrade:
    """The route from ``node`` to a plan for ``request``: none to take when check accepts the node
    as it is, else the search's best host route; either way with the host changes the end
    state's advisories ask for (``finish``)."""
    from resolver.solve import solve

    before = solve(matrix, node, request)
    if before.plan is not None and before.verdict in OK_VERDICTS and before.exit_code == 0:
        return _as_check(matrix, before, finish(matrix, empty_route(before)))
    routes = search(matrix, before)
    best = routes.host[0] if routes.host else None
    if best is not None and best.after is not None and best.after.verdict in OK_VERDICTS:
        return _as_check(matrix, before, finish(matrix, best))
    return _as_check(matrix, before, None)


def _as_check(matrix: Matrix, before: Decision, route: Route | None) -> Upgrade:
    """The upgrade with the verdicts `check` gives for the same flags: a ``--prefer`` upgrade
    plans the route to that kind of path only (``paths``), but check's ``--prefer`` only moves
    the kind to the front, and a source plan beside a fitting image is ``supported`` there,
    not ``source_build_required`` (issue 35): the verdicts promised are check's."""
    if before.request.paths is None:
        return Upgrade(before=before, route=route)
    from resolver.solve import solve

    def as_check(r: Request) -> Request:
        return msgspec.structs.replace(r, paths=None)

    checked = solve(matrix, before.node, as_check(before.request))
    if route is not None and route.after is not None:
        after = solve(matrix, route.node, as_check(route.request))
        if after.plan is not None and after.plan.candidate.key == route.opens.candidate.key:
            route = msgspec.structs.replace(route, after=after)
    return Upgrade(before=before, route=route, checked=checked)


class Upgrade(msgspec.Struct, frozen=True, kw_only=True):
    """What `rocm-vllm upgrade` answers: the decision before, and the route (None: no host change
    gives a plan; ``blocked`` then says what stops every path)."""

    before: Decision
    route: Route | None
    # The decision `check` gives on the node as it is, where the upgrade's request is not check's
    # (a --prefer that plans one kind of path only); None: ``before`` is it.
    checked: Decision | None = None

    @property
    def verdict_before(self) -> str:
        """The verdict `check` gives the node as it is, with the same flags."""
        return (self.checked or self.before).verdict

    @property
    def found(self) -> bool:
        return self.route is not None

    @property
    def steps(self) -> tuple[Step, ...] | None:
        return self.route.steps if self.route is not None else None

    @property
    def after(self) -> Decision | None:
        return self.route.after if self.route is not None else None

    @property
    def node(self) -> Node:
        return self.route.node if self.route is not None else self.before.node

    @property
    def plan(self) -> Evaluation | None:
        return self.route.opens if self.route is not None else None

    @property
    def blocked(self) -> tuple[Reason, ...]:
        return () if self.found else self.before.blockers
