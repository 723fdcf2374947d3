"""Cold-start benchmark: `rocm-vllm check ... --json` against `python -c "import typer"`, and
`rocm-vllm upgrade` (the what-if search) against that cold check.

The commands run as fresh processes from the same interpreter, interleaved, at least 9 times
each; the script prints the medians and their ratios. Targets: check <= 1.5x importing typer
(issue 21), upgrade within 10x one cold check (issue 22). The package's bytecode is compiled
first, as an installed wheel's is (PYTHONDONTWRITEBYTECODE would otherwise make every edited
module compile again at every start).
Usage: python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _check_command() -> list[str]:
    script = Path(sys.executable).with_name("rocm-vllm")
    exe = str(script) if script.exists() else shutil.which("rocm-vllm")
    base = [exe] if exe else [sys.executable, "-m", "resolver"]
    return [*base, "check", "--gfx", "gfx942", "--gpus", "8", "--driver", "30.30.3", "--json"]


def _upgrade_command(check: list[str]) -> list[str]:
    # Issue 22's example: Ubuntu 20.04 + amdgpu 6.1 to vLLM 0.33.0 (OS release, then driver).
    base = check[: check.index("check")]
    return [
        *base,
        "upgrade",
        "--gfx",
        "gfx942",
        "--gpus",
        "8",
        "--driver",
        "6.1.3",
        "--os",
        "ubuntu-20.04",
        "--vllm",
        "==0.33.0",
        "--json",
    ]


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    runs = max(9, args.runs)
    check = _check_command()
    import compileall

    import resolver

    compileall.compile_dir(str(Path(resolver.__file__).parent), quiet=1)
    baseline = [sys.executable, "-c", "import typer"]
    upgrade = _upgrade_command(check)
    _time(check), _time(baseline), _time(upgrade)  # warm the OS file cache
    a: list[float] = []
    b: list[float] = []
    c: list[float] = []
    for _ in range(runs):
        a.append(_time(check))
        b.append(_time(baseline))
        c.append(_time(upgrade))
    ma, mb, mc = statistics.median(a), statistics.median(b), statistics.median(c)
    print(f"check   : median {ma * 1000:7.1f} ms over {runs} runs  ({' '.join(check[-8:])})")
    print(f"baseline: median {mb * 1000:7.1f} ms over {runs} runs  (python -c 'import typer')")
    print(f"ratio   : {ma / mb:.2f}  (target <= 1.5)")
    print(f"upgrade : median {mc * 1000:7.1f} ms over {runs} runs  (issue 22's Ubuntu 20.04 route)")
    print(f"ratio   : {mc / ma:.2f} x one cold check  (target <= 10)")
    # What the check path loads: networkx and the graph belong to `matrix graph` alone; the rest
    # are what start-up work (issue 21) took off it (OpenSSL's hashlib, platformdirs, the stdlib
    # json encoder, dataclasses, packaging's specifiers).
    names = (
        "networkx",
        "resolver.data.graph",
        "rich",
        "requests",
        "hashlib",
        "platformdirs",
        "json",
        "dataclasses",
        "packaging.specifiers",
    )
    code = (
        "import runpy, sys\n"
        f"sys.argv = {['rocm-vllm', *check[check.index('check') :]]!r}\n"
        "try:\n    runpy.run_module('resolver', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        f"print(*(m in sys.modules for m in {names!r}), file=sys.stderr)\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    ).stderr.split()[-len(names) :]
    print(
        "check imports: "
        + ", ".join(
            f"{n} {'yes' if v == 'True' else 'no'}" for n, v in zip(names, loaded, strict=False)
        )
    )


if __name__ == "__main__":
    main()
