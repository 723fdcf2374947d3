"""Node facts + request -> a verdict with a plan, or failures as data. Pure: no I/O, no printing.

Shape (resolvelib): a ``MatrixProvider`` lists candidate paths (official image, AMD image, wheel,
source build) and says why each one cannot be used; ``solve`` weighs them, reports progress
through a ``Reporter`` whose hooks do nothing by default, and returns a ``Decision``. Every reason
carries the facts it rests on with their sources, so ``resolver.explain`` can say "Because ...".
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from resolver.errors import InputError, UnknownGfxError
from resolver.model import (
    Confidence,
    ContainerImage,
    DriverSeries,
    GfxTarget,
    Matrix,
    RocmRelease,
    RocmStack,
    VllmRelease,
    WheelVariant,
)
from resolver.node import Node
from resolver.versions import driver_series, series

Kind = Literal["image", "wheel", "source"]
KINDS: tuple[Kind, ...] = ("image", "wheel", "source")
Severity = Literal["info", "warning"]
Verdict = Literal[
    "supported",
    "supported_with_warnings",
    "source_build_required",
    "unofficial_only",
    "unsupported",
    "blocked_host_fix",
    "unknown",
]
# `unknown`: the answer depends on facts the data does not have (never reported as unsupported).
UNKNOWN_EXIT = 6
UNKNOWN_CODES: frozenset[str] = frozenset({"release-facts-unknown", "artifact-facts-unknown"})
OK_VERDICTS: frozenset[str] = frozenset({"supported", "supported_with_warnings", "source_build_required"})

FP8_QUANT = frozenset({"fp8", "fbgemm_fp8", "ptpc_fp8", "fp8_per_tensor", "fp8_per_block", "fp8_per_channel", "deepseek_v4_fp8"})
MX_QUANT = frozenset({"mxfp4", "mxfp8", "gpt_oss_mxfp4"})
# MXFP4 checkpoints also run without MX compute (weight-only dequantization) where a source says so.
MXFP4_QUANT = frozenset({"mxfp4", "gpt_oss_mxfp4"})
# Quantizations vLLM's ROCm platform lists (vllm/platforms/rocm.py@017e9f4448) without a per-arch gate here.
OTHER_QUANT = frozenset(
    {"awq", "gptq", "awq_marlin", "gptq_marlin", "compressed-tensors", "quark", "torchao", "inc", "modelopt", "modelopt_fp4", "online", "bitsandbytes"}
)
GATES_SOURCE_FALLBACK = "matrix/gfx.toml feature gates"


@dataclass(frozen=True, kw_only=True, slots=True)
class Request:
    vllm: SpecifierSet | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    prefer: Kind | None = None
    paths: frozenset[str] | None = None  # restrict candidate kinds, e.g. {"image"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Fact:
    """One sourced statement a decision rests on."""

    text: str
    source: str
    confidence: Confidence = "exact"


@dataclass(frozen=True, kw_only=True, slots=True)
class Fix:
    """The smallest change that would remove a reason. ``host`` fixes change the machine."""

    kind: Literal["driver", "python", "os", "vllm", "quantization", "gfx", "data"]
    text: str
    host: bool
    # The changed fact itself, for code that re-solves with the fix applied (never parse ``text``):
    # driver -> the amdgpu series ("30.30"), python -> "3.12", os -> the glibc floor ("2.35").
    value: str | None = None
    # driver only: "upgrade", or "downgrade" when every driver that runs it is older than the host's.
    direction: Literal["upgrade", "downgrade"] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Reason:
    code: str
    message: str
    facts: tuple[Fact, ...]
    hint: str
    fix: Fix | None = None

    @property
    def source(self) -> str:
        return "; ".join(dict.fromkeys(f.source for f in self.facts))


@dataclass(frozen=True, kw_only=True, slots=True)
class Warning:
    code: str
    message: str
    hint: str
    severity: Severity = "warning"
    source: str = ""
    env: tuple[tuple[str, str], ...] = ()  # the environment the advice asks for, if any
    applied_by_plan: bool = False  # the plan's own run command (`rocm-vllm image`) already sets ``env``


@dataclass(frozen=True, kw_only=True, slots=True)
class Candidate:
    kind: Kind
    vllm: Version
    rocm: Version | None
    release: VllmRelease | None = None
    image: ContainerImage | None = None
    wheel: WheelVariant | None = None
    stack: RocmStack | None = None  # the release's ROCm stack this path builds on, where known

    @property
    def label(self) -> str:
        if self.image is not None:
            return self.image.ref
        if self.wheel is not None:
            return f"vllm=={self.vllm}+{self.wheel.name} (wheel)"
        if self.stack is not None and self.release is not None and len(self.release.stacks) > 1:
            return f"vLLM {self.vllm} from source ({self.stack.variant} stack)"
        return f"vLLM {self.vllm} from source"

    @property
    def channel(self) -> str:
        if self.image is not None:
            if self.image.official:
                return "official image"
            return "deprecated image" if self.image.deprecated else "AMD image"
        return "wheel" if self.kind == "wheel" else "source build"

    @property
    def record(self) -> ContainerImage | WheelVariant | RocmStack | VllmRelease | None:
        """The record this path rests on (a source build: its stack, else its release)."""
        return self.image or self.wheel or (self.stack if self.kind == "source" else None) or self.release

    @property
    def confidence(self) -> Confidence:
        record = self.record
        return record.provenance.confidence if record else "unknown"


@dataclass(frozen=True, kw_only=True, slots=True)
class Evaluation:
    candidate: Candidate
    reasons: tuple[Reason, ...]
    warnings: tuple[Warning, ...]
    unofficial: bool = False  # works only off the supported path (source build for an unshipped gfx, override)
    override: str | None = None  # HSA_OVERRIDE_GFX_VERSION this path relies on
    cmake_only: bool = False  # a source build for a gfx its stack does not ship (CMake accepts it; nothing more)

    @property
    def ok(self) -> bool:
        return not self.reasons

    @property
    def host_fixable(self) -> bool:
        return bool(self.reasons) and all(r.fix is not None and r.fix.host for r in self.reasons)


@dataclass(frozen=True, kw_only=True, slots=True)
class MissingFact:
    """A fact the answer depends on that the data does not hold, and how to get it."""

    kind: Literal["gfx", "release"]
    subject: str  # "gfx1299", "0.34.0"
    detail: str
    fetch: str | None  # the command that reads it from upstream, where one exists
    source: str = ""  # where the data says the subject exists


@dataclass(frozen=True, kw_only=True, slots=True)
class Decision:
    verdict: Verdict
    node: Node
    request: Request
    plan: Evaluation | None
    warnings: tuple[Warning, ...]
    rejected: tuple[Evaluation, ...]
    alternatives: tuple[Evaluation, ...]
    blockers: tuple[Reason, ...] = ()  # reasons shared by every candidate (the root causes)
    host_fix: Evaluation | None = None  # the closest path a host change would open
    missing: tuple[MissingFact, ...] = ()  # with verdict "unknown": what the data lacks

    @property
    def exit_code(self) -> int:
        if self.verdict == "unknown":
            return UNKNOWN_EXIT
        return 0 if self.verdict in OK_VERDICTS else 1


class Reporter:
    """Progress hooks; the default does nothing (the CLI may print with ``--verbose``)."""

    def considering(self, candidate: Candidate) -> None: ...

    def rejecting(self, candidate: Candidate, reasons: tuple[Reason, ...]) -> None: ...

    def accepting(self, candidate: Candidate) -> None: ...


# --- the provider: candidates and their checks ---------------------------------------------


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
            base = ".".join(self.node.os.split(".")[:2])
            os_rel = self.m.os_release(base) or self.m.os_release(self.node.os.split(".")[0])
            if os_rel is None and "-" in self.node.os:
                family, _, ver = self.node.os.partition("-")
                os_rel = self.m.os_release(f"{family}-{ver.split('.')[0]}")
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
        releases = {r.version: r for r in self.m.vllm}
        if self._wanted("image"):
            for img in self.m.images:
                if img.vllm is not None and self._in_spec(img.vllm):
                    rel = releases.get(img.vllm)
                    stack = rel.stack_named(img.stack) if rel is not None and img.stack else None
                    yield Candidate(kind="image", vllm=img.vllm, rocm=img.rocm, image=img, release=rel, stack=stack)
        if self._wanted("wheel"):
            for wheel in self.m.wheels:
                if wheel.status != "release" or wheel.vllm is None:
                    continue
                for rel in self.m.vllm:
                    if wheel.vllm.contains(rel.version) and self._in_spec(rel.version):
                        yield Candidate(kind="wheel", vllm=rel.version, rocm=wheel.rocm, wheel=wheel, release=rel)
        if self._wanted("source"):
            for rel in self.m.vllm:
                if not self._in_spec(rel.version):
                    continue
                if not rel.stacks:
                    yield Candidate(kind="source", vllm=rel.version, rocm=None, release=rel)
                # Each ROCm stack is its own path: the host's driver may run one and not another.
                for st in rel.stacks:
                    yield Candidate(kind="source", vllm=rel.version, rocm=st.rocm, release=rel, stack=st)

    # checks --------------------------------------------------------------------------------

    def evaluate(self, cand: Candidate) -> Evaluation:
        reasons: list[Reason] = []
        warnings: list[Warning] = []
        unofficial = False
        override: str | None = None
        record = cand.record
        record_source = record.provenance.source if record else "matrix/vllm.toml"

        if cand.kind == "source" and (cand.release is None or not cand.release.known):
            reasons.append(self._unknown_release(cand))
            # What the GPU itself lacks holds whatever the release pins: a definite no.
            for target in self.targets:
                if target.vllm_status == "unsupported":
                    reasons.append(
                        Reason(
                            code="gfx-unsupported",
                            message=f"vLLM does not support {target.name}",
                            facts=(Fact(text=f"{target.name}: {target.vllm_note}", source=target.provenance.source,
                                        confidence=target.provenance.confidence),),
                            hint=self._gfx_hint(target),
                        )
                    )
            reasons.extend(self._gate_checks())
            return Evaluation(candidate=cand, reasons=tuple(reasons), warnings=())

        for target in self.targets:
            r, unoff, ovr = self._gfx_check(cand, target, record_source)
            if r is not None:
                reasons.append(r)
            unofficial |= unoff
            override = override or ovr
        reasons.extend(self._gate_checks())
        if cand.rocm is not None:
            r_drv, w_drv = self._driver_check(cand, record_source)
            if r_drv is not None:
                reasons.append(r_drv)
            warnings.extend(w_drv)
            warnings.extend(self._rocm_lists_gfx(cand))
        if cand.kind == "wheel" and cand.wheel is not None:
            r_w, w_w = self._wheel_checks(cand.wheel)
            reasons.extend(r_w)
            warnings.extend(w_w)
        if cand.image is not None:
            warnings.extend(self._image_warnings(cand.image))
        if cand.stack is not None:
            warnings.extend(_stack_warnings(cand, cand.stack))
        if cand.confidence in ("inferred", "release-branch", "unknown"):
            warnings.append(
                Warning(
                    code="low-confidence",
                    severity="info",
                    message=(
                        f"{cand.label}: the tag and its contents are {cand.confidence} (from the release's "
                        "pipeline or a docs page), not confirmed at the registry"
                        if cand.image
                        else f"{cand.label}: facts are {cand.confidence}, not read at the release itself"
                    ),
                    hint="pin and verify it: `rocm-vllm image` with the same node flags, plus --digest --smoke"
                    if cand.image
                    else f"read them exactly from the sdist: `rocm-vllm matrix refresh --source sdist --tag {cand.vllm}`",
                    source=record_source,
                )
            )
        # A build on a ROCm nightly is for trying a GPU, not an official path.
        unofficial |= cand.stack is not None and cand.stack.preview
        shipped = self._shipped(cand)[0]
        cmake_only = cand.kind == "source" and any(t.name not in shipped for t in self.targets)
        return Evaluation(candidate=cand, reasons=tuple(reasons), warnings=tuple(warnings), unofficial=unofficial,
                          override=override, cmake_only=cmake_only)

    def _unknown_release(self, cand: Candidate) -> Reason:
        src = cand.release.provenance.source if cand.release else "matrix/vllm.toml"
        return Reason(
            code="release-facts-unknown",
            message=f"vLLM {cand.vllm}: its ROCm base, arch list and component pins are not in the data",
            facts=(Fact(text=f"vLLM {cand.vllm} exists but its ROCm build files were never read", source=src, confidence="unknown"),),
            hint=f"run `rocm-vllm matrix refresh --source sdist --tag {cand.vllm} --write` to read them from its sdist",
            fix=Fix(kind="data", text=f"refresh the data (`rocm-vllm matrix refresh --source sdist --tag {cand.vllm} --write`)", host=False),
        )

    def _shipped(self, cand: Candidate) -> tuple[tuple[str, ...], str]:
        if cand.image is not None:
            return cand.image.arch, cand.image.provenance.source
        if cand.wheel is not None:
            return cand.wheel.arch, cand.wheel.provenance.source
        assert cand.release is not None
        if cand.stack is not None:
            return cand.stack.arch, cand.stack.provenance.source
        return cand.release.arch, cand.release.provenance.source

    def _gfx_check(self, cand: Candidate, target: GfxTarget, record_source: str) -> tuple[Reason | None, bool, str | None]:
        shipped, src = self._shipped(cand)
        if target.name in shipped:
            return None, False, None
        arch_text = ", ".join(shipped) if shipped else "an unknown arch list"
        if target.vllm_status == "unsupported":
            return (
                Reason(
                    code="gfx-unsupported",
                    message=f"{cand.label} ships code for {arch_text}, not {target.name}; vLLM does not support {target.name}",
                    facts=(
                        Fact(text=f"{cand.label} is built for {arch_text}", source=src, confidence=cand.confidence),
                        Fact(text=f"{target.name}: {target.vllm_note}", source=target.provenance.source, confidence=target.provenance.confidence),
                    ),
                    hint=self._gfx_hint(target),
                ),
                False,
                None,
            )
        if not shipped:
            return (
                Reason(
                    code="artifact-facts-unknown",
                    message=f"{cand.label}: which GPUs it is built for is not in the data",
                    facts=(Fact(text=f"{cand.label} exists; its arch list was never read", source=src, confidence="unknown"),),
                    hint="run `rocm-vllm matrix refresh` to read it, or check it yourself with `rocm-vllm image --smoke`",
                    fix=Fix(kind="data", text="refresh the data (`rocm-vllm matrix refresh --write`)", host=False),
                ),
                False,
                None,
            )
        # A near target the runtime can be told to load (HSA_OVERRIDE_GFX_VERSION): unofficial.
        if target.override and target.override_target in shipped and cand.kind != "source":
            return None, True, target.override
        if cand.kind == "source" and cand.release is not None and target.name in cand.release.cmake_arch:
            return None, True, None
        return (
            Reason(
                code="gfx-not-shipped",
                message=f"{cand.label} ships code for {arch_text}, not {target.name} (expect 'HIP error: invalid device function')",
                facts=(Fact(text=f"{cand.label} is built for {arch_text}", source=src, confidence=cand.confidence),),
                hint=f"choose an artifact built for {target.name}, or build from source: "
                f"`rocm-vllm dockerfile --gfx {target.name}`",
                fix=Fix(kind="gfx", text=f"an artifact built for {target.name}", host=False),
            ),
            False,
            None,
        )

    def _gfx_hint(self, target: GfxTarget) -> str:
        if target.override:
            return (
                f"unofficial: HSA_OVERRIDE_GFX_VERSION={target.override} makes the runtime load {target.override_target} "
                "code; it can crash or compute wrong results"
            )
        if target.name == "gfx906":
            return "community fork nlzy/vllm-gfx906 (unofficial), or llama.cpp; vLLM upstream will not run on gfx906"
        return "no vLLM path exists for this GPU; consider llama.cpp (ROCm or Vulkan) instead"

    def _gate_checks(self) -> list[Reason]:
        reasons: list[Reason] = []
        quant = (self.request.quantization or "").lower() or None
        kv = (self.request.kv_cache_dtype or "").lower() or None
        for target in self.targets:
            gates = target.features
            fact = Fact(
                text=f"{target.name}: FP8 {'yes (' + str(gates.fp8_format) + ')' if gates.fp8 else 'no'}, MX formats {'yes' if gates.mx else 'no'}",
                source=gates.provenance.source,
                confidence=gates.provenance.confidence,
            )
            if quant in FP8_QUANT and not gates.fp8:
                reasons.append(
                    Reason(
                        code="fp8-unsupported",
                        message=f"{quant} quantization needs hardware FP8, which {target.name} ({target.arch}) does not have",
                        facts=(fact,),
                        hint="use a BF16/FP16 checkpoint or an AWQ/GPTQ int4 one on this GPU",
                        fix=Fix(kind="quantization", text="a BF16/FP16 or AWQ/GPTQ checkpoint", host=False),
                    )
                )
            mx_blocked = (quant in MXFP4_QUANT and gates.mxfp4 == "none") or (quant in MX_QUANT - MXFP4_QUANT and not gates.mx)
            if mx_blocked:
                what = (
                    "MX (microscaling) compute, which only gfx950-class GPUs have, and no source says vLLM runs it "
                    f"weight-only on {target.name}"
                    if quant in MXFP4_QUANT
                    else f"MX (microscaling) compute, which only gfx950-class GPUs have; {target.name} does not"
                )
                reasons.append(
                    Reason(
                        code="mx-unsupported",
                        message=f"{quant} needs {what}",
                        facts=(fact,),
                        hint="use an FP8 or BF16 checkpoint of the model" if gates.fp8 else "use a BF16/FP16 or AWQ/GPTQ checkpoint",
                        fix=Fix(kind="quantization", text="a non-MX checkpoint", host=False),
                    )
                )
            if kv is not None and kv.startswith("fp8") and not gates.fp8:
                reasons.append(
                    Reason(
                        code="kv-fp8-unsupported",
                        message=f"--kv-cache-dtype {kv} needs hardware FP8, which {target.name} does not have",
                        facts=(fact,),
                        hint="use --kv-cache-dtype auto",
                        fix=Fix(kind="quantization", text="--kv-cache-dtype auto", host=False),
                    )
                )
        return reasons

    def _driver_check(self, cand: Candidate, record_source: str) -> tuple[Reason | None, list[Warning]]:
        assert cand.rocm is not None
        rocm = self.m.rocm_for(cand.rocm)
        warnings: list[Warning] = []
        if rocm is not None and rocm.stream == "therock-preview":
            warnings.append(
                Warning(
                    code="preview-rocm",
                    message=f"{cand.label} runs on {rocm.label}, a technology preview with no upgrade path from 7.2.x",
                    hint="prefer an artifact on a production ROCm (7.2.x legacy or 7.14+/10.x TheRock)",
                    source=rocm.provenance.source,
                )
            )
        if self.node.driver_version is None:
            warnings.append(
                Warning(
                    code="driver-unchecked",
                    message=f"the host's AMD GPU Driver release is unknown, so nobody checked that it runs ROCm {cand.rocm}",
                    hint="give it with --driver (the amdgpu-install version, e.g. 30.30.3); "
                    "inbox distro drivers are not in AMD's driver/user-space table",
                )
            )
            return None, warnings
        if self.driver is None:
            warnings.append(
                Warning(
                    code="unknown-driver",
                    message=f"amdgpu driver {self.node.driver_version} is not in AMD's driver/user-space table; "
                    f"cannot check that it runs ROCm {cand.rocm}",
                    hint="give the AMD GPU driver release (e.g. 30.30.3); inbox distro drivers are not in AMD's table",
                )
            )
            return None, warnings
        if rocm is not None and rocm.stream == "therock-preview":
            return self._preview_driver_check(cand, rocm, record_source), warnings
        if self.driver.runs(cand.rocm):
            return None, warnings
        good = list(self.m.drivers_running(cand.rocm))
        window = _window(self.driver.user_space)
        return (
            Reason(
                code="driver-window",
                message=f"{cand.label} ships ROCm {cand.rocm}, but amdgpu {self.driver.series}.x runs ROCm user space {window} only",
                facts=(
                    Fact(text=f"{cand.label} ships ROCm {cand.rocm}", source=record_source, confidence=cand.confidence),
                    Fact(
                        text=f"amdgpu {self.driver.series}.x supports ROCm user space {window}",
                        source=self.driver.provenance.source,
                        confidence=self.driver.provenance.confidence,
                    ),
                ),
                hint=self._driver_hint(cand.rocm, good),
                fix=self._driver_fix(cand.rocm, good) if good else None,
            ),
            warnings,
        )

    def _preview_driver_check(self, cand: Candidate, rocm: RocmRelease, record_source: str) -> Reason | None:
        """Previews are not rows of AMD's table; their release notes list the drivers they support."""
        assert self.driver is not None
        listed = {driver_series(d.strip().replace(".x", ".0")) for d in (rocm.kmd_at_release or "").split(",") if d.strip()}
        if self.driver.series in listed:
            return None
        known = f"its release notes list amdgpu {rocm.kmd_at_release}" if listed else "AMD states no driver support for it here"
        return Reason(
            code="driver-window",
            message=f"{cand.label} ships {rocm.label}; {known}, not {self.driver.series}.x",
            facts=(
                Fact(text=f"{cand.label} ships {rocm.label}", source=record_source, confidence=cand.confidence),
                Fact(text=f"{rocm.label}: {known}", source=rocm.provenance.source, confidence=rocm.provenance.confidence),
            ),
            hint="prefer an artifact on a production ROCm release, whose driver support AMD tabulates",
            fix=None,
        )

    def _best_driver(self, rocm: Version, good: list[DriverSeries]) -> tuple[str, Literal["upgrade", "downgrade"]]:
        """The smallest move from the host's driver to one that runs ``rocm``: the oldest series
        newer than the host's; only when none is newer, the newest older one (a downgrade)."""
        here = _series_key(self.driver.series) if self.driver is not None else None
        if here is None:
            paired = [d for d in good if d.paired_rocm and series(Version(d.paired_rocm)) == series(rocm)]
            return (paired[0] if paired else good[0]).series, "upgrade"
        forward = [d for d in good if _series_key(d.series) > here]
        if forward:
            return min(forward, key=lambda d: _series_key(d.series)).series, "upgrade"
        return max(good, key=lambda d: _series_key(d.series)).series, "downgrade"

    def _driver_fix(self, rocm: Version, good: list[DriverSeries]) -> Fix:
        best, direction = self._best_driver(rocm, good)
        return Fix(kind="driver", text=f"amdgpu driver {best}.x", host=True, value=best, direction=direction)

    def _driver_hint(self, rocm: Version, good: list[DriverSeries]) -> str:
        if not good:
            return f"no amdgpu driver in AMD's table runs ROCm {series(rocm)}"
        best, direction = self._best_driver(rocm, good)
        others = ", ".join(d.series + ".x" for d in sorted(good, key=lambda d: _series_key(d.series)) if d.series != best)
        return f"{direction} the host's amdgpu driver to {best}.x" + (f" (also running ROCm {series(rocm)}: {others})" if others else "")

    def _rocm_lists_gfx(self, cand: Candidate) -> list[Warning]:
        assert cand.rocm is not None
        rocm = self.m.rocm_for(cand.rocm)
        if rocm is None or not rocm.gfx:
            return []
        return [
            Warning(
                code="rocm-lacks-gfx",
                message=f"AMD's matrix for {rocm.label} does not list {t.name}; {cand.label} ships code for it anyway",
                hint=f"expect less testing on {t.name}; AMD lists it from {self._first_listing(t.name)}",
                source=rocm.provenance.source,
            )
            for t in self.targets
            if t.name not in rocm.gfx and t.name in self._shipped(cand)[0]
        ]

    def _first_listing(self, gfx: str) -> str:
        listed = sorted(r.version for r in self.m.rocm if gfx in r.gfx)
        return f"ROCm {listed[0]}" if listed else "no ROCm release in the data"

    def _wheel_checks(self, wheel: WheelVariant) -> tuple[list[Reason], list[Warning]]:
        reasons: list[Reason] = []
        warnings: list[Warning] = []
        src = wheel.provenance.source
        py = self.node.python
        wanted = " or ".join(wheel.python)
        if py is None:
            warnings.append(
                Warning(
                    code="python-unknown",
                    message=f"the node's Python is unknown; {wheel.name} wheels exist for CPython {wanted} only",
                    hint=f"create the venv with that Python: `uv venv --python {wheel.python[0]}`",
                    source=src,
                )
            )
        elif py not in wheel.python:
            reasons.append(
                Reason(
                    code="python-mismatch",
                    message=f"{wheel.name} wheels are built for CPython {wanted}; on Python {py} pip silently installs the CUDA wheel from PyPI",
                    facts=(
                        Fact(text=f"{wheel.name} wheels exist for CPython {wanted} only", source=src, confidence=wheel.provenance.confidence),
                        Fact(text="other Pythons fall back to the CUDA wheel", source="vllm-project/vllm#44660"),
                    ),
                    hint=f"use Python {wheel.python[0]} for the venv: `uv venv --python {wheel.python[0]}`",
                    fix=Fix(kind="python", text=f"Python {wheel.python[0]}", host=True, value=wheel.python[0]),
                )
            )
        glibc, glibc_src = self.glibc()
        if glibc is None:
            warnings.append(
                Warning(
                    code="glibc-unknown",
                    message=f"the host's glibc is unknown; {wheel.name} wheels need glibc >= {wheel.glibc_min}",
                    hint="give --os (e.g. ubuntu-22.04) or check `ldd --version`",
                    source=src,
                )
            )
        elif glibc < wheel.glibc_min:
            reasons.append(
                Reason(
                    code="glibc-too-old",
                    message=f"{wheel.name} wheels need glibc >= {wheel.glibc_min}; this host has {glibc}",
                    facts=(
                        Fact(text=f"{wheel.name} wheels need glibc >= {wheel.glibc_min}", source=src, confidence=wheel.provenance.confidence),
                        Fact(text=f"{self.node.os or 'the host'} ships glibc {glibc}", source=glibc_src or "probe"),
                    ),
                    hint=f"use the container image instead, or a host OS with glibc >= {wheel.glibc_min} (Ubuntu 22.04 has 2.35)",
                    fix=Fix(kind="os", text=f"a host OS with glibc >= {wheel.glibc_min}", host=True, value=str(wheel.glibc_min)),
                )
            )
        if self.node.rocm_version and wheel.rocm is not None:
            try:
                host_rocm = Version(self.node.rocm_version)
            except Exception:  # noqa: BLE001 - unparsable probe value: nothing to compare
                host_rocm = None
            if host_rocm is not None and series(host_rocm) != series(wheel.rocm):
                warnings.append(
                    Warning(
                        code="host-rocm-shadowing",
                        message=f"the host has ROCm {host_rocm}; the {wheel.name} wheel's torch brings ROCm {wheel.rocm} libraries",
                        hint="keep /opt/rocm*/lib off LD_LIBRARY_PATH in the venv (ROCm/rocm-libraries#4547)",
                        source="ROCm/rocm-libraries#4547",
                    )
                )
        return reasons, warnings

    def _image_warnings(self, image: ContainerImage) -> list[Warning]:
        out: list[Warning] = []
        if image.deprecated:
            out.append(
                Warning(
                    code="deprecated-channel",
                    message=f"{image.repo} is deprecated in vLLM's docs; {image.ref} is used only because nothing newer fits",
                    hint="prefer vllm/vllm-openai-rocm when the node allows it",
                    source=image.provenance.source,
                )
            )
        elif not image.official:
            out.append(
                Warning(
                    code="amd-image",
                    severity="info",
                    message=f"{image.repo} is AMD's channel (vLLM's docs call it deprecated since v0.19); its entrypoint is a shell",
                    hint="run `vllm serve` explicitly in it (`rocm-vllm image` writes the command)",
                    source=image.provenance.source,
                )
            )
        return out


