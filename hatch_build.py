"""Wheel build hook: ship the checked matrix compiled, so that a first run parses no TOML.

``matrix/*.toml`` stays the source of truth. Building a wheel loads it with the project's own
loader (every check a run makes) and ships the checked records as
``resolver/_data/compiled-matrix.msgpack``, keyed by the content of the data files and of the
loader's code; an installed run uses it only for the wheel's own data dir with no overlay
(``resolver.data.matrix._load_cached``). Data the loader refuses fails the build.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CompiledMatrixHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version != "standard":
            return  # an editable install reads the checkout's matrix/ through the cache
        root = Path(self.root)
        sys.path.insert(0, str(root))
        try:
            from resolver.data import matrix, resources
        finally:
            sys.path.remove(str(root))
        if not Path(matrix.__file__).resolve().is_relative_to(root.resolve()):
            # The key names the loader's code: it must be the code this wheel ships.
            raise RuntimeError(f"resolver was imported from {matrix.__file__}, not {root}")
        self._tmp = tempfile.mkdtemp(prefix="rocm-vllm-build-")
        out = Path(self._tmp) / resources.SHIPPED_COMPILED
        out.write_bytes(matrix.compile_shipped(root / "matrix"))
        build_data["force_include"][str(out)] = f"resolver/_data/{resources.SHIPPED_COMPILED}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
