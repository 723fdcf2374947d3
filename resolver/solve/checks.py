"""What stops one candidate: one function per reason code, each with its message, facts, hint and
fix.

``MatrixProvider.evaluate`` calls them; each returns a ``Reason`` (or ``None`` when the check
passes). Checks that cannot be made say so with a ``Advisory`` (driver unknown, Python or glibc
unknown) instead of stopping the path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Literal

import msgspec.structs
from packaging.version import InvalidVersion, Version

from resolver.data.model import (
    DriverSeries,
    GfxTarget,
    GpuProduct,
    Matrix,
    ReleaseCapabilities,
    RocmRelease,
    WheelVariant,
)
from resolver.data.node import Node
from resolver.solve.finding import Found, Phrase, arch_phrase, finding, phrase
from resolver.solve.host import os_listed
from resolver.solve.types import (
    FP8_QUANT,
    MX_QUANT,
    MXFP4_QUANT,
    Advisory,
    Candidate,
    Fact,
    Fix,
    HostChange,
    Reason,
    Request,
    mx_format,
)
from resolver.util.versions import driver_label, driver_series, series, series_key


def _about_path(cand: Candidate, text: Phrase, source: str | None = None) -> Fact:
    """A fact about the candidate itself (the chain files it under the candidate), from its own
    record unless ``source`` says otherwise."""
    return Fact(
        text=text, source=source or cand.source, confidence=cand.confidence, about=cand.label
    )


def _from_record(
    text: Phrase, record: GfxTarget | GpuProduct | DriverSeries | RocmRelease | WheelVariant
) -> Fact:
    """A fact a data record states, with that record's source and confidence."""
    return Fact(text=text, source=record.provenance.source, confidence=record.provenance.confidence)


# --- unknown facts: release-facts-unknown, artifact-facts-unknown -----------------------------


def release_facts_unknown(cand: Candidate) -> Reason:
    """``release-facts-unknown``: the release exists, its ROCm build files were never read."""
    src = cand.release.provenance.source if cand.release else "matrix/vllm.toml"
    w = finding("release-facts-unknown", vllm=cand.vllm)
    return Reason(
        code="release-facts-unknown",
        message=w.message,
        facts=(Fact(text=w.facts[0], source=src, confidence="unknown", about=cand.label),),
        hint=w.hint,
        fix=Fix(kind="data", text=w.fix, host=False),
    )


def artifact_facts_unknown(cand: Candidate, src: str) -> Reason:
    """``artifact-facts-unknown``: the artifact exists, its arch list was never read."""
    w = finding("artifact-facts-unknown", label=cand.label)
    return Reason(
        code="artifact-facts-unknown",
        message=w.message,
        facts=(Fact(text=w.facts[0], source=src, confidence="unknown", about=cand.label),),
        hint=w.hint,
        fix=Fix(kind="data", text=w.fix, host=False),
    )


# --- the GPU: gfx-unsupported, gfx-not-shipped ------------------------------------------------


def gfx_check(
    cand: Candidate, target: GfxTarget, m: Matrix | None = None, *, override: bool = True
) -> tuple[Reason | None, bool, str | None]:
    """Does the candidate run on ``target``? (reason, unofficial, HSA override it relies on).
    ``m``: the data, to name the releases whose build does accept a target a source build's
    CMake refuses. ``override``: False where the node cannot take the target's HSA override."""
    arch, src = cand.arch, cand.source
    if not override:
        target = msgspec.structs.replace(target, override=None, override_target=None)
    if target.name in cand.lacks:
        # Evidence read from the image outweighs the arch list a docs page claims for it.
        return gfx_contradicted(cand, target), False, None
    if target.name in arch:
        return None, False, None
    # A near target the runtime can be told to load (HSA_OVERRIDE_GFX_VERSION): unofficial, and
    # the plan that uses it (also for a GPU vLLM does not support itself, such as gfx1031).
    if target.override and target.override_target in arch and not cand.from_source:
        return None, True, target.override
    if _override_build(cand, target):
        return None, True, target.override
    if target.vllm_status == "unsupported":
        return gfx_unsupported(cand, target, arch, src), False, None
    if not arch:
        return artifact_facts_unknown(cand, src), False, None
    # CMake accepts more targets than a stack ships; a source build may take them (unofficial).
    # Not on a preview stack: a ROCm nightly built for one GPU (gfx1250) carries nothing else.
    if (
        cand.from_source
        and cand.release is not None
        and target.name in cand.release.cmake_arch
        and not (cand.stack is not None and cand.stack.preview)
    ):
        return None, True, None
    if (
        cand.from_source
        and cand.release is not None
        and cand.release.cmake_arch  # an unread CMake list claims nothing
        and target.name not in cand.release.cmake_arch
        and m is not None
    ):
        return gfx_not_buildable(m, cand, target, src), False, None
    return gfx_not_shipped(cand, target, arch, src), False, None


def _override_build(cand: Candidate, target: GfxTarget) -> bool:
    """A source build of the near target, run under the override (unofficial): only where the
    build cannot target the GPU itself (gfx1031 is in no CMake list; gfx1102 builds as itself),
    and not on a preview stack, which carries its one GPU only."""
    rel = cand.release
    if not (target.override and target.override_target and cand.from_source and rel is not None):
        return False
    if target.name in rel.cmake_arch or (cand.stack is not None and cand.stack.preview):
        return False
    return target.override_target in cand.arch or target.override_target in rel.cmake_arch


