"""CLI for `rocm-vllm probe` (placeholder until its issue lands)."""

from __future__ import annotations

import typer


def register(app: typer.Typer, matrix_app: typer.Typer) -> None:
    """Nothing registered yet."""
