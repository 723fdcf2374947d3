"""NVIDIA nodes (issue 26): resolver.solve.cuda decides them with the AMD solver's contract, from
the live H200 outputs (tests/probe/fixtures/nvidia, recorded on the lent machine) and nodes made
from them by changing one fact."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from resolver.data import matrix
from resolver.data.node import from_json
from resolver.solve import OK_VERDICTS, Request, solve
from resolver.solve.cuda import driver_branch
from resolver.solve.routes import plan_upgrade
from resolver.util.versions import parse_spec

from .conftest import LIVE_MATRIX
from .helpers import applied, run_cli

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "probe" / "fixtures" / "nvidia"
LIVE = FIXTURES / "probe-live-h200.json"
GOLDEN = Path(__file__).parent / "golden" / "cuda"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
M = matrix.load_dir(LIVE_MATRIX)


def report(**change: Any) -> dict[str, Any]:
    """The live H200 report with the NVIDIA facts changed (driver, compute capability, name)."""
    data: dict[str, Any] = json.loads(LIVE.read_text())
    data = copy.deepcopy(data)
    driver = change.pop("driver", None)
    if driver is not None:  # what nvidia-smi says that driver supports goes with it
        data["host"]["nvidia"]["driver"] = driver
        data["host"]["nvidia"]["cuda"] = change.pop("cuda", None)
    for gpu in data["host"]["other_devices"]:
        if driver is not None:
            gpu["driver"] = driver
        gpu.update(change)
    return data


def node(**change: Any):  # type: ignore[no-untyped-def]
    return from_json(report(**change), where="test")


def write(tmp: Path, **change: Any) -> Path:
    path = tmp / "node.json"
    path.write_text(json.dumps(report(**change)))
    return path


def test_the_live_h200_gets_the_cuda_13_image_as_it_did_on_the_machine() -> None:
    d = solve(M, node(), Request())
    assert d.verdict == "supported" and d.exit_code == 0
    assert d.plan is not None and d.plan.candidate.label == "vllm/vllm-openai:v0.33.0"
    # What the check run on the lent H200 itself said (recorded there).
    live = json.loads((FIXTURES / "check-live-h200.json").read_text())
    assert live["verdict"] == d.verdict and live["plan"]["label"] == d.plan.candidate.label


def test_a_570_driver_runs_the_cuda_12_builds() -> None:
    old = node(driver="570.195.03")
    # Without a wanted release: the newest image its driver runs (CUDA 12.9; 0.33.0 has none).
    d = solve(M, old, Request())
    assert d.plan is not None and d.plan.candidate.label == "vllm/vllm-openai:v0.32.0-cu129"
    # 0.33.0 itself: its PyPI wheel is a CUDA 13 build too (it links libcudart.so.13), so neither
    # path runs on 570: a host fix naming branch 580, never "the wheel fits".
    pinned = solve(M, old, Request(vllm=parse_spec("==0.33.0")))
    assert pinned.verdict == "blocked_host_fix" and pinned.plan is None
    wheel = next(e for e in pinned.rejected if e.candidate.kind == "wheel")
    assert [r.code for r in wheel.reasons] == ["cuda-driver-too-old"]
    fix = wheel.reasons[0].fix
    assert fix is not None and fix.change is not None and fix.change.value == "580"
    # 0.32.0's PyPI wheel is CUDA 13 as well; its cu129 image is what a 570 driver runs.
    d32 = solve(M, old, Request(vllm=parse_spec("==0.32.0")))
    assert d32.plan is not None and d32.plan.candidate.label == "vllm/vllm-openai:v0.32.0-cu129"


def test_an_old_driver_is_a_host_fix_naming_the_branch() -> None:
    old = node(driver="570.195.03")
    # The image of 0.33.0 (CUDA 13) on a 570 driver.
    pinned = solve(M, old, Request(vllm=parse_spec("==0.33.0"), paths=frozenset({"image"})))
    assert pinned.verdict == "blocked_host_fix" and pinned.exit_code == 1
    (reason,) = {r.code: r for r in pinned.blockers}.values()
    assert reason.code == "cuda-driver-too-old"
    assert reason.fix is not None and reason.fix.change is not None
    assert (reason.fix.change.kind, reason.fix.change.value) == ("nvidia_driver", "580")
    # The upgrade planner's route, taken, gives the plan it names.
    want = Request(vllm=parse_spec("==0.33.0"), paths=frozenset({"image"}))
    up = plan_upgrade(M, old, want)
    assert up.steps is not None and [(s.change.kind, s.change.value) for s in up.steps] == [
        ("nvidia_driver", "580")
    ]
    again = solve(M, applied(old, up), want)
    assert again.verdict in OK_VERDICTS and again.plan is not None
    assert again.plan.candidate.label == "vllm/vllm-openai:v0.33.0"
    # A driver older than every floor of the releases the data read (CUDA 12's 525 too): no
    # path, the fix names a branch.
    d = solve(M, node(driver="515.105.01"), Request(vllm=parse_spec(">=0.12")))
    assert d.verdict == "blocked_host_fix" and d.host_fix is not None
    fix = d.host_fix.reasons[0].fix
    assert fix is not None and fix.change is not None and fix.change.kind == "nvidia_driver"
    # Unbounded: since the release annotation is read (issue 38, H13) 0.11.x's image tags are
    # known too (CUDA 12.9, floor 525), so nothing is left unread a 515 driver could run: a host
    # fix, never unknown for want of tags.
    open_ended = solve(M, node(driver="515.105.01"), Request())
    assert open_ended.verdict == "blocked_host_fix" and not open_ended.missing


def test_a_gpu_no_read_image_carries_is_unknown_not_unsupported() -> None:
    # A V100 (7.0): the images of 0.20.x on are built from 7.5 up; 0.19.1's build lists 7.0 and
    # its release annotation names its tag (issue 38, H13): that image (inferred) is the plan ...
    v100 = node(compute_capability="7.0", name="Tesla V100-SXM2-32GB")
    d = solve(M, v100, Request())
    assert d.plan is not None and d.plan.candidate.label == "vllm/vllm-openai:v0.19.1"
    assert d.plan.candidate.confidence == "inferred"
    # ... and 0.9.0, whose image tags no file of its sdist names: unknown, not a no.
    d = solve(M, v100, Request(vllm=parse_spec("==0.9.0"), paths=frozenset({"image"})))
    assert d.verdict == "unknown" and d.exit_code == 6
    assert d.missing and d.missing[0].subject == "0.9.0"


def test_a_node_with_both_vendors_plans_for_the_one_asked() -> None:
    both = from_json(
        {**report(), "gfx_targets": ["gfx942"], "gpus": [{"gfx": "gfx942"}]}, where="test"
    )
    assert solve(M, both, Request()).plan.candidate.image.vendor == "amd"  # type: ignore[union-attr]
    nv = solve(M, both, Request(vendor="nvidia"))
    assert nv.plan is not None and nv.plan.candidate.label.startswith("vllm/vllm-openai:v")


@settings(max_examples=150, deadline=None)
@given(
    branch=st.integers(min_value=400, max_value=700),
    cap=st.sampled_from(["7.0", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0"]),
)
def test_no_supported_cuda_plan_breaks_the_rules_the_data_states(branch: int, cap: str) -> None:
    """A rule the data states, property-tested: a supported plan's CUDA major has a driver floor
    at or below the host's branch, and its image carries the GPU's compute capability."""
    d = solve(M, node(driver=f"{branch}.10.01", compute_capability=cap), Request())
    if d.verdict not in OK_VERDICTS:
        return
    assert d.plan is not None
    built = d.plan.candidate.image or d.plan.candidate.wheel
    assert built is not None and built.cuda is not None
    rule = M.cuda_driver_rule(built.cuda)
    assert rule is not None and rule.min_driver <= branch
    # its own SASS, its family target, or PTX of an earlier capability (CUDA's rules)
    major, minor = (int(p) for p in cap.split("."))
    assert any(
        a.split("+")[0] == cap
        or (a.split("+")[0].endswith("f") and a.startswith(f"{major}.") and a[-2:-1] <= str(minor))
        or (a.endswith("+PTX") and float(a.split("+")[0]) <= float(cap))
        for a in built.arch
    ), (cap, built.arch)


def test_driver_branch_reads_only_a_driver_version() -> None:
    assert driver_branch("580.159.04") == 580
    assert driver_branch(None) is None and driver_branch("abc") is None


# -- the CLI: one contract -----------------------------------------------------------------------

ENV = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX), "COLUMNS": "100"}


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("check-h200", ["check"]),
        ("check-h200-570-033", ["check", "--vllm", "==0.33.0"]),
        ("explain-h200-570-033", ["check", "--vllm", "==0.33.0", "--explain"]),
        ("upgrade-h200-570-033-image", ["upgrade", "--vllm", "==0.33.0", "--prefer", "image"]),
        # issue 38 (b): an A100 (8.0) below modelopt FP8's 8.9 in 0.20.0, step by step
        (
            "explain-a100-020-modelopt",
            ["check", "--vllm", "==0.20.0", "--quantization", "modelopt", "--explain"],
        ),
    ],
)
def test_golden_answers(name: str, args: list[str], tmp_path: Path) -> None:
    change: dict[str, Any] = {} if name == "check-h200" else {"driver": "570.195.03"}
    if "a100" in name:
        change = {"compute_capability": "8.0", "name": "NVIDIA A100-SXM4-80GB"}
    path = write(tmp_path, **change)
    result = run_cli(*args, "--node", str(path), env=ENV)
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    text = result.stdout.replace(str(path), "NODE.json")
    file = GOLDEN / f"{name}.txt"
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
    assert text == file.read_text(), f"{file.name} differs; UPDATE_GOLDEN=1 regenerates it"


@pytest.mark.parametrize("command", ["check", "upgrade", "image"])
def test_json_answers_follow_their_schemas(command: str, tmp_path: Path) -> None:
    path = write(tmp_path, driver="570.195.03")
    result = run_cli(command, "--node", str(path), "--json", env=ENV)
    data = json.loads(result.stdout)
    schema = json.loads((ROOT / "docs" / f"{command}.schema.json").read_text())
    jsonschema.validate(data, schema)
    if command == "image":
        assert data["vendor"] == "nvidia" and data["cuda"] == "12.9"


@pytest.mark.parametrize(
    ("fmt", "want", "never"),
    [
        ("docker", "--gpus all", "/dev/kfd"),
        ("podman", "--device nvidia.com/gpu=all", "/dev/kfd"),
        ("compose", 'driver: "nvidia"', "/dev/kfd"),
        ("apptainer", "apptainer run --nv", "seccomp"),
    ],
)
def test_the_run_command_takes_the_gpus_the_nvidia_way(
    fmt: str, want: str, never: str, tmp_path: Path
) -> None:
    path = write(tmp_path)
    result = run_cli(
        "image", "--node", str(path), "--model", "Qwen/Qwen3-8B", "--format", fmt, env=ENV
    )
    assert result.exit_code == 0, result.stderr
    text = result.stdout + result.stderr
    assert want in text and never not in result.stdout
    assert "vllm/vllm-openai:v0.33.0" in result.stdout
    assert "HIP_VISIBLE_DEVICES" not in result.stdout


def test_the_probe_points_an_nvidia_node_at_its_plan() -> None:
    result = run_cli("probe", "--nvidia-smi", str(FIXTURES / "nvidia-smi-q-x-h200.xml"), env=ENV)
    assert "modprobe" not in result.stdout and "amdgpu-install" not in result.stdout
    assert "rocm-vllm check" in result.stdout


def test_cuda_data_holds_a_floor_for_every_cuda_major_an_image_uses() -> None:
    majors = {i.cuda.major for r in M.cuda for i in r.images}
    assert majors and all(M.cuda_driver_rule(Version(f"{m}.0")) for m in majors)


def test_dockerfile_on_an_nvidia_node_names_vllms_own_recipe(tmp_path: Path) -> None:
    result = run_cli("dockerfile", "--node", str(write(tmp_path)), env=ENV)
    assert result.exit_code == 2
    assert "docker/Dockerfile" in result.stderr
    assert "torch_cuda_arch_list=9.0" in result.stderr and "#v0.33.0" in result.stderr


def test_without_nvidia_smi_the_pci_id_says_the_compute_capability() -> None:
    # The probe's sysfs path: PCI device id, no compute capability.
    h200 = node(compute_capability=None, pci_device_id="2335")
    d = solve(M, h200, Request())
    assert d.plan is not None and d.plan.candidate.label == "vllm/vllm-openai:v0.33.0"
    assert "cuda-arch-unchecked" not in [w.code for w in d.warnings]
    v100 = solve(M, node(compute_capability=None, pci_device_id="1db1"), Request())
    assert {r.code for e in v100.rejected for r in e.reasons if e.candidate.kind == "image"} == {
        "cuda-arch-missing"
    }
    # A GPU neither nvidia-smi nor the data places is never "supported" for an arch list: the
    # answer is unknown, naming the GPU and what would tell.
    unknown = solve(M, node(compute_capability=None, pci_device_id="ffff"), Request())
    assert unknown.verdict == "unknown" and unknown.plan is None
    assert [f.subject for f in unknown.missing] == ["cuda-arch-unchecked"]
    detail = unknown.missing[0].detail
    assert detail.key == "cuda-arch-unchecked" and "NVIDIA H200" in str(detail.value("product"))


def test_cuda_arch_rules_family_ptx_and_arch_specific() -> None:
    """CUDA's rules: sm_X.Yf covers the family, PTX JIT-compiles forward (not an `a` target's),
    sm_90a runs on 9.0 only; a plain X.Y is held to its own capability."""
    from resolver.solve.cuda import _covers

    assert _covers(("10.0f",), "10.3") and _covers(("12.0f",), "12.1")
    assert not _covers(("10.0f",), "11.0") and not _covers(("10.3f",), "10.0")
    assert _covers(("9.0a",), "9.0") and not _covers(("9.0a",), "10.0")
    assert not _covers(("9.0a+PTX",), "10.0")
    assert _covers(("9.0+PTX",), "10.0") and _covers(("8.0+PTX",), "8.6")
    assert not _covers(("9.0+PTX",), "8.9")
    assert not _covers(("10.0",), "10.3") and not _covers(("8.0",), "8.6")
    assert not _covers(("10.0f",), "None")


def test_a_b300_runs_the_cuda_13_images_through_their_family_targets() -> None:
    """vLLM 0.33.0 builds 10.0f on CUDA 13 (CMakeLists.txt): its image runs on a B300 (10.3)."""
    b300 = node(compute_capability="10.3", name="NVIDIA B300")
    d = solve(M, b300, Request(vllm=SpecifierSet("==0.33.0"), prefer="image"))
    assert d.verdict == "supported", [r.code for e in d.rejected for r in e.reasons]
    assert d.plan is not None and d.plan.candidate.label == "vllm/vllm-openai:v0.33.0"


def test_each_pci_id_names_one_gpu() -> None:
    ids = [i for g in M.nvidia_gpus for i in g.pci_device_ids]
    assert len(ids) == len(set(ids)) and all(g.provenance.source for g in M.nvidia_gpus)


def test_a_wheel_whose_tag_asks_more_glibc_than_the_host_has_is_refused() -> None:
    """vLLM 0.20.0's PyPI wheel is manylinux_2_35: pip will not install it on Ubuntu 20.04
    (glibc 2.31), where a 0.19.1 wheel (manylinux_2_31) installs. Read from the index, not
    assumed to be manylinux_2_28."""
    from msgspec.structs import replace

    host = replace(node(), os="ubuntu-20.04", glibc="2.31", python="3.12")
    for version, refused in (("0.20.0", True), ("0.19.1", False)):
        d = solve(M, host, Request(vllm=SpecifierSet(f"=={version}"), prefer="wheel"))
        wheels = [e for e in d.rejected if e.candidate.kind == "wheel"]
        codes = {r.code for e in wheels for r in e.reasons}
        assert ("glibc-too-old" in codes) == refused, (version, codes)
        if refused:
            why = next(r for e in wheels for r in e.reasons if r.code == "glibc-too-old")
            assert why.message.key == "glibc-too-old/cuda"
            assert why.message.value("platform") == "manylinux_2_35_x86_64"
            assert str(why.message.value("glibc_min")) == "2.35"


def test_an_nvidia_node_is_described_by_flags() -> None:
    """issue 38 (e): GPU name or compute capability, count and NVIDIA driver, as --gfx/--gpus/
    --driver do for AMD; a count alone leaves the capability unknown (exit 6, naming it)."""
    h200 = run_cli(
        "check",
        "--nvidia-gpu",
        "H200",
        "--gpus",
        "8",
        "--nvidia-driver",
        "580.159.04",
        "--json",
        env=ENV,
    )
    assert h200.exit_code == 0, h200.stdout
    d = json.loads(h200.stdout)
    assert d["plan"]["label"] == "vllm/vllm-openai:v0.33.0"
    devices = d["node"]["host"]["other_devices"]
    assert len(devices) == 8 and {g["compute_capability"] for g in devices} == {"9.0"}
    bare = run_cli("check", "--vendor", "nvidia", "--gpus", "8", "--json", env=ENV)
    assert bare.exit_code == 6, bare.stdout
    assert [m["subject"] for m in json.loads(bare.stdout)["missing"]] == ["cuda-arch-unchecked"]
    # The wrong-CUDA case of the issue: driver 550 is told no CUDA 13 build fits (wheel included).
    old = run_cli(
        "check",
        "--cc",
        "9.0",
        "--nvidia-driver",
        "550.163.01",
        "--vllm",
        "==0.33.0",
        "--json",
        env=ENV,
    )
    assert old.exit_code == 1 and json.loads(old.stdout)["plan"] is None
    b300 = run_cli("check", "--cc", "10.3", "--nvidia-driver", "580", "--vllm", "==0.33.0", env=ENV)
    assert b300.exit_code == 0, b300.stdout
    for bad in (
        ("--cc", "9"),
        ("--nvidia-gpu", "X9999"),
        ("--nvidia-driver", "5x"),
        ("--cc", "9.0", "--gfx", "gfx942"),
        ("--nvidia-gpu", "H200", "--cc", "8.0"),
    ):
        result = run_cli("check", *bad, env=ENV)
        assert result.exit_code == 2, (bad, result.stdout)
        assert result.stderr.startswith("error: ") and "\nhint: " in result.stderr


def test_an_nvidia_node_is_a_node_in_every_output() -> None:
    """issue 38 (b): an 8-GPU NVIDIA node is an 8-GPU node with its vendor stated, in check's and
    image's JSON alike, and not-an-amd-gpu is no problem of a node check plans (a report written
    before issue 38, with 0 GPUs and that problem, reads the same)."""
    flags = ("--nvidia-gpu", "H100", "--gpus", "8", "--nvidia-driver", "580.159.04", "--json")
    d = json.loads(run_cli("check", *flags, env=ENV).stdout)
    assert (d["node"]["physical_gpu_count"], d["node"]["logical_gpu_count"]) == (8, 8)
    assert d["node"]["gpu_vendor"] == "nvidia"
    old = json.loads(run_cli("check", "--node", str(LIVE), "--json", env=ENV).stdout)
    assert old["node"]["logical_gpu_count"] == 1 and old["node"]["gpu_vendor"] == "nvidia"
    assert "not-an-amd-gpu" not in [p["code"] for p in old["node"]["problems"]]
    image = run_cli("image", "--node", str(LIVE), "--json", env=ENV)
    assert image.exit_code == 0, image.stdout
    node = json.loads(image.stdout)["node"]
    assert (node["gpus"], node["gpu_vendor"]) == (1, "nvidia")


def test_a_pypi_wheel_too_new_for_the_driver_names_the_release_s_cuda_12_build() -> None:
    """issue 38 (c): 0.32.0's PyPI wheel is the CUDA 13.0 build; its pipeline also builds a CUDA
    12.9 wheel (not on PyPI), which a 570 driver runs: the wheel's rejection says so, and never
    offers the image's forward-compatibility route for a wheel."""
    d = solve(M, node(driver="570.195.03"), Request(vllm=parse_spec("==0.32.0")))
    wheel = next(e for e in d.rejected if e.candidate.kind == "wheel")
    (reason,) = wheel.reasons
    assert reason.code == "cuda-driver-too-old"
    # the CUDA 12.9 wheel, not the image's forward-compatibility route ("/compat")
    assert reason.hint.key == "cuda-driver-too-old/variant"
    assert reason.hint.value("variants") == "12.9"


