"""Tables that fit the terminal (issue 34: `matrix show images` was 129 columns at any width, the
fleet plan's table 236): columns narrow and wrap, then the widest fold out of the table, and only a
single unbreakable word (an image reference) may stick out."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resolver.cli import matrix_cmd
from resolver.util.table import fit_table

from .helpers import run_cli

_BREAK = re.compile(r"\s|,(?=.)")  # where a cell may break: a space, or after a comma


def _overflow_is_one_word(line: str, width: int, headers: Sequence[str]) -> bool:
    """A line past ``width`` holds one unbreakable piece, after its ``header:`` label if any."""
    if len(line) <= width:
        return True
    body = line.strip()
    for h in headers:
        if body.startswith(f"{h}: "):
            body = body[len(h) + 2 :]
            break
    return _BREAK.search(body) is None


cells = st.text(alphabet="abc ,-.0123456789", max_size=60)


@given(
    header=st.lists(st.text(alphabet="abcdef", min_size=1, max_size=8), min_size=1, max_size=6),
    data=st.data(),
    width=st.integers(min_value=20, max_value=120),
)
def test_a_fitted_table_fits_unless_one_word_cannot(header, data, width) -> None:  # type: ignore[no-untyped-def]
    rows = data.draw(
        st.lists(st.lists(cells, min_size=len(header), max_size=len(header)), max_size=6)
    )
    text = fit_table(header, rows, width=width)
    for line in text.splitlines():
        assert _overflow_is_one_word(line, width, header), (width, line)
    words = set(text.split())
    for row in rows:  # nothing is lost: every piece of every cell is still there
        for cell in row:
            for piece in re.split(r"(?<=,)|\s+", cell):
                assert not piece or any(piece in w for w in words), piece


def test_a_table_that_fits_is_left_as_it_is() -> None:
    header, rows = ["a", "b"], [["1", "2"], ["3", "4"]]
    assert fit_table(header, rows, width=80) == "a  b\n-  -\n1  2\n3  4\n"


TABLES = list(matrix_cmd.TABLES)  # the tables `matrix show` offers, from the command itself


@pytest.mark.parametrize("columns", [60, 80, 120])
@pytest.mark.parametrize("table", TABLES)
def test_matrix_show_fits_the_terminal(table: str, columns: int) -> None:
    from .conftest import LIVE_MATRIX

    env = {"COLUMNS": str(columns), "ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    records = json.loads(run_cli("matrix", "show", table, "--json", env=env).stdout)["records"]
    for extra in ([], ["--origin"]):
        out = run_cli("matrix", "show", table, *extra, env=env)
        assert out.exit_code == 0
        lines = out.stdout.splitlines()
        headers = [*_headers(table), "origin"]
        for line in lines:
            assert _overflow_is_one_word(line, columns, headers), (columns, line)
        if table == "images":
            # One image took ten lines (one gfx a line) in a 129-column table.
            assert len(lines) <= (6 if columns < 80 else 4) * len(records) + 3
            assert all(f"{r['repo']}:{r['tag']}" in out.stdout for r in records)


def _headers(table: str) -> list[str]:
    from resolver.cli.matrix_cmd import _rows
    from resolver.data import matrix

    return _rows(matrix.load(), table)[0]


def _reports(d: Path) -> Path:
    from .test_fleet import MI50, MI300X, _probe

    d.mkdir()
    mi300x, mi50 = _probe(MI300X), _probe(MI50)
    for i in range(1, 5):
        (d / f"gpu{i:03d}.json").write_text(json.dumps(mi300x))
    for i in (5, 6):
        (d / f"gpu{i:03d}.json").write_text(json.dumps({**mi300x, "driver_version": "6.1.3"}))
    (d / "gpu007.json").write_text(json.dumps(mi50))
    return d


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_the_fleet_plan_fits_the_terminal(tmp_path: Path, columns: int) -> None:
    """The plan's table was 236 columns; its prose did not wrap either."""
    reports = _reports(tmp_path / "reports")
    out = run_cli("fleet", "plan", str(reports), env={"COLUMNS": str(columns)})
    assert out.exit_code == 1
    headers = ["group", "nodes", "n", "verdict", "plan", "to join the main plan"]
    for line in out.stdout.splitlines():
        assert _overflow_is_one_word(line, columns, headers), (columns, line)
    for group in ("g1", "g2", "g3"):
        assert any(line.startswith(group + " ") for line in out.stdout.splitlines())
    assert "gpu[005-006]" in out.stdout and "amdgpu driver 6.4.x" in " ".join(out.stdout.split())


def test_the_written_fleet_plan_keeps_one_line_a_group(tmp_path: Path) -> None:
    """fleet.txt is read by tools, not by a terminal: one table line per group, as before."""
    reports = _reports(tmp_path / "reports")
    out = run_cli("fleet", "plan", str(reports), "-o", str(tmp_path / "out"), env={"COLUMNS": "60"})
    text = (tmp_path / "out" / "fleet.txt").read_text()
    rows = [line for line in text.splitlines() if re.match(r"g\d+ ", line)]
    assert out.exit_code == 1 and len(rows) == 3
    assert rows[0].startswith("g1 ") and "vllm/vllm-openai-rocm:v0.24.0" in rows[0]
