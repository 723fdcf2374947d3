"""What a request asks of a model, and what the decision answers about it (issue 37).

``ModelRequest`` is the model the user will serve (``--model``: its config read by
``resolver.data.hfmodel``) with vLLM's own sizing knobs as the user pinned them (``None``: the
tool chooses, as vLLM's flags of the same names default). ``ModelAnswer`` is the decision's
``model`` section: the architecture and whether the planned release's registry lists it, the
quantization judged, the attention path, and the memory fit (``resolver.solve.fit``) at the
planned release's own ``gpu_memory_utilization`` default, with the table of tensor-parallel
sizes x contexts it was chosen from. The checks are in ``resolver.solve.checks`` (model
family); nothing here words anything.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import msgspec
from msgspec.structs import replace
from packaging.version import Version

from resolver.data.hfmodel import SLIDING, ModelConfig
from resolver.data.model import AttentionTraits, GpuProduct, Matrix, ModelSupport
from resolver.data.node import Gpu, Node
from resolver.solve.finding import Phrase, finding, phrase
from resolver.solve.fit import Fit, fit, smallest_tp, valid_tp, valid_tps
from resolver.solve.modelspec import GpuMemory, ModelAnswer, ModelRequest
from resolver.solve.types import (
    Advisory,
    Candidate,
    Fact,
    Fix,
    HostChange,
    Reason,
    Request,
    RequestError,
)

if TYPE_CHECKING:
    from resolver.solve.types import Decision

_ARCH_UNSUPPORTED = "model-architecture-unsupported"

__all__ = [
    "CONTEXTS",
    "GpuMemory",
    "ModelAnswer",
    "ModelRequest",
    "Sizing",
    "answer",
    "fit_rules",
    "gpu_memory",
    "model_rules",
    "release_gmu",
    "size_for",
    "with_checkpoint",
]


# --- the memory one GPU offers -----------------------------------------------------------------


def gpu_memory(m: Matrix, node: Node) -> GpuMemory | None:
    """The memory of one of the node's GPUs (its smallest): the probe's reading, else its
    product's record (a partition's share where the GPU is partitioned), else the smallest
    product of its gfx target the data sizes (said as assumed). None: an APU, or nothing
    sized. A provider asks it once per solve (``MatrixProvider.memory``)."""
    if node.nvidia_gpus:
        return _nvidia_memory(m, node)
    read = [g.vram_bytes for g in node.gpus if g.vram_bytes]
    if read and len(read) == len(node.gpus):
        # An APU's reading is its GTT pool: system RAM, sized by the kernel's ttm.pages_limit.
        unified = any(
            (t := m.gfx_target(g.gfx)) is not None and bool(t.unified_memory_source)
            for g in node.gpus
        )
        return GpuMemory(bytes=min(read), source=phrase("fit/memory-probe"), unified=unified)
    sized: list[tuple[int, Phrase, str]] = []
    unified = False
    for g in node.gpus:
        target = m.gfx_target(g.gfx)
        products = target.products if target is not None else ()
        named = [p for p in products if g.product and p.name == g.product]
        for p in named:
            unified |= p.memory_unified
            share = _partition_bytes(p, g)
            if share is not None:
                sized.append(share)
            elif p.memory_bytes is not None and not p.memory_unified:
                said = phrase("fit/memory-product", product=p.name)
                sized.append((p.memory_bytes, said, _cited(p)))
    if sized:
        size, source, cited = min(sized, key=lambda s: s[0])
        return GpuMemory(bytes=size, source=source, cited=cited)
    if unified:
        return None
    for name in node.gfx_targets:
        target = m.gfx_target(name)
        products = target.products if target is not None else ()
        # A partitioned GPU whose product is not named: the smallest share any product of the
        # target gives in that mode (never a whole GPU's memory for one partition).
        shares = [
            share
            for g in node.gpus
            if g.gfx == name
            for p in products
            if (share := _partition_bytes(p, g)) is not None
        ]
        if shares:
            size, _, cited = min(shares, key=lambda s: s[0])
            said = phrase("fit/memory-assumed-partition", gfx=name)
            return GpuMemory(bytes=size, source=said, cited=cited)
        if any(
            g.partition is not None and g.partition.compute not in (None, "SPX") for g in node.gpus
        ):
            return None  # a partition of unknown size: not sized, rather than sized as a whole GPU
        known = [p for p in products if p.memory_bytes is not None and not p.memory_unified]
        if known:
            p = min(known, key=lambda p: p.memory_bytes or 0)
            assert p.memory_bytes is not None
            return GpuMemory(
                bytes=p.memory_bytes,
                source=phrase("fit/memory-assumed", product=p.name, gfx=name),
                cited=_cited(p),
            )
    return None


def _cited(p: GpuProduct) -> str:
    return p.memory_source or p.provenance.source


def _partition_bytes(p: GpuProduct, g: Gpu) -> tuple[int, Phrase, str] | None:
    part = g.partition
    if part is None or part.compute in (None, "SPX"):
        return None
    for mode in p.partitions:
        if mode.compute == part.compute and (part.memory is None or mode.memory == part.memory):
            if mode.memory_bytes is None:
                return None
            said = phrase(
                "fit/memory-partition", product=p.name, mode=f"{mode.compute}/{mode.memory}"
            )
            return mode.memory_bytes, said, mode.provenance.source
    return None


def _nvidia_memory(m: Matrix, node: Node) -> GpuMemory | None:
    read = [g.get("vram_bytes") for g in node.nvidia_gpus]
    if read and all(isinstance(b, int) and b > 0 for b in read):
        return GpuMemory(bytes=min(int(b) for b in read if b), source=phrase("fit/memory-probe"))
    for g in node.nvidia_gpus:
        record = m.nvidia_gpu(str(g.get("pci_device_id") or ""))
        pci = str(g.get("pci_device_id") or "").lower().removeprefix("0x")[:4]
        for mem in record.memory if record is not None else ():
            size = mem.memory_bytes or mem.marketed_memory_bytes
            if pci in mem.pci_device_ids and size:
                name = record.name if record is not None else "the GPU"
                return GpuMemory(
                    bytes=size,
                    source=phrase("fit/memory-product", product=name),
                    cited=mem.memory_source or mem.provenance.source,
                )
    return None


# --- what the checkpoint says of the request --------------------------------------------------


def with_checkpoint(request: Request) -> Request:
    """The request with the checkpoint's quantization as its method when none is given (vLLM
    reads it from ``quantization_config``); a ``--quantization`` that contradicts it is bad
    input. A TP size that vLLM would refuse for the model (it must divide the attention heads,
    and the KV heads divide by it or it by them) is bad input too, with the valid sizes."""
    mr = request.model
    if mr is None:
        return request
    q = mr.config.quantization
    if q is not None:
        method = q.method.lower()
        asked = (request.quantization or "").lower()
        if asked and asked != method:
            raise RequestError(
                phrase("request/quantization-contradicts", asked=asked, method=method),
                hint=phrase("request/quantization-contradicts-hint", method=method),
            )
        fmt = (q.fmt or "").lower()
        gate = "fp8" if fmt in ("e4m3", "e5m2") else "mxfp4" if fmt == "mxfp4" else None
        request = replace(request, quantization=method, gate_as=gate)
    tp = mr.tensor_parallel_size
    if tp is not None and not valid_tp(mr.config, tp):
        raise RequestError(
            phrase(
                "request/tp-invalid",
                tp=tp,
                heads=mr.config.num_attention_heads,
                kv=mr.config.num_key_value_heads,
            ),
            hint=phrase("request/tp-invalid-hint", valid=tuple(map(str, valid_tps(mr.config, 64)))),
        )
    return request


# --- sizing ------------------------------------------------------------------------------------


class Sizing(msgspec.Struct, frozen=True, kw_only=True):
    """How the model fits the node's GPUs at one release's memory default."""

    context: int
    fits: Fit | None  # the smallest TP on this node where the context fits
    capped: Fit | None  # else the TP with the longest context that fits (``largest_max_model_len``)
    tried: tuple[Fit, ...]  # every TP tried on this node, at the context
    min_gpus: int | None  # the fewest GPUs of this kind where the context fits (at most 64)


@functools.lru_cache(maxsize=64)
def sizing(
    cfg: ModelConfig,
    gpu_bytes: int,
    gpus: int,
    tp: int | None,
    context: int | None,
    gmu: float,
    kv: str,
) -> Sizing:
    ctx = context or cfg.max_position_embeddings or 4096
    tps = (tp,) if tp is not None else valid_tps(cfg, max(1, gpus))
    tried = tuple(
        fit(
            cfg,
            gpu_bytes=gpu_bytes,
            tp=t,
            max_model_len=ctx,
            gpu_memory_utilization=gmu,
            kv_dtype=kv,
        )
        for t in tps
    )
    fits = next((f for f in tried if f.fits and f.gpus <= gpus), None)
    capped = None
    if fits is None:
        usable = [f for f in tried if f.gpus <= gpus and f.largest_max_model_len > 0]
        capped = max(usable, key=lambda f: f.largest_max_model_len, default=None)
    least = smallest_tp(
        cfg, gpu_bytes=gpu_bytes, max_model_len=ctx, gpu_memory_utilization=gmu, kv_dtype=kv
    )
    return Sizing(
        context=ctx,
        fits=fits,
        capped=capped,
        tried=tried,
        min_gpus=least.gpus if least is not None else None,
    )


def release_gmu(m: Matrix, request: Request, vllm: Version) -> float:
    """--gpu-memory-utilization, else the release's own default (read from its sdist), else
    vLLM's long-standing 0.9 (said where it is assumed)."""
    mr = request.model
    if mr is not None and mr.gpu_memory_utilization is not None:
        return mr.gpu_memory_utilization
    support = m.model_support(vllm)
    if support is not None and support.gpu_memory_utilization is not None:
        return support.gpu_memory_utilization
    return DEFAULT_GMU