def _series_key(value: str) -> tuple[int, ...]:
    """ "30.30" -> (30, 30): driver series sort by number ("6.4" before "30.10")."""
    return tuple(int(p) for p in value.split(".") if p.isdigit())


def _window(user_space: Iterable[str]) -> str:
    items = sorted(user_space, key=lambda s: tuple(int(p) for p in s.split(".")))
    return f"{items[0]}-{items[-1]}" if len(items) > 1 else items[0]


def _stack_warnings(cand: Candidate, stack: RocmStack) -> list[Warning]:
    out: list[Warning] = []
    if stack.preview:
        out.append(
            Warning(
                code="preview-rocm",
                message=f"{cand.label} builds on {stack.label}, a ROCm nightly or preview, not a release",
                hint="prefer a stack on a released ROCm; use this one only to try the GPU it exists for",
                source=stack.provenance.source,
            )
        )
    moving = stack.moving_pins
    if moving and cand.kind == "source":
        refs = ", ".join(f"{p.component} {p.repo}@{p.ref}" for p in moving)
        out.append(
            Warning(
                code="unpinned-ref",
                message=f"{cand.label}: upstream pins {refs} to a moving branch, so the build is not reproducible",
                hint="pin a commit yourself (rocm-vllm dockerfile refuses this stack unless --allow-moving-refs)",
                source=stack.provenance.source,
            )
        )
    return out


