"""Memory fit of a model on a GPU under vLLM: pure arithmetic over a ``ModelConfig``, no I/O.

The formulas follow vLLM's own code (read from the sdists on PyPI, vllm-0.33.0.tar.gz sha256
f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112 and vllm-0.11.0.tar.gz sha256
f435a64c24e9c4178d657a76f8edd8548ddc444012f7d06a9f79ac3a6392bfae):

- ``vllm/v1/kv_cache_interface.py`` ``AttentionSpec.page_size_bytes``: a block of a layer holds
  ``num_kv_heads x (head_size + head_size_v) x dtype`` bytes per token (``2 x`` heads x head size
  for ordinary attention); ``MLAAttentionSpec``: one latent of ``kv_lora_rank + qk_rope_head_dim``
  per token (``head_size_v = 0``; 0.11.0: no factor 2), 656 bytes for ``fp8_ds_mla``;
  ``SlidingWindowSpec.max_memory_usage_bytes``: a sliding layer holds at most
  ``window - 1 + max_num_batched_tokens`` tokens (+1 block); ``ChunkedLocalAttentionSpec``
  likewise at most its chunk; ``MambaSpec``: a fixed state per sequence.
- ``vllm/config/model.py`` ``get_num_kv_heads``: ``max(1, total_kv_heads // tp)`` (replicated
  when tp > KV heads); under MLA it is 1 on every rank (the latent is not split by TP).
- ``vllm/model_executor/layers/mamba/mamba_utils.py``: the state shapes (``mamba1_state_shape``,
  ``mamba2_state_shape``, ``gated_delta_net_state_shape``), split by TP.
- ``vllm/v1/core/kv_cache_utils.py``: what "GPU KV cache size: N tokens" means. 0.11.0:
  ``num_blocks // groups x block_size``, i.e. available memory over every attention layer's bytes
  per token (``kv_bytes_per_token`` here). 0.33.0: ``get_kv_cache_capacity`` = max concurrency
  at max_model_len x max_model_len, which for sliding-window or hybrid models counts the capped
  layers at their cap (``logged_kv_tokens`` models both).
- ``vllm/v1/worker/gpu_worker.py`` ``determine_available_memory``: KV budget = total x
  ``gpu_memory_utilization`` - weights - peak activations of a ``max_num_batched_tokens`` forward
  pass - non-torch memory (HIP/CUDA runtime, RCCL/NCCL buffers) - the CUDA/HIP graph estimate.

The allowance for those last three is data (``ALLOWANCE``), with its sources; docs/model-fit.md
says every formula and assumption.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final, Literal

import msgspec

from resolver.data.hfmodel import (
    CHUNKED,
    DTYPES,
    FULL,
    LINEAR,
    MAMBA,
    MAX_CONTEXT,
    MLP,
    SLIDING,
    ModelConfig,
)
from resolver.solve.finding import Phrase, phrase

GiB: Final = 1024**3
BLOCK_SIZE: Final = 16  # vLLM's default KV block (CacheConfig.block_size) on CUDA and ROCm
FP8_DS_MLA_BYTES: Final = 656  # MLAAttentionSpec.page_size_bytes for "fp8_ds_mla", per token

KvDtype = Literal["auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla"]
KV_DTYPE_BYTES: Final[dict[str, int]] = {
    "bfloat16": 2,
    "float16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
}


class Allowance(msgspec.Struct, frozen=True, kw_only=True):
    """What vLLM's profiling takes from the budget besides weights (per GPU)."""

    runtime_bytes: int  # non-torch memory at TP=1 (HIP/CUDA context, allocator slack)
    runtime_per_extra_rank_bytes: int  # RCCL/NCCL buffers once there is a TP group
    graph_bytes: int  # CUDA/HIP graph pool (captured by default; 0: not taken from KV)
    max_num_batched_tokens: int | None = None  # None: vLLM's default for the GPU's memory
    max_num_seqs: int | None = None
    sources: tuple[str, ...] = ()


