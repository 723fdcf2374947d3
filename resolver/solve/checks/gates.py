"""The GPU's feature gates: ``fp8-unsupported``, ``mx-unsupported`` and
``kv-fp8-unsupported`` (what the hardware computes, and what a release runs there anyway)."""

from __future__ import annotations

from collections.abc import Iterable

from resolver.data.model import GfxTarget, Matrix, ReleaseCapabilities
from resolver.solve.finding import finding, phrase
from resolver.solve.types import (
    FP8_QUANT,
    MX_QUANT,
    MXFP4_QUANT,
    Candidate,
    Fact,
    Fix,
    Reason,
    Request,
    mx_format,
)


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
