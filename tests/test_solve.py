"""Solver cases: one per verdict, and the facts each verdict must name."""

from __future__ import annotations

import pytest
from packaging.version import Version

from resolver import matrix
from resolver.errors import InputError, UnknownGfxError
from resolver.node import Gpu, Node, Partition, from_flags
from resolver.solve import Decision, Request, solve
from resolver.versions import parse_spec

M = matrix.load()


def decide(gfx: str, *, gpus: int | None = None, driver: str | None = None, os: str | None = None,
           python: str | None = None, rocm: str | None = None, **req: object) -> Decision:
    node = from_flags(gfx=gfx, gpus=gpus, driver=driver, os=os, rocm=rocm, python=python)
    if isinstance(req.get("vllm"), str):
        req["vllm"] = parse_spec(str(req["vllm"]))
    return solve(M, node, Request(**req))  # type: ignore[arg-type]


def codes(d: Decision) -> set[str]:
    return {w.code for w in d.warnings}


def test_mi300x_gets_the_newest_official_image_with_aiter_hint() -> None:
    d = decide("gfx942", gpus=8, driver="30.30.3", os="ubuntu-22.04")
    assert d.verdict == "supported" and d.exit_code == 0
    assert d.plan is not None and d.plan.candidate.image is not None
    img = d.plan.candidate.image
    assert img.repo == "vllm/vllm-openai-rocm" and "gfx942" in img.arch
    newest_official = max(i.vllm for i in M.images if i.official and i.vllm and i.arch)
    assert img.vllm == newest_official
    assert "aiter-off-by-default" in codes(d)


def test_gfx906_is_unsupported_and_names_what_lacks_it() -> None:
    d = decide("gfx906")
    assert d.verdict == "unsupported" and d.exit_code == 1 and d.plan is None
    assert {r.code for r in d.blockers} == {"gfx-unsupported"}
    blocker = d.blockers[0]
    assert "gfx906" in blocker.message and "ships code for" in blocker.message
    # The reasons cited are Triton's missing target, AMD's deprecation and the maintainers' pointer.
    assert any("triton" in f.source and "22458" in f.source for f in blocker.facts)


def test_old_driver_blocks_new_vllm_and_names_window_and_fix() -> None:
    d = decide("gfx942", driver="6.1.3", vllm=">=0.20")
    assert d.verdict == "blocked_host_fix" and d.exit_code == 1
    assert d.host_fix is not None
    reason = d.host_fix.reasons[0]
    assert reason.code == "driver-window"
    assert "5.7-6.4" in reason.message
    assert reason.fix is not None and reason.fix.host and "30.30" in reason.fix.text
    assert "upgrade the host's amdgpu driver to 30.30.x" in reason.hint


def test_fp8_on_gfx90a_is_unsupported_by_the_gate() -> None:
    d = decide("gfx90a", quantization="fp8")
    assert d.verdict == "unsupported"
    assert [r.code for r in d.blockers] == ["fp8-unsupported"]
    assert "hardware FP8" in d.blockers[0].message


def test_mxfp4_needs_gfx950() -> None:
    assert decide("gfx942", driver="30.30.3", quantization="mxfp4").verdict == "unsupported"
    ok = decide("gfx950", driver="30.30.3", quantization="mxfp4")
    assert ok.verdict == "supported" and ok.plan is not None


def test_fp8_on_gfx942_warns_about_fnuz() -> None:
    d = decide("gfx942", driver="30.30.3", quantization="fp8")
    assert d.exit_code == 0
    fmt = next(w for w in d.warnings if w.code == "fp8-format")
    assert "fnuz" in fmt.message.lower()


def test_driver_6_1_0_picks_an_image_that_driver_runs() -> None:
    d = decide("gfx942", gpus=8, driver="6.1.0")
    assert d.exit_code == 0 and d.plan is not None and d.plan.candidate.image is not None
    drv = M.driver("6.1")
    assert drv is not None and d.plan.candidate.rocm is not None and drv.runs(d.plan.candidate.rocm)
    assert d.plan.candidate.image.repo == "rocm/vllm"
    assert "preview" not in d.plan.candidate.image.tag


