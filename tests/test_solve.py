"""Solver cases: one per verdict, and the facts each verdict must name."""

from __future__ import annotations

import msgspec.structs
import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from resolver.data import matrix
from resolver.data.node import Node, from_flags
from resolver.solve import Decision, Request, solve
from resolver.solve.finding import Phrase
from resolver.solve.types import HostChange, RequestError

from .helpers import cpx_node, decide, said

M = matrix.load()


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
    assert blocker.message.key == "gfx-unsupported" and blocker.message.value("gfx") == "gfx906"
    assert any("33811" in f.source for f in blocker.facts)


def test_old_driver_blocks_new_vllm_and_names_window_and_fix() -> None:
    # Bounded below the releases the frozen data never read: those would make it "unknown".
    d = decide("gfx942", driver="6.1.3", vllm=">=0.23,<0.25")
    assert d.verdict == "blocked_host_fix" and d.exit_code == 1
    assert d.host_fix is not None
    reason = d.host_fix.reasons[0]
    assert reason.code == "driver-window"
    assert reason.message.value("window") == "5.7-6.4"
    assert (
        reason.fix is not None
        and reason.fix.host
        and reason.fix.change == HostChange(kind="driver", value="6.4", direction="upgrade")
    )
    assert reason.hint.value("best") == "6.4.x" and reason.hint.value("direction") == "upgrade"


def test_fp8_on_gfx90a_is_unsupported_by_the_gate() -> None:
    d = decide("gfx90a", quantization="fp8")
    assert d.verdict == "unsupported"
    assert [r.code for r in d.blockers] == ["fp8-unsupported"]
    assert d.blockers[0].message.key == "fp8-unsupported"
    assert d.blockers[0].message.value("gfx") == "gfx90a"


def test_mx_compute_needs_gfx950_but_mxfp4_weights_run_emulated() -> None:
    # MXFP8 has native MX compute on gfx950 only; elsewhere the release's own kernel table
    # decides: 0.20+ list EmulationMxfp8LinearKernel for ROCm, so it runs emulated in BF16.
    d = decide("gfx942", driver="30.30.3", quantization="mxfp8")
    assert d.verdict == "supported" and d.plan is not None
    w = next(w for w in d.warnings if w.code == "mxfp8-emulated")
    assert w.message.value("kernel") == "EmulationMxfp8LinearKernel"
    assert "kernels/linear/__init__.py" in said(w.source)
    ok = decide("gfx950", driver="30.30.3", quantization="mxfp4")
    assert ok.verdict == "supported" and ok.plan is not None
    assert "mxfp4-native" in codes(ok)
    # vLLM's gpt-oss recipe lists MI300x/MI325x (gfx942) and Radeon AI PRO R9700 (gfx1201):
    # weight-only.
    for gfx in ("gfx942", "gfx1201"):
        for quant in ("mxfp4", "gpt_oss_mxfp4"):
            d = decide(gfx, driver="30.30.3", quantization=quant)
            assert d.exit_code == 0 and d.plan is not None, (gfx, quant, d.verdict)
            w = next(w for w in d.warnings if w.code == "mxfp4-emulated")
            assert "recipes" in said(w.source) and "MI300x" in said(w.source)
    # No recipe names gfx1100; the releases whose kernel table lists EmulationMxfp4LinearKernel
    # run MXFP4 there emulated (tests/test_capabilities.py, on the live data), and this frozen
    # data has not read them: unknown, never unsupported.
    d = decide("gfx1100", driver="30.30.3", quantization="mxfp4")
    assert d.verdict == "unknown" and d.plan is None
    assert any(r.code == "mx-unsupported" for e in d.rejected for r in e.reasons)


def test_mxfp4_support_is_a_sourced_fact_of_the_shipped_data() -> None:
    from tests.conftest import LIVE_MATRIX

    live = matrix.load_dir(LIVE_MATRIX)
    gates = {g.name: g.features for g in live.gfx}
    assert gates["gfx950"].mxfp4 == "native" and gates["gfx950"].mx
    for gfx in ("gfx942", "gfx1201"):
        assert gates[gfx].mxfp4 == "emulated" and not gates[gfx].mx
        assert "GPT-OSS.md" in gates[gfx].mxfp4_provenance.source