# --- node-level warnings --------------------------------------------------------------------


def node_warnings(m: Matrix, node: Node, request: Request, plan: Evaluation | None) -> list[Warning]:
    out: list[Warning] = []
    targets = [t for t in (m.gfx_target(n) for n in node.gfx_targets) if t is not None]
    quant = (request.quantization or "").lower()
    for t in targets:
        if t.features.aiter == "full" and (plan is None or plan.candidate.vllm >= Version("0.8.2")):
            kind = plan.candidate.kind if plan is not None else None
            by_image = kind == "image"
            hint = {
                "image": "set VLLM_ROCM_USE_AITER=1 (the run command from `rocm-vllm image` does)",
                "wheel": "export VLLM_ROCM_USE_AITER=1 before `vllm serve`: nothing sets it for a wheel install",
                "source": "pass -e VLLM_ROCM_USE_AITER=1 to `docker run` of the built image: the Dockerfile does not set it",
            }.get(kind or "", "set VLLM_ROCM_USE_AITER=1 where vLLM runs")
            out.append(
                Warning(
                    code="aiter-off-by-default",
                    severity="info",
                    message=f"AITER kernels are off by default in vLLM; on {t.name} they are much faster",
                    hint=hint,
                    source="vllm-project/vllm vllm/envs.py (VLLM_ROCM_USE_AITER default False); vllm-project/vllm#56945",
                    env=(("VLLM_ROCM_USE_AITER", "1"),),
                    applied_by_plan=by_image,
                )
            )
        elif t.features.aiter == "triton-only":
            out.append(
                Warning(
                    code="aiter-partial",
                    severity="info",
                    message=f"on {t.name} only AITER's Triton kernels apply; the AITER package itself fails there",
                    hint="leave VLLM_ROCM_USE_AITER unset unless you test it (ROCm/aiter#3294)",
                    source=t.features.provenance.source,
                )
            )
        if quant in MXFP4_QUANT and t.features.mxfp4 != "none":
            src = t.features.mxfp4_source
            native = t.features.mxfp4 == "native"
            out.append(
                Warning(
                    code="mxfp4-native" if native else "mxfp4-emulated",
                    severity="info",
                    message=f"{quant} on {t.name} runs on native MX (microscaling) compute"
                    if native
                    else f"{quant} on {t.name} runs weight-only: vLLM dequantizes the MXFP4 weights, since {t.name} has no MX compute",
                    hint="nothing to do; MXFP4 checkpoints run at full speed here"
                    if native
                    else "expect less speed than on gfx950 (MI350X/MI355X); the checkpoint itself runs unchanged",
                    source=src.source,
                )
            )
        if (quant in FP8_QUANT or (request.kv_cache_dtype or "").startswith("fp8")) and t.features.fp8:
            fmt = "e4m3fnuz (FNUZ)" if t.features.fp8_format == "fnuz" else "e4m3fn (OCP)"
            out.append(
                Warning(
                    code="fp8-format",
                    severity="info",
                    message=f"FP8 on {t.name} uses {fmt}",
                    hint="OCP-format checkpoints are rescaled to FNUZ at load on gfx942; do not hard-code fnuz for gfx950"
                    if t.features.fp8_format == "fnuz"
                    else "checkpoints in OCP e4m3fn run natively",
                    source=t.features.provenance.source,
                )
            )
    formats = {t.features.fp8_format for t in targets if t.features.fp8}
    if len(formats) > 1 and (quant in FP8_QUANT or (request.kv_cache_dtype or "").startswith("fp8")):
        out.append(
            Warning(
                code="mixed-fp8-formats",
                message="this node mixes FNUZ (gfx942) and OCP FP8 targets; vLLM reads the arch of device 0 only",
                hint="run one vLLM instance per GPU type (HIP_VISIBLE_DEVICES), never one across both",
                source="ROCm/aiter#3807; vllm-project/vllm vllm/platforms/rocm.py@001eda31",
            )
        )
    if len(targets) > 1:
        out.append(
            Warning(
                code="mixed-gfx",
                message=f"this node has several GPU types ({', '.join(t.name for t in targets)}); vLLM assumes one",
                hint="pin each vLLM instance to one GPU type with HIP_VISIBLE_DEVICES",
                source="vllm-project/vllm vllm/platforms/rocm.py@001eda31 (arch read from device 0)",
            )
        )
    gpus = node.logical_gpu_count or len(node.gpus)
    if gpus > 1 and any(t.arch.startswith("RDNA") for t in targets):
        out.append(
            Warning(
                code="rdna-multi-gpu",
                message="multi-GPU Radeon setups have hung in RCCL peer-to-peer collectives",
                hint="if tensor-parallel start-up hangs: NCCL_P2P_DISABLE=1 and --disable-custom-all-reduce",
                source="ROCm/vllm#390; ROCm/rocm-systems#11348",
            )
        )
    if any(g.partition and (g.partition.compute or "").upper() == "CPX" for g in node.gpus):
        out.append(
            Warning(
                code="cpx-partition",
                message="GPUs are in CPX partition mode; tensor parallelism across CPX partitions has produced garbage output",
                hint="use SPX/NPS1 for TP, or one TP=1 replica per partition (vllm-project/vllm#20125)",
                source="vllm-project/vllm#20125",
            )
        )
    if node.hsa_override_gfx_version and any(t.vllm_status == "official" for t in targets):
        out.append(
            Warning(
                code="override-not-needed",
                message=f"HSA_OVERRIDE_GFX_VERSION={node.hsa_override_gfx_version} is set, but the GPU is supported as it is",
                hint="unset HSA_OVERRIDE_GFX_VERSION; vLLM's feature gates follow the real gfx anyway",
                source="vllm-project/vllm vllm/platforms/rocm.py@001eda31 (arch from amdsmi)",
            )
        )
    if plan is not None and plan.override:
        out.append(
            Warning(
                code="unofficial-override",
                message=f"this path relies on HSA_OVERRIDE_GFX_VERSION={plan.override}; the runtime loads another GPU's code",
                hint="unofficial: it can crash or compute wrong results; test outputs before serving",
                source="ROCm/ROCm#2500; ROCm/rocm-systems PR #5686",
            )
        )
    out.extend(host_os_warnings(m, node, targets))
    out.extend(kernel_floor_warnings(node, targets))
    out.extend(unified_memory_warnings(node, targets))
    problems = list(node.problems)
    if node.gpus:
        # A node file written before the probe checked partitions still gets the check.
        from resolver.partitions import partition_problems

        problems += [p for p in partition_problems(node.gpus) if p not in problems]
    for p in problems:
        out.append(Warning(code=p.code, message=p.message, hint=p.hint, source="probe"))
    return out


