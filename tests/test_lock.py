"""artifacts.lock: the pinned stack as a CycloneDX 1.5 bill of materials, valid against the
CycloneDX schema (cyclonedx-python-lib's strict validator), the same file for the same plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from resolver.artifacts import dockerfile as df
from resolver.artifacts import lock
from resolver.cli import app
from resolver.data import matrix
from resolver.data.node import from_flags

from .conftest import LIVE_MATRIX

runner = CliRunner()


def _valid(bom: dict[str, Any]) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    error = JsonStrictValidator(SchemaVersion.V1_5).validate_str(json.dumps(bom))
    assert error is None, str(error).splitlines()[0]


def _plan(version: str, driver: str = "30.30.3", **kw: Any) -> df.DockerfilePlan:
    m = matrix.load_dir(LIVE_MATRIX)
    node = from_flags(gfx="gfx942", gpus=None, driver=driver, os=None, rocm=None, python=None)
    return df.plan_dockerfile(m, node, df.choose(m, node, vllm=version), **kw)


def test_a_dockerfiles_lock_names_every_component_exactly() -> None:
    plan = _plan("0.33.0")
    bom = lock.dockerfile_bom(plan)
    _valid(bom)
    by_ref = {c["bom-ref"]: c for c in bom["components"]}
    vllm = by_ref["vllm"]
    assert plan.vllm_sdist is not None
    assert vllm["hashes"] == [{"alg": "SHA-256", "content": plan.vllm_sdist[1]}]
    assert vllm["purl"] == "pkg:pypi/vllm@0.33.0"
    for pin in plan.pins:
        c = by_ref[f"pin:{pin.component}"]
        assert (c["version"], c["externalReferences"][0]["url"]) == (
            pin.ref,
            f"https://github.com/{pin.repo}",
        )
        kind = {p["name"]: p["value"] for p in c["properties"]}["rocm-vllm:ref-kind"]
        assert kind == ("tag" if pin.ref.startswith("v") else "commit")
    assert by_ref["base-image"]["name"] == plan.base_image.partition(":")[0]
    assert plan.torch is not None and by_ref["torch"]["version"] == plan.torch
    root = {p["name"]: p["value"] for p in bom["metadata"]["component"]["properties"]}
    assert root["rocm-vllm:gfx"] == "gfx942" and root["rocm-vllm:rocm-stream"] == "therock"
    # The same plan gives the same file (no time, a serial number derived from the content).
    assert lock.dumps(lock.dockerfile_bom(plan)) == lock.dumps(bom)


def test_a_pinned_base_image_is_locked_by_digest() -> None:
    from dataclasses import replace

    digest = "sha256:" + "ab" * 32
    plan = replace(_plan("0.10.0"), base_digest=digest)
    bom = lock.dockerfile_bom(plan)
    _valid(bom)
    base = next(c for c in bom["components"] if c["bom-ref"] == "base-image")
    assert base["hashes"] == [{"alg": "SHA-256", "content": "ab" * 32}]
    assert base["purl"].startswith("pkg:docker/rocm/dev-ubuntu-22.04@sha256%3Aabab")
    fork = lock.dockerfile_bom(_plan("0.10.0", vllm_repo="me/vllm", vllm_ref="my-branch"))
    _valid(fork)
    vllm = next(c for c in fork["components"] if c["bom-ref"] == "vllm")
    assert "hashes" not in vllm and vllm["externalReferences"][0]["url"].endswith("me/vllm")


def test_cli_writes_the_lock_beside_the_file(tmp_path: Path) -> None:
    out = tmp_path / "bom.json"
    result = runner.invoke(
        app,
        [
            "dockerfile",
            "--gfx",
            "gfx942",
            "--driver",
            "30.30.3",
            "--vllm",
            "0.24.0",
            "--lock",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.stderr
    bom = json.loads(out.read_text())
    _valid(bom)
    assert bom["metadata"]["component"]["version"] == "0.24.0"
    image = tmp_path / "image-bom.json"
    shown = runner.invoke(
        app, ["image", "--gfx", "gfx942", "--driver", "30.30.3", "--lock", str(image), "--json"]
    )
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["lock"] == str(image)
    ibom = json.loads(image.read_text())
    _valid(ibom)
    assert ibom["metadata"]["component"]["type"] == "container"


@pytest.mark.parametrize(
    ("version", "driver"), [("0.6.6.post1", "6.4.3"), ("0.8.5", "6.4.3"), ("0.16.0", "30.30.3")]
)
def test_every_era_locks_validly(version: str, driver: str) -> None:
    _valid(lock.dockerfile_bom(_plan(version, driver)))