def test_fp8_on_gfx942_warns_about_fnuz() -> None:
    d = decide("gfx942", driver="30.30.3", quantization="fp8")
    assert d.exit_code == 0
    fmt = next(w for w in d.warnings if w.code == "fp8-format")
    assert fmt.message.key == "fp8-format/fnuz"


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
    d = decide("gfx1102", driver="30.30.3")
    assert d.verdict == "unofficial_only"
    assert d.plan is not None and d.plan.override == "11.0.0"
    assert "unofficial-override" in codes(d)


def test_old_vllm_without_image_needs_a_source_build() -> None:
    d = decide("gfx942", driver="30.30.3", vllm="==0.7.3")
    assert d.verdict == "source_build_required" and d.exit_code == 0
    assert d.plan is not None and d.plan.candidate.kind == "source"


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


def test_unknown_release_is_unknown_not_unsupported_with_the_fetch_command() -> None:
    d = decide("gfx942", driver="30.30.3", vllm="==0.30.0")  # frozen data: 0.30.0 never read
    assert d.verdict == "unknown" and d.exit_code == 6 and d.plan is None
    assert any(r.code == "release-facts-unknown" for e in d.rejected for r in e.reasons)
    assert [(f.kind, f.subject) for f in d.missing] == [("release", "0.30.0")]
    assert d.missing[0].fetch == "rocm-vllm matrix refresh --source sdist --tag 0.30.0 --write"


def test_image_with_unknown_contents_is_not_chosen() -> None:
    d = decide("gfx942", driver="30.30.3", vllm="==0.28.0")
    assert d.verdict == "unknown" and d.plan is None
    assert {r.code for e in d.rejected for r in e.reasons} == {
        "artifact-facts-unknown",
        "release-facts-unknown",
    }


def test_what_the_gpu_lacks_is_a_definite_no_even_for_unknown_releases() -> None:
    # FP8 needs hardware gfx90a lacks, whatever 0.30.0 pins: unsupported, not unknown.
    d = decide("gfx90a", driver="30.30.3", vllm="==0.30.0", quantization="fp8")
    assert d.verdict == "unsupported" and not d.missing
    assert decide("gfx906", vllm="==0.30.0").verdict == "unsupported"


def test_newer_unknown_releases_are_mentioned() -> None:
    d = decide("gfx942", driver="30.30.3")
    assert "newer-releases-unknown" in codes(d)


def test_missing_driver_is_a_warning_only() -> None:
    d = decide("gfx942")
    assert d.exit_code == 0


def test_inbox_driver_version_is_unknown() -> None:
    """issue 19: a driver that matches no series of AMD's table (an inbox kernel's version, a
    nonsense 99.1) is not planned as if fine: the answer is unknown (exit 6), naming the driver."""
    for driver in ("6.14.0", "99.1", "6.10.5-2119913"):
        d = decide("gfx1151", driver=driver, os="ubuntu-24.04")
        assert d.verdict == "unknown" and d.exit_code == 6, driver
        assert [(f.kind, f.subject) for f in d.missing] == [("driver", driver)]
        assert d.plan is None


def test_node_level_warnings_from_probe_facts() -> None:
    node = cpx_node()
    d = solve(M, node, Request())
    assert "cpx-partition" in codes(d)
    radeon = from_flags(gfx="gfx1100", gpus=2, driver="30.30.3", os=None, rocm=None, python=None)
    assert "rdna-multi-gpu" in codes(solve(M, radeon, Request()))


