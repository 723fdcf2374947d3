"""Issue 39's leftovers, pinned to the upstream data they were read from: vLLM's Rust parts (no
release needs cargo; what an image without them loses is said per release), v0.6.4's single
Dockerfile compared like the later two-file layouts, and the AITER/MORI tags whose commit no
stored snapshot holds (they stay unknown, and float).

Data: tests/refresh/recorded/sdist-rust/ (its SOURCES.md: setup.py, tools/build_rust.py,
vllm/envs.py, requirements/rocm.txt and the Rust tool parsers of vLLM 0.21.0-0.33.0, byte for
byte from the PyPI sdists) and tests/refresh/recorded/sdist/ (the upstream Dockerfiles)."""

from __future__ import annotations

import ast
import io
import json
import re
import tarfile
from pathlib import Path

import pytest
from packaging.version import Version

from resolver.artifacts import dockerfile as df
from resolver.artifacts.dockerfile import rendering as dfr
from resolver.data import matrix as matrix_mod
from resolver.data.node import from_flags
from resolver.refresh import dockerfile_parse as dp

from .conftest import LIVE_MATRIX
from .test_dockerfile import SLICES, _cache_slices, _live_plan, cli

RUST_SLICES = Path(__file__).parent / "refresh" / "recorded" / "sdist-rust"
RUST_RELEASES = sorted(
    (p.name.removeprefix("vllm-").removesuffix(".tar.gz") for p in RUST_SLICES.glob("*.tar.gz")),
    key=Version,
)
FIRST_RUST = Version("0.22.0")  # the first release whose setup.py has a RustExtension
# The releases whose tool parsers include a RustToolParser subclass (read from the slices).
RUST_TOOL_PARSER = (Version("0.24.0"), Version("0.32.0"))


def _files(tarball: Path) -> dict[str, str]:
    with tarfile.open(fileobj=io.BytesIO(tarball.read_bytes())) as tar:
        return {
            m.name.split("/", 1)[1]: tar.extractfile(m).read().decode()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }


def _rust_extension_optionals(sources: list[str]) -> list[str]:
    """The source text of each RustExtension(...) call's ``optional=`` argument (live code only:
    the commented-out examples of tools/build_rust.py are not calls)."""
    out = []
    for text in sources:
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "RustExtension"
            ):
                kw = {k.arg: ast.unparse(k.value) for k in node.keywords}
                out.append(kw.get("optional", "False"))
    return out


def _rust_tool_parsers(files: dict[str, str]) -> set[str]:
    """The names `--tool-call-parser` takes whose class subclasses RustToolParser."""
    classes = {
        (path.rsplit("/", 1)[1].removesuffix(".py"), c)
        for path, text in files.items()
        if path.startswith("vllm/tool_parsers/")
        for c in re.findall(r"^class (\w+)\(RustToolParser\)", text, re.MULTILINE)
    }
    registry = files["vllm/tool_parsers/__init__.py"]
    return {
        name
        for module, cls in classes
        for name in re.findall(rf'"([\w-]+)":\s*\(\s*"{module}",\s*"{cls}"', registry)
    }


def test_the_recorded_rust_slices_cover_every_release_around_the_rust_parts() -> None:
    assert RUST_RELEASES[0] == "0.21.0" and RUST_RELEASES[-1] == "0.33.0"
    assert len(RUST_RELEASES) == 16  # 0.21.0 .. 0.33.0, every release the index has between


@pytest.mark.parametrize("version", RUST_RELEASES)
def test_no_release_needs_cargo_to_build_or_serve(version: str) -> None:
    """From 0.22.0 vLLM's setup.py builds Rust parts with setuptools-rust, each RustExtension
    optional unless VLLM_REQUIRE_RUST_FRONTEND is set; `vllm serve` takes the Rust frontend only
    with VLLM_USE_RUST_FRONTEND=1 (default 0). So a build without cargo is a build upstream's
    setup.py allows, and its image serves."""
    files = _files(RUST_SLICES / f"vllm-{version}.tar.gz")
    setup = files["setup.py"]
    sources = [setup] + ([files["tools/build_rust.py"]] if "tools/build_rust.py" in files else [])
    optionals = _rust_extension_optionals(sources)
    if Version(version) < FIRST_RUST:
        assert optionals == [] and "setuptools_rust" not in setup
        assert "setuptools-rust" not in files["requirements/rocm.txt"]
        return
    assert optionals, "a RustExtension from 0.22.0 on"
    assert "setuptools-rust" in files["requirements/rocm.txt"]  # what the build installs
    # Each is optional unless the build asks for it: directly, or through rust_extensions().
    for opt in optionals:
        assert opt in ("not should_require_rust_frontend()", "optional"), opt
    if "optional" in optionals:  # tools/build_rust.py's rust_extensions(optional=...)
        assert re.search(
            r"rust_extensions\(\s*optional\s*=\s*not should_require_rust_frontend\(\)\s*\)",
            setup,
        )
    assert 'os.getenv("VLLM_REQUIRE_RUST_FRONTEND", "")' in setup
    assert re.search(r'os\.getenv\("VLLM_USE_RUST_FRONTEND", "0"\)', files["vllm/envs.py"])