def _kernel_version(text: str | None) -> tuple[int, int] | None:
    """ "6.8.0-45-generic" -> (6, 8); None when it is not a kernel release."""
    parts = (text or "").split("-")[0].split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return int(parts[0]), int(parts[1])


def kernel_floor_warnings(node: Node, targets: list[GfxTarget]) -> list[Warning]:
    """AMD's documented Linux releases and kernel floors for GPUs that have them (Ryzen AI Max:
    the inbox driver, so the kernel is the driver), checked against the node's OS and kernel."""
    out: list[Warning] = []
    for t in targets:
        floors = t.kernel_floors
        if not floors:
            continue
        listed = ", ".join(f"{f.os} (kernel {f.flavour} or newer)" for f in floors)
        source = "; ".join(dict.fromkeys(f.provenance.source for f in floors))
        who = t.products[0].name if t.products else t.name
        if not node.os:
            out.append(Warning(code="kernel-floor-unchecked", severity="info",
                               message=f"AMD supports {t.name} ({who}) on Linux only on {listed}; this node's OS is unknown",
                               hint="give --os (e.g. ubuntu-24.04) or run `rocm-vllm probe` on the node", source=source))
            continue
        floor = next((f for f in floors if _os_listed(node.os, (f.os,))), None)
        if floor is None:
            out.append(Warning(code="os-unlisted-for-gpu",
                               message=f"AMD supports {t.name} ({who}) on Linux only on {listed}; this host runs {node.os}",
                               hint=f"move the host to {floors[0].os} with kernel {floors[0].flavour} or newer", source=source))
            continue
        have = _kernel_version(node.kernel)
        need = _kernel_version(floor.min_kernel)
        if have is None or need is None:
            out.append(Warning(code="kernel-floor-unchecked", severity="info",
                               message=f"AMD supports {t.name} on {floor.os} from kernel {floor.flavour}; this node's kernel is unknown",
                               hint=f"check `uname -r` is {floor.min_kernel} or newer", source=floor.provenance.source))
        elif have < need:
            out.append(Warning(code="kernel-too-old",
                               message=f"{t.name} ({who}) needs kernel {floor.flavour} or newer on {floor.os} per AMD; "
                               f"this host runs {node.kernel}",
                               hint=f"install the {floor.flavour} kernel (Ubuntu: the linux-oem-24.04 kernel series) and reboot"
                               if floor.flavour.startswith("OEM") else f"install kernel {floor.min_kernel} or newer and reboot",
                               source=floor.provenance.source))
    return out