def test_custom_allreduce_gate_is_said_where_tp_uses_rccl() -> None:
    """Issue 19: gfx.toml's custom_allreduce was in the data but never surfaced. Several GPUs of
    a target vLLM keeps it off for get an info note; MI300-class nodes and single GPUs do not."""

    def node(gfx: str, gpus: int) -> set[str]:
        n = from_flags(gfx=gfx, gpus=gpus, driver="30.30.3", os=None, rocm=None, python=None)
        return codes(solve(M, n, Request()))

    assert "custom-allreduce-off" in node("gfx90a", 4)
    assert "custom-allreduce-off" in node("gfx1100", 2)
    assert "custom-allreduce-off" not in node("gfx942", 8)
    assert "custom-allreduce-off" not in node("gfx90a", 1)
    gate = M.gfx_target("gfx90a")
    assert gate is not None and gate.features.custom_allreduce is False


def test_mixed_fleet_fp8_formats_warn() -> None:
    d = decide("gfx942,gfx950", driver="30.30.3", quantization="fp8")
    assert {"mixed-fp8-formats", "mixed-gfx"} <= codes(d)


def test_unknown_gfx_is_unknown_and_bad_request_is_an_input_error() -> None:
    d = decide("gfx1234")
    assert d.verdict == "unknown" and d.exit_code == 6
    assert [(f.kind, f.subject, f.fetch) for f in d.missing] == [("gfx", "gfx1234", None)]
    with pytest.raises(RequestError) as bad:
        decide("gfx942", quantization="int3")
    assert bad.value.said.key == "request/quantization-unknown"
    assert bad.value.exit_code == 2
    with pytest.raises(RequestError) as none:
        decide("gfx942", vllm="==0.0.1")
    assert none.value.said.key == "request/no-release"


def test_a_known_release_without_a_path_of_the_asked_kind_says_so() -> None:
    """`image --vllm ==0.6.0`: vLLM 0.6.0 is in the data, no container image of it is. The
    error says that, and the releases that have an image, not that no release matches."""
    from resolver.artifacts.images import choose_image
    from resolver.util.versions import parse_spec

    m = matrix.load()
    node = from_flags(gfx="gfx942", gpus=8, driver="30.30.3", os=None, rocm=None, python=None)
    with_image = sorted({i.vllm for i in m.images if i.vllm is not None})
    without = next(r.version for r in m.vllm if r.version not in with_image)
    with pytest.raises(RequestError) as bad:
        choose_image(m, node, parse_spec(f"=={without}"))
    assert bad.value.said.key == "request/no-path-of-kind"
    assert bad.value.exit_code == 2
    hint = bad.value.said_hint
    assert hint is not None and hint.key == "request/no-path-of-kind-hint"
    assert hint.value("first") == with_image[0]
    # a release the data does not know at all is still "no release matches"
    with pytest.raises(RequestError) as none:
        choose_image(m, node, parse_spec("==0.0.1"))
    assert none.value.said.key == "request/no-release"


def test_a_release_newer_than_the_data_is_unknown() -> None:
    """issue 19: `--vllm ==0.35.0` (newer than every release the data knows) is unknown with the
    command that reads it, never bad input."""
    d = decide("gfx942", driver="30.30.3", vllm="==9.9.9")
    assert d.verdict == "unknown" and d.exit_code == 6
    ((kind, subject, fetch),) = [(f.kind, f.subject, f.fetch) for f in d.missing]
    assert (kind, subject) == ("release", "9.9.9")
    assert fetch == "rocm-vllm matrix refresh --source sdist --tag 9.9.9 --write"


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
    # A driver off its ROCm's OS list stops every path (tests/test_host_blockers.py); where a
    # probe saw the module loaded it stays the os-not-supported warning.
    centos = decide("gfx942", driver="30.20.1", os="centos-7")
    assert centos.verdict == "blocked_host_fix" and centos.host_fix is not None
    assert "driver-os-unsupported" in {r.code for r in centos.host_fix.reasons}
    rdna = decide("gfx1201", driver="30.10.2", os="rhel-8.10")
    w = next(w for w in rdna.warnings if w.code == "os-not-supported-for-gpu")
    assert "gfx1201" in str(w.message.value("who")) and w.message.value("host_os") == "rhel-8.10"
    assert "compatibility-matrix.rst" in said(w.source)
    assert not {"os-not-supported", "os-not-supported-for-gpu"} & codes(
        decide("gfx942", driver="30.30.3", os="ubuntu-22.04")
    )