# One place for the allowance (docs/model-fit.md "Allowance" says the same).
ALLOWANCE: Final = Allowance(
    runtime_bytes=GiB // 2,
    runtime_per_extra_rank_bytes=GiB // 4,
    graph_bytes=GiB // 2,
    sources=(
        (
            "vllm 0.33.0 vllm/v1/worker/gpu_worker.py determine_available_memory: KV = "
            "requested memory - weights - activation peak - non-torch - cudagraph estimate"
        ),
        (
            "vllm 0.33.0 vllm/engine/arg_utils.py _set_default_max_num_seqs_and_batched_tokens"
            "_args: the OpenAI server's max_num_batched_tokens/max_num_seqs by device memory"
        ),
        (
            "non_torch_memory=0.35GiB on one RTX 3090 "
            "(https://github.com/vllm-project/vllm/issues/10517, reports.toml)"
        ),
        (
            "Estimated CUDA graph memory: 0.52 GiB total for Qwen3-8B "
            "(https://github.com/LMCache/LMCache/issues/3430, reports.toml)"
        ),
        "runtime_per_extra_rank_bytes: inferred (RCCL/NCCL buffers), no measurement read",
    ),
)


def batch_defaults(gpu_bytes: int) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) of ``vllm serve`` for a GPU of ``gpu_bytes``
    (vllm 0.33.0 arg_utils: >= 160 GiB 16384/1024, >= 70 GiB 8192/1024, else 2048/256; the
    A100 exception there is left out)."""
    if gpu_bytes >= 160 * GiB:
        return 16384, 1024
    if gpu_bytes >= 70 * GiB:
        return 8192, 1024
    return 2048, 256


class Weights(msgspec.Struct, frozen=True, kw_only=True):
    bytes: int  # the whole model as vLLM holds it
    source: Literal["index total_size", "config parameters"]
    params: int | None  # when estimated from the config
    # how the size was found, as a finding (worded by resolver.explain.words)
    note: Phrase


class Fit(msgspec.Struct, frozen=True, kw_only=True):
    tensor_parallel_size: int
    pipeline_parallel_size: int
    gpus: int
    gpu_bytes: int
    gpu_memory_utilization: float
    kv_cache_dtype: str
    weights_bytes_per_gpu: int
    weights_source: str
    allowance_bytes: int
    kv_budget_bytes: int  # may be negative: the weights alone do not fit
    kv_cache_bytes_per_token: int  # per GPU, every attention layer counted in full
    max_model_len: int  # the context asked for (or the model's default)
    seq_bytes: int  # one sequence of max_model_len, per GPU (windows and states applied)
    kv_tokens: int  # budget / kv_cache_bytes_per_token
    largest_max_model_len: int  # the longest one sequence that fits (0: none)
    fits: bool  # one sequence of max_model_len fits
    concurrency: float  # sequences of max_model_len at once


def dtype_bytes(name: str | None) -> int:
    """Bytes of the dtype vLLM runs an unquantized model in: the config's, except float32 (and
    no dtype), which vLLM's ``dtype=auto`` serves in 16 bits (vllm/config/model.py
    ``_get_and_verify_dtype``)."""
    size = DTYPES.get((name or "").lower(), 4)
    return 2 if size == 4 else size


def kv_dtype_bytes(cfg: ModelConfig, kv_dtype: str) -> int:
    if kv_dtype == "auto":
        return dtype_bytes(cfg.dtype)
    if kv_dtype not in KV_DTYPE_BYTES and kv_dtype != "fp8_ds_mla":
        raise ValueError(f"unknown kv cache dtype {kv_dtype!r}")
    return KV_DTYPE_BYTES.get(kv_dtype, 1)


# --- weights ------------------------------------------------------------------------------


def param_count(cfg: ModelConfig) -> tuple[int, int]:
    """(parameters, of them in quantizable linear layers) from the config: embeddings, the LM
    head unless tied, attention (GQA or MLA), MLP or experts, linear-attention and Mamba mixers.
    Norms and biases are left out (< 0.1%); a vision/audio tower is not counted."""
    h, heads, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.head_dim
    embed = cfg.vocab_size * h * (1 if cfg.tie_word_embeddings else 2)
    if cfg.is_mla:
        rope = cfg.qk_rope_head_dim or 0
        nope = cfg.qk_nope_head_dim or hd
        v = cfg.v_head_dim or nope
        q = (
            (h * cfg.q_lora_rank + cfg.q_lora_rank * heads * (nope + rope))
            if cfg.q_lora_rank
            else (h * heads * (nope + rope))
        )
        kv_lora = cfg.kv_lora_rank or 0
        attn = q + h * (kv_lora + rope) + kv_lora * heads * (nope + v) + heads * v * h
    else:
        attn = h * hd * (2 * heads + 2 * cfg.num_key_value_heads)
    inter = cfg.intermediate_size or 4 * h
    moe_layers = set(cfg.moe_layers)
    # Nemotron-H's layers are each one thing (mixer, attention or MLP); elsewhere every layer
    # has its mixer and an MLP (or experts).
    separate_mlp = MLP in cfg.layer_types
    linear = 0
    for i, kind in enumerate(cfg.layer_types):
        if kind in (FULL, SLIDING, CHUNKED):
            linear += attn
        elif kind in (LINEAR, MAMBA) and cfg.hybrid is not None:
            linear += _mixer_params(cfg)
        if separate_mlp and kind != MLP:
            continue
        if i in moe_layers:
            expert = cfg.moe_intermediate_size or inter
            shared = cfg.shared_expert_intermediate_size or expert * cfg.shared_experts
            linear += 3 * h * expert * (cfg.num_experts or 0) + 3 * h * shared
            linear += h * (cfg.num_experts or 0)
        else:
            linear += (2 if separate_mlp else 3) * h * inter  # Nemotron-H: squared-ReLU up/down
    return embed + linear, linear


def _mixer_params(cfg: ModelConfig) -> int:
    s, h = cfg.hybrid, cfg.hidden_size
    assert s is not None
    if s.kind == "gated_delta_net":
        key = s.num_k_heads * s.head_k_dim
        value = s.num_v_heads * s.head_v_dim
        return h * (2 * key + 2 * value + 2 * s.num_v_heads) + value * h
    inner = s.intermediate_size
    return h * (2 * inner + 2 * max(s.n_groups, 1) * s.state_size + s.num_heads) + inner * h


def quantized_bits(cfg: ModelConfig) -> float | None:
    """Bits per quantized weight with the scales the method stores (None: unquantized)."""
    q = cfg.quantization
    if q is None or q.bits is None:
        return None
    if q.fmt == "mxfp4":
        return 4 + 8 / 32  # E8M0 scale per 32 (OCP MX spec)
    if q.fmt == "nvfp4":
        return 4 + 8 / 16  # FP8 scale per 16
    if q.group_size:
        return q.bits + (16 + q.bits) / q.group_size  # fp16 scale and packed zero per group
    return float(q.bits)


def weights_bytes(cfg: ModelConfig) -> Weights:
    """The model's weights as vLLM loads them: the index's total_size when known, else the
    config's parameters x bytes."""
    served = dtype_bytes(cfg.dtype)
    if cfg.total_size is not None:
        stored = DTYPES.get((cfg.dtype or "").lower(), 2)
        if cfg.quantization is None and stored == 4:
            return Weights(
                bytes=cfg.total_size // 2,
                source="index total_size",
                params=None,
                note=phrase("fit/weights-f32-index"),
            )
        return Weights(
            bytes=cfg.total_size,
            source="index total_size",
            params=None,
            note=phrase("fit/weights-index"),
        )
    params, linear = param_count(cfg)
    bits = quantized_bits(cfg)
    if bits is None:
        size = params * served
        note = phrase("fit/weights-params", params=params, served=served)
    else:
        q = cfg.quantization
        assert q is not None
        # gpt-oss: only the experts are MXFP4
        quantizable = _expert_params(cfg) if q.fmt == "mxfp4" else linear
        size = int(quantizable * bits / 8 + (params - quantizable) * served)
        note = phrase(
            "fit/weights-quantized",
            quantized=quantizable,
            bits=f"{bits:g}",
            rest=params - quantizable,
            served=served,
        )
    return Weights(bytes=int(size), source="config parameters", params=params, note=note)


