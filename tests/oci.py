"""Push an OCI image to a real registry through the distribution API (the tests' registry on
loopback): one config and the given layers. Returns the manifest digest."""

from __future__ import annotations

import hashlib
import json

import requests

LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"


def push(
    base: str,
    repo: str,
    tag: str,
    layers: list[tuple[bytes, str]],
    labels: dict[str, str] | None = None,
) -> str:
    def blob(data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        start = requests.post(f"{base}/v2/{repo}/blobs/uploads/", timeout=10)
        assert start.status_code == 202, start.text
        location = start.headers["Location"]
        location = location if location.startswith("http") else base + location
        sep = "&" if "?" in location else "?"
        done = requests.put(f"{location}{sep}digest={digest}", data=data, timeout=60)
        assert done.status_code == 201, done.text
        return digest

    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Labels": labels or {}},
            "rootfs": {"type": "layers", "diff_ids": []},
        }
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": blob(config),
                "size": len(config),
            },
            "layers": [
                {"mediaType": media, "digest": blob(data), "size": len(data)}
                for data, media in layers
            ],
        }
    ).encode()
    r = requests.put(
        f"{base}/v2/{repo}/manifests/{tag}",
        data=manifest,
        headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"},
        timeout=10,
    )
    assert r.status_code == 201, r.text
    return "sha256:" + hashlib.sha256(manifest).hexdigest()
