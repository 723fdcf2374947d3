"""What an answer rests on (issue 34), on the shipped data: ``--strict`` makes an answer that
rests on a requirement nobody checked ``unknown``; an unknown driver plans the stack the oldest
driver runs; a GPU on the kernel's own amdgpu (Ryzen AI) is not judged by an amdgpu release; an
image arch list evidence contradicts is never planned."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver.data import matrix
from resolver.data.codes import UNCHECKED_CODES
from resolver.data.node import from_flags
from resolver.solve import OK_VERDICTS, Decision, Request, solve
from resolver.util.versions import parse_spec

from .conftest import LIVE_MATRIX
from .helpers import run_cli

M = matrix.load_dir(LIVE_MATRIX)
LIVE = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}


def decide(
    gfx: str,
    driver: str | None,
    *,
    strict: bool = False,
    os: str | None = None,
    python: str | None = None,
    kernel: str | None = None,
    vllm: str | None = None,
) -> Decision:
    node = from_flags(gfx=gfx, gpus=1, driver=driver, os=os, rocm=None, python=python)
    if kernel is not None:
        node = msgspec.structs.replace(node, kernel=kernel)
    request = Request(vllm=parse_spec(vllm) if vllm else None, strict=strict)
    return solve(M, node, request)


# --- --strict ----------------------------------------------------------------------------------


def test_strict_turns_an_unchecked_driver_into_unknown_naming_what_to_give() -> None:
    loose = decide("gfx942", None)
    assert loose.verdict == "supported_with_warnings"
    d = decide("gfx942", None, strict=True)
    assert d.verdict == "unknown" and d.exit_code == 6 and d.plan is None
    assert [f.subject for f in d.missing] == ["driver-unchecked"]
    # what to give: the driver-unchecked wording's hint (--driver)
    assert all(f.kind == "unchecked" and f.hint.code == "driver-unchecked" for f in d.missing)


def test_strict_leaves_a_fully_checked_answer_supported() -> None:
    d = decide("gfx942", "30.30.3", strict=True)
    assert d.verdict == "supported" and d.plan is not None


def test_strict_refuses_a_series_that_straddles_the_gpu() -> None:
    d = decide("gfx1201", "6.4", strict=True)
    assert d.verdict == "unknown"
    assert [f.subject for f in d.missing] == ["driver-release-unchecked"]


def test_strict_on_the_cli_exits_6_and_the_json_names_the_unchecked_facts() -> None:
    r = run_cli("check", "--gfx", "gfx942", "--strict", "--json", env=LIVE)
    assert r.exit_code == 6
    data = json.loads(r.stdout)
    assert data["verdict"] == "unknown"
    assert {m["kind"] for m in data["missing"]} == {"unchecked"}
    assert all(m["hint"] for m in data["missing"])
    text = run_cli("check", "--gfx", "gfx942", "--strict", env=LIVE)
    assert text.exit_code == 6 and text.stdout.startswith("verdict: unknown  (exit 6)")


NODES = st.tuples(
    st.sampled_from(sorted(g.name for g in M.gfx if g.vllm_status == "official")),
    st.sampled_from([None, "6.4", "6.4.3", "30.10.2", "30.30.3", "31.50.0"]),
    st.sampled_from([None, "ubuntu-22.04", "ubuntu-24.04"]),
    st.sampled_from([None, "3.12"]),
)


@settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(facts=NODES)
def test_under_strict_exit_0_implies_nothing_unchecked(
    facts: tuple[str, str | None, str | None, str | None],
) -> None:
    gfx, driver, os_id, python = facts
    d = decide(gfx, driver, strict=True, os=os_id, python=python)
    if d.verdict in OK_VERDICTS:
        assert not [w.code for w in d.warnings if w.code in UNCHECKED_CODES], facts
    loose = decide(gfx, driver, os=os_id, python=python)
    # --strict only ever turns an exit-0 answer into unknown; it never changes another verdict.
    if loose.verdict not in OK_VERDICTS:
        assert d.verdict == loose.verdict, facts


# --- an unknown driver plans the widest window -------------------------------------------------


def test_an_unknown_driver_plans_the_stack_the_oldest_driver_runs() -> None:
    d = decide("gfx942", None, vllm="==0.33.0")
    assert d.plan is not None and d.plan.candidate.stack is not None
    assert d.plan.candidate.stack.variant == "rocm72"  # amdgpu 6.4 runs it; rocm100 needs 30.10
    assert any(w.code == "stack-not-default" for w in d.warnings)
    known = decide("gfx942", "30.30.3", vllm="==0.33.0")
    assert known.plan is not None and known.plan.candidate.stack is not None
    assert known.plan.candidate.stack.default


# --- Ryzen AI on the kernel's own amdgpu ------------------------------------------------------


@pytest.mark.parametrize("driver", ["30.10.2", "30.20.1", "30.30.3"])
def test_ryzen_ai_is_not_refused_on_a_30_x_driver(driver: str) -> None:
    for gfx in ("gfx1150", "gfx1151"):
        d = decide(gfx, driver)
        assert d.verdict in OK_VERDICTS, (gfx, driver, d.verdict)
        codes = {r.code for ev in d.rejected for r in ev.reasons}
        assert "driver-predates-gpu" not in codes


def test_ryzen_ai_on_the_inbox_driver_asks_for_the_kernel_not_an_amdgpu_release() -> None:
    d = decide("gfx1151", None, os="ubuntu-24.04")
    codes = {w.code for w in d.warnings}
    assert "driver-unchecked" not in codes and "kernel-floor-unchecked" in codes
    assert d.verdict == "supported_with_warnings"
    checked = decide("gfx1151", None, os="ubuntu-24.04", kernel="6.17.0-1012-oem", strict=True)
    assert checked.verdict == "supported", [f.subject for f in checked.missing]


# --- image arch lists: evidence over a docs claim ------------------------------------------------


def test_an_image_evidence_says_lacks_the_gpu_is_never_planned_for_it() -> None:
    image = next(i for i in M.images if i.lacks)
    assert "gfx1201" in image.lacks and "gfx1201" in image.arch  # the docs claim stays visible
    d = decide("gfx1201", "30.30.3", vllm=f"=={image.vllm}")
    assert d.plan is None or d.plan.candidate.image != image
    refusals = [
        r
        for ev in d.rejected
        if ev.candidate.image == image
        for r in ev.reasons
        if r.code == "gfx-not-shipped"
    ]
    assert refusals and refusals[0].facts[0].source == image.lacks_source


def test_a_docs_only_arch_list_is_a_note_and_unchecked_under_strict() -> None:
    assert all(i.arch_from == "recipe" for i in M.images if i.repo == "vllm/vllm-openai-rocm")
    # vLLM 0.10.1 on MI300X: AMD's rocm/vllm image, whose arch list only AMD's docs page states.
    d = decide("gfx942", "30.30.3", vllm="==0.10.1")
    assert d.plan is not None and d.plan.candidate.image is not None
    assert d.plan.candidate.image.arch_from == "docs"
    assert any(w.code == "arch-from-docs" and w.severity == "info" for w in d.warnings)
    strict = decide("gfx942", "30.30.3", vllm="==0.10.1", strict=True)
    assert strict.verdict == "unknown"
    assert [f.subject for f in strict.missing] == ["arch-from-docs"]
