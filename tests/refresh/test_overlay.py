"""The user-data overlay: merged by key over the embedded data, written atomically, cheap when
absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from resolver.data import matrix, overlay
from resolver.util.errors import MatrixError

NEW_RELEASE = {
    "version": "0.10.0",
    "tag_commit": "6d8d0a24c0",
    "layout": "two-stage-docker",
    "base_image": "rocm/dev-ubuntu-22.04:6.3.1-complete",
    "rocm": "6.3.1",
    "python": "3.12",
    "arch": ["gfx90a", "gfx942"],
    "source": "vllm-project/vllm@v0.10.0 (6d8d0a24c0): https://raw.githubusercontent.com/...",
    "read_at": "2026-11-29",
}


def test_no_overlay_means_the_embedded_data() -> None:
    assert overlay.stamp() is None
    assert overlay.origins() == {}
    assert matrix.load().vllm


def test_overlay_records_replace_embedded_ones_by_key_and_say_where_from() -> None:
    changed = dict(NEW_RELEASE, arch=["gfx942"])
    path = overlay.write({"vllm.toml": [changed]}, written_at="2026-11-29T00:00:00Z")
    assert path.parent == Path(os.environ["ROCM_VLLM_DATA_DIR"])
    m = matrix.load()
    releases = [v for v in m.vllm if v.version == Version("0.10.0")]
    assert len(releases) == 1
    assert releases[0].arch == ("gfx942",)
    origin = overlay.origins()[("vllm.toml", "0.10.0")]
    assert (origin.source_url, origin.read_at, origin.overlay) == (
        NEW_RELEASE["source"],
        "2026-11-29",
        True,
    )
    # A second write merges: the earlier record stays, the same key is replaced.
    overlay.write(
        {"vllm.toml": [dict(NEW_RELEASE, version="0.10.0", arch=["gfx90a"])]}, written_at="x"
    )
    doc = json.loads(path.read_text())
    assert [r["arch"] for r in doc["files"]["vllm.toml"]] == [["gfx90a"]]
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    "content",
    ["{not json", '{"format": 99, "files": {}}', '{"format": 1, "files": {"os.toml": []}}'],
)
def test_a_damaged_overlay_is_a_clear_data_error(content: str) -> None:
    path = overlay.overlay_path()
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(MatrixError) as err:
        matrix.load()
    assert str(path) in err.value.message
    assert err.value.hint
    assert "delete it" in err.value.hint


def test_the_check_path_does_not_import_requests(tmp_path: Path) -> None:
    overlay.write({"vllm.toml": [NEW_RELEASE]}, written_at="x")
    code = "import sys, resolver.data.matrix as m; m.load(); print('requests' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        check=True,
    )
    assert out.stdout.strip() == "False"


def test_a_record_read_without_a_date_is_stamped_when_written() -> None:
    """Issue 19: `matrix show --origin` printed "refreshed ?" for records a source wrote without
    read_at (the sdist refresh): the overlay stamps them with the write's date."""
    from typer.testing import CliRunner

    from resolver.cli import app

    undated = {k: v for k, v in NEW_RELEASE.items() if k != "read_at"}
    overlay.write({"vllm.toml": [undated]}, written_at="2026-12-01T10:00:00Z")
    assert overlay.origins()[("vllm.toml", "0.10.0")].read_at == "2026-12-01"
    shown = CliRunner().invoke(app, ["matrix", "show", "vllm", "--origin"], env={"COLUMNS": "300"})
    line = next(ln for ln in shown.stdout.splitlines() if ln.startswith("0.10.0 "))
    assert line.rstrip().endswith("refreshed 2026-12-01") and "?" not in line
