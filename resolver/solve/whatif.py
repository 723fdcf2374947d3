"""The what-if search: the smallest changes that would give this node a (better) plan.

It generalises ``Decision.host_fix``. Host changes (driver series, Python, glibc) come from the
reasons' ``HostChange`` records, applied to the node and solved again, one change alone before
changes together, so every route it returns is one the solver itself accepted. Request changes
(an older vLLM, no quantization, a source build) are solved the same way. The result is data;
``resolver.explain.hints`` words it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from resolver.codes import GATE_CODES, UNKNOWN_CODES
from resolver.errors import ResolverError
from resolver.model import Matrix
from resolver.node import Node
from resolver.solve.rank import fix_order, rank
from resolver.solve.types import Decision, Evaluation, HostChange, Reason, Request


@dataclass(frozen=True, kw_only=True, slots=True)
class HostRoute:
    """Host changes that, applied together, were solved again to give ``opens``."""

    changes: tuple[HostChange, ...]
    reasons: tuple[Reason, ...]  # the reasons the changes remove (their fixes hold the changes)
    node: Node  # the node with the changes applied
    opens: Evaluation  # the plan solving again gave
    together: bool  # several changes, none of which opens it alone


@dataclass(frozen=True, kw_only=True, slots=True)
class WhatIf:
    """Every change the search found to open a (better) plan; ``None``/empty where none does."""

    host: tuple[HostRoute, ...] = ()
    older_vllm: Evaluation | None = None  # the request without its vLLM range
    without_quantization: Evaluation | None = None  # no quantization, no FP8 KV cache
    source_build: Evaluation | None = None  # the best source build (may be unofficial)


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


def search(matrix: Matrix, decision: Decision) -> WhatIf:
    """Search the changes that open a plan better than ``decision``'s, among the paths ranked
    above it (``better_than``)."""
    from resolver.solve import solve  # the search solves again; solve itself never searches

    def again(node: Node | None = None, request: Request | None = None) -> Decision | None:
        try:
            return solve(matrix, node or decision.node, request or decision.request)
        except ResolverError:
            return None

    plan, request = decision.plan, decision.request
    ok_now = plan is not None and decision.exit_code == 0
    older = without = source = None
    if request.vllm is not None and str(request.vllm) and not ok_now:
        older = _ok_plan(again(request=replace(request, vllm=None)))
    if any(r.code in GATE_CODES for r in decision.blockers):
        without = _ok_plan(again(request=replace(request, quantization=None, kv_cache_dtype=None)))
    if plan is None or (plan.unofficial and plan.candidate.kind != "source"):
        only_source = again(request=replace(request, paths=frozenset({"source"})))
        source = only_source.plan if only_source is not None else None
    return WhatIf(
        host=tuple(_host_routes(decision, lambda node: again(node=node))),
        older_vllm=older,
        without_quantization=without,
        source_build=source,
    )


def _ok_plan(d: Decision | None) -> Evaluation | None:
    return d.plan if d is not None and d.plan is not None and d.exit_code == 0 else None


def _host_routes(
    decision: Decision, solve_on: Callable[[Node], Decision | None]
) -> list[HostRoute]:
    """Host changes in the solver's order (``fix_order``): for the first path that changes open,
    each change that opens a better plan alone, else all of its changes together."""
    plan, prefer = decision.plan, decision.request.prefer

    def opens(reasons: Sequence[Reason]) -> HostRoute | None:
        changes = tuple(r.fix.change for r in reasons if r.fix is not None and r.fix.change)
        if not changes or len(changes) < len(reasons):  # a reason no host change removes
            return None
        node = decision.node
        for change in changes:
            node = change.apply(node)
        found = _ok_plan(solve_on(node))
        if found is None or (plan is not None and not rank(found, prefer) < rank(plan, prefer)):
            return None
        return HostRoute(
            changes=changes,
            reasons=tuple(reasons),
            node=node,
            opens=found,
            together=len(changes) > 1,
        )

    for e in fix_order(better_than(decision)):
        together = opens(e.reasons)
        if together is None:
            continue
        alone = [route for r in e.reasons if (route := opens([r])) is not None]
        return alone or [together]
    return []