@pytest.mark.parametrize("version", [v for v in RUST_RELEASES if Version(v) >= FIRST_RUST])
def test_what_an_image_without_the_rust_parts_loses_is_said(version: str) -> None:
    """Upstream's ROCm Dockerfiles build the Rust parts in a rust-build stage and never require
    them; the generated file leaves them out and its header says what that costs: the opt-in
    Rust frontend, and from 0.24.0 to 0.31.0 the minimax_m3 tool parser (the one RustToolParser)."""
    v = Version(version)
    parsers = _rust_tool_parsers(_files(RUST_SLICES / f"vllm-{version}.tar.gz"))
    assert parsers == ({"minimax_m3"} if RUST_TOOL_PARSER[0] <= v < RUST_TOOL_PARSER[1] else set())
    upstream = _files(SLICES / f"vllm-{version}.tar.gz")
    rocm = [t for p, t in upstream.items() if p.startswith("docker/Dockerfile.ro")]
    assert rocm and any("rust-build" in dp.declared_names(t) for t in rocm)
    for text in rocm:
        assert "VLLM_REQUIRE_RUST_FRONTEND" not in text
        assert not re.search(r"VLLM_USE_RUST_FRONTEND\s*=\s*1", text)
    text = df.render(_live_plan(version, None, "gfx942"))
    rust = [line for line in text.splitlines() if line.startswith("# Left out: vLLM's Rust parts")]
    assert len(rust) == 1
    assert "VLLM_USE_RUST_FRONTEND=1" in rust[0]
    assert ("--tool-call-parser minimax_m3" in rust[0]) == bool(parsers)
    assert not re.search(r"rustup|cargo |VLLM_REQUIRE_RUST_FRONTEND", text.split("\nARG ", 1)[1])


# --- v0.6.4: the single Dockerfile.rocm, compared ---------------------------------------------


def _v064_plan(gfx: str) -> df.DockerfilePlan:
    live = matrix_mod.load_dir(LIVE_MATRIX)
    node = from_flags(gfx=gfx, gpus=None, driver="6.2", os=None, rocm=None, python=None)
    return df.plan_dockerfile(live, node, df.choose(live, node, vllm="0.6.4", stack=None))


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942", "gfx908", "gfx1100"])
def test_v064_single_dockerfile_is_reproduced_or_listed(gfx: str) -> None:
    """Every ARG, ENV and stage of v0.6.4's Dockerfile.rocm (its sdist, the one v0.6 release the
    data records an sdist for) is in the generated file or in a header line with its reason, as
    for the two-file layouts from v0.10.0; each line names something upstream's file has."""
    upstream = _files(SLICES / "vllm-0.6.4.tar.gz")["Dockerfile.rocm"]
    plan = _v064_plan(gfx)
    assert plan.layout == "single-stage"
    header = [line for line in df.render(plan).splitlines() if line.startswith("# ")]
    steps = dfr.upstream_steps(plan)
    assert steps
    names = dp.declared_names(upstream)
    for step in steps:
        assert dfr._step_line(plan, step) in header
        assert not step.names or set(step.names) <= names, step.what
    assert not any("are compared" in line for line in header)
    table = dfr.compare_upstream(plan, [upstream], dp.declared_names)
    assert [n for n, how, _ in table if how == "unlisted"] == []
    assert all(reason for _, how, reason in table if how != "reproduced")
    assert {n: how for n, how, _ in table}["GIT_REPO_CHECK"] == "left out"
    # The PyTorch nightly upstream installs over the base image is said, with its version as read.
    assert "torch==2.6.0.dev20240918" in upstream
    assert any("torch==2.6.0.dev20240918" in line for line in header if "Differs" in line)


def test_the_other_v06_releases_say_they_are_not_compared() -> None:
    """0.6.3 and 0.6.6.post1 were read at their Git tags (no sdist recorded): not compared, and
    the header says which releases are."""
    live = matrix_mod.load_dir(LIVE_MATRIX)
    for version in ("0.6.3", "0.6.6.post1"):
        assert df.find_release(live, version).sdist_sha256 is None
        node = from_flags(gfx="gfx942", gpus=None, driver="6.2", os=None, rocm=None, python=None)
        plan = df.plan_dockerfile(live, node, df.choose(live, node, vllm=version, stack=None))
        assert dfr.upstream_steps(plan) == ()
        assert (
            "# Upstream's build steps beyond the pins are compared for v0.6.4, and from v0.10.0 "
            "on; this release's are not listed."
        ) in df.render(plan)


