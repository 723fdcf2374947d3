"""What the shipped data (matrix/) answers today: smoke tests of the newest facts.

The solver and explanation tests run on the frozen copy in tests/data; these run on the live data
so that a refresh that breaks a headline answer fails here.
"""

from __future__ import annotations

import json

import pytest
from packaging.version import Version

from resolver.data import matrix
from resolver.data.node import from_flags
from resolver.solve import Request, solve
from resolver.solve.finding import Phrase
from resolver.util.versions import parse_spec

from .conftest import LIVE_MATRIX
from .helpers import run_cli

M = matrix.load_dir(LIVE_MATRIX)
LIVE = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}


def decide(gfx: str, driver: str | None, gpus: int | None = None, **req: object):  # type: ignore[no-untyped-def]
    node = from_flags(gfx=gfx, gpus=gpus, driver=driver, os=None, rocm=None, python=None)
    if isinstance(req.get("vllm"), str):
        req["vllm"] = parse_spec(str(req["vllm"]))
    return solve(M, node, Request(**req))  # type: ignore[arg-type]


def test_mi300x_on_a_current_driver_gets_the_newest_release_on_its_default_stack() -> None:
    d = decide("gfx942", "30.30.3", gpus=8)
    assert d.verdict in ("supported", "supported_with_warnings") and d.plan is not None
    c = d.plan.candidate
    newest = max(r.version for r in M.vllm if r.known)
    assert c.vllm == newest == Version("0.33.0")
    assert c.image is not None and c.image.tag == "v0.33.0"  # the plain tag, not its -rocm100 alias
    assert c.stack is not None and c.stack.default and c.stack.variant == "rocm100"


def test_an_amdgpu_6_4_host_gets_0_33_0_on_the_stack_its_driver_runs() -> None:
    d = decide("gfx942", "6.4.3", gpus=8)
    assert d.plan is not None
    c = d.plan.candidate
    assert c.vllm == Version("0.33.0") and c.stack is not None and c.stack.variant == "rocm72"
    assert c.image is not None and c.image.tag == "v0.33.0-rocm72"
    why = next(w for w in d.warnings if w.code == "stack-not-default")
    assert why.message.value("default") == "rocm100"
    # why the default does not fit: 0.33.0's ROCm 10 is outside amdgpu 6.4's window
    window = why.message.value("why")
    assert isinstance(window, Phrase) and window.key == "driver-window"
    assert window.value("window") == "6.1-7.2"


def test_source_build_follows_the_stack_too() -> None:
    d = decide("gfx942", "6.4.3", vllm="==0.33.0", prefer="source")
    assert d.plan is not None and d.plan.candidate.kind == "source"
    assert d.plan.candidate.stack is not None and d.plan.candidate.stack.variant == "rocm72"


def test_0_33_0_is_never_unsupported_or_unknown_on_a_supported_gpu() -> None:
    for gfx, driver in (
        ("gfx942", "30.30.3"),
        ("gfx950", "31.50.0"),
        ("gfx1100", "30.30.3"),
        ("gfx90a", "6.4.3"),
    ):
        d = decide(gfx, driver, vllm="==0.33.0")
        assert d.verdict in ("supported", "supported_with_warnings"), (gfx, driver, d.verdict)


def test_no_shipped_release_from_0_10_is_unknown() -> None:
    unknown = [str(r.version) for r in M.vllm if not r.known and r.version >= Version("0.10.0")]
    assert unknown == []


def test_gfx1250_stack_is_a_preview_with_moving_refs_and_never_the_plan() -> None:
    rel = next(r for r in M.vllm if r.version == Version("0.33.0"))
    stack = rel.stack_named("gfx1250")
    assert stack is not None and stack.preview and not stack.images
    assert {p.component for p in stack.moving_pins} == {"flash_attention"}
    d = decide("gfx942", "30.30.3", prefer="source")
    assert (
        d.plan is not None
        and d.plan.candidate.stack is not None
        and not d.plan.candidate.stack.preview
    )


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_readme_first_command_answers_from_the_shipped_data(fmt: str) -> None:
    args = ["check", "--example", "mi300x-8"] + (["--json"] if fmt == "json" else [])
    result = run_cli(*args, env=LIVE)
    assert result.exit_code == 0, result.output
    if fmt == "json":
        plan = json.loads(result.stdout)["plan"]
        assert plan["vllm"] == "0.33.0"
    else:
        assert "vllm/vllm-openai-rocm:v0.33.0" in result.stdout


def test_wheels_of_0_33_0_follow_the_stacks_too() -> None:
    node = from_flags(
        gfx="gfx942", gpus=None, driver="30.30.3", os="ubuntu-24.04", rocm=None, python="3.12"
    )
    d = solve(M, node, Request(prefer="wheel"))
    assert d.plan is not None and d.plan.candidate.wheel is not None
    assert d.plan.candidate.label == "vllm==0.33.0+rocm100 (wheel)"
    older = from_flags(
        gfx="gfx942", gpus=None, driver="6.4.3", os="ubuntu-24.04", rocm=None, python="3.12"
    )
    d = solve(M, older, Request(prefer="wheel"))
    assert d.plan is not None and d.plan.candidate.label == "vllm==0.33.0+rocm72 (wheel)"
    assert any(w.code == "stack-not-default" for w in d.warnings)