def unified_memory_warnings(node: Node, targets: list[GfxTarget]) -> list[Warning]:
    """APUs take GPU memory from system RAM through GTT; vLLM sizes its KV cache from what that allows."""
    out: list[Warning] = []
    for t in targets:
        if not t.unified_memory_source:
            continue
        out.append(
            Warning(
                code="apu-unified-memory",
                severity="info",
                message=f"{t.name} is an APU: its GPU memory is system RAM mapped through GTT, not a VRAM pool, "
                "so how much vLLM can use for weights and KV cache depends on the GTT limit",
                hint="size the GTT limit (ttm pages_limit) for the model weights plus KV cache, leaving RAM for the OS, "
                "and keep the BIOS VRAM carve-out small; check what the GPU then reports before choosing --gpu-memory-utilization",
                source=t.unified_memory_source,
            )
        )
    return out


def _os_listed(os_id: str, listed: tuple[str, ...]) -> bool:
    """``ubuntu-22.04`` is listed by ``ubuntu-22.04.5``; ``rhel-9.4`` by ``rhel-9.4``."""
    return any(entry == os_id or entry.startswith(os_id + ".") or os_id.startswith(entry + ".") for entry in listed)


def host_os_warnings(m: Matrix, node: Node, targets: list[GfxTarget]) -> list[Warning]:
    """Is the host OS one AMD supports for these GPUs at the ROCm its driver was released with?

    The container or wheel brings its own user space, but the host's amdgpu driver and AMD's
    support both depend on the host OS; per-GPU footnotes narrow the list (MI325X, RDNA, ...)."""
    if not node.os or not node.driver_version:
        return []
    driver = m.driver(driver_series(node.driver_version))
    if driver is None or driver.paired_rocm is None:
        return []
    rocm = m.rocm_release(Version(driver.paired_rocm))
    if rocm is None or not rocm.os:
        return []
    products = {g.product for g in node.gpus if g.product}
    out: list[Warning] = []
    if not _os_listed(node.os, rocm.os):
        out.append(
            Warning(
                code="os-not-supported",
                message=f"{node.os} is not among the OS releases AMD supports for {rocm.label}, "
                f"which amdgpu {driver.series}.x was released with",
                hint=f"supported: {', '.join(rocm.os)}",
                source=rocm.provenance.source,
            )
        )
        return out
    for t in targets:
        # Several footnotes can apply to one GPU; together they allow only what each allows.
        applicable = [r for r in rocm.os_restrictions if t.name in r.gfx and (not r.products or bool(products & set(r.products)))]
        if not applicable:
            continue
        allowed = [entry for entry in rocm.os if all(_os_listed(entry, r.os) for r in applicable)]
        if not _os_listed(node.os, tuple(allowed)):
            who = ", ".join(sorted({p for r in applicable for p in r.products})) or t.name
            out.append(
                Warning(
                    code="os-not-supported-for-gpu",
                    message=f"AMD supports {who} on {rocm.label} only on {', '.join(allowed) or 'no listed OS'}; "
                    f"this host runs {node.os}",
                    hint="move the host to one of those OS releases, or expect an untested combination",
                    source="; ".join(dict.fromkeys(r.provenance.source for r in applicable if not _os_listed(node.os, r.os))),
                )
            )
    return out


