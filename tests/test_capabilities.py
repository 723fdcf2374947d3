"""issue 20: what each release's ROCm platform accepts is read from its sdist
(capabilities.toml), not kept in code; the solver checks it per candidate."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from resolver.data import matrix
from resolver.data.node import from_flags
from resolver.solve import OK_VERDICTS, Request, solve
from resolver.solve.finding import Phrase
from resolver.solve.types import RequestError
from resolver.util.errors import InputError
from resolver.util.versions import parse_spec
from tests.helpers import said

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
    why = reason.message.value("why")
    assert isinstance(why, Phrase) and why.key == "quantization-not-listed/removed"
    assert (why.value("after"), why.value("method")) == (Version("0.28.0"), "bitsandbytes")
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
    with pytest.raises(RequestError) as err:
        solve(M, MI300, Request(quantization="bitsandbyte"))
    assert "bitsandbytes" in str(err.value.said_hint.value("near"))


METHODS = sorted({q for c in M.capabilities for q in c.quantization})


def planned_release(method: str, gfx: str) -> Version | None:
    """The release a usable plan picks for ``method`` on one ``gfx`` GPU, or None (no plan, or
    the method is bad input)."""
    node = from_flags(gfx=gfx, gpus=1, driver="30.30.3", os="ubuntu-22.04", rocm=None, python=None)
    try:
        d = solve(M, node, Request(quantization=method))
    except InputError:
        return None
    if d.plan is None or d.verdict not in OK_VERDICTS:
        return None
    return d.plan.candidate.vllm


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(METHODS), st.sampled_from(["gfx942", "gfx90a", "gfx1100", "gfx950"]))
def test_no_plan_uses_a_method_its_release_does_not_list(method: str, gfx: str) -> None:
    """The rule the data states, property-tested: a plan's release lists the method."""
    release = planned_release(method, gfx)
    caps = M.capabilities_of(release) if release is not None else None
    assert caps is None or method in caps.quantization


def test_kv_cache_dtypes_are_read_per_release_too() -> None:
    caps = M.capabilities_of(Version("0.33.0"))
    assert caps is not None and {"auto", "fp8", "fp8_e4m3"} <= set(caps.kv_cache_dtypes)
    with pytest.raises(RequestError) as err:
        solve(M, MI300, Request(kv_cache_dtype="fp8_e4m"))
    assert "fp8_e4m3" in str(err.value.said_hint.value("near"))
    # bfloat16 is no CacheDType of 0.10.1.1: that release is rejected for it, newer ones are not.
    d = solve(M, MI300, Request(kv_cache_dtype="bfloat16", vllm=parse_spec("==0.10.1.1")))
    assert any(r.code == "kv-cache-dtype-not-listed" for r in d.blockers)


def test_fp8_on_a_gpu_the_release_does_not_enable_names_the_release_that_does() -> None:
    mi210 = from_flags(
        gfx="gfx90a", gpus=1, driver="30.30.3", os="ubuntu-22.04", rocm=None, python=None
    )
    d = solve(M, mi210, Request(quantization="fp8", vllm=parse_spec("==0.10.1.1")))
    (reason,) = [r for r in d.blockers if r.code == "fp8-not-admitted"]
    assert (
        reason.message.key == "fp8-not-admitted/later" and "vllm/platforms/rocm.py" in reason.source
    )
    assert reason.message.value("refused") == "gfx90a"
    # the hint names the first release that admits it, a 0.x vLLM of the data
    assert reason.hint.value("release") == Version("0.20.0")


def test_fp8_admitted_without_hardware_says_what_runs() -> None:
    """0.33.0 admits FP8 on RDNA3 (supports_fp8 is on_cdna() or on_rdna()), but its own FP8
    GEMM gate leaves gfx11 out: the answer says that nothing FP8 runs there, from the sdist."""
    w7900 = from_flags(
        gfx="gfx1100", gpus=1, driver="30.30.3", os="ubuntu-22.04", rocm=None, python=None
    )
    d = solve(M, w7900, Request(quantization="fp8", vllm=parse_spec("==0.33.0")))
    assert d.plan is None
    reason = next(r for r in d.blockers if r.code == "fp8-unsupported")
    (clause,) = reason.message.then  # admitted, but no FP8 GEMM and no weight-only kernel
    assert clause.key == "fp8-unsupported/no-kernel" and clause.value("vllm") == Version("0.33.0")
    assert "_rocm_torch_fp8_scaled_mm_supported" in reason.source
    # 0.20.0 does not admit FP8 on gfx1100 at all: no claim about its kernels.
    old = solve(M, w7900, Request(quantization="fp8", vllm=parse_spec("==0.20.0")))
    reason = next(r for r in old.blockers if r.code == "fp8-unsupported")
    assert reason.message.key == "fp8-unsupported" and reason.message.then == ()


