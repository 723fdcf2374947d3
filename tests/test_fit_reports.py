"""The memory fit against what vLLM logged in public threads (issue 37, "Data and accuracy").

Every report is in tests/fixtures/models/reports.toml with its url and exact log lines. For each
report whose model has a fixture config:

- (a) weights within 3% of "Loading model weights took" / "Model loading took", where the
  report's numbers are complete (judged in tests/test_fit.py);
- (b) KV tokens within 5% of "GPU KV cache size" / the max-seq-len error's token count, given the
  report's own available KV memory (``logged_kv_tokens``; judged in tests/test_fit.py);
- (c) every "does not fit" report is run through the solver on the node it ran on, with the
  report's own knobs, and the decision must carry the matching model finding; a report the
  engine cannot judge honestly is in ``NOT_JUDGED`` with the reason and skipped explicitly.

Summary (docs/model-fit.md "Accuracy" has the table with the error per report): 41 reports,
10 on AMD GPUs, 32 "does not fit". Weights: 3 cases, all within 0.3%. KV tokens: 3 cases, all
within 1.1%. Does not fit: 1 predicted (model-context-capped / model-context-too-long), 2
missed (gpt-oss-120b on H100: strict xfail, an engine error), 5 not judged with a fixture
(activation or graph OOM, a V0 engine, a checkpoint whose config is not kept), 24 without a
fixture.
"""

from __future__ import annotations

from typing import Any

import pytest

from resolver.data import matrix
from resolver.data.hfmodel import read_model
from resolver.data.node import Node
from resolver.solve import Decision, Request, solve
from resolver.solve.modelspec import ModelRequest

# The reports, the fixtures and their readers are test_fit.py's (one copy of each).
from .test_fit import (
    KV_CASES,
    MODELS,
    REPORTS,
    RTX_3090,
    WEIGHT_CASES,
)

BY_ID = {r["id"]: r for r in REPORTS}


# --- the collection itself ---------------------------------------------------------------------


def test_the_collection_meets_the_issue_s_bar() -> None:
    """40+ reports, 10+ that do not fit, 10+ on AMD GPUs; every one with a url, a quote and the
    fields the issue asks for ("unknown" where the report does not say)."""
    assert len(REPORTS) >= 40
    assert sum(r["fits"] is False for r in REPORTS) >= 10
    assert sum(r["amd"] is True for r in REPORTS) >= 10
    assert len(BY_ID) == len(REPORTS)
    needed = (
        "url",
        "quote",
        "model",
        "fixture",
        "vllm_version",
        "gpu",
        "tensor_parallel_size",
        "dtype",
        "quantization",
        "kv_cache_dtype",
        "max_model_len",
        "gpu_memory_utilization",
    )
    for r in REPORTS:
        assert all(k in r for k in needed), r["id"]
        assert r["url"].startswith("https://github.com/") and r["quote"].strip(), r["id"]
        assert isinstance(r["fits"], bool), r["id"]
        assert not r["fixture"] or (MODELS / r["fixture"] / "config.json").is_file(), r["id"]


# --- (a) weights and (b) KV tokens: tests/test_fit.py (test_weights_within_3_percent,
# test_kv_tokens_within_5_percent) judges the same reports; the bar is held here ---------------


def test_there_are_cases() -> None:
    assert len(WEIGHT_CASES) >= 3 and len(KV_CASES) >= 3


# --- (c) every "does not fit" predicted, or said why it cannot be judged -----------------------

# Reports with a fixture that the engine cannot judge honestly, with the reason.
NOT_JUDGED: dict[str, str] = {
    "vllm-10517-llama31-8b-3090-29k": (
        "V0 engine: it profiled a batch of max_model_len tokens (no chunked prefill), an "
        "activation peak the solver's V1 allowance does not model; tests/test_fit.py judges it "
        "with the V0 allowance"
    ),
    "vllm-34076-qwen3-coder-30b-fp8-pp2": (
        "uneven pipeline stages (VLLM_PP_LAYER_PARTITION=16,32) over a 16 GB and a 32 GB GPU, "
        "and an FP8 checkpoint whose config is not kept (the fixture is bf16)"
    ),
    "vllm-6746-llama31-405b-fp8-8xh100": (
        "the FP8 checkpoint's config is not kept (the fixture is bf16) and the failure's cause "
        "is past the excerpt read"
    ),
    "vllm-17327-qwen3-30b-a3b-4xa10": (
        "an OOM in CUDA graph capture (it runs with enforce-eager), not weights or KV"
    ),
    "vllm-41695-qwen3-coder-30b-fp8-5090": (
        "the FP8 checkpoint's config is not kept (the fixture is bf16, twice the weights)"
    ),
}

