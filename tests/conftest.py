"""Test-wide isolation (no test reads or writes the user's real overlay or HTTP cache), and
session fixtures that start and stop the real services the image tests need.

A service that cannot start fails the tests that need it, loudly; only an explicit
``ROCM_VLLM_SKIP_SERVICES=1`` turns those tests into skips.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import services

# Solver, explanation, Dockerfile and image tests answer from a frozen copy of the data (see
# tests/data/README.md); tests of the shipped data load matrix/ explicitly (LIVE_MATRIX).
FROZEN_MATRIX = Path(__file__).parent / "data" / "matrix"
LIVE_MATRIX = Path(__file__).resolve().parent.parent / "matrix"
os.environ["ROCM_VLLM_MATRIX_DIR"] = str(FROZEN_MATRIX)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite the golden files (explanations, Dockerfiles, run commands) from the current "
        "output",
    )


def pytest_configure(config: pytest.Config) -> None:
    # The golden tests read UPDATE_GOLDEN when their module is imported, after this runs.
    if config.getoption("--update-golden"):
        os.environ["UPDATE_GOLDEN"] = "1"


@pytest.fixture(autouse=True)
def _isolated_user_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("ROCM_VLLM_DATA_DIR", str(base / "data"))
    monkeypatch.setenv("ROCM_VLLM_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("ROCM_VLLM_MATRIX_DIR", str(FROZEN_MATRIX))
    # No test reads the user's Docker logins: an empty Docker config directory of its own.
    docker_config = base / "docker-config"
    docker_config.mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(docker_config))
    # A mirror set in the developer's shell would change every generated Dockerfile and image name.
    monkeypatch.delenv("ROCM_VLLM_REGISTRY", raising=False)
    # Nor does the shell's width wrap the text the tests read (pytest-xdist's workers set 80).
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


def _start(cm):  # type: ignore[no-untyped-def]
    if services.services_skipped():
        pytest.skip(f"{services.SKIP_ENV}=1: real services not started")
    try:
        return cm.__enter__(), cm
    except services.ServiceError as exc:
        pytest.fail(f"could not start a test service: {exc}", pytrace=False)


@dataclass(frozen=True)
class ShimSet:
    registry: str  # http://127.0.0.1:PORT
    host: str  # 127.0.0.1:PORT
    official: object  # shims.Pushed
    amd: object
    mismatched: object
    index: object
    manifest_list: object


@pytest.fixture(scope="session")
def docker_url() -> Iterator[str]:
    url, cm = _start(services.dockerd())
    try:
        yield url
    finally:
        cm.__exit__(None, None, None)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[services.SlurmCluster]:
    """Eight slurmd (n1-n8), several partitions and a reservation, and a slurmctld on this
    machine, all on loopback, with their own munged (tests/services.py)."""
    cluster, cm = _start(services.slurm())
    try:
        yield cluster
    finally:
        cm.__exit__(None, None, None)


@pytest.fixture(scope="session")
def registry_storage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(tmp_path_factory.mktemp("registry-data"))


@pytest.fixture(scope="session")
def registry_url(registry_storage: Path) -> Iterator[str]:
    url, cm = _start(services.registry(storage=registry_storage))
    try:
        yield url
    finally:
        cm.__exit__(None, None, None)


@pytest.fixture(scope="session")
def token_registry(
    tmp_path_factory: pytest.TempPathFactory, registry_storage: Path, shim_images: ShimSet
) -> Iterator[tuple[str, services.TokenServer]]:
    """A registry that demands bearer tokens from a separate token service, as Docker Hub does;
    it serves the same storage as the open registry the shims were pushed to."""
    if services.services_skipped():
        pytest.skip(f"{services.SKIP_ENV}=1: real services not started")
    try:
        tokens = services.TokenServer(tmp_path_factory.mktemp("token"))
    except services.ServiceError as exc:
        pytest.fail(str(exc), pytrace=False)
    with tokens:
        url, cm = _start(services.registry(storage=registry_storage, token_auth=tokens))
        try:
            yield url, tokens
        finally:
            cm.__exit__(None, None, None)


BASIC_USER, BASIC_PASSWORD = "rocm-vllm-ci", "s3cret-Pa55-never-printed"


@pytest.fixture(scope="session")
def basic_registry(
    tmp_path_factory: pytest.TempPathFactory, registry_storage: Path, shim_images: ShimSet
) -> Iterator[str]:
    """A registry behind htpasswd (Basic) auth, serving the storage the shims were pushed to:
    a private mirror such as Harbor or Artifactory with a robot account."""
    if services.services_skipped():
        pytest.skip(f"{services.SKIP_ENV}=1: real services not started")
    htpasswd = services.write_htpasswd(
        Path(tmp_path_factory.mktemp("htpasswd")) / "htpasswd", {BASIC_USER: BASIC_PASSWORD}
    )
    url, cm = _start(services.registry(storage=registry_storage, htpasswd=htpasswd))
    try:
        yield url
    finally:
        cm.__exit__(None, None, None)


@pytest.fixture(scope="session")
def engine(docker_url: str):  # type: ignore[no-untyped-def]
    from resolver.artifacts.engine import DockerEngine

    with DockerEngine(docker_url) as eng:
        yield eng


@pytest.fixture(scope="session")
def shim_images(engine, registry_url: str, tmp_path_factory: pytest.TempPathFactory) -> ShimSet:  # type: ignore[no-untyped-def]
    """Stand-in images pushed under the real repository names (tags from matrix/images.toml)."""
    from tests import shims

    ctx = shims.context(Path(tmp_path_factory.mktemp("shimctx")))
    host = registry_url.split("://", 1)[1]
    official_name = f"{host}/vllm/vllm-openai-rocm"
    # Versions as the v0.25.0 ROCm image reports them (vllm-project/vllm-omni PR #5115:
    # torch 2.11.0+gitd0c8b1f, HIP 7.2.53211); the wheel suffix follows setup.py's +rocm<ver>.
    official = shims.build_and_push(
        engine,
        ctx,
        official_name,
        "v0.24.0",
        versions={
            "vllm": "0.24.0+rocm723",
            "torch": "2.11.0+gitd0c8b1f",
            "rocm": None,
            "hip": "7.2.53211",
        },
        entrypoint="vllm-serve",
    )
    amd = shims.build_and_push(
        engine,
        ctx,
        f"{host}/rocm/vllm",
        "rocm6.4.1_vllm_0.10.1_20250909",
        versions={"vllm": "0.10.1", "torch": "2.7.0", "rocm": "6.4.1", "hip": None},
        entrypoint="shell",
    )
    # An image whose content disagrees with the data (the data says vLLM 0.23.0, torch 2.10).
    mismatched = shims.build_and_push(
        engine,
        ctx,
        official_name,
        "v0.23.0",
        versions={"vllm": "0.22.0", "torch": "2.9.1", "rocm": "7.0.2", "hip": None},
        entrypoint="vllm-serve",
    )
    amd64 = shims.build_and_push(
        engine,
        ctx,
        official_name,
        "v0.20.0-amd64",
        versions={"vllm": "0.20.0", "torch": "2.10.0", "rocm": "7.2.1", "hip": None},
        entrypoint="vllm-serve",
    )
    arm64 = shims.build_and_push(
        engine,
        ctx,
        official_name,
        "v0.20.0-arm64",
        versions={"vllm": "0.20.0", "torch": "2.10.0", "rocm": "7.2.1", "hip": "arm64"},
        entrypoint="vllm-serve",
    )
    children = [(amd64, "amd64"), (arm64, "arm64")]
    index = shims.put_index(
        registry_url, "vllm/vllm-openai-rocm", "v0.20.0", children, shims.OCI_INDEX
    )
    manifest_list = shims.put_index(
        registry_url, "vllm/vllm-openai-rocm", "v0.20.1", children, shims.DOCKER_LIST
    )
    return ShimSet(registry_url, host, official, amd, mismatched, index, manifest_list)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own digest cache."""
    path = tmp_path / "cache"
    monkeypatch.setenv("ROCM_VLLM_CACHE_DIR", str(path))
    return path


@pytest.fixture
def docker_engine(engine, docker_url: str, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The engine for other modules' tests (dockerfile --build); DOCKER_HOST points at it too,
    so plain ``docker.from_env()`` in a test reaches the same private engine."""
    monkeypatch.setenv("DOCKER_HOST", docker_url)
    return engine
