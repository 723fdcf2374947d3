"""NVIDIA image tags before 0.12 (issue 38, H13): on the recorded H200 node, ``check --vllm
==0.9.1`` plans or refuses from the tags the release annotation names, no longer ``unknown``;
a release whose sdist names no tag stays unknown (shipped data: matrix/)."""

from __future__ import annotations

from resolver.solve import OK_VERDICTS, Request, solve
from resolver.util.versions import parse_spec

from .test_solve_cuda import M, node


def test_0_9_1_on_the_h200_plans_its_image_from_facts() -> None:
    d = solve(M, node(), Request(vllm=parse_spec("==0.9.1")))
    assert d.verdict in OK_VERDICTS and d.exit_code == 0 and not d.missing
    assert d.plan is not None and d.plan.candidate.label == "vllm/vllm-openai:v0.9.1"
    image = d.plan.candidate.image
    assert image is not None and str(image.cuda) == "12.8" and "9.0" in image.arch
    # the tag was pushed by hand as the annotation says: said as inferred, never pinned by digest
    assert d.plan.candidate.confidence == "inferred" and image.digest is None


def test_0_9_1_on_a_driver_below_cuda_12_s_floor_is_refused_with_the_fix() -> None:
    d = solve(M, node(driver="515.105.01"), Request(vllm=parse_spec("==0.9.1")))
    assert d.verdict == "blocked_host_fix" and d.plan is None and not d.missing
    reasons = {r.code: r for e in d.rejected for r in e.reasons}
    fix = reasons["cuda-driver-too-old"].fix
    assert fix is not None and fix.change is not None and fix.change.kind == "nvidia_driver"


def test_0_9_1_on_a_gpu_its_build_does_not_carry_is_refused() -> None:
    """A Pascal P100 (6.0): 0.9.1's image is built from 7.0 up."""
    p100 = node(compute_capability="6.0", name="Tesla P100-PCIE-16GB")
    d = solve(M, p100, Request(vllm=parse_spec("==0.9.1"), paths=frozenset({"image"})))
    assert d.verdict not in OK_VERDICTS and d.verdict != "unknown" and d.plan is None
    assert {r.code for e in d.rejected for r in e.reasons} == {"cuda-arch-missing"}


def test_each_release_0_9_1_to_0_11_0_has_its_tag_and_0_9_0_1_stays_unknown() -> None:
    for version in ("0.9.1", "0.9.2", "0.10.0", "0.10.1", "0.10.1.1", "0.10.2", "0.11.0"):
        d = solve(M, node(), Request(vllm=parse_spec(f"=={version}"), paths=frozenset({"image"})))
        assert d.plan is not None and d.plan.candidate.label == f"vllm/vllm-openai:v{version}"
    d = solve(M, node(), Request(vllm=parse_spec("==0.9.0.1"), paths=frozenset({"image"})))
    assert d.verdict == "unknown" and d.exit_code == 6
    assert [f.subject for f in d.missing] == ["0.9.0.1"]