NV_DRIVER = "580.65.06"


def _nvidia(pci: str, cc: str, gpus: int, vram: int | None = None) -> Node:
    """An NVIDIA node; without ``vram`` the solver sizes the GPU from its matrix record."""
    device: dict[str, Any] = {
        "vendor": "nvidia",
        "kind": "GPU",
        "pci_device_id": pci,
        "compute_capability": cc,
        "driver": NV_DRIVER,
    }
    if vram is not None:
        device["vram_bytes"] = vram
    return Node(
        gpus=(),
        gfx_targets=(),
        physical_gpu_count=gpus,
        logical_gpu_count=gpus,
        os="ubuntu-24.04",
        python="3.12",
        host={"other_devices": [device] * gpus, "nvidia": {"driver": NV_DRIVER}},
    )


# The node each judged report ran on, the knobs the report pinned, and the finding expected.
# subgraphrag-19: vLLM counted 39024 tokens, one 3090's worth at TP 1 (the thread does not
# say TP 2 was used); the context was vLLM's default, not pinned, so the answer is a cap.
# H100 (pci 2330): the report does not say 80 or 94 GB; the smaller record is the one judged.
JUDGED: dict[str, tuple[Node, dict[str, Any], str]] = {
    "subgraphrag-19-llama31-8b-2x3090": (
        _nvidia("2204", "8.6", 1, RTX_3090),
        {"tensor_parallel_size": 1},
        "model-context-capped",
    ),
    "vllm-23278-gpt-oss-120b-h100": (_nvidia("2330", "9.0", 1), {}, "model-does-not-fit"),
    "vllm-27508-gpt-oss-120b-h100": (
        _nvidia("2330", "9.0", 1),
        {"gpu_memory_utilization": 0.95},
        "model-does-not-fit",
    ),
}

ENGINE_MISSES = {
    "vllm-23278-gpt-oss-120b-h100": (
        "engine error: vLLM logged 65.97 GiB of weights for the MXFP4 checkpoint on Hopper "
        "(Marlin weight-only FP4 repacks and pads the experts) against ~60.7 GiB of checkpoint, "
        "and a larger profiling peak than ALLOWANCE's formula; the fit leaves ~9.8 GiB of KV"
    ),
    "vllm-27508-gpt-oss-120b-h100": (
        "engine error: as vllm#23278 (MXFP4 on Hopper's Marlin layout and profiling peak not "
        "modelled); vLLM had 1.71 GiB of KV at 0.95, the fit predicts ~12 GiB"
    ),
}

NOT_FITTING = [r for r in REPORTS if r["fits"] is False]


def test_every_does_not_fit_report_is_judged_or_said_why_not() -> None:
    """No report is dropped silently: one with a fixture is judged or in NOT_JUDGED."""
    with_fixture = {r["id"] for r in NOT_FITTING if r["fixture"]}
    assert with_fixture == set(JUDGED) | set(NOT_JUDGED)
    assert not set(JUDGED) & set(NOT_JUDGED)


def _codes(d: Decision) -> set[str]:
    found = {r.code for e in d.rejected for r in e.reasons}
    found |= {r.code for r in d.blockers}
    return found | {w.code for w in d.warnings}


def _param(r: dict[str, Any]) -> Any:
    if not r["fixture"]:
        return pytest.param(r, id=r["id"], marks=pytest.mark.skip(reason="no fixture config"))
    if r["id"] in NOT_JUDGED:
        return pytest.param(r, id=r["id"], marks=pytest.mark.skip(reason=NOT_JUDGED[r["id"]]))
    if r["id"] in ENGINE_MISSES:
        reason = ENGINE_MISSES[r["id"]]
        return pytest.param(r, id=r["id"], marks=pytest.mark.xfail(strict=True, reason=reason))
    return pytest.param(r, id=r["id"])


@pytest.mark.parametrize("report", [_param(r) for r in NOT_FITTING])
def test_does_not_fit_is_predicted(report: dict[str, Any]) -> None:
    node, knobs, expected = JUDGED[report["id"]]
    path = MODELS / report["fixture"] / "config.json"
    mr = ModelRequest(spec=str(path), config=read_model(str(path)), **knobs)
    d = solve(matrix.load(), node, Request(model=mr))
    assert expected in _codes(d), (expected, sorted(_codes(d)))
    # the decision's model answer agrees: at the context asked for, no fit on this node
    assert d.model is not None
    assert d.model.fit is None or not d.model.fit.fits
