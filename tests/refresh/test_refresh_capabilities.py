"""Each release's ROCm quantization list, read from its sdist's vllm/platforms/rocm.py (issue
20): the shipped records are what the real files say, and a file that is not a plain list of
names claims nothing."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

import pytest
from packaging.version import Version

from resolver.data import overlay
from resolver.refresh.capabilities import (
    WANTED,
    CapabilitiesSource,
    capability_record,
    supported_quantization,
)
from resolver.refresh.common import Endpoints
from resolver.refresh.http import HttpClient
from resolver.refresh.sdist import IndexFile, read_members

from .conftest import REPO_MATRIX, drop_records
from .server import Upstream

SLICES = Path(__file__).parent / "recorded" / "sdist-capabilities"
SHIPPED = {
    r["version"]: r
    for r in tomllib.loads((REPO_MATRIX / "capabilities.toml").read_text())["release"]
}


@pytest.mark.parametrize("version", ["0.10.1.1", "0.20.0", "0.28.0", "0.33.0"])
def test_the_shipped_list_is_what_the_release_says(version: str) -> None:
    files = read_members((SLICES / f"vllm-{version}.tar.gz").read_bytes(), WANTED)
    sha = str(SHIPPED[version]["sdist_sha256"])
    gfx = [g["name"] for g in tomllib.loads((REPO_MATRIX / "gfx.toml").read_text())["gfx"]]
    sdist = IndexFile(Version(version), "", "", sha, None, None)
    record, why = capability_record(sdist, files, gfx)
    assert record == SHIPPED[version], why


def test_what_changed_between_releases_is_in_the_data() -> None:
    assert "bitsandbytes" in SHIPPED["0.27.1"]["quantization"]
    assert "bitsandbytes" not in SHIPPED["0.28.0"]["quantization"]  # vLLM removed it
    assert "modelopt_mxfp8" not in SHIPPED["0.20.2"]["quantization"]
    assert "modelopt_mxfp8" in SHIPPED["0.21.0"]["quantization"]  # and added this one


@pytest.mark.parametrize(
    "body",
    [
        "supported_quantization = ['awq', f'{x}']",
        "supported_quantization = ['awq', 'x; rm -rf /']",
        "supported_quantization = load_methods()",
        "supported_quantization = ['awq'",
    ],
)
def test_a_list_that_is_not_plain_names_claims_nothing(body: str) -> None:
    text = f"class RocmPlatform:\n    {body}\n"
    assert supported_quantization(text) is None


def test_the_list_is_read_from_the_class_not_run() -> None:
    text = (
        "import os\nos.system('false')\n"
        "class RocmPlatform(Platform):\n"
        "    supported_quantization: list[str] = ['awq', 'gptq', 'awq']\n"
    )
    assert supported_quantization(text) == ["awq", "gptq"]


def test_the_fp8_rule_is_evaluated_per_gfx_as_vllm_wrote_it() -> None:
    """supports_fp8 changed: gfx94/95/12 (0.10) -> gfx9 or gfx12 (0.20) -> CDNA or RDNA4 ->
    CDNA or any RDNA (0.33.0)."""
    assert "gfx90a" not in SHIPPED["0.10.1.1"]["fp8"] and "gfx942" in SHIPPED["0.10.1.1"]["fp8"]
    assert "gfx90a" in SHIPPED["0.20.0"]["fp8"] and "gfx1100" not in SHIPPED["0.28.0"]["fp8"]
    assert {"gfx1100", "gfx1151", "gfx1201"} <= set(SHIPPED["0.33.0"]["fp8"])


@pytest.mark.parametrize(
    "body",
    [
        "return os.environ['X'] == '1'",
        "return eval('True')",
        "return any(gfx in arch() for gfx in ['gfx94'])",
    ],
)
def test_an_fp8_rule_the_evaluator_does_not_know_claims_nothing(body: str) -> None:
    from resolver.refresh.capabilities import gate_targets

    text = f"class RocmPlatform:\n    def supports_fp8(cls):\n        {body}\n"
    assert gate_targets(text, ["gfx942"], "supports_fp8") is None


# --- issue 34: the KV cache dtypes each ROCm attention backend takes -----------------------------

_PLATFORM = """
from vllm.v1.attention.backends.registry import AttentionBackendEnum
def _get_backend_priorities(use_mla):
    if use_mla:
        return [AttentionBackendEnum.TRITON_MLA]
    return [AttentionBackendEnum.ROCM_ATTN, AttentionBackendEnum.TURBOQUANT]