def test_gpu_footnotes_intersect_and_reach_rocm_7_2() -> None:
    w = next(
        w
        for w in decide("gfx950", driver="30.30.3", os="rhel-8.10").warnings
        if w.code == "os-not-supported-for-gpu"
    )
    assert w.message.value("rocm") == "ROCm 7.2.0"
    assert "rhel-8.10" not in str(w.message.value("allowed"))
    older = next(
        w
        for w in decide("gfx950", driver="30.20.1", os="rocky-9").warnings
        if w.code == "os-not-supported-for-gpu"
    )
    # 7.1.0's footnotes together leave neither Rocky 9 nor Debian 12 for gfx950.
    allowed = str(older.message.value("allowed"))
    assert "rocky-9" not in allowed and "debian-12" not in allowed and "ubuntu-24.04.3" in allowed


def test_strix_halo_kernel_floor_and_unified_memory() -> None:
    """issue 11, item 10: AMD documents Ryzen AI Max (gfx1151) on Ubuntu 24.04.4 with the OEM 6.17
    kernel and on Ubuntu 26.04 (7.0); the node's kernel is checked against it, and APUs get GTT
    sizing advice."""

    def node(os: str | None, kernel: str | None) -> Node:
        from msgspec.structs import replace

        return replace(
            from_flags(gfx="gfx1151", gpus=None, driver=None, os=os, rocm=None, python="3.12"),
            kernel=kernel,
        )

    old = solve(M, node("ubuntu-24.04", "6.8.0-45-generic"), Request())
    w = next(w for w in old.warnings if w.code == "kernel-too-old")
    assert w.severity == "warning" and w.message.value("flavour") == "OEM 6.17"
    assert "os-support.yaml" in said(w.source)
    assert old.verdict == "supported_with_warnings"
    ok = solve(M, node("ubuntu-24.04", "6.17.0-1008-oem"), Request())
    assert "kernel-too-old" not in codes(ok)
    assert "kernel-too-old" not in codes(
        solve(M, node("ubuntu-26.04", "7.0.0-10-generic"), Request())
    )
    other = solve(M, node("rhel-9.4", "5.14.0-427.el9.x86_64"), Request())
    assert "os-unlisted-for-gpu" in codes(other)
    unknown = solve(M, node("ubuntu-24.04", None), Request())
    assert "kernel-floor-unchecked" in codes(unknown)
    apu = next(w for w in old.warnings if w.code == "apu-unified-memory")
    assert apu.message.key == "apu-unified-memory" and "strixhalo" in said(apu.source)
    # A discrete GPU gets neither.
    mi300 = decide("gfx942", driver="30.30.3", os="ubuntu-24.04")
    assert not codes(mi300) & {"kernel-too-old", "apu-unified-memory", "kernel-floor-unchecked"}


def test_a_reporter_sees_every_candidate_once_and_how_it_ended() -> None:
    """The resolvelib-style hooks library callers (a progress bar, a fleet log) rely on."""
    from resolver.solve import Candidate, Reason, Reporter

    class Recorder(Reporter):
        def __init__(self) -> None:
            self.seen: list[str] = []
            self.ended: dict[str, str] = {}

        def considering(self, candidate: Candidate) -> None:
            self.seen.append(candidate.label)

        def rejecting(self, candidate: Candidate, reasons: tuple[Reason, ...]) -> None:
            self.ended[candidate.label] = reasons[0].code

        def accepting(self, candidate: Candidate) -> None:
            self.ended[candidate.label] = "ok"

    rec = Recorder()
    node = from_flags(gfx="gfx942", gpus=8, driver="6.1.3", os=None, rocm=None, python=None)
    d = solve(matrix.load(), node, Request(vllm=SpecifierSet(">=0.23,<0.25")), rec)
    assert d.verdict == "blocked_host_fix"
    # Every candidate is considered once and ends rejected (its first reason) or accepted.
    assert len(rec.seen) == len(set(rec.seen)) == len(rec.ended)
    assert rec.ended == {e.candidate.label: e.reasons[0].code for e in d.rejected}


