"""Start-up benchmark: `rocm-vllm check ... --json` against `python -c "import typer"`, cold and
warm, and `rocm-vllm upgrade` (the what-if search) against a warm check.

Cold is a first run: every run gets new, empty cache and data dirs (ROCM_VLLM_CACHE_DIR,
ROCM_VLLM_DATA_DIR), as in a fresh CI or init container; an installed wheel then reads the
compiled matrix it ships, a checkout (or an editable install) parses the TOML. Warm runs share
dirs that an earlier run filled (the sealed compiled-matrix cache). The commands run as fresh
processes from the same interpreter, interleaved (each round starts one command later than the
last, so none always follows the heavy cold run), at least 9 times each; the script prints each
median with its range, the ratio of the medians, the median of the ratios taken run by run
(on a shared machine the pairs move together) and the ratio of the 10th percentiles ("fast
runs": what a quiet machine sees; on a busy one `import typer`, which spends a quarter of its
time in the cyclic collector, slows more than a check, which runs none, so the medians' ratio
flatters the check). Targets: a check, cold or warm, <= 1.5x importing
typer (issues 21, 40); upgrade within 10x one check (issue 22). `--scale K` runs against a
synthetic K-times matrix (every vLLM release, its images and CUDA and capability records again
under new versions: 0.x.y becomes 1.x.y, 2.x.y, ...; issue 40's target: warm within 1.5x at 4x).
The package's bytecode is compiled first, as an installed wheel's is.
`--instructions` also counts the instructions each of a warm check and `import typer` executes
once, under valgrind's callgrind with PYTHONHASHSEED=0 (when valgrind is installed): the same
count on every run, so a change's effect shows on a noisy machine where wall times move by a
third. Instructions are not time (a check allocates and decodes where typer's import mostly
creates classes): the targets stay on the wall-time ratios.
It also prints each command's minor page faults (the memory the kernel maps in a page at a time):
in a VM a fault can cost 5 us, so a check that touches fresh memory typer does not is slower
there than on bare metal; the count, unlike the time, hardly moves run to run.
Usage: python bench/startup.py [--runs N] [--scale K] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


def _time(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """The run's wall seconds, its CPU seconds (user + sys) and its minor page faults (fresh
    memory the kernel mapped in). On a shared machine the wall time moves with the load and the
    CPU time less: both are reported."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, env=env
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return elapsed, cpu, after.ru_minflt - before.ru_minflt


_USER_DIRS = ("ROCM_VLLM_CACHE_DIR", "ROCM_VLLM_DATA_DIR")
# The files and the array each repeats under new versions for --scale.
_SCALED = (
    ("vllm.toml", "[[release]]"),
    ("capabilities.toml", "[[release]]"),
    ("cuda.toml", "[[release]]"),
    ("images.toml", "[[image]]"),
)


def scaled_matrix(src: Path, dest: Path, k: int) -> None:
    """``src`` with every vLLM release (its stacks, images, CUDA and capability records) k times:
    the copies name 1.x.y ... (k-1).x.y where the original names 0.x.y."""
    shutil.copytree(src, dest)
    for name, header in _SCALED:
        text = (src / name).read_text()
        _, *blocks = re.split(r"(?m)^(?=" + re.escape(header) + r"\s*$)", text)
        copies = [
            re.sub(r"(?<![\d.])0\.(\d+)\.(\d+)", rf"{n}.\1.\2", block)
            for n in range(1, k)
            for block in blocks
            if name != "images.toml" or re.search(r'(?m)^vllm = "0\.', block)
        ]
        (dest / name).write_text("\n".join([text, *copies]))


def _row(name: str, times: list[float], what: str) -> None:
    print(
        f"{name:<13}: median {statistics.median(times) * 1000:7.1f} ms "
        f"({min(times) * 1000:.0f}-{max(times) * 1000:.0f}) over {len(times)} runs"
        + (f"  ({what})" if what else "")
    )


