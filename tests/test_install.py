"""A non-editable install into a fresh venv finds the shipped data and templates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from .helpers import REPO

# One check in process, then whether tomllib was ever imported (the TOML path imports it).
_FIRST_RUN = """
import contextlib, io, runpy, sys
sys.argv = ["rocm-vllm", "check", "--example", "mi300x-8", "--json"]
code = None
try:
    with contextlib.redirect_stdout(io.StringIO()):
        runpy.run_module("resolver", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print(code, "tomllib" in sys.modules, file=sys.stderr)
"""


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
    with zipfile.ZipFile(wheel) as z:  # the build hook's compiled matrix (hatch_build.py)
        assert "resolver/_data/compiled-matrix.msgpack" in z.namelist()
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
    # Issue 40: a first run (empty cache and data dirs, as in a fresh CI container) reads the
    # shipped compiled records: no TOML parsed, nothing written to the user's dirs.
    user = tmp_path / "user"
    first = subprocess.run(
        [str(py), "-c", _FIRST_RUN],
        cwd=tmp_path,
        env={
            **os.environ,
            "ROCM_VLLM_CACHE_DIR": str(user / "cache"),
            "ROCM_VLLM_DATA_DIR": str(user / "data"),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert first.stderr.split()[-2:] == ["0", "False"], first.stderr
    assert not user.exists()
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