@pytest.mark.parametrize(
    ("gfx", "driver", "first"),
    [("gfx950", "6.2.4", "7.0.0"), ("gfx1201", "6.3.1", "6.4.1"), ("gfx950", "6.4.3", "7.0.0")],
)
def test_a_gpu_newer_than_its_driver_is_blocked_with_the_driver_that_knows_it(
    gfx: str, driver: str, first: str
) -> None:
    """issue 19: MI355X on amdgpu 6.2 was `supported` (v0.18.1). A driver that shipped before
    the GPU's first ROCm cannot drive it: blocked_host_fix, and the fix, applied, gives a plan."""
    from packaging.version import Version

    m = matrix.load()
    d = decide(gfx, gpus=8, driver=driver)
    assert d.verdict == "blocked_host_fix", d.verdict
    assert "driver-predates-gpu" in {r.code for e in d.rejected for r in e.reasons}
    assert d.host_fix is not None
    (fix,) = {r.fix.change for r in d.host_fix.reasons if r.fix is not None}
    assert fix is not None and fix.kind == "driver"
    series = ".".join(fix.value.split(".")[:2])
    paired = m.driver(series).paired_rocm  # type: ignore[union-attr]
    assert paired is not None and Version(paired) >= Version(first)
    fixed = decide(gfx, gpus=8, driver=f"{series}.0")
    assert fixed.exit_code == 0, (series, fixed.verdict)


def test_a_driver_move_the_os_cannot_take_names_the_os_step() -> None:
    """issue 19: on Ubuntu 20.04 with amdgpu 6.1 the fix said "upgrade to 6.4.x", which AMD does
    not support on 20.04; the fix now names the OS release to move to first, as structure."""
    d = decide("gfx942", driver="6.1.3", os="ubuntu-20.04", vllm=SpecifierSet("==0.24.0"))
    assert d.verdict == "blocked_host_fix" and d.host_fix is not None
    fixes = [
        r.fix
        for r in d.host_fix.reasons
        if r.fix is not None and r.fix.change is not None and r.fix.change.kind == "driver"
    ]
    assert fixes and all(f.os_first and f.os_first.startswith("ubuntu-") for f in fixes)
    assert all(f.os_first != "ubuntu-20.04" for f in fixes)
    # A host whose OS takes the driver gets no OS step.
    ok_os = decide("gfx942", driver="6.1.3", os="ubuntu-22.04", vllm=SpecifierSet("==0.24.0"))
    assert ok_os.host_fix is not None
    assert all(r.fix.os_first is None for r in ok_os.host_fix.reasons if r.fix is not None)


def test_the_override_is_a_plan_a_build_of_the_near_target() -> None:
    """issue 34: gfx1031's hint named a gfx1030 build with HSA_OVERRIDE_GFX_VERSION=10.3.0 while
    the verdict was `unsupported` and the short form said "consider llama.cpp". The override is a
    path (docs/verdicts.md: unofficial): a source build of gfx1030, run under the override."""
    from msgspec.structs import replace

    m = matrix.load()
    node = from_flags(gfx="gfx1031", gpus=1, driver="30.30.3", os=None, rocm=None, python=None)
    d = solve(m, node, Request())
    assert d.verdict == "unofficial_only" and d.plan is not None
    assert d.plan.candidate.from_source and d.plan.unofficial
    assert d.plan.override == "10.3.0"
    assert d.plan.runs_as == (("gfx1031", "gfx1030"),)
    assert d.plan.built_for(node.gfx_targets) == ("gfx1030",)
    assert "unofficial-override" in codes(d)
    # No rejected path says that no vLLM path exists: one does.
    assert all(r.hint.key != "gfx-unsupported/hint-none" for e in d.rejected for r in e.reasons)
    # An artifact carrying gfx1030 is taken before a build (prebuilt first).
    image = next(i for i in m.images if i.official and i.vllm is not None)
    with_1030 = msgspec.structs.replace(image, arch=(*image.arch, "gfx1030"))
    m2 = replace(m, images=tuple(with_1030 if i is image else i for i in m.images))
    d2 = solve(m2, node, Request())
    assert d2.verdict == "unofficial_only" and d2.plan is not None
    assert d2.plan.override == "10.3.0" and d2.plan.candidate.image is not None