def test_host_fix_is_the_smallest_change_that_opens_the_best_release() -> None:
    d = decide("gfx942", "6.1.3", vllm=">=0.20")
    assert d.verdict == "blocked_host_fix" and d.host_fix is not None
    c = d.host_fix.candidate
    assert c.vllm == Version("0.33.0") and c.image is not None and c.image.tag == "v0.33.0-rocm72"


def test_a_wheel_on_the_hosts_rocm_needs_that_rocm() -> None:
    """issue 19: vLLM's docs say the rocm72 wheels use a system ROCm installation; a host with
    ROCm 6.4 cannot run them (the tool said the wheel's torch brings ROCm 7.2)."""
    from resolver.solve.types import HostChange

    def wheel(rocm: str | None):  # type: ignore[no-untyped-def]
        node = from_flags(
            gfx="gfx942", gpus=1, driver="6.4.3", os="ubuntu-24.04", rocm=rocm, python="3.12"
        )
        request = Request(vllm=parse_spec("==0.33.0"), paths=frozenset({"wheel"}))
        return solve(M, node, request)

    d = wheel("6.4.0")
    (rocm72,) = [e for e in d.rejected if e.candidate.wheel and e.candidate.wheel.name == "rocm72"]
    mismatch = next(r for r in rocm72.reasons if r.code == "host-rocm-mismatch")
    assert mismatch.fix is not None and mismatch.fix.change == HostChange(
        kind="rocm", value="7.2.0"
    )
    ok = wheel("7.2.1")
    assert ok.plan is not None and ok.plan.candidate.wheel.name in ("rocm72", "rocm100")  # type: ignore[union-attr]
    assert "host-rocm-mismatch" not in {r.code for e in ok.rejected for r in e.reasons}
    # amdgpu 6.4 runs no ROCm 10 wheel: with the host's ROCm unknown the rocm72 wheel is the plan,
    # with the check it could not make said.
    unknown = wheel(None)
    assert unknown.plan is not None and unknown.plan.candidate.wheel.name == "rocm72"  # type: ignore[union-attr]
    assert "host-rocm-unknown" in {w.code for w in unknown.plan.warnings}


def test_a_preview_stack_is_offered_only_to_its_gpu() -> None:
    """issue 19: a gfx942 node on 31.10 was offered "vLLM 0.32.0 from source (gfx1250 stack)",
    with another stack's arch list. A ROCm nightly built for one GPU carries nothing else; a
    plan's arch list is its own record's."""
    node = from_flags(gfx="gfx942", gpus=8, driver="31.10.0", os=None, rocm=None, python=None)
    d = solve(M, node, Request())
    offered = [e for e in [d.plan, *d.alternatives] if e is not None]
    assert all(e.candidate.stack is None or e.candidate.stack.variant != "gfx1250" for e in offered)
    own = from_flags(gfx="gfx1250", gpus=1, driver="31.50.0", os=None, rocm=None, python=None)
    plan = solve(M, own, Request()).plan
    assert plan is not None and plan.candidate.arch == ("gfx1250",)
    out = run_cli("check", "--gfx", "gfx1250", "--driver", "31.50.0", "--json", env=LIVE)
    assert json.loads(out.stdout)["plan"]["arch"] == ["gfx1250"]


def test_every_release_from_0_18_has_its_rocm_attention_backends() -> None:
    """issue 34: the KV cache dtypes each ROCm attention backend takes are read per release from
    0.18.0 (when vLLM began validating them); the nvfp4 dtypes have no ROCm backend."""
    for caps in M.capabilities:
        if caps.version >= Version("0.18.0"):
            assert caps.rocm_attention, caps.version
            assert caps.attention_backends("auto") and caps.attention_backends("nvfp4") == ()
            assert "_get_backend_priorities" in caps.provenance.source


def test_the_rocm723_release_wheels_cover_0_23_to_0_32() -> None:
    """issue 34: the 0.23.0-0.32.0 release pipelines publish rocm723 wheels (setup.py's
    +rocm<digits> of the 7.2.3 base), 0.21-0.22 rocm722; 0.33.0 names them rocm72."""
    wheels = {w.name: w for w in M.wheels}
    assert {str(v) for v in wheels["rocm723"].releases} >= {"0.30.0", "0.31.0", "0.32.0"}
    assert Version("0.33.0") not in wheels["rocm723"].releases
    assert wheels["rocm723"].uses_host_rocm and wheels["rocm723"].rocm == Version("7.2.3")
    assert {str(v) for v in wheels["rocm722"].releases} == {"0.21.0", "0.22.0", "0.22.1"}