def test_nvidia_flags_reach_image_and_the_follow_up_command() -> None:
    """issue 38 (e): the flags describe the node to `image` and `upgrade` too, and check's
    follow-up spells them again: an 8-GPU H200 node gets --tensor-parallel-size 8."""
    flags = ("--cc", "9.0", "--gpus", "8", "--nvidia-driver", "580.159.04")
    check = run_cli("check", *flags, env=ENV)
    assert check.exit_code == 0
    follow = next(line for line in check.stdout.splitlines() if "rocm-vllm image" in line)
    assert "--cc 9.0 --gpus 8 --nvidia-driver 580.159.04" in follow
    image = run_cli("image", *flags, "--json", env=ENV)
    assert image.exit_code == 0, image.stdout
    out = json.loads(image.stdout)
    assert out["node"]["gpus"] == 8 and "--tensor-parallel-size" in out["run_args"]
    up = run_cli("upgrade", "--cc", "9.0", "--nvidia-driver", "570", "--vllm", "==0.33.0", env=ENV)
    assert up.exit_code == 0 and "580" in up.stdout


def test_a_report_written_before_issue_38_reads_as_an_nvidia_node() -> None:
    """The recorded live report (0 GPUs, not-an-amd-gpu) reads back as a 1-GPU NVIDIA node."""
    old = json.loads(LIVE.read_text())
    assert old["physical_gpu_count"] == 0 and old["problems"][0]["code"] == "not-an-amd-gpu"
    n = from_json(old, where="test")
    assert (n.physical_gpu_count, n.logical_gpu_count, n.gpu_vendor) == (1, 1, "nvidia")
    assert "not-an-amd-gpu" not in [p.code for p in n.problems]


