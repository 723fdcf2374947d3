"""Read a Hugging Face model's ``config.json`` (and its safetensors index's ``total_size``) into a
typed, frozen ``ModelConfig``: what the memory fit and the release checks need, nothing more.

``spec`` is a ``config.json`` path, a model directory, or a Hugging Face id (``org/name``) looked
up in the local Hugging Face cache (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``~/.cache/huggingface/hub``: ``models--org--name/refs/main`` names the snapshot).

Safety: files are read through ``util.bounded`` (regular files only, a size cap, a nesting cap);
a symlink loop or a link out of the cache entry is refused; everything is JSON, so a model that
asks for ``trust_remote_code`` (``auto_map``) is read as data and ``remote_code`` says so. Nothing
is imported or executed. Every number has a bound; a config past one is a ``ModelError`` naming
the field (exit 2).

Field names follow transformers' configs as vLLM reads them (``vllm/config/model.py``
``get_head_size``, ``get_total_num_kv_heads``; ``vllm/transformers_utils/config.py`` for
``text_config``), with the aliases older architectures use (GPT-2's ``n_layer``, ChatGLM's
``multi_query_group_num``, Falcon's ``n_head_kv``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Final

import msgspec

from resolver.util import bounded
from resolver.util.errors import ModelError

CONFIG_LIMIT: Final = 4 * bounded.MiB  # real configs are < 100 KiB
# An index with its weight_map: DeepSeek-V3's is ~9 MB; a bigger one is not a real index.
INDEX_LIMIT: Final = 32 * bounded.MiB
REF_LIMIT: Final = 1024

# Hugging Face's own repo-id rule (huggingface_hub validate_repo_id): no "--" or "..", and here
# always namespaced (an id without an org is ambiguous with a local directory).
_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_REV_RE: Final = re.compile(r"[0-9a-f]{40}")
_WORD_RE: Final = re.compile(r"[A-Za-z0-9_.:+/-]{1,128}")

MAX_LAYERS: Final = 4096
MAX_HEADS: Final = 65536
MAX_HIDDEN: Final = 1_000_000
MAX_VOCAB: Final = 10_000_000
MAX_CONTEXT: Final = 1 << 27  # 134M tokens: past any published context length
MAX_EXPERTS: Final = 65536
MAX_TOTAL_SIZE: Final = 1 << 50  # 1 PiB of weights
MAX_LIST: Final = 4096  # list fields (layer_types, excluded modules)

# Normalised per-layer kinds (``ModelConfig.layer_types``).
FULL: Final = "full_attention"
SLIDING: Final = "sliding_attention"
CHUNKED: Final = "chunked_attention"
LINEAR: Final = "linear_attention"
MAMBA: Final = "mamba"
MLP: Final = "mlp"  # Nemotron-H's MLP-only layers: no attention, no state
_LAYER_KIND_ALIASES: Final = {
    "full_attention": FULL,
    "attention": FULL,
    "global": FULL,
    "sliding_attention": SLIDING,
    "sliding_window": SLIDING,
    "local": SLIDING,
    "chunked_attention": CHUNKED,
    "linear_attention": LINEAR,
    "mamba": MAMBA,
    "mamba2": MAMBA,
    "mlp": MLP,
}

DTYPES: Final = {
    "float32": 4,
    "float": 4,
    "fp32": 4,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "half": 2,
    "fp16": 2,
    "float8_e4m3fn": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2": 1,
}


# A config.json omits what equals its config class's default; the defaults the fit needs, per
# model_type, with the source they were read from (add a model_type here with its source).
CLASS_DEFAULTS: Final[dict[str, dict[str, Any]]] = {
    # transformers src/transformers/models/gemma3/configuration_gemma3.py, commit
    # 008f5c8c29be84d4721dc6d1e0fcd72300580be4 (Gemma3TextConfig.__init__ defaults)
    "gemma3_text": {
        "vocab_size": 262_208,
        "max_position_embeddings": 131_072,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
        "head_dim": 256,
        "num_key_value_heads": 4,
        "tie_word_embeddings": True,
    },
}


class Quantization(msgspec.Struct, frozen=True, kw_only=True):
    """What ``quantization_config`` says, normalised. ``method`` is its ``quant_method``
    (``modelopt`` reports its ``quant_algo`` in ``fmt``)."""

    method: str
    fmt: str | None = None  # "e4m3", "e5m2", "mxfp4", "nvfp4", "int4", ...
    bits: int | None = None  # weight bits
    group_size: int | None = None
    block_size: tuple[int, ...] | None = None  # fp8 weight_block_size
    schemes: tuple[str, ...] = ()  # compressed-tensors: "W8A8-FP8", "W4A16", ...
    excluded: tuple[str, ...] = ()  # modules left unquantized (ignore / modules_to_not_convert)
    kv_cache: str | None = None  # a KV-cache scheme the checkpoint states


class HybridState(msgspec.Struct, frozen=True, kw_only=True):
    """The recurrent layers' sizes as the config names them (per model, not per GPU)."""

    kind: str  # "gated_delta_net" | "mamba1" | "mamba2"
    conv_kernel: int
    # gated delta net (Qwen3-Next): linear_* fields
    num_k_heads: int = 0
    num_v_heads: int = 0
    head_k_dim: int = 0
    head_v_dim: int = 0
    # mamba
    intermediate_size: int = 0
    state_size: int = 0
    n_groups: int = 0
    num_heads: int = 0
    head_dim: int = 0


