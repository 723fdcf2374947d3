"""The console script's process: it tunes the cyclic collector for a one-command run, and only
it does; importing the CLI (as tests and library users do) leaves the interpreter as it was."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO, run_process


def _threshold_after(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", f"import gc\n{code}\nprint(gc.get_threshold())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_importing_the_cli_leaves_the_collector_alone() -> None:
    assert _threshold_after("import resolver.cli, resolver.__main__") == _threshold_after("")


def test_the_console_script_runs_a_command() -> None:
    out = run_process("check", "--example", "mi300x-8", "--json")
    assert out.returncode == 0, out.stderr
    assert '"verdict": "supported"' in out.stdout


def _scaled(tmp: Path, k: int) -> Path:
    """bench/startup.py's synthetic data: each vLLM release again k-1 times (0.x.y as 1.x.y)."""
    spec = importlib.util.spec_from_file_location("bench_startup", REPO / "bench" / "startup.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.scaled_matrix(REPO / "matrix", tmp / "matrix", k)  # the shipped data, not the frozen
    return tmp / "matrix"


def test_a_check_at_four_times_the_data_runs_no_collection(tmp_path: Path) -> None:
    # The imports are frozen before the command runs (resolver.__main__): a warm check at four
    # times today's data (~32,000 allocations after the freeze) stays under the gen-0 threshold,
    # so no collection walks typer's objects and the records (16 ms of the run when one did).
    env = {
        **os.environ,
        "ROCM_VLLM_MATRIX_DIR": str(_scaled(tmp_path, 4)),
        "ROCM_VLLM_CACHE_DIR": str(tmp_path / "cache"),
        "ROCM_VLLM_DATA_DIR": str(tmp_path / "data"),
    }
    code = (
        "import gc, sys\n"
        "from resolver.__main__ import run\n"  # (compiling a stale .pyc may collect: not counted)
        "seen = []\n"
        "gc.callbacks.append(lambda phase, info: seen.append(phase) if phase == 'start' else 0)\n"
        "sys.argv = ['rocm-vllm', 'check', '--gfx', 'gfx942', '--gpus', '8', '--driver', "
        "'30.30.3', '--json']\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "print('collections', len(seen), file=sys.stderr)\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
        )
        for _ in range(2)  # the first parses the TOML and fills the cache
    ]
    assert runs[1].stderr.strip().splitlines()[-1] == "collections 0", runs[1].stderr
