"""The only module that knows where the shipped data lives.

In a checkout, ``matrix/`` and ``dockerfiles/`` sit at the repository root; in an installed
wheel they are force-included as ``resolver/_data/``. ``ROCM_VLLM_MATRIX_DIR`` points the whole
tool at another data directory (tests use it to load deliberately broken files).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final, Literal

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
    "models.toml",
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


# The checked matrix compiled when the wheel is built (hatch_build.py), so that a first run (a
# fresh CI container, an init container) parses no TOML. Only an installed wheel has it.
SHIPPED_COMPILED: Final = "compiled-matrix.msgpack"


def shipped_compiled(directory: Path) -> Path | None:
    """The compiled matrix the wheel ships for ``directory`` when that is the wheel's own data
    dir; None for any other (a checkout, ``ROCM_VLLM_MATRIX_DIR`` elsewhere): those go through
    the loader and its sealed cache."""
    own = _INSTALLED_DATA / "matrix"
    return _INSTALLED_DATA / SHIPPED_COMPILED if directory == own else None


APP: Final = "rocm-vllm"
# The XDG base-directory variables and their defaults, as platformdirs reads them on Linux.
_XDG: Final = {"cache": ("XDG_CACHE_HOME", ".cache"), "data": ("XDG_DATA_HOME", ".local/share")}


def user_dir(kind: Literal["cache", "data"]) -> Path:
    """The tool's per-user cache or data directory. On Linux this is the XDG rule spelled here
    (an absolute ``$XDG_CACHE_HOME`` / ``$XDG_DATA_HOME``, else under the home directory), the
    same path platformdirs gives (tested against it) without importing it: platformdirs and the
    tempfile it imports cost a tenth of a cold ``check``. Elsewhere platformdirs decides."""
    if not sys.platform.startswith("linux"):
        import platformdirs

        if kind == "cache":
            return Path(platformdirs.user_cache_dir(APP, appauthor=False))
        return Path(platformdirs.user_data_dir(APP, appauthor=False))
    var, default = _XDG[kind]
    base = Path(os.environ.get(var, ""))
    if not base.is_absolute():
        home = Path(os.environ.get("HOME", ""))
        if not home.is_absolute():  # a relative HOME counts as unset, as for platformdirs
            import pwd

            home = Path(pwd.getpwuid(os.getuid()).pw_dir)
        base = home / default
    return base / APP


def cache_dir() -> Path:
    """Where caches live (HTTP responses, registry digests, the compiled matrix):
    ``ROCM_VLLM_CACHE_DIR``, else the user's cache directory."""
    override = os.environ.get("ROCM_VLLM_CACHE_DIR")
    if override:
        return Path(override)
    return user_dir("cache")


# AMD's vLLM ROCm wheels (wheels.vllm.ai/rocm/VERSION/VARIANT); ROCM_VLLM_WHEELS points the
# refresh and every printed install line at a mirror.
ENV_WHEELS: Final = "ROCM_VLLM_WHEELS"
DEFAULT_WHEELS: Final = "https://wheels.vllm.ai/rocm"


def wheels_base(recorded: str | None = None) -> str:
    """Where AMD's wheels are fetched: ``ROCM_VLLM_WHEELS`` (a mirror), else ``recorded`` (the
    variant's index in wheels.toml), else the upstream default. A mirror's ``user:token@`` (and
    query) is left out: this URL is printed in commands, which never carry a credential
    (``wheels_login`` names the host whose login the installer must find)."""
    from resolver.util import redact

    raw = os.environ.get(ENV_WHEELS) or ""
    mirror = redact.setting(ENV_WHEELS, raw) if raw else ""
    return redact.without_credentials(mirror or recorded or DEFAULT_WHEELS).rstrip("/")


def wheels_login() -> str | None:
    """The host of ``ROCM_VLLM_WHEELS`` when it carries a login (``user:token@``) or a query:
    the printed install line leaves them out and says where the installer reads a login."""
    from resolver.util import redact

    mirror = os.environ.get(ENV_WHEELS) or ""
    if not mirror or not redact.has_credentials(mirror):
        return None
    return redact.without_credentials(mirror).partition("://")[2].partition("/")[0] or None
