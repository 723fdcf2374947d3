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
