"""`rocm-vllm check --explain` through the CLI, compared byte for byte with tests/golden/explain/.

The golden files are the plain-text form (NO_COLOR, not a TTY). They depend on matrix/ data: after
a data change, regenerate them with `UPDATE_GOLDEN=1 python -m pytest tests/test_explain.py` and
read the diff before committing it.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from resolver.cli import app
from resolver.explain import Derivation, render_derivation, render_rich

GOLDEN = Path(__file__).parent / "golden" / "explain"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"

# name -> (flags, expected exit code). Failures first (at least 10 kinds), then successes.
CASES: dict[str, tuple[list[str], int]] = {
    "old-driver": (["--gfx", "gfx942", "--driver", "6.1.3", "--vllm", ">=0.23,<0.25"], 1),
    "gfx906-unsupported": (["--gfx", "gfx906"], 1),
    "gfx1030-source-only": (["--gfx", "gfx1030"], 1),
    "gfx1102-override": (["--gfx", "gfx1102"], 1),
    "gfx1031-override-hint": (["--gfx", "gfx1031"], 1),
    "fp8-on-gfx90a": (["--gfx", "gfx90a", "--quantization", "fp8"], 1),
    "mxfp8-on-gfx942": (["--gfx", "gfx942", "--quantization", "mxfp8"], 0),
    # The frozen data lacks the releases whose kernel tables run MXFP4 emulated: unknown.
    "mxfp4-on-gfx1100": (["--gfx", "gfx1100", "--quantization", "mxfp4"], 6),
    "kv-fp8-on-gfx1100": (["--gfx", "gfx1100", "--kv-cache-dtype", "fp8"], 1),
    "wheel-old-glibc": (["--gfx", "gfx942", "--prefer", "wheel", "--os", "rhel-8.10"], 0),
    "wheel-wrong-python": (["--gfx", "gfx942", "--python", "3.11", "--prefer", "wheel"], 0),
    "unknown-release": (["--gfx", "gfx942", "--vllm", "==0.30.0"], 6),
    "old-vllm-needs-driver": (["--gfx", "gfx950", "--driver", "6.1.3", "--vllm", "==0.16.0"], 1),
    "mixed-fleet-fp8": (["--gfx", "gfx942,gfx950", "--quantization", "fp8"], 0),
    "no-driver-info": (["--gfx", "gfx942", "--os", "ubuntu-22.04"], 0),
    "driver-not-in-table": (["--gfx", "gfx942", "--driver", "6.8.0"], 6),
    "ok-mi300x-x8": (["--gfx", "gfx942", "--gpus", "8", "--driver", "30.30.3"], 0),
    "ok-strix-halo": (["--example", "strix-halo"], 0),
    "ok-amd-image-old-driver": (["--gfx", "gfx942", "--driver", "6.1.0"], 0),
    "ok-mxfp4-weight-only-on-gfx942": (
        ["--gfx", "gfx942", "--driver", "30.30.3", "--quantization", "mxfp4"],
        0,
    ),
}

# The "done when": each prints a chain starting with "Because", names sources, ends in
# hints.
DONE_WHEN = (
    "old-driver",
    "gfx906-unsupported",
    "gfx1030-source-only",
    "fp8-on-gfx90a",
    "wheel-old-glibc",
)


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, list(args), env={"NO_COLOR": "1", "COLUMNS": "100"}, catch_exceptions=False
    )
    return result.exit_code, result.stdout


def explain(name: str) -> tuple[int, str]:
    return run("check", *CASES[name][0], "--explain")


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    code, text = explain(name)
    assert code == CASES[name][1]
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # atomic: a half-written golden never exists
    assert path.exists(), (
        f"missing golden {path.name}: run UPDATE_GOLDEN=1 python -m pytest tests/test_explain.py"
    )
    assert text == path.read_text(encoding="utf-8")


def test_golden_dir_has_no_strays() -> None:
    """A renamed case must not leave its old golden behind."""
    assert {p.stem for p in GOLDEN.glob("*.txt")} == set(CASES)


def test_enough_kinds() -> None:
    failures = [n for n in CASES if not n.startswith("ok-")]
    assert len(failures) >= 10
    assert len(CASES) - len(failures) >= 3


@pytest.mark.parametrize("name", DONE_WHEN)
def test_done_when_chain_sources_hints(name: str) -> None:
    _, text = explain(name)
    body = text.split("\n\n")
    chain = next(block for block in body if "Because" in block).splitlines()
    assert chain[1].lstrip().startswith("Because"), chain[:2]
    assert "\nsources:\n  [1] " in text
    cited = set(re.findall(r"\[(\d+)[,\]]", "\n".join(chain)))
    assert cited
    assert all(f"  [{n}] " in text for n in cited), "every cited source is listed"
    assert "\nhint: " in text


def test_old_driver_names_fixes() -> None:
    _, text = explain("old-driver")
    flat = " ".join(text.split())
    assert "amdgpu 6.1.x supports ROCm user space 5.7-6.4" in flat
    # The smallest forward move that runs ROCm 7.2: 6.4.x (AMD's table: 6.4 runs user space
    # 6.1-7.2).
    assert "upgrade the host's amdgpu driver to 6.4.x" in flat
    assert "pick vLLM <= 0.10.1" in flat
    assert "rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909" in flat


def test_gfx1030_hint_and_plan_are_unofficial_source_build() -> None:
    _, text = explain("gfx1030-source-only")
    flat = " ".join(text.split())
    assert "HIP error: invalid device function" in flat
    assert "plan: source build" in flat
    assert "(unofficial)" in flat
    assert "rocm-vllm dockerfile --gfx gfx1030" in flat


def test_override_is_the_plan_marked_unofficial_with_risk() -> None:
    """issue 34: gfx1031 gets one answer everywhere: `unofficial_only` with the gfx1030 build run
    under HSA_OVERRIDE_GFX_VERSION=10.3.0, in the short form, --explain and --json; "consider
    llama.cpp" only where no path exists at all."""
    from resolver.explain import words

    none = words.text("gfx-unsupported/hint-none")
    flags = ["--gfx", "gfx1031", "--driver", "30.30.3"]
    _, text = explain("gfx1031-override-hint")
    assert text.startswith("verdict: unofficial_only")
    assert none not in " ".join(text.split())
    assert "needs HSA_OVERRIDE_GFX_VERSION=10.3.0" in text
    assert "wrong results" in text
    code, short = run("check", *flags)
    assert code == 1 and short.startswith("verdict: unofficial_only")
    assert none not in " ".join(short.split())
    code, out = run("check", *flags, "--json")
    doc = json.loads(out)
    assert (doc["verdict"], doc["exit_code"]) == ("unofficial_only", code)
    plan = doc["plan"]
    assert plan["kind"] == "source" and plan["unofficial"] and plan["override"] == "10.3.0"
    assert plan["built_for"] == ["gfx1030"]
    assert plan["env"]["HSA_OVERRIDE_GFX_VERSION"] == "10.3.0"
    assert "unofficial-override" in {w["code"] for w in doc["warnings"]}
    # A GPU with no path at all keeps the llama.cpp hint.
    _, igpu = run("check", "--gfx", "gfx1036", "--driver", "30.30.3")
    assert igpu.startswith("verdict: unsupported") and none in " ".join(igpu.split())


