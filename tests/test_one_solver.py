"""issue 36: the verdict is chosen in one place for both vendors, and "what would a host change
open" has one answer. Each test would catch a drift the review found coming back."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from tests.helpers import run_cli

SOLVE = Path(__file__).resolve().parents[1] / "resolver" / "solve"


def test_only_decide_names_a_verdict() -> None:
    """No module of the solver but ``__init__.py`` (``_decide`` and the unknown-before-any-
    candidate answer) and ``types.py`` (the literal) writes a verdict: the NVIDIA provider, the
    checks and the model rules hand back findings, never a verdict of their own."""
    offenders = []
    for path in SOLVE.rglob("*.py"):
        where = path.relative_to(SOLVE).as_posix()
        if where in ("__init__.py", "types.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "verdict":
                offenders.append(f"{where}:{node.value.lineno} verdict=")
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            if any(isinstance(t, ast.Name) and t.id == "verdict" for t in targets):
                offenders.append(f"{where}:{node.lineno} verdict =")
    assert not offenders, offenders


def test_the_json_host_fix_is_the_route_the_search_solved_again() -> None:
    """`check --gfx gfx950 --driver 6.2.4 --json` had host_fix.candidate v0.33.0-rocm72 and
    route.plan v0.33.0 for the same driver change: two answers. host_fix is now the what-if
    search's best host route (the one solved again), so the two agree."""
    out = run_cli("check", "--gfx", "gfx950", "--gpus", "8", "--driver", "6.2.4", "--json")
    doc = json.loads(out.stdout)
    assert doc["verdict"] == "blocked_host_fix"
    assert doc["host_fix"] is not None and doc["route"] is not None
    assert doc["host_fix"]["candidate"]["label"] == doc["route"]["plan"]["label"]


def test_both_vendors_answer_a_release_the_data_lists_but_never_read_the_same_way() -> None:
    """A release the data lists but whose artifacts were never read is `unknown` (exit 6) on an
    AMD node and on an NVIDIA node alike (NVIDIA answered exit 2, bad input)."""
    amd = run_cli("check", "--gfx", "gfx942", "--driver", "30.30.3", "--vllm", "==9.9.9", "--json")
    assert amd.exit_code == 6
    nvidia = run_cli(
        "check", "--vendor", "nvidia", "--cc", "9.0", "--gpus", "1", "--vllm", "==0.6.2", "--json"
    )
    assert nvidia.exit_code == 6, nvidia.stdout
    assert json.loads(nvidia.stdout)["verdict"] == "unknown"
