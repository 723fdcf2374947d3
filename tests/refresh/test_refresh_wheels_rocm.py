"""Wheel index and ROCm release sources against the recorded upstream."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from resolver.data import matrix
from resolver.refresh.runner import refresh
from resolver.refresh.wheels import match_rocm, wheel_files

from .conftest import drop_records
from .server import RECORDED, Upstream


def test_wheel_index_matches_the_curated_variant(upstream: Upstream) -> None:
    outcome = refresh(["wheels"])
    assert not outcome.changes
    assert not outcome.refused


def test_a_variant_missing_from_the_data_is_found(upstream: Upstream, matrix_copy: Path) -> None:
    drop_records(matrix_copy / "wheels.toml", "name", {"rocm700"})
    outcome = refresh(["wheels"], write=True)
    (change,) = outcome.changes
    rec = change.record
    assert (change.kind, rec["name"], rec["rocm"]) == ("added", "rocm700", "7.0.0")
    assert rec["python"] == ["3.12"]
    assert rec["glibc_min"] == "2.35"
    assert rec["vllm"] == ">=0.14.0,<=0.18.0"
    assert rec["includes_nightlies"] is False
    variant = next(w for w in matrix.load().wheels if w.name == "rocm700")
    assert SpecifierSet(variant.vllm).contains("0.16.0")
    assert not SpecifierSet(variant.vllm).contains("0.19.0")


def test_wheel_links_are_read_from_the_pep503_page() -> None:
    files = wheel_files((RECORDED / "wheels" / "vllm-index.html").read_text())
    assert files == [
        "vllm-0.14.0+rocm700-cp312-cp312-manylinux_2_35_x86_64.whl",
        "vllm-0.18.0+rocm700-cp312-cp312-manylinux_2_35_x86_64.whl",
    ]


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        ("rocm700", "7.0.0"),
        ("rocm721", "7.2.1"),
        ("rocm72", "7.2.0"),
        ("rocm100", "10.0.0"),
        ("rocm999", None),
        ("cu129", None),
    ],
)
def test_variant_names_match_one_known_rocm_release(variant: str, expected: str | None) -> None:
    known = [str(r.version) for r in matrix.load().rocm]
    assert match_rocm(variant, known) == expected


def test_new_rocm_release_is_recorded_with_an_inferred_stream(
    upstream: Upstream, matrix_copy: Path
) -> None:
    drop_records(matrix_copy / "rocm.toml", "version", {"6.3.3"})
    outcome = refresh(["rocm"], write=True)
    (change,) = outcome.changes
    assert change.key == "6.3.3"
    assert change.record["stream"] == "legacy"
    assert change.record["confidence"] == "inferred"
    assert change.record["gfx"] == []
    assert "tag rocm-6.3.3" in change.record["source"]
    assert matrix.load().rocm_release(Version("6.3.3")) is not None


def test_records_on_an_unknown_rocm_are_refused(upstream: Upstream, matrix_copy: Path) -> None:
    # vLLM v0.8.2 builds on ROCm 6.3.1: without 6.3.1 in rocm.toml the record cannot be kept.
    drop_records(matrix_copy / "vllm.toml", "version", {"0.8.2"})
    text = (matrix_copy / "rocm.toml").read_text()
    (matrix_copy / "rocm.toml").write_text(text)  # unchanged: 6.3.1 is known, so it is accepted
    assert [c.key for c in refresh(["vllm"]).changes] == ["0.8.2"]
