"""The provider: a thin adapter from the matrix and the node to the solver's questions.

``MatrixProvider`` reads the node's facts (its gfx targets, driver series, glibc), lists the
candidate paths (every image, wheel and source build per ROCm stack of the requested releases),
and evaluates each one by running ``RULES`` in order: each rule calls the checks of one family of
codes (``resolver.solve.checks``) or the candidate advisories (``resolver.solve.advisories``). A
new check is a new rule in that list.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import msgspec
from msgspec.structs import replace
from packaging.version import Version

from resolver.data.codes import GATE_CODES
from resolver.data.model import DriverSeries, GfxTarget, Matrix
from resolver.data.node import Node
from resolver.solve import advisories, checks
from resolver.solve.finding import phrase
from resolver.solve.host import driver_os, host_blockers, host_glibc
from resolver.solve.types import (
    Advisory,
    Candidate,
    Evaluation,
    ImageCandidate,
    Kind,
    Reason,
    Request,
    RequestError,
    SourceCandidate,
    WheelCandidate,
)
from resolver.util.versions import driver_series

if TYPE_CHECKING:
    from resolver.solve.modelspec import GpuMemory


def override_ok(targets: tuple[GfxTarget, ...]) -> bool:
    """Whether a node of these GPUs can take a GPU's HSA override: HSA_OVERRIDE_GFX_VERSION is
    process-wide, so every GPU then loads the near target's code. Only where each GPU takes that
    one override or is its near target itself (gfx1031 beside gfx1030, not beside gfx1100, which
    would load gfx1030 code too)."""
    taking = [t for t in targets if t.override]
    if not taking:
        return True
    near = {t.override_target for t in taking}
    return len({t.override for t in taking}) == 1 and all(
        t.override or t.name in near for t in targets
    )


class MatrixProvider:
    """Answers the solver's questions from the matrix: which paths exist, and what stops each."""

    def __init__(
        self, matrix: Matrix, node: Node, request: Request, *, record: bool = True
    ) -> None:
        self.m = matrix
        self.node = node
        self.request = request
        # record=False: the record advisories are left to the caller (the solver adds them to the
        # plan and its alternatives only: the other accepted paths' are never said)
        self.record = record
        self.rules = rules_for(request, record=record)
        self.targets = self._targets()
        self.override_ok = override_ok(self.targets)
        self.driver = self._driver()
        # Every GPU runs on the kernel's own amdgpu (Ryzen AI): no amdgpu release to miss.
        self.inbox = bool(self.targets) and all(t.inbox_driver_source for t in self.targets)
        # driver-predates-gpu depends on the GPU and the path's ROCm alone, and a solve asks it of
        # a hundred candidates sharing a dozen ROCm releases.
        self._predates: dict[tuple[str, Version | None], Reason | None] = {}
        self._moves: dict[Version, checks.DriverMove] = {}  # the same, for the driver window
        self._runs: dict[Version, bool] = {}  # the same, for "the driver runs this ROCm"
        self.blockers = host_blockers(matrix, node)  # the same for every candidate
        self._driver_os: dict[tuple[str | None, str | None], Reason | None] = {}
        self._unchecked: dict[str, Advisory | None] = {}

    @functools.cached_property
    def memory(self) -> GpuMemory | None:
        """The GPU memory --model's fit is sized for (``model.gpu_memory``), read once per solve
        and only with a model."""
        from resolver.solve.model import gpu_memory

        return gpu_memory(self.m, self.node)

    # node facts ----------------------------------------------------------------------------

    def _targets(self) -> tuple[GfxTarget, ...]:
        out = []
        for name in self.node.gfx_targets:
            target = self.m.gfx_target(name)
            if target is None:
                known = ", ".join(sorted(g.name for g in self.m.gfx))
                raise RequestError(
                    phrase("request/gfx-unknown", gfx=name),
                    hint=phrase("request/gfx-unknown-hint", known=known),
                    gfx=True,
                )
            out.append(target)
        return tuple(out)

    def _driver(self) -> DriverSeries | None:
        if not self.node.driver_version:
            return None
        return self.m.driver(driver_series(self.node.driver_version))

    def predates(self, target: GfxTarget, cand: Candidate) -> Reason | None:
        """``driver-predates-gpu`` for ``target`` on ``cand``'s ROCm, decided once per solve."""
        key = (target.name, cand.rocm)
        if key not in self._predates:
            assert self.driver is not None
            self._predates[key] = checks.driver_predates_gpu(
                self.m, self.node, self.driver, target, cand
            )
        return self._predates[key]

    def release_unchecked(self, target: GfxTarget) -> Advisory | None:
        """``driver-release-unchecked`` for ``target``, decided once per solve."""
        if target.name not in self._unchecked:
            assert self.driver is not None
            self._unchecked[target.name] = checks.driver_release_unchecked(
                self.m, self.node, self.driver, target
            )
        return self._unchecked[target.name]

    def driver_os(self, reasons: list[Reason]) -> Reason | None:
        """``driver-os-unsupported`` for a path with these reasons: about the driver its driver
        move goes to, if it has one, else the host's; decided once per solve for each."""
        move = None
        for r in reasons:
            if r.fix is not None and r.fix.change is not None and r.fix.change.kind == "driver":
                move = r.fix
                break
        key = (move.change.value, move.os_first) if move and move.change else (None, None)
        if key not in self._driver_os:
            self._driver_os[key] = driver_os(self.m, self.node, move)
        return self._driver_os[key]

    def driver_runs(self, rocm: Version) -> bool:
        """``checks.driver_runs`` for ``rocm``, decided once per solve."""
        runs = self._runs.get(rocm)
        if runs is None:
            runs = self._runs[rocm] = checks.driver_runs(self.m, self.node, self.driver, rocm)
        return runs

    def driver_move(self, rocm: Version) -> checks.DriverMove:
        """The move from the node's driver to one that runs ``rocm``, found once per solve."""
        if rocm not in self._moves:
            assert self.driver is not None
            self._moves[rocm] = checks.driver_move(self.m, self.driver, rocm, self.node)
        return self._moves[rocm]

    # candidates ----------------------------------------------------------------------------

    def _wanted(self, kind: Kind) -> bool:
        return self.request.paths is None or kind in self.request.paths

    def in_spec(self, version: Version) -> bool:
        """Whether the request's ``--vllm`` takes ``version`` (any does without one)."""
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
        for img in self.m.images:
            if img.vllm is not None and self.in_spec(img.vllm):
                rel = self.m.vllm_release(img.vllm)
                stack = rel.stack_named(img.stack) if rel is not None and img.stack else None
                yield ImageCandidate(
                    vllm=img.vllm, rocm=img.rocm, image=img, release=rel, stack=stack
                )

    def _wheel_candidates(self) -> Iterator[Candidate]:
        for wheel in self.m.wheels:
            if wheel.status != "release" or wheel.vllm is None:
                continue
            # The releases its range holds, in the data's order (data.build._with_releases):
            # not every release scanned for each variant (~1,600 lookups a solve at 4x the data).
            for version in wheel.releases:
                rel = self.m.vllm_release(version)
                if rel is not None and self.in_spec(rel.version):
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
            if not self.in_spec(rel.version):
                continue
            if not rel.stacks:
                yield SourceCandidate(vllm=rel.version, rocm=None, release=rel)
            # Each ROCm stack is its own path: the host's driver may run one and not another.
            for st in rel.stacks:
                yield SourceCandidate(vllm=rel.version, rocm=st.rocm, release=rel, stack=st)

    # evaluation ----------------------------------------------------------------------------

    def evaluate(self, cand: Candidate) -> Evaluation:
        """What stops ``cand`` here (reasons), what to watch for (warnings), and whether it is
        official: each rule of ``RULES`` in turn, then the verdict's flags."""
        if cand.from_source and (cand.release is None or not cand.release.known):
            return self._evaluate_unread(cand)
        found = _Found()
        for rule in self.rules:
            rule(self, cand, found)
        # A build on a ROCm nightly is for trying a GPU, not an official path.
        unofficial = found.unofficial or (cand.stack is not None and cand.stack.preview)
        cmake_only = cand.from_source and any(t.name not in cand.arch for t in self.targets)
        return Evaluation(
            runs_as=tuple(found.runs_as.items()) if found.runs_as else (),
            candidate=cand,
            reasons=_about(cand, found.reasons),
            warnings=tuple(found.warnings),
            unofficial=unofficial,
            override=found.override,
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
        reasons.extend(self.blockers.every)  # the host stops any release, read or not
        if self.request.model is not None:  # a model too big for the node, whatever the release
            from resolver.solve.model import fit_rules

            reasons.extend(fit_rules(self.m, self.node, self.request, cand, self.memory)[0])
        r_os = self.driver_os(reasons)
        if r_os is not None:
            reasons.append(r_os)
        # A driver older than the GPU stops any release, read or not.
        if self.driver is not None:
            for target in self.targets:
                r_old = self.predates(target, cand)
                if r_old is not None:
                    reasons.append(r_old)
        return Evaluation(candidate=cand, reasons=_about(cand, reasons), warnings=())


class _Found(msgspec.Struct):
    """What the rules have found so far about one candidate."""

    reasons: list[Reason] = msgspec.field(default_factory=list)
    warnings: list[Advisory] = msgspec.field(default_factory=list)
    unofficial: bool = False
    override: str | None = None  # the HSA_OVERRIDE_GFX_VERSION the path relies on
    # node gfx -> the near target whose code it runs under that override
    runs_as: dict[str, str] = msgspec.field(default_factory=dict)
    predates: Reason | None = None  # the first driver-predates-gpu, whose fix the window takes


# --- the rules, in the order a candidate is checked (each one code family of checks/) -------


def _gpu(p: MatrixProvider, cand: Candidate, found: _Found) -> None:
    """gfx-unsupported, gfx-not-shipped (or the override or CMake the path relies on)."""
    for target in p.targets:
        r, unofficial, override = checks.gfx_check(cand, target, p.m, override=p.override_ok)
        if r is not None:
            found.reasons.append(r)
        found.unofficial |= unofficial
        found.override = found.override or override
        if override is not None and target.override_target:
            found.runs_as[target.name] = target.override_target


def _gates(p: MatrixProvider, cand: Candidate, found: _Found) -> None:
    """fp8-unsupported, mx-unsupported, kv-fp8-unsupported: what the GPUs lack."""
    found.reasons.extend(checks.gate_checks(p.m, cand, p.targets, p.request))


def _listed(p: MatrixProvider, cand: Candidate, found: _Found) -> None:
    """quantization-not-listed, kv-cache-dtype-not-listed, kv-cache-dtype-no-backend,
    fp8-not-admitted: what the release accepts."""
    for listed in (
        checks.quantization_listed(p.m, cand, p.request),
        checks.kv_cache_dtype_listed(p.m, cand, p.request),
        checks.kv_cache_dtype_backend(p.m, cand, p.request),
        checks.fp8_admitted(p.m, cand, p.targets, p.request),
    ):
        if listed is not None:
            found.reasons.append(listed)


def _driver_age(p: MatrixProvider, cand: Candidate, found: _Found) -> None:
    """driver-predates-gpu: a driver older than a GPU stops every path (driver-release-unchecked
    where the node's release within its series cannot tell)."""
    if p.driver is None:
        return
    for target in p.targets:
        r_old = p.predates(target, cand)
        if r_old is not None:
            found.reasons.append(r_old)
            found.predates = found.predates or r_old
        elif (unchecked := p.release_unchecked(target)) is not None:
            found.warnings.append(unchecked)


def _driver_window(p: MatrixProvider, cand: Candidate, found: _Found) -> None:
    """driver-window (with driver-unchecked, unknown-driver, preview-rocm)."""
    if cand.rocm is None or p.driver_runs(cand.rocm):
        return  # the node's driver runs this ROCm: nothing to say (most paths)
    r_drv, w_drv = checks.driver_check(
        p.m, p.node, p.driver, cand, move=p.driver_move, inbox=p.inbox
    )
    if r_drv is not None:
        if found.predates is not None and r_drv.fix is not None:
            # One driver move must cure both: the one that knows the GPU and runs this ROCm
            # (the predates fix is chosen among exactly those).
            r_drv = replace(r_drv, fix=found.predates.fix, hint=found.predates.hint)
        found.reasons.append(r_drv)
    found.warnings.extend(w_drv)


def _wheel(p: MatrixProvider, cand: Candidate, found: _Found) -> None:
    """python-mismatch, glibc-too-old, host-rocm-mismatch (and what could not be checked)."""
    if (wheel := cand.installs) is not None:
        reasons, warnings = checks.wheel_checks(p.node, wheel, *host_glibc(p.m, p.node))
        found.reasons.extend(reasons)
        found.warnings.extend(warnings)


def _host(p: MatrixProvider, cand: Candidate, found: _Found) -> None:
    """wsl-host, driver-os-unsupported, gpu-access-denied: what stops vLLM at start on this host
    (a wheel runs as the user; a Docker daemon's container as root)."""
    found.reasons.extend(p.blockers.every)
    if cand.runs_as_user:
        found.reasons.extend(p.blockers.as_user)
    r_os = p.driver_os(found.reasons)
    if r_os is not None:
        found.reasons.append(r_os)


def _record(p: MatrixProvider, cand: Candidate, found: _Found) -> None:
    """rocm-lacks-gfx, arch-from-docs and the advisories of the candidate's own record (channel,
    stack, confidence): said only of a path that passes (``advisories.candidate_warnings``); the
    solver leaves them to ``Vendor.finish``, for the plan and its alternatives."""
    if not found.reasons and p.record:
        found.warnings.extend(advisories.candidate_warnings(p.m, cand, p.targets))


Rule = Callable[[MatrixProvider, Candidate, _Found], None]


def _model(p: MatrixProvider, cand: Candidate, found: _Found) -> None:
    """--model: the release's registry and ROCm attention backends, and the memory fit
    (model-architecture-unsupported, model-rocm-unsupported, model-attention-unsupported,
    model-does-not-fit, model-context-too-long, and what could not be checked)."""
    if p.request.model is None:
        return  # a check without --model never imports the model's modules
    from resolver.solve.model import model_rules

    reasons, warnings = model_rules(p.m, p.node, p.request, cand, amd=True, memory=p.memory)
    found.reasons.extend(reasons)
    found.warnings.extend(warnings)


RULES: tuple[Rule, ...] = (
    _gpu,
    _gates,
    _listed,
    _driver_age,
    _driver_window,
    _wheel,
    _host,
    _model,
    _record,  # last: it reads whether any rule rejected the path
)


# Rules that judge only the quantization or KV cache dtype a request asks (``rules_for`` leaves
# them out when it asks neither, as it leaves out ``_model`` without a model and ``_record`` when
# the caller says the record's advisories): each would find nothing for hundreds of candidates.
_FEATURE_RULES: frozenset[Rule] = frozenset({_gates, _listed})


def rules_for(request: Request, *, record: bool = True) -> tuple[Rule, ...]:
    """``RULES`` less those that can find nothing for this request: the feature rules when it
    asks no quantization or KV cache dtype, ``_model`` without a model, ``_record`` when the
    caller says the record's advisories itself (tests/test_solve.py runs both and compares)."""
    features = bool(request.gated_quantization or request.kv_cache_dtype)
    return tuple(
        rule
        for rule in RULES
        if (features or rule not in _FEATURE_RULES)
        and (request.model is not None or rule is not _model)
        and (record or rule is not _record)
    )


def _about(cand: Candidate, reasons: list[Reason]) -> tuple[Reason, ...]:
    """The reasons, each saying which release and stack it rejects (the feature gates are about
    the GPU, whatever the path)."""
    if not reasons:
        return ()
    stack = cand.stack.variant if cand.stack is not None else None
    return tuple(
        r if r.code in GATE_CODES else replace(r, release=cand.vllm, stack=stack) for r in reasons
    )
