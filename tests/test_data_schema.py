"""The data model is declared once (resolver/data/model.py): the file checks, the JSON Schema,
the docs, `matrix show --json` and scripts/update-matrix's key order all follow it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resolver.data import matrix, model, schema

from .conftest import LIVE_MATRIX

DOCS = LIVE_MATRIX.parent / "docs"


def _all_keys(record: type[msgspec.Struct], seen: set[type] | None = None) -> set[str]:
    """Every key a table of ``record`` and its nested tables may have."""
    seen = seen or set()
    out = set()
    for key, shape in schema.keys(record).items():
        out.add(key)
        if shape is not None and shape.record is not None and shape.record not in seen:
            seen.add(shape.record)
            item = _all_keys(shape.record, seen)
            out |= item - ({shape.keyed_by} if shape.keyed_by else set())
    return out - set(schema.PROVENANCE_KEYS)


@pytest.mark.parametrize("file", sorted(schema.FILES))
def test_docs_describe_every_field_of_every_table(file: str) -> None:
    """docs/data-model.md names each field the loader accepts, in its file's row (a field the
    docs list but the loader refused was issue 21's first bug; this is its other direction)."""
    text = (DOCS / "data-model.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith(f"| `{file}` |"))
    named = set(re.findall(r"`([a-z_0-9]+)(?: = [^`]*)?`", row))
    named |= set(re.findall(r"`\[\[?[a-z_.]*?\.?([a-z_0-9]+)\]\]?", row))  # [[gfx.product]]
    missing = sorted(_all_keys(schema.FILES[file][1]) - named)
    assert not missing, f"docs/data-model.md does not describe {file} fields {missing}"


def test_a_new_field_needs_only_its_declaration(tmp_path: Path) -> None:
    """Adding a field to a record is the whole change: the loader reads it, the schema lists it
    and update-matrix orders it. Shown with an existing optional field written where the
    shipped data omits it."""
    import shutil

    data = tmp_path / "m"
    shutil.copytree(LIVE_MATRIX, data)
    path = data / "drivers.toml"
    text = path.read_text()
    assert (
        "module_versions_confidence"
        not in schema.json_schema()["properties"]["drivers.toml"]["properties"]["driver"]["items"][
            "required"
        ]
    )
    path.write_text(
        text.replace(
            'module_versions_source = "',
            'module_versions_confidence = "inferred"\nmodule_versions_source = "',
            1,
        )
    )
    loaded = matrix.load_dir(data)
    assert any(d.module_versions_confidence == "inferred" for d in loaded.drivers)
    assert "module_versions_confidence" in schema.key_order("drivers.toml")


def test_update_matrix_writes_keys_in_the_model_order() -> None:
    order = schema.key_order("vllm.toml", ("stack",))
    fields = [f.encode_name for f in msgspec.structs.fields(model.RocmStack)]
    assert [k for k in order if k in fields] == [k for k in fields if k != "provenance"]
    assert order[-4:] == schema.PROVENANCE_KEYS


def test_show_json_carries_every_attribute_of_a_record() -> None:
    m = matrix.load_dir(LIVE_MATRIX)
    for _key, _record, attr in schema.FILES.values():
        for rec in getattr(m, attr)[:3]:
            shown = schema.to_json(rec)
            names = {f.name for f in msgspec.structs.fields(type(rec))} - {"provenance"}
            assert names <= set(shown) and "source" in shown
            json.dumps(shown)  # plain JSON all the way down


_REF_TEXT = st.one_of(
    st.text(alphabet="0123456789abcdefvpostrcABZ_-.x\u00b2\u0661\n", max_size=24),
    st.from_regex(model._FIXED_REF, fullmatch=True),
    st.text(max_size=24),
)


@settings(max_examples=600, deadline=None)
@given(_REF_TEXT)
def test_a_fixed_ref_is_read_as_its_pattern_reads_it(ref: str) -> None:
    """``model.fixed_ref`` (what ``ComponentPin.moving`` asks, without compiling a pattern at a
    check) answers as ``re.match(_FIXED_REF, ...)`` on any text: tags, commits, branches, a
    suffix after a dot, Unicode digits the pattern refuses; ``commit_ref`` (``is_commit``) as
    ``_COMMIT_REF`` reads it."""
    assert model.fixed_ref(ref) is bool(re.match(model._FIXED_REF, ref))
    assert model.commit_ref(ref) is bool(re.match(model._COMMIT_REF, ref))