def test_gfx1030_has_only_an_unofficial_source_build() -> None:
    d = decide("gfx1030", driver="30.30.3")
    assert d.verdict == "unofficial_only" and d.exit_code == 1
    assert d.plan is not None and d.plan.candidate.kind == "source" and d.plan.unofficial


def test_gfx1102_override_is_unofficial_and_warned() -> None:
    # AMD's rocm/vllm images from 7.14.1 carry gfx1102 (inferred from AMD's vLLM support list);
    # before them the only way onto gfx1102 is the unofficial gfx1100 override.
    d = decide("gfx1102", driver="30.30.3", vllm="<0.23")
    assert d.verdict == "unofficial_only"
    assert d.plan is not None and d.plan.override == "11.0.0"
    assert "unofficial-override" in codes(d)
    now = decide("gfx1102", driver="30.30.3")
    assert now.plan is not None and now.plan.candidate.kind == "image" and now.plan.override is None
    assert now.plan.candidate.image is not None and now.plan.candidate.image.repo == "rocm/vllm"


def test_old_vllm_without_image_needs_a_source_build() -> None:
    d = decide("gfx942", driver="30.30.3", vllm="==0.8.0")
    assert d.verdict == "source_build_required" and d.exit_code == 0
    assert d.plan is not None and d.plan.candidate.kind == "source"
    # 0.7.3 has an AMD image (rocm6.3.1_instinct_vllm0.7.3_20250325, AMD's history table).
    d73 = decide("gfx942", driver="30.30.3", vllm="==0.7.3")
    assert d73.plan is not None and d73.plan.candidate.kind == "image"


def test_wheel_preference_and_glibc_floor() -> None:
    d = decide("gfx942", driver="30.30.3", os="ubuntu-22.04", python="3.12", prefer="wheel")
    assert d.plan is not None and d.plan.candidate.kind == "wheel"
    assert d.plan.candidate.wheel is not None and d.plan.candidate.wheel.name == "rocm700"
    old = decide("gfx942", driver="30.30.3", os="rhel-8.10", python="3.12", prefer="wheel")
    assert old.plan is not None and old.plan.candidate.kind == "image"
    wheel_rejects = [r for e in old.rejected if e.candidate.kind == "wheel" for r in e.reasons]
    assert {r.code for r in wheel_rejects} == {"glibc-too-old"}


def test_wheel_python_mismatch_is_a_host_fix() -> None:
    d = decide("gfx942", driver="30.30.3", os="ubuntu-22.04", python="3.11", vllm="==0.18.0")
    wheel = [e for e in d.rejected if e.candidate.kind == "wheel"]
    assert wheel and wheel[0].reasons[0].code == "python-mismatch" and wheel[0].host_fixable


def test_unknown_release_is_unsupported_with_refresh_hint() -> None:
    d = decide("gfx942", driver="30.30.3", vllm="==0.30.0")
    assert d.verdict == "unsupported"
    assert any(r.code == "release-facts-unknown" for e in d.rejected for r in e.reasons)
    assert "refresh" in d.rejected[0].reasons[0].hint


def test_image_with_unknown_contents_is_not_chosen() -> None:
    d = decide("gfx942", driver="30.30.3", vllm="==0.28.0")
    assert d.verdict == "unsupported"
    assert {r.code for e in d.rejected for r in e.reasons} == {"artifact-facts-unknown", "release-facts-unknown"}


def test_newer_unknown_releases_are_mentioned() -> None:
    d = decide("gfx942", driver="30.30.3")
    assert "newer-releases-unknown" in codes(d)


def test_missing_driver_is_a_warning_only() -> None:
    d = decide("gfx942")
    assert d.exit_code == 0


