"""The console script's process: it tunes the cyclic collector for a one-command run, and only
it does; importing the CLI (as tests and library users do) leaves the interpreter as it was."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import run_process


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
