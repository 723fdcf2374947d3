"""Fixtures for the refresh tests: a local upstream, a real docker-registry, a private data copy."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from resolver.data import resources

from .server import Upstream, serve

REPO_MATRIX = Path(resources.__file__).resolve().parents[2] / "matrix"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own data dir (overlay) and HTTP cache; no token leaks in from the host."""
    monkeypatch.setenv("ROCM_VLLM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ROCM_VLLM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    # Refresh reproduces and extends the shipped data, so it compares against the live matrix/.
    monkeypatch.setenv("ROCM_VLLM_MATRIX_DIR", str(REPO_MATRIX))
    return tmp_path


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[Upstream]:
    with serve() as up:
        monkeypatch.setenv("ROCM_VLLM_GITHUB_API", up.base)
        monkeypatch.setenv("ROCM_VLLM_GITHUB_RAW", up.base + "/raw")
        monkeypatch.setenv("ROCM_VLLM_WHEELS", up.base + "/wheels")
        monkeypatch.setenv("ROCM_VLLM_REGISTRY", up.base)
        monkeypatch.setenv("ROCM_VLLM_INDEX_URL", up.base + "/simple")
        yield up


@pytest.fixture
def matrix_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of matrix/ that a test may trim; the tool reads it instead of the real one."""
    dest = tmp_path / "matrix"
    shutil.copytree(REPO_MATRIX, dest)
    monkeypatch.setenv("ROCM_VLLM_MATRIX_DIR", str(dest))
    return dest


def drop_records(path: Path, field: str, values: set[str]) -> None:
    """Remove the [[table]] blocks whose ``field = "value"`` is in ``values`` (subtables
    included)."""
    text = path.read_text()
    blocks = re.split(r"(?m)^(?=\[\[[a-z_]+\]\])", text)  # a record with its [[x.sub]] tables
    kept = [
        b
        for b in blocks
        if not any(re.search(rf'(?m)^{field} = "{re.escape(v)}"$', b) for v in values)
    ]
    assert len(kept) == len(blocks) - len(values), f"not all of {values} found in {path.name}"
    path.write_text("".join(kept))


# --- a real docker-registry on loopback ---------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    binary = shutil.which("docker-registry")
    if binary is None:
        pytest.skip("docker-registry is not installed (apt-get install docker-registry)")
    port = _free_port()
    config = tmp_path / "registry.yml"
    config.write_text(
        "version: 0.1\n"
        f"storage:\n  filesystem:\n    rootdirectory: {tmp_path / 'registry-data'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n"
        "log:\n  level: error\n"
    )
    proc = subprocess.Popen(
        [binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                if requests.get(f"{base}/v2/", timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                time.sleep(0.05)
        else:
            pytest.fail("docker-registry did not start")
        monkeypatch.setenv("ROCM_VLLM_REGISTRY", base)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def push_image(base: str, repo: str, tag: str) -> str:
    """Push a tiny OCI image through the distribution API; returns its manifest digest."""
    from tests.oci import LAYER_TAR, push

    return push(base, repo, tag, [(f"{repo}:{tag}".encode(), LAYER_TAR)])
