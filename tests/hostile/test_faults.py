"""Concurrency and faults: concurrent overlay writers keep every record, a writer killed mid-write
leaves a temp file the next write sweeps, and an unexpected exception is one line, a saved crash
report and exit 70 (docs/exit-codes.md), never a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from resolver.data import overlay
from resolver.util import atomic

from .conftest import cli

ROOT = Path(__file__).resolve().parent.parent.parent


def _writer(path: Path, tag: str, rounds: int, start_at: float) -> subprocess.Popen[bytes]:
    record = f'{{"repo": "rocm/vllm", "tag": "{tag}-" + str(i), "source": "test"}}'
    code = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from resolver.data import overlay
        while time.time() < {start_at}:
            pass
        for i in range({rounds}):
            overlay.write({{"images.toml": [{record}]}},
                          written_at="now", path=Path({str(path)!r}))
    """)
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)


def test_concurrent_overlay_writers_keep_every_record(tmp_path: Path) -> None:
    path = tmp_path / "overlay.json"
    start = time.time() + 1.0
    procs = [_writer(path, tag, 20, start) for tag in ("a", "b")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    tags = {r["tag"] for r in overlay.read(path)["images.toml"]}
    assert tags == {f"{t}-{i}" for t in ("a", "b") for i in range(20)}
    assert not list(tmp_path.glob(".overlay.json.*.tmp"))


def test_killed_writer_leaves_a_temp_the_next_write_sweeps(tmp_path: Path) -> None:
    target = tmp_path / "overlay.json"
    code = textwrap.dedent(f"""
        import os, time
        from pathlib import Path
        from resolver.util import atomic
        os.fsync = lambda fd: time.sleep(60)  # hang between writing the temp and renaming it
        atomic.write_atomic(Path({str(target)!r}), b"x" * 1_000_000)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    try:
        deadline = time.monotonic() + 20
        while not list(tmp_path.glob(".overlay.json.*.tmp")) and time.monotonic() < deadline:
            time.sleep(0.05)
        (temp,) = tmp_path.glob(".overlay.json.*.tmp")
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert temp.exists() and not target.exists()
    fresh = tmp_path / ".other.abcdefgh.tmp"  # another writer's temp, still young: kept
    fresh.write_bytes(b"y")
    old = time.time() - atomic.STALE_AFTER - 60
    os.utime(temp, (old, old))
    atomic.write_atomic(target, b"{}")
    assert not temp.exists()
    assert fresh.exists()
    assert target.read_bytes() == b"{}"


def test_unexpected_exception_is_one_line_a_report_and_exit_70(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from resolver.data import matrix, resources

    def broken() -> None:
        raise RuntimeError("something nobody expected\nsecond line")

    monkeypatch.setattr(matrix, "load", broken)
    o = cli(["check", "--gfx", "gfx942"])
    assert o.code == 70, str(o)
    assert "Traceback" not in o.err
    lines = o.err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith(
        "error: internal error (RuntimeError: something nobody expected)"
    )
    assert lines[1].startswith("hint: ")
    reports = list((resources.cache_dir() / "crash").glob("crash-*.txt"))
    assert len(reports) == 1 and str(reports[0]) in lines[1]
    text = reports[0].read_text()
    assert "Traceback" in text and "RuntimeError" in text and "'check'" in text


def test_recursion_error_is_a_crash_report_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from resolver.data import matrix

    def deep(n: int = 0) -> None:
        deep(n + 1)

    monkeypatch.setattr(matrix, "load", deep)
    o = cli(["check", "--gfx", "gfx942"])
    assert o.code == 70 and "RecursionError" in o.err and "Traceback" not in o.err, str(o)


def test_exit_70_is_documented() -> None:
    doc = (ROOT / "docs" / "exit-codes.md").read_text()
    assert "| 70 |" in doc and "crash report" in doc


def test_overlay_json_written_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "overlay.json"
    overlay.write({"rocm.toml": [{"version": "7.2.3", "source": "x"}]}, written_at="now", path=path)
    assert json.loads(path.read_text())["files"]["rocm.toml"][0]["version"] == "7.2.3"
    assert (tmp_path / ".overlay.json.lock").exists()
