"""issue 20: an audited image's arch list overrides the docs claim. `image --audit` reads the
pinned image's GPU code from a real registry; from then on `check` trusts what it read."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from resolver.artifacts.audit.bundle import BUNDLE_MAGIC

from .. import services
from ..conftest import FROZEN_MATRIX, _start
from ..helpers import run_cli
from .test_audit import tar_bytes
from .test_audit_images import _push
from .test_bundle import elf_with, real_bundle

LIB = "usr/local/lib/python3.12/dist-packages/vllm/_C.abi3.so"


def bundle_without(drop: str) -> bytes:
    """The real bundle rebuilt without the entries for ``drop`` (the other entries' code objects
    byte for byte): a library built for every target of the real one but ``drop``."""
    raw = real_bundle()
    (count,) = struct.unpack_from("<Q", raw, len(BUNDLE_MAGIC))
    pos, entries = len(BUNDLE_MAGIC) + 8, []
    for _ in range(count):
        offset, size, id_len = struct.unpack_from("<QQQ", raw, pos)
        pos += 24
        entry_id = raw[pos : pos + id_len]
        pos += id_len
        if not entry_id.endswith(drop.encode()):
            entries.append((entry_id, raw[offset : offset + size]))
    table = sum(24 + len(i) for i, _ in entries)
    out = bytearray(BUNDLE_MAGIC + struct.pack("<Q", len(entries)))
    data = bytearray()
    start = len(out) + table
    for entry_id, code in entries:
        out += struct.pack("<QQQ", start + len(data), len(code), len(entry_id)) + entry_id
        data += code
    return bytes(out + data)


@pytest.fixture
def own_registry(tmp_path: Path):  # type: ignore[no-untyped-def]
    url, cm = _start(services.registry(storage=tmp_path / "registry"))
    try:
        yield url
    finally:
        cm.__exit__(None, None, None)


def test_an_audited_image_replaces_the_docs_claim(own_registry: str) -> None:
    env = {"ROCM_VLLM_MATRIX_DIR": str(FROZEN_MATRIX)}
    # The data says v0.24.0 ships gfx1201 (inferred from its Dockerfile); the image's library
    # here has no gfx1201 code.
    lib = elf_with(bundle_without("gfx1201"))
    layer = tar_bytes({LIB: lib}, compress="gzip")
    media = "application/vnd.oci.image.layer.v1.tar+gzip"
    _push(own_registry, "vllm/vllm-openai-rocm", "v0.24.0", layer, media)
    node = ["--gfx", "gfx1201", "--driver", "30.30.3"]
    before = json.loads(run_cli("check", *node, "--json", env=env).stdout)
    assert before["plan"]["label"] == "vllm/vllm-openai-rocm:v0.24.0"
    assert before["plan"]["confidence"] == "inferred"

    audited = run_cli("image", *node, "--audit", "--registry", own_registry, "--json", env=env)
    data = json.loads(audited.stdout)
    assert audited.exit_code == 1
    assert [p["code"] for p in data["problems"]] == ["audit-lacks-gfx"]
    assert "gfx1201" not in data["audit"]["arch"] and "gfx942" in data["audit"]["arch"]
    assert data["audit"]["written"]

    # From now on check trusts the audit: no plan on that image for gfx1201 ...
    after = json.loads(run_cli("check", *node, "--json", env=env).stdout)
    name = "vllm/vllm-openai-rocm:v0.24.0"
    assert after["plan"] is None or not after["plan"]["label"].startswith(name)
    # (pinned now: its label carries the digest the audit read)
    rejected = next(r for r in after["reasons"] if r["candidate"]["label"].startswith(name + "@"))
    assert any(
        x["code"] == "gfx-not-shipped" and "rocm-vllm audit" in x["source"]
        for x in rejected["reasons"]
    )
    # ... and for gfx942 the image is planned on facts read from its code: exact.
    mi300 = json.loads(
        run_cli(
            "check",
            "--gfx",
            "gfx942",
            "--driver",
            "30.30.3",
            "--vllm",
            "==0.24.0",
            "--json",
            env=env,
        ).stdout
    )
    assert mi300["plan"]["label"].startswith(name + "@sha256:")
    assert mi300["plan"]["confidence"] == "exact" and "audit" in mi300["plan"]["source"]


def test_a_maintainer_audits_every_image_the_data_names(own_registry: str, tmp_path: Path) -> None:
    """`matrix refresh --source images --audit` reads each image's digest and then its GPU code
    from the registry, and proposes the audited arch list for images.toml (scripts/update-matrix
    folds it in the same way)."""
    env = {
        "ROCM_VLLM_MATRIX_DIR": str(FROZEN_MATRIX),
        "ROCM_VLLM_REGISTRY": own_registry,
        "ROCM_VLLM_DATA_DIR": str(tmp_path / "data"),
    }
    lib = elf_with(bundle_without("gfx1201"))
    layer = tar_bytes({LIB: lib}, compress="gzip")
    _push(
        own_registry,
        "vllm/vllm-openai-rocm",
        "v0.24.0",
        layer,
        "application/vnd.oci.image.layer.v1.tar+gzip",
    )
    out = run_cli("matrix", "refresh", "--source", "images", "--audit", "--json", env=env)
    doc = json.loads(out.stdout)
    assert out.exit_code == 1, out.stdout  # changes found, not written
    (change,) = [c for c in doc["changes"] if c["key"] == "vllm/vllm-openai-rocm:v0.24.0"]
    record = change["record"]
    assert record["digest"].startswith("sha256:")
    assert "gfx1201" not in record["arch"] and "gfx942" in record["arch"]
    assert record["confidence"] == "exact"
    assert record["source"].startswith(
        f"rocm-vllm audit docker://vllm/vllm-openai-rocm@{record['digest']}"
    )
    # Without --source images, --audit is a usage error: nothing is read.
    bad = run_cli("matrix", "refresh", "--audit", env=env)
    assert bad.exit_code == 2 and "--source images" in bad.output
