"""The only module that knows where the shipped data lives.

In a checkout, ``matrix/`` and ``dockerfiles/`` sit at the repository root; in an installed
wheel they are force-included as ``resolver/_data/``. ``ROCM_VLLM_MATRIX_DIR`` points the whole
tool at another data directory (tests use it to load deliberately broken files).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

_PACKAGE_DIR: Final[Path] = Path(__file__).resolve().parent.parent  # resolver/
_INSTALLED_DATA: Final[Path] = _PACKAGE_DIR / "_data"
_CHECKOUT_ROOT: Final[Path] = _PACKAGE_DIR.parent

MATRIX_FILES: Final[tuple[str, ...]] = (
    "rocm.toml",
    "os.toml",
    "drivers.toml",
    "gfx.toml",
    "vllm.toml",
    "wheels.toml",
    "images.toml",
    "nodes.toml",
    "cuda.toml",
    "nvidia.toml",
    "nvidia-gpus.toml",
    "amdgpu-isa.toml",
    "capabilities.toml",
    "channels.toml",
)


def _data_root(name: str) -> Path:
    installed = _INSTALLED_DATA / name
    if installed.is_dir():
        return installed
    return _CHECKOUT_ROOT / name


def matrix_dir() -> Path:
    override = os.environ.get("ROCM_VLLM_MATRIX_DIR")
    if override:
        return Path(override)
    return _data_root("matrix")


def dockerfiles_dir() -> Path:
    return _data_root("dockerfiles")


def cache_dir() -> Path:
    """Where caches live (HTTP responses, registry digests, the compiled matrix):
    ``ROCM_VLLM_CACHE_DIR``, else the platform's user cache directory."""
    override = os.environ.get("ROCM_VLLM_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs  # small; only when no override is set

    return Path(platformdirs.user_cache_dir("rocm-vllm", appauthor=False))


# AMD's vLLM ROCm wheels (wheels.vllm.ai/rocm/VERSION/VARIANT); ROCM_VLLM_WHEELS points the
# refresh and every printed install line at a mirror.
ENV_WHEELS: Final = "ROCM_VLLM_WHEELS"
DEFAULT_WHEELS: Final = "https://wheels.vllm.ai/rocm"


def wheels_base(recorded: str | None = None) -> str:
    """Where AMD's wheels are fetched: ``ROCM_VLLM_WHEELS`` (a mirror), else ``recorded`` (the
    variant's index in wheels.toml), else the upstream default."""
    return (os.environ.get(ENV_WHEELS) or recorded or DEFAULT_WHEELS).rstrip("/")