def test_inbox_driver_version_is_flagged_unknown() -> None:
    d = decide("gfx1151", driver="6.14.0", os="ubuntu-24.04")
    assert d.exit_code == 0 and "unknown-driver" in codes(d)
    assert d.verdict == "supported_with_warnings"


def test_node_level_warnings_from_probe_facts() -> None:
    node = Node(
        gpus=tuple(Gpu(gfx="gfx942", partition=Partition(compute="CPX", memory="NPS4")) for _ in range(64)),
        gfx_targets=("gfx942",), physical_gpu_count=8, logical_gpu_count=64, driver_version="30.30.3",
    )
    d = solve(M, node, Request())
    assert "cpx-partition" in codes(d)
    radeon = from_flags(gfx="gfx1100", gpus=2, driver="30.30.3", os=None, rocm=None, python=None)
    assert "rdna-multi-gpu" in codes(solve(M, radeon, Request()))


def test_mixed_fleet_fp8_formats_warn() -> None:
    d = decide("gfx942,gfx950", driver="30.30.3", quantization="fp8")
    assert {"mixed-fp8-formats", "mixed-gfx"} <= codes(d)


def test_unknown_gfx_and_bad_request_are_input_errors() -> None:
    with pytest.raises(UnknownGfxError, match="gfx1234"):
        decide("gfx1234")
    with pytest.raises(InputError, match="--quantization"):
        decide("gfx942", quantization="int3")
    with pytest.raises(InputError, match="no vLLM release"):
        decide("gfx942", vllm="==9.9.9")


def test_paths_restrict_candidate_kinds() -> None:
    node = from_flags(gfx="gfx942", gpus=8, driver="30.30.3", os=None, rocm=None, python=None)
    d = solve(M, node, Request(paths=frozenset({"image"})))
    assert all(e.candidate.kind == "image" for e in (*d.rejected, *d.alternatives))


def test_same_input_same_decision() -> None:
    a = decide("gfx942", driver="30.30.3", vllm=">=0.10")
    b = decide("gfx942", driver="30.30.3", vllm=">=0.10")
    assert a == b


def test_newer_driver_never_loses_a_path() -> None:
    """Monotonicity: upgrading the driver along AMD's table never removes the chosen artifact."""
    old = decide("gfx942", driver="6.4.1")
    new = decide("gfx942", driver="30.30.3")
    assert old.plan is not None and new.plan is not None
    assert new.plan.candidate.vllm >= old.plan.candidate.vllm >= Version("0.10")


def test_host_os_checked_against_the_drivers_rocm_and_gpu_footnotes() -> None:
    assert "os-not-supported" in codes(decide("gfx942", driver="30.20.1", os="centos-7"))
    rdna = decide("gfx1201", driver="30.10.2", os="rhel-8.10")
    w = next(w for w in rdna.warnings if w.code == "os-not-supported-for-gpu")
    assert "gfx1201" in w.message and "rhel-8.10" in w.message and "compatibility-matrix.rst" in w.source
    assert not {"os-not-supported", "os-not-supported-for-gpu"} & codes(decide("gfx942", driver="30.30.3", os="ubuntu-22.04"))


def test_gpu_footnotes_intersect_and_reach_rocm_7_2() -> None:
    w = next(w for w in decide("gfx950", driver="30.30.3", os="rhel-8.10").warnings if w.code == "os-not-supported-for-gpu")
    assert "ROCm 7.2.0" in w.message and "rhel-8.10" not in w.message.split(";")[0]
    older = next(w for w in decide("gfx950", driver="30.20.1", os="rocky-9").warnings if w.code == "os-not-supported-for-gpu")
    # 7.1.0's footnotes together leave neither Rocky 9 nor Debian 12 for gfx950.
    allowed = older.message.split(" only on ")[1].split(";")[0]
    assert "rocky-9" not in allowed and "debian-12" not in allowed and "ubuntu-24.04.3" in allowed