DEFAULT_GMU = 0.9  # vllm/engine/arg_utils.py EngineArgs.gpu_memory_utilization before 0.20.0


def node_gpus(node: Node) -> int:
    return node.logical_gpu_count or len(node.gpus) or len(node.nvidia_gpus) or 1


def size_for(
    m: Matrix, node: Node, request: Request, vllm: Version, memory: GpuMemory | None
) -> Sizing | None:
    """How the model fits ``memory`` (``gpu_memory`` of the node, found once by the caller)."""
    mr = request.model
    if mr is None or memory is None:
        return None
    return sizing(
        mr.config,
        memory.bytes,
        node_gpus(node),
        mr.tensor_parallel_size,
        mr.max_model_len,
        release_gmu(m, request, vllm),
        (request.kv_cache_dtype or "auto").lower(),
    )


# --- the rules a candidate meets -----------------------------------------------------------------


def model_rules(
    m: Matrix,
    node: Node,
    request: Request,
    cand: Candidate,
    *,
    amd: bool,
    memory: GpuMemory | None,
) -> tuple[list[Reason], list[Advisory]]:
    """What the model asks of this path's release: its registry lists the architecture (and, on
    ROCm, does not exclude it), an attention backend takes what the model needs, and the model
    fits the node's GPUs (``memory``: ``gpu_memory``'s answer, which the caller keeps)."""
    mr = request.model
    if mr is None:
        return [], []
    reasons: list[Reason] = []
    warnings: list[Advisory] = []
    support = m.model_support(cand.vllm)
    _architecture(m, mr, cand, support, amd, reasons, warnings)
    if amd:
        _attention(mr.config, cand, support, reasons, warnings)
    _fit(m, node, request, cand, memory, reasons, warnings)
    return reasons, warnings


