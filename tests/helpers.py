"""Small helpers shared by the core tests."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from resolver import resources
from resolver.cli import app

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, env: dict[str, str] | None = None, input_text: str | None = None):  # type: ignore[no-untyped-def]
    """Invoke ``rocm-vllm`` in-process; stdout and stderr are kept apart."""
    return CliRunner().invoke(
        app,
        list(args),
        env={"NO_COLOR": "1", **(env or {})},
        input=input_text,
        catch_exceptions=False,
    )


def copy_matrix(tmp: Path) -> Path:
    """A writable copy of the shipped data directory."""
    target = tmp / "matrix"
    shutil.copytree(resources.matrix_dir(), target)
    return target