class ModelConfig(msgspec.Struct, frozen=True, kw_only=True):
    source: str  # where it was read (a path)
    architectures: tuple[str, ...]
    model_type: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int | None
    max_position_embeddings: int | None
    dtype: str | None  # torch_dtype / dtype as written
    tie_word_embeddings: bool
    sliding_window: int | None
    attention_chunk_size: int | None  # Llama 4 chunked local attention
    layer_types: tuple[str, ...]  # one normalised kind per layer (FULL, SLIDING, ...)
    # MLA (DeepSeek V2/V3, Kimi K2)
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    # MoE
    num_experts: int | None = None
    num_experts_per_tok: int | None = None
    moe_intermediate_size: int | None = None
    shared_experts: int = 0
    shared_expert_intermediate_size: int | None = None
    moe_layers: tuple[int, ...] = ()  # layer indices with experts (empty: dense)
    hybrid: HybridState | None = None
    is_encoder_decoder: bool = False
    multimodal: tuple[str, ...] = ()  # "vision", "audio"
    quantization: Quantization | None = None
    total_size: int | None = None  # model.safetensors.index.json metadata.total_size
    remote_code: bool = False

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def is_moe(self) -> bool:
        return self.num_experts is not None and self.num_experts > 1

    def count(self, kind: str) -> int:
        return self.layer_types.count(kind)


# --- finding the files ------------------------------------------------------------------------


def hub_cache(hf_home: Path | None = None) -> Path:
    """The hub cache directory, as huggingface_hub picks it."""
    if hf_home is not None:
        return hf_home / "hub"
    if cache := os.environ.get("HF_HUB_CACHE"):
        return Path(cache)
    if home := os.environ.get("HF_HOME"):
        return Path(home) / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def is_model_id(spec: str) -> bool:
    return bool(_ID_RE.fullmatch(spec)) and ".." not in spec and "--" not in spec


def cache_repo_dir(model_id: str, hf_home: Path | None = None) -> Path:
    """``models--org--name`` in the hub cache (the id must pass ``is_model_id``)."""
    org, name = model_id.split("/")
    return hub_cache(hf_home) / f"models--{org}--{name}"


def _hint_fetch(model_id: str) -> str:
    return (
        f"download its config first (huggingface-cli download {model_id} config.json), "
        "pass --online, or give the model directory or its config.json path"
    )


