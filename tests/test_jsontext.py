"""`--json` text is written by msgspec's encoder but must stay what json.dumps wrote: the same
bytes for every value a report can hold (property-tested against the standard library)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from resolver.util import jsontext

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda f: f == 0 or 1e-4 <= abs(f) < 1e16
    )
    | st.text()  # any code point: control characters, non-ASCII, outside the BMP, surrogates
)
KEYS = st.text() | st.integers(min_value=-(2**63), max_value=2**64 - 1)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(KEYS, inner, max_size=4)
    ),
    max_leaves=20,
)


def _reference(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_same_text_as_json_dumps(data: Any) -> None:
    assert jsontext.dumps(data) == _reference(data)


def test_objects_are_their_text() -> None:
    data = {"v": Version("7.2.3"), "p": Path("/opt/rocm"), "f": [-0.0, 2.5, 0.0001, 1e15]}
    assert jsontext.dumps(data) == _reference(data)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_float_keeps_its_value(f: float) -> None:
    assert json.loads(jsontext.dumps({"f": [f]})) == {"f": [f]}


def test_nan_is_null_not_invalid_json() -> None:
    text = jsontext.dumps({"nan": float("nan"), "inf": [float("inf")]})
    assert json.loads(text) == {"nan": None, "inf": [None]}


def test_delete_alone_is_escaped() -> None:
    assert jsontext.dumps({"\x7f": None}) == _reference({"\x7f": None})


def test_empty_containers_and_escapes() -> None:
    data = {"a": [], "b": {}, "c": 'tab\there \x7f \x00 \u2028 \U0001f600 "q" \\', "d": [[]]}
    assert jsontext.dumps(data) == _reference(data)
