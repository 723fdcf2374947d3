"""Channel: environment variables (data, cache and matrix dirs, base URLs, the HTTP deadline). A
bad value is a documented exit code with a hint, or is ignored where it only tunes behaviour."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resolver.data import matrix
from resolver.util import deadline

from .conftest import HOSTILE, assert_clean, cli, write

env_text = st.one_of(
    st.text(
        alphabet=st.characters(min_codepoint=1, max_codepoint=0x2FFF, blacklist_categories=("Cs",)),
        max_size=40,
    ),
    st.sampled_from(
        [
            "nan",
            "inf",
            "-1",
            "1e400",
            "9" * 5000,
            "0",
            "٣",
            "http://[::1",
            "file:///etc",
            "/dev/zero",
        ]
    ),
)


@HOSTILE
@given(value=env_text)
def test_http_deadline_env_is_bounded(value: str) -> None:
    os.environ[deadline.ENV] = value
    try:
        got = deadline.configured(7.0)
    finally:
        del os.environ[deadline.ENV]
    assert 0 < got < 86400


@HOSTILE
@given(name=st.sampled_from(["ROCM_VLLM_REGISTRY", "ROCM_VLLM_HTTP_DEADLINE"]), value=env_text)
def test_image_digest_with_any_env(name: str, value: str) -> None:
    env = {"ROCM_VLLM_REGISTRY": "http://127.0.0.1:9", "ROCM_VLLM_HTTP_DEADLINE": "3", name: value}
    assert_clean(cli(["image", "--gfx", "gfx942", "--digest"], env=env))


@pytest.mark.parametrize("kind", ["file", "fifo", "dev-null", "missing"])
@pytest.mark.parametrize(
    "name", ["ROCM_VLLM_MATRIX_DIR", "ROCM_VLLM_DATA_DIR", "ROCM_VLLM_CACHE_DIR"]
)
def test_dirs_that_are_not_dirs(name: str, kind: str, tmp_path: Path) -> None:
    if kind == "file":
        target = str(write(tmp_path / "f", "x"))
    elif kind == "fifo":
        os.mkfifo(tmp_path / "p")
        target = str(tmp_path / "p")
    elif kind == "dev-null":
        target = "/dev/null"
    else:
        target = str(tmp_path / "missing")
    matrix.reload()
    o = cli(["check", "--gfx", "gfx942", "--quiet"], env={name: target})
    assert_clean(o)
    assert o.seconds < 5
    matrix.reload()