def _snapshot_dir(model_id: str, hf_home: Path | None) -> Path:
    repo = cache_repo_dir(model_id, hf_home)
    try:
        rev = bounded.read_text(repo / "refs" / "main", REF_LIMIT).strip()
    except FileNotFoundError:
        raise ModelError(
            f"model {model_id} is not in the Hugging Face cache ({repo})",
            hint=_hint_fetch(model_id),
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(
            f"model {model_id}: cannot read refs/main in the Hugging Face cache ({_why(exc)})",
            hint=_hint_fetch(model_id),
        ) from None
    if not _REV_RE.fullmatch(rev):
        raise ModelError(
            f"model {model_id}: refs/main in the Hugging Face cache is not a commit hash",
            hint="delete that cache entry and download it again",
        )
    return repo / "snapshots" / rev


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(exc)


def _inside(path: Path, root: Path, what: str) -> Path:
    """``path`` with its links resolved, refused when it leaves ``root`` (a cache entry's links
    point into its own ``blobs/``) or loops."""
    try:
        real = path.resolve(strict=True)
        base = root.resolve(strict=True)
    except FileNotFoundError:
        raise
    except (OSError, RuntimeError) as exc:  # ELOOP; RuntimeError: a loop on older Pythons
        raise ModelError(
            f"{what}: cannot resolve {path} ({_why(exc)})",
            hint="the cache entry has a symlink loop; delete it and download it again",
        ) from None
    if not real.is_relative_to(base):
        raise ModelError(
            f"{what}: {path} links outside its cache entry",
            hint="delete that cache entry and download it again",
        )
    return real


def locate(spec: str, *, hf_home: Path | None = None) -> tuple[Path, Path, Path | None]:
    """(config.json, the directory the index may sit in, the cache entry links must stay in:
    None for a local path) for ``spec``."""
    if not spec or len(spec) > 4096 or "\x00" in spec:
        raise ModelError(
            "--model: empty or not a usable name",
            hint="give a Hugging Face id (org/name), a model directory or a config.json path",
        )
    local = Path(spec).expanduser()
    try:
        exists = local.exists()
    except OSError:  # a name too long, a loop
        exists = False
    if exists:
        if local.is_dir():
            return local / "config.json", local, None
        return local, local.parent, None
    if not is_model_id(spec):
        raise ModelError(
            f"--model {spec!r}: no such file or directory, and not a Hugging Face id",
            hint="a Hugging Face id is org/name (letters, digits, '.', '_', '-'; no '..', '--' "
            "or path separators); otherwise give an existing directory or config.json",
        )
    snap = _snapshot_dir(spec, hf_home)
    root = cache_repo_dir(spec, hf_home)
    config = snap / "config.json"
    try:
        config = _inside(config, root, f"model {spec}")
    except FileNotFoundError:
        raise ModelError(
            f"model {spec}: the cached snapshot has no config.json",
            hint=_hint_fetch(spec),
        ) from None
    return config, snap, root


def _read_json(path: Path, limit: int, what: str) -> Any:
    try:
        data = bounded.read_bytes(path, limit)
    except FileNotFoundError:
        raise ModelError(
            f"{what}: {path} does not exist",
            hint="give a model directory holding config.json, or the config.json itself",
        ) from None
    except OSError as exc:
        raise ModelError(
            f"{what}: cannot read {path} ({_why(exc)})",
            hint="give a regular JSON file of a few MB at most",
        ) from None
    try:
        return loads_config(data)
    except (ValueError, UnicodeDecodeError) as exc:
        why = (
            "not UTF-8 text"
            if isinstance(exc, UnicodeDecodeError)
            else bounded.json_failure(exc, "usable JSON")
        )
        raise ModelError(
            f"{what}: {path} is {why}",
            hint="give the model's config.json (a JSON object)",
        ) from None


def loads_config(data: bytes) -> Any:
    """JSON as Python's json module reads it: transformers writes ``Infinity`` (Nemotron-H's
    ``time_step_limit``), so unlike ``bounded.loads_json`` the constants are accepted here; the
    fields read are bounded one by one."""
    import json

    try:
        value = json.loads(data)
    except RecursionError:
        raise bounded.TooDeepError() from None
    bounded.check_depth(value)
    return value


def _index_total(directory: Path, root: Path | None) -> int | None:
    path = directory / "model.safetensors.index.json"
    try:
        if root is not None:
            path = _inside(path, root, "model.safetensors.index.json")
        elif not path.exists():
            return None
    except FileNotFoundError:
        return None
    index = _read_json(path, INDEX_LIMIT, "model.safetensors.index.json")
    if not isinstance(index, dict):
        raise ModelError(
            f"{path} is not a JSON object",
            hint="remove the broken index; the weights are then estimated from the config",
        )
    meta = index.get("metadata")
    if not isinstance(meta, dict) or meta.get("total_size") is None:
        return None
    return _bounded_int(meta, "total_size", 1, MAX_TOTAL_SIZE, "metadata")


def served_model(spec: str) -> str:
    """What ``vllm serve`` is given for ``spec``: a local model's absolute directory (the
    directory, or a config.json's), which the run commands mount at that path (a relative path
    means nothing inside a container); a Hugging Face id as it is."""
    local = Path(spec).expanduser()
    try:
        if local.exists():
            return str((local if local.is_dir() else local.parent).resolve())
    except (OSError, RuntimeError):  # a name too long, a loop: read_model says what is wrong
        pass
    return spec


def read_model(spec: str, *, hf_home: Path | None = None) -> ModelConfig:
    """The model ``spec`` names (see the module docstring); ``ModelError`` when it cannot be
    read or is not a usable config."""
    config_path, directory, root = locate(spec, hf_home=hf_home)
    raw = _read_json(config_path, CONFIG_LIMIT, "config.json")
    if not isinstance(raw, dict):
        raise ModelError(
            f"{config_path} is not a JSON object",
            hint="give the model's config.json",
        )
    total = _index_total(directory, root)
    if raw.get("quantization_config") is None:
        # ModelOpt checkpoints state their quantization in hf_quant_config.json (vLLM reads it).
        quant = _side_file(directory, root, "hf_quant_config.json")
        if isinstance(quant, dict) and isinstance(quant.get("quantization"), dict):
            raw = {
                **raw,
                "quantization_config": {"quant_method": "modelopt", **quant["quantization"]},
            }
    return parse_config(raw, source=str(config_path), total_size=total)


def _side_file(directory: Path, root: Path | None, name: str) -> Any:
    path = directory / name
    try:
        if root is not None:
            path = _inside(path, root, name)
        elif not path.exists():
            return None
    except FileNotFoundError:
        return None
    return _read_json(path, CONFIG_LIMIT, name)


# --- parsing ----------------------------------------------------------------------------------


def _bad(field: str, what: str, scope: str = "") -> ModelError:
    where = f"{scope}.{field}" if scope else field
    return ModelError(
        f"config.json: {where} {what}",
        hint="check that this is the model's own config.json (a transformers config)",
    )


def _bounded_int(d: dict[str, Any], key: str, lo: int, hi: int, scope: str = "") -> int:
    value = d[key]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(key, f"is {type(value).__name__}, not an integer", scope)
    if not lo <= value <= hi:
        raise _bad(key, f"= {value} is outside {lo}..{hi}", scope)
    return value


def _first(
    d: dict[str, Any], keys: tuple[str, ...], lo: int, hi: int, *, required: bool, scope: str = ""
) -> int | None:
    for key in keys:
        if d.get(key) is not None:
            return _bounded_int(d, key, lo, hi, scope)
    if required:
        raise _bad(keys[0], "is missing", scope)
    return None


def _need(d: dict[str, Any], keys: tuple[str, ...], lo: int, hi: int, scope: str = "") -> int:
    value = _first(d, keys, lo, hi, required=True, scope=scope)
    assert value is not None  # required=True raises instead
    return value


def _word(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _WORD_RE.fullmatch(value):
        raise _bad(field, "is not a short name")
    return value


def _words(value: Any, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or len(value) > MAX_LIST:
        raise _bad(field, f"is not a list of at most {MAX_LIST} names")
    from resolver.util.redact import has_control

    out: list[str] = []
    for item in value:
        # A control character (ANSI escapes, line breaks, bidi overrides) would reach the
        # terminal where the architecture is printed: refused here, where the config is read.
        if not isinstance(item, str) or len(item) > 512 or has_control(item):
            raise _bad(field, "holds something that is not a short string of printable text")
        out.append(item)
    return tuple(out)


def _flag(d: dict[str, Any], key: str, default: bool) -> bool:
    value = d.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _bad(key, "is not true or false")
    return value


def parse_config(
    raw: dict[str, Any], *, source: str = "<config>", total_size: int | None = None
) -> ModelConfig:
    """Normalise a parsed ``config.json`` (see ``read_model``)."""
    text = raw
    scope = ""
    for key in ("text_config", "llm_config", "language_config"):
        if isinstance(raw.get(key), dict):
            # The LM's fields sit in text_config; what it lacks comes from the outer config.
            text = {**{k: v for k, v in raw.items() if not isinstance(v, dict)}, **raw[key]}
            scope = key
            break
    sub_type = text.get("model_type")
    if isinstance(sub_type, str) and sub_type in CLASS_DEFAULTS:
        text = {**CLASS_DEFAULTS[sub_type], **text}
    archs = _words(raw.get("architectures"), "architectures")
    model_type = _word(raw.get("model_type"), "model_type") or "unknown"

    hidden = _need(text, ("hidden_size", "n_embd", "d_model"), 1, MAX_HIDDEN, scope)
    layers = _need(
        text,
        ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers"),
        1,
        MAX_LAYERS,
        scope,
    )
    heads = _need(
        text,
        ("num_attention_heads", "n_head", "num_heads", "n_heads", "decoder_attention_heads"),
        1,
        MAX_HEADS,
        scope,
    )
    kv_heads = _kv_heads(text, heads, scope)
    head_dim = _first(
        text,
        ("head_dim", "kv_channels", "hidden_size_per_head", "attention_head_dim"),
        1,
        MAX_HIDDEN,
        required=False,
        scope=scope,
    )
    if head_dim is None:
        if hidden % heads:
            raise _bad("head_dim", "is missing and hidden_size is not a multiple of the heads")
        head_dim = hidden // heads
    vocab = _need(text, ("vocab_size", "padded_vocab_size"), 1, MAX_VOCAB, scope)
    inter = _first(
        text,
        ("intermediate_size", "ffn_hidden_size", "n_inner"),
        1,
        16 * MAX_HIDDEN,
        required=False,
        scope=scope,
    )
    max_pos = _first(
        text,
        ("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length"),
        1,
        MAX_CONTEXT,
        required=False,
        scope=scope,
    )
    dtype = _word(raw.get("torch_dtype") or raw.get("dtype") or text.get("torch_dtype"), "dtype")
    window = _first(text, ("sliding_window",), 1, MAX_CONTEXT, required=False, scope=scope)
    chunk = _first(text, ("attention_chunk_size",), 1, MAX_CONTEXT, required=False, scope=scope)
    layer_types, window = _layer_types(text, layers, window, chunk, model_type)
    mla = _mla(text, scope)
    moe = _moe(text, layers, scope)
    quant = _quantization(raw.get("quantization_config") or text.get("quantization_config"))
    multimodal = tuple(
        kind
        for kind, keys in (
            ("vision", ("vision_config", "vision_tower", "visual")),
            ("audio", ("audio_config", "audio_encoder")),
        )
        if any(raw.get(k) is not None for k in keys)
    )
    return ModelConfig(
        source=source,
        architectures=archs,
        model_type=model_type,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=vocab,
        intermediate_size=inter,
        max_position_embeddings=max_pos,
        dtype=dtype,
        # Absent means the config class's default: True for Gemma's, False for the others here.
        tie_word_embeddings=_flag(
            raw,
            "tie_word_embeddings",
            _flag(text, "tie_word_embeddings", model_type.startswith("gemma")),
        ),
        sliding_window=window,
        attention_chunk_size=chunk,
        layer_types=layer_types,
        kv_lora_rank=mla["kv_lora_rank"],
        q_lora_rank=mla["q_lora_rank"],
        qk_rope_head_dim=mla["qk_rope_head_dim"],
        qk_nope_head_dim=mla["qk_nope_head_dim"],
        v_head_dim=mla["v_head_dim"],
        **moe,
        hybrid=_hybrid(text, hidden, layer_types, scope),
        is_encoder_decoder=_flag(raw, "is_encoder_decoder", False),
        multimodal=multimodal,
        quantization=quant,
        total_size=total_size,
        remote_code=isinstance(raw.get("auto_map"), dict) or raw.get("auto_map") is not None,
    )


def _kv_heads(text: dict[str, Any], heads: int, scope: str) -> int:
    if text.get("multi_query_attention") is True or text.get("multi_query") is True:
        # ChatGLM: multi_query_group_num KV heads; GPT-BigCode/Falcon-7B: one.
        groups = _first(text, ("multi_query_group_num",), 1, MAX_HEADS, required=False)
        return groups or 1
    kv = _first(
        text,
        ("num_key_value_heads", "num_kv_heads", "n_head_kv", "num_query_groups"),
        1,
        MAX_HEADS,
        required=False,
        scope=scope,
    )
    if kv is None:
        return heads
    if kv > heads:
        raise _bad("num_key_value_heads", f"= {kv} is more than the {heads} attention heads")
    return kv


def _layer_types(
    text: dict[str, Any], layers: int, window: int | None, chunk: int | None, model_type: str
) -> tuple[tuple[str, ...], int | None]:
    """One kind per layer, and the window (None when no layer uses one)."""
    if text.get("use_sliding_window") is False:
        window = None  # Qwen2/Qwen3 state a window they do not use
    given = text.get("layer_types")
    if given is not None:
        names = _words(given, "layer_types")
        if len(names) != layers:
            raise _bad("layer_types", f"has {len(names)} entries for {layers} layers")
        kinds = tuple(_LAYER_KIND_ALIASES.get(n, n) for n in names)
        for kind in kinds:
            if kind not in _LAYER_KIND_ALIASES.values():
                raise _bad("layer_types", f"names an unknown layer kind {kind!r}")
        if window is None:
            kinds = tuple(FULL if k == SLIDING else k for k in kinds)
        return kinds, window if SLIDING in kinds else None
    hybrid = _hybrid_kinds(text, layers)
    if hybrid is not None:
        return hybrid, None
    if chunk is not None and isinstance(text.get("no_rope_layers"), list):
        # Llama 4: layers with RoPE (no_rope_layers[i] == 1) attend within chunks.
        flags = text["no_rope_layers"]
        if len(flags) == layers:
            return tuple(CHUNKED if f else FULL for f in flags), None
    if window is None:
        return (FULL,) * layers, None
    pattern = text.get("sliding_window_pattern")
    if pattern is None and model_type == "gemma2":
        pattern = 2  # Gemma 2 alternates local and global layers, local first
    if pattern is not None:
        if isinstance(pattern, bool) or not isinstance(pattern, int) or not 1 <= pattern <= layers:
            raise _bad("sliding_window_pattern", f"is not an integer in 1..{layers}")
        return tuple(FULL if (i + 1) % pattern == 0 else SLIDING for i in range(layers)), window
    if text.get("use_sliding_window") is True and text.get("max_window_layers") is not None:
        first = _bounded_int(text, "max_window_layers", 0, MAX_LAYERS)
        return tuple(SLIDING if i >= first else FULL for i in range(layers)), window
    return (SLIDING,) * layers, window


def _hybrid_kinds(text: dict[str, Any], layers: int) -> tuple[str, ...] | None:
    interval = text.get("full_attention_interval")
    if interval is not None and text.get("linear_num_value_heads") is not None:
        n = _bounded_int(text, "full_attention_interval", 1, MAX_LAYERS)
        return tuple(FULL if (i + 1) % n == 0 else LINEAR for i in range(layers))
    pattern = text.get("hybrid_override_pattern")  # Nemotron-H: M mamba, * attention, - MLP
    if isinstance(pattern, str) and len(pattern) == layers:
        return tuple(MAMBA if c == "M" else FULL if c == "*" else MLP for c in pattern)
    period, offset = text.get("attn_layer_period"), text.get("attn_layer_offset")
    if isinstance(period, int) and isinstance(offset, int) and period >= 1:  # Jamba
        return tuple(FULL if i % period == offset else MAMBA for i in range(layers))
    return None


def _mla(text: dict[str, Any], scope: str) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for key in (
        "kv_lora_rank",
        "q_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "v_head_dim",
    ):
        out[key] = _first(text, (key,), 1, MAX_HIDDEN, required=False, scope=scope)
    if out["kv_lora_rank"] is not None and out["qk_rope_head_dim"] is None:
        raise _bad("qk_rope_head_dim", "is missing in an MLA config (kv_lora_rank is set)")
    return out


def _moe(text: dict[str, Any], layers: int, scope: str) -> dict[str, Any]:
    experts = _first(
        text,
        ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts"),
        1,
        MAX_EXPERTS,
        required=False,
        scope=scope,
    )
    if experts is None or experts <= 1:
        return {}
    per_tok = _first(text, ("num_experts_per_tok", "moe_topk", "top_k"), 1, experts, required=False)
    moe_inter = _first(
        text, ("moe_intermediate_size",), 1, 16 * MAX_HIDDEN, required=False, scope=scope
    )
    shared = _first(
        text, ("n_shared_experts", "num_shared_experts"), 0, MAX_EXPERTS, required=False
    )
    shared_inter = _first(
        text, ("shared_expert_intermediate_size",), 0, 16 * MAX_HIDDEN, required=False
    )
    dense = set()
    if text.get("first_k_dense_replace") is not None:
        dense |= set(range(_bounded_int(text, "first_k_dense_replace", 0, layers)))
    only = text.get("mlp_only_layers")
    if only:
        for i in _ints(only, "mlp_only_layers", layers):
            dense.add(i)
    step = text.get("decoder_sparse_step") or text.get("interleave_moe_layer_step")
    moe_layers = tuple(i for i in range(layers) if i not in dense)
    if step is not None:
        n = _bounded_int({"step": step}, "step", 1, layers, scope)
        moe_layers = tuple(i for i in moe_layers if (i + 1) % n == 0)
    return {
        "num_experts": experts,
        "num_experts_per_tok": per_tok,
        "moe_intermediate_size": moe_inter,
        "shared_experts": shared or (1 if shared_inter else 0),
        "shared_expert_intermediate_size": shared_inter,
        "moe_layers": moe_layers,
    }


def _ints(value: Any, field: str, below: int) -> list[int]:
    if not isinstance(value, list) or len(value) > MAX_LIST:
        raise _bad(field, "is not a list of layer indices")
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < below:
            raise _bad(field, f"holds {item!r}, not a layer index below {below}")
        out.append(item)
    return out


def _hybrid(
    text: dict[str, Any], hidden: int, kinds: tuple[str, ...], scope: str
) -> HybridState | None:
    if LINEAR in kinds:  # Qwen3-Next gated delta net

        def get(key: str) -> int:
            return _need(text, (key,), 1, MAX_HIDDEN, scope)

        return HybridState(
            kind="gated_delta_net",
            conv_kernel=get("linear_conv_kernel_dim"),
            num_k_heads=get("linear_num_key_heads"),
            num_v_heads=get("linear_num_value_heads"),
            head_k_dim=get("linear_key_head_dim"),
            head_v_dim=get("linear_value_head_dim"),
        )
    if MAMBA not in kinds:
        return None

    def opt(*keys: str) -> int | None:
        return _first(text, keys, 1, 16 * MAX_HIDDEN, required=False, scope=scope)

    state = opt("ssm_state_size", "mamba_d_state", "state_size", "d_state") or 16
    conv = opt("conv_kernel", "mamba_d_conv", "d_conv") or 4
    expand = opt("mamba_expand", "expand") or 2
    n_heads = opt("mamba_num_heads", "mamba_n_heads")
    head = opt("mamba_head_dim", "mamba_d_head")
    if n_heads and head:  # Mamba2 (Nemotron-H, Granite 4, Falcon-H1)
        return HybridState(
            kind="mamba2",
            conv_kernel=conv,
            intermediate_size=n_heads * head,
            state_size=state,
            n_groups=opt("n_groups", "mamba_n_groups") or 1,
            num_heads=n_heads,
            head_dim=head,
        )
    return HybridState(  # Mamba1 (Jamba)
        kind="mamba1", conv_kernel=conv, intermediate_size=expand * hidden, state_size=state
    )


def _quantization(qc: Any) -> Quantization | None:
    if qc is None:
        return None
    if not isinstance(qc, dict):
        raise _bad("quantization_config", "is not an object")
    method = _word(qc.get("quant_method") or qc.get("quant_algo"), "quant_method")
    if method is None:
        if qc.get("load_in_4bit") or qc.get("load_in_8bit"):
            method = "bitsandbytes"
        else:
            raise _bad("quantization_config.quant_method", "is missing")
    method = method.lower()
    excluded = _words(
        qc.get("ignore") or qc.get("modules_to_not_convert") or qc.get("exclude_modules"),
        "quantization_config.ignore",
    )
    bits = _first(qc, ("bits", "w_bit", "num_bits", "weight_bits"), 1, 64, required=False)
    group = _first(qc, ("group_size", "q_group_size"), -1, 1 << 20, required=False)
    block = qc.get("weight_block_size")
    block_size: tuple[int, ...] | None = None
    if block is not None:
        block_size = tuple(_ints_pos(block, "quantization_config.weight_block_size"))
    fmt = _word(qc.get("fmt"), "quantization_config.fmt")
    schemes: tuple[str, ...] = ()
    kv = _word(qc.get("kv_cache_quant_algo"), "quantization_config.kv_cache_quant_algo")
    if method in ("fp8", "fbgemm_fp8", "ptpc_fp8"):
        fmt, bits = fmt or "e4m3", bits or 8
    elif method == "mxfp4":
        fmt, bits = "mxfp4", 4
    elif method == "modelopt":
        algo = str(qc.get("quant_algo") or "").lower()
        fmt = "nvfp4" if "fp4" in algo else "e4m3" if "fp8" in algo else fmt
        bits = 4 if fmt == "nvfp4" else 8 if fmt == "e4m3" else bits
    elif method in ("bitsandbytes",):
        bits = 4 if qc.get("load_in_4bit") else 8
    elif method == "compressed-tensors":
        schemes, bits, group, fmt = _ct_schemes(qc)
        if isinstance(qc.get("kv_cache_scheme"), dict):
            kv = "fp8"
    elif method in ("awq", "gptq", "awq_marlin", "gptq_marlin") and bits is None:
        bits = 4
    return Quantization(
        method=method,
        fmt=fmt,
        bits=bits,
        group_size=group if group and group > 0 else None,
        block_size=block_size,
        schemes=schemes,
        excluded=excluded,
        kv_cache=kv,
    )


def _ints_pos(value: Any, field: str) -> list[int]:
    if not isinstance(value, list) or not 1 <= len(value) <= 4:
        raise _bad(field, "is not a list of 1-4 sizes")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= 1 << 20:
            raise _bad(field, f"holds {item!r}, not a block size")
    return list(value)


def _ct_schemes(qc: dict[str, Any]) -> tuple[tuple[str, ...], int | None, int | None, str | None]:
    """compressed-tensors' config_groups as scheme names (W<bits>A<bits>[-FP8|-FP4])."""
    groups = qc.get("config_groups")
    fmt = _word(qc.get("format"), "quantization_config.format")
    if not isinstance(groups, dict):
        return (), None, None, fmt
    schemes: list[str] = []
    bits: int | None = None
    group_size: int | None = None
    for name, group in list(groups.items())[:64]:
        if not isinstance(group, dict):
            raise _bad(f"quantization_config.config_groups.{name}", "is not an object")
        w = group.get("weights")
        a = group.get("input_activations")
        wb = _first(w, ("num_bits",), 1, 64, required=False) if isinstance(w, dict) else None
        ab = _first(a, ("num_bits",), 1, 64, required=False) if isinstance(a, dict) else None
        if isinstance(w, dict):
            group_size = _first(w, ("group_size",), 1, 1 << 20, required=False) or group_size
        kind = w.get("type") if isinstance(w, dict) else None
        suffix = ""
        if kind == "float":
            suffix = "-FP8" if wb == 8 else "-FP4" if wb == 4 else "-FP"
        schemes.append(f"W{wb or '?'}A{ab or 16}{suffix}")
        bits = wb if bits is None else max(bits, wb or bits)
    if fmt and "fp4" in fmt:
        fmt = "nvfp4"
    elif any(s.endswith("-FP8") for s in schemes):
        fmt = "e4m3"
    return tuple(sorted(set(schemes))), bits, group_size, fmt