# --- the solver -----------------------------------------------------------------------------


def _rank(e: Evaluation, prefer: Kind | None) -> tuple[object, ...]:
    c = e.candidate
    preview = c.stack is not None and c.stack.preview
    if c.kind == "source":
        # A stack that ships the target (even a preview one) before a build CMake merely accepts.
        group = 4 if e.cmake_only else 3 if preview else 2
    elif c.image is not None and (c.image.deprecated or c.image.stream == "therock-preview" or preview):
        group = 1
    else:
        group = 0
    if prefer is not None and c.kind == prefer:
        group = -1
    channel = 0 if (c.image is not None and c.image.official) else 1 if c.image is not None else 2
    # Within one release: its default stack before the others, and an image's plain tag
    # (v0.33.0) before the same image's stack alias (v0.33.0-rocm100).
    stack_order = 0 if c.stack is None or c.stack.default else 1
    tag_len = len(c.image.tag) if c.image is not None else 0
    # vLLM's own images before AMD's before wheels; the newest release within each channel.
    return (group, int(e.unofficial), channel, _neg(c.vllm), stack_order, tag_len)


def rank(e: Evaluation, prefer: Kind | None) -> tuple[object, ...]:
    """The solver's order of preference (lower is better); ``resolver.derive`` explains by it."""
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


