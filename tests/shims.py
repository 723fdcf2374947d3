"""Small stand-in images, built FROM scratch with Debian's static busybox, pushed under the real
repository names to the loopback registry.

Each image answers the smoke command through a ``python3`` shim that prints the versions it was
built with (a build arg), and runs a ``vllm`` shim that echoes its arguments, so the entrypoint
handling of the run command can be checked with real ``docker run`` semantics.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import requests

from resolver.artifacts.engine import DockerEngine

BUSYBOX = Path("/bin/busybox")

PYTHON3_SHIM = (
    "#!/bin/sh\n"
    "# stands in for python3 -c SMOKE_SCRIPT: print the versions baked in at build time\n"
    'echo "$SHIM_VERSIONS"\n'
)
VLLM_SHIM = '#!/bin/sh\necho "vllm-shim $*"\n'

DOCKERFILE = """\
FROM scratch
COPY busybox /bin/busybox
COPY busybox /bin/sh
COPY vllm /usr/local/bin/vllm
COPY python3 /usr/bin/python3
ENV PATH=/usr/local/bin:/usr/bin:/bin
ARG SHIM_VERSIONS
ENV SHIM_VERSIONS=$SHIM_VERSIONS
"""
# vllm/vllm-openai-rocm runs `vllm serve`; AMD's images start a shell.
ENTRYPOINTS = {
    "vllm-serve": 'ENTRYPOINT ["/usr/local/bin/vllm", "serve"]\n',
    "shell": 'ENTRYPOINT ["/bin/sh"]\n',
}

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


@dataclass(frozen=True)
class Pushed:
    name: str  # 127.0.0.1:PORT/vllm/vllm-openai-rocm
    tag: str
    digest: str

    @property
    def ref(self) -> str:
        return f"{self.name}:{self.tag}"


def context(tmp: Path) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy2(BUSYBOX, tmp / "busybox")
    for name, text in (("python3", PYTHON3_SHIM), ("vllm", VLLM_SHIM)):
        (tmp / name).write_text(text)
        (tmp / name).chmod(0o755)
    return tmp


def build_and_push(
    engine: DockerEngine,
    ctx: Path,
    name: str,
    tag: str,
    *,
    versions: dict[str, str | None],
    entrypoint: str,
) -> Pushed:
    ref = f"{name}:{tag}"
    engine.build(
        dockerfile_text=DOCKERFILE + ENTRYPOINTS[entrypoint],
        context_dir=ctx,
        tag=ref,
        buildargs={"SHIM_VERSIONS": json.dumps(versions)},
        on_progress=lambda line: None,
    )
    digest = None
    for event in engine.client.api.push(name, tag=tag, stream=True, decode=True):
        if "error" in event:
            raise RuntimeError(f"push {ref}: {event['error']}")
        aux = event.get("aux")
        if isinstance(aux, dict) and aux.get("Digest"):
            digest = aux["Digest"]
    assert digest, f"push {ref} reported no digest"
    engine.remove_image(ref)  # later pulls must come from the registry
    return Pushed(name, tag, digest)


def put_index(
    registry_url: str, repo: str, tag: str, children: list[tuple[Pushed, str]], media_type: str
) -> Pushed:
    """Assemble a multi-platform index from pushed single-platform manifests and PUT it."""
    manifests = []
    for pushed, arch in children:
        r = requests.get(
            f"{registry_url}/v2/{repo}/manifests/{pushed.digest}",
            headers={"Accept": DOCKER_MANIFEST},
            timeout=10,
        )
        r.raise_for_status()
        manifests.append(
            {
                "mediaType": r.headers["Content-Type"],
                "digest": pushed.digest,
                "size": len(r.content),
                "platform": {"architecture": arch, "os": "linux"},
            }
        )
    body = json.dumps(
        {"schemaVersion": 2, "mediaType": media_type, "manifests": manifests}, indent=3
    ).encode()
    r = requests.put(
        f"{registry_url}/v2/{repo}/manifests/{tag}",
        data=body,
        headers={"Content-Type": media_type},
        timeout=10,
    )
    assert r.status_code == 201, r.text
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    assert r.headers["Docker-Content-Digest"] == digest
    host = registry_url.split("://", 1)[1]
    return Pushed(f"{host}/{repo}", tag, digest)
