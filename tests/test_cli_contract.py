"""docs/cli.md is the CLI's contract (issue 36, item 5): checked against the typer application.

The reference section is generated from the app (scripts/gen-cli-docs) and must be current; it is
also read back here as tables, so a command or option the app has and the page lacks, or the
reverse, fails by name. The hand-written synopses may name only options their command has; every
`matrix show` table, refresh source and `--json` schema is listed. Output formats: `--format` and
its alias flags give the same output, and two that disagree are a usage error (exit 2). Every
assert is on structure (exit codes, JSON fields, option names), never on the tool's prose.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.main import get_command

from resolver.cli import make_app
from resolver.cli.matrix_cmd import TABLES
from resolver.refresh.runner import SOURCES

from .helpers import REPO, run_cli, run_process

DOC = REPO / "docs" / "cli.md"
HELP = frozenset({"--help", "-h"})
# Flags of other tools that the prose quotes inside their own commands (docker, podman,
# apptainer); never inside a `rocm-vllm ...` span, which the synopsis test reads.
FOREIGN = frozenset({"--device", "--nv"})
# A working node for each command that has --format (the test below fails when a new one is
# added without an entry): flags, and the exit code every format gives for it.
FORMAT_CASES: dict[tuple[str, ...], tuple[list[str], int]] = {
    ("check",): (["--gfx", "gfx942", "--gpus", "8", "--driver", "30.30.3"], 0),
    ("upgrade",): (["--gfx", "gfx942", "--gpus", "8", "--driver", "30.30.3"], 0),
    ("matrix", "graph"): (["--gfx", "gfx942"], 0),
}


def _generator() -> ModuleType:
    """scripts/gen-cli-docs as a module (a script without a .py suffix)."""
    path = REPO / "scripts" / "gen-cli-docs"
    spec = spec_from_loader("gen_cli_docs", SourceFileLoader("gen_cli_docs", str(path)))
    assert spec is not None and spec.loader is not None
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, group
    for name, sub in getattr(group, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def _names(param: Any) -> set[str]:
    if param.param_type_name == "argument":
        return {str(param.name).upper()}
    return {*param.opts, *param.secondary_opts} - HELP


@pytest.fixture(scope="module")
def tree() -> dict[tuple[str, ...], Any]:
    """Every command and group of the whole application, by its words after `rocm-vllm`."""
    return dict(_commands(get_command(make_app())))


@pytest.fixture(scope="module")
def app_options(tree: dict[tuple[str, ...], Any]) -> dict[tuple[str, ...], set[str]]:
    return {path: set().union(*(_names(p) for p in cmd.params)) for path, cmd in tree.items()}


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text()


def _split(doc: str) -> tuple[str, str]:
    """The hand-written prose and the generated reference."""
    gen = _generator()
    prose, _, rest = doc.partition(gen.BEGIN)
    reference, _, after = rest.partition(gen.END)
    assert reference and not after.strip(), "the generated section ends the page"
    return prose, reference


def _reference_tables(reference: str) -> dict[tuple[str, ...], set[str]]:
    """The reference read back: each `### \\`rocm-vllm WORDS\\`` heading and the names in the
    first column of its table."""
    found: dict[tuple[str, ...], set[str]] = {}
    current: set[str] | None = None
    for line in reference.splitlines():
        heading = re.fullmatch(r"### `rocm-vllm((?: [a-z-]+)*)`", line)
        if heading:
            current = found.setdefault(tuple(heading.group(1).split()), set())
        elif line.startswith("### "):
            current = None
        elif current is not None and line.startswith("| `"):
            first = line.split(" | ")[0].removeprefix("| ")
            current.update(re.findall(r"`([^`]+)`", first))
    return found


def test_reference_is_what_the_generator_writes(doc: str) -> None:
    assert _generator().rewritten(doc) == doc, "docs/cli.md is stale: run scripts/gen-cli-docs"


def test_reference_lists_every_command_and_option_and_nothing_else(
    doc: str, app_options: dict[tuple[str, ...], set[str]]
) -> None:
    listed = _reference_tables(_split(doc)[1])
    assert set(listed) == set(app_options)
    for path, names in app_options.items():
        assert listed[path] == names, path


def test_synopses_name_only_options_their_command_has(
    doc: str, app_options: dict[tuple[str, ...], set[str]]
) -> None:
    """Every `rocm-vllm WORDS ...` code span of the prose: each flag in it is an option of that
    command (the node options included, as the app declares them)."""
    prose = _split(doc)[0]
    spans = 0
    for span in re.findall(r"`(rocm-vllm [^`]*)`", prose):
        for part in re.split(r"(?<!\\)\| ", span):  # a shell pipe; `\|` is an alternative
            words = part.strip().split()
            if not words or words[0] != "rocm-vllm":
                continue
            path: tuple[str, ...] = ()
            while len(path) + 1 < len(words) and (*path, words[len(path) + 1]) in app_options:
                path = (*path, words[len(path) + 1])
            flags = {f.split("=")[0] for f in re.findall(r"(?<![\w-])--?[a-z][\w-]*", part)}
            assert flags <= app_options[path] | HELP, (path, flags - app_options[path])
            spans += 1
    assert spans >= 10  # the parser still finds the synopses


def test_prose_names_no_option_the_cli_lacks(
    doc: str, app_options: dict[tuple[str, ...], set[str]]
) -> None:
    every = set().union(*app_options.values()) | HELP | FOREIGN
    flags = {f.split("=")[0] for f in re.findall(r"(?<![\w-])--?[a-z][\w-]*", _split(doc)[0])}
    assert flags - every == set()


def test_every_matrix_table_and_refresh_source_is_listed(doc: str) -> None:
    reference = _split(doc)[1]
    tables = re.search(r"### `rocm-vllm matrix show` tables\n\n(.*)\n", reference)
    sources = re.search(r"### `rocm-vllm matrix refresh` sources\n\n(.*)\n", reference)
    assert tables and sources
    assert re.findall(r"`([a-z]+)`", tables.group(1)) == list(TABLES)
    assert re.findall(r"`([a-z]+)`", sources.group(1).partition(" (")[0]) == list(SOURCES)


def test_every_json_command_names_its_schema(
    doc: str, app_options: dict[tuple[str, ...], set[str]]
) -> None:
    reference = _split(doc)[1]
    heading = r"### `rocm-vllm((?: [a-z-]+)*)`\n(.*?)(?=\n### |\Z)"
    sections = {
        tuple(m.group(1).split()): m.group(2) for m in re.finditer(heading, reference, re.DOTALL)
    }
    named: set[str] = set()
    for path, options in app_options.items():
        if "--json" not in options:
            continue
        links = re.findall(r"\]\(([\w-]+\.schema\.json)\)", sections[path])
        assert links, path
        for link in links:
            assert (DOC.parent / link).is_file(), link
        named.update(links)
    published = {p.name for p in DOC.parent.glob("*.schema.json")} - {"matrix.schema.json"}
    assert named == published  # the data files' schema is the matrix's, not a command's


def _format_commands(tree: dict[tuple[str, ...], Any]) -> dict[tuple[str, ...], list[str]]:
    """The commands whose `--format` names an output (the `output_format` parameter that
    `_common.pick_format` reads), and its values (the members of its Enum)."""
    found: dict[tuple[str, ...], list[str]] = {}
    for path, cmd in tree.items():
        for param in cmd.params:
            if param.name == "output_format":
                found[path] = [str(getattr(c, "value", c)) for c in param.type.choices]
    return found


def test_every_output_format_runs_and_each_alias_is_its_format(
    tree: dict[tuple[str, ...], Any],
) -> None:
    formats = _format_commands(tree)
    assert set(formats) == set(FORMAT_CASES)
    for path, values in formats.items():
        flags, code = FORMAT_CASES[path]
        aliases = {str(o) for p in tree[path].params for o in p.opts}
        for value in values:
            out = run_cli(*path, *flags, "--format", value)
            assert out.exit_code == code, (path, value, out.stderr)
            assert out.stdout, (path, value)
            if value == "json":
                assert json.loads(out.stdout)["schema_version"] == 1
            if f"--{value}" in aliases:
                alias = run_cli(*path, *flags, f"--{value}")
                assert (alias.exit_code, alias.stdout) == (out.exit_code, out.stdout), value
                # Saying the same format twice is no conflict.
                both = run_cli(*path, *flags, f"--{value}", "--format", value)
                assert (both.exit_code, both.stdout) == (out.exit_code, out.stdout), value


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--json", "--quiet"],
        ["check", "--format", "text", "--json"],
        ["check", "--explain", "--verbose"],
        ["check", "-q", "-e"],
        ["upgrade", "--format", "text", "--json"],
        ["matrix", "graph", "--format", "dot", "--json"],
    ],
)
def test_two_formats_that_disagree_are_a_usage_error(argv: list[str]) -> None:
    path = argv[:2] if argv[0] == "matrix" else argv[:1]
    flags = FORMAT_CASES[tuple(path)][0]
    out = run_cli(*argv, *flags)
    assert out.exit_code == 2
    if "--json" in argv:  # --json promises JSON on stdout, errors included
        assert json.loads(out.stdout)["error"]["code"] == "usage"
    else:
        assert out.stdout == ""


def test_format_json_errors_are_json_objects_too() -> None:
    """An error inside the command (`--vendor` it does not know) and one the parser finds
    (`--gpus abc`, through the console script) are the JSON error object under --format json."""
    inside = run_cli("check", "--gfx", "gfx942", "--vendor", "acme", "--format", "json")
    assert inside.exit_code == 2
    assert json.loads(inside.stdout)["error"]["code"] == "usage"
    parser = run_process("check", "--gfx", "gfx942", "--gpus", "abc", "--format", "json")
    assert parser.returncode == 2
    assert json.loads(parser.stdout)["error"]["exit_code"] == 2
    bad_value = run_process("check", "--gfx", "gfx942", "--format", "yaml")
    assert bad_value.returncode == 2 and bad_value.stdout == ""


def test_a_second_node_points_to_the_fleet_command(tmp_path: Path) -> None:
    """One command decides for one node; the hint names `rocm-vllm fleet plan`, a command the
    app has (docs/fleet.md), as the way to decide for many."""
    out = run_cli("check", "--example", "mi300x-8", "--example", "strix-halo", "--format", "json")
    assert out.exit_code == 2
    hint = json.loads(out.stdout)["error"]["hint"]
    named = _named_commands(hint)
    assert ("fleet", "plan") in named
    tree = dict(_commands(get_command(make_app())))
    assert all(path in tree for path in named)


def _named_commands(text: str) -> set[tuple[str, ...]]:
    """The `rocm-vllm WORDS` commands a text names (the words up to the first option/file)."""
    found: set[tuple[str, ...]] = set()
    for tail in text.split("rocm-vllm ")[1:]:
        words = shlex.split(tail.split(";")[0].split(")")[0], posix=True)
        found.add(tuple(w for w in words[:2] if re.fullmatch(r"[a-z]+", w)))
    return found
