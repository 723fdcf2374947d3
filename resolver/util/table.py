"""Plain-text tables that fit a width: columns narrowed and cells wrapped, and where that is not
enough, folded (the first column on its own line, the rest beneath it), then one record per block.
Here, below every layer that prints, so the CLI and the fleet's written plan share them."""

from __future__ import annotations

import re
from collections.abc import Sequence

_BREAK = r"(?<=,)|\s+"  # a cell may break at a space or after a comma (compiled on use)


def _pieces(cell: str) -> list[str]:
    return [p for p in re.split(_BREAK, cell) if p]


def _wrap_cell(cell: str, width: int) -> list[str]:
    """Greedy fill at spaces and after commas ("gfx90a,gfx942," stays one list); a piece longer
    than the column sticks out rather than being cut."""
    lines: list[str] = []
    line = ""
    for piece in _pieces(cell):
        glue = "" if not line or line.endswith(",") else " "
        if line and len(line) + len(glue) + len(piece) > width:
            lines.append(line)
            line = piece
        else:
            line += glue + piece
    return [*lines, line]


def _layout(
    header: Sequence[str], rows: Sequence[Sequence[str]], width: int
) -> tuple[list[str], str, list[list[str]]]:
    """The header's lines, the rule under it and each row's lines, columns padded to line up
    within ``width``: when the natural widths do not fit, the widest columns are narrowed (never
    below their header or their longest unbreakable piece) and their cells wrap."""
    table = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(cell) for cell in col) for col in zip(*table, strict=True)]
    floors = [
        max(len(col[0]), *(len(p) for cell in col for p in _pieces(cell)))
        for col in zip(*table, strict=True)
    ]
    while sum(widths) + 2 * (len(widths) - 1) > width:
        i = max(range(len(widths)), key=lambda c: widths[c] - floors[c])
        if widths[i] <= floors[i]:
            break
        widths[i] -= 1

    def lines_of(row: list[str]) -> list[str]:
        cells = [_wrap_cell(c, w) for c, w in zip(row, widths, strict=True)]
        out = []
        for k in range(max(len(c) for c in cells)):
            parts = [
                (c[k] if k < len(c) else "").ljust(w) for c, w in zip(cells, widths, strict=True)
            ]
            out.append("  ".join(parts).rstrip())
        return out

    rule = "  ".join("-" * w for w in widths)
    return lines_of(table[0]), rule, [lines_of(row) for row in table[1:]]


def format_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, width: int, rule: bool = True
) -> str:
    """Columns padded to line up, within ``width`` as far as their unbreakable pieces allow."""
    head, line, body = _layout(header, rows, width)
    lines = [*head, *([line] if rule else [])]
    for row in body:
        lines += row
    return "\n".join(lines) + "\n"


def _fits(lines: Sequence[str], width: int) -> bool:
    return all(len(line) <= width for line in lines)


def fit_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, width: int) -> str:
    """A table within ``width``: as ``format_table`` where its columns fit; else the widest
    columns fold out of it, one at a time, until the rest fit: a folded first column leads each
    row on its own line (the others indented beneath it), any other is a ``header: value`` line
    under its row. Only a single unbreakable word (an image reference, a URL) may stick out."""
    text = format_table(header, rows, width=width)
    if _fits(text.splitlines(), width):
        return text
    table = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    natural = [max(len(cell) for cell in col) for col in zip(*table, strict=True)]
    kept = list(range(len(header)))
    while kept:
        kept.remove(max(kept, key=lambda c: (natural[c], c)))
        indent = "" if 0 in kept else "  "
        if not kept:
            break
        head, rule, body = _layout(
            [table[0][c] for c in kept],
            [[r[c] for c in kept] for r in table[1:]],
            width - len(indent),
        )
        if _fits([*head, rule, *(ln for row in body for ln in row)], width - len(indent)):
            break
    if not kept:
        head, rule, body = [], "", [[] for _ in rows]
    folded = [c for c in range(1, len(header)) if c not in kept]
    lines = (
        []
        if not kept
        else [*([table[0][0]] if indent else []), *(indent + ln for ln in [*head, rule])]
    )
    for row, inner in zip(table[1:], body, strict=True):
        if 0 not in kept:
            lines += _wrap_cell(row[0], width)
        lines += [indent + ln if ln else ln for ln in inner]
        for c in folded:
            label = f"  {table[0][c]}: "
            wrapped = _wrap_cell(row[c], max(width - len(label), 10))
            lines.append(label + wrapped[0])
            lines += [" " * len(label) + more for more in wrapped[1:]]
    return "\n".join(lines) + "\n"
