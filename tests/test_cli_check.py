"""`rocm-vllm check` and `matrix` through the CLI: exit codes, JSON contract, one-line errors."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .helpers import copy_matrix, run_cli

JSON_KEYS = {
    "schema_version",
    "verdict",
    "exit_code",
    "node",
    "request",
    "plan",
    "warnings",
    "blockers",
    "host_fix",
    "reasons",
    "alternatives",
}


def check_json(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = run_cli("check", *args, "--json")
    return result.exit_code, json.loads(result.stdout)


def test_mi300x_done_when() -> None:
    code, data = check_json(
        "--gfx", "gfx942", "--gpus", "8", "--driver", "30.30.3", "--os", "ubuntu-22.04"
    )
    assert code == 0 and data["exit_code"] == 0
    assert set(data) >= JSON_KEYS
    assert data["verdict"] in ("supported", "supported_with_warnings")
    plan = data["plan"]
    assert (
        plan["kind"] == "image"
        and plan["image"].startswith("vllm/vllm-openai-rocm:")
        and "gfx942" in plan["arch"]
    )
    assert plan["env"] == {"VLLM_ROCM_USE_AITER": "1"}
    aiter = [w for w in data["warnings"] if w["code"] == "aiter-off-by-default"]
    assert aiter and set(aiter[0]) == {
        "code",
        "message",
        "hint",
        "severity",
        "source",
        "env",
        "applied_by_plan",
    }
    assert "VLLM_ROCM_USE_AITER=1" in aiter[0]["hint"]
    assert aiter[0]["env"] == {"VLLM_ROCM_USE_AITER": "1"} and aiter[0]["applied_by_plan"] is True


def test_gfx906_done_when() -> None:
    code, data = check_json("--gfx", "gfx906")
    assert code == 1 and data["verdict"] in ("unsupported", "unofficial_only")
    assert data["reasons"], "every rejected candidate is listed"
    first = data["reasons"][0]
    assert set(first) == {"candidate", "reasons"} and first["reasons"][0]["source"]
    assert any("gfx906" in r["message"] for e in data["reasons"] for r in e["reasons"])


def test_old_driver_done_when() -> None:
    code, data = check_json("--gfx", "gfx942", "--driver", "6.1.3", "--vllm", ">=0.23,<0.25")
    assert code == 1 and data["verdict"] == "blocked_host_fix"
    fix = data["host_fix"]["fixes"][0]
    assert (
        "5.7-6.4" in fix["message"]
        and fix["fix"]["host"]
        and fix["fix"]["value"] == "6.4"
        and fix["fix"]["direction"] == "upgrade"
    )


def test_fp8_gfx90a_done_when() -> None:
    code, data = check_json("--gfx", "gfx90a", "--quantization", "fp8")
    assert code == 1 and data["verdict"] == "unsupported"
    assert [b["code"] for b in data["blockers"]] == ["fp8-unsupported"]


def test_example_node_text_output() -> None:
    result = run_cli("check", "--example", "mi300x-8")
    assert result.exit_code == 0
    assert result.stdout.startswith("verdict: supported")
    assert "plan: official image vllm/vllm-openai-rocm:" in result.stdout
    assert "docker pull" in result.stdout


def test_quiet_prints_only_the_verdict() -> None:
    result = run_cli("check", "--gfx", "gfx906", "--quiet")
    assert result.exit_code == 1 and result.stdout == "unsupported\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gfx", "banana"], "error: 'banana' is not a gfx target name"),
        (
            ["--gfx", "gfx942", "--driver", "new"],
            "error: --driver 'new' is not an amdgpu driver version",
        ),
        (
            ["--gfx", "gfx942", "--vllm", ">>1"],
            "error: --vllm '>>1' is not a version or PEP 440 specifier",
        ),
        (["--gfx", "gfx942", "--os", "windows"], "error: --os 'windows' is not an OS id"),
        (["--gfx", "gfx942", "--prefer", "conda"], "error: --prefer 'conda' is not a path kind"),
        (
            ["--node", "/nonexistent/node.json"],
            "error: --node /nonexistent/node.json: no such file",
        ),
        (["--example", "dgx"], "error: --example 'dgx' is not an embedded example"),
        (
            ["--example", "mi300x-8", "--node", "x.json"],
            "error: --node and --example both describe the node",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line_and_hint(args: list[str], message: str) -> None:
    result = run_cli("check", *args)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0] == message
    assert len(lines) == 2 and lines[1].startswith("hint: ")
    assert result.stdout == ""


@pytest.mark.parametrize("command", ["check", "image", "dockerfile"])
@pytest.mark.parametrize(
    ("flag", "values"),
    [
        ("--node", ["a.json", "b.json"]),
        ("--rocminfo", ["a.txt", "b.txt"]),
        ("--example", ["mi300x-8", "mi210-4"]),
    ],
)
def test_a_repeated_node_flag_is_refused_not_the_last_kept(
    command: str, flag: str, values: list[str]
) -> None:
    """Click keeps the last of a repeated option: `--node a.json --node b.json` would decide for b
    only."""
    args = [a for v in values for a in (flag, v)]
    result = run_cli(command, *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith(
        f"error: {flag} {values[0]} {flag} {values[1]}: "
    )
    assert f"{flag} was given 2 times" in lines[0]
    assert lines[1].startswith("hint: ") and "fleet" in lines[1]
    assert result.stdout == ""


def test_unknown_gfx_is_verdict_unknown_exit_6_not_an_error() -> None:
    result = run_cli("check", "--gfx", "gfx1234")
    assert result.exit_code == 6, result.output
    assert result.stdout.startswith("verdict: unknown  (exit 6)")
    assert "gfx1234 is not a gfx target the compatibility data knows" in result.stdout
    quiet = run_cli("check", "--gfx", "gfx1234", "--quiet")
    assert (quiet.exit_code, quiet.stdout) == (6, "unknown\n")
    data = json.loads(run_cli("check", "--gfx", "gfx1234", "--json").stdout)
    assert data["verdict"] == "unknown" and data["exit_code"] == 6
    assert data["missing"] == [
        {
            "kind": "gfx",
            "subject": "gfx1234",
            "detail": data["missing"][0]["detail"],
            "fetch": None,
            "hint": None,
        }
    ]


def test_image_for_an_unknown_gfx_exits_6_and_names_what_is_missing() -> None:
    result = run_cli("image", "--gfx", "gfx1234")
    assert (
        result.exit_code == 6
        and "gfx1234 is not a gfx target" in result.stderr
        and result.stdout == ""
    )


def test_unknown_release_is_verdict_unknown_with_the_fetch_command() -> None:
    result = run_cli(
        "check", "--gfx", "gfx942", "--vllm", "==0.30.0", "--json"
    )  # frozen data: never read
    data = json.loads(result.stdout)
    assert result.exit_code == 6 and data["verdict"] == "unknown"
    assert (
        data["missing"][0]["fetch"]
        == "rocm-vllm matrix refresh --source sdist --tag 0.30.0 --write"
    )


def test_unreadable_node_file(tmp_path: Path) -> None:
    bad = tmp_path / "node.json"
    bad.write_text("{ nope")
    result = run_cli("check", "--node", str(bad))
    assert (
        result.exit_code == 2
        and "not valid JSON" in result.stderr
        and "Traceback" not in result.stderr
    )


def test_node_file_from_probe_json(tmp_path: Path) -> None:
    node = {
        "gpus": [{"gfx": "gfx942"}] * 8,
        "gfx_targets": ["gfx942"],
        "physical_gpu_count": 8,
        "logical_gpu_count": 8,
        "driver_version": "30.30.3",
        "os": "ubuntu-22.04",
    }
    path = tmp_path / "node.json"
    path.write_text(json.dumps(node))
    code, data = check_json("--node", str(path))
    assert code == 0 and data["node"]["origin"] == f"file:{path}"
    assert "--node" in data["plan"]["commands"][1]


def test_broken_data_dir_exits_3(tmp_path: Path) -> None:
    d = copy_matrix(tmp_path)
    (d / "images.toml").write_text(
        (d / "images.toml").read_text().replace('arch = ["gfx942"]', 'arch = ["gfx9999"]', 1)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "resolver", "check", "--gfx", "gfx942"],
        capture_output=True,
        text=True,
        env={"ROCM_VLLM_MATRIX_DIR": str(d), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 3
    assert (
        proc.stderr.startswith("error: images.toml: image rocm/vllm:")
        and "Traceback" not in proc.stderr
    )


def test_matrix_validate_show_graph() -> None:
    ok = run_cli("matrix", "validate")
    assert ok.exit_code == 0 and ok.stdout.startswith("ok: ")
    shown = run_cli("matrix", "show", "drivers")
    assert shown.exit_code == 0 and "30.30.x" in shown.stdout
    doc = json.loads(run_cli("matrix", "show", "vllm", "--json").stdout)
    assert doc["schema_version"] == 1 and doc["table"] == "vllm"
    v0100 = next(r for r in doc["records"] if r["version"] == "0.10.0")
    assert v0100["pins"]["aiter"] == {"repo": "ROCm/aiter", "ref": "916bf3c", "moving": False}
    for table in ("rocm", "gfx", "wheels", "images", "nodes", "os"):
        assert run_cli("matrix", "show", table).exit_code == 0
    assert run_cli("matrix", "show", "nope").exit_code == 2
    dot = run_cli("matrix", "graph", "--format", "dot")
    assert dot.exit_code == 0 and dot.stdout.startswith("digraph")
    graph = json.loads(run_cli("matrix", "graph", "--format", "json").stdout)
    assert graph["edges"] and graph["schema_version"] == 1
    valid = json.loads(run_cli("matrix", "validate", "--json").stdout)
    assert valid["schema_version"] == 1 and valid["overlay"]["active"] is False


def test_check_path_does_not_import_heavy_modules() -> None:
    code = (
        "import sys\n"
        "from resolver.cli import app\n"
        "try:\n    app(['check','--gfx','gfx942','--driver','30.30.3','--json'])\n"
        "except SystemExit:\n    pass\n"
        "heavy = [m for m in ('docker','requests','networkx','rich') if m in sys.modules]\n"
        "sys.stderr.write(','.join(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.stderr == "", f"check --json imported: {proc.stderr}"


def test_follow_up_commands_keep_the_flags_laid_over_an_example() -> None:
    code, data = check_json("--example", "mi300x-8", "--gpus", "2")
    assert code == 0 and data["node"]["overrides"] == {"--gpus": "2"}
    image_cmd = data["plan"]["commands"][1]
    assert (
        image_cmd.startswith("rocm-vllm image --example mi300x-8 --gpus 2 ")
        and "#" not in image_cmd
    )
    # Running the printed command decides for the same node: tensor parallel 2, not the example's 8.
    args = shlex.split(image_cmd)[1:]
    ran = run_cli(*args[: args.index("--digest")], "--json")
    assert "--tensor-parallel-size 2" in json.loads(ran.stdout)["run_command"]


def test_another_gfx_on_an_example_keeps_its_gpu_count() -> None:
    _, data = check_json("--example", "mi300x-8", "--gfx", "gfx908")
    assert data["node"]["logical_gpu_count"] == 8 and data["node"]["gfx_targets"] == ["gfx908"]
    assert "--gfx gfx908" in data["plan"]["commands"][0]


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({"gpus": [{"gfx": "gfx942"}], "gfx_targets": ["gfx950"]}, "disagree with the GPUs listed"),
        ({"gfx_targets": ["gfx942"], "logical_gpu_count": -5}, "'logical_gpu_count' is -5"),
    ],
)
def test_node_files_are_held_to_the_flags_rules(tmp_path: Path, node: dict, message: str) -> None:  # type: ignore[type-arg]
    path = tmp_path / "node.json"
    path.write_text(json.dumps(node))
    result = run_cli("check", "--node", str(path))
    assert result.exit_code == 2 and message in result.stderr


def test_absurd_gpu_count_is_refused_quickly() -> None:
    result = run_cli("check", "--gfx", "gfx942", "--gpus", "99999999999")
    assert result.exit_code == 2 and "more GPUs than one node holds" in result.stderr


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (
            ["check", "--gpus", "abc"],
            "error: Invalid value for '--gpus': 'abc' is not a valid int.",
        ),
        (["check", "--bogus"], "error: No such option: --bogus"),
        (["nope"], "error: No such command 'nope'."),
    ],
)
def test_usage_errors_from_the_console_script_are_one_line_plus_hint(
    args: list[str], first_line: str
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "resolver", *args], capture_output=True, text=True, check=False
    )
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 2, proc.stderr
    assert lines[0].startswith(first_line) and lines[1].startswith("hint: see `")


def test_console_script_help_and_exit_codes() -> None:
    def run(*args: str) -> int:
        return subprocess.run(
            [sys.executable, "-m", "resolver", *args], capture_output=True, check=False
        ).returncode

    assert run("check", "--help") == 0 and run() == 0
    assert run("check", "--gfx", "gfx942", "-q") == 0 and run("check", "--gfx", "gfx906", "-q") == 1


def test_gfx_as_rocminfo_prints_it_is_accepted() -> None:
    """issue 11, item 7: the error's hint says to copy the name from `rocminfo | grep gfx`."""
    code, data = check_json("--gfx", "gfx942:sramecc+:xnack-", "--driver", "30.30.3")
    assert code == 0
    assert data["node"]["gfx_targets"] == ["gfx942"]
    code, data = check_json("--gfx", "gfx90a:xnack-,gfx942:sramecc+:xnack-", "--driver", "30.30.3")
    assert data["node"]["gfx_targets"] == ["gfx90a", "gfx942"]