def _validate_request(request: Request) -> None:
    quant = (request.quantization or "").lower()
    if quant and quant not in FP8_QUANT | MX_QUANT | OTHER_QUANT:
        known = ", ".join(sorted(FP8_QUANT | MX_QUANT | OTHER_QUANT))
        raise InputError(f"--quantization {request.quantization!r} is not a method vLLM's ROCm platform lists", hint=f"one of: {known}")
    kv = (request.kv_cache_dtype or "").lower()
    if kv and kv not in ("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float16"):
        raise InputError(f"--kv-cache-dtype {request.kv_cache_dtype!r} is not a KV cache dtype", hint="use auto, fp8, fp8_e4m3 or fp8_e5m2")


def solve(matrix: Matrix, node: Node, request: Request, reporter: Reporter | None = None) -> Decision:
    """Weigh every candidate path for ``node`` and decide."""
    reporter = reporter or Reporter()
    _validate_request(request)
    if not node.gfx_targets:
        # Say why, when the probe knows: "permission denied on /dev/kfd" needs another fix than "no GPU".
        cause = next((p for p in node.problems if p.code != "no-gpu"), None)
        raise InputError(
            "the node has no AMD GPU to decide for" + (f": {cause.message}" if cause else ""),
            hint=(f"{cause.hint}; or " if cause else "")
            + "describe the node with --gfx (e.g. --gfx gfx942), --example NAME, or --node FILE from `rocm-vllm probe --json`",
        )
    unknown_gfx = [g for g in node.gfx_targets if matrix.gfx_target(g) is None]
    if unknown_gfx:
        known = ", ".join(sorted(g.name for g in matrix.gfx))
        unknown_targets = tuple(
            MissingFact(
                kind="gfx",
                subject=g,
                detail=f"{g} is not a gfx target the compatibility data knows (known: {known})",
                fetch=None,
                source="matrix/gfx.toml",
            )
            for g in unknown_gfx
        )
        problems = [Warning(code=p.code, message=p.message, hint=p.hint, source="probe") for p in node.problems]
        return Decision(verdict="unknown", node=node, request=request, plan=None, warnings=tuple(problems),
                        rejected=(), alternatives=(), missing=unknown_targets)
    provider = MatrixProvider(matrix, node, request)
    evaluations: list[Evaluation] = []
    for cand in provider.candidates():
        reporter.considering(cand)
        ev = provider.evaluate(cand)
        (reporter.accepting(cand) if ev.ok else reporter.rejecting(cand, ev.reasons))
        evaluations.append(ev)
    if not evaluations:
        spec = str(request.vllm) if request.vllm else "any"
        raise InputError(
            f"no vLLM release in the data matches --vllm {spec!r}",
            hint=f"known releases: {matrix.vllm[0].version} to {matrix.vllm[-1].version}" if matrix.vllm else "the data has no vLLM releases",
        )
    ranked = sorted(evaluations, key=lambda e: _rank(e, request.prefer))
    accepted = [e for e in ranked if e.ok]
    official = [e for e in accepted if not e.unofficial]
    rejected = tuple(e for e in ranked if not e.ok)
    blockers = _common_reasons(rejected) if not accepted else ()

    plan: Evaluation | None
    host_fix: Evaluation | None = None
    missing: tuple[MissingFact, ...] = ()  # set for "unknown"
    if official:
        plan = official[0]
        prebuilt_ok = any(e.candidate.kind != "source" for e in official)
        verdict: Verdict = "supported" if prebuilt_ok else "source_build_required"
    elif accepted:
        plan = accepted[0]
        verdict = "unofficial_only"
    else:
        plan = None
        fixable = [e for e in rejected if e.host_fixable]
        # A release whose facts are unknown might run here: the honest answer is "unknown".
        unread = [e for e in rejected if {r.code for r in e.reasons} <= UNKNOWN_CODES]
        if unread:
            missing = _missing_releases(unread)
            verdict = "unknown"
        elif fixable:
            # The best release, on whichever of its stacks asks the smallest host change
            # (v0.33.0 on amdgpu 6.1: its rocm72 image needs 6.4, its default rocm100 one 30.10).
            best = fixable[0].candidate
            same = [e for e in fixable if e.candidate.vllm == best.vllm and e.candidate.kind == best.kind]
            host_fix = min(same, key=lambda e: (e.candidate.rocm or Version("0"), _rank(e, request.prefer)))
            verdict = "blocked_host_fix"
        else:
            verdict = "unsupported"

    warnings = list(plan.warnings if plan else ())
    warnings += _stack_choice(plan, rejected)
    warnings += node_warnings(matrix, node, request, plan)
    warnings += _newer_unknown(matrix, request, plan)
    warnings = list(dict.fromkeys(warnings))
    if verdict == "supported" and any(w.severity == "warning" for w in warnings):
        verdict = "supported_with_warnings"
    alternatives = tuple(_distinct_alternatives(accepted, plan))
    return Decision(
        verdict=verdict,
        node=node,
        request=request,
        plan=plan,
        warnings=tuple(warnings),
        rejected=rejected,
        alternatives=alternatives,
        blockers=blockers,
        host_fix=host_fix,
        missing=missing,
    )


