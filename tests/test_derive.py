"""resolver.explain.derive: decisions become numbered, sourced, deterministic derivations with
checked hints."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver.data import matrix
from resolver.data.node import from_flags
from resolver.explain import HINT_ORDER, Derivation, derive, render_derivation
from resolver.solve import Request, solve
from resolver.util.errors import InputError, UnknownGfxError
from resolver.util.versions import parse_spec

M = matrix.load()


def decide(
    gfx: str,
    *,
    driver: str | None = None,
    vllm: str | None = None,
    quantization: str | None = None,
    kv: str | None = None,
    prefer: str | None = None,
    os: str | None = None,
    python: str | None = None,
) -> Derivation:
    node = from_flags(gfx=gfx, gpus=None, driver=driver, os=os, rocm=None, python=python)
    request = Request(
        vllm=parse_spec(vllm) if vllm else None,
        quantization=quantization,
        kv_cache_dtype=kv,
        prefer=prefer,
    )  # type: ignore[arg-type]
    return derive(solve(M, node, request), M)


def test_steps_are_numbered_in_order_and_cite_only_earlier_steps() -> None:
    d = decide("gfx942", driver="6.1.3", vllm=">=0.23,<0.25")
    assert [s.number for s in d.steps] == list(range(1, len(d.steps) + 1))
    for s in d.steps:
        assert all(c < s.number for c in s.cites)
    assert "(1)" in d.conclusion
    assert f"({len(d.steps)})" in d.conclusion


def test_rejected_candidates_are_grouped_not_listed_one_by_one() -> None:
    decision = solve(
        M,
        from_flags(gfx="gfx942", gpus=None, driver="6.1.3", os=None, rocm=None, python=None),
        Request(vllm=parse_spec(">=0.23,<0.25")),
    )
    d = derive(decision, M)
    assert len(d.steps) < len(decision.rejected)
    covered = [label for s in d.steps for label in s.subjects]
    assert sorted(covered) == sorted(e.candidate.label for e in decision.rejected), (
        "every rejected candidate is in one step"
    )
    official = next(s for s in d.steps if any("vllm/vllm-openai-rocm" in x for x in s.subjects))
    assert official.premises[0].text.startswith("the ")
    assert " vllm/vllm-openai-rocm images for vLLM " in official.premises[0].text


def test_every_premise_names_its_sources_and_confidence() -> None:
    d = decide("gfx942", driver="6.1.3", vllm=">=0.23,<0.25")
    driver_premise = next(
        p for s in d.steps for p in s.premises if p.text.startswith("amdgpu 6.1.x")
    )
    assert driver_premise.sources
    assert "ROCm/amdgpu-docs" in driver_premise.sources[0]
    assert {p.confidence for s in d.steps for p in s.premises} <= {
        "exact",
        "release-branch",
        "inferred",
        "unknown",
    }
    assert set(d.sources()) == {src for s in d.steps for p in s.premises for src in p.sources}


def test_quantization_gate_is_one_step_about_the_gpu() -> None:
    d = decide("gfx90a", quantization="fp8")
    assert len(d.steps) == 1
    assert d.steps[0].conclusion == "no vLLM build can serve fp8 quantization on gfx90a"
    assert d.hints[0].kind == "quantization"
    assert "without it, vllm/vllm-openai-rocm:" in d.hints[0].text


def test_driver_hint_is_checked_by_solving_again() -> None:
    d = decide("gfx942", driver="6.1.3", vllm=">=0.23,<0.25")
    driver = next(h for h in d.hints if h.kind == "driver")
    assert "6.4.x" in driver.text
    assert "then vllm/vllm-openai-rocm:v0.24.0" in driver.text
    again = decide("gfx942", driver="6.4.0", vllm=">=0.23,<0.25")
    assert again.exit_code == 0
    assert again.plan is not None
    assert again.plan.label == "vllm/vllm-openai-rocm:v0.24.0"


def test_hints_follow_the_documented_order() -> None:
    for d in (
        decide("gfx942", driver="6.1.3", vllm=">=0.23,<0.25"),
        decide("gfx1031"),
        decide("gfx942", vllm="==0.30.0"),
    ):
        kinds = [h.kind for h in d.hints]
        assert kinds == sorted(kinds, key=HINT_ORDER.index)


def test_unofficial_plans_and_hints_are_flagged() -> None:
    # gfx1031's plan is the near target's build run under the override: unofficial, and said so.
    d = decide("gfx1031")
    assert d.verdict == "unofficial_only"
    assert d.plan is not None and d.plan.unofficial and d.plan.override == "10.3.0"
    flagged = [h for h in d.hints if h.unofficial]
    assert flagged and all(h.text.startswith("unofficial:") for h in flagged)
    official = decide("gfx942", driver="6.1.3", vllm=">=0.23,<0.25")
    assert not any(h.unofficial for h in official.hints)


def test_success_rests_on_facts_with_a_confidence() -> None:
    d = decide("gfx942", driver="30.30.3")
    assert d.ok
    assert d.plan is not None
    assert d.confidence in ("exact", "release-branch", "inferred", "unknown")
    plan_step = d.steps[-1]
    assert plan_step.codes == ("plan",)
    assert plan_step.conclusion.endswith("runs on this node")
    # the driver row of drivers.toml, as the driver-window finding words it
    assert any(
        p.text.startswith("amdgpu 30.30.x supports ROCm user space") for p in plan_step.premises
    )


def test_unknown_driver_is_a_hedge_and_a_hint_not_a_silent_pass() -> None:
    d = decide("gfx942")
    assert d.steps[-1].conclusion.endswith("if its amdgpu driver runs ROCm 7.2")
    assert any(h.kind == "driver" and "was not checked" in h.text for h in d.hints)


def test_from_json_rejects_other_shapes() -> None:
    with pytest.raises(InputError):
        Derivation.from_json({"verdict": "supported"})
    with pytest.raises(InputError):
        Derivation.from_json([1, 2])
    good = decide("gfx906").to_json()
    assert Derivation.from_json(good).to_json() == good
    # A field of the wrong type is refused, not coerced into another derivation.
    for bad in (
        {**good, "exit_code": "1"},
        {**good, "steps": [{"number": 1}]},
        {**good, "hints": [3]},
    ):
        with pytest.raises(InputError):
            Derivation.from_json(bad)


def test_same_decision_same_text() -> None:
    a = render_derivation(decide("gfx906"))
    b = render_derivation(decide("gfx906"))
    assert a == b


GFX = sorted(g.name for g in M.gfx)
DRIVERS = [None, "5.7.1", "6.1.3", "6.4.1", "30.10.2", "30.30.3", "31.50.0", "6.8.0"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    gfx=st.lists(st.sampled_from(GFX), min_size=1, max_size=2, unique=True),
    driver=st.sampled_from(DRIVERS),
    vllm=st.sampled_from([None, ">=0.20", "==0.16.0", "<0.10", "==0.30.0"]),
    quantization=st.sampled_from([None, "fp8", "mxfp4", "awq"]),
    prefer=st.sampled_from([None, "image", "wheel", "source"]),
    python=st.sampled_from([None, "3.11", "3.12"]),
)
def test_any_decision_derives_round_trips_and_renders(
    gfx: list[str],
    driver: str | None,
    vllm: str | None,
    quantization: str | None,
    prefer: str | None,
    python: str | None,
) -> None:
    try:
        d = decide(
            ",".join(gfx),
            driver=driver,
            vllm=vllm,
            quantization=quantization,
            prefer=prefer,
            python=python,
        )
    except (InputError, UnknownGfxError):
        return  # e.g. no release in the data matches the spec: a usage error, not a derivation
    assert d.steps, "every verdict has at least one step"
    assert [s.number for s in d.steps] == list(range(1, len(d.steps) + 1))
    data = json.loads(json.dumps(d.to_json()))
    back = Derivation.from_json(data)
    assert back.to_json() == data
    text = render_derivation(back)
    assert text == render_derivation(d)
    assert "  Because " in text
    assert d.ok == (d.verdict in ("supported", "supported_with_warnings", "source_build_required"))


def test_driver_hint_is_the_smallest_forward_move() -> None:
    # amdgpu 31.10 runs ROCm 7.11/7.14 only; 31.40 (newer, same stream) runs ROCm 7.2 and 10.0:
    # never
    # send the host back to 30.30.
    d = decide("gfx942", driver="31.10.0")
    driver = next(h for h in d.hints if h.kind == "driver")
    assert driver.text.startswith("upgrade the host's amdgpu driver to 31.40.x"), driver.text
    assert "30.30" not in driver.text


def test_a_host_hint_that_alone_does_not_unlock_is_not_printed_alone() -> None:
    # RHEL 8.10 has glibc 2.28: Python 3.12 alone still leaves the wheel blocked; only both together
    # open it.
    d = decide("gfx942", os="rhel-8.10", prefer="wheel", python="3.11")
    host = [h for h in d.hints if h.kind in ("python", "os")]
    assert len(host) == 1, [h.text for h in d.hints]
    assert dict(host[0].changes) == {"python": "3.12", "glibc": "2.35"}
    # glibc comes with the OS: the hint names the oldest RHEL that ships it, not another distro.
    assert "rhel-10" in host[0].text and "each alone is not enough" in host[0].text
    # ... and the combined change, solved again, does open the wheel.
    again = solve(
        M,
        from_flags(
            gfx="gfx942", gpus=None, driver=None, os="rhel-8.10", rocm=None, python="3.12"
        ).with_overrides(glibc="2.35"),
        Request(prefer="wheel"),
    )
    assert again.plan is not None and again.plan.candidate.kind == "wheel"


def test_every_host_hint_unlocks_what_it_promises() -> None:
    """Property over several nodes: each driver/python/os hint, applied alone, solves to a plan."""
    cases = [
        {"gfx": "gfx942", "driver": "6.1.3", "vllm": ">=0.23,<0.25"},
        {"gfx": "gfx942", "driver": "31.10.0"},
        {"gfx": "gfx942", "python": "3.11", "prefer": "wheel"},
        {"gfx": "gfx942", "os": "rhel-8.10", "prefer": "wheel"},
        {"gfx": "gfx950", "driver": "6.1.3", "vllm": "==0.16.0"},
    ]
    checked = 0
    for case in cases:
        d = decide(**case)  # type: ignore[arg-type]
        for h in d.hints:
            if not h.changes:
                continue
            node = from_flags(
                gfx=str(case["gfx"]),
                gpus=None,
                driver=case.get("driver"),
                os=case.get("os"),
                rocm=None,
                python=case.get("python"),
            )
            fields = {"driver": "driver_version", "python": "python", "glibc": "glibc"}
            changes = {fields[k]: (v + ".0" if k == "driver" else v) for k, v in h.changes}
            request = Request(
                vllm=parse_spec(str(case["vllm"])) if case.get("vllm") else None,
                prefer=case.get("prefer"),
            )  # type: ignore[arg-type]
            again = solve(M, node.with_overrides(**changes), request)
            assert again.plan is not None and again.exit_code == 0, (case, h.text)
            assert again.plan.candidate.label == h.then, (case, h.text, again.plan.candidate.label)
            checked += 1
    assert checked >= 4


def test_aiter_note_is_worded_by_plan_kind() -> None:
    wheel = solve(
        M,
        from_flags(
            gfx="gfx942", gpus=None, driver="30.30.3", os="ubuntu-22.04", rocm=None, python="3.12"
        ),
        Request(prefer="wheel"),
    )
    assert wheel.plan is not None and wheel.plan.candidate.kind == "wheel"
    note = next(w for w in wheel.warnings if w.code == "aiter-off-by-default")
    assert not note.applied_by_plan and dict(note.env) == {"VLLM_ROCM_USE_AITER": "1"}
    assert note.hint.key == "aiter-off-by-default/wheel"  # not the image's "the run command does"
    image = solve(
        M,
        from_flags(gfx="gfx942", gpus=None, driver="30.30.3", os=None, rocm=None, python=None),
        Request(),
    )
    note = next(w for w in image.warnings if w.code == "aiter-off-by-default")
    assert image.plan is not None and image.plan.candidate.kind == "image" and note.applied_by_plan


def test_driver_hint_says_downgrade_only_when_nothing_newer_runs_it() -> None:
    # amdgpu 31.50 runs ROCm 7.0-10.0; vLLM 0.10.1 exists only on ROCm 6.4: every driver that runs
    # it is older, so the nearest one (30.30) is a downgrade, and the hint says so.
    d = decide("gfx942", driver="31.50.0", vllm="==0.10.1")
    driver = next(h for h in d.hints if h.kind == "driver")
    assert driver.text.startswith("downgrade the host's amdgpu driver to 30.30.x"), driver.text
    assert dict(driver.changes) == {"driver": "30.30"}


def test_one_driver_row_reads_one_way_in_every_step() -> None:
    """issue 36: `check --gfx gfx942 --driver 6.4.1 --explain` worded one drivers.toml row two
    ways in adjacent steps ("supports ROCm user space 6.1-7.2" / "runs ROCm user space 6.1, 6.2,
    ..."). Every premise that cites the driver's record now says the same thing."""
    from resolver.data.node import from_flags
    from resolver.explain import derive

    node = from_flags(gfx="gfx942", gpus=None, driver="6.4.1", os=None, rocm=None, python=None)
    d = solve(M, node, Request())
    driver = M.driver("6.4")
    assert driver is not None
    texts = {
        p.text
        for step in derive(d, M).steps
        for p in step.premises
        if driver.provenance.source in p.sources and "amdgpu 6.4.x" in p.text
    }
    assert len(texts) == 1, texts