def test_json_errors_are_json() -> None:
    """Under --json a refusal is a JSON object on stdout (exit 2), the human lines on stderr."""
    result = run_cli("check", "--gfx", "nvidia", "--json")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["error"]["code"] == "bad-input"
    assert data["error"]["exit_code"] == 2
    assert data["error"]["hint"]
    assert result.stderr.startswith("error: ")


def _complete(words: str) -> list[str]:
    script = Path(sys.executable).parent / "rocm-vllm"
    env = {
        **os.environ,
        "_ROCM_VLLM_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - 1),
    }
    proc = subprocess.run([str(script)], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_shell_completion_completes_option_values() -> None:
    """issue 11, item 15: --gfx, --example and --format values complete."""
    assert "gfx942" in _complete("rocm-vllm check --gfx gfx94")
    assert _complete("rocm-vllm check --gfx gfx942,gfx95") == ["gfx942,gfx950"]
    assert "mi300x-8" in _complete("rocm-vllm image --example mi3")
    assert _complete("rocm-vllm image --format co") == ["compose"]
    assert _complete("rocm-vllm matrix graph --format d") == ["dot"]


def test_dash_h_is_help_everywhere() -> None:
    for args in (
        [],
        ["check"],
        ["probe"],
        ["image"],
        ["dockerfile"],
        ["matrix"],
        ["matrix", "show"],
        ["matrix", "refresh"],
    ):
        result = run_cli(*args, "-h")
        assert result.exit_code == 0 and "Usage:" in result.stdout, args


def test_matrix_refresh_help_is_wrapped_by_paragraph() -> None:
    from typer.testing import CliRunner

    from resolver.cli import app

    result = CliRunner().invoke(
        app,
        ["matrix", "refresh", "--help"],
        env={"COLUMNS": "80", "NO_COLOR": "1"},
        terminal_width=80,
    )
    lines = [ln.strip(" │") for ln in result.stdout.splitlines()]
    # A line break inside a sentence left single words alone on a line ("With", "installed").
    assert not [ln for ln in lines if ln in ("With", "installed", "ROCM_VLLM_GITHUB_API,")]
    assert any(ln.startswith("With --write the changes go to the overlay") for ln in lines)


def test_dockerfile_json_has_schema_version() -> None:
    result = run_cli(
        "dockerfile", "--gfx", "gfx942", "--driver", "30.30.3", "--vllm", "0.10.0", "--json"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["schema_version"] == 1


# --- the CI contract (issue 19) -----------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--gpus", "abc", "--json"],
        ["check", "--bogus-flag", "--json"],
        ["check", "--gfx", "gfx942", "--port", "٨٠", "--json"],
        ["check", "--vllm", "1", "--vllm", "2", "--json"],
    ],
)
def test_usage_errors_under_json_are_one_json_object(argv: list[str]) -> None:
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "resolver", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 2
    error = json.loads(run.stdout)["error"]
    assert error["exit_code"] == 2 and error["code"] == "usage" and error["message"]
    assert run.stderr.startswith("error: ")


