"""A non-editable install into a fresh venv finds the shipped data and templates."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from .helpers import REPO


@pytest.mark.slow
def test_wheel_install_ships_matrix_and_dockerfiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ROCM_VLLM_MATRIX_DIR")  # the installed copy must find its own data
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
        check=True,
    )
    wheel = next(dist.glob("rocm_vllm_resolver-*.whl"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True)
    # Run from a directory without the checkout, so only the installed copy can answer.
    out = subprocess.run(
        [str(env_dir / "bin" / "rocm-vllm"), "check", "--example", "mi300x-8", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["plan"]["image"].startswith("vllm/vllm-openai-rocm:")
    where = subprocess.run(
        [
            str(py),
            "-c",
            (
                "from resolver.data import resources; print(resources.matrix_dir()); "
                "print(resources.dockerfiles_dir())"
            ),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert all("site-packages/resolver/_data" in p for p in where)
    assert (Path(where[0]) / "vllm.toml").is_file() and Path(where[1]).is_dir()
