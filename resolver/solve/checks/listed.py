"""What the release itself lists (``capabilities.toml``, read from its sdist):
``quantization-not-listed``, ``kv-cache-dtype-not-listed``, ``kv-cache-dtype-no-backend`` and
``fp8-not-admitted``."""

from __future__ import annotations

from collections.abc import Iterable

from resolver.data.codes import ReasonCode
from resolver.data.model import GfxTarget, Matrix, ReleaseCapabilities
from resolver.solve.finding import Found, Phrase, finding
from resolver.solve.types import FP8_QUANT, Candidate, Fact, Fix, Reason, Request


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
    return _not_listed("quantization-not-listed", w, caps, cand, hint=why.hint, fix=why.fix)


def _not_listed(
    code: ReasonCode,
    w: Found,
    caps: ReleaseCapabilities,
    cand: Candidate,
    *,
    hint: Phrase,
    fix: Phrase,
) -> Reason:
    """A release's list (quantization methods, KV cache dtypes) lacks what the request asks:
    the fact is the list, read from the release's sdist; the fix, where one, another vLLM."""
    return Reason(
        code=code,
        message=w.message,
        facts=(Fact(text=w.facts[0], source=caps.provenance.source),),
        hint=hint,
        fix=Fix(kind="vllm", text=fix, host=False) if fix else None,
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
    return _not_listed("kv-cache-dtype-not-listed", w, caps, cand, hint=w.hint, fix=w.fix)


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
