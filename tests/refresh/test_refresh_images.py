"""Images source against a real docker-registry (OCI distribution API) on loopback."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from resolver.data import matrix
from resolver.refresh.images import parse_rocm_vllm_tag
from resolver.refresh.runner import refresh

from .conftest import REPO_MATRIX, drop_records, push_image
from .server import Upstream

CURATED = tomllib.loads((REPO_MATRIX / "images.toml").read_text())["image"]
AMD_TAGS = [r for r in CURATED if r["repo"] == "rocm/vllm"]


@pytest.mark.parametrize("rec", AMD_TAGS, ids=[r["tag"] for r in AMD_TAGS])
def test_every_curated_rocm_vllm_tag_name_parses_to_its_curated_facts(
    rec: dict[str, object],
) -> None:
    # Torch and Python are in some tag names only; AMD's docs give the rest (kept in the data).
    # AMD's docs may be more precise than the tag (rocm6.2_... ships ROCm 6.2.1), never different.
    parsed = parse_rocm_vllm_tag(str(rec["tag"]))
    assert parsed is not None
    assert rec["rocm"] == parsed["rocm"] or str(rec["rocm"]).startswith(parsed["rocm"] + ".")
    assert parsed["vllm"] == rec["vllm"]
    for name in ("python", "torch", "family_tag"):
        if name in parsed or name == "family_tag":
            assert parsed.get(name) == rec.get(name), name


@pytest.mark.parametrize(
    "tag",
    ["latest", "nightly", "rocm7.0.0_vllm_main", "rocm6.4.1_vllm_0.10.1_rm-rf", "rocmX_vllm_1.0"],
)
def test_tags_outside_the_release_schemes_are_not_read(tag: str) -> None:
    assert parse_rocm_vllm_tag(tag) is None


@pytest.mark.registry
def test_registry_tags_and_digests_become_image_records(registry: str, matrix_copy: Path) -> None:
    gone = {
        "rocm6.4.1_vllm_0.10.1_20250909",
        "rocm7.14.0_cdna_ubuntu24.04_py3.14_pytorch_2.11.0_vllm_0.23.0",
        "rocm7.14.1_cdna_ubuntu24.04_py3.14_pytorch_2.11_vllm_0.23.0",
    }
    drop_records(matrix_copy / "images.toml", "tag", gone)
    pushed = {
        ("vllm/vllm-openai-rocm", "v0.15.0"): push_image(
            registry, "vllm/vllm-openai-rocm", "v0.15.0"
        ),
        ("vllm/vllm-openai-rocm", "latest"): push_image(
            registry, "vllm/vllm-openai-rocm", "latest"
        ),
    }
    for tag in gone:
        pushed[("rocm/vllm", tag)] = push_image(registry, "rocm/vllm", tag)

    outcome = refresh(["images"], write=True)
    assert not outcome.refused
    by_key = {c.key: c for c in outcome.changes}
    assert set(by_key) == {"vllm/vllm-openai-rocm:v0.15.0", *(f"rocm/vllm:{t}" for t in gone)}
    # A curated image keeps its facts and gains the digest the registry serves.
    official = by_key["vllm/vllm-openai-rocm:v0.15.0"]
    assert official.kind == "changed"
    assert [(f.field, f.new) for f in official.fields] == [
        ("digest", pushed[("vllm/vllm-openai-rocm", "v0.15.0")])
    ]
    # Tags found only in the registry are read from their names, as the curated data had them.
    for tag in gone:
        curated = next(r for r in CURATED if r["tag"] == tag)
        rec = by_key[f"rocm/vllm:{tag}"].record
        from_name = parse_rocm_vllm_tag(tag) or {}
        for name in ("rocm", "vllm", "python", "torch", "family_tag", "entrypoint"):
            if name in from_name or name in ("family_tag", "entrypoint"):
                assert rec.get(name) == curated.get(name), (tag, name)
        assert rec["digest"] == pushed[("rocm/vllm", tag)]
        assert rec["source"].endswith(f"/v2/rocm/vllm/manifests/{tag}")
    cdna = by_key["rocm/vllm:rocm7.14.0_cdna_ubuntu24.04_py3.14_pytorch_2.11.0_vllm_0.23.0"].record
    assert cdna["stream"] == "therock"
    assert "arch" not in cdna  # every curated "cdna" image was removed: no arch list to carry over
    # Every command now sees the digest.
    images = {(i.repo, i.tag): i for i in matrix.load().images}
    assert (
        images[("vllm/vllm-openai-rocm", "v0.15.0")].digest
        == pushed[("vllm/vllm-openai-rocm", "v0.15.0")]
    )
    assert ("rocm/vllm", "rocm6.4.1_vllm_0.10.1_20250909") in images

    again = refresh(["images"])
    assert not again.changes


def test_hostile_tag_in_a_tag_list_is_refused(upstream: Upstream) -> None:
    upstream.overrides["/v2/rocm/vllm/tags/list"] = (
        b'{"name": "rocm/vllm", "tags": ["rocm6.4.1_vllm_0.10.1;reboot"]}'
    )
    upstream.overrides["/v2/vllm/vllm-openai-rocm/tags/list"] = (
        b'{"name": "vllm/vllm-openai-rocm", "tags": []}'
    )
    outcome = refresh(["images"])
    assert [r.what for r in outcome.refused] == ["image rocm/vllm:'rocm6.4.1_vllm_0.10.1;reboot'"]
    assert not outcome.changes
