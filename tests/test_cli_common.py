"""The CLI's shared output helpers: tables and prose that fit the terminal (issue 19)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from resolver.cli import app
from resolver.cli._common import format_table, terminal_width, wrapped

_PIECE = re.compile(r"(?<=,)|\s+")
cells = st.text(alphabet="abc ,-.0123456789", max_size=40)


@given(
    header=st.lists(st.text(alphabet="abcdef", min_size=1, max_size=8), min_size=1, max_size=5),
    data=st.data(),
    width=st.integers(min_value=20, max_value=120),
)
def test_a_table_fits_its_width_unless_one_piece_cannot(header, data, width) -> None:  # type: ignore[no-untyped-def]
    rows = data.draw(
        st.lists(st.lists(cells, min_size=len(header), max_size=len(header)), max_size=6)
    )
    text = format_table(header, rows, width=width)
    longest = max(
        [len(h) for h in header]
        + [len(p) for row in rows for c in row for p in _PIECE.split(c) if p]
    )
    gaps = 2 * (len(header) - 1)
    for line in text.splitlines():
        # Only a column held open by an unbreakable piece (or its header) can push past the width.
        assert len(line) <= max(width, longest * len(header) + gaps)
    # Nothing is lost: every piece of every cell is still there (wrapped rows interleave columns).
    pieces = set(text.split())
    for row in rows:
        for cell in row:
            for piece in _PIECE.split(cell):
                assert not piece or any(piece in p for p in pieces), piece


def test_matrix_show_fits_sixty_columns() -> None:
    """`matrix show drivers` printed 76-column lines at COLUMNS=60."""
    result = CliRunner().invoke(app, ["matrix", "show", "drivers"], env={"COLUMNS": "60"})
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 60
    assert "31.40.x" in result.stdout


def test_prose_keeps_backticked_commands_whole() -> None:
    text = "    fix: run `rocm-vllm probe --json > node.json` on the node and pass it with --node"
    lines = wrapped(text, width=40).splitlines()
    assert lines[0].startswith("    fix:") and all(ln.startswith("      ") for ln in lines[1:])
    assert any("`rocm-vllm probe --json > node.json`" in ln for ln in lines)


def test_columns_decides_the_width_and_a_pipe_gets_one_hundred(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "72")
    assert terminal_width() == 72
    monkeypatch.setenv("COLUMNS", "10")
    assert terminal_width() == 40  # narrower than 40 columns is not worth wrapping for
    monkeypatch.delenv("COLUMNS")
    monkeypatch.setattr("os.isatty", lambda fd: False)
    assert terminal_width() == 100
