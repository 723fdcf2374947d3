"""The pinned stack as a bill of materials: CycloneDX 1.5 JSON, the format security teams ingest.

``dockerfile_bom`` lists what a generated Dockerfile builds from (vLLM's sdist with its sha256,
every component at its ref, the base image by digest where pinned, TheRock's wheels) and
``image_bom`` what an image plan runs; each component says where the data states it
(``rocm-vllm:source``) and how sure it is (``rocm-vllm:confidence``). The document is a pure
function of the plan: the serial number is derived from its content and no time is written, so the
same plan gives the same file.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Final
from urllib.parse import quote

from resolver import __version__
from resolver.data.model import ContainerImage

SPEC_VERSION: Final = "1.5"
# A fixed namespace for the serial number (uuid5 over the document's content).
_NAMESPACE: Final = uuid.UUID("6f1c2a52-64a5-4c1e-9a54-0d2f3c0b7e11")


def _props(**values: str | None) -> list[dict[str, str]]:
    return [
        {"name": f"rocm-vllm:{k.replace('_', '-')}", "value": v} for k, v in values.items() if v
    ]


def _purl_version(version: str) -> str:
    return quote(version, safe="")  # "2.13.0+rocm10.0.0" -> "2.13.0%2Brocm10.0.0"


def _image_component(ref: str, digest: str | None, ref_id: str) -> dict[str, Any]:
    """A container image: ``repo:tag``, by digest where known (purl type docker)."""
    repo, _, tag = ref.partition(":")
    name = repo.rsplit("/", 1)[-1]
    namespace = repo.rsplit("/", 1)[0] if "/" in repo else "library"
    version = digest or tag
    purl = f"pkg:docker/{namespace}/{name}@{_purl_version(version)}"
    if digest and tag:
        purl += f"?tag={quote(tag, safe='')}"
    out: dict[str, Any] = {
        "type": "container",
        "bom-ref": ref_id,
        "name": repo,
        "version": tag or (digest or ""),
        "purl": purl,
    }
    if digest:
        out["hashes"] = [{"alg": "SHA-256", "content": digest.removeprefix("sha256:")}]
    return out


def _document(root: dict[str, Any], components: list[dict[str, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "bomFormat": "CycloneDX",
        "specVersion": SPEC_VERSION,
        "version": 1,
        "metadata": {
            "tools": {
                "components": [
                    {"type": "application", "name": "rocm-vllm-resolver", "version": __version__}
                ]
            },
            "component": root,
        },
        "components": components,
        "dependencies": [
            {"ref": root["bom-ref"], "dependsOn": [c["bom-ref"] for c in components]},
            *({"ref": c["bom-ref"]} for c in components),
        ],
    }
    content = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return {
        **{k: body[k] for k in ("bomFormat", "specVersion")},
        "serialNumber": f"urn:uuid:{uuid.uuid5(_NAMESPACE, content)}",
        **{k: v for k, v in body.items() if k not in ("bomFormat", "specVersion")},
    }


def dockerfile_bom(plan: Any) -> dict[str, Any]:
    """What a generated Dockerfile (``artifacts.dockerfile.DockerfilePlan``) builds from."""
    components: list[dict[str, Any]] = []
    vllm: dict[str, Any] = {
        "type": "library",
        "bom-ref": "vllm",
        "name": "vllm",
        "version": plan.vllm_version,
        "purl": f"pkg:pypi/vllm@{_purl_version(plan.vllm_version)}",
    }
    if plan.vllm_sdist is not None:
        url, sha = plan.vllm_sdist
        vllm["hashes"] = [{"alg": "SHA-256", "content": sha}]
        vllm["externalReferences"] = [{"type": "distribution", "url": url}]
        vllm["properties"] = _props(fetched_as="sdist, checked by sha256sum")
    else:
        vllm["externalReferences"] = [
            {"type": "vcs", "url": f"https://github.com/{plan.vllm_repo}", "comment": plan.vllm_ref}
        ]
        vllm["properties"] = _props(fetched_as=f"git {plan.vllm_ref} (a ref, not a hash)")
    components.append(vllm)
    for pin in plan.pins:
        kind = (
            "branch"
            if f"{pin.component}@{pin.ref}" in plan.moving_refs
            else "commit"
            if pin.is_commit
            else "tag"
        )
        owner, _, name = pin.repo.partition("/")
        components.append(
            {
                "type": "library",
                "bom-ref": f"pin:{pin.component}",
                "name": name,
                "group": owner,
                "version": pin.ref,
                "purl": f"pkg:github/{owner.lower()}/{name.lower()}@{_purl_version(pin.ref)}",
                "externalReferences": [{"type": "vcs", "url": f"https://github.com/{pin.repo}"}],
                "properties": _props(
                    component=pin.component,
                    ref_kind=kind,
                    source=plan.source,
                    confidence=plan.confidence,
                ),
            }
        )
    base = _image_component(plan.base_image, plan.base_digest, "base-image")
    base["properties"] = _props(rocm=plan.rocm, source=plan.source, confidence=plan.confidence)
    components.append(base)
    if plan.torch:
        torch: dict[str, Any] = {
            "type": "library",
            "bom-ref": "torch",
            "name": "torch",
            "version": plan.torch,
            "purl": f"pkg:pypi/torch@{_purl_version(plan.torch)}",
        }
        if plan.wheel_index:
            torch["purl"] += f"?repository_url={quote(plan.wheel_index, safe='')}"
            torch["externalReferences"] = [{"type": "distribution", "url": plan.wheel_index}]
        components.append(torch)
    root = {
        "type": "container",
        "bom-ref": "image",
        "name": "vllm-rocm",
        "version": plan.vllm_version,
        "description": f"vLLM {plan.vllm_version} built from source for {','.join(plan.gfx)}",
        "properties": _props(
            gfx=";".join(plan.gfx),
            rocm=plan.rocm,
            rocm_stream=plan.rocm_stream,
            amdgpu_driver_series=",".join(plan.runs_on_drivers),
            stack=plan.stack,
        ),
    }
    return _document(root, components)


def image_bom(image: ContainerImage, ref: str) -> dict[str, Any]:
    """What an image plan runs: the image (by digest where pinned) and the release it carries."""
    repo_tag = f"{image.repo}:{image.tag}"
    root = _image_component(repo_tag, image.digest, "image")
    root["properties"] = _props(
        pulled_as=ref,
        gfx=";".join(image.arch),
        rocm=str(image.rocm) if image.rocm else None,
        rocm_stream=image.stream if image.vendor == "amd" else None,
        cuda=str(image.cuda) if image.cuda else None,
        source=image.provenance.source,
        confidence=image.provenance.confidence,
    )
    components: list[dict[str, Any]] = []
    if image.vllm is not None:
        components.append(
            {
                "type": "library",
                "bom-ref": "vllm",
                "name": "vllm",
                "version": str(image.vllm),
                "purl": f"pkg:pypi/vllm@{_purl_version(str(image.vllm))}",
            }
        )
    if image.torch:
        components.append(
            {
                "type": "library",
                "bom-ref": "torch",
                "name": "torch",
                "version": image.torch,
                "purl": f"pkg:pypi/torch@{_purl_version(image.torch)}",
            }
        )
    return _document(root, components)


def dumps(bom: dict[str, Any]) -> str:
    return json.dumps(bom, indent=2) + "\n"