def fit_rules(
    m: Matrix, node: Node, request: Request, cand: Candidate, memory: GpuMemory | None
) -> tuple[list[Reason], list[Advisory]]:
    """The memory fit alone: it holds whatever the release pins (a release whose build facts
    were never read is still too small a node for a model that does not fit)."""
    reasons: list[Reason] = []
    warnings: list[Advisory] = []
    if request.model is not None:
        _fit(m, node, request, cand, memory, reasons, warnings)
    return reasons, warnings


def _architecture(
    m: Matrix,
    mr: ModelRequest,
    cand: Candidate,
    support: ModelSupport | None,
    amd: bool,
    reasons: list[Reason],
    warnings: list[Advisory],
) -> None:
    arch = mr.config.architectures[0] if mr.config.architectures else None
    if arch is None:
        return
    listed = support.architectures if support is not None else None
    if listed is None:
        warnings.append(
            Advisory.said(
                "model-architecture-unchecked", arch=arch, vllm=cand.vllm, severity="info"
            )
        )
        return
    assert support is not None
    source = support.record.provenance.source
    if arch not in listed:
        first = m.first_release_with(arch)
        later = first is not None and first > cand.vllm
        fallback = any(a.startswith("Transformers") for a in listed) and not mr.config.remote_code
        if fallback and not later:
            # No release has a class of its own: the Transformers backend is the way it runs.
            warnings.append(
                Advisory.said(
                    "model-architecture-fallback", arch=arch, vllm=cand.vllm, source=source
                )
            )
        else:
            w = finding(
                "model-architecture-unsupported/later" if later else _ARCH_UNSUPPORTED,
                arch=arch,
                vllm=cand.vllm,
                first=first or "",
            )
            reasons.append(
                Reason(
                    code="model-architecture-unsupported",
                    message=w.message,
                    facts=(Fact(text=w.facts[0], source=source, about=cand.label),),
                    hint=w.hint,
                    fix=Fix(kind="vllm", text=w.fix, host=False) if later else None,
                    release=cand.vllm,
                )
            )
            return
    if amd and support.rocm_unsupported is not None and arch in support.rocm_unsupported:
        w = finding("model-rocm-unsupported", arch=arch, vllm=cand.vllm)
        reasons.append(
            Reason(
                code="model-rocm-unsupported",
                message=w.message,
                facts=(Fact(text=w.facts[0], source=source, about=cand.label),),
                hint=w.hint,
                release=cand.vllm,
            )
        )
    elif amd and arch in support.rocm_partial:
        warnings.append(
            Advisory.said(
                "model-rocm-partial",
                arch=arch,
                vllm=cand.vllm,
                why=support.rocm_partial[arch] or "no reason given",
                source=source,
            )
        )


