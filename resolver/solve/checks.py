"""What stops one candidate: one function per reason code, each with its message, facts, hint and
fix.

``MatrixProvider.evaluate`` calls them; each returns a ``Reason`` (or ``None`` when the check
passes). Checks that cannot be made say so with a ``Advisory`` (driver unknown, Python or glibc
unknown) instead of stopping the path.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Literal

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
from resolver.util.versions import driver_series, series


def _about_path(cand: Candidate, text: str, source: str | None = None) -> Fact:
    """A fact about the candidate itself (the chain files it under the candidate), from its own
    record unless ``source`` says otherwise."""
    return Fact(
        text=text, source=source or cand.source, confidence=cand.confidence, about=cand.label
    )


def _from_record(
    text: str, record: GfxTarget | GpuProduct | DriverSeries | RocmRelease | WheelVariant
) -> Fact:
    """A fact a data record states, with that record's source and confidence."""
    return Fact(text=text, source=record.provenance.source, confidence=record.provenance.confidence)


# --- unknown facts: release-facts-unknown, artifact-facts-unknown -----------------------------


def release_facts_unknown(cand: Candidate) -> Reason:
    """``release-facts-unknown``: the release exists, its ROCm build files were never read."""
    src = cand.release.provenance.source if cand.release else "matrix/vllm.toml"
    return Reason(
        code="release-facts-unknown",
        message=f"vLLM {cand.vllm}: its ROCm base, arch list and component pins are not in the "
        "data",
        facts=(
            Fact(
                text=f"vLLM {cand.vllm} exists but its ROCm build files were never read",
                source=src,
                confidence="unknown",
                about=cand.label,
            ),
        ),
        hint=f"run `rocm-vllm matrix refresh --source sdist --tag {cand.vllm} --write` to read "
        "them from its sdist",
        fix=Fix(
            kind="data",
            text=f"refresh the data (`rocm-vllm matrix refresh --source sdist --tag {cand.vllm} "
            "--write`)",
            host=False,
        ),
    )


def artifact_facts_unknown(cand: Candidate, src: str) -> Reason:
    """``artifact-facts-unknown``: the artifact exists, its arch list was never read."""
    return Reason(
        code="artifact-facts-unknown",
        message=f"{cand.label}: which GPUs it is built for is not in the data",
        facts=(
            Fact(
                text=f"{cand.label} exists; its arch list was never read",
                source=src,
                confidence="unknown",
                about=cand.label,
            ),
        ),
        hint="run `rocm-vllm matrix refresh` to read it, or check it yourself with `rocm-vllm "
        "image --smoke`",
        fix=Fix(
            kind="data", text="refresh the data (`rocm-vllm matrix refresh --write`)", host=False
        ),
    )


# --- the GPU: gfx-unsupported, gfx-not-shipped ------------------------------------------------


def gfx_check(
    cand: Candidate, target: GfxTarget, m: Matrix | None = None
) -> tuple[Reason | None, bool, str | None]:
    """Does the candidate run on ``target``? (reason, unofficial, HSA override it relies on).
    ``m``: the data, to name the releases whose build does accept a target a source build's
    CMake refuses."""
    arch, src = cand.arch, cand.source
    if target.name in arch:
        return None, False, None
    # A near target the runtime can be told to load (HSA_OVERRIDE_GFX_VERSION): unofficial, and
    # the plan that uses it (also for a GPU vLLM does not support itself, such as gfx1031).
    if target.override and target.override_target in arch and not cand.from_source:
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


def _arch_text(arch: tuple[str, ...]) -> str:
    return ", ".join(arch) if arch else "an unknown arch list"