def gfx_unsupported(cand: Candidate, target: GfxTarget, arch: tuple[str, ...], src: str) -> Reason:
    """``gfx-unsupported``: the artifact lacks the target and vLLM does not support it at all."""
    w = finding(
        "gfx-unsupported",
        label=cand.label,
        arch=arch_phrase(arch),
        gfx=target.name,
        note=target.vllm_note,
    )
    return Reason(
        code="gfx-unsupported",
        message=w.message,
        facts=(_about_path(cand, w.facts[0], src), _from_record(w.facts[1], target)),
        # A GPU the data gives an override names it: a build of the near target runs it
        # (``_override_build``), so "no vLLM path exists" would be untrue.
        hint=gfx_hint(target),
        gfx=(target.name,),
        unofficial=bool(target.alternative or target.override),
        override=target.override,
    )


def gfx_unsupported_by_vllm(target: GfxTarget) -> Reason:
    """``gfx-unsupported`` for a release whose facts are unknown: what the GPU lacks holds
    anyway."""
    w = finding("gfx-unsupported/by-vllm", gfx=target.name, note=target.vllm_note)
    return Reason(
        code="gfx-unsupported",
        message=w.message,
        facts=(_from_record(w.facts[0], target),),
        # A GPU the data gives an override names it: a build of the near target runs it
        # (``_override_build``), so "no vLLM path exists" would be untrue.
        hint=gfx_hint(target),
        gfx=(target.name,),
        unofficial=bool(target.alternative or target.override),
        override=target.override,
    )


def gfx_not_shipped(cand: Candidate, target: GfxTarget, arch: tuple[str, ...], src: str) -> Reason:
    """``gfx-not-shipped``: the artifact carries no code for the target; another artifact may."""
    w = finding("gfx-not-shipped", label=cand.label, arch=arch_phrase(arch), gfx=target.name)
    return _not_shipped(cand, target, w, src)


def gfx_contradicted(cand: Candidate, target: GfxTarget) -> Reason:
    """``gfx-not-shipped`` where the arch list claims the target but evidence read from the
    image (``images.toml`` ``lacks``) says it carries no code for it."""
    w = finding("gfx-not-shipped/contradicted", label=cand.label, gfx=target.name)
    return _not_shipped(cand, target, w, cand.lacks_source)


def _not_shipped(cand: Candidate, target: GfxTarget, w: Found, src: str) -> Reason:
    return Reason(
        code="gfx-not-shipped",
        message=w.message,
        facts=(_about_path(cand, w.facts[0], src),),
        hint=w.hint,
        fix=Fix(kind="gfx", text=w.fix, host=False),
        gfx=(target.name,),
    )


def gfx_not_buildable(m: Matrix, cand: Candidate, target: GfxTarget, src: str) -> Reason:
    """``gfx-not-shipped`` for a source build: the release's CMake does not accept the target
    (HIP_SUPPORTED_ARCHS), so no build of it carries code for it; the hint names the releases
    whose build does."""
    assert cand.release is not None
    able = [str(v) for v in m.cmake_accepts(target.name)]
    some = ", ".join(able) if len(able) <= 6 else f"{able[0]}, {able[1]}, ..., {able[-1]}"
    w = finding(
        "gfx-not-shipped/not-buildable" if able else "gfx-not-shipped/not-buildable-anywhere",
        vllm=cand.vllm,
        gfx=target.name,
        arch=arch_phrase(cand.release.cmake_arch),
        releases=some,
    )
    return _not_shipped(cand, target, w, src)


def gfx_hint(target: GfxTarget, *, override: bool = True) -> Phrase:
    if target.override and override:
        return phrase(
            "gfx-unsupported/hint-override",
            override=target.override,
            override_target=target.override_target,
        )
    if target.alternative:
        return Phrase.verbatim(target.alternative)
    return phrase("gfx-unsupported/hint-none")


# --- feature gates: fp8-unsupported, mx-unsupported, kv-fp8-unsupported -----------------------


def gate_checks(
    m: Matrix, cand: Candidate, targets: Iterable[GfxTarget], request: Request
) -> list[Reason]:
    """The request's quantization and KV cache dtype against each GPU's feature gates."""
    reasons: list[Reason] = []
    quant = request.gated_quantization or None
    kv = (request.kv_cache_dtype or "").lower() or None
    if quant is None and kv is None:
        return reasons  # nothing asked of the gates: no fact worded for every candidate
    for target in targets:
        gates = target.features
        fact = Fact(
            text=phrase(
                "fp8-unsupported/gates-fact",
                gfx=target.name,
                fp8=f"yes ({gates.fp8_format})" if gates.fp8 else "no",
                mx="yes" if gates.mx else "no",
            ),
            source=gates.provenance.source,
            confidence=gates.provenance.confidence,
        )
        found = (
            fp8_unsupported(quant, target, fact, m.capabilities_of(cand.vllm)),
            mx_unsupported(quant, target, fact, m.capabilities_of(cand.vllm)),
            kv_fp8_unsupported(kv, target, fact),
        )
        reasons.extend(r for r in found if r is not None)
    return reasons


