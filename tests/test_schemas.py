"""The published JSON Schemas (docs/*.schema.json, shipped in the wheel) hold for real outputs:
check, image, dockerfile and probe --json over nodes of every kind, and the error object every
command prints under --json (issue 19: a CI pipeline reads these, so they are a contract)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from .helpers import run_cli

DOCS = Path(__file__).resolve().parents[1] / "docs"
FIXTURE = Path(__file__).parent / "probe" / "fixtures" / "rocminfo-gfx942-mi300x-4gpu-thamada.txt"
NODES = [
    ["--example", "mi300x-8"],
    ["--example", "strix-halo"],
    ["--gfx", "gfx942", "--driver", "6.1.3", "--vllm", ">=0.20"],
    ["--gfx", "gfx942", "--driver", "99.1"],
    ["--gfx", "gfx950", "--gpus", "8", "--driver", "6.2.4"],
    ["--gfx", "gfx1031", "--driver", "30.30.3"],
    ["--gfx", "gfx906", "--driver", "6.4.1"],
    ["--gfx", "gfx1234"],
    ["--gfx", "gfx942", "--vllm", "==9.9.9", "--driver", "30.30.3"],
    ["--gfx", "gfx942", "--quantization", "fp8", "--driver", "30.30.3"],
]


def _schema(name: str) -> dict[str, object]:
    doc: dict[str, object] = json.loads((DOCS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(doc)
    return doc


@pytest.mark.parametrize("command", ["check", "image", "dockerfile", "upgrade"])
@pytest.mark.parametrize("node", NODES, ids=lambda n: " ".join(n))
def test_outputs_match_their_schema(command: str, node: list[str]) -> None:
    if command != "check" and "--quantization" in node:
        node = node[:2] + node[4:]
    out = run_cli(command, *node, "--json")
    assert out.stdout.strip(), out.stderr
    data = json.loads(out.stdout)
    jsonschema.validate(data, _schema(command))
    if "error" not in data and "exit_code" in data:
        assert data["exit_code"] == out.exit_code


def test_probe_output_matches_its_schema() -> None:
    out = run_cli("probe", "--rocminfo", str(FIXTURE), "--json")
    data = json.loads(out.stdout)
    assert data["schema_version"] == 1
    jsonschema.validate(data, _schema("probe"))


@pytest.mark.parametrize(
    "argv", [["check", "--gpus", "abc"], ["image", "--nope"], ["upgrade", "--gpus", "x"]]
)
def test_usage_errors_match_the_error_branch(argv: list[str]) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "resolver", *argv, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    jsonschema.validate(json.loads(run.stdout), _schema(argv[0]))


def test_the_schemas_ship_in_the_wheel() -> None:
    text = (DOCS.parent / "pyproject.toml").read_text()
    for name in ("check", "image", "dockerfile", "probe", "fleet", "matrix", "upgrade"):
        assert f'"docs/{name}.schema.json" = "resolver/_data/schemas/{name}.schema.json"' in text