def test_an_override_is_a_path_only_where_every_gpu_takes_it() -> None:
    """HSA_OVERRIDE_GFX_VERSION is process-wide: beside a gfx1100 it would make that GPU load
    gfx1030 code too, so no plan relies on it there; beside a gfx1030 (its near target) it does."""
    mixed = decide("gfx1031,gfx1100", gpus=2, driver="30.30.3")
    assert mixed.plan is None or mixed.plan.override is None
    assert all(e.override is None for e in (*mixed.rejected, *mixed.alternatives))
    same = decide("gfx1031,gfx1030", gpus=2, driver="30.30.3")
    assert same.plan is not None and same.plan.override == "10.3.0"
    assert same.plan.built_for(("gfx1030", "gfx1031")) == ("gfx1030",)


def test_a_target_cmake_accepts_builds_as_itself_not_under_the_override() -> None:
    """gfx1102 has an override too, but vLLM's CMake accepts it: a source build is for gfx1102
    itself, never gfx1100 under the override."""
    d = decide("gfx1102", gpus=1, driver="30.30.3", prefer="source")
    assert d.plan is not None and d.plan.candidate.from_source
    assert d.plan.override is None and d.plan.runs_as == ()
    assert d.plan.built_for(("gfx1102",)) == ("gfx1102",)


def test_prefer_that_cannot_be_met_says_why() -> None:
    """issue 19: `--prefer wheel` fell back to an image without saying why."""
    d = decide("gfx942", gpus=1, driver="30.30.3", python="3.11", prefer="wheel")
    assert d.plan is not None and d.plan.candidate.kind != "wheel"
    (w,) = [w for w in d.warnings if w.code == "prefer-not-met"]
    assert w.message.value("want") == "wheel"
    # why: the wheel's own blocker (the host's Python 3.11), and its hint is the advice's
    why = w.message.value("why")
    assert isinstance(why, Phrase) and why.key == "prefer-not-met/why"
    assert isinstance(blocker := why.value("message"), Phrase) and blocker.code == "python-mismatch"
    assert w.hint.code == "python-mismatch"
    met = decide(
        "gfx942", gpus=1, driver="30.30.3", python="3.12", os="ubuntu-24.04", prefer="wheel"
    )
    assert met.plan is not None and met.plan.candidate.kind == "wheel"
    assert "prefer-not-met" not in {w.code for w in met.warnings}


def test_no_module_branches_on_a_candidate_kind_string() -> None:
    """issue 21: the kinds of path are classes (solve/types.py); what differs between them is a
    method or a class attribute (from_source, order, built_for, rank_group), so no code compares
    a ``.kind`` with "image", "wheel" or "source"."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "resolver"
    found: list[str] = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            kinds = any(isinstance(s, ast.Attribute) and s.attr == "kind" for s in sides)
            literal = any(
                isinstance(s, ast.Constant) and s.value in ("image", "wheel", "source")
                for s in sides
            )
            if kinds and literal:
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == []


# Where the kinds' own records are still tested for None until they move to the candidate's
# methods (issue 36 item 4): files others were editing at the time (the integrator's solver, the
# --model renderers); each should leave this set as it is converted.
_PENDING = {
    "explain/report.py",
    "explain/text.py",
    "explain/steps.py",
}


def test_no_module_tests_a_candidate_for_its_kind() -> None:
    """issue 36 item 4: each kind owns its record (``ImageCandidate.image`` and
    ``WheelCandidate.wheel`` are required fields); code asks the candidate (``pulled``,
    ``runs_as_user``, ``installs``, ``cuda``, ``family``, ``lacks``, ``visit``), never whether a
    candidate's image or wheel is None, its class, or its record's vendor."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "resolver"
    kinds = ("ImageCandidate", "WheelCandidate", "SourceCandidate")

    def on_candidate(e: ast.expr) -> bool:
        # ``c.image``, ``cand.wheel``, ``x.candidate.image`` (and ``.vendor`` of those)
        if isinstance(e, ast.Attribute) and e.attr == "vendor":
            e = e.value
        if not (isinstance(e, ast.Attribute) and e.attr in ("image", "wheel")):
            return False
        owner = e.value
        named = isinstance(owner, ast.Name) and owner.id in ("c", "cand", "candidate")
        return named or (isinstance(owner, ast.Attribute) and owner.attr == "candidate")

    found: list[str] = []
    for path in root.rglob("*.py"):
        where = str(path.relative_to(root))
        if where == "solve/types.py" or where in _PENDING:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            hit = False
            if isinstance(node, ast.Compare):
                hit = any(on_candidate(s) for s in (node.left, *node.comparators))
            elif isinstance(node, ast.IfExp | ast.BoolOp):
                tests = [node.test] if isinstance(node, ast.IfExp) else node.values
                hit = any(on_candidate(t) for t in tests)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                hit = node.func.id in ("isinstance", "type") and any(
                    isinstance(a, ast.Name) and a.id in kinds for a in ast.walk(node)
                )
            if hit:
                found.append(f"{where}:{node.lineno}")
    assert found == []


