"""The published JSON Schemas (docs/*.schema.json, shipped in the wheel) hold for real outputs:
check, image, dockerfile and probe --json over nodes of every kind, and the error object every
command prints under --json (issue 19: a CI pipeline reads these, so they are a contract)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from resolver.cli import matrix_cmd

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
    """Every published schema, audit's included (issue 34: it was not in the wheel)."""
    text = (DOCS.parent / "pyproject.toml").read_text()
    names = sorted(p.name.removesuffix(".schema.json") for p in DOCS.glob("*.schema.json"))
    assert {"audit", "matrix-show", "matrix-graph", "fleet-gather"} <= set(names)
    for name in names:
        _schema(name)
        assert f'"docs/{name}.schema.json" = "resolver/_data/schemas/{name}.schema.json"' in text


# --- issue 34: every --json output validates against a shipped schema, on real outputs ---------

TABLES = list(matrix_cmd.TABLES)  # the tables `matrix show` offers, from the command itself


def _validated(
    name: str, *argv: str, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    out = run_cli(*argv, "--json", env=env)
    data = json.loads(out.stdout)
    jsonschema.validate(data, _schema(name))
    if "error" in data:
        assert data["error"]["exit_code"] == out.exit_code
    elif "exit_code" in data:
        assert data["exit_code"] == out.exit_code
    return out.exit_code, data


@pytest.mark.parametrize("live", [False, True], ids=["frozen", "live"])
@pytest.mark.parametrize("table", TABLES)
def test_matrix_show_matches_its_schema(table: str, live: bool) -> None:
    from .conftest import LIVE_MATRIX

    env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)} if live else None
    for extra in ([], ["--origin"]):
        code, data = _validated("matrix-show", "matrix", "show", table, *extra, env=env)
        assert code == 0 and data["table"] == table and data["records"]
        assert all(("origin" in r) == bool(extra) for r in data["records"])
    code, data = _validated("matrix-show", "matrix", "show", "nope")
    assert code == 2 and data["error"]["code"]


def test_matrix_graph_outputs_match_their_schema() -> None:
    from .conftest import LIVE_MATRIX

    env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    code, whole = _validated("matrix-graph", "matrix", "graph", env=env)
    assert code == 0 and whole["nodes"] and whole["edges"]
    code, cut = _validated(
        "matrix-graph", "matrix", "graph", "--gfx", "gfx942", "--vllm", ">=0.30", env=env
    )
    assert code == 0 and len(cut["nodes"]) < len(whole["nodes"])
    code, related = _validated(
        "matrix-graph", "matrix", "graph", "--path", "driver:6.4", "vllm:0.33.0", env=env
    )
    assert code == 0 and related["paths"]
    # Issue 35: unrelated records are an answer (exit 1, no paths), not an internal error.
    code, unrelated = _validated(
        "matrix-graph", "matrix", "graph", "--path", "gfx:gfx906", "vllm:0.33.0", env=env
    )
    assert code == 1 and unrelated["paths"] == []
    code, bad = _validated(
        "matrix-graph", "matrix", "graph", "--path", "nope:1", "vllm:0.33.0", env=env
    )
    assert code == 2 and "error" in bad


def test_matrix_validate_matches_its_schema(tmp_path: Path) -> None:
    import shutil

    from .conftest import LIVE_MATRIX

    code, data = _validated("matrix-validate", "matrix", "validate")
    assert code == 0 and data["valid"] is True and data["overlay"]["active"] is False
    broken = tmp_path / "matrix"
    shutil.copytree(LIVE_MATRIX, broken)
    (broken / "os.toml").write_text("[[os]]\nid = 1\n")
    code, data = _validated(
        "matrix-validate", "matrix", "validate", env={"ROCM_VLLM_MATRIX_DIR": str(broken)}
    )
    assert code == 3 and "error" in data