def _expert_params(cfg: ModelConfig) -> int:
    expert = cfg.moe_intermediate_size or cfg.intermediate_size or 0
    return len(cfg.moe_layers) * 3 * cfg.hidden_size * expert * (cfg.num_experts or 0)


# --- KV cache -----------------------------------------------------------------------------


def kv_heads_per_gpu(cfg: ModelConfig, tp: int) -> int:
    """vllm/config/model.py get_num_kv_heads: 1 under MLA, else max(1, kv_heads // tp)."""
    if cfg.is_mla:
        return 1
    return max(1, cfg.num_key_value_heads // tp)


def layer_kv_bytes_per_token(cfg: ModelConfig, kv_dtype: str, tp: int) -> int:
    """One attention layer's bytes per token on one GPU."""
    if cfg.is_mla:
        if kv_dtype == "fp8_ds_mla":
            return FP8_DS_MLA_BYTES
        return ((cfg.kv_lora_rank or 0) + (cfg.qk_rope_head_dim or 0)) * kv_dtype_bytes(
            cfg, kv_dtype
        )
    return 2 * kv_heads_per_gpu(cfg, tp) * cfg.head_dim * kv_dtype_bytes(cfg, kv_dtype)


def _share(count: int, layers: int, pp: int) -> int:
    """The most layers of a kind one pipeline stage holds (layers split evenly)."""
    return count if pp == 1 else math.ceil(count * math.ceil(layers / pp) / layers)


def _attn_counts(cfg: ModelConfig, pp: int) -> tuple[int, int, int]:
    layers = cfg.num_hidden_layers
    return (
        _share(cfg.count(FULL), layers, pp),
        _share(cfg.count(SLIDING), layers, pp),
        _share(cfg.count(CHUNKED), layers, pp),
    )


def kv_bytes_per_token(cfg: ModelConfig, kv_dtype: str = "auto", tp: int = 1, pp: int = 1) -> int:
    """Per GPU, every attention layer (full, sliding, chunked) counted as if it kept every token:
    what vLLM <= 0.11 divides the available memory by for "GPU KV cache size"."""
    full, sliding, chunked = _attn_counts(cfg, pp)
    return (full + sliding + chunked) * layer_kv_bytes_per_token(cfg, kv_dtype, tp)


def state_bytes_per_seq(cfg: ModelConfig, tp: int = 1, pp: int = 1) -> int:
    """The recurrent state one sequence holds on one GPU (linear-attention / Mamba layers);
    conv state in the model dtype, SSM/temporal state in the model dtype too (mamba_ssm_cache_dtype
    'auto', mamba_utils._mamba_state_dtype)."""
    s = cfg.hybrid
    if s is None:
        return 0
    b = dtype_bytes(cfg.dtype)
    layers = _share(cfg.count(LINEAR) + cfg.count(MAMBA), cfg.num_hidden_layers, pp)
    if s.kind == "gated_delta_net":
        conv_dim = s.head_k_dim * s.num_k_heads * 2 + s.head_v_dim * s.num_v_heads
        per = (conv_dim // tp) * (s.conv_kernel - 1) + (
            s.num_v_heads // tp
        ) * s.head_v_dim * s.head_k_dim
    elif s.kind == "mamba2":
        groups = s.n_groups + (tp - s.n_groups % tp) % tp if s.n_groups % tp else s.n_groups
        conv_dim = s.intermediate_size + 2 * groups * s.state_size
        per = (conv_dim // tp) * (s.conv_kernel - 1) + (
            s.num_heads // tp
        ) * s.head_dim * s.state_size
    else:
        per = (s.intermediate_size // tp) * (s.conv_kernel - 1 + s.state_size)
    return layers * per * b


def seq_bytes(
    cfg: ModelConfig,
    context: int,
    *,
    kv_dtype: str = "auto",
    tp: int = 1,
    pp: int = 1,
    batched_tokens: int = 2048,
) -> int:
    """One sequence of ``context`` tokens on one GPU: full layers keep every token, sliding ones
    ``window - 1 + batched_tokens`` (SlidingWindowSpec), chunked ones their chunk, rounded up to
    whole blocks; plus the recurrent state."""
    full, sliding, chunked = _attn_counts(cfg, pp)
    per_layer = layer_kv_bytes_per_token(cfg, kv_dtype, tp)
    total = full * _blocks(context) * BLOCK_SIZE * per_layer
    if sliding:
        held = min(context, (cfg.sliding_window or context) - 1 + batched_tokens)
        total += sliding * (_blocks(held) + (held < context)) * BLOCK_SIZE * per_layer
    if chunked:
        held = min(context, (cfg.attention_chunk_size or context) + batched_tokens)
        total += chunked * _blocks(held) * BLOCK_SIZE * per_layer
    return total + state_bytes_per_seq(cfg, tp, pp)


def _blocks(tokens: int) -> int:
    return -(-tokens // BLOCK_SIZE)


def logged_kv_tokens(
    cfg: ModelConfig,
    available_bytes: int,
    *,
    max_model_len: int,
    kv_dtype: str = "auto",
    tp: int = 1,
    pp: int = 1,
    hybrid_aware_log: bool = False,
) -> int:
    """The "GPU KV cache size: N tokens" vLLM prints for ``available_bytes`` of KV memory per
    GPU. ``hybrid_aware_log``: the newer count (0.33.0 ``get_kv_cache_capacity``: concurrency at
    max_model_len x max_model_len); otherwise 0.11.0's (every attention layer in full). The two
    agree for a model whose layers all keep every token."""
    if hybrid_aware_log or cfg.hybrid is not None:
        per_seq = seq_bytes(cfg, max_model_len, kv_dtype=kv_dtype, tp=tp, pp=pp)
        return int(available_bytes / per_seq * max_model_len) if per_seq else 0
    per_token = kv_bytes_per_token(cfg, kv_dtype, tp, pp)
    blocks = available_bytes // (per_token * BLOCK_SIZE) if per_token else 0
    return int(blocks * BLOCK_SIZE)


# --- fit ----------------------------------------------------------------------------------


def activation_bytes(cfg: ModelConfig, tp: int, *, batched_tokens: int, max_num_seqs: int) -> int:
    """The profiling pass's activation peak: ``batched_tokens`` tokens through one layer
    (hidden states, the MLP's gate/up output and attention's q/k/v split by TP), in 16 bits, plus
    the sampler's float32 logits and probabilities for ``max_num_seqs`` (split by TP over the
    vocabulary)."""
    if cfg.is_moe:
        inter = (cfg.moe_intermediate_size or cfg.intermediate_size or 0) * (
            cfg.num_experts_per_tok or 1
        )
    else:
        inter = cfg.intermediate_size or 4 * cfg.hidden_size
    qkv = (cfg.num_attention_heads + 2 * cfg.num_key_value_heads) * cfg.head_dim
    per_token = 4 * cfg.hidden_size + (2 * inter + qkv) // tp
    return batched_tokens * per_token * 2 + max_num_seqs * cfg.vocab_size * 4 * 2 // tp


def allowance_bytes(
    cfg: ModelConfig, tp: int, gpu_bytes: int, allowance: Allowance = ALLOWANCE
) -> int:
    tokens, seqs = batch_defaults(gpu_bytes)
    return (
        allowance.runtime_bytes
        + allowance.runtime_per_extra_rank_bytes * (tp > 1)
        + allowance.graph_bytes
        + activation_bytes(
            cfg,
            tp,
            batched_tokens=allowance.max_num_batched_tokens or tokens,
            max_num_seqs=allowance.max_num_seqs or seqs,
        )
    )


def fit(
    cfg: ModelConfig,
    *,
    gpu_bytes: int,
    tp: int = 1,
    pp: int = 1,
    max_model_len: int | None = None,
    gpu_memory_utilization: float = 0.9,
    kv_dtype: str = "auto",
    allowance: Allowance = ALLOWANCE,
    weights: Weights | None = None,
) -> Fit:
    """Whether one sequence of ``max_model_len`` (default: the model's
    ``max_position_embeddings``) fits on ``tp x pp`` GPUs of ``gpu_bytes`` each."""
    if tp < 1 or pp < 1 or gpu_bytes < 1 or not 0 < gpu_memory_utilization <= 1:
        raise ValueError("tp, pp and gpu_bytes must be positive, utilization in (0, 1]")
    w = weights or weights_bytes(cfg)
    context = max_model_len or cfg.max_position_embeddings or 4096
    w_gpu = -(-w.bytes // (tp * pp))
    extra = allowance_bytes(cfg, tp, gpu_bytes, allowance)
    budget = int(gpu_bytes * gpu_memory_utilization) - w_gpu - extra
    per_token = kv_bytes_per_token(cfg, kv_dtype, tp, pp)
    batched = allowance.max_num_batched_tokens or batch_defaults(gpu_bytes)[0]
    one = seq_bytes(cfg, context, kv_dtype=kv_dtype, tp=tp, pp=pp, batched_tokens=batched)
    ceiling = max(context, cfg.max_position_embeddings or context)
    largest = largest_context(
        cfg, budget, ceiling=ceiling, kv_dtype=kv_dtype, tp=tp, pp=pp, batched_tokens=batched
    )
    return Fit(
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        gpus=tp * pp,
        gpu_bytes=gpu_bytes,
        gpu_memory_utilization=gpu_memory_utilization,
        kv_cache_dtype=kv_dtype,
        weights_bytes_per_gpu=w_gpu,
        weights_source=w.source,
        allowance_bytes=extra,
        kv_budget_bytes=budget,
        kv_cache_bytes_per_token=per_token,
        max_model_len=context,
        seq_bytes=one,
        kv_tokens=max(0, budget) // per_token if per_token else 0,
        largest_max_model_len=largest,
        fits=budget > 0 and one <= budget,
        concurrency=round(budget / one, 2) if budget > 0 and one else 0.0,
    )


def largest_context(
    cfg: ModelConfig,
    budget: int,
    *,
    ceiling: int = MAX_CONTEXT,
    kv_dtype: str = "auto",
    tp: int = 1,
    pp: int = 1,
    batched_tokens: int = 2048,
) -> int:
    """The largest context (a multiple of the block size, at most ``ceiling``) one sequence of
    which fits in ``budget``: seq_bytes grows with the context, so bisect."""
    if (
        budget <= 0
        or seq_bytes(
            cfg, BLOCK_SIZE, kv_dtype=kv_dtype, tp=tp, pp=pp, batched_tokens=batched_tokens
        )
        > budget
    ):
        return 0
    if (
        seq_bytes(cfg, ceiling, kv_dtype=kv_dtype, tp=tp, pp=pp, batched_tokens=batched_tokens)
        <= budget
    ):
        return ceiling
    lo, hi = 1, ceiling // BLOCK_SIZE  # in blocks: lo fits, hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if (
            seq_bytes(
                cfg,
                mid * BLOCK_SIZE,
                kv_dtype=kv_dtype,
                tp=tp,
                pp=pp,
                batched_tokens=batched_tokens,
            )
            <= budget
        ):
            lo = mid
        else:
            hi = mid
    return lo * BLOCK_SIZE


def valid_tp(cfg: ModelConfig, tp: int) -> bool:
    """vLLM's rule: TP divides the attention heads, and the KV heads divide by it or it by them
    (vllm/config/parallel.py verify / ModelConfig.verify_with_parallel_config)."""
    kv = cfg.num_key_value_heads
    return cfg.num_attention_heads % tp == 0 and (kv % tp == 0 or tp % kv == 0)


def valid_tps(cfg: ModelConfig, most: int = 64) -> tuple[int, ...]:
    return tuple(tp for tp in range(1, most + 1) if valid_tp(cfg, tp))


def fit_table(
    cfg: ModelConfig,
    *,
    gpu_bytes: int,
    tps: Iterable[int] | None = None,
    contexts: Sequence[int] = (),
    gpu_memory_utilization: float = 0.9,
    kv_dtype: str = "auto",
    allowance: Allowance = ALLOWANCE,
) -> tuple[Fit, ...]:
    """``fit`` for every valid TP (default: 1-64) x every context (default: the model's)."""
    w = weights_bytes(cfg)
    sizes = [tp for tp in (tps if tps is not None else range(1, 65)) if valid_tp(cfg, tp)]
    return tuple(
        fit(
            cfg,
            gpu_bytes=gpu_bytes,
            tp=tp,
            max_model_len=ctx,
            gpu_memory_utilization=gpu_memory_utilization,
            kv_dtype=kv_dtype,
            allowance=allowance,
            weights=w,
        )
        for tp in sizes
        for ctx in (contexts or (None,))
    )


def smallest_tp(
    cfg: ModelConfig,
    *,
    gpu_bytes: int,
    max_model_len: int | None = None,
    most: int = 64,
    gpu_memory_utilization: float = 0.9,
    kv_dtype: str = "auto",
    allowance: Allowance = ALLOWANCE,
) -> Fit | None:
    """The fit at the smallest valid TP (at most ``most`` GPUs) where the context fits."""
    w = weights_bytes(cfg)
    for tp in valid_tps(cfg, most):
        f = fit(
            cfg,
            gpu_bytes=gpu_bytes,
            tp=tp,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            kv_dtype=kv_dtype,
            allowance=allowance,
            weights=w,
        )
        if f.fits:
            return f
    return None
