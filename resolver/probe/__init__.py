"""Node facts from rocminfo, amd-smi, rocm-smi and sysfs (issue: Probe). Placeholder API."""

from __future__ import annotations

from pathlib import Path

from resolver.errors import ProbeError
from resolver.node import Node, Problem


def probe_files(*, rocminfo: Path | None = None, amd_smi: Path | None = None, sysfs: Path | None = None) -> Node:
    raise ProbeError("reading saved probe outputs is not implemented yet", hint="describe the node with --gfx/--gpus/--driver")


def probe_live() -> Node:
    """This machine. Without an AMD GPU this is a node with no GPUs and a problem that says why."""
    return Node(
        problems=(
            Problem(
                code="no-gpu-probe",
                message="live probing is not implemented yet",
                hint="describe the node with --gfx/--gpus/--driver or --example NAME",
            ),
        ),
        origin="probe",
    )
