"""`rocm-vllm dockerfile`: golden files per era and node type, hadolint, pins equal to the data,
refusals with exit codes, unsafe values, atomic output, and a real build of a stand-in template.

Regenerate the golden files after an intended change with ``UPDATE_GOLDEN=1 pytest
tests/test_dockerfile.py``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec.structs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from resolver.artifacts import dockerfile as df
from resolver.artifacts.dockerfile import rendering as dfr
from resolver.artifacts.mirrors import mirror_image
from resolver.cli import app
from resolver.data import matrix as matrix_mod
from resolver.data import resources
from resolver.data.model import ComponentPin, Matrix
from resolver.data.node import from_flags
from resolver.refresh import dockerfile_parse as dp
from resolver.util.atomic import write_output
from resolver.util.errors import InputError, UnsafeInputError, UnsafeValueError, UsageError
from tests.helpers import said

from .conftest import LIVE_MATRIX

GOLDEN = Path(__file__).parent / "golden" / "dockerfile"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
HADOLINT = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")


def hadolint(path: Path) -> list[dict[str, Any]]:
    """hadolint's findings for a Dockerfile (none: it lints clean)."""
    lint = subprocess.run(
        [HADOLINT, "--no-color", "-f", "json", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    return list(json.loads(lint.stdout or "[]"))


# (golden name, vLLM release, gfx list, amdgpu driver): one per era and node type.
CASES: list[tuple[str, str, str, str | None]] = [
    ("v0.6.6.post1-gfx942", "0.6.6.post1", "gfx942", "6.4.3"),  # single-stage rocm/pytorch era
    ("v0.7.0-gfx90a", "0.7.0", "gfx90a", "6.4.3"),  # two files at the repo root
    ("v0.8.5-gfx1100", "0.8.5", "gfx1100", "30.30.3"),  # docker/ layout, RDNA3
    ("v0.10.0-gfx942", "0.10.0", "gfx942", "30.30.3"),  # the acceptance case
    ("v0.16.0-gfx1151", "0.16.0", "gfx1151", None),  # APU without an AMD driver version
    ("v0.23.0-gfx1201", "0.23.0", "gfx1201", "30.30.3"),  # 2026, RDNA4
    (
        "v0.24.0-gfx942-gfx950",
        "0.24.0",
        "gfx942,gfx950",
        "30.30.3",
    ),  # 2026, mixed MI300/MI355 fleet
]

# Live data (matrix/): one per ROCm stack of the newest release, and a TheRock gfx1250 preview.
LIVE_CASES: list[tuple[str, str, str, str | None, str | None]] = [
    ("v0.33.0-rocm100-gfx942", "0.33.0", "gfx942", "30.30.3", None),  # TheRock default stack
    (
        "v0.33.0-rocm72-gfx942",
        "0.33.0",
        "gfx942",
        "6.4.3",
        None,
    ),  # the stack an amdgpu 6.4 host runs
    ("v0.32.0-gfx1100", "0.32.0", "gfx1100", "30.30.3", None),
    # issue 39: MI250 on TheRock (the xnack kpacks removed), and v0.30.0's legacy stack
    ("v0.33.0-rocm100-gfx90a", "0.33.0", "gfx90a", "30.30.3", "rocm100"),
    ("v0.30.0-gfx942", "0.30.0", "gfx942", "30.30.3", None),
]

runner = CliRunner()


@pytest.fixture(scope="module")
def m() -> Matrix:
    return matrix_mod.load()


def plan_for(m: Matrix, version: str, gfx: str, driver: str | None, **kw: Any) -> df.DockerfilePlan:
    node = from_flags(gfx=gfx, gpus=None, driver=driver, os=None, rocm=None, python=None)
    return df.plan_dockerfile(
        m, node, df.find_release(m, version), max_jobs=kw.pop("max_jobs", None), **kw
    )


def cli(*args: str, env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, ["dockerfile", *args], env=env)


# --- golden files -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "version", "gfx", "driver", "stack"), LIVE_CASES, ids=[c[0] for c in LIVE_CASES]
)
def test_golden_live_stacks(
    name: str, version: str, gfx: str, driver: str | None, stack: str | None
) -> None:
    live = matrix_mod.load_dir(LIVE_MATRIX)
    node = from_flags(gfx=gfx, gpus=None, driver=driver, os=None, rocm=None, python=None)
    plan = df.plan_dockerfile(live, node, df.choose(live, node, vllm=version, stack=stack))
    text = df.render(plan)
    file = GOLDEN / f"{name}.Dockerfile"
    if UPDATE:
        file.write_text(text)
    assert text == file.read_text(), f"{file.name} differs; UPDATE_GOLDEN=1 regenerates it"


def test_stack_follows_the_host_driver_and_refuses_previews_and_branches() -> None:
    live = matrix_mod.load_dir(LIVE_MATRIX)
    release = df.find_release(live, "0.33.0")
    new = from_flags(gfx="gfx942", gpus=None, driver="30.30.3", os=None, rocm=None, python=None)
    old = from_flags(gfx="gfx942", gpus=None, driver="6.4.3", os=None, rocm=None, python=None)
    for node, variant in ((new, "rocm100"), (old, "rocm72")):
        stack = df.choose(live, node, vllm="0.33.0").candidate.stack
        assert stack is not None and stack.variant == variant
    with pytest.raises(UsageError, match="no 'rocm99' stack"):
        df.choose(live, new, vllm="0.33.0", stack="rocm99")
    preview = release.stack_named("gfx1250")
    assert preview is not None and preview.preview and preview.moving_pins
    node = from_flags(gfx="gfx1250", gpus=None, driver=None, os=None, rocm=None, python=None)
    with pytest.raises(UsageError, match="nightly/preview"):
        df.plan_dockerfile(live, node, release, stack=preview)
    # 0.33.0's only moving pin is FlashAttention's gfx1250 branch, and FA is left out of a
    # gfx1250 build (CK kernels): nothing built moves, so nothing is demanded (issue 19).
    plan = df.plan_dockerfile(live, node, release, stack=preview, allow_preview=True)
    assert "flash_attention" in {o.component for o in plan.omitted}
    assert not plan.moving_refs and "NOT REPRODUCIBLE" not in df.render(plan)
    # 0.32.0's AITER is on main and is built for gfx1250 (AITER_ROCM_ARCH=${PYTORCH_ROCM_ARCH}).
    older = df.find_release(live, "0.32.0")
    stack32 = older.stack_named("gfx1250")
    assert stack32 is not None and "gfx1250" in stack32.aiter_arch
    with pytest.raises(UsageError, match="moving branch"):
        df.plan_dockerfile(live, node, older, stack=stack32, allow_preview=True)
    plan = df.plan_dockerfile(
        live, node, older, stack=stack32, allow_preview=True, allow_moving_refs=True
    )
    assert plan.aiter_arch == ("gfx1250",)
    assert plan.moving_refs == ("aiter@main",) and "NOT REPRODUCIBLE" in df.render(plan)


def test_every_known_stack_of_every_release_plans_and_renders() -> None:
    """`dockerfile` builds every known release's stacks (previews and branches allowed
    explicitly)."""
    live = matrix_mod.load_dir(LIVE_MATRIX)
    count = 0
    for release in live.vllm:
        if not release.known:
            continue
        for stack in release.stacks:
            gfx = next(
                (
                    g
                    for g in stack.arch
                    if g in release.cmake_arch
                    and live.gfx_target(g) is not None
                    and live.gfx_target(g).vllm_status != "unsupported"
                ),
                None,
            )  # type: ignore[union-attr]
            if gfx is None:
                continue
            node = from_flags(gfx=gfx, gpus=None, driver=None, os=None, rocm=None, python=None)
            plan = df.plan_dockerfile(
                live, node, release, stack=stack, allow_preview=True, allow_moving_refs=True
            )
            text = df.render(plan)
            assert (
                text.startswith("# syntax=docker/dockerfile:1")
                and f"FROM {stack.base_image} AS base" in text
            )
            count += 1
    assert count >= 60


@pytest.mark.parametrize(("name", "version", "gfx", "driver"), CASES, ids=[c[0] for c in CASES])
def test_golden(m: Matrix, name: str, version: str, gfx: str, driver: str | None) -> None:
    plan = plan_for(m, version, gfx, driver)
    text = df.render(plan)
    plan_json = json.dumps(plan.to_json(), indent=2) + "\n"
    file, plan_file = GOLDEN / f"{name}.Dockerfile", GOLDEN / f"{name}.json"
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
        plan_file.write_text(plan_json)
    assert text == file.read_text(), f"{file.name} differs; UPDATE_GOLDEN=1 regenerates it"
    assert plan_json == plan_file.read_text(), (
        f"{plan_file.name} differs; UPDATE_GOLDEN=1 regenerates it"
    )


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_hadolint_finds_nothing(name: str) -> None:
    """No error-level finding (the bar), and in fact no warning or info either."""
    findings = hadolint(GOLDEN / f"{name}.Dockerfile")
    assert [f for f in findings if f["level"] == "error"] == []
    assert findings == []


def _file_pins(text: str) -> dict[str, tuple[str, str]]:
    args = dict(re.findall(r"^ARG ([A-Z_]+)=(\S+)$", text, flags=re.MULTILINE))
    return {
        component: (args[f"{prefix}_REPO"], args[f"{prefix}_BRANCH"])
        for component, prefix in ((c, s.arg) for c, s in df.layouts().components.items())
        if f"{prefix}_REPO" in args
    }


@pytest.mark.parametrize(("name", "version", "gfx", "driver"), CASES, ids=[c[0] for c in CASES])
def test_pins_equal_the_data(
    m: Matrix, name: str, version: str, gfx: str, driver: str | None
) -> None:
    """Every pin the release has is in the file (repo and ref verbatim), or listed as left out."""
    release = df.find_release(m, version)
    text = (GOLDEN / f"{name}.Dockerfile").read_text()
    plan = json.loads((GOLDEN / f"{name}.json").read_text())
    in_file = _file_pins(text)
    left_out = {o["component"]: (o["repo"], o["ref"]) for o in plan["omitted"]}
    assert set(in_file) | set(left_out) == {p.component for p in release.pins}
    assert not set(in_file) & set(left_out)
    for pin in release.pins:
        assert (in_file.get(pin.component) or left_out[pin.component]) == (pin.repo, pin.ref)
    assert f"FROM {release.base_image} AS base" in text
    assert f'PYTORCH_ROCM_ARCH="{";".join(sorted(gfx.split(",")))}"' in text
    assert f"ARG VLLM_BRANCH=v{version}" in text


def test_v0_10_0_on_gfx942_is_upstreams_build_for_gfx942_only(m: Matrix) -> None:
    result = cli("--vllm", "0.10.0", "--gfx", "gfx942", "--driver", "30.30.3", "--max-jobs", "8")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "FROM rocm/dev-ubuntu-22.04:6.3.1-complete AS base" in text
    pins = _file_pins(text)
    assert pins["triton"] == ("triton-lang/triton", "e5be006")
    assert pins["pytorch"] == ("pytorch/pytorch", "295f2ed4")
    assert pins["flash_attention"] == ("Dao-AILab/flash-attention", "1a7f4dfa")
    assert pins["aiter"] == ("ROCm/aiter", "916bf3c")
    assert pins["rccl"] == ("ROCm/rccl", "648a58d")
    assert pins["hipblaslt"] == ("ROCm/hipBLASLt", "db8e93b4")
    # Every arch list in the file names gfx942 and nothing else.
    arch_values = re.findall(r'(?:PYTORCH_ROCM_ARCH|GPU_ARCHS|AITER_ROCM_ARCH)="([^"$]*)"', text)
    assert arch_values
    assert set(arch_values) == {"gfx942"}
    assert set(re.findall(r"gfx[0-9a-f]{3,4}", text)) == {"gfx942"}
    # The driver check is stated in the file.
    assert "ROCm 6.3.1 runs on the host's amdgpu driver 30.30.3 (series 30.30)" in text
    assert 'rocm-vllm.gfx="gfx942"' in text


def test_json_plan_states_base_pins_archs_and_driver() -> None:
    result = cli("--vllm", "0.10.0", "--gfx", "gfx942,gfx950", "--driver", "30.30.3", "--json")
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["base_image"] == "rocm/dev-ubuntu-22.04:6.3.1-complete"
    assert plan["driver"] == {"version": "30.30.3", "series": "30.30", "runs_base_rocm": True}
    assert plan["archs"]["pytorch_rocm_arch"] == ["gfx942", "gfx950"]
    # v0.10.0 built AITER for gfx942 only; gfx950 is buildable there but not shipped.
    assert plan["archs"]["aiter"] == ["gfx942"]
    assert any("gfx950 is not in vLLM 0.10.0's shipped" in w for w in plan["warnings"])
    assert any(w.startswith("AITER is built for gfx942 only; gfx950") for w in plan["warnings"])
    assert {p["component"] for p in plan["pins"]} >= {"triton", "pytorch", "aiter"}
    assert plan["labels"]["rocm-vllm.pin.aiter"] == "ROCm/aiter@916bf3c"


# --- refusals -------------------------------------------------------------------------------------


def _one_line_error(result: Any) -> str:
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return errors[0]


@pytest.mark.parametrize(
    ("args", "code", "message", "hint"),
    [
        (
            ["--vllm", "0.10.0", "--gfx", "gfx906"],
            2,
            "not gfx906; vLLM does not support gfx906",  # the solver's gfx-unsupported
            "vLLM upstream will not run on gfx906",
        ),
        (["--vllm", "0.10.0", "--gfx", "gfx1151"], 2, "CMake does not accept it", "0.11.1"),
        (
            ["--vllm", "0.6.6.post1", "--gfx", "gfx942", "--driver", "30.30.3"],
            2,
            "ships ROCm 6.2, but amdgpu 30.30.x runs ROCm user space 6.3-10.0 only",
            "6.4.x",
        ),
        # Flags are the user's input: exit 2 (unsafe values in the data are exit 3, tested below).
        (
            ["--vllm", "0.10.0", "--gfx", "gfx942", "--vllm-ref", "v1; curl x|sh"],
            2,
            "--vllm-ref",
            "shell",
        ),
        (
            ["--vllm", "0.10.0", "--gfx", "gfx942", "--vllm-repo", "a/b c"],
            2,
            "--vllm-repo",
            "shell",
        ),
        (
            ["--vllm", "0.10.0", "--gfx", "gfx942", "--build", "--tag", "x:y;rm"],
            2,
            "--tag",
            "shell",
        ),
        (["--vllm", "0.10.0", "--gfx", "gfx942", "--max-jobs", "0"], 2, "--max-jobs 0", "parallel"),
    ],
)
def test_refusals(args: list[str], code: int, message: str, hint: str) -> None:
    result = cli(*args)
    assert result.exit_code == code, result.stderr
    assert message in _one_line_error(result)
    assert hint in result.stderr.split("hint: ", 1)[1]
    assert result.stdout == ""


def test_vllm_is_read_as_check_reads_it() -> None:
    """issue 34: one parser, one rule. A PEP 440 specifier `check` takes is taken; a release newer
    than the data, or one whose build facts the data lacks, is check's `unknown` (exit 6) with
    the same refresh command, and no Dockerfile on stdout."""
    node = ("--gfx", "gfx942", "--driver", "30.30.3")
    plain = cli("--vllm", "0.10.0", *node)
    assert plain.exit_code == 0, plain.stderr
    for spec in ("==0.10.0", "v0.10.0", "===0.10.0"):
        same = cli("--vllm", spec, *node)
        assert (same.exit_code, same.stdout) == (0, plain.stdout), (spec, same.stderr)
    ranged = cli("--vllm", ">=0.6,<0.10.1", *node, "--json")
    assert ranged.exit_code == 0, ranged.stderr
    assert json.loads(ranged.stdout)["vllm"]["version"] == "0.10.0"
    # 0.17.0 is in the (frozen) data without its build files: `check` answers from its image, a
    # source build has nothing to go on.
    for spec, subject in (("0.99.0", "0.99.0"), ("==0.99.0", "0.99.0"), ("0.17.0", "0.17.0")):
        answer = cli("--vllm", spec, *node, "--json")
        assert answer.exit_code == 6, answer.output
        data = json.loads(answer.stdout)
        assert (data["verdict"], data["exit_code"]) == ("unknown", 6)
        fetch = [f["fetch"] for f in data["missing"]]
        assert fetch == [f"rocm-vllm matrix refresh --source sdist --tag {subject} --write"]
        if subject == "0.99.0":
            checked = runner.invoke(app, ["check", "--vllm", spec, *node, "--json"])
            assert checked.exit_code == 6, checked.stdout
            said = [(f["detail"], f["fetch"]) for f in json.loads(checked.stdout)["missing"]]
            assert said == [(f["detail"], f["fetch"]) for f in data["missing"]]
        text = cli("--vllm", spec, *node)
        assert (text.exit_code, text.stdout) == (6, "")
        assert f"fetch: {fetch[0]}" in text.stderr
    # What check refuses as input, dockerfile refuses the same way (exit 2, the same line).
    for bad in ("garbage", ">=0.99", "0.1.0"):
        checked = runner.invoke(app, ["check", "--vllm", bad, *node, "--json"])
        refused = cli("--vllm", bad, *node, "--json")
        assert refused.exit_code == checked.exit_code == 2, bad
        assert json.loads(refused.stdout)["error"] == json.loads(checked.stdout)["error"]


def test_a_bad_output_target_leaves_the_other_unwritten(tmp_path: Path) -> None:
    """issue 35: -o and --lock are both checked before either is written."""
    node = ("--vllm", "0.10.0", "--gfx", "gfx942", "--driver", "30.30.3")
    good, missing = tmp_path / "Dockerfile", tmp_path / "no" / "such" / "dir" / "x.json"
    for args in (("-o", good, "--lock", missing), ("-o", missing, "--lock", good)):
        result = cli(*node, *(str(a) for a in args))
        assert result.exit_code == 2 and result.stdout == ""
        assert str(missing) in _one_line_error(result)
        assert not good.exists()
    (tmp_path / "old").write_text("kept\n")
    result = cli(*node, "-o", str(tmp_path / "old"), "--lock", str(tmp_path))  # a directory
    assert result.exit_code == 2 and (tmp_path / "old").read_text() == "kept\n"


def test_driver_hint_names_the_series_that_would_run_it() -> None:
    """The driver rule is the solver's (issue 21 step 4): the same words and fix as `check`."""
    result = cli("--vllm", "0.6.6.post1", "--gfx", "gfx942", "--driver", "30.30.3")
    hint = result.stderr.split("hint: ", 1)[1]
    assert "downgrade the host's amdgpu driver to 30.10.x (also running ROCm 6.2:" in hint
    assert "6.4.x" in hint and "30.30" not in hint


def test_a_driver_older_than_the_gpu_is_refused_as_check_refuses_it() -> None:
    """Before, the Dockerfile checked only the base ROCm's window and wrote a file for MI355X
    (gfx950) on amdgpu 6.3, a driver that predates the GPU; it now asks the solver, whose
    driver-predates-gpu reason `check` gives for the same node."""
    args = ("--vllm", "0.10.0", "--gfx", "gfx950", "--driver", "6.3.3")
    result = cli(*args)
    assert result.exit_code == 2 and result.stdout == ""
    error = _one_line_error(result)
    assert "amdgpu 6.3.x shipped with ROCm 6.3.0, before ROCm 7.0.0" in error
    checked = runner.invoke(app, ["check", *args[:1], "==0.10.0", *args[2:], "--json"])
    codes = {r["code"] for r in json.loads(checked.stdout)["blockers"]}
    assert "driver-predates-gpu" in codes


def test_missing_driver_is_a_warning_not_a_refusal() -> None:
    result = cli("--vllm", "0.16.0", "--gfx", "gfx1151", "--max-jobs", "2")
    assert result.exit_code == 0
    assert "warning: the node gave no amdgpu driver version" in result.stderr
    assert "NOT checked against the host's amdgpu driver" in result.stdout


def test_hostile_ref_in_data_is_refused_by_the_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "matrix"
    shutil.copytree(resources.matrix_dir(), data)
    vllm_toml = data / "vllm.toml"
    text = vllm_toml.read_text()
    assert 'ref = "916bf3c"' in text
    vllm_toml.write_text(text.replace('ref = "916bf3c"', 'ref = "v1; curl x|sh"', 1))
    monkeypatch.setenv("ROCM_VLLM_MATRIX_DIR", str(data))  # matrix.load() caches per directory
    result = cli("--vllm", "0.10.0", "--gfx", "gfx942", "--driver", "30.30.3")
    assert result.exit_code == 3
    assert "'v1; curl x|sh' is not an acceptable ref" in _one_line_error(result)
    assert "curl" not in result.stdout


def test_hostile_ref_reaching_the_plan_is_refused_again(m: Matrix) -> None:
    """Defence in depth: a record that skipped the loader's check still cannot reach a RUN line."""
    release = df.find_release(m, "0.10.0")
    assert release.stack is not None
    bad_stack = msgspec.structs.replace(
        release.stack,
        pins=tuple(
            ComponentPin(component=p.component, repo=p.repo, ref="v1; curl x|sh")
            if p.component == "aiter"
            else p
            for p in release.pins
        ),
    )
    bad = msgspec.structs.replace(release, stacks=(bad_stack,))
    node = from_flags(gfx="gfx942", gpus=None, driver="30.30.3", os=None, rocm=None, python=None)
    with pytest.raises(UnsafeValueError, match=r"pins\.aiter\.ref"):
        df.plan_dockerfile(m, node, bad)
    with pytest.raises(UnsafeValueError, match="base_image"):
        df.plan_dockerfile(
            m,
            node,
            msgspec.structs.replace(
                release,
                stacks=(
                    msgspec.structs.replace(release.stack, base_image="rocm/x:1 AS y\nRUN curl x"),
                ),
            ),
        )


@given(st.text(min_size=1, max_size=40))
def test_no_value_with_shell_syntax_reaches_the_file(ref: str) -> None:
    m = matrix_mod.load()
    node = from_flags(gfx="gfx942", gpus=None, driver="30.30.3", os=None, rocm=None, python=None)
    try:
        plan = df.plan_dockerfile(m, node, df.find_release(m, "0.10.0"), vllm_ref=ref, max_jobs=1)
    except UnsafeInputError:
        return
    assert not set(ref) & set(" \t\n;|&$`'\"\\<>(){}*?!#")
    assert f"ARG VLLM_BRANCH={ref}\n" in df.render(plan)


# --- gates ---------------------------------------------------------------------------------------


def test_rdna_build_leaves_out_what_its_gates_exclude(m: Matrix) -> None:
    plan = plan_for(m, "0.23.0", "gfx1201", "30.30.3")
    assert {o.component for o in plan.omitted} == {"flash_attention", "aiter", "mori"}
    assert plan.pin("aiter") is None
    assert plan.aiter_arch == ()
    assert any("aiter is left out" in w and "triton-only" in w for w in plan.warnings)
    text = df.render(plan)
    assert "build_aiter" not in text
    assert "build_fa" not in text
    assert "build_mori" not in text
    assert "# Left out: aiter (ROCm/aiter@v0.1.13.post1)" in text


def test_fleet_builds_every_component_for_both_targets(m: Matrix) -> None:
    plan = plan_for(m, "0.24.0", "gfx950,gfx942", "30.30.3")
    assert (
        plan.gfx
        == plan.pytorch_rocm_arch
        == plan.fa_arch
        == plan.aiter_arch
        == plan.mori_arch
        == ("gfx942", "gfx950")
    )
    assert plan.omitted == ()
    assert not any("unofficial" in w for w in plan.warnings)


def test_unofficial_target_is_built_with_a_warning(m: Matrix) -> None:
    plan = plan_for(m, "0.10.0", "gfx908", "30.30.3")
    assert plan.pytorch_rocm_arch == ("gfx908",)
    assert any(
        "gfx908 is not in vLLM 0.10.0's shipped" in w and "unofficial" in w for w in plan.warnings
    )


def test_fork_and_ref(m: Matrix) -> None:
    plan = plan_for(m, "0.10.0", "gfx942", "30.30.3", vllm_repo="ROCm/vllm", vllm_ref="v0.9.1+rocm")
    text = df.render(plan)
    assert "ARG VLLM_REPO=ROCm/vllm\nARG VLLM_BRANCH=v0.9.1+rocm\n" in text
    assert any("not the v0.10.0 tag" in w for w in plan.warnings)


def test_unknown_gfx_and_empty_node(m: Matrix) -> None:
    release = df.find_release(m, "0.10.0")
    with pytest.raises(UsageError):
        df.plan_dockerfile(
            m,
            from_flags(gfx="gfx942", gpus=None, driver="6.0.1", os=None, rocm=None, python=None),
            release,
        )
    result = cli("--vllm", "0.10.0", "--gfx", "gfx1234")
    assert result.exit_code == 2
    assert "gfx1234 is not a gfx target the data knows" in _one_line_error(result)


def test_without_vllm_the_newest_fitting_release_is_chosen() -> None:
    result = cli("--gfx", "gfx942", "--driver", "30.30.3", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["vllm"]["version"] == "0.24.0"
    # A driver that cannot run ROCm 7.x gets the newest release on a ROCm it runs.
    result = cli("--gfx", "gfx90a", "--driver", "6.3.4", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["base_rocm"] in {"7.0", "6.3.1"}


# --- output ---------------------------------------------------------------------------------------


def test_output_file_is_written_atomically(tmp_path: Path) -> None:
    target = tmp_path / "Dockerfile"
    target.write_text("old\n")
    result = cli("--vllm", "0.10.0", "--gfx", "gfx942", "--driver", "30.30.3", "-o", str(target))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert f"wrote {target}" in result.stderr
    assert target.read_text() == (GOLDEN / "v0.10.0-gfx942.Dockerfile").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Dockerfile"]  # no temp file left behind


def test_output_into_a_missing_directory_fails_cleanly(tmp_path: Path) -> None:
    result = cli("--vllm", "0.10.0", "--gfx", "gfx942", "-o", str(tmp_path / "nope" / "Dockerfile"))
    assert result.exit_code == 2
    assert "cannot write" in _one_line_error(result)


def test_dry_run_build_prints_the_file_without_an_engine() -> None:
    result = cli(
        "--vllm", "0.10.0", "--gfx", "gfx942", "--driver", "30.30.3", "--build", "--dry-run"
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (GOLDEN / "v0.10.0-gfx942.Dockerfile").read_text()


# --- what the file leaves to the build host, and where it pulls from (issue 11.13) ----------------


def test_max_jobs_is_not_baked_in_from_the_generating_machine(m: Matrix) -> None:
    text = df.render(plan_for(m, "0.10.0", "gfx942", "30.30.3"))
    assert re.search(r"^ARG MAX_JOBS$", text, flags=re.MULTILINE)
    assert not re.search(r"^ARG MAX_JOBS=", text, flags=re.MULTILINE)
    assert "ENV MAX_JOBS" not in text  # an empty MAX_JOBS in the environment breaks vLLM's setup.py
    assert plan_for(m, "0.10.0", "gfx942", "30.30.3").to_json()["max_jobs"] is None
    assert df.build_args(plan_for(m, "0.10.0", "gfx942", "30.30.3")) == {}
    explicit = plan_for(m, "0.10.0", "gfx942", "30.30.3", max_jobs=6)
    assert "\nARG MAX_JOBS=6\n" in df.render(explicit) and df.build_args(explicit) == {
        "MAX_JOBS": "6"
    }


def _max_jobs_script(text: str, tmp_path: Path) -> Path:
    """Run the file's own printf that writes the BASH_ENV script, with its path moved here."""
    run = re.search(r"(printf '%s\\n' \\\n.*?> /etc/rocm-vllm/max-jobs.sh)", text, flags=re.DOTALL)
    assert run, "the build stage writes /etc/rocm-vllm/max-jobs.sh"
    script = tmp_path / "max-jobs.sh"
    subprocess.run(
        ["bash", "-c", run.group(1).replace("/etc/rocm-vllm/max-jobs.sh", str(script))], check=True
    )
    return script


def test_max_jobs_defaults_to_what_the_build_host_bears_at_build_time(
    m: Matrix, tmp_path: Path
) -> None:
    text = df.render(plan_for(m, "0.24.0", "gfx942", "30.30.3"))
    assert "BASH_ENV=/etc/rocm-vllm/max-jobs.sh" in text
    script = _max_jobs_script(text, tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "MAX_JOBS"} | {"BASH_ENV": str(script)}
    show = [
        "bash",
        "-o",
        "pipefail",
        "-c",
        'echo "${MAX_JOBS}"',
    ]  # how the base stage's SHELL runs a RUN
    cpus = os.cpu_count() or 1
    mem_jobs = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (4 * 1024**3)
    got = subprocess.run(show, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert int(got) == max(1, min(cpus, mem_jobs))
    # The build argument reaches later stages as ROCM_VLLM_MAX_JOBS (ENV); in build_base as
    # MAX_JOBS.
    for name in ("MAX_JOBS", "ROCM_VLLM_MAX_JOBS"):
        for value in ("", "3"):
            out = subprocess.run(
                show, env={**env, name: value}, capture_output=True, text=True, check=True
            )
            assert out.stdout.strip() == (value or got)


def test_entrypoint_is_vllm_serve_like_the_official_image(m: Matrix) -> None:
    for version, gfx in (("0.6.6.post1", "gfx942"), ("0.10.0", "gfx942"), ("0.24.0", "gfx942")):
        text = df.render(plan_for(m, version, gfx, None))
        assert text.rstrip().endswith('ENTRYPOINT ["vllm", "serve"]')
        assert 'CMD ["/bin/bash"]' not in text


@pytest.mark.parametrize(
    ("mirror", "expect"),
    [
        ("harbor.example.com/dockerhub", "harbor.example.com/dockerhub"),
        ("https://mirror.example:5000/", "mirror.example:5000"),
        ("http://127.0.0.1:5000", "127.0.0.1:5000"),
    ],
)
def test_registry_mirror_rewrites_from_and_syntax(m: Matrix, mirror: str, expect: str) -> None:
    plan = plan_for(m, "0.10.0", "gfx942", "30.30.3", registry_mirror=mirror)
    text = df.render(plan)
    assert text.startswith(f"# syntax={expect}/docker/dockerfile:1\n")
    assert f"FROM {expect}/rocm/dev-ubuntu-22.04:6.3.1-complete AS base" in text
    assert plan.to_json()["registry_mirror"] == expect
    assert (
        plan.to_json()["base_image"] == "rocm/dev-ubuntu-22.04:6.3.1-complete"
    )  # the upstream name stays
    assert f"come through {expect}" in text
    # Official library images get their library/ path at a mirror.
    assert mirror_image("ubuntu:24.04", expect) == f"{expect}/library/ubuntu:24.04"
    assert mirror_image("ghcr.io/org/img:1", expect) == "ghcr.io/org/img:1"


def test_registry_mirror_from_the_environment_and_flag_validation(tmp_path: Path) -> None:
    result = cli(
        "--vllm", "0.10.0", "--gfx", "gfx942", env={"ROCM_VLLM_REGISTRY": "mirror.example"}
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("# syntax=mirror.example/docker/dockerfile:1\n")
    for bad in ("ftp://x", "mirror.example/a b", "mirror;rm -rf /", "HTTP://x/$(id)"):
        bad_result = cli("--vllm", "0.10.0", "--gfx", "gfx942", "--registry-mirror", bad)
        assert bad_result.exit_code == 2, bad
        assert _one_line_error(bad_result).startswith("error: --registry-mirror")
    hub = cli("--vllm", "0.10.0", "--gfx", "gfx942", "--registry-mirror", "docker.io")
    assert hub.stdout.startswith("# syntax=docker/dockerfile:1\n")


def test_stdout_is_exactly_the_file_that_output_writes(tmp_path: Path) -> None:
    args = ("--vllm", "0.24.0", "--gfx", "gfx942", "--driver", "30.30.3")
    shown = cli(*args)
    assert shown.exit_code == 0
    assert shown.stdout.startswith("# syntax=")  # no human header before the file
    cli(*args, "-o", str(tmp_path / "Dockerfile"))
    assert (tmp_path / "Dockerfile").read_text() == shown.stdout


def test_default_tag_says_what_the_image_is(m: Matrix) -> None:
    plan = plan_for(m, "0.24.0", "gfx942,gfx950", "30.30.3")
    assert df.image_tag(plan) == "rocm-vllm/vllm-rocm:0.24.0-gfx942-gfx950"
    assert df.image_tag(plan, "127.0.0.1:5000/me/vllm") == "127.0.0.1:5000/me/vllm:latest"


# --- a real build ---------------------------------------------------------------------------------


STANDIN = GOLDEN / "standin" / "standin.Dockerfile.in"


def test_standin_template_uses_the_real_values(m: Matrix) -> None:
    """The stand-in is filled from the same values as the real file, and lints clean."""
    plan = plan_for(m, "0.10.0", "gfx942", "30.30.3")
    text = df.render_template(STANDIN, df.template_values(plan))
    assert dfr._label_lines(plan) in text
    assert dfr._arg_lines(plan) in text


@pytest.mark.docker
def test_build_through_the_engine(
    request: pytest.FixtureRequest, m: Matrix, tmp_path: Path
) -> None:
    """`--build`'s engine call, for real, with a busybox stand-in for the heavy template: the image
    carries the OCI labels, every pin and the gfx list."""
    try:
        engine = request.getfixturevalue("docker_engine")
    except pytest.FixtureLookupError:
        pytest.skip(
            "the docker_engine fixture comes with artifacts/engine.py (images helper); runs after "
            "merge"
        )
    busybox = shutil.which("busybox")
    if busybox is None:
        pytest.skip("busybox-static is not installed")
    plan = plan_for(m, "0.10.0", "gfx942", "30.30.3", max_jobs=1)
    shutil.copy(busybox, tmp_path / "busybox")
    lines: list[str] = []
    image_id = engine.build(
        dockerfile_text=df.render_template(STANDIN, df.template_values(plan)),
        context_dir=tmp_path,
        tag="rocm-vllm-test/standin:0.10.0-gfx942",
        buildargs=df.build_args(plan),
        on_progress=lines.append,
    )
    assert image_id
    assert lines
    import docker

    labels = docker.from_env().images.get(image_id).labels
    assert labels["rocm-vllm.gfx"] == "gfx942"
    assert labels["rocm-vllm.pin.aiter"] == "ROCm/aiter@916bf3c"
    assert labels["org.opencontainers.image.version"] == "0.10.0"
    assert {k: v for k, v in labels.items()} == dict(plan.labels)
    # The BuildKit-only parts ran: the bind mount from the earlier stage carried the pin across.
    result = engine.run(image_id, ["cat", "/versions.txt"])
    assert result.stdout.strip() == "gfx=gfx942 rocm=6.3.1 max_jobs=1 aiter=916bf3c"
    assert any("RUN --mount=type=cache" in line for line in lines), lines
    # What `image --pull` reads back from the engine: the labels say which targets the image is
    # for, and a node with another GPU is refused before anything runs (issue 25).
    from resolver.artifacts import images

    info = engine.inspect_image(image_id)
    assert dict(info.labels)["rocm-vllm.gfx"] == "gfx942"
    report = images.PullReport(
        "rocm-vllm-test/standin:0.10.0-gfx942",
        info.id,
        info.repo_digests,
        None,
        (),
        labelled_gfx=images._labelled_gfx(info.labels),
    )
    mi300 = from_flags(gfx="gfx942", gpus=None, driver=None, os=None, rocm=None, python=None)
    mi210 = from_flags(gfx="gfx90a", gpus=None, driver=None, os=None, rocm=None, python=None)
    assert images.label_problems(report, mi300) == []
    (problem,) = images.label_problems(report, mi210)
    assert problem.code == "image-label-gfx" and problem.message.value("missing") == "gfx90a"


def test_free_text_from_data_cannot_start_a_line(m: Matrix) -> None:
    """A line break smuggled into a source string (say, through a refresh overlay) stays inside its
    comment; the loader refuses it too (tests/test_matrix.py)."""
    from dataclasses import replace

    plan = replace(
        plan_for(m, "0.24.0", "gfx942", "30.30.3"), source="upstream\nRUN curl evil|sh\r\n# x"
    )
    text = df.render(plan)
    assert not any(line.startswith("RUN curl") for line in text.splitlines())
    assert "upstream RUN curl evil|sh" in text


def test_output_to_devices_writes_into_them_and_never_replaces_them(
    m: Matrix, tmp_path: Path
) -> None:
    import stat

    plan = plan_for(m, "0.10.0", "gfx942", "30.30.3")
    before = Path("/dev/null").stat()
    write_output(Path("/dev/null"), df.render(plan))
    after = Path("/dev/null").stat()
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (
        before.st_ino,
        before.st_rdev,
    )
    with pytest.raises(InputError, match="Is a directory"):
        write_output(tmp_path, "x")


def test_flash_attention_and_mori_follow_each_stacks_own_files() -> None:
    """issue 20: the arch lists FA and MORI are built for come from the stack's files (vllm.toml
    fa_arch, mori_arch), not from lists in code: MORI_GPU_ARCHS is gone from the default stacks
    since v0.27, so MORI is built as upstream builds it; v0.24 still limits it to gfx942;gfx950."""
    live = matrix_mod.load_dir(LIVE_MATRIX)
    node = from_flags(gfx="gfx1100", gpus=None, driver="30.30.3", os=None, rocm=None, python=None)

    def plan_for(version: str) -> df.DockerfilePlan:
        return df.plan_dockerfile(live, node, df.choose(live, node, vllm=version))

    new = plan_for("0.32.0")
    text = df.render(new)
    assert new.pin("mori") is not None
    assert not [line for line in text.splitlines() if "MORI_GPU_ARCHS=" in line]
    assert "# no MORI_GPU_ARCHS: upstream's file for this stack sets none" in text
    old = plan_for("0.24.0")
    assert old.pin("mori") is None
    assert any(o.component == "mori" and "gfx942;gfx950" in o.reason for o in old.omitted)
    # FlashAttention: 0.33.0's gfx1250 stack names gfx1250 in FA_GPU_ARCHS, but upstream's sed
    # drops it, so a gfx1250 build leaves FlashAttention out, as upstream's image does.
    st = next(s for s in df.find_release(live, "0.33.0").stacks if s.variant == "gfx1250")
    assert st.fa_arch == ("gfx942", "gfx950")


# --- exact sources (issue 25): the sdist by its sha256, commits checked after checkout ----------


def _run_step(snippet: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The RUN line of a generated snippet, run by bash as the file's SHELL runs it."""
    command = re.split(r"(?:^|\n)RUN ", snippet, maxsplit=1)[1]
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_vllm_comes_from_its_sdist_checked_against_the_recorded_sha256(tmp_path: Path) -> None:
    """A release with a recorded sdist hash is built from that sdist: the fetch fails unless the
    file has exactly that sha256 (a mirror's copy too); a fork or ref asked for is a Git clone."""
    import hashlib
    import http.server
    import tarfile
    import threading
    from dataclasses import replace

    live = matrix_mod.load_dir(LIVE_MATRIX)  # the frozen copy predates sdist hashes
    plan = plan_for(live, "0.10.0", "gfx942", "30.30.3")
    release = df.find_release(live, "0.10.0")
    assert release.sdist_sha256 is not None
    assert plan.vllm_sdist == (f"{df.SDIST_BASE}/vllm-0.10.0.tar.gz", release.sdist_sha256)
    assert "git clone" not in dfr._vllm_fetch(plan) and plan.to_json()["vllm"]["sdist"]
    fork = plan_for(live, "0.10.0", "gfx942", "30.30.3", vllm_repo="me/vllm")
    assert fork.vllm_sdist is None and "git clone" in dfr._vllm_fetch(fork)

    served = tmp_path / "served"
    (served / "vllm-0.10.0").mkdir(parents=True)
    (served / "vllm-0.10.0" / "PKG-INFO").write_text("Name: vllm\nVersion: 0.10.0\n")
    with tarfile.open(served / "vllm-0.10.0.tar.gz", "w:gz") as tar:
        tar.add(served / "vllm-0.10.0", arcname="vllm-0.10.0")
    good = hashlib.sha256((served / "vllm-0.10.0.tar.gz").read_bytes()).hexdigest()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *_args: Any) -> None:
            pass

    def handler(*args: Any) -> Quiet:
        return Quiet(*args, directory=str(served))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/vllm-0.10.0.tar.gz"
        for sha, ok in ((good, True), ("0" * 64, False)):
            work = tmp_path / sha[:4]
            work.mkdir()
            pinned = replace(plan, vllm_sdist=(url, sha))
            done = _run_step(dfr._vllm_fetch(pinned), work, {"VLLM_SDIST_URL": url})
            assert (done.returncode == 0) == ok, done.stderr
            assert (work / "vllm" / "PKG-INFO").exists() == ok
    finally:
        server.shutdown()
        server.server_close()


def test_a_commit_pin_is_checked_after_checkout(tmp_path: Path) -> None:
    """`git checkout REF` takes a branch or tag named like the commit before the commit itself:
    the check after it fails the build unless HEAD is the recorded commit."""
    repo = tmp_path / "triton"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "one"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    for ref, ok in ((head[:8], True), ("deadbeef", False)):
        check = dfr._verify("triton", ComponentPin(component="triton", repo="ROCm/triton", ref=ref))
        done = _run_step("RUN true" + check, tmp_path, {})
        assert (done.returncode == 0) == ok, done.stderr
    tag = ComponentPin(component="aiter", repo="ROCm/aiter", ref="v0.1.26")
    assert dfr._verify("aiter", tag) == ""  # a tag: said to float in the header instead


@pytest.mark.registry
def test_digest_pins_the_base_image_through_the_registry(m: Matrix, registry_url: str) -> None:
    """`dockerfile --digest` asks the registry (here the mirror the FROM line pulls through, a
    real docker-registry on loopback) for the base tag's manifest digest and pins FROM to it."""
    from .oci import LAYER_TAR, push

    plan = plan_for(m, "0.10.0", "gfx942", "30.30.3")
    repo, _, tag = plan.base_image.partition(":")
    digest = push(registry_url, repo, tag, [(b"base", LAYER_TAR)])
    mirror = registry_url.removeprefix("http://")
    args = ("--vllm", "0.10.0", "--gfx", "gfx942", "--driver", "30.30.3")
    result = cli(*args, "--registry-mirror", registry_url, "--digest")
    assert result.exit_code == 0, result.stderr
    assert f"FROM {mirror}/{plan.base_image}@{digest} AS base" in result.stdout
    assert f"pinned to its digest {digest}" in result.stdout
    assert "(rocm-vllm dockerfile --digest pins it)" not in result.stdout
    shown = json.loads(cli(*args, "--registry-mirror", registry_url, "--digest", "--json").stdout)
    assert shown["base_digest"] == digest
    # Without --digest: the tag, said to float; no registry is asked.
    plain = cli(*args, "--registry-mirror", registry_url)
    assert "@sha256:" not in plain.stdout.split("AS base")[0].splitlines()[-1]
    assert "(rocm-vllm dockerfile --digest pins it)" in plain.stdout


# --- the entrypoint guard (issue 25): the visible GPUs against the image's targets -------------

GUARD_SYSFS = (
    Path(__file__).parent / "probe" / "fixtures" / "sysfs" / "kfd-gfx90a-mi210-8gpu-k8sdp"
)  # 8x MI210 from ROCm/k8s-device-plugin's testdata (tests/probe/fixtures/SOURCES.md)


def _guard(
    tmp_path: Path, want: str, renders: range, **env: str
) -> subprocess.CompletedProcess[str]:
    dev = tmp_path / f"dev-{len(list(tmp_path.iterdir()))}"
    (dev / "dri").mkdir(parents=True)
    for minor in renders:
        (dev / "dri" / f"renderD{minor}").touch()
    script = resources.dockerfiles_dir() / "common" / "guard.sh"
    return subprocess.run(
        ["sh", str(script), "echo", "vllm started"],
        env={
            "PATH": os.environ["PATH"],
            "ROCM_VLLM_GFX": want,
            "ROCM_VLLM_GUARD_SYSFS": str(GUARD_SYSFS),
            "ROCM_VLLM_GUARD_DEV": str(dev),
            **env,
        },
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_guard_starts_vllm_only_on_the_gpus_the_image_carries_code_for(
    tmp_path: Path,
) -> None:
    ok = _guard(tmp_path, "gfx90a;gfx942", range(128, 136))
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "vllm started\n", "")
    wrong = _guard(tmp_path, "gfx942", range(128, 136))
    assert wrong.returncode == df.GUARD_EXIT and wrong.stdout == ""
    assert wrong.stderr.count("\n") == 1 and "a visible GPU is gfx90a" in wrong.stderr
    assert "carries GPU code for gfx942 only" in wrong.stderr
    # Only the GPUs whose render node the container has count (one passed in, here).
    assert _guard(tmp_path, "gfx90a", range(128, 129)).returncode == 0
    none = _guard(tmp_path, "gfx90a", range(0))
    assert none.returncode == df.GUARD_EXIT and "no AMD GPU is visible" in none.stderr
    # The runtime loads the override's code: that is what the image must carry.
    over = _guard(tmp_path, "gfx942", range(128, 136), HSA_OVERRIDE_GFX_VERSION="9.4.2")
    assert over.returncode == 0, over.stderr


# A RX 9070 XT beside a Ryzen iGPU, as tests/probe/fixtures/rocminfo-gfx1201-with-igpu-gfx1036-
# rocm5861.txt lists them: node 0 the CPU, node 1 gfx1201 (UUID GPU-33cdcaebba902e5f), node 2
# gfx1036 (UUID GPU-XX: unique_id 0).
DGPU_UUID = "GPU-33cdcaebba902e5f"
DGPU_IGPU = ((0, None, 0), (120001, 128, 0x33CDCAEBBA902E5F), (100306, 129, 0))


def _sysfs(tmp_path: Path, nodes: tuple[tuple[int, int | None, int], ...]) -> Path:
    """A KFD topology of (gfx_target_version, drm_render_minor, unique_id) nodes, and a /dev
    beside it with the render node of each GPU."""
    root = tmp_path / f"kfd-{len(list(tmp_path.iterdir()))}"
    (root / "dev" / "dri").mkdir(parents=True)
    for i, (version, minor, unique) in enumerate(nodes):
        node = root / "sys" / "topology" / "nodes" / str(i)
        node.mkdir(parents=True)
        lines = [f"gfx_target_version {version}", f"unique_id {unique}"]
        if minor is not None:
            lines.append(f"drm_render_minor {minor}")
            (root / "dev" / "dri" / f"renderD{minor}").touch()
        (node / "properties").write_text("\n".join(lines) + "\n")
    return root


def _guard_on(root: Path, want: str, **env: str) -> subprocess.CompletedProcess[str]:
    script = resources.dockerfiles_dir() / "common" / "guard.sh"
    return subprocess.run(
        ["sh", str(script), "echo", "vllm started"],
        env={
            "PATH": os.environ["PATH"],
            "ROCM_VLLM_GFX": want,
            "ROCM_VLLM_GUARD_SYSFS": str(root / "sys"),
            "ROCM_VLLM_GUARD_DEV": str(root / "dev"),
            **env,
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def _refused(result: subprocess.CompletedProcess[str], names: str) -> bool:
    """Refused the way the guard refuses: exit 78, nothing started, one line naming `names`."""
    return (
        result.returncode == df.GUARD_EXIT
        and result.stdout == ""
        and result.stderr.count("\n") == 1
        and result.stderr.startswith("rocm-vllm guard: ")
        and names in result.stderr
    )


def test_the_guard_checks_only_the_gpus_the_visible_devices_variables_leave(
    tmp_path: Path,
) -> None:
    """issue 34: a dGPU + iGPU node runs under the HIP_VISIBLE_DEVICES=0 that `image` prints;
    ROCR_VISIBLE_DEVICES picks among the GPU agents (index or UUID), then HIP/CUDA index into
    what it left, as the runtime does."""
    node = _sysfs(tmp_path, DGPU_IGPU)
    started = (0, "vllm started\n", "")

    def run(**env: str) -> tuple[int, str, str]:
        r = _guard_on(node, "gfx1201", **env)
        return (r.returncode, r.stdout, r.stderr)

    # Without the variables the runtime sees both, and the iGPU's code is not in the image.
    assert _refused(_guard_on(node, "gfx1201"), "a visible GPU is gfx1036 (GPU 1 of the 2")
    assert run(HIP_VISIBLE_DEVICES="0") == started
    assert run(CUDA_VISIBLE_DEVICES="0") == started  # HIP honours it when HIP_VISIBLE_DEVICES is
    assert run(HIP_VISIBLE_DEVICES="", CUDA_VISIBLE_DEVICES="0") == started  # ... empty
    assert run(ROCR_VISIBLE_DEVICES="0") == started
    assert run(ROCR_VISIBLE_DEVICES="0", HIP_VISIBLE_DEVICES="0") == started
    # HIP indexes into ROCR's order: ROCR puts the iGPU first, HIP takes the second.
    assert run(ROCR_VISIBLE_DEVICES="1,0", HIP_VISIBLE_DEVICES="1") == started
    assert _refused(
        _guard_on(node, "gfx1201", ROCR_VISIBLE_DEVICES="1,0", HIP_VISIBLE_DEVICES="0"),
        "a visible GPU is gfx1036",
    )
    # UUIDs: ROCR takes a unique prefix in any case and trims blanks; HIP the UUID rocminfo prints.
    assert run(ROCR_VISIBLE_DEVICES=DGPU_UUID.upper()) == started
    assert run(ROCR_VISIBLE_DEVICES=" gpu-33cd ") == started
    assert run(HIP_VISIBLE_DEVICES=DGPU_UUID) == started
    assert run(HIP_VISIBLE_DEVICES="0,0,") == started  # HIP skips a repeat and the empty tail
    # A value the runtime would stop at: refused with a line that names it, not run on fewer GPUs.
    assert _refused(_guard_on(node, "gfx1201", HIP_VISIBLE_DEVICES="2"), 'names "2"')
    assert _refused(_guard_on(node, "gfx1201", HIP_VISIBLE_DEVICES="0,5"), 'names "5"')
    assert _refused(_guard_on(node, "gfx1201", ROCR_VISIBLE_DEVICES="2"), 'names "2"')
    assert _refused(
        _guard_on(node, "gfx1201", ROCR_VISIBLE_DEVICES="0", HIP_VISIBLE_DEVICES="1"), 'names "1"'
    )
    assert _refused(_guard_on(node, "gfx1201", ROCR_VISIBLE_DEVICES="GPU-XX"), 'names "GPU-XX"')
    assert _refused(_guard_on(node, "gfx1201", ROCR_VISIBLE_DEVICES="0,0"), "GPU 0 twice")
    assert _refused(_guard_on(node, "gfx1201", HIP_VISIBLE_DEVICES="GPU-0bad"), "GPU-0bad")
    # The partitions of one GPU share its UUID: ROCR stops at a UUID several GPUs match, HIP takes
    # the first.
    twins = _sysfs(tmp_path, ((0, None, 0), (90402, 128, 0xABC), (90402, 129, 0xABC)))
    shared = "GPU-0000000000000abc"
    assert _refused(_guard_on(twins, "gfx942", ROCR_VISIBLE_DEVICES=shared), "exactly one GPU")
    assert _guard_on(twins, "gfx942", HIP_VISIBLE_DEVICES=shared).returncode == 0
    # ROCR_VISIBLE_DEVICES set and empty selects no GPU.
    assert _refused(_guard_on(node, "gfx1201", ROCR_VISIBLE_DEVICES=""), "no AMD GPU is visible")


def test_the_guard_orders_gpus_by_node_number_past_ten(tmp_path: Path) -> None:
    """ROCR's index is the KFD node order by number (node 10 after node 9), not the order a
    shell glob lists the directories in (10 before 2)."""
    nodes = ((0, None, 0), *((90010, 128 + i, 0) for i in range(9)), (90402, 137, 0))
    root = _sysfs(tmp_path, nodes)
    assert _guard_on(root, "gfx90a", HIP_VISIBLE_DEVICES="0,1,2,3,4,5,6,7,8").returncode == 0
    assert _refused(_guard_on(root, "gfx90a", HIP_VISIBLE_DEVICES="9"), "gfx942 (GPU 0 of the 1")


@pytest.mark.parametrize(
    "env",
    [
        {"HIP_VISIBLE_DEVICES": "$(touch PWNED)"},
        {"HIP_VISIBLE_DEVICES": "`touch PWNED`"},
        {"ROCR_VISIBLE_DEVICES": "0;touch PWNED"},
        {"ROCR_VISIBLE_DEVICES": "G$(touch PWNED)"},
        {"CUDA_VISIBLE_DEVICES": "*"},
        {"HIP_VISIBLE_DEVICES": "0\ntouch PWNED"},
        {"HIP_VISIBLE_DEVICES": "a[$(touch PWNED)]"},
        {"HIP_VISIBLE_DEVICES": "99999999999999999999999"},
        {"HIP_VISIBLE_DEVICES": "0x0"},
        {"HIP_VISIBLE_DEVICES": "-1"},
        {"HIP_VISIBLE_DEVICES": "0," * 3000},
        {"HSA_OVERRIDE_GFX_VERSION": "$(touch PWNED)"},
        {"HSA_OVERRIDE_GFX_VERSION": "12.0.1;touch PWNED"},
    ],
)
def test_the_guard_reads_hostile_values_as_data(tmp_path: Path, env: dict[str, str]) -> None:
    """Values from the environment are compared, never run: each is refused with one line and
    no file appears, under dash and under bash."""
    node = _sysfs(tmp_path, DGPU_IGPU)
    work = tmp_path / "cwd"
    work.mkdir()
    script = resources.dockerfiles_dir() / "common" / "guard.sh"
    for shell in ("sh", "bash"):
        r = subprocess.run(
            [shell, str(script), "echo", "vllm started"],
            env={
                "PATH": os.environ["PATH"],
                "ROCM_VLLM_GFX": "gfx1201",
                "ROCM_VLLM_GUARD_SYSFS": str(node / "sys"),
                "ROCM_VLLM_GUARD_DEV": str(node / "dev"),
                **env,
            },
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert _refused(r, "rocm-vllm guard: "), (shell, r.stderr)
        assert list(work.iterdir()) == []


def test_guard_is_written_into_the_image_exactly_and_lints_clean(m: Matrix, tmp_path: Path) -> None:
    plan = plan_for(m, "0.10.0", "gfx942", "30.30.3", guard=True)
    text = df.render(plan)
    assert f'ENTRYPOINT ["{df.GUARD_PATH}", "vllm", "serve"]' in text
    assert 'ENV ROCM_VLLM_GFX="gfx942"' in text
    # The RUN line, run by the file's shell, writes exactly the script file.
    run = text.split("\nRUN printf ", 1)[1].split("\n    && chmod", 1)[0].removesuffix(" \\")
    out = tmp_path / "guard"
    command = "printf " + run.replace(df.GUARD_PATH, str(out))
    subprocess.run(["bash", "-o", "pipefail", "-c", command], check=True)
    assert out.read_text() == (resources.dockerfiles_dir() / "common" / "guard.sh").read_text()
    (tmp_path / "Dockerfile").write_text(text)
    assert hadolint(tmp_path / "Dockerfile") == []
    assert "rocm-vllm-guard" not in df.render(plan_for(m, "0.10.0", "gfx942", "30.30.3"))


def test_vllms_requirements_are_constrained_to_the_wheels_built(m: Matrix, tmp_path: Path) -> None:
    """issue 25: the final stage writes name==version of every wheel it installed (from the
    file names, as pip names them) and installs vLLM's requirements with -c, so no index build
    replaces a pinned component."""
    text = df.render(plan_for(m, "0.10.0", "gfx942", "30.30.3"))
    loop = next(line for line in text.splitlines() if "for w in /install/*/*.whl" in line)
    assert "-c /etc/rocm-vllm/constraints.txt" in text
    wheels = {
        "triton": "triton-3.3.0+git669b31ac-cp312-cp312-linux_x86_64.whl",
        "fa": "flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl",
        "vllm": "vllm-0.33.0+rocm100-cp38-abi3-linux_x86_64.whl",
    }
    for stage, name in wheels.items():
        (tmp_path / stage).mkdir()
        (tmp_path / stage / name).touch()
    command = loop.strip().removeprefix("&& ").removesuffix("\\").replace("/install", str(tmp_path))
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True)
    assert sorted(done.stdout.split()) == [
        "flash_attn==2.8.3",
        "triton==3.3.0+git669b31ac",
        "vllm==0.33.0+rocm100",
    ]


def test_every_layout_and_component_the_data_can_name_is_in_the_layouts_manifest() -> None:
    """issue 21 step 4: layouts are data (dockerfiles/layouts.toml) beside their fragments; each
    layout vllm.toml may name is described there, with fragments that exist, and every pinnable
    component has its ARG prefix, stage and checkout directory."""
    from resolver.data.model import COMPONENTS, LAYOUTS

    known = df.layouts()
    assert set(LAYOUTS) <= set(known.layouts) and set(COMPONENTS) <= set(known.components)
    root = resources.dockerfiles_dir()
    for spec in known.layouts.values():
        fragments = [spec.base, *(f for _, f in spec.override)]
        fragments += [
            f"common/{s}" if s in known.common else f"{spec.family}/{s}" for s in spec.stages
        ]
        for name in fragments:
            assert (root / f"{name}.Dockerfile.in").is_file(), name
    assert {c.stage for c in known.components.values()} <= {
        s for spec in known.layouts.values() for s in spec.stages
    }


def test_a_target_the_cmake_refuses_is_refused_in_the_words_check_uses() -> None:
    """issue 21 step 4: the gfx rule of a source build is the solver's; `dockerfile` and `check`
    say the same thing for the same node, and both name the releases whose build accepts it."""
    result = cli("--vllm", "0.10.0", "--gfx", "gfx1151", "--driver", "30.30.3")
    assert result.exit_code == 2
    error = _one_line_error(result).removeprefix("error: ")
    assert error == (
        "vLLM 0.10.0 cannot be built for gfx1151: its CMake does not accept it "
        "(HIP_SUPPORTED_ARCHS)"
    )
    assert "releases whose build accepts gfx1151: 0.11.1" in result.stderr
    checked = runner.invoke(
        app, ["check", "--vllm", "==0.10.0", "--gfx", "gfx1151", "--driver", "30.30.3", "--json"]
    )
    messages = [
        r["message"]
        for e in json.loads(checked.stdout)["reasons"]
        if e["candidate"]["kind"] == "source"
        for r in e["reasons"]
    ]
    assert error in messages


# --- air-gapped: a generated file's fetches, built with --network=none (issue 25) --------------

AIRGAP = GOLDEN / "standin" / "airgap.Dockerfile.in"


def _copy_with_libs(binary: Path, root: Path) -> None:
    """``binary`` and every shared library ldd names for it, at the same paths under ``root``."""
    targets = [binary]
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    targets += [Path(p) for p in re.findall(r"(/\S+)", out) if Path(p).exists()]
    for path in targets:
        dest = root / path.relative_to("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path.resolve(), dest)


@pytest.mark.docker
def test_a_generated_file_builds_with_network_none_against_the_sites_mirrors(
    request: pytest.FixtureRequest, m: Matrix, tmp_path: Path, registry_url: str
) -> None:
    """The file's clone (through GIT_BASE, then the commit check) and its sdist fetch (through
    VLLM_SDIST_URL, then sha256sum) reach only the mirrors a mirror file names, here inside the
    build image (file:///mirror), and its FROM comes through the site's registry (the tests'
    docker-registry on loopback, the mirror file's `registry`): the build runs with
    --network=none. A commit the mirror lacks, or other bytes for the sdist, stop it."""
    engine = request.getfixturevalue("docker_engine")
    busybox, git, curl = (shutil.which(b) for b in ("busybox", "git", "curl"))
    if not (busybox and git and curl):
        pytest.skip("busybox, git and curl are needed to make the tools image")
    # The site's mirrors: a bare Triton repository and a vLLM sdist.
    tools = tmp_path / "tools"
    mirror = tools / "rootfs" / "mirror"
    work = tmp_path / "triton"
    run = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "setup.py").write_text("# stand-in\n")
    subprocess.run([*run, "-C", str(work), "add", "."], check=True)
    subprocess.run([*run, "-C", str(work), "commit", "-q", "-m", "one"], check=True)
    head = subprocess.run(
        ["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(work), str(mirror / "git" / "ROCm" / "triton.git")],
        check=True,
    )
    import hashlib
    import tarfile

    src = tmp_path / "vllm-0.10.0"
    src.mkdir()
    (src / "PKG-INFO").write_text("Name: vllm\nVersion: 0.10.0\n")
    (mirror / "sdist").mkdir(parents=True)
    with tarfile.open(mirror / "sdist" / "vllm-0.10.0.tar.gz", "w:gz") as tar:
        tar.add(src, arcname="vllm-0.10.0")
    sha = hashlib.sha256((mirror / "sdist" / "vllm-0.10.0.tar.gz").read_bytes()).hexdigest()
    # The build image: busybox, git and curl from this machine (no registry is reachable).
    root = tools / "rootfs"
    for binary in (git, curl):
        _copy_with_libs(Path(binary), root)
    (root / "bin").mkdir(exist_ok=True)
    shutil.copy2(busybox, root / "bin" / "busybox")
    shutil.copy2(busybox, root / "bin" / "sh")
    core = root / "usr" / "lib" / "git-core"
    core.mkdir(parents=True, exist_ok=True)
    for name in ("git-upload-pack", "git-receive-pack"):
        shutil.copy2(Path(git).resolve(), core / name)
    tools_id = engine.build(
        dockerfile_text=(
            "FROM scratch\nCOPY rootfs/ /\n"
            'RUN ["/bin/busybox", "--install", "-s", "/bin"]\n'
            "ENV PATH=/usr/bin:/bin GIT_EXEC_PATH=/usr/lib/git-core\n"
        ),
        context_dir=tools,
        tag="rocm-vllm-test/airgap-tools:1",
        buildargs={},
        on_progress=lambda _line: None,
        network="none",
    )
    assert tools_id
    # The build image lives in the site's registry only: pushed, then gone from the engine.
    host = registry_url.split("://", 1)[1]
    name = f"{host}/rocm-vllm-test/airgap-tools"
    engine.client.images.get(tools_id).tag(name, "1")
    for event in engine.client.api.push(name, tag="1", stream=True, decode=True):
        assert "error" not in event, event
    engine.client.images.remove(f"{name}:1", force=True)
    engine.client.images.remove("rocm-vllm-test/airgap-tools:1", force=True)
    # The generated file, through the site's mirror file.
    config = tmp_path / "mirrors.toml"
    config.write_text(
        f'git = "file:///mirror/git"\nsdist = "file:///mirror/sdist"\nregistry = "{registry_url}"\n'
    )
    from dataclasses import replace

    from resolver.artifacts import mirrors

    plan = plan_for(m, "0.10.0", "gfx942", "30.30.3", mirrors=mirrors.load(config))
    triton = next(p for p in plan.pins if p.component == "triton")

    def build(ref: str, sdist_sha: str = sha) -> str:
        pinned = replace(
            plan,
            pins=tuple(
                ComponentPin(component="triton", repo="ROCm/triton", ref=ref) if p is triton else p
                for p in plan.pins
            ),
            vllm_sdist=(f"file:///mirror/sdist/vllm-{plan.vllm_version}.tar.gz", sdist_sha),
        )
        values = df.template_values(pinned)
        fragment = df.render_template(
            resources.dockerfiles_dir() / "common" / "triton.Dockerfile.in", values
        )
        values["triton_fetch"] = fragment.split("\nRUN --mount")[0]  # the clone and its check
        # FROM as the file names every Docker Hub image: through the mirror file's registry.
        values["tools_image"] = mirror_image(
            "rocm-vllm-test/airgap-tools:1", pinned.registry_mirror
        )
        text = df.render_template(AIRGAP, values)
        assert "ARG GIT_BASE=file:///mirror/git" in text and "https://" not in text
        return str(
            engine.build(
                dockerfile_text=text,
                context_dir=tmp_path / "empty",
                tag="rocm-vllm-test/airgap:1",
                buildargs={},
                on_progress=lambda _line: None,
                network="none",
            )
        )

    (tmp_path / "empty").mkdir()
    image_id = build(head[:8])
    result = engine.run(image_id, ["/bin/sh", "-c", "cat /app/vllm/PKG-INFO; ls /app/triton"])
    assert "Version: 0.10.0" in result.stdout and "setup.py" in result.stdout
    from resolver.util.errors import DockerEngineError

    with pytest.raises(DockerEngineError):
        build("deadbeef")  # a commit the mirror does not have: the build stops
    with pytest.raises(DockerEngineError):
        build(head[:8], "0" * 64)  # a mirror serving other bytes than the release: it stops


def test_every_golden_dockerfile_lints_clean() -> None:
    """The live-data goldens too (they take vLLM from its sdist): a pipe without pipefail there
    once slipped past the frozen-data ones."""
    for path in sorted(GOLDEN.glob("*.Dockerfile")):
        assert hadolint(path) == [], path.name


# --- the plan starts from the solver's verdict ------------------------------------------------


def test_the_cli_solves_once_and_the_plan_takes_that_evaluation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`dockerfile` asks the solver once (issue 21): the plan is made from that evaluation, not
    from a second solve or a re-check of its own."""
    import resolver.solve as solve_mod

    calls: list[str] = []
    real_solve, real_pinned = solve_mod.solve, solve_mod.evaluate_pinned

    def counted_solve(*args: object, **kw: object) -> object:
        calls.append("solve")
        return real_solve(*args, **kw)  # type: ignore[arg-type]

    def counted_pinned(*args: object, **kw: object) -> object:
        calls.append("evaluate_pinned")
        return real_pinned(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(solve_mod, "solve", counted_solve)
    monkeypatch.setattr(solve_mod, "evaluate_pinned", counted_pinned)
    for args in (
        ["--gfx", "gfx942", "--driver", "30.30.3"],
        ["--gfx", "gfx942", "--driver", "6.4.3", "--vllm", "0.33.0"],
        ["--gfx", "gfx942", "--vllm", "0.33.0", "--stack", "rocm72"],
        ["--gfx", "gfx942", "--vllm", "0.24.0"],
    ):
        calls.clear()
        result = CliRunner().invoke(
            app, ["dockerfile", *args, "--json"], env={"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
        )
        assert result.exit_code == 0, result.output
        assert len(calls) == 1, (args, calls)
    # A build the solver refuses: refused from that same solve's evaluation.
    calls.clear()
    refused = CliRunner().invoke(
        app,
        ["dockerfile", "--gfx", "gfx942", "--driver", "6.1.3", "--vllm", "0.33.0", "--json"],
        env={"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)},
    )
    assert refused.exit_code == 2 and calls == ["solve"], (refused.output, calls)


def test_a_plan_refuses_in_the_words_of_the_evaluation_it_is_given() -> None:
    live = matrix_mod.load_dir(LIVE_MATRIX)
    node = from_flags(gfx="gfx942", gpus=None, driver="6.1.3", os=None, rocm=None, python=None)
    chosen = df.choose(live, node, vllm="0.33.0")
    assert chosen.reasons and chosen.reasons[0].code in ("driver-window", "driver-predates-gpu")
    first = next(r for r in chosen.reasons if r.code in ("driver-window", "driver-predates-gpu"))
    with pytest.raises(UsageError) as info:
        df.plan_dockerfile(live, node, chosen)
    # One finding, one wording: the refusal is the evaluation's own words, not a restatement.
    assert info.value.message == said(first.message) and info.value.hint == said(first.hint)


def test_every_unrecorded_arch_list_in_the_layouts_names_its_source() -> None:
    """dockerfiles/layouts.toml's stand-in arch lists (for stacks whose record does not state
    fa_arch / mori_arch) are facts: each says where it comes from, and names known targets."""
    live = matrix_mod.load_dir(LIVE_MATRIX)
    known = {g.name for g in live.gfx}
    lists = {k: c for k, c in df.layouts().components.items() if c.unrecorded_archs}
    assert set(lists) == {"flash_attention", "mori"}
    for name, comp in lists.items():
        assert "vllm-project/vllm" in comp.unrecorded_archs_source, name
        assert comp.unrecorded_archs <= known, name


def test_a_gpu_with_an_override_gets_the_near_targets_build_with_the_override_set() -> None:
    """issue 34: `dockerfile --gfx gfx1031` refused (exit 2) while `check` planned the gfx1030
    build under HSA_OVERRIDE_GFX_VERSION=10.3.0. It writes that build: PYTORCH_ROCM_ARCH and the
    gfx label say gfx1030 (what the image carries, which the guard checks against the override's
    target), the image sets the override with a comment saying why, and it says unofficial."""
    result = cli("--gfx", "gfx1031", "--driver", "30.30.3")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert 'PYTORCH_ROCM_ARCH="gfx1030"' in text
    assert 'rocm-vllm.gfx="gfx1030"' in text
    lines = text.splitlines()
    env = lines.index("ENV HSA_OVERRIDE_GFX_VERSION=10.3.0")
    assert lines[env - 2].startswith("# UNOFFICIAL:") and "gfx1031 as gfx1030" in lines[env - 2]
    assert any(line.startswith("# UNOFFICIAL: built for gfx1030, run on gfx1031") for line in lines)
    assert "unofficial: gfx1031" in result.stderr
    as_json = cli("--gfx", "gfx1031", "--driver", "30.30.3", "--json")
    doc = json.loads(as_json.stdout)
    assert doc["override"] == {
        "hsa_override_gfx_version": "10.3.0",
        "runs_as": {"gfx1031": "gfx1030"},
    }
    assert doc["gfx"] == ["gfx1030"]
    # A target built as itself sets no override.
    plain = json.loads(cli("--gfx", "gfx1030", "--driver", "30.30.3", "--json").stdout)
    assert plain["override"] is None
    assert "HSA_OVERRIDE_GFX_VERSION" not in cli("--gfx", "gfx1030", "--driver", "30.30.3").stdout


# --- issue 39: the build as vLLM builds it, per release ----------------------------------------

SLICES = Path(__file__).parent / "refresh" / "recorded" / "sdist"
# (release, stack): every release with ROCm Dockerfiles since rendering.STEPS_SINCE, each stack.
UPSTREAM_STACKS = [
    ("0.30.0", None),
    ("0.31.0", None),
    ("0.32.0", None),
    ("0.33.0", "rocm100"),
    ("0.33.0", "rocm72"),
]
PREVIEW_STACKS = [(v, "gfx1250") for v in ("0.30.0", "0.31.0", "0.32.0", "0.33.0")]


def _upstream_files(version: str, stack: str | None) -> tuple[str, str]:
    """The stack's base and app Dockerfiles, from the release's recorded sdist slice."""
    import tarfile

    from resolver.refresh import sdist

    with tarfile.open(SLICES / f"vllm-{version}.tar.gz") as tar:
        files = {
            m.name.split("/", 1)[1]: tar.extractfile(m).read().decode()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }
    live = df.find_release(matrix_mod.load_dir(LIVE_MATRIX), version)
    st = next(s for s in live.stacks if (s.variant == stack if stack else s.default))
    sf = next(f for f in sdist._stack_files(files) if f.base == st.dockerfile)
    assert sf.base is not None
    return files[sf.base], files[sf.app]


def _live_plan(version: str, stack: str | None, gfx: str) -> df.DockerfilePlan:
    live = matrix_mod.load_dir(LIVE_MATRIX)
    preview = stack == "gfx1250"  # a nightly ROCm no driver of AMD's table runs, branch pins
    driver = None if preview else "30.30.3"
    node = from_flags(gfx=gfx, gpus=None, driver=driver, os=None, rocm=None, python=None)
    return df.plan_dockerfile(
        live,
        node,
        df.choose(live, node, vllm=version, stack=stack),
        allow_preview=preview,
        allow_moving_refs=preview,
    )


@pytest.mark.parametrize(
    ("version", "stack", "gfx"),
    [
        *(
            (v, st, g)
            for v, st in UPSTREAM_STACKS
            for g in ("gfx942", "gfx90a", "gfx1100", "gfx1201")
        ),
        *((v, st, g) for v, st in PREVIEW_STACKS for g in ("gfx1250",)),
    ],
)
def test_every_upstream_step_is_reproduced_or_listed_with_a_reason(
    version: str, stack: str | None, gfx: str
) -> None:
    """Each ARG, ENV and stage of upstream's two Dockerfiles (read from the sdist) is in the
    generated file, or covered by a header line that says it is left out or done differently,
    and why; a component left out for the targets is said so too."""
    base, app = _upstream_files(version, stack)
    plan = _live_plan(version, stack, gfx)
    header = [line for line in df.render(plan).splitlines() if line.startswith("# ")]
    for step in dfr.upstream_steps(plan):
        assert dfr._step_line(plan, step) in header
        assert step.reason and step.what
    for o in plan.omitted:
        assert any(line.startswith(f"# Left out: {o.component} (") for line in header)
    table = dfr.compare_upstream(plan, [base, app], dp.declared_names)
    missing = [name for name, how, _ in table if how == "unlisted"]
    assert not missing, f"upstream's {missing} neither reproduced nor listed"
    assert all(reason for _, how, reason in table if how != "reproduced")
    assert {how for _, how, _ in table} >= {"reproduced", "differs", "left out"}


@pytest.mark.parametrize(("version", "stack"), UPSTREAM_STACKS)
def test_the_image_sets_the_runtime_env_upstreams_final_image_sets(
    version: str, stack: str | None
) -> None:
    """The final stage's ENV is upstream's, value for value, less what the header lists; the
    base keeps HSA_NO_SCRATCH_RECLAIM; nothing is credited to upstream that it does not set."""
    from resolver.refresh import dockerfile_parse as dp

    base, app = _upstream_files(version, stack)
    up_base, up_app = dp.parse(base), dp.parse(app)
    want = {**up_base.stage_env["final"], **up_app.stage_env["final_common"]}
    plan = _live_plan(version, stack, "gfx942")
    listed = {n for s in dfr.upstream_steps(plan) for n in s.names}
    got = dp.parse(df.render(plan)).stage_env
    ours = {"AITER_ROCM_ARCH": "gfx942"}
    assert got["final"] == {
        **{k: v for k, v in want.items() if v and k not in listed},
        **ours,
    }
    assert "RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES" not in got["final"]
    assert {"HSA_ENABLE_IPC_MODE_LEGACY", "PYTORCH_NVML_BASED_CUDA_CHECK"} <= set(got["final"])
    assert (
        got["base"]["HSA_NO_SCRATCH_RECLAIM"] == up_base.stage_env["base"]["HSA_NO_SCRATCH_RECLAIM"]
    )


@pytest.mark.parametrize(("version", "stack"), UPSTREAM_STACKS)
def test_aiter_and_triton_kernels_are_built_as_upstream_builds_them(
    version: str, stack: str | None
) -> None:
    """AITER_USE_SYSTEM_TRITON=1 where upstream's AITER line has it (all four releases), and
    triton_kernels at upstream's ROCM_TRITON_KERNELS_COMMIT, which vLLM's build is pointed at."""
    from resolver.refresh import dockerfile_parse as dp

    _base, app = _upstream_files(version, stack)
    plan = _live_plan(version, stack, "gfx942")
    text = df.render(plan)
    aiter_line = next(
        r for r in text.split("\nRUN ") if "setup.py bdist_wheel" in r and "AITER" in r
    )
    assert "AITER_USE_SYSTEM_TRITON=1" in aiter_line
    commit = dp.parse(app).args["ROCM_TRITON_KERNELS_COMMIT"]
    assert plan.upstream is not None and plan.upstream.triton_kernels_commit == commit
    facts = dp.parse(text)
    assert facts.args["ROCM_TRITON_KERNELS_COMMIT"] == commit
    assert facts.stage_env["build_vllm"]["TRITON_KERNELS_SRC_DIR"] == "/opt/rocm-triton-kernels"


def test_a_release_that_does_not_set_it_gets_no_system_triton_switch(m: Matrix) -> None:
    """Unknown stays unknown: a stack read before the field existed (the frozen data) builds
    AITER as before and says its runtime ENV is not recorded."""
    text = df.render(plan_for(m, "0.24.0", "gfx942,gfx950", "30.30.3"))
    assert "AITER_USE_SYSTEM_TRITON=1 GPU_ARCHS" not in text
    assert "runtime ENV for this release is not recorded" in text


def test_gfx90a_therock_build_removes_the_xnack_kpacks(tmp_path: Path) -> None:
    """v0.33.0's TheRock stack on MI250: the kpacks upstream deletes (ASAN builds that fail with
    hipErrorInvalidImage) are deleted, rocm_sdk is patched as upstream patches it, and the
    device extras are torch, torchvision and rocm from both indexes."""
    plan = _live_plan("0.33.0", "rocm100", "gfx90a")
    assert plan.upstream is not None
    assert set(plan.upstream.drop_kpacks) == {
        "torch/.kpack/torch_gfx90a:xnack+.kpack",
        "torch/.kpack/torch_gfx90a:xnack-.kpack",
    }
    values = dfr._therock_values(plan)
    assert '"torchvision[device-${arch}]==0.28.0+rocm10.0.0"' in values["device_packages"]
    text = df.render(plan)
    assert text.count('--extra-index-url "${ROCM_NIGHTLY_WHEELS_MULTIARCH_URL}"') == 3
    site = tmp_path / "site"
    kpacks = site / "torch" / ".kpack"
    kpacks.mkdir(parents=True)
    for name in ("torch_gfx90a:xnack+.kpack", "torch_gfx90a:xnack-.kpack", "torch_gfx90a.kpack"):
        (kpacks / name).write_text("x")
    (site / "rocm_sdk").mkdir()
    (site / "rocm_sdk" / "__init__.py").write_text("def f(rtld_global: bool = True): ...\n")
    done = _run_step(values["therock_fixes"], tmp_path, {"SITE_PACKAGES": str(site)})
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in kpacks.iterdir()) == ["torch_gfx90a.kpack"]
    assert "rtld_global: bool = False" in (site / "rocm_sdk" / "__init__.py").read_text()
    # behind a wheel mirror the nightly index is not reached past it
    from dataclasses import replace

    through = replace(plan, mirrors=replace(plan.mirrors, rocm_wheels="https://mirror.example/w/"))
    assert "ROCM_NIGHTLY_WHEELS_MULTIARCH_URL" not in df.render(through)


def test_triton_kernels_are_fetched_at_the_commit_and_checked(tmp_path: Path) -> None:
    """The triton_kernels step against a local repository standing in for ROCm/triton through
    GIT_BASE: the package lands where TRITON_KERNELS_SRC_DIR points; another commit fails."""
    from dataclasses import replace

    repo = tmp_path / "ROCm" / "triton.git"
    src = repo / "python" / "triton_kernels" / "triton_kernels"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "kernels"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    plan = _live_plan("0.33.0", "rocm100", "gfx942")
    assert plan.upstream is not None
    dest = tmp_path / "opt"
    for commit, ok in ((head, True), ("0" * 40, False)):
        pinned = replace(
            plan,
            upstream=msgspec.structs.replace(plan.upstream, triton_kernels_commit=commit),
        )
        step = dfr._triton_kernels(pinned).replace("/opt/rocm-triton-kernels", str(dest))
        step = step.replace("/tmp/triton-kernels", str(tmp_path / "scratch"))
        env = {"GIT_BASE": f"file://{tmp_path}", "ROCM_TRITON_KERNELS_COMMIT": commit}
        done = _run_step(step.split("\nENV ")[0], tmp_path, env)
        assert (done.returncode == 0) == ok, done.stderr
        assert (dest / "__init__.py").exists() == ok
        shutil.rmtree(dest, ignore_errors=True)
        shutil.rmtree(tmp_path / "scratch", ignore_errors=True)


def test_a_tag_with_a_recorded_commit_is_checked_after_checkout(tmp_path: Path) -> None:
    """AITER and MORI tags whose commit the layouts record (a tag can move) fail the build when
    the checkout is at another commit; a tag newer than the record is said to float instead."""
    recorded = ComponentPin(component="mori", repo="ROCm/mori", ref="v1.1.0")
    check = dfr._verify("mori", recorded)
    assert "c4d5877a50a20dea00b414c4422ebc240228684e" in check
    repo = tmp_path / "mori"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-C",
            str(repo),
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "moved",
        ],
        check=True,
    )
    done = _run_step("RUN true" + check, tmp_path, {})
    assert done.returncode != 0 and "mori: not v1.1.0 at c4d5877a" in done.stderr
    plan = _live_plan("0.33.0", "rocm72", "gfx942")
    assert "aiter v0.1.26" in " ".join(plan.floating)  # newer than the recorded snapshot


def test_an_older_release_gets_upstreams_env_less_what_is_not_built() -> None:
    """v0.29.0 (read from its sdist): the final ENV is upstream's, but not the UCX settings of a
    UCX that is not built nor a KINETO_CONFIG naming a file not written, and the header's
    Left out lines say so (its steps are compared since issue 39 b)."""
    from resolver.refresh import dockerfile_parse as dp

    plan = _live_plan("0.29.0", None, "gfx942")
    text = df.render(plan)
    final = dp.parse(text).stage_env["final"]
    assert plan.upstream is not None
    recorded = dict(plan.upstream.final_env)
    assert {"KINETO_CONFIG", "UCX_RMA_PPLN_ENABLE"} <= set(recorded)
    assert not {"KINETO_CONFIG", "UCX_RMA_PPLN_ENABLE"} & set(final)
    assert final["HSA_ENABLE_IPC_MODE_LEGACY"] == recorded["HSA_ENABLE_IPC_MODE_LEGACY"]
    header = [line for line in text.splitlines() if line.startswith("# ")]
    assert any(line.startswith("# Left out: NIXL and UCX") for line in header)
    assert any(line.startswith("# Left out: KINETO_CONFIG") for line in header)
    assert not any("are compared from" in line for line in header)


def test_an_upstream_step_nobody_listed_is_caught() -> None:
    """The comparison fails on what upstream adds and the layouts do not explain: a new ARG, a
    new ENV of the final image, a new stage."""
    base, app = _upstream_files("0.33.0", "rocm100")
    plan = _live_plan("0.33.0", "rocm100", "gfx942")
    added = "FROM base AS build_something_new\nARG SOMETHING_NEW=1\nENV NEW_RUNTIME_SWITCH=1\n"
    table = dfr.compare_upstream(plan, [base, app + added], dp.declared_names)
    assert [n for n, how, _ in table if how == "unlisted"] == [
        "NEW_RUNTIME_SWITCH",
        "SOMETHING_NEW",
        "build_something_new",
    ]


# --- issue 39: `dockerfile --compare-upstream`, every release ---------------------------------


def _cache_slices(cache: Path) -> None:
    """The sdist cache as the refresh leaves it (files by the recorded sdist's sha256), filled
    from the recorded slices: the command reads it and downloads nothing."""
    from resolver.refresh import sdist

    (cache / "sdist").mkdir(parents=True, exist_ok=True)
    for r in matrix_mod.load_dir(LIVE_MATRIX).vllm:
        tarball = SLICES / f"vllm-{r.version}.tar.gz"
        if r.sdist_sha256 and tarball.exists():
            doc = {
                "sha256": r.sdist_sha256,
                "wanted": sdist._WANTED.pattern,
                "files": sdist.read_members(tarball.read_bytes()),
            }
            (cache / "sdist" / f"{r.sdist_sha256}.json").write_text(json.dumps(doc))


def test_compare_upstream_prints_the_table_from_the_cached_sdist(tmp_path: Path) -> None:
    """`--compare-upstream` prints every upstream name with how it is taken and why, from the
    release's sdist as the refresh cached it; --json validates against the published schema."""
    import jsonschema

    _cache_slices(tmp_path)
    env = {"ROCM_VLLM_CACHE_DIR": str(tmp_path), "ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    args = ("--gfx", "gfx942", "--driver", "30.30.3", "--vllm", "0.33.0", "--compare-upstream")
    text = cli(*args, env=env)
    assert text.exit_code == 0, text.output
    assert "FROM" not in text.stdout  # a table, not a Dockerfile
    rows = {line.split()[0]: line for line in text.stdout.splitlines()[2:-1]}
    assert "AITER_BRANCH" in rows and " reproduced" in rows["AITER_BRANCH"]
    doc = json.loads(cli(*args, "--json", env=env).stdout)
    schema = json.loads(
        (Path(__file__).parents[1] / "docs" / "dockerfile-compare.schema.json").read_text()
    )
    jsonschema.validate(doc, schema)
    assert (doc["vllm"], doc["stack"], doc["gfx"]) == ("0.33.0", "rocm100", ["gfx942"])
    assert doc["dockerfiles"] == ["docker/Dockerfile.rocm_base", "docker/Dockerfile.rocm"]
    assert doc["unlisted"] == []
    by_name = {s["name"]: s for s in doc["steps"]}
    assert by_name["AITER_BRANCH"]["how"] == "reproduced"
    assert all(s["reason"] for s in doc["steps"] if s["how"] != "reproduced")
    assert {s["how"] for s in doc["steps"]} >= {"reproduced", "differs", "left out"}
    # The other stack of the same release: its own files.
    other = json.loads(cli(*args, "--stack", "rocm72", "--json", env=env).stdout)
    assert other["dockerfiles"] == ["docker/Dockerfile.rocm_72_base", "docker/Dockerfile.rocm_72"]


def test_compare_upstream_offline_says_where_to_get_the_sdist(tmp_path: Path) -> None:
    """No cached sdist and no index to reach: one line, the refresh command that caches it,
    exit 4 (an upstream HTTP failure); --json gives the error object."""
    mirrors = tmp_path / "mirrors.toml"
    mirrors.write_text('sdist = "http://127.0.0.1:9/packages"\n')
    env = {
        "ROCM_VLLM_CACHE_DIR": str(tmp_path / "cache"),
        "ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX),
    }
    args = ("--gfx", "gfx942", "--driver", "30.30.3", "--vllm", "0.33.0", "--compare-upstream")
    result = cli(*args, "--mirror-config", str(mirrors), env=env)
    assert result.exit_code == 4, result.output
    assert "Traceback" not in result.output
    assert "matrix refresh --source sdist --tag 0.33.0" in result.output
    doc = json.loads(cli(*args, "--mirror-config", str(mirrors), "--json", env=env).stdout)
    assert doc["error"]["exit_code"] == 4
    # And a table is not a Dockerfile: nothing to write or build.
    refused = cli(*args, "--build", env=env)
    assert refused.exit_code == UsageError.exit_code


def test_compare_upstream_fails_on_an_unlisted_step(tmp_path: Path) -> None:
    """A name upstream's files gain that nothing lists: named, exit 1 (CI can gate on it)."""
    _cache_slices(tmp_path)
    release = df.find_release(matrix_mod.load_dir(LIVE_MATRIX), "0.33.0")
    cached = tmp_path / "sdist" / f"{release.sdist_sha256}.json"
    doc = json.loads(cached.read_text())
    doc["files"]["docker/Dockerfile.rocm"] += "\nARG SOMETHING_NEW=1\n"
    cached.write_text(json.dumps(doc))
    env = {"ROCM_VLLM_CACHE_DIR": str(tmp_path), "ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    args = ("--gfx", "gfx942", "--driver", "30.30.3", "--vllm", "0.33.0", "--compare-upstream")
    result = cli(*args, "--json", env=env)
    assert result.exit_code == 1
    assert json.loads(result.stdout)["unlisted"] == ["SOMETHING_NEW"]


def _slice_stacks() -> list[tuple[str, str, str]]:
    """(release, stack, gfx) for every release whose recorded sdist slice has the two-file ROCm
    Dockerfiles (v0.10.0 on; v0.6.4's single file predates rendering.STEPS_SINCE), each stack."""
    from packaging.version import Version

    out = []
    for r in sorted(matrix_mod.load_dir(LIVE_MATRIX).vllm, key=lambda r: r.version):
        if not (SLICES / f"vllm-{r.version}.tar.gz").exists() or r.version < Version("0.10.0"):
            continue
        for stack in r.stacks:
            gfxs = ("gfx1250",) if stack.variant == "gfx1250" else ("gfx942", "gfx1100")
            out += [(str(r.version), stack.variant, g) for g in gfxs]
    return out


@pytest.mark.parametrize(("version", "stack", "gfx"), _slice_stacks())
def test_every_release_with_rocm_dockerfiles_is_reproduced_or_listed(
    version: str, stack: str, gfx: str
) -> None:
    """Issue 39 b: every ARG, ENV and stage of each release's upstream files (every recorded
    sdist slice from v0.10.0, every stack) is in the generated file or in a header line with its
    reason; each such line is said only for releases whose files have one of its names."""
    base, app = _upstream_files(version, stack)
    upstream = dp.declared_names(base) | dp.declared_names(app)
    plan = _live_plan(version, stack, gfx)
    header = [line for line in df.render(plan).splitlines() if line.startswith("# ")]
    for step in dfr.upstream_steps(plan):
        assert dfr._step_line(plan, step) in header
        if plan.layout == "two-stage-docker":
            assert set(step.names) & upstream, f"{step.what!r} said but not in {version}'s files"
    table = dfr.compare_upstream(plan, [base, app], dp.declared_names)
    missing = [name for name, how, _ in table if how == "unlisted"]
    assert not missing, f"upstream's {missing} neither reproduced nor listed"
    assert all(reason for _, how, reason in table if how != "reproduced")


@pytest.mark.docker
def test_the_small_stages_run_under_buildkit_against_local_stand_ins(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Issue 39 c: the generated steps that need no ROCm, run by BuildKit with --network=none in
    an image of this machine's busybox and git: gfx90a's kpack removal on a stand-in TheRock
    site-packages (the plain gfx90a kpack stays), the triton_kernels fetch from a local Git
    mirror through GIT_BASE at the commit and its check, and the commit check after a checkout.
    A checkout at another commit stops the build."""
    from dataclasses import replace

    from resolver.util.errors import DockerEngineError

    engine = request.getfixturevalue("docker_engine")
    busybox, git = shutil.which("busybox"), shutil.which("git")
    if not (busybox and git):
        pytest.skip("busybox and git are needed to make the build image")
    # The local Git server: a bare ROCm/triton.git with triton_kernels, two commits.
    context = tmp_path / "context"
    root = context / "rootfs"
    work = tmp_path / "triton"
    kernels = work / "python" / "triton_kernels" / "triton_kernels"
    kernels.mkdir(parents=True)
    run = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(work)]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    commits = []
    for i in (1, 2):
        (kernels / "__init__.py").write_text(f"# stand-in {i}\n")
        subprocess.run([*run, "add", "-A"], check=True)
        subprocess.run([*run, "commit", "-q", "-m", f"kernels {i}"], check=True)
        commits.append(
            subprocess.run(
                [*run, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
            ).stdout.strip()
        )
    old, head = commits
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(work), str(root / "mirror/git/ROCm/triton.git")],
        check=True,
    )
    _copy_with_libs(Path(git), root)
    (root / "bin").mkdir(exist_ok=True)
    shutil.copy2(busybox, root / "bin" / "busybox")
    shutil.copy2(busybox, root / "bin" / "sh")
    core = root / "usr" / "lib" / "git-core"
    core.mkdir(parents=True, exist_ok=True)
    for name in ("git-upload-pack", "git-receive-pack"):
        shutil.copy2(Path(git).resolve(), core / name)
    # The steps as the generated file writes them for v0.33.0's TheRock stack on MI250.
    plan = _live_plan("0.33.0", "rocm100", "gfx90a")
    assert plan.upstream is not None and plan.upstream.drop_kpacks
    plan = replace(
        plan, upstream=msgspec.structs.replace(plan.upstream, triton_kernels_commit=head)
    )
    text = df.render(plan)
    fixes = dfr._therock_values(plan)["therock_fixes"]
    fetch = dfr._triton_kernels(plan)
    assert fixes in text and fetch in text  # exactly the rendered steps
    kpack = "/site/torch/.kpack"
    names = [f"{kpack}/{k.rsplit('/', 1)[1]}" for k in plan.upstream.drop_kpacks]
    check = dfr._verify(
        "/src/triton", ComponentPin(component="triton", repo="ROCm/triton", ref=head)
    )

    def build(checkout: str) -> str:
        dockerfile = (
            "FROM scratch\nCOPY rootfs/ /\n"
            'RUN ["/bin/busybox", "--install", "-s", "/bin"]\n'
            "ENV PATH=/usr/bin:/bin GIT_EXEC_PATH=/usr/lib/git-core SITE_PACKAGES=/site\n"
            f"RUN mkdir -p {kpack} && touch "
            + " ".join(f'"{n}"' for n in [*names, f"{kpack}/torch_gfx90a.kpack"])
            + f"\n{fixes}\n"
            + "RUN "
            + " && ".join(f'test ! -e "{n}"' for n in names)
            + f" && test -e {kpack}/torch_gfx90a.kpack\n"
            + f"{fetch}\n"
            + "RUN test -f /opt/rocm-triton-kernels/__init__.py\n"
            + "RUN git clone -q file:///mirror/git/ROCm/triton.git /src/triton"
            + f" && git -C /src/triton checkout -q {checkout}{check}\n"
        )
        return str(
            engine.build(
                dockerfile_text=dockerfile,
                context_dir=context,
                tag="rocm-vllm-test/small-stages:1",
                buildargs={"GIT_BASE": "file:///mirror/git", "ROCM_TRITON_KERNELS_COMMIT": head},
                on_progress=lambda _line: None,
                network="none",
            )
        )

    image_id = build(head)
    result = engine.run(image_id, ["/bin/sh", "-c", "cat /opt/rocm-triton-kernels/__init__.py"])
    assert "stand-in 2" in result.stdout
    # (no ExcInfo kept: its traceback would hold the build's socket open past the test)
    said = ""
    try:
        build(old)
    except DockerEngineError as exc:
        said = f"{exc.message} {exc.hint or ''}"
    assert said, "a checkout at another commit was built"
    assert "not commit" in said, said


# --- how to build and run the image (a source build's plan names its run command) --------------


def test_the_written_file_comes_with_its_build_and_run_commands(tmp_path: Path) -> None:
    """gfx1031 runs a gfx1030 build under HSA_OVERRIDE_GFX_VERSION: after the file, stderr says
    how to build it and how to run the image, the override and the node's devices included,
    under the --tag that the build names; --json carries the same command."""
    target = tmp_path / "Dockerfile.vllm-rocm"
    result = cli(
        "--gfx", "gfx1031", "--gpus", "1", "--driver", "30.30.3", "--tag", "vllm-rocm:x",
        "-o", str(target),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    build = shlex.split(next(x for x in lines if x.startswith("build: ")).removeprefix("build: "))
    assert build[-5:] == ["-f", str(target), "-t", "vllm-rocm:x", "."]
    run = shlex.split(next(x for x in lines if x.startswith("run: ")).removeprefix("run: "))
    assert run[:2] == ["docker", "run"] and run[-1] == "vllm-rocm:x"
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in run and "/dev/kfd" in run
    doc = json.loads(
        cli("--gfx", "gfx1031", "--gpus", "1", "--tag", "vllm-rocm:x", "--json").stdout
    )
    assert doc["run_args"][-1] == "vllm-rocm:x"
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in doc["run_args"]


def test_the_run_command_serves_model_sized_by_the_fit(tmp_path: Path) -> None:
    """--model: the image's run command serves it (a local directory mounted read-only at its
    absolute path) with the user's pinned TP; unpinned, with what the solver's fit says: on one
    192 GiB MI300X, Llama-3.1-70B holds 119,040 tokens, not its 131,072 (`check --model`)."""
    spec = str(Path(__file__).parent / "fixtures" / "models" / "llama-3.1-70b")
    node = ["--vllm", "0.10.0", "--gfx", "gfx942", "--gpus", "1", "--driver", "30.30.3"]
    fit = json.loads(CliRunner().invoke(app, ["check", *node, "--model", spec, "--json"]).stdout)[
        "model"
    ]["fit"]
    assert not fit["fits"]
    capped = json.loads(cli(*node, "--model", spec, "--json").stdout)["run_args"]
    assert capped[capped.index("--max-model-len") + 1] == str(fit["max_model_len"])
    result = cli(
        "--vllm", "0.10.0", "--gfx", "gfx942", "--gpus", "8", "--driver", "30.30.3",
        "--model", spec, "--tensor-parallel-size", "2", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    args = json.loads(result.stdout)["run_args"]
    at = args.index(spec)
    assert args[at - 1].startswith("rocm-vllm/vllm-rocm:0.10.0-gfx942")  # the image, then the model
    assert args[args.index("--tensor-parallel-size") + 1] == "2"
    assert f"{spec}:{spec}:ro" in args


def test_the_run_command_serves_every_gpu_and_says_what_the_fit_needs(tmp_path: Path) -> None:
    """Unpinned, the built image's one server takes the node's 8 GPUs (as `image` serves a
    published one), where vLLM 0.10.0's fit needs 2: said on stderr and in `run_notes`, with how
    to run servers of the fit's TP instead; a pinned TP is the user's and is not remarked on."""
    spec = str(Path(__file__).parent / "fixtures" / "models" / "llama-3.1-70b")
    node = ["--vllm", "0.10.0", "--gfx", "gfx942", "--gpus", "8", "--driver", "30.30.3"]
    doc = json.loads(cli(*node, "--model", spec, "--json").stdout)
    import jsonschema

    schema = Path(__file__).parents[1] / "docs" / "dockerfile.schema.json"
    jsonschema.validate(doc, json.loads(schema.read_text()))
    args = doc["run_args"]
    assert args[args.index("--tensor-parallel-size") + 1] == "8"
    [note] = doc["run_notes"]
    assert (note["code"], note["severity"]) == ("tensor-parallel-over-fit", "info")
    assert "--tensor-parallel-size 2" in note["hint"]
    text = cli(*node, "--model", spec, "-o", str(tmp_path / "Dockerfile"))
    assert text.exit_code == 0, text.stderr
    assert "note: --model fits on 2 GPU(s) (TP 2)" in text.stderr
    pinned = json.loads(cli(*node, "--model", spec, "--tensor-parallel-size", "8", "--json").stdout)
    assert pinned["run_notes"] == []
