"""issue 20: what each release's ROCm platform accepts is read from its sdist
(capabilities.toml), not kept in code; the solver checks it per candidate."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from resolver import matrix
from resolver.errors import InputError
from resolver.node import from_flags
from resolver.solve import OK_VERDICTS, Request, solve
from resolver.versions import parse_spec

from .conftest import LIVE_MATRIX

M = matrix.load_dir(LIVE_MATRIX)
MI300 = from_flags(
    gfx="gfx942", gpus=8, driver="30.30.3", os="ubuntu-22.04", rocm=None, python=None
)


def test_a_dropped_method_plans_the_newest_release_that_lists_it() -> None:
    d = solve(M, MI300, Request(quantization="bitsandbytes"))
    assert d.plan is not None and d.plan.candidate.vllm == Version("0.27.1")
    pinned = solve(M, MI300, Request(quantization="bitsandbytes", vllm=parse_spec("==0.33.0")))
    assert pinned.plan is None
    (reason,) = [r for r in pinned.blockers if r.code == "quantization-not-listed"]
    assert "vLLM 0.28.0 removed bitsandbytes" in reason.message
    assert "vllm/platforms/rocm.py" in reason.source


def test_a_method_added_later_is_not_bad_input() -> None:
    d = solve(M, MI300, Request(quantization="modelopt_mxfp8"))
    rejected = {
        e.candidate.vllm
        for e in d.rejected
        if any(r.code == "quantization-not-listed" for r in e.reasons)
    }
    assert Version("0.20.2") in rejected and Version("0.21.0") not in rejected


def test_a_method_no_release_lists_is_bad_input_with_the_nearest_names() -> None:
    with pytest.raises(InputError) as err:
        solve(M, MI300, Request(quantization="bitsandbyte"))
    assert "bitsandbytes" in err.value.hint


METHODS = sorted({q for c in M.capabilities for q in c.quantization})


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(METHODS), st.sampled_from(["gfx942", "gfx90a", "gfx1100", "gfx950"]))
def test_no_plan_uses_a_method_its_release_does_not_list(method: str, gfx: str) -> None:
    """The rule the data states, property-tested: a plan's release lists the method."""
    node = from_flags(gfx=gfx, gpus=1, driver="30.30.3", os="ubuntu-22.04", rocm=None, python=None)
    try:
        d = solve(M, node, Request(quantization=method))
    except InputError:
        return
    if d.plan is None or d.verdict not in OK_VERDICTS:
        return
    caps = M.capabilities_of(d.plan.candidate.vllm)
    assert caps is None or method in caps.quantization


def test_kv_cache_dtypes_are_read_per_release_too() -> None:
    caps = M.capabilities_of(Version("0.33.0"))
    assert caps is not None and {"auto", "fp8", "fp8_e4m3"} <= set(caps.kv_cache_dtypes)
    with pytest.raises(InputError) as err:
        solve(M, MI300, Request(kv_cache_dtype="fp8_e4m"))
    assert "fp8_e4m3" in err.value.hint
    # bfloat16 is no CacheDType of 0.10.1.1: that release is rejected for it, newer ones are not.
    d = solve(M, MI300, Request(kv_cache_dtype="bfloat16", vllm=parse_spec("==0.10.1.1")))
    assert any(r.code == "kv-cache-dtype-not-listed" for r in d.blockers)


def test_fp8_on_a_gpu_the_release_does_not_enable_names_the_release_that_does() -> None:
    mi210 = from_flags(
        gfx="gfx90a", gpus=1, driver="30.30.3", os="ubuntu-22.04", rocm=None, python=None
    )
    d = solve(M, mi210, Request(quantization="fp8", vllm=parse_spec("==0.10.1.1")))
    (reason,) = [r for r in d.blockers if r.code == "fp8-not-admitted"]
    assert "supports_fp8" in reason.message and "vllm/platforms/rocm.py" in reason.source
    assert reason.hint.startswith("pick vLLM 0.")
