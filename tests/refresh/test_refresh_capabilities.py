"""Each release's ROCm quantization list, read from its sdist's vllm/platforms/rocm.py (issue
20): the shipped records are what the real files say, and a file that is not a plain list of
names claims nothing."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.version import Version

from resolver.refresh.capabilities import WANTED, capability_record, supported_quantization
from resolver.refresh.sdist import IndexFile, read_members

from .conftest import REPO_MATRIX

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
