"""--model in the solver (issue 37): the release's registry, ROCm's attention backends and the
memory fit decide, for every fixture on every GPU the issue names, and the what-if search
answers "more GPUs" for a model that does not fit. Real configs: tests/fixtures/models/."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from resolver.data import matrix
from resolver.data.hfmodel import read_model
from resolver.data.node import Node, from_flags
from resolver.solve import Request, solve
from resolver.solve.modelspec import ModelRequest
from resolver.solve.routes import search
from resolver.solve.types import RequestError
from resolver.util.versions import parse_spec

FIXTURES = Path(__file__).parent / "fixtures" / "models"
SLUGS = sorted(p.parent.name for p in FIXTURES.glob("*/config.json"))
GFX = ("gfx942", "gfx950", "gfx90a", "gfx1100", "gfx1201", "gfx1151")
GiB = 1024**3


def model(slug: str, **knobs: object) -> ModelRequest:
    path = FIXTURES / slug / "config.json"
    return ModelRequest(spec=str(path), config=read_model(str(path)), **knobs)  # type: ignore[arg-type]


def amd(gfx: str, gpus: int = 1, vram: int | None = None) -> Node:
    node = from_flags(gfx=gfx, gpus=gpus, driver="30.30.3", os=None, rocm=None, python=None)
    if vram is None:
        return node
    return msgspec.structs.replace(
        node, gpus=tuple(msgspec.structs.replace(g, vram_bytes=vram) for g in node.gpus)
    )


def h200(gpus: int = 1) -> Node:
    device = {
        "vendor": "nvidia",
        "kind": "GPU",
        "name": "NVIDIA H200",
        "pci_device_id": "2335",
        "compute_capability": "9.0",
        "vram_bytes": 150754820096,  # the lent H200's nvidia-smi memory.total (143771 MiB)
        "driver": "580.65.06",
    }
    return Node(
        gpus=(),
        gfx_targets=(),
        physical_gpu_count=gpus,
        logical_gpu_count=gpus,
        os="ubuntu-24.04",
        python="3.12",
        host={"other_devices": [device] * gpus, "nvidia": {"driver": "580.65.06"}},
    )


@pytest.mark.parametrize("slug", SLUGS)
def test_every_fixture_is_answered_on_every_gpu_the_issue_names(slug: str) -> None:
    """Architecture, quantization, attention path and fit for every fixture on gfx942, gfx950,
    gfx90a, gfx1100, gfx1201, gfx1151 and an NVIDIA H200: an answer, never a crash; a fit or
    the reason it could not be sized."""
    m = matrix.load()
    mr = model(slug)
    for node in (*(amd(g, 8) for g in GFX), h200(8)):
        d = solve(m, node, Request(model=mr))
        a = d.model
        assert a is not None and a.architecture == (mr.config.architectures or (None,))[0]
        # sized, or said why not: GPU memory unknown (an APU), or nothing fits the node
        too_big = any(r.code == "model-does-not-fit" for e in d.rejected for r in e.reasons)
        assert a.fit is not None or a.memory is None or too_big, (slug, node.gfx_targets)
        if a.fit is not None:
            assert a.fit.tensor_parallel_size <= 8 and a.fit.kv_cache_bytes_per_token > 0
            assert a.table and all(f.gpus <= 8 for f in a.table)


def test_a_model_too_big_for_the_node_is_blocked_and_more_gpus_open_it() -> None:
    """Llama 3.1 405B on one MI300X: its weights alone exceed the GPU. Not `unsupported`: a host
    change opens it, and the what-if search, solving again, finds the GPU count that fits."""
    m = matrix.load()
    d = solve(m, amd("gfx942", 1, vram=192 * GiB), Request(model=model("llama-3.1-405b")))
    assert d.verdict == "blocked_host_fix" and d.plan is None
    (blocker,) = [r for r in d.blockers if r.code == "model-does-not-fit"]
    assert blocker.fix is not None and blocker.fix.change is not None
    assert blocker.fix.change.kind == "gpus"
    need = int(blocker.fix.change.value)
    assert d.model is not None and d.model.min_gpus == need and need > 1
    routes = search(m, d)
    assert routes.host and routes.host[0].host_changes[0].kind == "gpus"
    opened = routes.host[0].after
    assert opened is not None and opened.plan is not None and opened.model is not None
    assert opened.model.fit is not None and opened.model.fit.fits


def test_the_default_context_is_capped_where_a_shorter_one_fits() -> None:
    """Llama 3.1 8B (131072 tokens) on one 24 GiB GPU: the weights fit, the full context's KV
    cache does not. The plan stands with the longest context that fits; pinning the full
    context (vLLM's --max-model-len) is what does not fit, and more GPUs are its fix."""
    m = matrix.load()
    node = amd("gfx1100", 1, vram=24 * GiB)
    d = solve(m, node, Request(model=model("llama-3.1-8b")))
    assert d.plan is not None
    (capped,) = [w for w in d.warnings if w.code == "model-context-capped"]
    assert d.model is not None and d.model.fit is not None
    largest = d.model.fit.largest_max_model_len
    assert 0 < largest < 131072 and capped.message.value("largest") == largest
    pinned = solve(m, node, Request(model=model("llama-3.1-8b", max_model_len=131072)))
    assert pinned.plan is None
    (too_long,) = [r for r in pinned.blockers if r.code == "model-context-too-long"]
    assert too_long.fix is not None and too_long.fix.change is not None
    assert too_long.fix.change.kind == "gpus"
    shorter = solve(m, node, Request(model=model("llama-3.1-8b", max_model_len=largest)))
    assert shorter.plan is not None and not any(
        w.code == "model-context-capped" for w in shorter.warnings
    )


def test_the_checkpoint_quantization_is_the_request_and_the_gpu_gates_judge_it() -> None:
    """An FP8 checkpoint on gfx90a (no hardware FP8) is refused by the FP8 gate even when its
    method's name (ModelOpt) does not say FP8; on gfx942 it plans. A --quantization that
    contradicts the checkpoint is bad input."""
    m = matrix.load()
    for slug in ("qwen3-32b-fp8", "llama-3.1-70b-instruct-fp8-nvidia"):
        no = solve(m, amd("gfx90a", 8), Request(model=model(slug)))
        assert no.plan is None and "fp8-unsupported" in {r.code for r in no.blockers}, slug
        yes = solve(m, amd("gfx942", 8), Request(model=model(slug)))
        assert yes.plan is not None, slug
        assert yes.request.quantization == model(slug).config.quantization.method  # type: ignore[union-attr]
    with pytest.raises(RequestError) as bad:
        solve(m, amd("gfx942", 8), Request(model=model("qwen3-32b-fp8"), quantization="awq"))
    assert bad.value.said.key == "request/quantization-contradicts"
    assert bad.value.exit_code == 2


def test_a_tensor_parallel_size_vllm_would_refuse_is_bad_input() -> None:
    m = matrix.load()
    mr = model("llama-3.1-70b", tensor_parallel_size=3)  # 64 heads, 8 KV heads
    with pytest.raises(RequestError) as bad:
        solve(m, amd("gfx942", 8), Request(model=mr))
    assert bad.value.said.key == "request/tp-invalid"
    assert "8" in bad.value.said_hint.value("valid")  # type: ignore[union-attr, operator]


def test_an_architecture_a_release_lacks_names_the_first_that_has_it() -> None:
    """Qwen3-Next on a release before its class landed: that release cannot run it, and the
    first release whose registry lists it is the fix."""
    m = matrix.load()
    mr = model("qwen3-next-80b-a3b-thinking")
    first = m.first_release_with("Qwen3NextForCausalLM")
    assert first is not None
    older = max(r.version for r in m.vllm if r.version < first and r.stacks)
    d = solve(m, amd("gfx942", 8), Request(model=mr, vllm=parse_spec(f"=={older}")))
    reasons = [
        r for e in d.rejected for r in e.reasons if r.code == "model-architecture-unsupported"
    ]
    assert reasons and all(r.fix is not None and r.fix.kind == "vllm" for r in reasons)
    assert reasons[0].message.value("first") == first


def test_the_fit_is_sized_at_the_release_s_own_memory_default() -> None:
    """0.33.0 reserves 0.92 of the GPU by default (its sdist), 0.19.1 0.9: the same model on the
    same GPU has a larger KV budget on the newer release; --gpu-memory-utilization pins it."""
    m = matrix.load()
    node = amd("gfx942", 1, vram=192 * GiB)
    fits = {}
    for v in ("0.33.0", "0.19.1"):
        d = solve(m, node, Request(model=model("llama-3.1-70b"), vllm=parse_spec(f"=={v}")))
        assert d.model is not None and d.model.fit is not None, v
        fits[v] = d.model.fit
    assert fits["0.33.0"].gpu_memory_utilization == 0.92
    assert fits["0.19.1"].gpu_memory_utilization == 0.9
    assert fits["0.33.0"].kv_budget_bytes > fits["0.19.1"].kv_budget_bytes
    pinned = solve(m, node, Request(model=model("llama-3.1-70b", gpu_memory_utilization=0.8))).model
    assert pinned is not None and pinned.fit is not None
    assert pinned.fit.gpu_memory_utilization == 0.8


def test_without_model_nothing_of_it_is_imported_or_answered() -> None:
    """A check without --model pays nothing for it: no model section, no model modules."""
    import subprocess
    import sys

    code = (
        "import sys; from resolver.data import matrix; from resolver.data.node import from_flags;"
        "from resolver.solve import Request, solve;"
        "n = from_flags(gfx='gfx942', gpus=1, driver='30.30.3', os=None, rocm=None, python=None);"
        "d = solve(matrix.load(), n, Request()); assert d.model is None;"
        "bad = [m for m in ('resolver.solve.model', 'resolver.solve.fit', 'resolver.data.hfmodel')"
        " if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_apu_is_sized_on_its_gtt_pool_and_the_fix_is_the_gtt_limit() -> None:
    """Strix Halo (gfx1151): the GPU's memory is system RAM mapped through GTT, half the RAM by
    default (the recorded rocminfo of ROCm/ROCm#5817: a 65507932 KB pool). gpt-oss-120b does not
    fit that pool; more GPUs is not the answer, a larger GTT limit (ttm.pages_limit) is, and the
    what-if search, solving again with it, opens the plan. (The shipped data: the frozen copy
    predates gfx1151's inbox driver and MXFP4 rules.)"""
    from tests.conftest import LIVE_MATRIX

    m = matrix.load_dir(LIVE_MATRIX)
    pool = 65507932 * 1024
    d = solve(m, amd("gfx1151", 1, vram=pool), Request(model=model("gpt-oss-120b")))
    assert d.verdict == "blocked_host_fix"
    (blocker,) = [r for r in d.blockers if r.code == "model-does-not-fit"]
    assert blocker.hint.key == "model-does-not-fit/gtt"
    assert blocker.fix is not None and blocker.fix.change is not None
    assert blocker.fix.change.kind == "gtt" and int(blocker.fix.change.value) * GiB > pool
    routes = search(m, d)
    assert routes.host and routes.host[0].host_changes[0].kind == "gtt"
    after = routes.host[0].after
    assert after is not None and after.plan is not None and after.model is not None
    assert after.model.memory is not None and after.model.memory.unified
    assert any(n.key == "model-note/unified" for n in after.model.notes)
    small = solve(m, amd("gfx1151", 1, vram=pool), Request(model=model("gpt-oss-20b")))
    assert small.plan is not None and small.model is not None and small.model.fit is not None


def test_a_partition_is_sized_as_a_partition_even_without_its_product() -> None:
    """An MI300X in CPX/NPS4 whose product the node does not name: one logical GPU is one
    partition's share (AMD's partitioning guide: 24 GB), never the whole GPU's 192 GB."""
    from resolver.solve.model import gpu_memory

    from .helpers import cpx_node

    memory = gpu_memory(matrix.load(), cpx_node())
    assert memory is not None and memory.bytes < 32 * GiB
    assert memory.source.key == "fit/memory-assumed-partition"