def test_candidate_kinds_are_classes_with_an_ordered_channel() -> None:
    from resolver.solve.types import Channel, ImageCandidate, SourceCandidate, WheelCandidate

    m = matrix.load()
    d = solve(
        m,
        from_flags(gfx="gfx942", gpus=8, driver="30.30.3", os=None, rocm=None, python=None),
        Request(),
    )
    every = [e.candidate for e in (*((d.plan,) if d.plan else ()), *d.alternatives, *d.rejected)]
    kinds = {type(c) for c in every}
    assert kinds == {ImageCandidate, WheelCandidate, SourceCandidate}
    assert all(c.channel == c.order.words and c.key == (c.kind, c.name) for c in every)
    assert Channel.OFFICIAL_IMAGE < Channel.AMD_IMAGE < Channel.WHEEL < Channel.SOURCE
    src = next(c for c in every if c.from_source)
    assert src.built_for(("gfx942",)) == ("gfx942",) and src.order is Channel.SOURCE


def test_aiter_advice_follows_whether_the_planned_release_pins_aiter() -> None:
    """AITER exists to turn on only where the release builds it (a pin; from v0.8.2): the
    advice follows the data, not a version written in code."""
    node = from_flags(gfx="gfx942", gpus=8, driver="6.3.1", os=None, rocm=None, python=None)
    for version, pinned in (("0.8.1", False), ("0.8.2", True)):
        d = solve(M, node, Request(vllm=SpecifierSet(f"=={version}"), paths=frozenset({"source"})))
        assert d.plan is not None, version
        stack = d.plan.candidate.stack
        assert stack is not None and (stack.pin("aiter") is not None) == pinned
        assert ("aiter-off-by-default" in [w.code for w in d.warnings]) == pinned, version


# --- issue 34, on the shipped data: a dtype no ROCm backend takes, a release read from its
# wheel, and the wheel line with the rocm723 release wheels.


def _live_mi300(**kw: str) -> Node:
    return from_flags(
        gfx="gfx942",
        gpus=8,
        driver="30.30.3",
        os=kw.get("os", "ubuntu-22.04"),
        rocm=kw.get("rocm"),
        python=kw.get("python"),
    )


def test_nvfp4_kv_cache_on_gfx942_has_no_rocm_backend() -> None:
    from tests.conftest import LIVE_MATRIX

    live = matrix.load_dir(LIVE_MATRIX)
    d = solve(live, _live_mi300(), Request(kv_cache_dtype="nvfp4"))
    assert d.verdict == "unsupported" and d.plan is None
    newest = solve(
        live, _live_mi300(), Request(kv_cache_dtype="nvfp4", vllm=SpecifierSet(">=0.20"))
    )
    assert {r.code for r in newest.blockers} == {"kv-cache-dtype-no-backend"}