def fp8_unsupported(
    quant: str | None, target: GfxTarget, fact: Fact, caps: ReleaseCapabilities | None
) -> Reason | None:
    """``fp8-unsupported``: an FP8 quantization on a GPU without hardware FP8. Where the release
    admits FP8 there anyway (0.33.0 on RDNA3), its own FP8 GEMM gate says what runs: nothing,
    since no emulated or weight-only FP8 kernel is in vLLM's ROCm list."""
    if quant not in FP8_QUANT or target.features.fp8:
        return None
    facts = [fact]
    w = finding("fp8-unsupported", quant=quant, gfx=target.name, arch=target.arch)
    message = w.message
    if caps is not None and caps.fp8 is not None and target.name in caps.fp8:
        gemm = caps.fp8_scaled_mm
        gemm_text = ", ".join(gemm) if gemm is not None else ""
        if gemm is not None and target.name not in gemm and caps.kernels("wfp8a16") == ():
            clause = "fp8-unsupported/no-kernel"
        elif gemm is not None and target.name not in gemm:
            clause = "fp8-unsupported/gemm-gated"
        else:
            clause = "fp8-unsupported/admitted"
        message += phrase(clause, vllm=caps.version, gemm=gemm_text, gfx=target.name)
        admitted = (
            "fp8-unsupported/admitted-fact-gemm"
            if gemm is not None
            else "fp8-unsupported/admitted-fact"
        )
        facts.append(
            Fact(
                text=phrase(admitted, vllm=caps.version, gfx=target.name, gemm=gemm_text),
                source=caps.provenance.source,
            )
        )
    return Reason(
        code="fp8-unsupported",
        message=message,
        facts=tuple(facts),
        hint=w.hint,
        fix=Fix(kind="quantization", text=w.fix, host=False),
        gfx=(target.name,),
    )


def mx_unsupported(
    quant: str | None, target: GfxTarget, fact: Fact, caps: ReleaseCapabilities | None
) -> Reason | None:
    """``mx-unsupported``: an MX quantization on a GPU without MX compute, where neither a source
    says vLLM runs it weight-only there (MXFP4) nor the release falls back to an emulation
    kernel for the format on ROCm (capabilities.toml ``rocm_kernels``: EmulationMxfp8LinearKernel
    since 0.20, EmulationMxfp4LinearKernel later)."""
    gates = target.features
    fmt = mx_format(quant or "")
    mx_blocked = (quant in MXFP4_QUANT and gates.mxfp4 == "none") or (
        quant in MX_QUANT - MXFP4_QUANT and not gates.mx
    )
    if not mx_blocked or (caps is not None and caps.emulates(fmt)):
        return None
    key = "mx-unsupported/mxfp4" if quant in MXFP4_QUANT else "mx-unsupported"
    w = finding(key, quant=quant, gfx=target.name)
    return Reason(
        code="mx-unsupported",
        message=w.message,
        facts=(fact,),
        hint=phrase("mx-unsupported/hint-fp8") if gates.fp8 else w.hint,
        fix=Fix(kind="quantization", text=w.fix, host=False),
        gfx=(target.name,),
    )


def kv_fp8_unsupported(kv: str | None, target: GfxTarget, fact: Fact) -> Reason | None:
    """``kv-fp8-unsupported``: an FP8 KV cache on a GPU without hardware FP8."""
    if kv is None or not kv.startswith("fp8") or target.features.fp8:
        return None
    w = finding("kv-fp8-unsupported", kv=kv, gfx=target.name)
    return Reason(
        code="kv-fp8-unsupported",
        message=w.message,
        facts=(fact,),
        hint=w.hint,
        fix=Fix(kind="quantization", text=w.fix, host=False),
        gfx=(target.name,),
    )


# --- the GPU against its driver: driver-predates-gpu ------------------------------------------


@functools.cache
def _v(text: str) -> Version:
    """A version of the data, parsed once (the driver rules compare the same few many times)."""
    return Version(text)


def first_product(node: Node, target: GfxTarget) -> GpuProduct | None:
    """The product of ``target`` on this node whose ROCm support came first: the node's own GPU
    where its PCI id says which, else the earliest of the target's products (no GPU of this
    target ran on an earlier ROCm)."""
    ids = {g.pci_device_id.lower().removeprefix("0x") for g in node.gpus if g.pci_device_id}
    known = [p for p in target.products if p.first_rocm]
    mine = [p for p in known if p.pci_device_id and p.pci_device_id in ids]
    pool = mine or known
    return min(pool, key=lambda p: _v(p.first_rocm or "0"), default=None)


def node_release(driver: DriverSeries, text: str | None) -> Version | None:
    """The node's own amdgpu release within ``driver`` (``6.4.3`` of "6.4.3" or
    "6.4.3-2194681"), None where only its series is known ("6.4", a probe's module version)."""
    head = (text or "").split("-", 1)[0]
    parts = head.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    version = _v(head)
    return version if f"{version.major}.{version.minor}" == driver.series else None


@functools.cache
def _pairs(driver: DriverSeries) -> tuple[tuple[Version, Version], ...]:
    return tuple((_v(d), _v(r)) for d, r in driver.releases)


def _ceiling(m: Matrix, driver: DriverSeries) -> Version | None:
    """The ROCm the next newer paired series shipped with: every release of ``driver`` shipped
    with an older one."""
    here = series_key(driver.series)
    newer = [d for d in m.drivers if d.paired_rocm is not None and series_key(d.series) > here]
    nxt = min(newer, key=lambda d: series_key(d.series), default=None)
    return _v(nxt.paired_rocm) if nxt is not None and nxt.paired_rocm else None


def shipped_with(driver: DriverSeries, release: Version | None) -> Version | None:
    """The ROCm the node's amdgpu shipped with, at least: its own release's where AMD pairs it,
    else the newest paired release before it, else the series' x.y.0 (``paired_rocm``)."""
    base = _v(driver.paired_rocm) if driver.paired_rocm else None
    pairs = _pairs(driver)
    if release is None:
        return base if base is not None else (pairs[0][1] if pairs else None)
    upto = [r for d, r in pairs if d <= release]
    return max(upto) if upto else base


