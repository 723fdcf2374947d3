"""Node facts + request -> a verdict with a plan, or failures as data. Pure: no I/O, no printing.

Shape (resolvelib): a ``MatrixProvider`` (``provider``) lists candidate paths (official image,
AMD image, wheel, source build) and says why each one cannot be used (``checks``, one function per
reason code) and what to watch for (``advisories``, ``host``); ``solve`` here ranks them (``rank``),
reports progress through a ``Reporter`` whose hooks do nothing by default, and decides the
verdict of the ``Decision``. Every reason carries the facts it rests on with their sources, so
``resolver.explain`` can say "Because ...". The records are in ``types``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from msgspec.structs import replace
from packaging.version import InvalidVersion, Version

from resolver.data.codes import FACT_UNKNOWN_CODES, UNCHECKED_CODES, UNKNOWN_CODES
from resolver.data.model import Matrix
from resolver.data.node import Node
from resolver.solve import advisories
from resolver.solve.advisories import (
    newer_unknown,
    node_warnings,
    prefer_not_met,
    stack_choice,
)
from resolver.solve.finding import Phrase, phrase
from resolver.solve.host import host_os_warnings, kernel_floor_warnings, unified_memory_warnings
from resolver.solve.provider import MatrixProvider
from resolver.solve.rank import _rank, distinct_alternatives, fix_order, rank
from resolver.solve.types import (
    FP8_QUANT,
    GATES_SOURCE_FALLBACK,
    KINDS,
    MX_QUANT,
    MXFP4_QUANT,
    OK_VERDICTS,
    UNKNOWN_EXIT,
    Advisory,
    Candidate,
    Decision,
    Evaluation,
    Fact,
    Fix,
    Kind,
    MissingFact,
    Reason,
    Reporter,
    Request,
    RequestError,
    Severity,
    Verdict,
)
from resolver.util import shell
from resolver.util.versions import driver_series, series_key

__all__ = [
    "FP8_QUANT",
    "GATES_SOURCE_FALLBACK",
    "KINDS",
    "MXFP4_QUANT",
    "MX_QUANT",
    "OK_VERDICTS",
    "UNKNOWN_CODES",
    "UNKNOWN_EXIT",
    "Advisory",
    "Candidate",
    "Decision",
    "Evaluation",
    "Fact",
    "Fix",
    "Kind",
    "MatrixProvider",
    "MissingFact",
    "Reason",
    "Reporter",
    "Request",
    "Severity",
    "Verdict",
    "evaluate_pinned",
    "host_os_warnings",
    "kernel_floor_warnings",
    "node_warnings",
    "rank",
    "solve",
    "unified_memory_warnings",
]


def _validate_quantization(matrix: Matrix, request: Request) -> None:
    """A method no release's ROCm platform ever listed (``capabilities.toml``, read from the
    sdists) is bad input on an AMD node, with the nearest names."""
    quant = (request.quantization or "").lower()
    # Each set only when its option is given: every release's lists, for nothing otherwise.
    listed = {q for c in matrix.capabilities for q in c.quantization} if quant else set()
    if quant and listed and quant not in listed:
        import difflib

        near = difflib.get_close_matches(quant, sorted(listed), n=3, cutoff=0.5)
        raise RequestError(
            phrase("request/quantization-unknown", quant=request.quantization),
            hint=phrase("request/quantization-unknown-hint", near=tuple(near))
            if near
            else phrase("request/quantization-unknown-hint-none"),
        )


def _validate_kv_cache_dtype(matrix: Matrix, request: Request) -> None:
    """A KV cache dtype no release's ``CacheDType`` ever named is bad input, for either vendor
    (CacheDType is platform-wide), with the nearest names."""
    kv = (request.kv_cache_dtype or "").lower()
    dtypes = {d for c in matrix.capabilities for d in c.kv_cache_dtypes} if kv else set()
    if kv and dtypes and kv not in dtypes:
        import difflib

        near = difflib.get_close_matches(kv, sorted(dtypes), n=3, cutoff=0.5)
        raise RequestError(
            phrase("request/kv-unknown", kv=request.kv_cache_dtype),
            hint=phrase("request/kv-unknown-hint", near=tuple(near))
            if near
            else phrase("request/kv-unknown-hint-none"),
        )


def is_nvidia(node: Node, request: Request) -> bool:
    """Whether the plan is for NVIDIA: asked for, or the node has NVIDIA GPUs and no AMD one
    (decided here, so an AMD node's check never imports the CUDA solver)."""
    if request.vendor is not None:
        return request.vendor == "nvidia"
    return not node.gfx_targets and bool(node.nvidia_gpus)


class Vendor(Protocol):
    """One vendor's side of the solver (resolvelib's provider): its candidates, its rules, its
    preference, what it cannot know. ``MatrixProvider`` (AMD, through ``_Amd``) and
    ``cuda.CudaProvider`` (NVIDIA) are the two; ``solve`` and ``_decide`` are shared."""

    node: Node

    def unplaceable(self) -> tuple[MissingFact, ...]: ...

    def candidates(self) -> Iterable[Candidate]: ...

    def evaluate(self, cand: Candidate) -> Evaluation: ...

    def rank_key(self, e: Evaluation) -> tuple[object, ...]: ...

    def nothing_listed(self) -> tuple[MissingFact, ...]: ...

    def unread(self, rejected: tuple[Evaluation, ...]) -> tuple[MissingFact, ...]: ...

    def warnings(
        self, plan: Evaluation | None, rejected: tuple[Evaluation, ...], accepted: list[Evaluation]
    ) -> list[Advisory]: ...

    def finish(self, chosen: Evaluation) -> Evaluation: ...


class _Amd:
    """The AMD side: ``MatrixProvider``'s candidates and rules, the driver-window preference
    where the node's driver is unknown, and the node's advisories."""

    def __init__(self, matrix: Matrix, node: Node, request: Request) -> None:
        if not node.gfx_targets:
            # Say why, when the probe knows: "permission denied on /dev/kfd" needs another fix
            # than "no GPU".
            cause = next((p for p in node.problems if p.code != "no-gpu"), None)
            raise RequestError(
                phrase("request/no-amd-gpu-because", cause=cause.message)
                if cause
                else phrase("request/no-amd-gpu"),
                hint=phrase("request/no-amd-gpu-hint-because", cause=cause.hint)
                if cause
                else phrase("request/no-amd-gpu-hint"),
            )
        _validate_quantization(matrix, request)
        self.matrix = matrix
        self.node = node
        self.request = request

    @functools.cached_property
    def provider(self) -> MatrixProvider:
        # Made once the node's gfx targets are known to be in the data (``unplaceable``).
        return MatrixProvider(self.matrix, self.node, self.request, record=False)

    def finish(self, chosen: Evaluation) -> Evaluation:
        """The plan or an alternative with the advisories said of a named path
        (``advisories.candidate_warnings``), made for the paths the answer names only (at 4x the
        data, hundreds pass)."""
        said = advisories.candidate_warnings(self.matrix, chosen.candidate, self.provider.targets)
        return replace(chosen, warnings=(*chosen.warnings, *said)) if said else chosen

    @functools.cached_property
    def _window(self) -> Callable[[Evaluation], tuple[int, ...]] | None:
        unknown_driver = self.node.driver_version is None and not self.provider.inbox
        return _oldest_driver(self.matrix) if unknown_driver else None

    def unplaceable(self) -> tuple[MissingFact, ...]:
        return _unplaceable(self.matrix, self.node, self.request)

    def candidates(self) -> Iterable[Candidate]:
        return self.provider.candidates()

    def evaluate(self, cand: Candidate) -> Evaluation:
        return self.provider.evaluate(cand)

    def rank_key(self, e: Evaluation) -> tuple[object, ...]:
        return _rank(e, self.request.prefer, self._window, self.matrix.newest_first)

    def nothing_listed(self) -> tuple[MissingFact, ...]:
        spec = str(self.request.vllm) if self.request.vllm else "any"
        vllm = self.matrix.vllm
        if self.request.paths is not None:
            self._no_path_of_kind(spec)
        raise RequestError(
            phrase("request/no-release", spec=spec),
            hint=phrase("request/no-release-hint", first=vllm[0].version, last=vllm[-1].version)
            if vllm
            else phrase("request/no-release-hint-none"),
        )

    def _no_path_of_kind(self, spec: str) -> None:
        """Where the request's releases are known but none has a path of the kinds it allows
        (`image --vllm ==0.6.0`: no image of 0.6.0 is in the data), say that, and the releases
        that have one: not that no release matches."""
        request = self.request
        known = [r.version for r in self.matrix.vllm if self.provider.in_spec(r.version)]
        if not known or request.paths is None:
            return
        kinds = sorted(request.paths)
        anyone = MatrixProvider(self.matrix, self.node, replace(request, vllm=None), record=False)
        having = sorted({c.vllm for c in anyone.candidates()})
        kind = phrase(_KIND_WORDS[kinds[0]]) if len(kinds) == 1 else ", ".join(kinds)
        raise RequestError(
            phrase("request/no-path-of-kind", kind=kind, spec=spec),
            hint=phrase("request/no-path-of-kind-hint", kind=kind, first=having[0], last=having[-1])
            if having
            else phrase("request/no-path-of-kind-hint-none", kind=kind),
        )

    def unread(self, rejected: tuple[Evaluation, ...]) -> tuple[MissingFact, ...]:
        # A release whose facts are unknown might run here: the honest answer is "unknown".
        return _missing_releases(
            [e for e in rejected if {r.code for r in e.reasons} <= UNKNOWN_CODES]
        )

    def warnings(
        self, plan: Evaluation | None, rejected: tuple[Evaluation, ...], accepted: list[Evaluation]
    ) -> list[Advisory]:
        m, request = self.matrix, self.request
        out = stack_choice(plan, rejected, accepted)
        out += node_warnings(m, self.node, request, plan)
        out += newer_unknown(m, request, plan)
        return out


# How an error names a kind of path (``Request.paths``).
_KIND_WORDS = {
    "image": "request/kind/image",
    "wheel": "request/kind/wheel",
    "source": "request/kind/source",
}


def _vendor(matrix: Matrix, node: Node, request: Request) -> Vendor:
    if is_nvidia(node, request):
        from resolver.solve.cuda import CudaProvider

        return CudaProvider(matrix, node, request)
    return _Amd(matrix, node, request)


def solve(
    matrix: Matrix, node: Node, request: Request, reporter: Reporter | None = None
) -> Decision:
    """Weigh every candidate path for ``node`` and decide, for either vendor: the vendor's
    provider lists and checks the candidates, ``_decide`` chooses the verdict."""
    reporter = reporter or Reporter()
    if request.model is not None:  # the checkpoint's quantization is the request's
        from resolver.solve.model import with_checkpoint

        request = with_checkpoint(request)
    _validate_kv_cache_dtype(matrix, request)
    side = _vendor(matrix, node, request)
    early = side.unplaceable()
    if early:
        return _unknown(side.node, request, early)
    evaluations: list[Evaluation] = []
    for cand in side.candidates():
        reporter.considering(cand)
        ev = side.evaluate(cand)
        (reporter.accepting(cand) if ev.ok else reporter.rejecting(cand, ev.reasons))
        evaluations.append(ev)
    if not evaluations:
        return _unknown(side.node, request, side.nothing_listed())
    decision = _decide(side, request, sorted(evaluations, key=side.rank_key))
    if request.model is not None:
        from resolver.solve.model import answer

        decision = replace(decision, model=answer(matrix, decision))
    return decision


def _decide(side: Vendor, request: Request, ranked: list[Evaluation]) -> Decision:
    """The verdict, for both vendors, in one precedence: an official path (supported, or
    source_build_required where only a build passes); an unofficial one (unofficial_only);
    else facts the data lacks (unknown: never a no where a release nobody read might run), else
    a host change that opens a path (blocked_host_fix), else unsupported. An exit-0 answer
    resting on a fact nobody could check (an NVIDIA GPU whose compute capability is unknown;
    under --strict every advisory of ``UNCHECKED_CODES``) is unknown, each such fact named."""
    node = side.node
    accepted = [e for e in ranked if e.ok]
    official = [e for e in accepted if not e.unofficial]
    rejected = tuple(e for e in ranked if not e.ok)
    blockers = _common_reasons(rejected) if not accepted else ()
    plan: Evaluation | None = None
    host_fix: Evaluation | None = None
    missing: tuple[MissingFact, ...] = ()
    verdict: Verdict
    if official:
        plan = side.finish(official[0])
        prebuilt_ok = any(not e.candidate.from_source for e in official)
        verdict = "supported" if prebuilt_ok else "source_build_required"
    elif accepted:
        plan = side.finish(accepted[0])
        verdict = "unofficial_only"
    elif missing := side.unread(rejected):
        # A release whose facts the data lacks might run here: the honest answer is unknown.
        verdict = "unknown"
    elif fixable := [e for e in rejected if e.host_fixable]:
        host_fix = fix_order(fixable)[0]
        verdict = "blocked_host_fix"
    else:
        verdict = "unsupported"
    warnings = list(plan.warnings if plan else ())
    warnings += side.warnings(plan, rejected, accepted)
    warnings += prefer_not_met(request, plan, rejected)
    warnings = list(dict.fromkeys(warnings))
    unchecked_codes = UNCHECKED_CODES if request.strict else FACT_UNKNOWN_CODES
    unchecked = {
        (w.code, w.message): MissingFact.unchecked(w) for w in warnings if w.code in unchecked_codes
    }
    if verdict in OK_VERDICTS and unchecked:
        verdict, plan, missing = "unknown", None, tuple(unchecked.values())
        warnings = [w for w in warnings if w.code not in unchecked_codes]
    if verdict == "supported" and any(w.severity == "warning" for w in warnings):
        verdict = "supported_with_warnings"
    return Decision(
        verdict=verdict,
        node=node,
        request=request,
        plan=plan,
        warnings=tuple(warnings),
        rejected=rejected,
        alternatives=tuple(side.finish(e) for e in distinct_alternatives(accepted, plan))
        if plan is not None
        else (),
        blockers=blockers,
        host_fix=host_fix,
        missing=missing,
    )


def _oldest_driver(matrix: Matrix) -> Callable[[Evaluation], tuple[int, ...]]:
    """A path's driver floor: the oldest amdgpu series that runs its ROCm (lower fits more
    hosts); a ROCm no series in AMD's table runs comes last."""

    def floor(e: Evaluation) -> tuple[int, ...]:
        rocm = e.candidate.rocm
        drivers = matrix.drivers_running(rocm) if rocm is not None else ()
        return min((series_key(d.series) for d in drivers), default=(1 << 30,))

    return floor


def _unplaceable(matrix: Matrix, node: Node, request: Request) -> tuple[MissingFact, ...]:
    """Facts of the node or request the data cannot place, so that any answer would be a guess:
    a gfx target the data does not know, a driver that matches no series in AMD's table, a vLLM
    release newer than every release the data knows (it may exist upstream: the refresh reads
    it)."""
    known_gfx = ", ".join(sorted(g.name for g in matrix.gfx))
    missing: list[MissingFact] = [
        MissingFact(
            kind="gfx",
            subject=g,
            detail=phrase("missing/gfx", gfx=g, known=known_gfx),
            fetch=None,
            source=Phrase.verbatim("matrix/gfx.toml"),
        )
        for g in node.gfx_targets
        if matrix.gfx_target(g) is None
    ]
    if node.driver_version:
        found = matrix.driver(driver_series(node.driver_version))
        if found is None:
            known = ", ".join(d.series for d in matrix.drivers)
            missing.append(
                MissingFact(
                    kind="driver",
                    subject=node.driver_version,
                    detail=phrase("missing/driver", driver=node.driver_version, known=known),
                    fetch=None,  # AMD's table is curated data; no refresh reads it
                    source=Phrase.verbatim("matrix/drivers.toml"),
                )
            )
    if request.vllm is not None and matrix.vllm:
        newest = max(r.version for r in matrix.vllm)
        wanted = [
            v
            for v in (_pinned(request.vllm),)
            if v is not None and v > newest and not any(r.version == v for r in matrix.vllm)
        ]
        for v in wanted:
            missing.append(
                MissingFact(
                    kind="release",
                    subject=str(v),
                    detail=phrase("missing/release-newer", vllm=v, newest=newest),
                    fetch=shell.join(
                        [
                            "rocm-vllm",
                            "matrix",
                            "refresh",
                            "--source",
                            "sdist",
                            "--tag",
                            str(v),
                            "--write",
                        ]
                    ),
                    source=Phrase.verbatim("matrix/vllm.toml"),
                )
            )
    return tuple(missing)


def _pinned(spec: Any) -> Version | None:
    """The one version an ``==X`` / ``===X`` spec names (``--vllm 0.35.0`` is ``==0.35.0``)."""
    items = list(spec)
    if len(items) == 1 and items[0].operator in ("==", "===") and "*" not in items[0].version:
        try:
            return Version(items[0].version)
        except InvalidVersion:
            return None
    return None


def _unknown(node: Node, request: Request, missing: tuple[MissingFact, ...]) -> Decision:
    problems = [Advisory.of_problem(p) for p in node.problems]
    return Decision(
        verdict="unknown",
        node=node,
        request=request,
        plan=None,
        warnings=tuple(problems),
        rejected=(),
        alternatives=(),
        missing=missing,
    )


def _missing_releases(unread: list[Evaluation]) -> tuple[MissingFact, ...]:
    out: dict[str, MissingFact] = {}
    for e in unread:
        v = str(e.candidate.vllm)
        if v in out:
            continue
        key = (
            "missing/release-arch"
            if any(r.code == "artifact-facts-unknown" for r in e.reasons)
            else "missing/release-build"
        )
        out[v] = MissingFact(
            kind="release",
            subject=v,
            detail=phrase(key, vllm=v),
            fetch=shell.join(
                ["rocm-vllm", "matrix", "refresh", "--source", "sdist", "--tag", v, "--write"]
            ),
            source=Phrase.verbatim(
                e.candidate.release.provenance.source if e.candidate.release else ""
            ),
        )
    return tuple(out.values())


def _common_reasons(rejected: tuple[Evaluation, ...]) -> tuple[Reason, ...]:
    """Reason codes that stop every candidate: the root causes worth leading with."""
    # A release whose facts are unknown fails for that reason alone; it says nothing about the node.
    rejected = tuple(e for e in rejected if not {r.code for r in e.reasons} <= UNKNOWN_CODES)
    if not rejected:
        return ()
    common = set.intersection(*({r.code for r in e.reasons} for e in rejected))
    seen: dict[str, Reason] = {}
    for e in rejected:
        for r in e.reasons:
            if r.code in common and r.code not in seen:
                seen[r.code] = r
    return tuple(seen.values())


def evaluate_pinned(
    matrix: Matrix, node: Node, request: Request, candidate: Candidate
) -> Evaluation:
    """``candidate`` (say, another node's plan) with every check made on ``node``: the AMD
    provider's, or the CUDA ones for an NVIDIA image."""
    if candidate.vendor == "nvidia":
        from resolver.solve.cuda import evaluate_candidate

        return evaluate_candidate(matrix, node, candidate, request)
    return MatrixProvider(matrix, node, request).evaluate(candidate)