class RocmPlatform:
    supported_quantization = ['fp8']
"""
_REGISTRY = """
class AttentionBackendEnum(Enum):
    ROCM_ATTN = "vllm.v1.attention.backends.rocm_attn.RocmAttentionBackend"
    TRITON_MLA = "vllm.v1.attention.backends.mla.triton_mla.TritonMLABackend"
    TURBOQUANT = "vllm.v1.attention.backends.turboquant_attn.TurboQuantAttentionBackend"
    ROCM_AITER_FA = "vllm.v1.attention.backends.rocm_aiter_fa.AiterFlashAttentionBackend"
    FLASHINFER = "vllm.v1.attention.backends.flashinfer.FlashInferBackend"
"""
_FILES = {
    "vllm/platforms/rocm.py": _PLATFORM,
    "vllm/v1/attention/backends/registry.py": _REGISTRY,
    "vllm/v1/attention/backend.py": (
        "class AttentionBackend(ABC):\n"
        "    supported_kv_cache_dtypes = ['auto', 'float16', 'bfloat16']\n"
        "    @classmethod\n"
        "    def supports_kv_cache_dtype(cls, kv_cache_dtype):\n"
        "        return kv_cache_dtype in cls.supported_kv_cache_dtypes\n"
    ),
    # inherits the base's list through the name it imports
    "vllm/v1/attention/backends/rocm_attn.py": (
        "from vllm.v1.attention.backend import AttentionBackend as Base\n"
        "class RocmAttentionBackend(Base):\n    pass\n"
    ),
    "vllm/v1/attention/backends/mla/triton_mla.py": (
        "from vllm.model_executor.layers.attention.mla_attention import MLACommonBackend\n"
        "class TritonMLABackend(MLACommonBackend):\n"
        "    supported_kv_cache_dtypes: ClassVar[list[CacheDType]] = ['auto', 'fp8']\n"
    ),
    "vllm/v1/attention/backends/turboquant_attn.py": (
        "from vllm.v1.attention.backend import AttentionBackend\n"
        "class TurboQuantAttentionBackend(AttentionBackend):\n"
        "    supported_kv_cache_dtypes = ['never_read']\n"
        "    @classmethod\n"
        "    def supports_kv_cache_dtype(cls, kv_cache_dtype):\n"
        "        if kv_cache_dtype is None:\n"
        "            return False\n"
        "        return kv_cache_dtype.startswith('turboquant_')\n"
    ),
}
_CACHE = ["auto", "float16", "bfloat16", "fp8", "nvfp4", "turboquant_k8v4", "turboquant_3bit_nc"]


def test_each_rocm_backend_and_what_it_takes_is_read_as_python_would_resolve_it() -> None:
    """The backends the platform names, in its order, each with its own list, an inherited one,
    or what its own supports_kv_cache_dtype admits of CacheDType; a ROCm backend the registry
    names but the function does not is read too, a CUDA one is not."""
    from resolver.refresh.capabilities import rocm_attention

    files = dict(_FILES)
    files["vllm/v1/attention/backends/rocm_aiter_fa.py"] = (
        "class AiterFlashAttentionBackend(AttentionBackend):\n"
        "    supported_kv_cache_dtypes = ['auto', 'fp8']\n"
    )
    assert rocm_attention(files, _CACHE) == {
        "triton_mla": ["auto", "fp8"],
        "rocm_attn": ["auto", "float16", "bfloat16"],
        "turboquant": ["turboquant_k8v4", "turboquant_3bit_nc"],
        "rocm_aiter_fa": ["auto", "fp8"],
    }


@pytest.mark.parametrize(
    ("path", "text"),
    [
        # a backend whose file was not read: the others alone would refuse what it may take
        ("vllm/v1/attention/backends/rocm_attn.py", None),
        # a list that is not plain names
        (
            "vllm/v1/attention/backends/mla/triton_mla.py",
            "class TritonMLABackend(X):\n    supported_kv_cache_dtypes = list(OTHER)\n",
        ),
        # an override the evaluator does not know
        (
            "vllm/v1/attention/backends/turboquant_attn.py",
            (
                "class TurboQuantAttentionBackend(AttentionBackend):\n"
                "    @classmethod\n"
                "    def supports_kv_cache_dtype(cls, d):\n        return is_ok(d)\n"
            ),
        ),
        # a release before the validated selection (no _get_backend_priorities)
        ("vllm/platforms/rocm.py", "class RocmPlatform:\n    supported_quantization = []\n"),
    ],
)
def test_a_backend_rule_not_understood_claims_nothing_for_the_release(
    path: str, text: str | None
) -> None:
    from resolver.refresh.capabilities import rocm_attention

    files = dict(_FILES)
    if text is None:
        del files[path]
    else:
        files[path] = text
    assert rocm_attention(files, _CACHE) is None


def test_a_release_read_from_its_wheel_names_the_wheel() -> None:
    """0.15.0 has no sdist: its record names the PyPI wheel and its sha256, no sdist_sha256,
    and is the shipped record."""
    files = {"vllm/platforms/rocm.py": _PLATFORM}
    sha = "fd03371687568c511be2f9204932b3d76fd432ccaf4c19632cd53e98b0eb53c8"
    wheel = IndexFile(
        Version("0.15.0"), "vllm-0.15.0-cp38-abi3-manylinux_2_31_x86_64.whl", "", sha, None, None
    )
    record, _ = capability_record(wheel, files, ["gfx942"])
    assert record is not None and "sdist_sha256" not in record
    assert record["source"].startswith(f"PyPI wheel {wheel.filename} sha256 {sha} ")
    shipped = SHIPPED["0.15.0"]
    assert shipped["source"].startswith(f"PyPI wheel {wheel.filename} sha256 {sha} ")
    assert "bitsandbytes" not in shipped["quantization"] and "sdist_sha256" not in shipped


WHEEL = "vllm-0.15.0-cp38-abi3-manylinux_2_31_x86_64.whl"


def _wheel_index(upstream: Upstream) -> bytes:
    """The index page as PyPI answers for a release with wheels only, serving the recorded wheel
    slice under its own sha256."""
    data = (SLICES.parent / "wheel-capabilities" / WHEEL).read_bytes()
    upstream.overrides[f"/files/{WHEEL}"] = data
    entry = {
        "filename": WHEEL,
        "url": f"/files/{WHEEL}",
        "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
        "size": len(data),
    }
    page = {"meta": {"api-version": "1.1"}, "name": "vllm", "files": [entry]}
    upstream.overrides["/simple/vllm/"] = json.dumps(page).encode()
    return data


def _source() -> CapabilitiesSource:
    return CapabilitiesSource(
        HttpClient(cache_dir=None), Endpoints.from_env(), overlay.current_raw(), cache=None
    )


def test_a_release_with_only_wheels_is_read_from_its_wheel(
    upstream: Upstream, matrix_copy: Path
) -> None:
    """The refresh reads a release the index has no sdist of from its x86_64 wheel, into the
    record the data ships (the source names the wheel and the sha256 it was served with)."""
    data = _wheel_index(upstream)
    drop_records(matrix_copy / "capabilities.toml", "version", {"0.15.0"})
    result = _source().read()
    assert not result.refused, result.refused
    (cand,) = result.candidates
    sha = hashlib.sha256(data).hexdigest()
    assert cand.key == "0.15.0"
    assert cand.record["source"].startswith(f"PyPI wheel {WHEEL} sha256 {sha} ")
    want = dict(SHIPPED["0.15.0"])
    assert {k: v for k, v in cand.record.items() if k != "source"} == {
        k: v for k, v in want.items() if k != "source"
    }


def test_a_release_read_from_its_wheel_already_is_not_downloaded_again(
    upstream: Upstream,
) -> None:
    _wheel_index(upstream)
    result = _source().read()
    assert not result.candidates and not upstream.requests("/files/")