def driver_knows(
    m: Matrix, driver: DriverSeries, release: Version | None, first: Version
) -> bool | None:
    """Did the node's amdgpu (``release`` of ``driver``; None: only the series is known) ship
    with ROCm ``first`` or later, the first to support a GPU? None where the series has releases
    on both sides and the node's own is not known well enough to tell (``6.4`` for a GPU that
    6.4.1 added)."""
    pairs = _pairs(driver)
    low = shipped_with(driver, release)
    if low is None:
        return True  # nothing recorded of the series: not ruled out
    if low >= first:
        return True
    if not pairs:
        return False  # only the series' x.y.0 is known to AMD's data
    if release is not None:
        if any(d == release for d, _ in pairs):
            return False
        later = [r for d, r in pairs if d > release]
        if later and min(later) < first:
            return False
    ceiling = _ceiling(m, driver)
    if ceiling is not None and first >= ceiling:
        return False
    return None


def first_release_knowing(driver: DriverSeries, first: Version) -> str | None:
    """The oldest release of ``driver`` AMD paired with ROCm ``first`` or later, where its x.y.0
    did not (``6.4.1`` for RX 9070 XT); None where the series' first release does, or none is
    known to."""
    base = _v(driver.paired_rocm) if driver.paired_rocm else None
    if base is not None and base >= first:
        return None
    return next((str(d) for d, r in _pairs(driver) if r >= first), None)


def driver_predates_gpu(
    m: Matrix, node: Node, driver: DriverSeries, target: GfxTarget, cand: Candidate
) -> Reason | None:
    """``driver-predates-gpu``: the host's amdgpu shipped with a ROCm older than the first ROCm
    that supports the GPU, so its kernel driver does not know the GPU, whatever the container
    brings (a GPU newer than its driver). The node's own release counts, not its series' x.y.0:
    amdgpu 6.4.4 knows the RX 9070 XT that ROCm 6.4.1 added."""
    if target.inbox_driver_source:
        return None  # the distribution kernel's amdgpu runs it: the kernel floors decide
    product = first_product(node, target)
    if product is None or product.first_rocm is None:
        return None
    first = _v(product.first_rocm)
    release = node_release(driver, node.driver_version)
    if driver_knows(m, driver, release, first) is not False:
        return None
    good = list(drivers_for(m, node, cand))
    rocm = cand.rocm or first
    driver_hint = (
        _driver_hint(driver, rocm, good, node=node, m=m)
        if good
        else phrase("driver-predates-gpu/no-driver", product=product.name, series=series(rocm))
    )
    # The node's own release where AMD pairs it with a ROCm, else the series and its x.y.0.
    paired = release if release is not None and release in dict(_pairs(driver)) else None
    w = finding(
        "driver-predates-gpu",
        driver=str(paired) if paired is not None else f"{driver.series}.x",
        paired=shipped_with(driver, paired),
        first=first,
        first_series=series(first),
        product=product.name,
        gfx=target.name,
        driver_hint=driver_hint,
    )
    return Reason(
        code="driver-predates-gpu",
        message=w.message,
        facts=(_shipped_fact(w.facts[0], driver, paired), _from_record(w.facts[1], product)),
        hint=w.hint,
        fix=_driver_fix(driver, rocm, good, m=m, node=node) if good else None,
        gfx=(target.name,),
    )


def _shipped_fact(text: Phrase, driver: DriverSeries, release: Version | None) -> Fact:
    """Which ROCm the node's amdgpu shipped with: from the release pairs where its own release
    is known and paired, else from the series' record."""
    if release is not None and driver.releases:
        return Fact(text=text, source=driver.releases_source, confidence=driver.releases_confidence)
    return _from_record(text, driver)


def driver_release_unchecked(
    m: Matrix, node: Node, driver: DriverSeries, target: GfxTarget
) -> Advisory | None:
    """``driver-release-unchecked``: the series has releases older and newer than the GPU, and
    the node's own release is not known well enough to say which it runs."""
    product = first_product(node, target)
    if target.inbox_driver_source or product is None or product.first_rocm is None:
        return None
    first = _v(product.first_rocm)
    release = node_release(driver, node.driver_version)
    if driver_knows(m, driver, release, first) is not None:
        return None
    needed = first_release_knowing(driver, first)
    return Advisory.said(
        "driver-release-unchecked/needs" if needed else "driver-release-unchecked",
        driver=node.driver_version,
        series=driver.series,
        product=product.name,
        gfx=target.name,
        first=first,
        needed=needed,
        source=driver.releases_source or driver.provenance.source,
        change=HostChange(kind="driver", value=needed, direction="upgrade") if needed else None,
    )


# --- the driver window: driver-window ---------------------------------------------------------


def driver_check(
    m: Matrix,
    node: Node,
    driver: DriverSeries | None,
    cand: Candidate,
    *,
    move: Callable[[Version], DriverMove] | None = None,
    inbox: bool = False,
) -> tuple[Reason | None, list[Advisory]]:
    """Does the host's amdgpu driver run the candidate's ROCm user space? ``move``: the
    driver move to a ROCm (``driver_move``), where the caller keeps it for many candidates.
    ``inbox``: every GPU of the node runs on the kernel's own amdgpu, so a node that names no
    amdgpu release is not missing one (its kernel floors are checked instead)."""
    assert cand.rocm is not None
    rocm = m.rocm_for(cand.rocm)
    if inbox and node.driver_version is None:
        return None, driver_warnings(node, driver, cand, rocm, inbox=True)
    # What the path needs of the driver is said only where the node's driver is unknown.
    needs = drivers_for(m, node, cand) if node.driver_version is None else ()
    warnings = driver_warnings(node, driver, cand, rocm, needs=needs)
    if node.driver_version is None or driver is None:
        return None, warnings
    if rocm is not None and rocm.stream == "therock-preview":
        return preview_driver_window(driver, cand, rocm), warnings
    return driver_window(m, driver, cand, node, move=move), warnings


