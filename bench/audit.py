"""Audit benchmark: `rocm-vllm audit` of a synthetic image layout against `gzip -dc` of the
same layers (decompressing them is the physical limit of any audit).

The layout holds gzip layers of ~100 MB each: copies of a real AMD-built library
(tests/audit/fixtures, a zstd-compressed offload bundle of 27 targets) under distinct names,
with incompressible filler files between them, so the reader decompresses as much as a real
image and parses a bundle every ~1 MB. Both runs are fresh processes from the same interpreter,
interleaved. The issue asks for a ratio <= 1.5. Usage: python bench/audit.py [--size-mb 2048]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "tests" / "audit" / "fixtures" / "jax_rocm7_plugin-0.12.0-_prng.so"
LAYER_MB = 100


def build(layout: Path, size_mb: int) -> list[Path]:
    blobs = layout / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (layout / "index.json").write_text('{"schemaVersion": 2, "manifests": []}')
    lib = LIB.read_bytes()
    filler = os.urandom(700 * 1024)
    made = []
    for n in range(max(1, size_mb // LAYER_MB)):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for i in range(LAYER_MB):
                for name, data in ((f"lib/l{n}_{i}.so", lib), (f"data/f{n}_{i}.bin", filler)):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        blob = gzip.compress(buf.getvalue(), compresslevel=1)
        path = blobs / hashlib.sha256(blob).hexdigest()
        path.write_bytes(blob)
        made.append(path)
    return made


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed: {proc.stderr.decode()[-400:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=2048)  # the issue: ~2 GB
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="audit-bench-"))
    try:
        layers = build(tmp / "layout", args.size_mb)
        on_disk = sum(p.stat().st_size for p in layers) / 1024**2
        audit = [sys.executable, "-m", "resolver", "audit", str(tmp / "layout")]
        gunzip = ["sh", "-c", " ".join(f"gzip -dc {p} >/dev/null;" for p in layers)]
        a, b = [], []
        for _ in range(max(1, args.runs)):
            a.append(timed(audit))
            b.append(timed(gunzip))
        ma, mb = statistics.median(a), statistics.median(b)
        print(
            f"layout : {len(layers)} gzip layers, {on_disk:.0f} MB on disk, "
            f"~{args.size_mb} MB unpacked, {len(layers) * LAYER_MB} libraries"
        )
        print(f"audit  : median {ma:6.2f} s over {len(a)} runs")
        print(f"gzip -dc: median {mb:6.2f} s (the same layers)")
        print(f"ratio  : {ma / mb:.2f}  (target <= 1.5)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
