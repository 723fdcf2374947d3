"""The fields each table of ``matrix/*.toml`` may have, and the JSON Schema generated from them.

The loader refuses a key that is not listed here (a typo such as ``vlm_status`` would otherwise be
ignored silently and the record read with a default); ``docs/matrix.schema.json`` is generated from
the same table (``python -m resolver.data.schema > docs/matrix.schema.json``); a test keeps them
equal and validates the shipped files against it.
"""

from __future__ import annotations

import json
from typing import Any, Final

STR: Final[dict[str, Any]] = {"type": "string"}
STRS: Final[dict[str, Any]] = {"type": "array", "items": {"type": "string"}}
BOOL: Final[dict[str, Any]] = {"type": "boolean"}
INT: Final[dict[str, Any]] = {"type": "integer", "minimum": 0}
PIN_MAP: Final[dict[str, Any]] = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "properties": {"repo": STR, "ref": STR},
        "required": ["repo", "ref"],
        "additionalProperties": False,
    },
}
ENV_MAP: Final[dict[str, Any]] = {"type": "object", "additionalProperties": STR}
# Every record and nested table may say where it came from and how sure that is.
PROVENANCE: Final[dict[str, dict[str, Any]]] = {
    "source": STR,
    "confidence": {"enum": ["exact", "release-branch", "inferred", "unknown"]},
    "note": STR,
    "read_at": STR,  # written by `matrix refresh --write` into the overlay
}


def _table(fields: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**fields, **PROVENANCE},
        "required": list(required),
        "additionalProperties": False,
    }


_OS_RESTRICTION = _table({"gfx": STRS, "products": STRS, "os": STRS}, ("os",))
_PRODUCT = _table(
    {
        "name": STR,
        "family": STR,
        "pci_device_id": STR,
        "pci_revision": STR,
        "first_rocm": STR,
        "compute_units": INT,
    },
    ("name",),
)
_FEATURES = _table(
    {
        "aiter": STR,
        "fp8": BOOL,
        "fp8_format": STR,
        "mx": BOOL,
        "mxfp4": {"enum": ["native", "emulated", "none"]},
        "mxfp4_source": STR,
        "mxfp4_confidence": PROVENANCE["confidence"],
        "custom_allreduce": BOOL,
    }
)
_KERNEL_FLOOR = _table({"os": STR, "min_kernel": STR, "flavour": STR}, ("os", "min_kernel"))
_STACK_FIELDS: dict[str, Any] = {
    "variant": STR,
    "dockerfile": STR,
    "default": BOOL,
    "layout": STR,
    "stream": STR,
    "base_image": STR,
    "rocm": STR,
    "python": STR,
    "torch": STR,
    "torchvision": STR,
    "torchaudio": STR,
    "arch": STRS,
    "aiter_arch": STRS,
    "fa_arch": STRS,
    "mori_arch": STRS,
    "images": STRS,
    "wheel_index": STR,
    "pins": PIN_MAP,
}
_STACK = _table(_STACK_FIELDS)