def driver_warnings(
    node: Node,
    driver: DriverSeries | None,
    cand: Candidate,
    rocm: RocmRelease | None,
    *,
    needs: tuple[DriverSeries, ...] = (),
    inbox: bool = False,
) -> list[Advisory]:
    """``preview-rocm`` for a preview ROCm; ``driver-unchecked``/``unknown-driver`` when the
    driver check cannot be made (not for a node on the kernel's own amdgpu: ``inbox``)."""
    warnings: list[Advisory] = []
    if rocm is not None and rocm.stream == "therock-preview":
        warnings.append(
            Advisory.said(
                "preview-rocm/runs-on",
                label=cand.label,
                rocm=rocm.label,
                source=rocm.provenance.source,
            )
        )
    if inbox:
        return warnings
    if node.driver_version is None:
        w = finding(
            "driver-unchecked/needs" if needs else "driver-unchecked",
            rocm=cand.rocm,
            needs=", ".join(d.series + ".x" for d in needs),
        )
        warnings.append(Advisory(code="driver-unchecked", message=w.message, hint=w.hint))
    elif driver is None:
        w = finding("unknown-driver", driver=node.driver_version, rocm=cand.rocm)
        warnings.append(Advisory(code="unknown-driver", message=w.message, hint=w.hint))
    return warnings


def gpus_first_rocm(m: Matrix, node: Node) -> Version | None:
    """The newest of the first ROCm releases that support the node's GPUs: a driver that shipped
    with an older ROCm predates one of them (``driver-predates-gpu``'s rule)."""
    firsts = [
        _v(product.first_rocm)
        for name in node.gfx_targets
        if (target := m.gfx_target(name)) is not None
        and (product := first_product(node, target)) is not None
        and product.first_rocm is not None
    ]
    return max(firsts, default=None)


def knows_gpus(m: Matrix, node: Node, driver: DriverSeries, floor: Version | None = None) -> bool:
    """Some release of the series knows every GPU of the node (``driver-predates-gpu``'s rule; a
    series whose release ROCm is not recorded is not ruled out). ``floor``: the node's
    ``gpus_first_rocm``, where the caller asks for many drivers."""
    newest = floor if floor is not None else gpus_first_rocm(m, node)
    if newest is None or (driver.paired_rocm is None and not driver.releases):
        return True
    base = shipped_with(driver, None)
    return (base is not None and base >= newest) or any(r >= newest for _, r in _pairs(driver))


def drivers_for(m: Matrix, node: Node, cand: Candidate) -> tuple[DriverSeries, ...]:
    """The amdgpu series that run this path on this node: they run its ROCm user space (any
    series, for a path whose ROCm is not known) and know the node's GPUs (what a plan needs of
    the host's driver; where a driver fix is chosen)."""
    pool = m.drivers_running(cand.rocm) if cand.rocm is not None else m.drivers
    floor = gpus_first_rocm(m, node)
    return tuple(d for d in pool if knows_gpus(m, node, d, floor))


# The hint and the fix of a driver that does not run a ROCm.
DriverMove = tuple[Phrase, Fix | None]


def driver_move(m: Matrix, driver: DriverSeries, rocm: Version, node: Node | None) -> DriverMove:
    """How to get from ``driver`` to one that runs ``rocm`` (and knows the node's GPUs)."""
    good = [d for d in m.drivers_running(rocm) if node is None or knows_gpus(m, node, d)]
    fix = _driver_fix(driver, rocm, good, m=m, node=node) if good else None
    return _driver_hint(driver, rocm, good, node=node, m=m), fix


def driver_window(
    m: Matrix,
    driver: DriverSeries,
    cand: Candidate,
    node: Node | None = None,
    *,
    move: Callable[[Version], DriverMove] | None = None,
) -> Reason | None:
    """``driver-window``: the driver series does not run the candidate's ROCm (AMD's table).
    The fix is a series that runs it and knows the node's GPUs."""
    assert cand.rocm is not None
    if driver.runs(cand.rocm):
        return None
    hint, fix = move(cand.rocm) if move is not None else driver_move(m, driver, cand.rocm, node)
    w = finding(
        "driver-window",
        label=cand.label,
        rocm=cand.rocm,
        driver=driver.series,
        window=_window(driver.user_space),
    )
    return Reason(
        code="driver-window",
        message=w.message,
        facts=(_about_path(cand, w.facts[0]), _from_record(w.facts[1], driver)),
        hint=hint,
        fix=fix,
    )


def preview_driver_window(
    driver: DriverSeries, cand: Candidate, rocm: RocmRelease
) -> Reason | None:
    """``driver-window`` for a preview: previews are not rows of AMD's table; their release notes
    list the drivers they support."""
    listed = {
        driver_series(d.strip().replace(".x", ".0"))
        for d in (rocm.kmd_at_release or "").split(",")
        if d.strip()
    }
    if driver.series in listed:
        return None
    known = (
        phrase("driver-window/preview-listed", drivers=rocm.kmd_at_release)
        if listed
        else phrase("driver-window/preview-unlisted")
    )
    w = finding(
        "driver-window/preview",
        label=cand.label,
        rocm=rocm.label,
        known=known,
        driver=driver.series,
    )
    return Reason(
        code="driver-window",
        message=w.message,
        facts=(_about_path(cand, w.facts[0]), _from_record(w.facts[1], rocm)),
        hint=w.hint,
        fix=None,
    )