def test_bitsandbytes_is_refused_on_0_15_0_from_its_wheel() -> None:
    from tests.conftest import LIVE_MATRIX

    live = matrix.load_dir(LIVE_MATRIX)
    request = Request(quantization="bitsandbytes", vllm=SpecifierSet("==0.15.0"))
    d = solve(live, _live_mi300(), request)
    assert d.verdict == "unsupported"
    assert {r.code for r in d.blockers} == {"quantization-not-listed"}


def test_the_wheel_line_names_each_release_index_once() -> None:
    """The rocm100 record holds its per-release index already: the line must not append the
    version and variant again. 0.30.0's pipeline publishes rocm723 release wheels."""
    from resolver.explain import plan_steps
    from tests.conftest import LIVE_MATRIX

    live = matrix.load_dir(LIVE_MATRIX)
    node = _live_mi300(os="ubuntu-24.04", python="3.12")
    d = solve(live, node, Request(vllm=SpecifierSet("==0.33.0"), paths=frozenset({"wheel"})))
    assert d.plan is not None and d.plan.candidate.wheel is not None
    line = " ".join(cmd for cmd, _ in plan_steps(d.plan, node))
    assert "--extra-index-url https://wheels.vllm.ai/rocm/0.33.0/rocm100" in line
    assert "/rocm100/0.33.0/" not in line
    node = _live_mi300(python="3.12", rocm="7.2.3")
    d = solve(live, node, Request(vllm=SpecifierSet("==0.30.0"), paths=frozenset({"wheel"})))
    assert d.plan is not None and d.plan.candidate.label == "vllm==0.30.0+rocm723 (wheel)"
    line = " ".join(cmd for cmd, _ in plan_steps(d.plan, node))
    assert (
        "vllm==0.30.0+rocm723 --extra-index-url https://wheels.vllm.ai/rocm/0.30.0/rocm723" in line
    )


def _with_model() -> Request:
    from pathlib import Path

    from resolver.cli._common import model_request

    fixture = Path(__file__).parent / "fixtures" / "models" / "llama-3.1-70b"
    return Request(model=model_request(str(fixture)))


@pytest.mark.parametrize(
    ("request_", "left_out"),
    [
        (Request(), {"_gates", "_listed", "_model"}),
        (Request(quantization="fp8"), {"_model"}),
        (Request(quantization="mxfp4"), {"_model"}),
        (Request(kv_cache_dtype="fp8_e4m3"), {"_model"}),
        (Request(kv_cache_dtype="nvfp4"), {"_model"}),
        (_with_model(), {"_gates", "_listed"}),  # a bf16 checkpoint asks no quantization
    ],
    ids=["plain", "fp8", "mxfp4", "kv-fp8", "kv-nvfp4", "model"],
)
def test_the_rules_a_request_leaves_out_would_have_found_nothing(
    request_: Request, left_out: set[str]
) -> None:
    """Issue 40: a solve runs only the rules that can find something for its request (no
    quantization or KV cache dtype: no feature rules; no model: no model rule; the solver's own
    provider says the record's advisories at finish: no record rule). Every path of every embedded
    example and of a few flag-described nodes is judged exactly as all the rules judge it."""
    from resolver.data.examples import example_node
    from resolver.solve.provider import RULES, MatrixProvider, rules_for

    assert {r.__name__ for r in RULES} - {r.__name__ for r in rules_for(request_)} == left_out
    assert "_record" not in {r.__name__ for r in rules_for(request_, record=False)}
    nodes = [example_node(e.name) for e in M.examples]
    nodes += [
        from_flags(gfx=g, gpus=2, driver=drv, os=None, rocm=None, python=None)
        for g in ("gfx942", "gfx90a", "gfx1100", "gfx950")
        for drv in ("6.1.3", "30.30.3", None)
    ]
    compared = 0
    for node in nodes:
        fewer = MatrixProvider(M, node, request_)
        every = MatrixProvider(M, node, request_)
        every.rules = RULES
        for cand in fewer.candidates():
            assert fewer.evaluate(cand) == every.evaluate(cand), cand.label
            compared += 1
    assert compared > 1000
