"""The model fixtures of issue 37 (tests/fixtures/models/) stay what SOURCES.toml says they are.

Real Hugging Face config.json copies with a recorded source each, and public vLLM measurement
reports with their url and at least one logged number or error (see the files' headers).
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

MODELS = Path(__file__).parent / "fixtures" / "models"
SLUGS = sorted(p.name for p in MODELS.iterdir() if p.is_dir())
# The numbers a report may carry; one of them, or an error, makes it a measurement.
LOGGED = ("weights_gib", "kv_available_gib", "kv_tokens", "gpu_blocks", "max_concurrency")


def _toml(name: str) -> dict[str, Any]:
    with (MODELS / name).open("rb") as f:
        return tomllib.load(f)


def test_enough_fixtures() -> None:
    # Issue 37 asks for at least 25 real configs; 30 are kept now (a drop means one was lost).
    assert len(SLUGS) >= 30


@pytest.mark.parametrize("slug", SLUGS)
def test_fixture_is_a_config(slug: str) -> None:
    assert re.fullmatch(r"[a-z0-9._-]+", slug)
    for path in (MODELS / slug).iterdir():
        assert path.suffix == ".json", path  # config-type JSON only, never weights
        json.loads(path.read_text(encoding="utf-8"))
    config = json.loads((MODELS / slug / "config.json").read_text(encoding="utf-8"))
    assert isinstance(config, dict)
    assert "architectures" in config or "model_type" in config


@pytest.mark.parametrize("slug", SLUGS)
def test_fixture_has_a_source(slug: str) -> None:
    entry = _toml("SOURCES.toml")[slug]
    assert entry["hf_id"] and entry["source"] and entry["url"].startswith("https://")
    assert entry["form"] in ("verbatim", "python-literal", "page-transcribed")
    data = (MODELS / slug / "config.json").read_bytes()
    assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    if entry["form"] == "page-transcribed":
        # The page states the published file's size: a transcription must match it to the byte.
        assert entry["page_bytes"] == len(data)


def _quant_method(slug: str) -> str | None:
    """The checkpoint's quant_method, where a multimodal config nests it in text_config."""
    config = json.loads((MODELS / slug / "config.json").read_text(encoding="utf-8"))
    for where in (config, config.get("text_config") or {}):
        if "quantization_config" in where:
            return str(where["quantization_config"]["quant_method"])
    return None


def test_quantized_checkpoints_are_covered() -> None:
    # Issue 37: the weight sizing must meet each on-disk format vLLM reads; a lost one shows here.
    methods = {_quant_method(slug) for slug in SLUGS}
    assert {"fp8", "mxfp4", "compressed-tensors", "awq", "gptq"} <= methods


def test_compressed_tensors_w4a16() -> None:
    # kimi-k2.5 is the weight-only int4 compressed-tensors case (group 32, no activation scheme).
    text = json.loads((MODELS / "kimi-k2.5" / "config.json").read_text(encoding="utf-8"))
    q = text["text_config"]["quantization_config"]
    group = q["config_groups"]["group_0"]
    assert (q["format"], group["input_activations"]) == ("pack-quantized", None)
    assert (group["weights"]["num_bits"], group["weights"]["group_size"]) == (4, 32)


def test_every_source_has_a_fixture() -> None:
    listed = {k for k, v in _toml("SOURCES.toml").items() if isinstance(v, dict) and "source" in v}
    assert listed == set(SLUGS)


def test_reports_are_measurements() -> None:
    reports = _toml("reports.toml")["report"]
    assert len(reports) >= 15
    assert sum(1 for r in reports if r["fits"] is False) >= 4
    assert sum(1 for r in reports if r["amd"]) >= 4
    ids = [r["id"] for r in reports]
    assert len(ids) == len(set(ids))
    for r in reports:
        assert r["url"].startswith("https://github.com/"), r["id"]
        assert r["model"] and r["quote"].strip(), r["id"]
        assert any(k in r for k in LOGGED) or r.get("error"), r["id"]
        assert r["fixture"] == "" or r["fixture"] in SLUGS, r["id"]