def _best_driver(
    driver: DriverSeries | None,
    rocm: Version,
    good: list[DriverSeries],
    floor: Version | None = None,
    release: Version | None = None,
) -> tuple[str, Literal["upgrade", "downgrade"]]:
    """The smallest move from the host's driver to one that runs ``rocm``: a later release of
    the host's own series where one knows the GPUs (``floor``: their newest first ROCm) and the
    host's ``release`` does not; else the oldest series newer than the host's; only when none is
    newer, the newest older one (a downgrade). A series whose x.y.0 predates the GPUs is named by
    the release that knows them (``6.4.1``)."""

    def value(d: DriverSeries) -> str:
        needed = first_release_knowing(d, floor) if floor is not None else None
        return needed or d.series

    here = series_key(driver.series) if driver is not None else None
    if here is None:
        paired = [
            d for d in good if d.paired_rocm and series(Version(d.paired_rocm)) == series(rocm)
        ]
        return value(paired[0] if paired else good[0]), "upgrade"
    if driver is not None and driver in good and floor is not None:
        needed = first_release_knowing(driver, floor)
        if needed is not None and (release is None or release < _v(needed)):
            return needed, "upgrade"
    forward = [d for d in good if series_key(d.series) > here]
    if forward:
        return value(min(forward, key=lambda d: series_key(d.series))), "upgrade"
    return value(max(good, key=lambda d: series_key(d.series))), "downgrade"


def _driver_fix(
    driver: DriverSeries | None,
    rocm: Version,
    good: list[DriverSeries],
    *,
    m: Matrix | None = None,
    node: Node | None = None,
) -> Fix:
    """The driver move; among the series that would do, one AMD supports on the host's OS when
    there is one, else the move names the OS step it needs (amdgpu 6.4 is not for Ubuntu 20.04)."""
    floor = gpus_first_rocm(m, node) if m is not None and node is not None else None
    release = node_release(driver, node.driver_version) if driver and node else None
    if m is not None and node is not None:
        good = _prefer_os(m, node, good)
    best, direction = _best_driver(driver, rocm, good, floor, release)
    step = _os_step(m, node, best) if m is not None and node is not None else None
    text = (
        phrase("driver-window/fix-os-first", best=driver_label(best), os=node.os, step=step)
        if step and node
        else phrase("driver-window/fix", best=driver_label(best))
    )
    return Fix(
        kind="driver",
        text=text,
        host=True,
        change=HostChange(kind="driver", value=best, direction=direction),
        os_first=step,
    )


def _os_support(m: Matrix, d: DriverSeries) -> tuple[str, ...] | None:
    """The OS releases AMD supports at the ROCm ``d`` was released with (None: not recorded)."""
    if d.paired_rocm is None:
        return None
    rel = m.rocm_release(Version(d.paired_rocm))
    return rel.os if rel is not None and rel.os else None


def _prefer_os(m: Matrix, node: Node, good: list[DriverSeries]) -> list[DriverSeries]:
    if not node.os:
        return good
    # Known to be supported there: a series whose OS support is not recorded is no better bet.
    on_os = [
        d for d in good if (oses := _os_support(m, d)) is not None and os_listed(node.os, oses)
    ]
    return on_os or good


def _os_step(m: Matrix, node: Node, best: str) -> str | None:
    """The OS release to move the host to before ``best`` when AMD does not support ``best`` on
    the host's OS: the nearest newer release of the same OS where there is one."""
    d = m.driver(driver_series(best))
    oses = _os_support(m, d) if d is not None else None
    if not node.os or not oses or os_listed(node.os, oses):
        return None
    family = node.os.partition("-")[0]
    same = [o for o in oses if o.partition("-")[0] == family]

    def key(o: str) -> Version:
        try:
            return Version(o.partition("-")[2])
        except InvalidVersion:
            return Version("0")

    newer = sorted((o for o in same if key(o) > key(node.os)), key=key)
    step = (newer or sorted(same, key=key) or list(oses))[0]
    # One spelling everywhere (check's fix, upgrade's step): the data's OS record, which a point
    # release AMD lists (ubuntu-22.04.5) belongs to.
    record = m.os_listed_as(step)
    return record.id if record is not None else step


def _driver_hint(
    driver: DriverSeries | None,
    rocm: Version,
    good: list[DriverSeries],
    *,
    node: Node | None = None,
    m: Matrix | None = None,
) -> Phrase:
    if not good:
        return phrase("driver-window/hint-none", series=series(rocm))
    floor = gpus_first_rocm(m, node) if m is not None and node is not None else None
    release = node_release(driver, node.driver_version) if driver and node else None
    best, direction = _best_driver(driver, rocm, good, floor, release)
    others = ", ".join(
        driver_label((first_release_knowing(d, floor) if floor else None) or d.series)
        for d in sorted(good, key=lambda d: series_key(d.series))
        if d.series != driver_series(best)
    )
    return phrase(
        "driver-window/hint-others" if others else "driver-window/hint",
        direction=direction,
        best=driver_label(best),
        series=series(rocm),
        others=others,
    )


def _window(user_space: Iterable[str]) -> str:
    items = sorted(user_space, key=series_key)
    return f"{items[0]}-{items[-1]}" if len(items) > 1 else items[0]


# --- wheels: python-mismatch, glibc-too-old ---------------------------------------------------


def wheel_checks(
    node: Node, wheel: WheelVariant, glibc: Version | None, glibc_src: str
) -> tuple[list[Reason], list[Advisory]]:
    """A wheel against the node's Python, glibc (``glibc``, from ``glibc_src``) and host ROCm."""
    reasons: list[Reason] = []
    warnings: list[Advisory] = []
    for r, w in (
        python_check(node, wheel),
        glibc_check(node, wheel, glibc, glibc_src),
        host_rocm_check(node, wheel),
    ):
        reasons.extend(r)
        warnings.extend(w)
    warnings.extend(host_rocm_shadowing(node, wheel))
    return reasons, warnings