def test_compare_upstream_runs_for_v064(tmp_path: Path) -> None:
    """`dockerfile --compare-upstream --vllm 0.6.4`: the one file, nothing unlisted, exit 0."""
    _cache_slices(tmp_path)
    env = {"ROCM_VLLM_CACHE_DIR": str(tmp_path), "ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    args = ("--gfx", "gfx90a", "--driver", "6.2", "--vllm", "0.6.4", "--compare-upstream")
    result = cli(*args, "--json", env=env)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["dockerfiles"] == ["Dockerfile.rocm"] and doc["unlisted"] == []
    by_name = {s["name"]: s["how"] for s in doc["steps"]}
    assert by_name["BUILD_FA"] == "differs" and by_name["FA_BRANCH"] == "reproduced"


# --- AITER and MORI tags newer than every stored snapshot --------------------------------------


def test_tags_no_snapshot_holds_stay_unknown_and_float() -> None:
    """The tag pins whose commit is not recorded are exactly the AITER and MORI tags newer than
    the stored snapshots of ROCm/aiter and ROCm/mori (and every fork and wheel looked at):
    unknown, not guessed, and listed as floating. A commit recorded for one of them later must
    come with its source in dockerfiles/layouts.toml, and this list shrinks."""
    live = matrix_mod.load_dir(LIVE_MATRIX)
    tags = {
        (p.repo, p.ref)
        for r in live.vllm
        for st in r.stacks
        for p in st.pins
        if p.repo in ("ROCm/aiter", "ROCm/mori") and not p.is_commit and not p.moving
    }
    unknown = {t for t in tags if df.layouts().tag_commits.get(t[0], {}).get(t[1]) is None}
    assert unknown == {
        ("ROCm/aiter", "v0.1.21.post2"),
        ("ROCm/aiter", "v0.1.23"),
        ("ROCm/aiter", "v0.1.24.post1"),
        ("ROCm/aiter", "v0.1.26"),
        ("ROCm/mori", "v1.2.3.post1"),
    }
    sources = {repo: df.layouts().tag_commits[repo] for repo in ("ROCm/aiter", "ROCm/mori")}
    assert all(len(c) == 40 for tags_ in sources.values() for c in tags_.values())
    plan = _live_plan("0.33.0", "rocm72", "gfx942")
    floating = " ".join(plan.floating)
    assert "mori v1.2.3.post1" in floating and "aiter v0.1.26" in floating


def test_the_check_and_the_dockerfile_name_the_same_moving_refs() -> None:
    """issue 36, "two rules for moving refs": `check --gfx gfx1250` warned that FlashAttention and
    AITER move while the Dockerfile it pointed at named only AITER (FlashAttention's CK build is
    left out for gfx1250). One rule decides both (solve.advisories.built_moving): for every stack
    whose pins move and every GPU its build takes, the check's unpinned-ref names exactly the refs
    the Dockerfile builds and flags."""
    from resolver.solve import Request, evaluate_pinned
    from resolver.solve.types import SourceCandidate
    from resolver.util.errors import ResolverError

    m = matrix_mod.load_dir(LIVE_MATRIX)
    compared = 0
    for release in m.vllm:
        for st in release.stacks:
            if not st.moving_pins:
                continue
            for gfx in st.arch:
                node = from_flags(gfx=gfx, gpus=1, driver=None, os=None, rocm=None, python=None)
                cand = SourceCandidate(
                    vllm=release.version, rocm=st.rocm, release=release, stack=st
                )

                ev = evaluate_pinned(m, node, Request(), cand)
                said = [w for w in ev.warnings if w.code == "unpinned-ref"]
                try:
                    plan = df.plan_dockerfile(
                        m, node, ev, allow_preview=True, allow_moving_refs=True
                    )
                except ResolverError:  # refused on other grounds (its driver): nothing to compare
                    plan = None
                if plan is None:
                    continue
                flagged = set(plan.moving_refs)
                named = set()
                for w in said:
                    named |= {
                        f"{p.component}@{p.ref}"
                        for p in st.moving_pins
                        if f"{p.component} {p.repo}@{p.ref}" in str(w.message.value("refs"))
                    }
                assert named == flagged, (release.version, st.variant, gfx, named, flagged)
                compared += 1
    assert compared > 0
