"""vLLM source against the recorded upstream: reproduces matrix/vllm.toml, finds new releases."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version
from typer.testing import CliRunner

from resolver.cli import app
from resolver.data import matrix, overlay
from resolver.data.model import VllmRelease
from resolver.refresh.runner import refresh
from resolver.refresh.vllm import STACK_FIELDS

from .conftest import REPO_MATRIX, drop_records
from .server import Upstream

COVERED = ["v0.6.2", "v0.7.0", "v0.8.2", "v0.8.3", "v0.10.0"]  # tags with recorded Dockerfiles
# Fields the refresh reads at a tag; each must equal matrix/vllm.toml for the covered tags.
FIELDS = ("version", "tag_commit", "cmake_arch", *VllmRelease.flat_stack_fields)
runner = CliRunner()


def flatten(record: dict[str, Any]) -> dict[str, Any]:
    """The default stack's build facts laid onto the release (the pre-stack shape), for
    comparing."""
    stacks = record.get("stack") or []
    default = next((s for s in stacks if s.get("default")), stacks[0] if stacks else {})
    out = {k: v for k, v in record.items() if k != "stack"}
    out.update({k: default[k] for k in STACK_FIELDS if k in default})
    return out


def curated() -> dict[str, dict[str, Any]]:
    doc = tomllib.loads((REPO_MATRIX / "vllm.toml").read_text())
    return {str(Version(r["version"])): flatten(r) for r in doc["release"]}


def test_refresh_reproduces_the_pins_in_the_matrix_field_by_field(upstream: Upstream) -> None:
    outcome = refresh(["vllm"], tags=COVERED)
    by_key = {c.key: c.record for c in outcome.changes}
    data = curated()
    # Every covered tag reproduces the curated record exactly: nothing to change, except where the
    # data now cites the release's sdist (same files, another source string).
    assert {k for k, r in by_key.items() if not data[k].get("sdist_sha256")} == set()
    assert not outcome.refused
    # Re-read each covered tag on its own and compare every field with the curated record.
    from resolver.refresh.common import Endpoints, SourceResult
    from resolver.refresh.http import HttpClient
    from resolver.refresh.vllm import VllmSource

    src = VllmSource(HttpClient(), Endpoints.from_env(), overlay.current_raw())
    shas = dict(src.list_tags(SourceResult("vllm")))
    for tag in COVERED:
        version = Version(tag[1:])
        cand = src.read_tag(tag, shas[tag], version, SourceResult("vllm"))
        assert cand is not None, tag
        cand = type(cand)(cand.file, cand.key, flatten(cand.record))
        want = data[str(version)]
        for name in FIELDS:
            got_v, want_v = cand.record.get(name), want.get(name)
            if name in ("arch", "aiter_arch", "cmake_arch"):
                assert sorted(got_v or []) == sorted(want_v or []), (tag, name)
            elif name == "pins":
                for comp in set(got_v or {}) | set(want_v or {}):
                    for part in ("repo", "ref"):
                        g = (got_v or {}).get(comp, {}).get(part)
                        w = (want_v or {}).get(comp, {}).get(part)
                        assert g == w, (tag, comp, part)
            else:
                assert got_v == want_v, (tag, name)
        assert cand.record["confidence"] == "exact"
        assert cand.record["source"].startswith(f"vllm-project/vllm@{tag} ({shas[tag][:10]}): http")


def test_new_release_is_shown_as_a_diff_then_written_to_the_overlay(
    upstream: Upstream, matrix_copy: Path, isolated: Path
) -> None:
    drop_records(matrix_copy / "vllm.toml", "version", {"0.10.0"})
    assert matrix.load().vllm[-1].version != Version("0.10.0") or True
    assert not any(v.version == Version("0.10.0") for v in matrix.load().vllm)
    before = (matrix_copy / "vllm.toml").read_bytes()

    shown = runner.invoke(app, ["matrix", "refresh", "--source", "vllm"])
    assert shown.exit_code == 1, shown.output
    assert "+ 0.10.0  new (exact)" in shown.output
    assert "pins: triton triton-lang/triton@e5be006" in shown.output
    assert not overlay.overlay_path().exists()  # a diff writes nothing

    written = runner.invoke(app, ["matrix", "refresh", "--source", "vllm", "--write"])
    assert written.exit_code == 0, written.output
    assert overlay.overlay_path() == isolated / "data" / "overlay.json"
    assert (matrix_copy / "vllm.toml").read_bytes() == before  # never into the shipped data

    release = next(v for v in matrix.load().vllm if v.version == Version("0.10.0"))
    assert release.rocm == Version("6.3.1")
    assert release.provenance.confidence == "exact"
    assert release.pin("aiter") is not None
    assert release.pin("aiter").ref == "916bf3c"
    assert release.arch == ("gfx90a", "gfx942", "gfx1100", "gfx1101", "gfx1200", "gfx1201")
    origin = overlay.origins()[("vllm.toml", "0.10.0")]
    assert origin.source_url.startswith("vllm-project/vllm@v0.10.0 (6d8d0a24c0): ")
    assert (
        "/raw/vllm-project/vllm/6d8d0a24c02bfd84d46b3016b865a44f048ae84b/docker/Dockerfile.rocm_base"
        in origin.source_url
    )
    assert origin.read_at

    # Every other command now sees the refreshed release.
    checked = runner.invoke(
        app,
        [
            "check",
            "--gfx",
            "gfx942",
            "--driver",
            "30.30.3",
            "--vllm",
            "==0.10.0",
            "--prefer",
            "source",
            "--json",
        ],
    )
    assert checked.exit_code == 0, checked.output
    plan = json.loads(checked.stdout)["plan"]
    assert (plan["kind"], plan["vllm"], plan["confidence"]) == ("source", "0.10.0", "exact")
    built = runner.invoke(
        app, ["dockerfile", "--gfx", "gfx942", "--driver", "30.30.3", "--vllm", "0.10.0"]
    )
    assert built.exit_code == 0, built.output
    assert "ARG AITER_BRANCH=916bf3c" in built.stdout
    shown_origin = runner.invoke(
        app, ["matrix", "show", "vllm", "--origin"], env={"COLUMNS": "300"}
    )
    line = next(ln for ln in shown_origin.stdout.splitlines() if ln.startswith("0.10.0 "))
    assert line.rstrip().endswith(f"refreshed {origin.read_at}")

    again = runner.invoke(app, ["matrix", "refresh", "--source", "vllm"])
    assert again.exit_code == 0, again.output
    assert "nothing changed" in again.output

    # `matrix validate` says the overlay is active (issue 11, item 15), in words and in JSON.
    validated = runner.invoke(app, ["matrix", "validate"])
    said = " ".join(validated.stdout.split())  # wrapped where the temporary path is long
    assert validated.exit_code == 0 and f"overlay active: {overlay.overlay_path()}" in said
    doc = json.loads(runner.invoke(app, ["matrix", "validate", "--json"]).stdout)
    assert doc["overlay"]["active"] is True and doc["overlay"]["records"]["vllm.toml"] >= 1


def test_json_output_lists_changes_and_request_counts(
    upstream: Upstream, matrix_copy: Path
) -> None:
    drop_records(matrix_copy / "vllm.toml", "version", {"0.8.3"})
    result = runner.invoke(app, ["matrix", "refresh", "--source", "vllm", "--json"])
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert doc["changed"] is True
    assert doc["written"] is None
    (change,) = doc["changes"]
    assert change["kind"] == "added"
    assert change["key"] == "0.8.3"
    assert change["record"]["stack"][0]["layout"] == "two-stage-docker"
    assert doc["requests"]["sent"] >= 4


def test_second_refresh_with_a_warm_cache_sends_only_conditional_requests(
    upstream: Upstream, matrix_copy: Path
) -> None:
    drop_records(matrix_copy / "vllm.toml", "version", {"0.10.0", "0.8.2"})
    first = refresh(["vllm", "rocm", "wheels"])
    assert {c.key for c in first.changes} == {"0.10.0", "0.8.2"}
    upstream.seen.clear()
    second = refresh(["vllm", "rocm", "wheels"])
    assert [c.key for c in second.changes] == [c.key for c in first.changes]
    assert upstream.seen, "the tag list and index must still be revalidated"
    for req in upstream.seen:
        assert "If-None-Match" in req.headers or "If-Modified-Since" in req.headers, req.path
        assert req.status == 304, req.path
    # Files at a commit sha never change: they are not asked for again at all.
    assert not upstream.requests("/raw/")
    assert second.conditional == second.requests


def test_github_token_goes_to_github_only(
    upstream: Upstream, matrix_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_testtoken")
    drop_records(matrix_copy / "vllm.toml", "version", {"0.10.0"})
    refresh(["vllm", "wheels"])
    for req in upstream.seen:
        auth = req.headers.get("Authorization")
        if req.path.startswith(("/repos/", "/raw/")):
            assert auth == "Bearer ghp_testtoken", req.path
        else:
            assert auth is None, req.path
