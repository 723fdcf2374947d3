"""The solver's order of preference among evaluated candidates (lower is better)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from packaging.version import InvalidVersion, Version

from resolver.solve.types import Evaluation, Kind


def _rank(
    e: Evaluation,
    prefer: Kind | None,
    window: Callable[[Evaluation], object] | None = None,
    newer: Callable[[Version], object] | None = None,
) -> tuple[object, ...]:
    """``newer``: a release's place, newest first (``Matrix.newest_first``: plain ints, so a
    solve's sort of hundreds of paths calls no Python comparison); else ``_neg``."""
    c = e.candidate
    group = -1 if prefer is not None and c.kind == prefer else c.rank_group(cmake_only=e.cmake_only)
    # vLLM's own images, then any other image (AMD's, deprecated), then the rest.
    channel = min(int(c.order), 2)
    # Within one release: its default stack before the others, and an image's plain tag
    # (v0.33.0) before the same image's stack alias (v0.33.0-rocm100). Where the node's driver
    # is unknown (``window``), first the stack whose ROCm the oldest driver runs: the plan that
    # fits the most hosts, not the most demanding one.
    default = 0 if c.stack is None or c.stack.default else 1
    stack_order = (window(e), default) if window is not None else (default,)
    # vLLM's own images before AMD's before wheels; the newest release within each channel.
    place = newer(c.vllm) if newer is not None else _neg(c.vllm)
    return (group, int(e.unofficial), channel, place, stack_order, c.alias_rank)


def rank(e: Evaluation, prefer: Kind | None) -> tuple[object, ...]:
    """The solver's order of preference (lower is better); ``resolver.explain`` explains by it."""
    return _rank(e, prefer)


class _Neg:
    __slots__ = ("v",)

    def __init__(self, v: Version) -> None:
        self.v = v

    def __lt__(self, other: _Neg) -> bool:
        return self.v > other.v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Neg) and self.v == other.v

    def __hash__(self) -> int:
        return hash(self.v)


def _neg(v: Version) -> _Neg:
    return _Neg(v)


def fix_order(ranked: Sequence[Evaluation]) -> list[Evaluation]:
    """Host-fixable paths in the order a fix should be offered: the best release first, and of it
    the stack whose ROCm asks the smallest host change (v0.33.0 on amdgpu 6.1: its rocm72 image
    needs 6.4, its default rocm100 one 30.10), then the rest in rank order. ``ranked`` is sorted."""
    fixable = [e for e in ranked if e.host_fixable]
    if not fixable:
        return []
    best = fixable[0].candidate
    # An official path before an unofficial one (as the solver ranks them), then the smallest
    # change; stable: among paths that ask the same change, rank order (the default stack first),
    # which is the plan the solver gives once the change is made (the what-if search's route).
    top = sorted(
        (e for e in fixable if e.candidate.vllm == best.vllm and type(e.candidate) is type(best)),
        key=lambda e: (e.unofficial, _change_size(e)),
    )
    return [*top, *(e for e in fixable if e not in top)]


def _change_size(e: Evaluation) -> tuple[object, ...]:
    """How much host change a path asks: fewer changes, then cheaper kinds, then the nearer
    value (an upgrade to the lower series, a downgrade to the higher one)."""
    changes = tuple(
        dict.fromkeys(r.fix.change for r in e.reasons if r.fix is not None and r.fix.change)
    )
    values: list[tuple[object, ...]] = []
    for c in sorted(changes, key=lambda c: c.kind):
        try:
            v = Version(c.value)
        except InvalidVersion:
            values.append((c.kind, 1, c.value))
            continue
        down = c.direction == "downgrade"
        values.append((c.kind, 0, 1, _neg(v)) if down else (c.kind, 0, 0, v))
    return (len(changes), sum(c.cost for c in changes), tuple(values))


def distinct_alternatives(
    accepted: Sequence[Evaluation], plan: Evaluation | None
) -> Iterator[Evaluation]:
    """One alternative per channel (besides the plan), in ranked order."""
    seen: set[str] = set()
    if plan is not None:
        seen.add(plan.candidate.channel)
    for e in accepted:
        ch = e.candidate.channel
        if ch not in seen:
            seen.add(ch)
            yield e