def test_node_from_stdin() -> None:
    import subprocess
    import sys

    from resolver.probe import probe_files
    from tests.probe_data import probe_matrix

    fixture = (
        Path(__file__).parent / "probe" / "fixtures" / "rocminfo-gfx942-mi300x-4gpu-thamada.txt"
    )
    report = json.dumps(probe_files(rocminfo=fixture, matrix=probe_matrix()).to_json())
    run = subprocess.run(
        [sys.executable, "-m", "resolver", "check", "--node", "-", "--driver", "30.30.3", "--json"],
        input=report,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["node"]["logical_gpu_count"] == 4 and data["node"]["origin"] == "stdin"


def test_printed_commands_quote_what_zsh_would_expand() -> None:
    """`--vllm ==0.33.0` fails in zsh (`=0.33.0 not found`): a word starting with "=" is quoted;
    bash reads the quoted words back unchanged."""
    import subprocess

    from resolver.util import shell

    words = ["rocm-vllm", "image", "--vllm", "==0.33.0", "--gfx", "gfx942", "gpu[001-004]"]
    line = shell.join(words)
    assert "'==0.33.0'" in line and "'gpu[001-004]'" in line
    echoed = subprocess.run(
        ["bash", "-c", f"printf '%s\\n' {line}"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert echoed == words
    o = run_cli("check", "--gfx", "gfx942", "--gpus", "8", "--driver", "30.30.3")
    assert "--vllm '==" in o.stdout and " --vllm ==" not in o.stdout


def test_a_plan_says_which_driver_it_needs() -> None:
    """issue 19: with no driver known the plan silently assumed the most demanding stack; now
    the plan says, as structure, which amdgpu series run it and that the node's was not checked."""
    unknown = json.loads(run_cli("check", "--gfx", "gfx942", "--json").stdout)["plan"]["driver"]
    assert unknown["checked"] is False and unknown["series"]
    assert unknown["rocm"] == unknown["rocm"].strip() and "." in unknown["rocm"]
    known = run_cli("check", "--gfx", "gfx942", "--driver", "30.30.3", "--json").stdout
    driver = json.loads(known)["plan"]["driver"]
    assert driver["checked"] is True and "30.30" in driver["series"]


@pytest.mark.parametrize(
    "args",
    [
        ["--gfx", "gfx942", "--driver", "6.1.3", "--vllm", ">=0.20"],
        ["--gfx", "gfx950", "--gpus", "8", "--driver", "6.2.4"],
        ["--gfx", "gfx942", "--driver", "6.1.3", "--os", "ubuntu-20.04", "--vllm", ">=0.20"],
    ],
)
def test_one_output_names_one_driver_fix(args: list[str]) -> None:
    """issue 19/21: the short form offered "30.10.x" in one line and "6.4.x" in another."""
    import re

    from .conftest import LIVE_MATRIX

    text = run_cli("check", *args, env={"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}).stdout
    moves = set(re.findall(r"amdgpu driver (?:to )?([0-9]+\.[0-9]+)\.x", text))
    moves |= set(re.findall(r"upgrade the host's amdgpu driver to ([0-9]+\.[0-9]+)\.x", text))
    assert len(moves) == 1, (moves, text)


def test_a_source_plan_says_once_what_it_builds_for() -> None:
    """Issue 19: a gfx1030 (or gfx1153) source plan said "built for gfx90a, gfx942, ..." (the
    stack's list) and then "# built for gfx1030 only". The plan says what the Dockerfile builds,
    and names the stack's list as what upstream ships."""
    result = run_cli("check", "--gfx", "gfx1030", "--driver", "30.30.3", "--vllm", "==0.24.0")
    said = " ".join(result.stdout.split())
    assert "builds for gfx1030 only (this node's targets; the stack ships gfx90a," in said
    assert "built for gfx90a" not in said
    as_json = run_cli(
        "check", "--gfx", "gfx1030", "--driver", "30.30.3", "--vllm", "==0.24.0", "--json"
    )
    plan = json.loads(as_json.stdout)["plan"]
    assert plan["built_for"] == ["gfx1030"] and "gfx942" in plan["arch"]


def test_the_driver_hint_gives_the_flag_once_with_a_release_from_the_data() -> None:
    """Issue 21: the hint's command was `... --driver 5.0.1 --driver 30.30.3` (a version written
    in explain/hints.py). It names --driver once, with the series AMD shipped with the plan's
    ROCm (drivers.toml paired_rocm)."""
    result = run_cli("check", "--gfx", "gfx942", "--gpus", "8", "--vllm", "==0.24.0", "--explain")
    commands = [
        line.strip().removeprefix("$ ")
        for line in result.stdout.splitlines()
        if line.strip().startswith("$ rocm-vllm check") and "--driver" in line
    ]
    assert commands, result.stdout
    for command in commands:
        words = shlex.split(command)
        assert words.count("--driver") == 1, command
        assert words[words.index("--driver") + 1] == "30.30"  # paired with ROCm 7.2.0


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(max_size=20), st.text(alphabet="ab=-'\" $@%+:,./_\u00e9\n", max_size=12)))
def test_a_word_is_quoted_as_shlex_quotes_it(word: str) -> None:
    """``util.shell``'s own POSIX quoting (no shlex import at a check) is ``shlex.quote``'s on any
    text; then the zsh rule: a bare word starting with "=" is quoted."""
    from resolver.util import shell

    expected = shlex.quote(word)
    if expected == word and word.startswith("="):
        expected = f"'{word}'"
    assert shell.quote(word) == expected