def gfx_unsupported(cand: Candidate, target: GfxTarget, arch: tuple[str, ...], src: str) -> Reason:
    """``gfx-unsupported``: the artifact lacks the target and vLLM does not support it at all."""
    arch_text = _arch_text(arch)
    return Reason(
        code="gfx-unsupported",
        message=f"{cand.label} ships code for {arch_text}, not {target.name}; vLLM does not "
        f"support {target.name}",
        facts=(
            _about_path(cand, f"{cand.label} is built for {arch_text}", src),
            _from_record(f"{target.name}: {target.vllm_note}", target),
        ),
        # No override hint here: an artifact with the override's code would have been taken
        # (above), so on this path the override leads nowhere.
        hint=gfx_hint(target, override=False),
        gfx=(target.name,),
        unofficial=bool(target.alternative),
    )


def gfx_unsupported_by_vllm(target: GfxTarget) -> Reason:
    """``gfx-unsupported`` for a release whose facts are unknown: what the GPU lacks holds
    anyway."""
    return Reason(
        code="gfx-unsupported",
        message=f"vLLM does not support {target.name}",
        facts=(_from_record(f"{target.name}: {target.vllm_note}", target),),
        # No override hint here: an artifact with the override's code would have been taken
        # (above), so on this path the override leads nowhere.
        hint=gfx_hint(target, override=False),
        gfx=(target.name,),
        unofficial=bool(target.alternative),
    )


def gfx_not_shipped(cand: Candidate, target: GfxTarget, arch: tuple[str, ...], src: str) -> Reason:
    """``gfx-not-shipped``: the artifact carries no code for the target; another artifact may."""
    arch_text = _arch_text(arch)
    return Reason(
        code="gfx-not-shipped",
        message=f"{cand.label} ships code for {arch_text}, not {target.name} (expect 'HIP error: "
        "invalid device function')",
        facts=(_about_path(cand, f"{cand.label} is built for {arch_text}", src),),
        hint=f"choose an artifact built for {target.name}, or build from source: "
        f"`rocm-vllm dockerfile --gfx {target.name}`",
        fix=Fix(kind="gfx", text=f"an artifact built for {target.name}", host=False),
        gfx=(target.name,),
    )


def gfx_not_buildable(m: Matrix, cand: Candidate, target: GfxTarget, src: str) -> Reason:
    """``gfx-not-shipped`` for a source build: the release's CMake does not accept the target
    (HIP_SUPPORTED_ARCHS), so no build of it carries code for it; the hint names the releases
    whose build does."""
    assert cand.release is not None
    able = [str(r.version) for r in m.vllm if r.known and target.name in r.cmake_arch]
    some = ", ".join(able) if len(able) <= 6 else f"{able[0]}, {able[1]}, ..., {able[-1]}"
    return Reason(
        code="gfx-not-shipped",
        message=f"vLLM {cand.vllm} cannot be built for {target.name}: its CMake does not accept "
        "it (HIP_SUPPORTED_ARCHS)",
        facts=(
            _about_path(
                cand,
                f"vLLM {cand.vllm}'s CMake accepts {_arch_text(cand.release.cmake_arch)}",
                src,
            ),
        ),
        hint=f"releases whose build accepts {target.name}: {some}"
        if able
        else f"no vLLM release in the data builds for {target.name}",
        fix=Fix(kind="gfx", text=f"a release whose build accepts {target.name}", host=False),
        gfx=(target.name,),
    )


def gfx_hint(target: GfxTarget, *, override: bool = True) -> str:
    if target.override and override:
        return (
            f"unofficial: HSA_OVERRIDE_GFX_VERSION={target.override} makes the runtime load "
            f"{target.override_target} "
            "code; it can crash or compute wrong results"
        )
    if target.alternative:
        return target.alternative
    return "no vLLM path exists for this GPU; consider llama.cpp (ROCm or Vulkan) instead"


# --- feature gates: fp8-unsupported, mx-unsupported, kv-fp8-unsupported -----------------------