# file -> (array-of-tables key, record schema)
TABLES: Final[dict[str, tuple[str, dict[str, Any]]]] = {
    "rocm.toml": (
        "release",
        _table(
            {
                "version": STR,
                "stream": STR,
                "date": STR,
                "gfx": STRS,
                "os": STRS,
                "pytorch": STRS,
                "kmd_at_release": STR,
                "os_restriction": {"type": "array", "items": _OS_RESTRICTION},
            },
            ("version", "stream", "source"),
        ),
    ),
    "os.toml": (
        "os",
        _table({"id": STR, "name": STR, "glibc": STR, "kernels": STRS}, ("id", "name", "source")),
    ),
    "drivers.toml": (
        "driver",
        _table(
            {
                "series": STR,
                "user_space": STRS,
                "paired_rocm": STR,
                "module_versions": STRS,
                "module_versions_source": STR,
                "module_versions_confidence": PROVENANCE["confidence"],
            },
            ("series", "user_space", "source"),
        ),
    ),
    "gfx.toml": (
        "gfx",
        _table(
            {
                "name": STR,
                "arch": STR,
                "families": STRS,
                "vllm_status": STR,
                "vllm_note": STR,
                "override": STR,
                "override_target": STR,
                "features": _FEATURES,
                "env": ENV_MAP,
                "product": {"type": "array", "items": _PRODUCT},
                "unified_memory_source": STR,
                "alternative": STR,
                "alternative_source": STR,
                "kernel_floor": {"type": "array", "items": _KERNEL_FLOOR},
            },
            ("name", "arch", "families", "features", "vllm_status", "source"),
        ),
    ),
    "vllm.toml": (
        "release",
        _table(
            # The pre-stack shape keeps the default stack's fields on the release itself.
            {
                "version": STR,
                "date": STR,
                "tag_commit": STR,
                "sdist_sha256": STR,
                "cmake_arch": STRS,
                **{
                    k: v
                    for k, v in _STACK_FIELDS.items()
                    if k in ("layout", "base_image", "rocm", "python", "arch", "aiter_arch", "pins")
                },
                "stack": {"type": "array", "items": _STACK},
            },
            ("version", "source"),
        ),
    ),
    "wheels.toml": (
        "variant",
        _table(
            {
                "name": STR,
                "rocm": STR,
                "python": STRS,
                "glibc_min": STR,
                "vllm": STR,
                "includes_nightlies": BOOL,
                "uses_host_rocm": BOOL,
                "index_url": STR,
                "status": STR,
                "arch": STRS,
            },
            ("name", "rocm", "python", "glibc_min", "index_url", "status", "source"),
        ),
    ),
    "images.toml": (
        "image",
        _table(
            {
                "repo": STR,
                "tag": STR,
                "digest": STR,
                "rocm": STR,
                "stream": STR,
                "vllm": STR,
                "python": STR,
                "torch": STR,
                "arch": STRS,
                "family_tag": STR,
                "entrypoint": STR,
                "deprecated": BOOL,
                "stack": STR,
            },
            ("repo", "tag", "entrypoint", "source"),
        ),
    ),
    "nodes.toml": (
        "example",
        _table(
            {
                "name": STR,
                "description": STR,
                "gfx": STRS,
                "gpus": INT,
                "product": STR,
                "driver": STR,
                "os": STR,
                "python": STR,
                "rocm": STR,
            },
            ("name", "description", "gfx", "gpus", "product", "source"),
        ),
    ),
    "cuda.toml": (
        "release",
        _table(
            {
                "version": STR,
                "cuda": STR,
                "python": STR,
                "arch": STRS,
                "image": {
                    "type": "array",
                    "items": _table(
                        {
                            "repo": STR,
                            "tag": STR,
                            "cuda": STR,
                            "arch": STRS,
                            "arch_aarch64": STRS,
                            "digest": STR,
                        },
                        ("tag", "cuda", "arch"),
                    ),
                },
                "wheel_cuda": STR,
                "wheel_variants": STRS,
                "requires_python": STR,
                "sdist_sha256": STR,
            },
            ("version", "cuda", "arch", "source"),
        ),
    ),
    "nvidia.toml": (
        "cuda",
        _table({"major": INT, "min_driver": INT}, ("major", "min_driver", "source")),
    ),
    "capabilities.toml": (
        "release",
        _table(
            {
                "version": STR,
                "quantization": STRS,
                "kv_cache_dtypes": STRS,
                "fp8": STRS,
                "fp8_fnuz": STRS,
                "mx": STRS,
                "custom_allreduce": STRS,
                "fp8_scaled_mm": STRS,
                "rocm_kernels": {"type": "object", "additionalProperties": STRS},
                "sdist_sha256": STR,
            },
            ("version", "quantization", "source"),
        ),
    ),
    "amdgpu-isa.toml": (
        "isa",
        _table({"name": STR, "mach": INT, "covers": STRS}, ("name", "mach", "source")),
    ),
    "nvidia-gpus.toml": (
        "gpu",
        _table(
            {"name": STR, "compute_capability": STR, "pci_device_ids": STRS},
            ("name", "compute_capability", "pci_device_ids", "source"),
        ),
    ),
}


def allowed(file: str, path: tuple[str, ...] = ()) -> frozenset[str] | None:
    """The keys a table at ``path`` (nested table names below the record) may have; None: any."""
    schema = TABLES[file][1]
    for part in path:
        prop = schema["properties"].get(part)
        if prop is None:
            return None
        schema = prop["items"] if prop.get("type") == "array" else prop
        if "properties" not in schema:
            return None  # a map (pins, env): its keys are checked by the loader itself
    return frozenset(schema["properties"])


def json_schema() -> dict[str, Any]:
    """One schema per data file, as a document keyed by file name."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "rocm-vllm-resolver data files (matrix/*.toml, read as JSON)",
        "type": "object",
        "properties": {
            file: {
                "type": "object",
                "properties": {key: {"type": "array", "items": rec}},
                "additionalProperties": False,
            }
            for file, (key, rec) in TABLES.items()
        },
    }


if __name__ == "__main__":  # regenerate docs/matrix.schema.json
    print(json.dumps(json_schema(), indent=2, sort_keys=True))
