"""docs/limits.md lists every bound with the constant that holds it: the two must agree."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "limits.md"
_ROW = re.compile(r"^\| (?P<what>[^|]+) \| (?P<bound>[^|]+) \| `(?P<const>[A-Za-z_.]+)` \|")
_UNITS = {"MiB": 1024 * 1024, "s": 1, "characters": 1, "levels": 1}


def _rows() -> list[tuple[str, str, str]]:
    rows = []
    for line in DOC.read_text().splitlines():
        m = _ROW.match(line)
        if m and m.group("const") != "constant":
            rows.append((m.group("what").strip(), m.group("bound").strip(), m.group("const")))
    return rows


def test_the_table_is_not_empty() -> None:
    assert len(_rows()) >= 25


@pytest.mark.parametrize(("what", "bound", "const"), _rows(), ids=lambda v: str(v)[:40])
def test_each_bound_is_the_constant(what: str, bound: str, const: str) -> None:
    module, _, name = const.rpartition(".")
    value = getattr(importlib.import_module(module), name)
    number, _, unit = bound.partition(" ")
    expected = float(number) * _UNITS.get(unit, 1)
    assert float(value) == expected, f"{what}: docs say {bound}, {const} is {value}"