def _stack_choice(plan: Evaluation | None, rejected: tuple[Evaluation, ...]) -> list[Warning]:
    """Say which stack the plan is on and why, when it is not the release's default one."""
    if plan is None or plan.candidate.stack is None or plan.candidate.stack.default:
        return []
    c = plan.candidate
    mine = plan.candidate.stack
    default = next(
        (e for e in rejected if e.candidate.vllm == c.vllm and e.candidate.kind == c.kind
         and e.candidate.stack is not None and e.candidate.stack.default),
        None,
    )
    if default is None or default.candidate.stack is None:
        return []
    d = default.candidate.stack
    why = default.reasons[0]
    return [
        Warning(
            code="stack-not-default",
            severity="info",
            message=f"vLLM {c.vllm} is planned on its {mine.variant} stack (ROCm {mine.rocm}): "
            f"its default {d.variant} stack (ROCm {d.rocm}) does not fit here: {why.message}",
            hint=why.hint,
            source=why.source,
        )
    ]


def _missing_releases(unread: list[Evaluation]) -> tuple[MissingFact, ...]:
    out: dict[str, MissingFact] = {}
    for e in unread:
        v = str(e.candidate.vllm)
        if v in out:
            continue
        what = "which GPUs its artifacts are built for" if any(r.code == "artifact-facts-unknown" for r in e.reasons) else "its ROCm build files (base ROCm, arch list, pins)"
        out[v] = MissingFact(
            kind="release",
            subject=v,
            detail=f"vLLM {v}: {what} are not in the data",
            fetch=shlex.join(["rocm-vllm", "matrix", "refresh", "--source", "sdist", "--tag", v, "--write"]),
            source=e.candidate.release.provenance.source if e.candidate.release else "",
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


def _distinct_alternatives(accepted: list[Evaluation], plan: Evaluation | None) -> Iterator[Evaluation]:
    """One alternative per channel (besides the plan), newest first."""
    seen: set[str] = set()
    if plan is not None:
        seen.add(plan.candidate.channel)
    for e in accepted:
        ch = e.candidate.channel
        if ch not in seen:
            seen.add(ch)
            yield e


def _newer_unknown(m: Matrix, request: Request, plan: Evaluation | None) -> list[Warning]:
    if plan is None or (request.vllm is not None and len(request.vllm) and all(s.operator == "==" for s in request.vllm)):
        return []
    newer = [r.version for r in m.vllm if not r.known and r.version > plan.candidate.vllm and (request.vllm is None or request.vllm.contains(r.version))]
    if not newer:
        return []
    return [
        Warning(
            code="newer-releases-unknown",
            severity="info",
            message=f"{len(newer)} newer vLLM release(s) ({min(newer)} to {max(newer)}) have no ROCm facts in the data; "
            "some may fit this node too",
            hint="run `rocm-vllm matrix refresh` to read newer releases",
            source="pypi.org/project/vllm; matrix/vllm.toml",
        )
    ]
