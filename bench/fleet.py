"""Fleet-scale benchmark: `rocm-vllm fleet plan` over many realistic node reports, against one
cold `rocm-vllm check` for a single node.

The reports are what `probe --json` writes on real nodes: each kind is the probe of a recorded
tool output from tests/probe/fixtures (the shipped fixtures' variety: MI300X, MI250/MI210, RX
7900 XTX, RX 9070 XT, Strix Halo, MI350X, ...) with a driver release and an OS; kinds x drivers x
OSes give 48 fingerprints. Two fleets of that size are planned:

- ids: every node's GPUs get unique ids and PCI addresses of their own, so no two reports are
  byte-identical but for the host name and those ids;
- unique: as ids, and every node also reports its own kernel release (a rolling kernel update):
  no two reports are equal even with the host name and ids left out.

The fleets and the check run as fresh processes, interleaved (ids, unique, check), at least 3
times each; the script prints each fleet's median, its ratio to the check's median, the range of
the ratios run by run (how noisy the machine was) and the fleet's peak memory (the largest
resident set of its runs).

Targets (issues 23 and 40): 10,000 reports within 10x one cold check, whether or not every report
differs; 100,000 within 100x and under 1 GiB (under 300 MiB when every report differs).
Usage: python bench/fleet.py [--runs N] [--nodes N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "probe" / "fixtures"
# Recorded outputs with GPUs whose probe gives a node (SOURCES.md says where each came from).
KINDS = (
    ("rocminfo", "rocminfo-gfx942-mi300x-4gpu-thamada.txt"),
    ("rocminfo", "rocminfo-gfx90a-mi250-fragment-aiter179.txt"),
    ("rocminfo", "rocminfo-gfx1100-rx7900xtx-fragment-ollama3158.txt"),
    ("rocminfo", "rocminfo-gfx1201-with-igpu-gfx1036-rocm5861.txt"),
    ("rocminfo", "rocminfo-gfx1151-strixhalo-dkms-rocm5817.txt"),
    ("sysfs", "sysfs/kfd-gfx90a-mi210-8gpu-k8sdp"),
    ("amd_smi", "amd-smi-static-gfx950-mi350x-rocmsystems2987.txt"),
    ("rocminfo", "rocminfo-gfx906-mi50-8gpu-delaunay-regression.txt"),
)
DRIVERS = ("30.30.3", "30.10.1", "6.4.3")
OSES = ("ubuntu-22.04", "ubuntu-24.04")


def _exe() -> list[str]:
    script = Path(sys.executable).with_name("rocm-vllm")
    exe = str(script) if script.exists() else shutil.which("rocm-vllm")
    return [exe] if exe else [sys.executable, "-m", "resolver"]


def _kinds() -> list[dict[str, object]]:
    sys.path.insert(0, str(ROOT))
    from resolver.data import matrix
    from resolver.probe import probe_files

    m = matrix.load()
    out = []
    for (flag, name), driver, os_id in itertools.product(KINDS, DRIVERS, OSES):
        node = probe_files(**{flag: FIXTURES / name}, matrix=m)  # type: ignore[arg-type]
        data = node.to_json()
        data.update(driver_version=driver, os=os_id, python="3.12", origin="probe")
        out.append({"schema_version": 1, **data})
    return out


def write_reports(root: Path, nodes: int, *, unique: bool = False) -> int:
    """``nodes`` reports over the kinds; each GPU gets its own unique id and PCI address, and
    with ``unique`` each node its own kernel release."""
    kinds = _kinds()
    rng = random.Random(20261201)
    for i in range(nodes):
        data = json.loads(json.dumps(kinds[i % len(kinds)]))
        for j, gpu in enumerate(data["gpus"]):
            gpu["unique_id"] = f"{rng.getrandbits(64):016x}"
            gpu["pci_bdf"] = f"0000:{rng.randrange(1, 255):02x}:{j:02x}.0"
        data["hostname"] = f"gpu{i + 1:06d}"
        if unique:
            data["kernel"] = f"6.8.0-{i + 1}-generic"
        (root / f"gpu{i + 1:06d}.json").write_text(json.dumps(data, indent=2))
    return len(kinds)


def _rss_of(cmd: list[str]) -> tuple[float, int]:
    """One run in a child whose own peak RSS is read back (RUSAGE_CHILDREN of a wrapper)."""
    code = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
        "t = time.perf_counter() - t\n"
        "if p.returncode not in (0, 1, 6):\n"
        "    sys.exit(p.stderr.decode()[-400:])\n"
        "print(t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *cmd], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed: {out.stderr[-400:]}")
    seconds, kib = out.stdout.split()
    return float(seconds), int(kib)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=10_000)
    args = parser.parse_args()
    runs = max(3, args.runs)
    cases = ("ids", "unique")
    with tempfile.TemporaryDirectory(prefix="rocm-vllm-fleet-bench-") as tmp:
        fleets: dict[str, list[str]] = {}
        for case in cases:
            reports = Path(tmp) / case
            reports.mkdir()
            kinds = write_reports(reports, args.nodes, unique=case == "unique")
            out = Path(tmp) / f"out-{case}"
            fleets[case] = [*_exe(), "fleet", "plan", str(reports), "--json"]
            fleets[case] += ["-o", str(out), "--force"]
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
        for cmd in (*fleets.values(), check):
            _rss_of(cmd)  # warm the OS file cache
        times: dict[str, list[float]] = {case: [] for case in (*cases, "check")}
        peaks = dict.fromkeys(cases, 0)
        for _ in range(runs):
            for case in cases:
                seconds, kib = _rss_of(fleets[case])
                times[case].append(seconds)
                peaks[case] = max(peaks[case], kib)
            times["check"].append(_rss_of(check)[0])
        groups = {
            case: len(json.loads((Path(tmp) / f"out-{case}" / "fleet.json").read_text())["groups"])
            for case in cases
        }
    mb = statistics.median(times["check"])
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{args.nodes} realistic reports of {kinds} kinds; {runs} runs each, interleaved")
    for case in cases:
        ma = statistics.median(times[case])
        ratios = [a / b for a, b in zip(times[case], times["check"], strict=True)]
        print(
            f"fleet plan ({case:6}): median {ma * 1000:7.0f} ms, {ma / mb:5.1f} x one check "
            f"(run by run {min(ratios):.1f}-{max(ratios):.1f}); {groups[case]} groups, -o DIR; "
            f"peak RSS {peaks[case] / 1024:.0f} MiB"
        )
    print(f"one check        : median {mb * 1000:7.0f} ms ({cpus} CPUs)")


if __name__ == "__main__":
    main()