def python_check(node: Node, wheel: WheelVariant) -> tuple[list[Reason], list[Advisory]]:
    """``python-mismatch`` (or ``python-unknown`` when the node's Python is not known)."""
    src = wheel.provenance.source
    py = node.python
    wanted = " or ".join(wheel.python)
    if py is None:
        w = finding("python-unknown", wheel=wheel.name, wanted=wanted, fit=wheel.python[0])
        return [], [
            Advisory(
                code="python-unknown", message=w.message, hint=w.hint, source=Phrase.verbatim(src)
            )
        ]
    if py in wheel.python:
        return [], []
    w = finding("python-mismatch", wheel=wheel.name, wanted=wanted, python=py, fit=wheel.python[0])
    return [
        Reason(
            code="python-mismatch",
            message=w.message,
            facts=(
                _from_record(w.facts[0], wheel),
                Fact(text=w.facts[1], source="vllm-project/vllm#44660"),
            ),
            hint=w.hint,
            fix=Fix(
                kind="python",
                text=w.fix,
                host=True,
                change=HostChange(kind="python", value=wheel.python[0]),
            ),
        )
    ], []


def glibc_check(
    node: Node, wheel: WheelVariant, glibc: Version | None, glibc_src: str
) -> tuple[list[Reason], list[Advisory]]:
    """``glibc-too-old`` (or ``glibc-unknown`` when the host's glibc is not known)."""
    src = wheel.provenance.source
    if glibc is None:
        w = finding("glibc-unknown", wheel=wheel.name, glibc_min=wheel.glibc_min)
        return [], [
            Advisory(
                code="glibc-unknown", message=w.message, hint=w.hint, source=Phrase.verbatim(src)
            )
        ]
    if glibc >= wheel.glibc_min:
        return [], []
    w = finding(
        "glibc-too-old",
        wheel=wheel.name,
        glibc_min=wheel.glibc_min,
        glibc=glibc,
        os=node.os or "the host",
    )
    return [
        Reason(
            code="glibc-too-old",
            message=w.message,
            facts=(
                _from_record(w.facts[0], wheel),
                Fact(text=w.facts[1], source=glibc_src or "probe"),
            ),
            hint=w.hint,
            fix=Fix(
                kind="os",
                text=w.fix,
                host=True,
                change=HostChange(kind="glibc", value=str(wheel.glibc_min)),
            ),
        )
    ], []


def host_rocm_check(node: Node, wheel: WheelVariant) -> tuple[list[Reason], list[Advisory]]:
    """``host-rocm-mismatch`` for a wheel that runs on the host's ROCm (``uses_host_rocm``):
    its torch loads /opt/rocm, so the host must have the wheel's ROCm series
    (``host-rocm-unknown`` when the node's ROCm is not known)."""
    if not wheel.uses_host_rocm or wheel.rocm is None:
        return [], []
    want = series(wheel.rocm)
    w = finding("host-rocm-mismatch", wheel=wheel.name, want=want, host=node.rocm_version)
    fact = _from_record(w.facts[0], wheel)
    if not node.rocm_version:
        unknown = finding("host-rocm-unknown", wheel=wheel.name, want=want)
        return [], [
            Advisory(
                code="host-rocm-unknown",
                message=unknown.message,
                hint=unknown.hint,
                source=Phrase.verbatim(wheel.provenance.source),
            )
        ]
    try:
        host = Version(node.rocm_version)
    except Exception:  # noqa: BLE001 - an unparsable probe value: treated as not the wheel's
        host = None
    if host is not None and series(host) == want:
        return [], []
    return [
        Reason(
            code="host-rocm-mismatch",
            message=w.message,
            facts=(fact,),
            hint=w.hint,
            fix=Fix(
                kind="rocm",
                text=w.fix,
                host=True,
                change=HostChange(kind="rocm", value=f"{want}.0"),
            ),
        )
    ], []


def host_rocm_shadowing(node: Node, wheel: WheelVariant) -> list[Advisory]:
    """``host-rocm-shadowing``: the host's ROCm libraries may shadow the wheel's (not for a
    wheel that uses the host's ROCm: there the host's ROCm is the one it runs on)."""
    if not node.rocm_version or wheel.rocm is None or wheel.uses_host_rocm:
        return []
    try:
        host_rocm = Version(node.rocm_version)
    except Exception:  # noqa: BLE001 - unparsable probe value: nothing to compare
        return []
    if series(host_rocm) == series(wheel.rocm):
        return []
    return [Advisory.said("host-rocm-shadowing", host=host_rocm, wheel=wheel.name, rocm=wheel.rocm)]


def quantization_listed(m: Matrix, cand: Candidate, request: Request) -> Reason | None:
    """``quantization-not-listed``: the release's ROCm platform does not list the requested
    method (``capabilities.toml``: RocmPlatform.supported_quantization read from its sdist). A
    release the data has no list for is not judged."""
    method = (request.quantization or "").lower()
    caps = m.capabilities_of(cand.vllm) if method else None
    if caps is None or method in caps.quantization:
        return None
    earlier = sorted(
        (c for c in m.capabilities if c.version < cand.vllm and method in c.quantization),
        key=lambda c: c.version,
    )
    later = [c for c in m.capabilities if c.version > cand.vllm and method in c.quantization]
    if earlier:
        last = earlier[-1]
        after = min(
            (c.version for c in m.capabilities if c.version > last.version), default=cand.vllm
        )
        why = finding(
            "quantization-not-listed/removed", after=after, method=method, last=last.version
        )
    elif later:
        first = min(c.version for c in later)
        why = finding("quantization-not-listed/later", method=method, first=first)
    else:  # listed by no release the data knows at or around it
        why = finding("quantization-not-listed/never", method=method)
    w = finding(
        "quantization-not-listed",
        vllm=cand.vllm,
        method=method,
        why=why.message,
        listed=", ".join(caps.quantization),
    )
    return Reason(
        code="quantization-not-listed",
        message=w.message,
        facts=(Fact(text=w.facts[0], source=caps.provenance.source),),
        hint=why.hint,
        fix=Fix(kind="vllm", text=why.fix, host=False) if why.fix else None,
        release=cand.vllm,
    )