def _needs(cfg: ModelConfig) -> list[tuple[str, Callable[[AttentionTraits], bool | None]]]:
    """What the model asks of a ROCm attention backend, each as (wording variant, trait)."""
    needs: list[tuple[str, Callable[[AttentionTraits], bool | None]]] = []
    if cfg.is_mla:
        needs.append(("mla", lambda b: b.mla))
    else:
        needs.append(("not-mla", lambda b: None if b.mla is None else not b.mla))
        needs.append(("head-size", lambda b: b.takes_head_size(cfg.head_dim)))
    if cfg.count(SLIDING):
        needs.append(("sliding-window", lambda b: b.sliding_window))
    if cfg.is_encoder_decoder:
        needs.append(
            (
                "encoder-decoder",
                lambda b: None if b.attn_types is None else "encoder_decoder" in b.attn_types,
            )
        )
    return needs


def _attention(
    cfg: ModelConfig,
    cand: Candidate,
    support: ModelSupport | None,
    reasons: list[Reason],
    warnings: list[Advisory],
) -> None:
    backends = support.backends if support is not None else None
    if not backends:
        if cfg.is_mla or cfg.count(SLIDING) or cfg.is_encoder_decoder:
            warnings.append(
                Advisory.said(
                    "model-attention-unchecked",
                    vllm=cand.vllm,
                    needs=_need_words(cfg),
                    severity="info",
                )
            )
        return
    assert support is not None
    needs = _needs(cfg)
    verdicts = [[trait(b) for _, trait in needs] for b in backends]
    if any(all(v is True for v in row) for row in verdicts):
        return  # a backend states it takes all of it
    if any(all(v is not False for v in row) for row in verdicts):
        warnings.append(
            Advisory.said(
                "model-attention-unchecked",
                vllm=cand.vllm,
                needs=_need_words(cfg),
                severity="info",
                source=support.record.provenance.source,
            )
        )
        return
    # Every backend refuses something: name the first need no backend takes.
    variant = next(
        (name for i, (name, _) in enumerate(needs) if not any(row[i] for row in verdicts)),
        needs[0][0],
    )
    w = finding(
        f"model-attention-unsupported/{variant}",
        vllm=cand.vllm,
        head=cfg.head_dim,
        backends=tuple(b.name for b in backends),
    )
    reasons.append(
        Reason(
            code="model-attention-unsupported",
            message=w.message,
            facts=(Fact(text=w.facts[0], source=support.record.provenance.source),),
            hint=w.hint,
            release=cand.vllm,
        )
    )


def _need_words(cfg: ModelConfig) -> tuple[Phrase, ...]:
    out = []
    if cfg.is_mla:
        out.append(phrase("model-attention/mla", rank=cfg.kv_lora_rank))
    if cfg.count(SLIDING):
        out.append(phrase("model-attention/sliding", window=cfg.sliding_window))
    if cfg.is_encoder_decoder:
        out.append(phrase("model-attention/encoder-decoder"))
    return tuple(out)