def test_matrix_refresh_matches_its_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refresh against the recorded upstream (tests/refresh/server.py) that finds a release
    the data lacks."""
    import shutil

    from .conftest import LIVE_MATRIX
    from .refresh.conftest import drop_records
    from .refresh.server import serve

    data_copy = tmp_path / "matrix"
    shutil.copytree(LIVE_MATRIX, data_copy)
    drop_records(data_copy / "vllm.toml", "version", {"0.8.3"})
    monkeypatch.setenv("ROCM_VLLM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ROCM_VLLM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ROCM_VLLM_MATRIX_DIR", str(data_copy))
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    with serve() as up:
        env = {
            "ROCM_VLLM_GITHUB_API": up.base,
            "ROCM_VLLM_GITHUB_RAW": up.base + "/raw",
            "ROCM_VLLM_WHEELS": up.base + "/wheels",
            "ROCM_VLLM_REGISTRY": up.base,
            "ROCM_VLLM_INDEX_URL": up.base + "/simple",
        }
        code, data = _validated("matrix-refresh", "matrix", "refresh", "--source", "vllm", env=env)
    assert code == 1 and data["changed"] is True
    assert [c["key"] for c in data["changes"]] == ["0.8.3"]


def test_image_digest_source_matches_its_schema(tmp_path: Path) -> None:
    """Issue 34: `image --digest --json` failed its own schema (digest_source). The cache stands
    in for an unreachable registry, so every field of digest_source is set."""
    from resolver.artifacts.registry import DigestCache
    from tests.services import free_port

    url = f"http://127.0.0.1:{free_port()}"
    cache = DigestCache(tmp_path / "cache" / "digests.json")
    cache.put(f"{url}/vllm/vllm-openai-rocm:v0.24.0", "sha256:" + "f" * 64, None)
    env = {"ROCM_VLLM_CACHE_DIR": str(tmp_path / "cache")}
    node = ["--example", "mi300x-8", "--driver", "30.30.3"]
    code, data = _validated("image", "image", *node, "--registry", url, "--digest", env=env)
    assert code == 0 and data["digest_source"]["cached"] is True


def test_audit_outputs_match_their_schema() -> None:
    """Issue 34: the audit error object failed audit.schema.json."""
    from .audit.test_bundle import REAL

    code, data = _validated("audit", "audit", str(REAL), "--gfx", "gfx1151")
    assert code == 0 and data["targets"]
    code, data = _validated("audit", "audit", "/nonexistent")
    assert code == 2 and data["error"]["code"] == "bad-input"


def test_fleet_gather_error_matches_its_schema(tmp_path: Path) -> None:
    """Without Slurm's tools: the error object (exit 4)."""
    import os

    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "resolver",
            "fleet",
            "gather",
            "--slurm",
            "gpu",
            "-o",
            str(tmp_path / "out"),
            "--json",
        ],
        env={**os.environ, "PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 4
    jsonschema.validate(json.loads(run.stdout), _schema("fleet-gather"))


@pytest.mark.slurm
def test_fleet_gather_matches_its_schema(slurm_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Through a real Slurm (tests/services.py): one node's probe answers garbage, so the list
    has a failed node beside those that answered."""
    from .conftest import FROZEN_MATRIX
    from .test_fleet_slurm import _probe_script

    probe = _probe_script(tmp_path, broken="n2")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "resolver",
            "fleet",
            "gather",
            "--slurm",
            "n[1-3]",
            "--probe-command",
            str(probe),
            "-o",
            str(tmp_path / "out"),
            "--json",
        ],
        env={**slurm_cluster.env, "ROCM_VLLM_MATRIX_DIR": str(FROZEN_MATRIX)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    data = json.loads(run.stdout)
    jsonschema.validate(data, _schema("fleet-gather"))
    assert run.returncode == 1
    assert {n["name"]: n["status"] for n in data["nodes"]} == {
        "n1": "ok",
        "n2": "failed",
        "n3": "ok",
    }