def kv_cache_dtype_listed(m: Matrix, cand: Candidate, request: Request) -> Reason | None:
    """``kv-cache-dtype-not-listed``: the release's ``CacheDType`` (vllm/config/cache.py, from
    its sdist) does not name ``--kv-cache-dtype``. A release whose list was not read (before
    0.8.5) is judged only when it is older than the oldest list read and that list lacks the
    dtype: vLLM has only ever added KV cache dtypes (issue 34: nvfp4 on a 0.8.3 image)."""
    dtype = (request.kv_cache_dtype or "").lower()
    caps = m.capabilities_of(cand.vllm) if dtype else None
    variant = "kv-cache-dtype-not-listed"
    if dtype and (caps is None or not caps.kv_cache_dtypes):
        read = [c for c in m.capabilities if c.kv_cache_dtypes]
        oldest = min(read, key=lambda c: c.version) if read else None
        if oldest is None or oldest.version < cand.vllm or dtype in oldest.kv_cache_dtypes:
            return None
        caps, variant = oldest, "kv-cache-dtype-not-listed/older"
    if caps is None or dtype in caps.kv_cache_dtypes:
        return None
    later = sorted(
        c.version for c in m.capabilities if c.version > cand.vllm and dtype in c.kv_cache_dtypes
    )
    if later and variant == "kv-cache-dtype-not-listed":
        variant = "kv-cache-dtype-not-listed/later"
    w = finding(
        variant,
        vllm=cand.vllm,
        dtype=dtype,
        first=later[0] if later else "",
        oldest=caps.version,
        listed=", ".join(caps.kv_cache_dtypes),
    )
    return Reason(
        code="kv-cache-dtype-not-listed",
        message=w.message,
        facts=(Fact(text=w.facts[0], source=caps.provenance.source),),
        hint=w.hint,
        fix=Fix(kind="vllm", text=w.fix, host=False) if w.fix else None,
        release=cand.vllm,
    )


def kv_cache_dtype_backend(m: Matrix, cand: Candidate, request: Request) -> Reason | None:
    """``kv-cache-dtype-no-backend``: the release names the dtype (CacheDType is
    platform-wide), but none of its ROCm attention backends accepts it (``capabilities.toml``
    ``rocm_attention``), so vLLM finds no valid backend. Per-gfx backend gates are not read:
    this refuses only what no ROCm backend takes on any GPU."""
    dtype = (request.kv_cache_dtype or "").lower()
    caps = m.capabilities_of(cand.vllm) if dtype else None
    if caps is None or dtype not in caps.kv_cache_dtypes or caps.attention_backends(dtype) != ():
        return None  # not named at all is kv-cache-dtype-not-listed's answer
    accepted = ", ".join(
        dict.fromkeys(d for _, dtypes in caps.rocm_attention or () for d in dtypes)
    )
    w = finding(
        "kv-cache-dtype-no-backend",
        vllm=cand.vllm,
        dtype=dtype,
        accepted=accepted,
        count=len(caps.rocm_attention or ()),
    )
    return Reason(
        code="kv-cache-dtype-no-backend",
        message=w.message,
        facts=(Fact(text=w.facts[0], source=caps.provenance.source),),
        hint=w.hint,
        release=cand.vllm,
    )


def fp8_admitted(
    m: Matrix, cand: Candidate, targets: Iterable[GfxTarget], request: Request
) -> Reason | None:
    """``fp8-not-admitted``: an FP8 quantization on a GPU the release's ROCm platform does not
    enable FP8 for (``capabilities.toml`` ``fp8``: RocmPlatform.supports_fp8 evaluated per gfx
    from its sdist). The hardware gate (``fp8-unsupported``) is a separate check."""
    quant = request.gated_quantization
    caps = m.capabilities_of(cand.vllm) if quant in FP8_QUANT else None
    if caps is None or caps.fp8 is None:
        return None
    refused = [t.name for t in targets if t.name not in caps.fp8]
    if not refused:
        return None
    admitted = sorted(
        (c.version for c in m.capabilities if c.fp8 is not None and set(refused) <= set(c.fp8)),
    )
    later = [v for v in admitted if v > cand.vllm]
    earlier = [v for v in admitted if v < cand.vllm]
    w = finding(
        "fp8-not-admitted/later"
        if later
        else "fp8-not-admitted/earlier"
        if earlier
        else "fp8-not-admitted",
        vllm=cand.vllm,
        refused=", ".join(refused),
        admitted=", ".join(caps.fp8) or "no GPU",
        release=later[0] if later else earlier[-1] if earlier else "",
    )
    return Reason(
        code="fp8-not-admitted",
        message=w.message,
        facts=(Fact(text=w.facts[0], source=caps.provenance.source),),
        hint=w.hint,
        fix=Fix(kind="vllm", text=w.fix, host=False) if w.fix else None,
        gfx=tuple(refused),
        release=cand.vllm,
    )