def _fit(
    m: Matrix,
    node: Node,
    request: Request,
    cand: Candidate,
    memory: GpuMemory | None,
    reasons: list[Reason],
    warnings: list[Advisory],
) -> None:
    mr = request.model
    assert mr is not None
    if memory is None:
        warnings.append(Advisory.said("model-fit-unchecked", severity="warning"))
        return
    s = size_for(m, node, request, cand.vllm, memory)
    assert s is not None
    gpus = node_gpus(node)
    if s.fits is not None:
        return
    gib = round(memory.bytes / 2**30, 1)
    gmu = release_gmu(m, request, cand.vllm)
    if s.capped is not None and mr.max_model_len is None:
        warnings.append(
            Advisory.said(
                "model-context-capped",
                context=s.context,
                gpus=gpus,
                largest=s.capped.largest_max_model_len,
                tp=s.capped.tensor_parallel_size,
                min_gpus=s.min_gpus or "more than 64",
                severity="warning",
            )
        )
        return
    key: Literal["model-context-too-long", "model-does-not-fit"] = (
        "model-context-too-long" if s.capped is not None else "model-does-not-fit"
    )
    weights = max((f.weights_bytes_per_gpu for f in s.tried), default=0)
    w = finding(
        key,
        context=s.context,
        gpus=gpus,
        gib=gib,
        largest=s.capped.largest_max_model_len if s.capped is not None else 0,
        weights=round(weights / 2**30, 1),
        min_gpus=s.min_gpus or "more than 64",
    )
    fix = None
    hint = w.hint
    if memory.unified and s.tried:
        # An APU's pool is system RAM the kernel caps (ttm.pages_limit), not a GPU to add.
        one = s.tried[0]
        total = int((one.weights_bytes_per_gpu + one.allowance_bytes + one.seq_bytes) / gmu)
        need = -(-total // 2**30)  # whole GiB, rounded up
        hint = phrase("model-does-not-fit/gtt", gib=need, pages=need * 2**30 // 4096)
        fix = Fix(
            kind="host",
            text=phrase("model-does-not-fit/gtt-fix", gib=need),
            host=True,
            change=HostChange(kind="gtt", value=str(need)),
        )
    elif s.min_gpus is not None and s.min_gpus > gpus:
        change = HostChange(kind="gpus", value=str(s.min_gpus))
        fix = Fix(kind="host", text=w.fix, host=True, change=change)
    reasons.append(
        Reason(
            code=key,
            message=w.message,
            facts=(Fact(text=w.facts[0], source=memory.cited),),
            hint=hint,
            fix=fix,
            release=cand.vllm,
        )
    )


# --- the decision's answer ---------------------------------------------------------------------

# The contexts a fit table tries besides the model's own and the one asked for.
CONTEXTS = (4096, 8192, 16384, 32768, 65536, 131072)


def answer(m: Matrix, d: Decision) -> ModelAnswer | None:
    """The ``model`` section of a decision: judged at the planned release (else the first
    rejected path's), sized on the node's GPUs at that release's memory default."""
    request = d.request
    mr = request.model
    if mr is None:
        return None
    judged = d.plan or (d.rejected[0] if d.rejected else None)
    vllm = judged.candidate.vllm if judged is not None else None
    cfg = mr.config
    arch = cfg.architectures[0] if cfg.architectures else None
    support = m.model_support(vllm) if vllm is not None else None
    listed = support.architectures if support is not None else None
    supported = None if listed is None or arch is None else arch in listed
    memory = gpu_memory(m, d.node)
    kv = (request.kv_cache_dtype or "auto").lower()
    chosen: Fit | None = None
    table: tuple[Fit, ...] = ()
    min_gpus = None
    if memory is not None and vllm is not None:
        s = size_for(m, d.node, request, vllm, memory)
        assert s is not None
        chosen, min_gpus = s.fits or s.capped, s.min_gpus
        gmu = release_gmu(m, request, vllm)
        contexts = sorted({*CONTEXTS, s.context} - {0})
        gpus = node_gpus(d.node)
        table = tuple(
            fit(
                cfg,
                gpu_bytes=memory.bytes,
                tp=t,
                max_model_len=c,
                gpu_memory_utilization=gmu,
                kv_dtype=kv,
            )
            for t in valid_tps(cfg, max(1, gpus))
            for c in contexts
        )
    notes = []
    if cfg.remote_code:
        notes.append(phrase("model-note/remote-code"))
    if memory is not None and memory.unified and chosen is not None:
        # What the GTT pool must hold for the fit (weights, allowance and one sequence's KV
        # cache, over the utilization), in 4 KiB pages: the ttm.pages_limit the fit needs.
        need = chosen.weights_bytes_per_gpu + chosen.allowance_bytes + chosen.seq_bytes
        total = int(need / chosen.gpu_memory_utilization)
        notes.append(
            phrase(
                "model-note/unified",
                gib=round(total / 2**30, 1),
                pages=-(-total // 4096),
                have=round(memory.bytes / 2**30, 1),
            )
        )
    return ModelAnswer(
        spec=mr.spec,
        architecture=arch,
        architecture_supported=supported,
        first_release=m.first_release_with(arch) if arch else None,
        release=vllm,
        quantization=request.quantization,
        kv_cache_dtype=kv,
        attention=_need_words(cfg),
        memory=memory,
        fit=chosen,
        table=table,
        min_gpus=min_gpus,
        notes=tuple(notes),
    )