def test_a_gpu_covered_only_through_ptx_is_said_to_jit() -> None:
    """0.22.0's CUDA 13 build lists 12.0+PTX: a 12.1 GPU runs it through the driver's JIT (said,
    info); a B300 on 0.33.0's family target 10.0f needs none."""
    spark = solve(M, node(compute_capability="12.1"), Request(vllm=parse_spec("==0.22.0")))
    assert spark.plan is not None, [r.code for e in spark.rejected for r in e.reasons]
    assert "cuda-arch-ptx-jit" in [w.code for w in spark.warnings]
    assert spark.verdict == "supported"  # info, not a warning
    b300 = solve(M, node(compute_capability="10.3"), Request(vllm=parse_spec("==0.33.0")))
    assert "cuda-arch-ptx-jit" not in [w.code for w in b300.warnings]


@pytest.mark.parametrize("spec", ["==0.9.0", "==0.6.0", "==0.8.3", ">=0.6,<0.8.3"])
def test_a_listed_release_with_no_cuda_artifacts_read_is_unknown_not_bad_input(
    spec: str, tmp_path: Path
) -> None:
    # Issue 38 (a): vllm.toml lists it; its CUDA images/wheel were never read (no cuda.toml
    # record, or one from an sdist without the publish script): exit 6 with the refresh, never 2.
    d = solve(M, node(), Request(vllm=parse_spec(spec)))
    assert d.verdict == "unknown" and d.exit_code == 6 and d.plan is None
    assert d.missing and all(f.kind == "release" for f in d.missing)
    for fact in d.missing:
        assert Version(fact.subject) in SpecifierSet(spec)
        # Never read: the refresh that reads it; read without images or wheel: nothing to run.
        read = M.cuda_release(Version(fact.subject)) is not None
        refresh = f"rocm-vllm matrix refresh --source cuda --tag {fact.subject} --write"
        assert fact.fetch == (None if read else refresh)
    r = run_cli("check", "--node", str(write(tmp_path)), "--vllm", spec, "--json")
    assert r.exit_code == 6 and json.loads(r.stdout)["verdict"] == "unknown"


