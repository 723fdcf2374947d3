"""Fleet-scale benchmark: `rocm-vllm fleet plan` over 10,000 node reports with 50 distinct
fingerprints, against one cold `rocm-vllm check` for a single node.

The reports are probe JSON files (the shape `probe --json` writes) in a temporary directory:
5 gfx targets x 2 GPU counts x 5 driver releases = 50 fingerprints, 200 nodes each, named
gpu00001..gpu10000. Both commands run as fresh processes, interleaved, at least 5 times each;
the script prints both medians and their ratio (fleet / one check). Grouping first and deciding
each fingerprint once is what keeps the ratio small: 10,000 checks would be a ratio near 10,000.
Usage: python bench/fleet.py [--runs N] [--nodes N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GFX = ("gfx942", "gfx90a", "gfx950", "gfx1100", "gfx1201")
GPUS = (1, 8)
DRIVERS = ("30.30.3", "30.10.1", "6.4.3", "6.2.4", "6.1.3")


def _exe() -> list[str]:
    script = Path(sys.executable).with_name("rocm-vllm")
    exe = str(script) if script.exists() else shutil.which("rocm-vllm")
    return [exe] if exe else [sys.executable, "-m", "resolver"]


def write_reports(root: Path, nodes: int) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from resolver.node import from_flags

    kinds = [
        from_flags(gfx=g, gpus=n, driver=d, os="ubuntu-22.04", rocm=None, python="3.12").to_json()
        for g, n, d in itertools.product(GFX, GPUS, DRIVERS)
    ]
    for i in range(nodes):
        data = {**kinds[i % len(kinds)], "hostname": f"gpu{i + 1:05d}", "origin": "probe"}
        (root / f"gpu{i + 1:05d}.json").write_text(json.dumps(data))
    return len(kinds)


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1, 6):
        raise SystemExit(
            f"{' '.join(cmd[:3])} failed ({proc.returncode}): {proc.stderr.decode()[-400:]}"
        )
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=10_000)
    args = parser.parse_args()
    runs = max(5, args.runs)
    with tempfile.TemporaryDirectory(prefix="rocm-vllm-fleet-bench-") as tmp:
        reports = Path(tmp) / "reports"
        reports.mkdir()
        kinds = write_reports(reports, args.nodes)
        out = Path(tmp) / "out"
        fleet = [*_exe(), "fleet", "plan", str(reports), "--json", "-o", str(out), "--force"]
        check = [
            *_exe(),
            "check",
            "--gfx",
            "gfx942",
            "--gpus",
            "8",
            "--driver",
            "30.30.3",
            "--json",
        ]
        _time(fleet), _time(check)  # warm the OS file cache
        a: list[float] = []
        b: list[float] = []
        for _ in range(runs):
            a.append(_time(fleet))
            b.append(_time(check))
        groups = len(json.loads((out / "fleet.json").read_text())["groups"])
    ma, mb = statistics.median(a), statistics.median(b)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"fleet plan: median {ma * 1000:7.0f} ms over {runs} runs  ({args.nodes} reports, {kinds} "
        f"fingerprints -> {groups} groups, -o DIR)"
    )
    print(f"one check : median {mb * 1000:7.0f} ms over {runs} runs")
    print(f"ratio     : {ma / mb:.1f}  (fleet plan / one cold check; {cpus} CPUs)")


if __name__ == "__main__":
    main()