def test_preferred_wheel_rejection_is_explained_when_an_image_is_the_plan() -> None:
    _, text = explain("wheel-old-glibc")
    flat = " ".join(text.split())
    assert "wheels need glibc >= 2.35" in flat
    assert "glibc 2.28" in flat
    assert "no wheel fits, so the plan falls back to the official image" in flat


def test_successes_say_why_and_how_sure() -> None:
    for name in ("ok-mi300x-x8", "ok-strix-halo", "ok-amd-image-old-driver"):
        _, text = explain(name)
        assert "  Because " in text, name
        assert "\n  confidence: " in text, name
        assert "\nplan: " in text, name


def test_amd_image_success_explains_the_newer_images_it_skipped() -> None:
    _, text = explain("ok-amd-image-old-driver")
    flat = " ".join(text.split())
    assert "the 10 vllm/vllm-openai-rocm images" in flat
    assert "none of them runs on amdgpu 6.1.x" in flat
    assert "hint: upgrade the host's amdgpu driver to 6.4.x" in flat


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_derivation_round_trips_to_the_same_text(name: str) -> None:
    _, text = explain(name)
    _, out = run("check", *CASES[name][0], "--json")
    data = json.loads(out)["derivation"]
    derivation = Derivation.from_json(data)
    assert derivation.to_json() == data
    assert render_derivation(derivation) == text


def test_rich_output_has_the_same_words() -> None:
    from rich.console import Console

    _, text = explain("old-driver")
    _, out = run("check", *CASES["old-driver"][0], "--json")
    derivation = Derivation.from_json(json.loads(out)["derivation"])
    console = Console(
        file=io.StringIO(),
        width=120,
        force_terminal=True,
        color_system="truecolor",
        record=True,
        highlight=False,
    )
    render_rich(derivation, console)
    rich_text = console.export_text(clear=False)
    styled = console.export_text(styles=True)
    assert "\x1b[" in styled, "colours on a terminal"
    words = lambda t: set(re.findall(r"[\w.+/-]+", t))
    missing = words(text) - words(rich_text)
    assert not missing, sorted(missing)[:20]


def test_quiet_prints_the_verdict_only() -> None:
    code, out = run("check", "--gfx", "gfx906", "--quiet")
    assert (code, out) == (1, "unsupported\n")


def test_plain_check_points_to_explain() -> None:
    _, out = run("check", "--gfx", "gfx906")
    assert "add --explain" in out


