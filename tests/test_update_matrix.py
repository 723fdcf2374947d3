"""scripts/update-matrix folds refreshed records into matrix/*.toml and keeps the files'
comments."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

from resolver.data import matrix

from .conftest import LIVE_MATRIX

SCRIPT = LIVE_MATRIX.parent / "scripts" / "update-matrix"


def load_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("update_matrix", str(SCRIPT))
    spec = importlib.util.spec_from_loader("update_matrix", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


NEW = {
    "version": "0.33.1",
    "date": "2026-11-29",
    "tag_commit": "abcdef1234",
    "sdist_sha256": "0" * 64,
    "cmake_arch": ["gfx942"],
    "source": "vllm 0.33.1 sdist sha256:000000000000 CMakeLists.txt",
    "stack": [
        {
            "variant": "rocm72",
            "dockerfile": "docker/Dockerfile.rocm_base",
            "default": True,
            "layout": "two-stage-docker",
            "base_image": "rocm/dev-ubuntu-22.04:7.2.3-complete",
            "rocm": "7.2.3",
            "python": "3.12",
            "arch": ["gfx942"],
            "pins": {"triton": {"repo": "ROCm/triton", "ref": "669b31a"}},
            "source": "vllm 0.33.1 sdist sha256:000000000000 docker/Dockerfile.rocm_base",
        }
    ],
}


def test_fold_inserts_in_version_order_and_keeps_comments(tmp_path: Path) -> None:
    script = load_script()
    data = tmp_path / "matrix"
    shutil.copytree(LIVE_MATRIX, data)
    before = (data / "vllm.toml").read_text()
    text = script.fold(data / "vllm.toml", "vllm.toml", [NEW])
    assert text.startswith(before.split("[[release]]")[0])  # the header comment survives
    assert text.index('version = "0.33.0"') < text.index('version = "0.33.1"')
    assert '\n\n[[release]]\nversion = "0.33.1"' in text
    (data / "vllm.toml").write_text(text)
    m = matrix.load_dir(data)
    rel = next(r for r in m.vllm if str(r.version) == "0.33.1")
    assert rel.stack is not None and rel.stack.variant == "rocm72" and rel.pin("triton") is not None


def test_fold_replaces_a_record_in_place(tmp_path: Path) -> None:
    script = load_script()
    data = tmp_path / "matrix"
    shutil.copytree(LIVE_MATRIX, data)
    changed = {**NEW, "version": "0.32.0", "note": "re-read"}
    text = script.fold(data / "vllm.toml", "vllm.toml", [changed])
    assert text.count('version = "0.32.0"') == 1 and 'note = "re-read"' in text
    assert (
        text.index('version = "0.31.0"')
        < text.index('version = "0.32.0"')
        < text.index('version = "0.33.0"')
    )