def _fast(times: list[float]) -> float:
    """The 10th percentile: a run the machine's other work hardly slowed."""
    ordered = sorted(times)
    return ordered[(len(ordered) - 1) // 10]


def _ratio(name: str, a: list[float], b: list[float], target: str) -> None:
    pairs = [x / y for x, y in zip(a, b, strict=True)]
    print(
        f"{name:<13}: {statistics.median(a) / statistics.median(b):.2f} (paired: median "
        f"{statistics.median(pairs):.2f}, {min(pairs):.2f}-{max(pairs):.2f}; fast runs: "
        f"{_fast(a) / _fast(b):.2f})" + (f"  ({target})" if target else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--scale", type=int, default=1, help="synthetic K-times data (K >= 1)")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions under callgrind"
    )
    args = parser.parse_args()
    runs = max(9, args.runs)
    check = _check_command()
    import compileall

    import resolver
    from resolver.data import matrix, resources

    compileall.compile_dir(str(Path(resolver.__file__).parent), quiet=1)
    scratch = Path(tempfile.mkdtemp(prefix="rocm-vllm-bench-"))
    # The user's own cache, data dir and overlay stay out of it; ROCM_VLLM_MATRIX_DIR is kept.
    env = {k: v for k, v in os.environ.items() if k not in _USER_DIRS}
    try:
        data = resources.matrix_dir()
        if args.scale > 1:
            scaled_matrix(data, scratch / f"matrix-x{args.scale}", args.scale)
            data = scratch / f"matrix-x{args.scale}"
            matrix.load_dir(data)  # refused data would time an error message
            env["ROCM_VLLM_MATRIX_DIR"] = str(data)
        shipped = resources.shipped_compiled(data)
        shipped_hit = shipped is not None and shipped.is_file()
        warm = {
            **env,
            "ROCM_VLLM_CACHE_DIR": str(scratch / "warm-cache"),
            "ROCM_VLLM_DATA_DIR": str(scratch / "warm-data"),
        }
        baseline = [sys.executable, "-c", "import typer"]
        upgrade = _upgrade_command(check)
        _time(check, warm), _time(baseline, env), _time(upgrade, warm)  # fill the warm cache

        def cold_env(i: int) -> dict[str, str]:
            d = scratch / f"cold-{i}"  # made outside the timed run; the tool creates none of it
            return {**env, "ROCM_VLLM_CACHE_DIR": str(d / "c"), "ROCM_VLLM_DATA_DIR": str(d / "d")}

        # --model with the config on disk (issue 37: at most 20% over a cold check)
        config = Path(__file__).resolve().parents[1] / "tests/fixtures/models/llama-3.1-70b"
        with_model = [*check, "--model", str(config)] if config.is_dir() else None
        jobs: list[tuple[str, list[str], Callable[[int], dict[str, str]]]] = [
            ("cold", check, cold_env),
            ("warm", check, lambda _: warm),
            ("typer", baseline, lambda _: env),
            ("upgrade", upgrade, lambda _: warm),
        ]
        if with_model is not None:
            jobs.append(("model", with_model, lambda i: cold_env(runs + 1 + i)))
        wall: dict[str, list[float]] = {name: [] for name, _, _ in jobs}
        cpu: dict[str, list[float]] = {name: [] for name, _, _ in jobs}
        faults: dict[str, list[int]] = {name: [] for name, _, _ in jobs}
        for i in range(runs):
            # Each round starts one command later: none always runs after the heavy first run
            # (a cold run at --scale 4 parses ~2 MB of TOML) or always first.
            for name, cmd, run_env in jobs[i % len(jobs) :] + jobs[: i % len(jobs)]:
                took, used, faulted = _time(cmd, run_env(i))
                wall[name].append(took)
                cpu[name].append(used)
                faults[name].append(faulted)
        cold, hot, base, upg = wall["cold"], wall["warm"], wall["typer"], wall["upgrade"]
        mod = wall.get("model", [])
        cpu_cold, cpu_hot, cpu_base = cpu["cold"], cpu["warm"], cpu["typer"]
        kind = (
            "the wheel's shipped compiled matrix"
            if shipped_hit
            else "no shipped compiled matrix: a cold run parses the TOML (a checkout, an editable "
            "install, or --scale; `pip install .` and run from that venv to time a wheel)"
        )
        print(f"data         : {data} ({kind})")
        _row("check cold", cold, "new empty cache and data dirs each run")
        _row("check warm", hot, "compiled-matrix cache filled by an earlier run")
        _row("import typer", base, "python -c 'import typer'")
        _ratio("cold / typer", cold, base, "target <= 1.5")
        _ratio("warm / typer", hot, base, "target <= 1.5")
        _row("CPU cold", cpu_cold, "user + sys of the same runs")
        _row("CPU warm", cpu_hot, "")
        _row("CPU typer", cpu_base, "")
        _ratio("CPU cold/typ", cpu_cold, cpu_base, "")
        _ratio("CPU warm/typ", cpu_hot, cpu_base, "")
        median_faults = {name: statistics.median(counts) for name, counts in faults.items()}
        print(
            f"page faults  : median cold {median_faults['cold']:.0f}, warm "
            f"{median_faults['warm']:.0f}, typer {median_faults['typer']:.0f} (minor faults: "
            "memory the kernel maps in a page at a time; dear in a VM, where machines differ)"
        )
        _row("upgrade", upg, "issue 22's Ubuntu 20.04 route, warm")
        _ratio("upgrade/check", upg, hot, "target <= 10")
        if mod:
            _row("check --model", mod, "cold, Llama-3.1-70B's config.json on disk")
            _ratio("model/check", mod, cold, "cold; target <= 1.2")
        if args.instructions:
            _instructions(check, warm, baseline, env)
        if args.scale > 1:
            return
        _imports("cold", check, cold_env(runs), scratch)
        _imports("warm", check, warm, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _instructions(
    check: list[str], warm: dict[str, str], baseline: list[str], env: dict[str, str]
) -> None:
    """Each command's instruction count under callgrind (one run each: the count repeats)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("instructions : valgrind is not installed (apt-get install valgrind)")
        return

    def count(cmd: list[str], run_env: dict[str, str]) -> int:
        proc = subprocess.run(
            [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
            capture_output=True,
            text=True,
            check=False,
            env={**run_env, "PYTHONHASHSEED": "0"},
        )
        found = re.search(r"Collected : (\d+)", proc.stderr)
        if found is None:
            raise SystemExit(f"callgrind printed no count: {proc.stderr[-400:]}")
        return int(found.group(1))

    ours, typer = count(check, warm), count(baseline, env)
    print(
        f"instructions : warm check {ours / 1e6:.0f} M, import typer {typer / 1e6:.0f} M "
        f"(ratio {ours / typer:.2f}; callgrind, PYTHONHASHSEED=0)"
    )


def _imports(kind: str, check: list[str], env: dict[str, str], cwd: Path) -> None:
    # What the check path loads: networkx and the graph belong to `matrix graph` alone; tomllib and
    # the TOML builder (resolver.data.build) to a run that parses the TOML; the rest are what
    # start-up work (issue 21) took off it (OpenSSL's hashlib, platformdirs, the stdlib json
    # encoder, dataclasses, packaging's specifiers).
    names = (
        "networkx",
        "resolver.data.graph",
        "resolver.data.build",
        "rich",
        "requests",
        "hashlib",
        "platformdirs",
        "json",
        "dataclasses",
        "packaging.specifiers",
        "tomllib",
    )
    code = (
        "import runpy, sys\n"
        f"sys.argv = {['rocm-vllm', *check[check.index('check') :]]!r}\n"
        "try:\n    runpy.run_module('resolver', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        f"print(*(m in sys.modules for m in {names!r}), file=sys.stderr)\n"
    )
    loaded = subprocess.run(
        # Not from the checkout's root: `python -c` would import its resolver, not the installed.
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=cwd,
    ).stderr.split()[-len(names) :]
    print(
        f"check imports ({kind}): "
        + ", ".join(
            f"{n} {'yes' if v == 'True' else 'no'}" for n, v in zip(names, loaded, strict=False)
        )
    )


if __name__ == "__main__":
    main()