def test_fp8_format_and_custom_allreduce_are_the_planned_releases_own_rules() -> None:
    d = solve(M, MI300, Request(quantization="fp8"))
    assert d.plan is not None
    version = str(d.plan.candidate.vllm)
    (fmt,) = [w for w in d.warnings if w.code == "fp8-format"]
    assert fmt.message.key == "fp8-format/fnuz"
    assert f"vllm {version} sdist" in said(fmt.source) and "is_fp8_fnuz" in said(fmt.source)
    r9700x2 = from_flags(
        gfx="gfx1201", gpus=2, driver="30.30.3", os="ubuntu-24.04", rocm=None, python=None
    )
    d = solve(M, r9700x2, Request())
    assert d.plan is not None
    (off,) = [w for w in d.warnings if w.code == "custom-allreduce-off"]
    assert f"vllm {d.plan.candidate.vllm} sdist" in said(off.source)
    assert not [w for w in solve(M, MI300, Request()).warnings if w.code == "custom-allreduce-off"]


FP8_METHODS = sorted({"fp8", "ptpc_fp8", "fbgemm_fp8"} & set(METHODS))
GFX = sorted({g.name for g in M.gfx})


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(FP8_METHODS), st.sampled_from(GFX))
def test_no_fp8_plan_where_the_release_or_the_hardware_refuses_it(method: str, gfx: str) -> None:
    """The FP8 rules the data states, property-tested: a plan's release admits FP8 on the GPU
    (its supports_fp8) and the GPU has FP8 units."""
    release = planned_release(method, gfx)
    if release is None:
        return
    target = M.gfx_target(gfx)
    assert target is not None and target.features.fp8
    gate = M.gate(release, "fp8", gfx)
    assert gate is None or gate[0]


def test_mxfp4_runs_emulated_where_the_releases_kernel_table_says_so() -> None:
    """gfx1100 has no MX compute and no recipe names it, but 0.33.0's ROCm kernel table for
    MXFP4 ends in EmulationMxfp4LinearKernel: a plan, with the note saying how it runs. A
    release whose table was never read keeps the hardware gate."""
    w7900 = from_flags(
        gfx="gfx1100", gpus=1, driver="30.30.3", os="ubuntu-22.04", rocm=None, python=None
    )
    d = solve(M, w7900, Request(quantization="mxfp4", vllm=parse_spec("==0.33.0")))
    assert d.plan is not None and d.verdict in OK_VERDICTS
    (w,) = [w for w in d.warnings if w.code == "mxfp4-emulated"]
    assert w.message.value("kernel") == "EmulationMxfp4LinearKernel"
    assert "kernels/linear/__init__.py" in said(w.source)
    caps = M.capabilities_of(Version("0.10.1.1"))
    assert caps is not None and caps.rocm_kernels is None
    old = solve(M, w7900, Request(quantization="mxfp4", vllm=parse_spec("==0.10.1.1")))
    assert old.plan is None


# --- issue 34: what the ROCm attention backends take, and the releases read from wheels -------


def test_a_kv_cache_dtype_no_rocm_backend_accepts_is_refused() -> None:
    """nvfp4 is in 0.33.0's CacheDType (platform-wide), but no ROCm attention backend takes it:
    vLLM stops with "No valid attention backend found". No release runs it on ROCm."""
    pinned = solve(M, MI300, Request(kv_cache_dtype="nvfp4", vllm=parse_spec("==0.33.0")))
    assert pinned.plan is None and pinned.verdict == "unsupported"
    (reason,) = [r for r in pinned.blockers if r.code == "kv-cache-dtype-no-backend"]
    assert "_get_backend_priorities" in reason.source and "vllm 0.33.0 sdist" in reason.source
    for dtype in ("nvfp4", "nvfp4_4over6", "nvfp4_ds_mla"):
        assert solve(M, MI300, Request(kv_cache_dtype=dtype)).verdict not in OK_VERDICTS


