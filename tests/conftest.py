"""Test-wide isolation: no test reads or writes the user's real overlay or HTTP cache."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("ROCM_VLLM_DATA_DIR", str(base / "data"))
    monkeypatch.setenv("ROCM_VLLM_CACHE_DIR", str(base / "cache"))