def test_a_release_the_data_does_not_list_stays_bad_input() -> None:
    from resolver.util.errors import InputError

    with pytest.raises(InputError):
        solve(M, node(), Request(vllm=parse_spec("==0.5.9")))


def test_a_quantization_below_the_gpu_s_capability_floor_is_refused_per_release() -> None:
    """Issue 38 (b): --quantization on an NVIDIA node is checked against the floor the release's
    own config states (get_min_capability in its sdist), not refused as a question."""
    r20 = M.cuda_release(Version("0.20.0"))
    assert r20 is not None and r20.quant_floor("modelopt") == "8.9"
    assert r20.quant_floor("fp_quant") == "10.0"
    # An A100 (8.0) is below modelopt FP8's 8.9 in 0.20.0: no path, with the reason code.
    a100 = node(compute_capability="8.0", name="NVIDIA A100-SXM4-80GB")
    d = solve(M, a100, Request(vllm=parse_spec("==0.20.0"), quantization="modelopt"))
    assert d.verdict == "unsupported" and d.exit_code != 0
    assert d.rejected and all(
        "cuda-quant-capability" in {r.code for r in e.reasons} for e in d.rejected
    )
    # The H200 (9.0) clears it; fp_quant (10.0) it does not.
    assert (
        solve(M, node(), Request(vllm=parse_spec("==0.20.0"), quantization="modelopt")).plan
        is not None
    )
    h = solve(M, node(), Request(vllm=parse_spec("==0.20.0"), quantization="fp_quant"))
    assert h.plan is None and any(r.code == "cuda-quant-capability" for r in h.blockers)
    # A method the release does not state a floor for is not refused.
    assert (
        solve(M, node(), Request(vllm=parse_spec("==0.20.0"), quantization="no-such")).plan
        is not None
    )