def test_a_dtype_only_a_model_picked_rocm_backend_takes_is_not_refused() -> None:
    """fp8_ds_mla is taken by DeepSeek V4's ROCm sparse MLA backends (the registry's ROCM_*
    ones, picked by the model, not by _get_backend_priorities)."""
    caps = M.capabilities_of(Version("0.33.0"))
    assert caps is not None and caps.attention_backends("fp8_ds_mla")
    d = solve(M, MI300, Request(kv_cache_dtype="fp8_ds_mla", vllm=parse_spec("==0.33.0")))
    assert d.plan is not None and d.verdict in OK_VERDICTS


def test_a_release_whose_backends_were_not_read_is_not_judged_by_them() -> None:
    """Before 0.18.0 vLLM's ROCm selection did not validate the KV cache dtype per backend: no
    backend table, no kv-cache-dtype-no-backend."""
    caps = M.capabilities_of(Version("0.16.0"))
    assert caps is not None and caps.rocm_attention is None
    d = solve(M, MI300, Request(kv_cache_dtype="fp8_ds_mla", vllm=parse_spec("==0.16.0")))
    assert not any(r.code == "kv-cache-dtype-no-backend" for r in d.blockers)


def test_a_release_older_than_every_read_list_predates_a_newer_dtype() -> None:
    """0.8.3's dtypes were never read (CacheDType came later), but the oldest list read, 0.8.5's,
    lacks nvfp4: vLLM only ever added KV cache dtypes, so 0.8.3 has no nvfp4 either."""
    d = solve(M, MI300, Request(kv_cache_dtype="nvfp4", vllm=parse_spec("==0.8.3")))
    assert d.plan is None
    reason = next(r for r in d.blockers if r.code == "kv-cache-dtype-not-listed")
    assert "vllm 0.8.5 sdist" in reason.source
    kept = solve(M, MI300, Request(kv_cache_dtype="fp8", vllm=parse_spec("==0.8.3")))
    assert not any(r.code == "kv-cache-dtype-not-listed" for r in kept.blockers)


KV_DTYPES = sorted({d for c in M.capabilities for d in c.kv_cache_dtypes})


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(KV_DTYPES), st.sampled_from(["gfx942", "gfx90a", "gfx1100", "gfx950"]))
def test_no_plan_uses_a_kv_cache_dtype_no_rocm_backend_of_its_release_takes(
    dtype: str, gfx: str
) -> None:
    """The rule the data states, property-tested: a plan's release names the dtype and, where
    its backends were read, one of them accepts it."""
    node = from_flags(gfx=gfx, gpus=1, driver="30.30.3", os="ubuntu-22.04", rocm=None, python=None)
    d = solve(M, node, Request(kv_cache_dtype=dtype))
    if d.plan is None or d.verdict not in OK_VERDICTS:
        return
    caps = M.capabilities_of(d.plan.candidate.vllm)
    if caps is None or not caps.kv_cache_dtypes:
        return
    assert dtype in caps.kv_cache_dtypes
    assert caps.attention_backends(dtype) != ()


def test_a_release_with_no_sdist_is_read_from_its_wheel() -> None:
    """0.15.0 has only wheels on the index: its record comes from the x86_64 wheel (named with
    its sha256), and bitsandbytes, which its platform file does not list, is refused there."""
    caps = M.capabilities_of(Version("0.15.0"))
    assert caps is not None and "bitsandbytes" not in caps.quantization
    assert caps.sdist_sha256 is None
    assert caps.provenance.source.startswith(
        "PyPI wheel vllm-0.15.0-cp38-abi3-manylinux_2_31_x86_64.whl sha256 fd0337168756"
    )
    d = solve(M, MI300, Request(quantization="bitsandbytes", vllm=parse_spec("==0.15.0")))
    assert d.plan is None
    (reason,) = [r for r in d.blockers if r.code == "quantization-not-listed"]
    assert "PyPI wheel" in reason.source
