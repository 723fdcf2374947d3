"""resolver/data/hfmodel.py and resolver/refresh/hf.py: real configs (tests/fixtures/models, see
its SOURCES.toml), hostile inputs (tests/fixtures/models_bad), the HF cache layout, and the
``--online`` fetch against a local HTTP server serving the fixture files."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver.data import hfmodel
from resolver.data.hfmodel import FULL, LINEAR, MAMBA, SLIDING, parse_config, read_model
from resolver.refresh import hf
from resolver.util.errors import InputError, ModelError, RegistryError

from .helpers import local_http

MODELS = Path(__file__).parent / "fixtures" / "models"
BAD = Path(__file__).parent / "fixtures" / "models_bad"
FIXTURES = sorted(p.name for p in MODELS.iterdir() if (p / "config.json").is_file())
REV = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize("slug", FIXTURES)
def test_every_fixture_reads(slug: str) -> None:
    m = read_model(str(MODELS / slug))
    assert m.architectures and m.num_hidden_layers == len(m.layer_types)
    assert 1 <= m.num_key_value_heads <= m.num_attention_heads
    assert m.source.endswith("config.json")
    # DeepSeek, Kimi and Nemotron-H configs carry auto_map (vLLM runs them with its own code).
    assert m.remote_code == ("auto_map" in (MODELS / slug / "config.json").read_text())


def test_llama_fields() -> None:
    m = read_model(str(MODELS / "llama-3.1-8b" / "config.json"))
    assert (m.hidden_size, m.num_hidden_layers, m.num_attention_heads) == (4096, 32, 32)
    assert (m.num_key_value_heads, m.head_dim, m.vocab_size) == (8, 128, 128256)
    assert m.max_position_embeddings == 131072 and m.dtype == "bfloat16"
    assert set(m.layer_types) == {FULL} and m.sliding_window is None and m.quantization is None


def test_mla_moe_fp8() -> None:
    m = read_model(str(MODELS / "deepseek-v3"))
    assert m.is_mla and (m.kv_lora_rank, m.qk_rope_head_dim) == (512, 64)
    assert m.num_experts == 256 and m.num_experts_per_tok == 8 and m.shared_experts == 1
    assert m.moe_layers[0] == 3 and len(m.moe_layers) == 58  # first_k_dense_replace = 3
    q = m.quantization
    assert q is not None and (q.method, q.fmt, q.block_size) == ("fp8", "e4m3", (128, 128))


def test_sliding_patterns() -> None:
    g = read_model(str(MODELS / "gemma-2-9b"))
    assert g.sliding_window == 4096 and g.layer_types[:2] == (SLIDING, FULL)
    assert g.tie_word_embeddings  # Gemma's config class default
    o = read_model(str(MODELS / "gpt-oss-20b"))
    assert o.sliding_window == 128 and o.count(SLIDING) == o.count(FULL) == 12
    q = o.quantization
    assert q is not None and q.method == "mxfp4" and q.excluded


def test_qwen_window_unused() -> None:
    # Qwen3 states sliding_window but use_sliding_window is false.
    assert read_model(str(MODELS / "qwen3-8b")).sliding_window is None


def test_hybrid_layers() -> None:
    n = read_model(str(MODELS / "qwen3-next-80b-a3b-thinking"))
    assert n.count(LINEAR) == 36 and n.count(FULL) == 12
    assert n.hybrid is not None and n.hybrid.kind == "gated_delta_net"
    h = read_model(str(MODELS / "nemotron-h-56b-base-8k"))  # its config holds Infinity
    assert h.count(MAMBA) > 0 and h.hybrid is not None and h.hybrid.kind == "mamba2"


def test_modelopt_side_file() -> None:
    q = read_model(str(MODELS / "llama-3.1-70b-instruct-fp8-nvidia")).quantization
    assert q is not None and (q.method, q.fmt, q.kv_cache) == ("modelopt", "e4m3", "FP8")


def test_text_config_nests_the_lm() -> None:
    raw = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3",
        "torch_dtype": "bfloat16",
        "vision_config": {"hidden_size": 1152},
        "text_config": {
            "hidden_size": 2560,
            "num_hidden_layers": 34,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "vocab_size": 262208,
            "sliding_window": 1024,
            "sliding_window_pattern": 6,
        },
    }
    m = parse_config(raw)
    assert m.hidden_size == 2560 and m.multimodal == ("vision",)
    assert m.count(FULL) == 5 and m.count(SLIDING) == 29 and m.dtype == "bfloat16"


def test_index_total_size(tmp_path: Path) -> None:
    shutil.copy(MODELS / "llama-3.1-8b" / "config.json", tmp_path / "config.json")
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 16060522496}})
    )
    assert read_model(str(tmp_path)).total_size == 16060522496


def test_remote_code_is_read_as_json() -> None:
    m = read_model(str(BAD / "remote-code.json"))
    assert m.remote_code and m.architectures == ("EvilForCausalLM",)


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("not-object.json", "not a JSON object"),
        ("huge-layers.json", "num_hidden_layers"),
        ("zero-heads.json", "num_attention_heads"),
        ("no-hidden.json", "hidden_size is missing"),
        ("string-hidden.json", "hidden_size"),
        ("kv-over-heads.json", "num_key_value_heads"),
        ("layer-types-short.json", "layer_types"),
        ("deep.json", "nested deeper"),
        ("truncated.json", "not valid JSON"),
        ("not-utf8.json", "config.json"),
        ("escape-architecture.json", "architectures"),  # ANSI escapes for the terminal
    ],
)
def test_hostile_configs(name: str, field: str) -> None:
    with pytest.raises(ModelError) as err:
        read_model(str(BAD / name))
    assert field in err.value.message and "\n" not in err.value.message
    assert err.value.hint and err.value.exit_code == 2 and isinstance(err.value, InputError)


@pytest.mark.parametrize("spec", ["../etc/passwd", "/abs/x", "a\\b/c", "org/../x", "a--b/c", ""])
def test_bad_ids(spec: str) -> None:
    with pytest.raises(ModelError):
        read_model(spec)


def test_not_regular_and_too_large(tmp_path: Path) -> None:
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    with pytest.raises(ModelError, match="FIFO"):
        read_model(str(fifo))
    big = tmp_path / "big"
    big.mkdir()
    with (big / "config.json").open("wb") as fh:
        fh.truncate(hfmodel.CONFIG_LIMIT + 1)
    with pytest.raises(ModelError, match="larger than"):
        read_model(str(big))


def _cache_entry(hub: Path, model_id: str, config: Path) -> Path:
    org, name = model_id.split("/")
    repo = hub / f"models--{org}--{name}"
    blob = repo / "blobs" / "abc"
    blob.parent.mkdir(parents=True)
    shutil.copy(config, blob)
    snap = repo / "snapshots" / REV
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(Path("..") / ".." / "blobs" / "abc")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REV)
    return snap


def test_hf_cache_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _cache_entry(
        tmp_path / "hub", "meta-llama/Llama-3.1-8B", MODELS / "llama-3.1-8b" / "config.json"
    )
    m = read_model("meta-llama/Llama-3.1-8B", hf_home=tmp_path)
    assert m.num_hidden_layers == 32
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert read_model("meta-llama/Llama-3.1-8B").num_hidden_layers == 32
    with pytest.raises(ModelError, match="not in the Hugging Face cache"):
        read_model("meta-llama/Other", hf_home=tmp_path)


def test_hf_cache_symlink_loop_and_escape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    snap = _cache_entry(tmp_path / "hub", "a/loop", MODELS / "qwen3-8b" / "config.json")
    (snap / "config.json").unlink()
    (snap / "config.json").symlink_to(snap / "config.json")
    with pytest.raises(ModelError, match=r"symlink loop|cannot resolve"):
        read_model("a/loop", hf_home=tmp_path)
    snap = _cache_entry(tmp_path / "hub", "a/escape", MODELS / "qwen3-8b" / "config.json")
    (snap / "config.json").unlink()
    (snap / "config.json").symlink_to(MODELS / "qwen3-8b" / "config.json")
    with pytest.raises(ModelError, match="outside its cache entry"):
        read_model("a/escape", hf_home=tmp_path)
    repo = tmp_path / "hub" / "models--a--badref"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("../../etc")
    with pytest.raises(ModelError, match="not a commit hash"):
        read_model("a/badref", hf_home=tmp_path)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=20,
)
_keys = st.sampled_from(
    [
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "vocab_size",
        "sliding_window",
        "layer_types",
        "sliding_window_pattern",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "num_local_experts",
        "first_k_dense_replace",
        "mlp_only_layers",
        "decoder_sparse_step",
        "quantization_config",
        "text_config",
        "full_attention_interval",
        "linear_num_value_heads",
        "hybrid_override_pattern",
        "attn_layer_period",
        "attn_layer_offset",
        "use_sliding_window",
        "max_window_layers",
        "no_rope_layers",
        "attention_chunk_size",
    ]
)
_small = st.integers(min_value=-2, max_value=70)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(_keys, _json | _small, max_size=12),
    st.dictionaries(_keys, _small, max_size=8),
)
def test_random_configs_never_crash(raw: dict[str, Any], base: dict[str, Any]) -> None:
    from resolver.solve import fit

    cfg = {**base, **raw}
    try:
        m = parse_config(cfg)
    except ModelError as exc:
        assert "\n" not in exc.message
        return
    # A config that parses also sizes without an error.
    f = fit.fit(m, gpu_bytes=64 * 1024**3, max_model_len=4096)
    assert f.kv_cache_bytes_per_token >= 0


# --- --online ---------------------------------------------------------------------------------


class _Hub(BaseHTTPRequestHandler):
    """Serves tests/fixtures/models/<slug> as /<org>/<name>/resolve/main/<file>."""

    routes: ClassVar[dict[str, Path]] = {}
    status: ClassVar[dict[str, int]] = {}
    seen: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(self.path)
        parts = self.path.strip("/").split("/")
        model, name = "/".join(parts[:2]), parts[-1]
        code = self.status.get(model)
        path = self.routes.get(model, Path("/nonexistent")) / name
        if code is None and not path.is_file():
            code = 404
        body = b"" if code else path.read_bytes()
        self.send_response(code or 200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Repo-Commit", REV)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def hub() -> Iterator[str]:
    _Hub.routes = {"Qwen/Qwen3-8B": MODELS / "qwen3-8b", "x/gated": MODELS / "qwen3-8b"}
    _Hub.status = {"x/gated": 401}
    _Hub.seen = []
    with local_http(_Hub) as url:
        yield url


def test_fetch_then_read(hub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    snap = hf.fetch_model_files("Qwen/Qwen3-8B", endpoint=hub, cache_dir=tmp_path / "hub")
    assert snap.name == REV and (snap / "config.json").is_file()
    assert not (snap / "model.safetensors.index.json").exists()  # its 404 is fine
    assert {p.rsplit("/", 1)[-1] for p in _Hub.seen} == set(hf.FILES)  # never weights
    m = read_model("Qwen/Qwen3-8B", hf_home=tmp_path)
    assert m.num_hidden_layers == 36


def test_fetch_gated_and_missing(hub: str, tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="gated or private"):
        hf.fetch_model_files("x/gated", endpoint=hub, cache_dir=tmp_path)
    with pytest.raises(ModelError, match=r"no config\.json"):
        hf.fetch_model_files("x/missing", endpoint=hub, cache_dir=tmp_path)
    with pytest.raises(ModelError, match="not a Hugging Face id"):
        hf.fetch_model_files("../x", endpoint=hub, cache_dir=tmp_path)
