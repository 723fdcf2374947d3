"""`audit` straight from images: the local engine (a real dockerd) and a registry (a real
docker-registry on loopback), with a layer that carries the real AMD-built library."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile

import pytest

from resolver.artifacts.audit import audit
from resolver.artifacts.audit.bundle import AuditError
from resolver.data import matrix

from ..oci import push
from .test_audit import tar_bytes
from .test_bundle import REAL

M = matrix.load()
LIB = "usr/local/lib/python3.12/dist-packages/vllm/_C.abi3.so"


def _push(base: str, repo: str, tag: str, layer: bytes, media: str) -> None:
    push(base, repo, tag, [(layer, media)])


def test_an_image_is_audited_from_the_registry_layer_by_layer(registry_url: str) -> None:
    layer = tar_bytes({LIB: REAL.read_bytes()}, compress="gzip")
    _push(registry_url, "audit/vllm-gz", "v1", layer, "application/vnd.oci.image.layer.v1.tar+gzip")
    result = audit(M, "docker://audit/vllm-gz:v1", registry=registry_url)
    (lib,) = result.libraries
    assert lib.path.endswith(f"!{LIB}") and lib.decisive
    assert result.lacking(M, "gfx942") == [] and len(lib.targets) == 27
    zst = tar_bytes({LIB: REAL.read_bytes()}, compress="zstd")
    _push(registry_url, "audit/vllm-zst", "v1", zst, "application/vnd.oci.image.layer.v1.tar+zstd")
    assert audit(M, "docker://audit/vllm-zst:v1", registry=registry_url).libraries


def test_a_missing_image_is_a_clear_error(registry_url: str) -> None:
    from resolver.util.errors import ResolverError

    with pytest.raises(ResolverError) as err:
        audit(M, "docker://audit/nothing:here", registry=registry_url)
    assert err.value.hint


def test_an_image_in_the_local_engine_is_audited_from_its_save_stream(docker_engine) -> None:  # type: ignore[no-untyped-def]
    # A docker-archive (what `docker save` writes) loaded into the real engine.
    layer = tar_bytes({LIB: REAL.read_bytes()})
    diff = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {},
            "rootfs": {"type": "layers", "diff_ids": [diff]},
        }
    ).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = json.dumps(
        [{"Config": config_name, "RepoTags": ["audit/vllm-local:v1"], "Layers": ["l/layer.tar"]}]
    ).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in (
            ("l/layer.tar", layer),
            (config_name, config),
            ("manifest.json", manifest),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    docker_engine.client.images.load(buf.getvalue())
    result = audit(M, "docker-daemon:audit/vllm-local:v1")
    assert [lib.path.rsplit("!", 1)[-1] for lib in result.libraries] == [LIB]
    with pytest.raises(AuditError):
        audit(M, "docker-daemon:audit/none:v1")


def test_an_images_gfx_label_is_read_and_checked_against_the_node(registry_url: str) -> None:
    """issue 25: an image `rocm-vllm dockerfile` built says which targets it carries code for
    (rocm-vllm.gfx); audit reads the label from the image config in the registry (its bytes
    checked against the digest) and a target the label leaves out is not covered, even where a
    library happens to hold code for it. A hostile label stays one escaped line."""
    from resolver.cli.audit import audit_json, render

    layer = tar_bytes({LIB: REAL.read_bytes()}, compress="gzip")
    labels = {
        "rocm-vllm.gfx": "gfx942",
        "rocm-vllm.rocm": "7.2.3",
        "rocm-vllm.note": "line\nbreak\x1b[2J",
        "org.opencontainers.image.title": "vllm-rocm",
    }
    media = "application/vnd.oci.image.layer.v1.tar+gzip"
    push(registry_url, "audit/labelled", "v1", [(layer, media)], labels=labels)
    result = audit(M, "docker://audit/labelled:v1", registry=registry_url)
    assert result.labelled_gfx == ("gfx942",)
    data = audit_json(result, M, ["gfx942", "gfx90a"])
    assert data["covers"]["gfx942"] == {
        "covered": True,
        "reason": "covered",
        "lacking": [],
        "labelled": True,
    }
    assert data["covers"]["gfx90a"] == {
        "covered": False,
        "reason": "label",
        "lacking": [],
        "labelled": False,
    }
    assert data["exit_code"] == 1
    assert set(data["labels"]) == {"rocm-vllm.gfx", "rocm-vllm.rocm", "rocm-vllm.note"}
    assert data["labels"]["rocm-vllm.note"] == "line\\x0abreak\\x1b[2J"
    text = render(data)
    assert "gfx90a: NOT covered: the image's rocm-vllm.gfx label says it was built for gfx942" in (
        " ".join(text.split())
    )
    assert "\x1b" not in text
    # An image without the label is judged by its code alone.
    push(registry_url, "audit/plain", "v1", [(layer, media)])
    plain = audit_json(audit(M, "docker://audit/plain:v1", registry=registry_url), M, ["gfx90a"])
    assert plain["covers"]["gfx90a"] == {
        "covered": True,
        "reason": "covered",
        "lacking": [],
        "labelled": None,
    }
    assert plain["labels"] == {}
