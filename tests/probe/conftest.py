"""Shared helpers for the probe tests: fixture paths and sysfs roots built from the fixture
trees."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def make_root(tmp_path: Path) -> Callable[[str], Path]:
    """A root under which ``sys/class/kfd/kfd`` is a copy of a fixture tree, as on a real node."""

    def build(tree: str) -> Path:
        root = tmp_path / f"root-{tree}"
        kfd = root / "sys/class/kfd/kfd"
        kfd.parent.mkdir(parents=True)
        shutil.copytree(FIXTURES / "sysfs" / tree, kfd)
        return root

    return build
