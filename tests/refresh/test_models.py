"""What each release offers models, read from its sdist (issue 37): the shipped models.toml
records are what the real files say (recorded slices of the PyPI sdists, see
recorded/SOURCES.md), and a construct the reader does not know claims nothing."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from resolver.data import overlay
from resolver.refresh.common import Endpoints
from resolver.refresh.http import HttpClient
from resolver.refresh.models import (
    WANTED,
    ModelsSource,
    attention_traits,
    cumulative,
    gpu_memory_utilization,
    model_record,
    registry,
    rocm_limits,
)
from resolver.refresh.sdist import IndexFile, read_members

from .conftest import REPO_MATRIX, drop_records
from .server import Upstream

SLICES = Path(__file__).parent / "recorded" / "sdist-models"
RECORDS = tomllib.loads((REPO_MATRIX / "models.toml").read_text())["release"]
SHIPPED = {r["version"]: r for r in RECORDS}


def _before(version: str) -> dict[str, set[str]] | None:
    older = [r for r in RECORDS if Version(r["version"]) < Version(version)]
    sets = cumulative(older)
    return sets[max(sets, key=Version)] if sets else None


def _files(version: str) -> dict[str, str]:
    return read_members((SLICES / f"vllm-{version}.tar.gz").read_bytes(), WANTED)


@pytest.mark.parametrize("version", ["0.6.0", "0.10.0", "0.33.0"])
def test_the_shipped_record_is_what_the_release_says(version: str) -> None:
    sdist = IndexFile(Version(version), "", "", SHIPPED[version]["sdist_sha256"], None, None)
    record, _, why = model_record(sdist, _files(version), _before(version))
    assert record == SHIPPED[version], why


def test_the_release_facts_the_issue_names() -> None:
    assert SHIPPED["0.33.0"]["gpu_memory_utilization"] == "0.92"  # issue 37: 0.92 in 0.33.0
    assert SHIPPED["0.19.1"]["gpu_memory_utilization"] == "0.9"
    assert SHIPPED["0.20.0"]["gpu_memory_utilization"] == "0.92"  # changed in 0.20.0
    # the SWA reason vLLM gave for Qwen2 on ROCm, until 0.11.1 dropped the list's entries
    assert "Sliding window" in SHIPPED["0.10.0"]["rocm_partial"]["Qwen2ForCausalLM"]
    assert "rocm_partial" not in SHIPPED["0.11.1"]
    backends = {b["name"]: b for b in SHIPPED["0.33.0"]["backend"]}
    assert backends["rocm_aiter_fa"]["head_sizes"] == ["64", "128", "256"]
    assert backends["triton_mla"]["mla"] is True and backends["triton_attn"]["sink"] is True
    assert "encoder_decoder" not in backends["rocm_attn"]["attn_types"]
    assert backends["rocm_aiter_fa"]["gfx_gate"] == "get_cdna_version() > 2"


def test_the_registry_is_read_from_its_dicts_not_run() -> None:
    text = (
        "import os\nos.system('false')\n"
        "_TEXT_GENERATION_MODELS = {'LlamaForCausalLM': ('llama', 'LlamaForCausalLM'),"
        " 'AquilaModel': ('llama', 'LlamaForCausalLM'), 'GPT2': ('gpt2', 'GPT2')}\n"
        "_EMBEDDING_MODELS = {'BertModel': ('bert', 'BertModel'), **{k: (m, a) for k, (m, a)"
        " in _TEXT_GENERATION_MODELS.items() if a == 'LlamaForCausalLM'}}\n"
        "_VLLM_MODELS = {**_TEXT_GENERATION_MODELS, **_EMBEDDING_MODELS}\n"
    )
    got = registry({"vllm/model_executor/models/registry.py": text})
    assert got is not None
    assert got[0] == {
        "text_generation": ["AquilaModel", "GPT2", "LlamaForCausalLM"],
        "embedding": ["AquilaModel", "BertModel", "LlamaForCausalLM"],
    }


@pytest.mark.parametrize(
    "body",
    [
        "_X_MODELS = load()\n_VLLM_MODELS = {**_X_MODELS}\n",
        "_X_MODELS = {'a b': ('m', 'c')}\n_VLLM_MODELS = {**_X_MODELS}\n",
        "_X_MODELS = {f'{x}': ('m', 'c')}\n_VLLM_MODELS = {**_X_MODELS}\n",
        "_VLLM_MODELS = {'Llama': ('llama', 'Llama')}\n",
        "_VLLM_MODELS = {**_UNDEFINED}\n",
    ],
)
def test_a_registry_that_is_not_plain_dicts_claims_nothing(body: str) -> None:
    assert registry({"vllm/model_executor/models/registry.py": body}) is None


def test_rocm_limits_resolve_named_reasons() -> None:
    text = (
        "_ROCM_UNSUPPORTED_MODELS: list[str] = ['MambaForCausalLM']\n"
        "_ROCM_SWA_REASON = ('Sliding window attention (SWA) is not yet supported '\n"
        "                    'in Triton flash attention.')\n"
        "_ROCM_PARTIALLY_SUPPORTED_MODELS = {'Qwen2ForCausalLM': _ROCM_SWA_REASON}\n"
    )
    assert rocm_limits({"vllm/platforms/rocm.py": text}) == (
        ["MambaForCausalLM"],
        {
            "Qwen2ForCausalLM": "Sliding window attention (SWA) is not yet supported in "
            "Triton flash attention."
        },
        "vllm/platforms/rocm.py",
    )
    bad = "_ROCM_PARTIALLY_SUPPORTED_MODELS = {'Qwen2ForCausalLM': reason()}\n"
    assert rocm_limits({"vllm/platforms/rocm.py": bad}) is None


@pytest.mark.parametrize(
    ("engine", "cache", "want"),
    [
        ("class EngineArgs:\n    gpu_memory_utilization: float = 0.90\n", "", "0.9"),
        (
            "class EngineArgs:\n    gpu_memory_utilization: float = CacheConfig.x\n",
            "class CacheConfig:\n    x: float = Field(default=0.92, gt=0)\n",
            "0.92",
        ),
        ("class EngineArgs:\n    gpu_memory_utilization: float = 1.5\n", "", None),
        ("class EngineArgs:\n    gpu_memory_utilization: float = default()\n", "", None),
    ],
)
def test_the_gpu_memory_utilization_default(engine: str, cache: str, want: str | None) -> None:
    files = {"vllm/engine/arg_utils.py": engine, "vllm/config/cache.py": cache}
    got = gpu_memory_utilization(files)
    assert (got[0] if got else None) == want


_PLATFORM = "def _get_backend_priorities(use_mla):\n    return [AttentionBackendEnum.ROCM_ATTN]\n"
_REGISTRY = (
    "class AttentionBackendEnum(Enum):\n"
    '    ROCM_ATTN = "vllm.v1.attention.backends.rocm_attn.RocmAttentionBackend"\n'
)
_BASE = (
    "class AttentionType(str, Enum):\n    DECODER = 'decoder'\n    ENCODER = 'encoder'\n"
    "class AttentionBackend(ABC):\n"
    "    @classmethod\n    def get_supported_head_sizes(cls):\n        return []\n"
    "    @classmethod\n    def supports_head_size(cls, head_size):\n"
    "        return head_size in cls.get_supported_head_sizes()\n"
    "    @classmethod\n    def is_mla(cls):\n        return False\n"
    "    @classmethod\n    def supports_sink(cls):\n        return False\n"
    "    @classmethod\n    def supports_attn_type(cls, attn_type):\n"
    "        return attn_type == AttentionType.DECODER\n"
)


def _traits(backend: str) -> dict[str, Any]:
    files = {
        "vllm/platforms/rocm.py": _PLATFORM,
        "vllm/v1/attention/backends/registry.py": _REGISTRY,
        "vllm/v1/attention/backend.py": _BASE,
        "vllm/v1/attention/backends/rocm_attn.py": (
            "from vllm.v1.attention.backend import AttentionBackend, AttentionType\n" + backend
        ),
    }
    got = attention_traits(files)
    assert got is not None
    return got[0]


def test_backend_traits_follow_the_class_and_its_base() -> None:
    got = _traits(
        "class RocmAttentionBackend(AttentionBackend):\n"
        "    @classmethod\n    def get_supported_head_sizes(cls):\n        return [128, 64]\n"
        "    @classmethod\n    def supports_sink(cls):\n        '''doc'''\n        return True\n"
        "    @classmethod\n    def supports_attn_type(cls, attn_type):\n"
        "        return attn_type in (AttentionType.DECODER, AttentionType.ENCODER)\n"
    )
    # sliding window: the release's base class has no such method, so it is not claimed
    assert got == {
        "name": "rocm_attn",
        "source": "vllm/v1/attention/backends/rocm_attn.py (RocmAttentionBackend and its bases)",
        "head_sizes": ["64", "128"],
        "mla": False,
        "sink": True,
        "attn_types": ["decoder", "encoder"],
    }


def test_a_trait_not_stated_plainly_is_left_unknown() -> None:
    got = _traits(
        "class RocmAttentionBackend(AttentionBackend):\n"
        "    @classmethod\n    def supports_head_size(cls, head_size):\n"
        "        return head_size % 8 == 0\n"
        "    @classmethod\n    def supports_sink(cls):\n        return envs.SINKS\n"
    )
    assert "head_sizes" not in got and "head_size_min" not in got and "sink" not in got
    assert got["mla"] is False


def test_the_source_reads_a_release_into_the_shipped_record(
    upstream: Upstream, matrix_copy: Path
) -> None:
    """``matrix refresh --source models`` against the index: the release the data lacks is read,
    its registry delta taken against the record before it."""
    name = "vllm-0.33.0.tar.gz"
    data = (SLICES / name).read_bytes()
    upstream.overrides[f"/files/{name}"] = data
    sha = hashlib.sha256(data).hexdigest()
    entry = {"filename": name, "url": f"/files/{name}", "hashes": {"sha256": sha}}
    page = {"meta": {"api-version": "1.1"}, "name": "vllm", "files": [entry]}
    upstream.overrides["/simple/vllm/"] = json.dumps(page).encode()
    drop_records(matrix_copy / "models.toml", "version", {"0.33.0"})
    source = ModelsSource(
        HttpClient(cache_dir=None), Endpoints.from_env(), overlay.current_raw(), cache=None
    )
    result = source.read()
    assert not result.refused, result.refused
    (cand,) = result.candidates
    assert cand.key == "0.33.0"
    assert cand.record["sdist_sha256"] == sha  # the slice, served under its own hash
    drop = ("sdist_sha256", "source")

    def unsourced(record: dict[str, Any]) -> dict[str, Any]:
        # the slice's own hash names its sources: each backend table's as the record's
        out = {k: v for k, v in record.items() if k not in drop}
        out["backend"] = [{k: v for k, v in b.items() if k != "source"} for b in out["backend"]]
        return out

    assert unsourced(cand.record) == unsourced(SHIPPED["0.33.0"])
    assert all(
        b["source"].startswith(f"vllm 0.33.0 sdist sha256:{sha[:12]} vllm/")
        for b in cand.record["backend"]
    )