def test_shell_completion_script(monkeypatch: pytest.MonkeyPatch) -> None:
    # Typer names the shell from the process tree (shellingham); a run with no shell above it
    # (a detached CI job) would find none, so the shell is given.
    import shellingham

    monkeypatch.setattr(shellingham, "detect_shell", lambda: ("bash", "/bin/bash"))
    result = CliRunner().invoke(app, ["--show-completion"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert "_ROCM_VLLM_COMPLETE" in result.stdout


def test_json_path_does_not_import_rich() -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from resolver.cli import app\n"
        "r = CliRunner().invoke(app, ['check', '--gfx', 'gfx942', '--driver', '6.1.3', '--vllm', "
        "'>=0.23,<0.25', '--json'])\n"
        "assert r.exit_code == 1, r.output\n"
        "assert not [m for m in sys.modules if m == 'rich' or m.startswith('rich.')], 'rich "
        "imported'\n"
        "assert not {'resolver.explain.text', 'resolver.explain.rich'} & set(sys.modules), "
        "'renderers imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _commands(d: Derivation) -> list[str]:
    return [f"$ {h.command}" for h in d.hints if h.command] + list(
        d.plan.commands if d.plan else ()
    )


def test_rich_never_wraps_commands_on_a_narrow_terminal() -> None:
    """issue 11, item 12: at 60 columns every `$ rocm-vllm ...` command is still one line."""
    import io

    from rich.console import Console

    for name in ("old-driver", "wheel-old-glibc", "ok-mi300x-x8", "no-driver-info"):
        _, data = run("check", *CASES[name][0], "--json")
        d = Derivation.from_json(json.loads(data)["derivation"])
        out = io.StringIO()
        render_rich(
            d,
            Console(
                file=out,
                width=60,
                force_terminal=False,
                color_system=None,
                highlight=False,
                soft_wrap=False,
            ),
        )
        lines = [line.strip() for line in out.getvalue().splitlines()]
        commands = _commands(d)
        assert commands, name
        for command in commands:
            assert command.strip() in lines, (name, command)


def test_plain_prose_follows_the_width_and_commands_stay_whole() -> None:
    for name in ("old-driver", "wheel-old-glibc", "no-driver-info"):
        _, data = run("check", *CASES[name][0], "--json")
        d = Derivation.from_json(json.loads(data)["derivation"])
        text = render_derivation(d, width=60)
        lines = text.splitlines()
        commands = [c.strip() for c in _commands(d)]
        for command in commands:
            assert command in [line.strip() for line in lines], (name, command)
        prose = [line for line in lines if line.strip() not in commands and len(line.split()) > 1]
        # Unbreakable identifiers (image refs, URLs, commits) may run over; prose does not.
        long = [
            line
            for line in prose
            if len(line) > 60 and not re.search(r"https?:|@|rocm/vllm:|vllm-openai-rocm:", line)
        ]
        assert not long, long
    # The short form wraps too: no 300-column source lines at 80 columns.
    code, text = run_env(
        {"COLUMNS": "80"},
        "check",
        "--gfx",
        "gfx942",
        "--quantization",
        "mxfp8",
        "--driver",
        "30.30.3",
    )
    assert code == 0  # emulated (the release's kernel table), with sourced notes to wrap
    assert (
        max(
            len(line)
            for line in text.splitlines()
            if not line.startswith("    ") and not re.search(r"rocm/vllm:|vllm-openai-rocm:", line)
        )
        <= 80
    )


def test_inline_commands_in_prose_are_not_split() -> None:
    from resolver.explain.text import fill

    text = (
        "hint: choose an artifact built for gfx1030, or build from source: `rocm-vllm "
        "dockerfile --gfx gfx1030`"
    )
    lines = fill(text, "", "  ", 40)
    assert any("`rocm-vllm dockerfile --gfx gfx1030`" in line for line in lines), lines


def run_env(env: dict[str, str], *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, list(args), env={"NO_COLOR": "1", **env}, catch_exceptions=False
    )
    return result.exit_code, result.stdout


def test_the_printed_wheel_line_follows_the_data_and_a_mirror(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """issue 25: the pip line of a ROCm wheel plan names the variant's index from wheels.toml,
    or the mirror ROCM_VLLM_WHEELS names (an air-gapped site)."""
    from resolver.data import matrix
    from resolver.data.node import from_flags
    from resolver.explain import plan_steps
    from resolver.solve import Request, solve

    node = from_flags(
        gfx="gfx942", gpus=1, driver="30.30.3", os="ubuntu-22.04", rocm=None, python="3.12"
    )
    d = solve(matrix.load(), node, Request(paths=frozenset({"wheel"})))
    assert d.plan is not None and d.plan.candidate.wheel is not None
    wheel = d.plan.candidate.wheel
    lines = " ".join(cmd for cmd, _ in plan_steps(d.plan, node))
    assert f"{wheel.index_url.rstrip('/')}/{d.plan.candidate.vllm}/{wheel.name}" in lines
    monkeypatch.setenv("ROCM_VLLM_WHEELS", "https://wheels.example.internal/rocm")
    mirrored = " ".join(cmd for cmd, _ in plan_steps(d.plan, node))
    assert f"https://wheels.example.internal/rocm/{d.plan.candidate.vllm}/{wheel.name}" in mirrored
