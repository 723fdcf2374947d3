"""The per-user directories: the XDG rule spelled in resources gives the path platformdirs gives
(the cache, the overlay and the seal key would otherwise move when platformdirs is dropped from
the start-up path), for every way the variables can be set."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from resolver.data import overlay, resources

CASES = [
    {},  # neither set: under HOME
    {"XDG_CACHE_HOME": "/x/cache", "XDG_DATA_HOME": "/x/data"},
    {"XDG_CACHE_HOME": "relative/cache", "XDG_DATA_HOME": "relative"},  # relative: ignored
    {"XDG_CACHE_HOME": "", "XDG_DATA_HOME": ""},
    {"XDG_CACHE_HOME": "/trailing/slash/"},
    {"HOME": "relative-home"},  # a relative HOME counts as unset (the password entry decides)
]


@pytest.mark.parametrize("env", CASES, ids=[str(sorted(c)) or "none" for c in CASES])
def test_user_dirs_are_where_platformdirs_puts_them(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("XDG_CACHE_HOME", "XDG_DATA_HOME", "ROCM_VLLM_CACHE_DIR", overlay.ENV_DATA_DIR):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert resources.user_dir("cache") == Path(
        platformdirs.user_cache_dir("rocm-vllm", appauthor=False)
    )
    assert resources.user_dir("data") == Path(
        platformdirs.user_data_dir("rocm-vllm", appauthor=False)
    )
    assert resources.cache_dir() == resources.user_dir("cache")
    assert overlay.data_dir() == resources.user_dir("data")


def test_overrides_win(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROCM_VLLM_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv(overlay.ENV_DATA_DIR, str(tmp_path / "d"))
    assert resources.cache_dir() == tmp_path / "c"
    assert overlay.data_dir() == tmp_path / "d"