def gate_checks(
    m: Matrix, cand: Candidate, targets: Iterable[GfxTarget], request: Request
) -> list[Reason]:
    """The request's quantization and KV cache dtype against each GPU's feature gates."""
    reasons: list[Reason] = []
    quant = (request.quantization or "").lower() or None
    kv = (request.kv_cache_dtype or "").lower() or None
    for target in targets:
        gates = target.features
        fact = Fact(
            text=f"{target.name}: FP8 "
            f"{'yes (' + str(gates.fp8_format) + ')' if gates.fp8 else 'no'}, MX formats "
            f"{'yes' if gates.mx else 'no'}",
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
    message = (
        f"{quant} quantization needs hardware FP8, which {target.name} ({target.arch}) does not "
        "have"
    )
    if caps is not None and caps.fp8 is not None and target.name in caps.fp8:
        gemm = caps.fp8_scaled_mm
        if gemm is not None and target.name not in gemm and caps.kernels("wfp8a16") == ():
            message += (
                f"; vLLM {caps.version} admits FP8 there (supports_fp8) but gates its FP8 GEMM "
                f"to {', '.join(gemm)} and has no weight-only FP8 kernel for ROCm, so FP8 runs "
                f"neither emulated nor weight-only on {target.name}"
            )
        elif gemm is not None and target.name not in gemm:
            message += (
                f"; vLLM {caps.version} admits FP8 there (supports_fp8) but gates its FP8 GEMM "
                f"to {', '.join(gemm)}"
            )
        else:
            message += f"; vLLM {caps.version} admits FP8 there (supports_fp8) all the same"
        facts.append(
            Fact(
                text=f"vLLM {caps.version} supports_fp8 admits {target.name}"
                + (f"; FP8 GEMM on {', '.join(gemm)}" if gemm is not None else ""),
                source=caps.provenance.source,
            )
        )
    return Reason(
        code="fp8-unsupported",
        message=message,
        facts=tuple(facts),
        hint="use a BF16/FP16 checkpoint or an AWQ/GPTQ int4 one on this GPU",
        fix=Fix(kind="quantization", text="a BF16/FP16 or AWQ/GPTQ checkpoint", host=False),
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
    what = (
        "MX (microscaling) compute, which only gfx950-class GPUs have, and no source says vLLM "
        "runs it "
        f"weight-only on {target.name}"
        if quant in MXFP4_QUANT
        else f"MX (microscaling) compute, which only gfx950-class GPUs have; {target.name} does not"
    )
    return Reason(
        code="mx-unsupported",
        message=f"{quant} needs {what}",
        facts=(fact,),
        hint="use an FP8 or BF16 checkpoint of the model"
        if gates.fp8
        else "use a BF16/FP16 or AWQ/GPTQ checkpoint",
        fix=Fix(kind="quantization", text="a non-MX checkpoint", host=False),
        gfx=(target.name,),
    )


def kv_fp8_unsupported(kv: str | None, target: GfxTarget, fact: Fact) -> Reason | None:
    """``kv-fp8-unsupported``: an FP8 KV cache on a GPU without hardware FP8."""
    if kv is None or not kv.startswith("fp8") or target.features.fp8:
        return None
    return Reason(
        code="kv-fp8-unsupported",
        message=f"--kv-cache-dtype {kv} needs hardware FP8, which {target.name} does not have",
        facts=(fact,),
        hint="use --kv-cache-dtype auto",
        fix=Fix(kind="quantization", text="--kv-cache-dtype auto", host=False),
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


def driver_predates_gpu(
    m: Matrix, node: Node, driver: DriverSeries, target: GfxTarget, cand: Candidate
) -> Reason | None:
    """``driver-predates-gpu``: the host's amdgpu shipped with a ROCm older than the first ROCm
    that supports the GPU, so its kernel driver does not know the GPU, whatever the container
    brings (a GPU newer than its driver)."""
    product = first_product(node, target)
    if product is None or product.first_rocm is None or driver.paired_rocm is None:
        return None
    first = _v(product.first_rocm)
    if _v(driver.paired_rocm) >= first:
        return None
    good = list(drivers_for(m, node, cand))
    rocm = cand.rocm or first
    return Reason(
        code="driver-predates-gpu",
        message=f"amdgpu {driver.series}.x shipped with ROCm {driver.paired_rocm}, before ROCm "
        f"{first}, the first to support {product.name} ({target.name})",
        facts=(
            _from_record(
                f"amdgpu {driver.series}.x shipped with ROCm {driver.paired_rocm}", driver
            ),
            _from_record(f"{product.name} ({target.name}) is supported from ROCm {first}", product),
        ),
        hint=(
            _driver_hint(driver, rocm, good)
            if good
            else f"no amdgpu driver in AMD's table supports {product.name} and runs ROCm "
            f"{series(rocm)}"
        )
        + f" (the first driver released with ROCm {series(first)} or later)",
        fix=_driver_fix(driver, rocm, good, m=m, node=node) if good else None,
        gfx=(target.name,),
    )


# --- the driver window: driver-window ---------------------------------------------------------


def driver_check(
    m: Matrix, node: Node, driver: DriverSeries | None, cand: Candidate
) -> tuple[Reason | None, list[Advisory]]:
    """Does the host's amdgpu driver run the candidate's ROCm user space?"""
    assert cand.rocm is not None
    rocm = m.rocm_for(cand.rocm)
    warnings = driver_warnings(node, driver, cand, rocm, needs=drivers_for(m, node, cand))
    if node.driver_version is None or driver is None:
        return None, warnings
    if rocm is not None and rocm.stream == "therock-preview":
        return preview_driver_window(driver, cand, rocm), warnings
    return driver_window(m, driver, cand, node), warnings


def driver_warnings(
    node: Node,
    driver: DriverSeries | None,
    cand: Candidate,
    rocm: RocmRelease | None,
    *,
    needs: tuple[DriverSeries, ...] = (),
) -> list[Advisory]:
    """``preview-rocm`` for a preview ROCm; ``driver-unchecked``/``unknown-driver`` when the
    driver check cannot be made."""
    warnings: list[Advisory] = []
    if rocm is not None and rocm.stream == "therock-preview":
        warnings.append(
            Advisory(
                code="preview-rocm",
                message=f"{cand.label} runs on {rocm.label}, a technology preview with no upgrade "
                "path from 7.2.x",
                hint="prefer an artifact on a production ROCm (7.2.x legacy or 7.14+/10.x TheRock)",
                source=rocm.provenance.source,
            )
        )
    if node.driver_version is None:
        warnings.append(
            Advisory(
                code="driver-unchecked",
                message="the host's AMD GPU Driver release is unknown, so nobody checked that it "
                f"runs ROCm {cand.rocm}"
                + (
                    f" (it needs amdgpu {', '.join(d.series + '.x' for d in needs)})"
                    if needs
                    else ""
                ),
                hint="give it with --driver (the amdgpu-install version, e.g. 30.30.3); "
                "inbox distro drivers are not in AMD's driver/user-space table",
            )
        )
    elif driver is None:
        warnings.append(
            Advisory(
                code="unknown-driver",
                message=f"amdgpu driver {node.driver_version} is not in AMD's driver/user-space "
                "table; "
                f"cannot check that it runs ROCm {cand.rocm}",
                hint="give the AMD GPU driver release (e.g. 30.30.3); inbox distro drivers are not "
                "in AMD's table",
            )
        )
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
    """The driver did not ship before any of the node's GPUs (``driver-predates-gpu``'s rule; a
    series whose release ROCm is not recorded is not ruled out). ``floor``: the node's
    ``gpus_first_rocm``, where the caller asks for many drivers."""
    if driver.paired_rocm is None:
        return True
    newest = floor if floor is not None else gpus_first_rocm(m, node)
    return newest is None or _v(driver.paired_rocm) >= newest


def drivers_for(m: Matrix, node: Node, cand: Candidate) -> tuple[DriverSeries, ...]:
    """The amdgpu series that run this path on this node: they run its ROCm user space (any
    series, for a path whose ROCm is not known) and know the node's GPUs (what a plan needs of
    the host's driver; where a driver fix is chosen)."""
    pool = m.drivers_running(cand.rocm) if cand.rocm is not None else m.drivers
    floor = gpus_first_rocm(m, node)
    return tuple(d for d in pool if knows_gpus(m, node, d, floor))


def driver_window(
    m: Matrix, driver: DriverSeries, cand: Candidate, node: Node | None = None
) -> Reason | None:
    """``driver-window``: the driver series does not run the candidate's ROCm (AMD's table).
    The fix is a series that runs it and knows the node's GPUs."""
    assert cand.rocm is not None
    if driver.runs(cand.rocm):
        return None
    good = [d for d in m.drivers_running(cand.rocm) if node is None or knows_gpus(m, node, d)]
    window = _window(driver.user_space)
    return Reason(
        code="driver-window",
        message=f"{cand.label} ships ROCm {cand.rocm}, but amdgpu {driver.series}.x runs ROCm user "
        f"space {window} only",
        facts=(
            _about_path(cand, f"{cand.label} ships ROCm {cand.rocm}"),
            _from_record(f"amdgpu {driver.series}.x supports ROCm user space {window}", driver),
        ),
        hint=_driver_hint(driver, cand.rocm, good),
        fix=_driver_fix(driver, cand.rocm, good, m=m, node=node) if good else None,
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
        f"its release notes list amdgpu {rocm.kmd_at_release}"
        if listed
        else "AMD states no driver support for it here"
    )
    return Reason(
        code="driver-window",
        message=f"{cand.label} ships {rocm.label}; {known}, not {driver.series}.x",
        facts=(
            _about_path(cand, f"{cand.label} ships {rocm.label}"),
            _from_record(f"{rocm.label}: {known}", rocm),
        ),
        hint="prefer an artifact on a production ROCm release, whose driver support AMD tabulates",
        fix=None,
    )


def _best_driver(
    driver: DriverSeries | None, rocm: Version, good: list[DriverSeries]
) -> tuple[str, Literal["upgrade", "downgrade"]]:
    """The smallest move from the host's driver to one that runs ``rocm``: the oldest series
    newer than the host's; only when none is newer, the newest older one (a downgrade)."""
    here = _series_key(driver.series) if driver is not None else None
    if here is None:
        paired = [
            d for d in good if d.paired_rocm and series(Version(d.paired_rocm)) == series(rocm)
        ]
        return (paired[0] if paired else good[0]).series, "upgrade"
    forward = [d for d in good if _series_key(d.series) > here]
    if forward:
        return min(forward, key=lambda d: _series_key(d.series)).series, "upgrade"
    return max(good, key=lambda d: _series_key(d.series)).series, "downgrade"


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
    if m is not None and node is not None:
        good = _prefer_os(m, node, good)
    best, direction = _best_driver(driver, rocm, good)
    step = _os_step(m, node, best) if m is not None and node is not None else None
    note = f" (not supported on {node.os}: move the host to {step} first)" if step and node else ""
    return Fix(
        kind="driver",
        text=f"amdgpu driver {best}.x{note}",
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
    d = m.driver(best)
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
    return (newer or sorted(same, key=key) or list(oses))[0]


def _driver_hint(driver: DriverSeries | None, rocm: Version, good: list[DriverSeries]) -> str:
    if not good:
        return f"no amdgpu driver in AMD's table runs ROCm {series(rocm)}"
    best, direction = _best_driver(driver, rocm, good)
    others = ", ".join(
        d.series + ".x"
        for d in sorted(good, key=lambda d: _series_key(d.series))
        if d.series != best
    )
    return f"{direction} the host's amdgpu driver to {best}.x" + (
        f" (also running ROCm {series(rocm)}: {others})" if others else ""
    )


def _series_key(value: str) -> tuple[int, ...]:
    """ "30.30" -> (30, 30): driver series sort by number ("6.4" before "30.10")."""
    return tuple(int(p) for p in value.split(".") if p.isdigit())


def _window(user_space: Iterable[str]) -> str:
    items = sorted(user_space, key=lambda s: tuple(int(p) for p in s.split(".")))
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
        return [], [
            Advisory(
                code="python-unknown",
                message=f"the node's Python is unknown; {wheel.name} wheels exist for CPython "
                f"{wanted} only",
                hint=f"create the venv with that Python: `uv venv --python {wheel.python[0]}`",
                source=src,
            )
        ]
    if py in wheel.python:
        return [], []
    return [
        Reason(
            code="python-mismatch",
            message=f"{wheel.name} wheels are built for CPython {wanted}; on Python {py} pip "
            "silently installs the CUDA wheel from PyPI",
            facts=(
                _from_record(f"{wheel.name} wheels exist for CPython {wanted} only", wheel),
                Fact(
                    text="other Pythons fall back to the CUDA wheel",
                    source="vllm-project/vllm#44660",
                ),
            ),
            hint=f"use Python {wheel.python[0]} for the venv: `uv venv --python {wheel.python[0]}`",
            fix=Fix(
                kind="python",
                text=f"Python {wheel.python[0]}",
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
        return [], [
            Advisory(
                code="glibc-unknown",
                message=f"the host's glibc is unknown; {wheel.name} wheels need glibc >= "
                f"{wheel.glibc_min}",
                hint="give --os (e.g. ubuntu-22.04) or check `ldd --version`",
                source=src,
            )
        ]
    if glibc >= wheel.glibc_min:
        return [], []
    return [
        Reason(
            code="glibc-too-old",
            message=f"{wheel.name} wheels need glibc >= {wheel.glibc_min}; this host has {glibc}",
            facts=(
                _from_record(f"{wheel.name} wheels need glibc >= {wheel.glibc_min}", wheel),
                Fact(
                    text=f"{node.os or 'the host'} ships glibc {glibc}", source=glibc_src or "probe"
                ),
            ),
            hint=f"use the container image instead, or a host OS with glibc >= {wheel.glibc_min} "
            "(Ubuntu 22.04 has 2.35)",
            fix=Fix(
                kind="os",
                text=f"a host OS with glibc >= {wheel.glibc_min}",
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
    fact = _from_record(
        f"the {wheel.name} wheel uses the host's ROCm installation (ROCm {want})", wheel
    )
    if not node.rocm_version:
        return [], [
            Advisory(
                code="host-rocm-unknown",
                message=f"the {wheel.name} wheel uses the host's ROCm, which must be ROCm {want}; "
                "the host's ROCm is not known",
                hint=f"give it with --rocm (cat /opt/rocm/.info/version); install ROCm {want} "
                "on the host for this wheel",
                source=wheel.provenance.source,
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
            message=f"the {wheel.name} wheel uses the host's ROCm installation, which must be "
            f"ROCm {want}; the host has ROCm {node.rocm_version}",
            facts=(fact,),
            hint=f"install ROCm {want} on the host, or take a wheel or image that brings its "
            "own ROCm",
            fix=Fix(
                kind="rocm",
                text=f"ROCm {want} on the host",
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
    return [
        Advisory(
            code="host-rocm-shadowing",
            message=f"the host has ROCm {host_rocm}; the {wheel.name} wheel's torch brings ROCm "
            f"{wheel.rocm} libraries",
            hint="keep /opt/rocm*/lib off LD_LIBRARY_PATH in the venv (ROCm/rocm-libraries#4547)",
            source="ROCm/rocm-libraries#4547",
        )
    ]


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
        why = f"vLLM {after} removed {method} from ROCm ({last.version} lists it)"
        hint = f"pick vLLM {last.version} (--vllm '=={last.version}'), the newest that lists it"
        fix = Fix(kind="vllm", text=f"vLLM {last.version}", host=False)
    elif later:
        first = min(c.version for c in later)
        why = f"{method} arrived in vLLM {first} on ROCm"
        hint = f"pick vLLM {first} or newer"
        fix = Fix(kind="vllm", text=f"vLLM {first} or newer", host=False)
    else:  # listed by no release the data knows at or around it
        why = f"no release in the data lists {method} on ROCm"
        hint = "pick another quantization method"
        fix = None
    return Reason(
        code="quantization-not-listed",
        message=f"vLLM {cand.vllm}'s ROCm platform does not list {method}: {why}",
        facts=(
            Fact(
                text=f"vLLM {cand.vllm} supported_quantization: {', '.join(caps.quantization)}",
                source=caps.provenance.source,
            ),
        ),
        hint=hint,
        fix=fix,
        release=cand.vllm,
    )


def kv_cache_dtype_listed(m: Matrix, cand: Candidate, request: Request) -> Reason | None:
    """``kv-cache-dtype-not-listed``: the release's ``CacheDType`` (vllm/config/cache.py, from
    its sdist) does not name ``--kv-cache-dtype``. A release whose list was not read is not
    judged."""
    dtype = (request.kv_cache_dtype or "").lower()
    caps = m.capabilities_of(cand.vllm) if dtype else None
    if caps is None or not caps.kv_cache_dtypes or dtype in caps.kv_cache_dtypes:
        return None
    later = sorted(
        c.version for c in m.capabilities if c.version > cand.vllm and dtype in c.kv_cache_dtypes
    )
    return Reason(
        code="kv-cache-dtype-not-listed",
        message=f"vLLM {cand.vllm} has no KV cache dtype {dtype}"
        + (f" (it arrived in {later[0]})" if later else ""),
        facts=(
            Fact(
                text=f"vLLM {cand.vllm} CacheDType: {', '.join(caps.kv_cache_dtypes)}",
                source=caps.provenance.source,
            ),
        ),
        hint=f"pick vLLM {later[0]} or newer" if later else "pick another KV cache dtype",
        fix=Fix(kind="vllm", text=f"vLLM {later[0]} or newer", host=False) if later else None,
        release=cand.vllm,
    )


def fp8_admitted(
    m: Matrix, cand: Candidate, targets: Iterable[GfxTarget], request: Request
) -> Reason | None:
    """``fp8-not-admitted``: an FP8 quantization on a GPU the release's ROCm platform does not
    enable FP8 for (``capabilities.toml`` ``fp8``: RocmPlatform.supports_fp8 evaluated per gfx
    from its sdist). The hardware gate (``fp8-unsupported``) is a separate check."""
    quant = (request.quantization or "").lower()
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
    hint = (
        f"pick vLLM {later[0]} or newer, which enables FP8 there"
        if later
        else f"pick vLLM {earlier[-1]}, the newest that enables FP8 there"
        if earlier
        else "use a BF16/FP16 or AWQ/GPTQ checkpoint on this GPU"
    )
    return Reason(
        code="fp8-not-admitted",
        message=f"vLLM {cand.vllm} does not enable FP8 on {', '.join(refused)} "
        "(RocmPlatform.supports_fp8)",
        facts=(
            Fact(
                text=f"vLLM {cand.vllm} supports_fp8 admits {', '.join(caps.fp8) or 'no GPU'}",
                source=caps.provenance.source,
            ),
        ),
        hint=hint,
        fix=Fix(kind="vllm", text=hint.split(",")[0].removeprefix("pick "), host=False)
        if later or earlier
        else None,
        gfx=tuple(refused),
        release=cand.vllm,
    )
