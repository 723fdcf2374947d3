"""The provider: a thin adapter from the matrix and the node to the solver's questions.

``MatrixProvider`` reads the node's facts (its gfx targets, driver series, glibc), lists the
candidate paths (every image, wheel and source build per ROCm stack of the requested releases),
and evaluates each one by calling the checks (``resolver.solve.checks``) and the candidate
advisories (``resolver.solve.advisories``).
"""

from __future__ import annotations

from collections.abc import Iterator

from msgspec.structs import replace
from packaging.version import Version

from resolver.data.codes import GATE_CODES
from resolver.data.model import DriverSeries, GfxTarget, Matrix
from resolver.data.node import Node
from resolver.solve import advisories, checks
from resolver.solve.types import (
    Advisory,
    Candidate,
    Evaluation,
    ImageCandidate,
    Kind,
    Reason,
    Request,
    SourceCandidate,
    WheelCandidate,
)
from resolver.util.errors import UnknownGfxError
from resolver.util.versions import driver_series


class MatrixProvider:
    """Answers the solver's questions from the matrix: which paths exist, and what stops each."""

    def __init__(self, matrix: Matrix, node: Node, request: Request) -> None:
        self.m = matrix
        self.node = node
        self.request = request
        self.targets = self._targets()
        self.driver = self._driver()

    # node facts ----------------------------------------------------------------------------

    def _targets(self) -> tuple[GfxTarget, ...]:
        out = []
        for name in self.node.gfx_targets:
            target = self.m.gfx_target(name)
            if target is None:
                known = ", ".join(sorted(g.name for g in self.m.gfx))
                raise UnknownGfxError(
                    f"gfx target {name!r} is not in the compatibility data",
                    hint=f"known targets: {known}",
                )
            out.append(target)
        return tuple(out)

    def _driver(self) -> DriverSeries | None:
        if not self.node.driver_version:
            return None
        return self.m.driver(driver_series(self.node.driver_version))

    def glibc(self) -> tuple[Version | None, str]:
        if self.node.glibc:
            try:
                return Version(self.node.glibc), "the node's glibc"
            except Exception:  # noqa: BLE001 - a probe string we cannot parse is simply unknown
                return None, ""
        if self.node.os:
            os_rel = self.m.os_listed_as(self.node.os)
            if os_rel is not None and os_rel.glibc is not None:
                return os_rel.glibc, os_rel.provenance.source
        return None, ""

    # candidates ----------------------------------------------------------------------------

    def _wanted(self, kind: Kind) -> bool:
        return self.request.paths is None or kind in self.request.paths

    def _in_spec(self, version: Version) -> bool:
        spec = self.request.vllm
        return spec is None or spec.contains(version, prereleases=True)

    def candidates(self) -> Iterator[Candidate]:
        """Every path the request allows: images, then wheels, then source builds."""
        if self._wanted("image"):
            yield from self._image_candidates()
        if self._wanted("wheel"):
            yield from self._wheel_candidates()
        if self._wanted("source"):
            yield from self._source_candidates()

    def _image_candidates(self) -> Iterator[Candidate]:
        releases = {r.version: r for r in self.m.vllm}
        for img in self.m.images:
            if img.vllm is not None and self._in_spec(img.vllm):
                rel = releases.get(img.vllm)
                stack = rel.stack_named(img.stack) if rel is not None and img.stack else None
                yield ImageCandidate(
                    vllm=img.vllm, rocm=img.rocm, image=img, release=rel, stack=stack
                )

    def _wheel_candidates(self) -> Iterator[Candidate]:
        for wheel in self.m.wheels:
            if wheel.status != "release" or wheel.vllm is None:
                continue
            for rel in self.m.vllm:
                if wheel.vllm.contains(rel.version) and self._in_spec(rel.version):
                    # The release pipeline names a stack's wheels after it (rocm100, rocm72).
                    stack = rel.stack_named(wheel.name)
                    yield WheelCandidate(
                        vllm=rel.version,
                        rocm=wheel.rocm,
                        wheel=wheel,
                        release=rel,
                        stack=stack,
                    )

    def _source_candidates(self) -> Iterator[Candidate]:
        for rel in self.m.vllm:
            if not self._in_spec(rel.version):
                continue
            if not rel.stacks:
                yield SourceCandidate(vllm=rel.version, rocm=None, release=rel)
            # Each ROCm stack is its own path: the host's driver may run one and not another.
            for st in rel.stacks:
                yield SourceCandidate(vllm=rel.version, rocm=st.rocm, release=rel, stack=st)

    # evaluation ----------------------------------------------------------------------------

    def evaluate(self, cand: Candidate) -> Evaluation:
        """What stops ``cand`` here (reasons), what to watch for (warnings), and whether it is
        official."""
        if cand.from_source and (cand.release is None or not cand.release.known):
            return self._evaluate_unread(cand)
        reasons: list[Reason] = []
        warnings: list[Advisory] = []
        unofficial = False
        override: str | None = None
        for target in self.targets:
            r, unoff, ovr = checks.gfx_check(cand, target, self.m)
            if r is not None:
                reasons.append(r)
            unofficial |= unoff
            override = override or ovr
        reasons.extend(checks.gate_checks(self.m, cand, self.targets, self.request))
        for listed in (
            checks.quantization_listed(self.m, cand, self.request),
            checks.kv_cache_dtype_listed(self.m, cand, self.request),
            checks.fp8_admitted(self.m, cand, self.targets, self.request),
        ):
            if listed is not None:
                reasons.append(listed)
        predates: Reason | None = None
        if self.driver is not None:
            for target in self.targets:
                r_old = checks.driver_predates_gpu(self.m, self.node, self.driver, target, cand)
                if r_old is not None:
                    reasons.append(r_old)
                    predates = predates or r_old
        if cand.rocm is not None:
            r_drv, w_drv = checks.driver_check(self.m, self.node, self.driver, cand)
            if r_drv is not None:
                if predates is not None and r_drv.fix is not None:
                    # One driver move must cure both: the one that knows the GPU and runs this
                    # ROCm (the predates fix is chosen among exactly those).
                    r_drv = replace(r_drv, fix=predates.fix, hint=predates.hint)
                reasons.append(r_drv)
            warnings.extend(w_drv)
            warnings.extend(advisories.rocm_lists_gfx(self.m, self.targets, cand))
        if cand.wheel is not None:
            r_w, w_w = checks.wheel_checks(self.node, cand.wheel, *self.glibc())
            reasons.extend(r_w)
            warnings.extend(w_w)
        warnings.extend(advisories.candidate_warnings(cand))
        # A build on a ROCm nightly is for trying a GPU, not an official path.
        unofficial |= cand.stack is not None and cand.stack.preview
        cmake_only = cand.from_source and any(t.name not in cand.arch for t in self.targets)
        return Evaluation(
            candidate=cand,
            reasons=_about(cand, reasons),
            warnings=tuple(warnings),
            unofficial=unofficial,
            override=override,
            cmake_only=cmake_only,
        )

    def _evaluate_unread(self, cand: Candidate) -> Evaluation:
        """A release whose build files were never read: unknown, except what the GPU itself lacks,
        which holds whatever the release pins (a definite no)."""
        reasons = [checks.release_facts_unknown(cand)]
        reasons += [
            checks.gfx_unsupported_by_vllm(t)
            for t in self.targets
            if t.vllm_status == "unsupported"
        ]
        reasons.extend(checks.gate_checks(self.m, cand, self.targets, self.request))
        # A driver older than the GPU stops any release, read or not.
        if self.driver is not None:
            for target in self.targets:
                r_old = checks.driver_predates_gpu(self.m, self.node, self.driver, target, cand)
                if r_old is not None:
                    reasons.append(r_old)
        return Evaluation(candidate=cand, reasons=_about(cand, reasons), warnings=())


def _about(cand: Candidate, reasons: list[Reason]) -> tuple[Reason, ...]:
    """The reasons, each saying which release and stack it rejects (the feature gates are about
    the GPU, whatever the path)."""
    stack = cand.stack.variant if cand.stack is not None else None
    return tuple(
        r if r.code in GATE_CODES else replace(r, release=cand.vllm, stack=stack) for r in reasons
    )