def test_no_supported_cuda_plan_runs_a_method_below_its_floor() -> None:
    for cap in ("7.5", "8.0", "8.6", "8.9", "9.0", "10.0"):
        n = node(compute_capability=cap)
        for method in ("fp8", "modelopt", "fp_quant", "mxfp4", "awq_marlin"):
            d = solve(M, n, Request(quantization=method))
            if d.plan is None:
                continue
            release = M.cuda_release(d.plan.candidate.vllm)
            floor = release.quant_floor(method) if release else None
            assert floor is None or Version(cap) >= Version(floor), (cap, method)


def test_kv_cache_dtype_on_an_nvidia_node_is_checked_not_refused(tmp_path: Path) -> None:
    """issue 38: --kv-cache-dtype on an NVIDIA node was exit 2. CacheDType is platform-wide (the
    rule AMD nodes get, stated once): a dtype the release lists plans with what is not read (the
    CUDA backends per compute capability) said, and unknown under --strict; one the release
    does not list stops its paths."""
    path = str(write(tmp_path))
    r = run_cli("check", "--node", path, "--kv-cache-dtype", "fp8", "--json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["plan"] is not None
    assert "kv-cache-dtype-unchecked" in {w["code"] for w in doc["warnings"]}
    strict = run_cli("check", "--node", path, "--kv-cache-dtype", "fp8", "--strict", "--json")
    assert strict.exit_code == 6
    assert {m["subject"] for m in json.loads(strict.stdout)["missing"]} == {
        "kv-cache-dtype-unchecked"
    }
    # Every release with CUDA images lists fp8: take it out of the newest one's CacheDType, and
    # that release's paths stop on the same rule an AMD node's would.
    newest = max((r for r in M.cuda if r.images), key=lambda r: r.version)
    caps = M.capabilities_of(newest.version)
    assert caps is not None and "fp8" in caps.kv_cache_dtypes
    lacking = msgspec.structs.replace(
        caps, kv_cache_dtypes=tuple(d for d in caps.kv_cache_dtypes if d != "fp8")
    )
    m2 = M.with_tables(capabilities=tuple(lacking if c is caps else c for c in M.capabilities))
    d = solve(m2, node(), Request(kv_cache_dtype="fp8", vllm=parse_spec(f"=={newest.version}")))
    assert d.plan is None
    assert {r.code for e in d.rejected for r in e.reasons} >= {"kv-cache-dtype-not-listed"}
