"""How each table of ``matrix/*.toml`` is written, read off the records of ``resolver.data.model``.

The records are the one declaration of the data: a field's type, its default (optional in the
file), its file name (``msgspec.field(name=...)``) and its ``Annotated`` metadata (``safe``,
``form``, ``whole``, ...) say everything the loader checks. From them this module derives the
``Shape`` of every key, the keys a table may have (a typo is refused, never ignored), the JSON
Schema in ``docs/matrix.schema.json`` (``python -m resolver.data.schema``; a test keeps them
equal), the key order ``scripts/update-matrix`` writes, and the plain JSON ``matrix show --json``
prints. Nothing here runs on a compiled-cache hit.
"""

from __future__ import annotations

import functools
import json
import types
import typing
from dataclasses import dataclass
from typing import Any, Final, Literal

import msgspec
from packaging.version import Version

from resolver.data import model
from resolver.data.model import Provenance

# file -> (its array-of-tables key, the record each table is, the Matrix attribute holding them)
FILES: Final[dict[str, tuple[str, type[msgspec.Struct], str]]] = {
    "rocm.toml": ("release", model.RocmRelease, "rocm"),
    "os.toml": ("os", model.OsRelease, "os"),
    "drivers.toml": ("driver", model.DriverSeries, "drivers"),
    "gfx.toml": ("gfx", model.GfxTarget, "gfx"),
    "vllm.toml": ("release", model.VllmRelease, "vllm"),
    "wheels.toml": ("variant", model.WheelVariant, "wheels"),
    "images.toml": ("image", model.ContainerImage, "images"),
    "nodes.toml": ("example", model.ExampleNode, "examples"),
    "cuda.toml": ("release", model.CudaRelease, "cuda"),
    "nvidia.toml": ("cuda", model.CudaDriverRule, "nvidia"),
    "nvidia-gpus.toml": ("gpu", model.NvidiaGpu, "nvidia_gpus"),
    "amdgpu-isa.toml": ("isa", model.AmdgpuIsa, "isa"),
    "capabilities.toml": ("release", model.ReleaseCapabilities, "capabilities"),
    "channels.toml": ("channel", model.ImageChannel, "channels"),
    "models.toml": ("release", model.ModelRelease, "models"),
}

# The keys a Provenance is written as, on the table it describes.
PROVENANCE_KEYS: Final = ("source", "confidence", "note", "read_at")

Kind = Literal[
    "str",
    "bool",
    "int",
    "version",
    "enum",
    "strs",
    "enums",
    "versions",
    "table",
    "tables",
    "keyed",
    "pairs",
    "provenance",
]


@dataclass(frozen=True)
class Shape:
    """One key of a table: how it is written and what its value must be."""

    key: str  # in the file
    attr: str  # on the record
    kind: Kind
    required: bool
    options: tuple[str, ...] = ()  # enum / enums
    record: type[msgspec.Struct] | None = None  # table / tables / keyed
    item_strs: bool = False  # pairs: each value is a list of strings, else one string
    safe: str | None = None
    key_safe: str | None = None
    pattern: str | None = None
    what: str = ""
    key_pattern: str | None = None
    key_what: str = ""
    low: int | None = None
    high: int | None = None
    specifier: bool = False
    nonempty: bool = False
    keyed_by: str | None = None


def _unwrap(tp: Any) -> tuple[Any, dict[str, Any]]:
    """The bare type (``X | None`` is ``X``: a default says what absent means) and the metadata
    of its ``Annotated``."""
    extra: dict[str, Any] = {}
    if typing.get_origin(tp) is typing.Annotated:
        tp, *metas = typing.get_args(tp)
        for meta in metas:
            if isinstance(meta, model.FileMeta):
                extra.update(meta.extra)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    return tp, extra


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _classify(tp: Any, extra: dict[str, Any]) -> dict[str, Any]:
    """Kind and its details for a bare type."""
    if tp is Provenance:
        return {"kind": "provenance"}
    if typing.get_origin(tp) is Literal:
        return {"kind": "enum", "options": typing.get_args(tp)}
    simple = {str: "str", bool: "bool", int: "int", Version: "version"}
    if tp in simple:
        return {"kind": simple[tp]}
    if _is_struct(tp):
        return {"kind": "table", "record": tp}
    if typing.get_origin(tp) is tuple:
        item = typing.get_args(tp)[0]
        if typing.get_origin(item) is tuple:  # ((key, value), ...): a map in the file
            value = typing.get_args(item)[1]
            return {"kind": "pairs", "item_strs": typing.get_origin(value) is tuple}
        if item is str:
            return {"kind": "strs"}
        if item is Version:
            return {"kind": "versions"}
        if typing.get_origin(item) is Literal:
            return {"kind": "enums", "options": typing.get_args(item)}
        if _is_struct(item):
            return {"kind": "keyed" if "keyed_by" in extra else "tables", "record": item}
    raise TypeError(f"the data model has a field type the schema cannot write: {tp!r}")


@functools.cache
def shapes(record: type[msgspec.Struct]) -> tuple[Shape, ...]:
    """Every key a table of ``record`` may have, in the record's order (provenance last)."""
    out = []
    for f in msgspec.structs.fields(record):
        tp, extra = _unwrap(f.type)
        if extra.get("file") is False:
            continue
        has_default = f.default is not msgspec.NODEFAULT
        details = _classify(tp, extra)
        out.append(
            Shape(
                key=f.encode_name,
                attr=f.name,
                required=not has_default,
                safe=extra.get("safe"),
                key_safe=extra.get("key_safe"),
                pattern=extra.get("pattern"),
                what=extra.get("what", ""),
                key_pattern=extra.get("key_pattern"),
                key_what=extra.get("key_what", ""),
                low=extra.get("low"),
                high=extra.get("high"),
                specifier=bool(extra.get("specifier")),
                nonempty=bool(extra.get("nonempty")),
                keyed_by=extra.get("keyed_by"),
                **details,
            )
        )
    return tuple(sorted(out, key=lambda s: s.kind == "provenance"))


def inherits_provenance(record: type[msgspec.Struct]) -> bool:
    """A nested table whose source and confidence default to its parent record's."""
    return bool(getattr(record, "inherits_provenance", False))


@functools.cache
def keys(record: type[msgspec.Struct]) -> dict[str, Shape | None]:
    """The keys a table may have: each with its shape, provenance keys with None."""
    out: dict[str, Shape | None] = {}
    for s in shapes(record):
        if s.kind == "provenance":
            out.update(dict.fromkeys(PROVENANCE_KEYS))
        else:
            out[s.key] = s
    flat = getattr(record, "flat_stack_fields", ())
    if flat:  # the older shape: one stack's fields on the release itself
        stack = {s.attr: s for s in shapes(model.RocmStack)}
        for name in flat:
            out.setdefault(stack[name].key, stack[name])
    return out


def record_of(file: str, path: tuple[str, ...] = ()) -> type[msgspec.Struct] | None:
    """The record a table at ``path`` (nested keys below a file's record) is; None: a map."""
    record: type[msgspec.Struct] | None = FILES[file][1]
    for part in path:
        shape = keys(record).get(part) if record is not None else None
        if shape is None or shape.record is None or shape.kind == "keyed":
            return None
        record = shape.record
    return record


def key_order(file: str, path: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The order ``scripts/update-matrix`` writes a table's keys in: the record's own."""
    record = record_of(file, path)
    return tuple(keys(record)) if record is not None else ()


# --- docs/matrix.schema.json ----------------------------------------------------------------

_STR: Final[dict[str, Any]] = {"type": "string"}


def _value_schema(s: Shape) -> dict[str, Any]:
    scalar: dict[str, Any]
    if s.kind in ("str", "version"):
        scalar = dict(_STR)
    elif s.kind == "bool":
        scalar = {"type": "boolean"}
    elif s.kind == "int":
        scalar = {"type": "integer", "minimum": s.low if s.low is not None else 0}
        if s.high is not None:
            scalar["maximum"] = s.high
    elif s.kind == "enum":
        scalar = {"enum": list(s.options)}
    elif s.kind in ("strs", "versions"):
        scalar = {"type": "array", "items": _STR, **({"minItems": 1} if s.nonempty else {})}
    elif s.kind == "enums":
        scalar = {"type": "array", "items": {"enum": list(s.options)}}
    elif s.kind == "table":
        assert s.record is not None
        scalar = _table_schema(s.record, top=False)
    elif s.kind == "tables":
        assert s.record is not None
        scalar = {"type": "array", "items": _table_schema(s.record, top=False)}
    elif s.kind == "keyed":
        assert s.record is not None
        item = [x for x in shapes(s.record) if x.attr != s.keyed_by]
        scalar = {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {x.key: _value_schema(x) for x in item},
                "required": [x.key for x in item if x.required],
                "additionalProperties": False,
            },
        }
    else:  # pairs
        value = {"type": "array", "items": _STR} if s.item_strs else _STR
        scalar = {"type": "object", "additionalProperties": value}
    return scalar


def _table_schema(record: type[msgspec.Struct], *, top: bool) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required: list[str] = []
    for key, s in keys(record).items():
        if s is None:  # provenance
            conf = {"enum": list(model.CONFIDENCES)}
            props[key] = conf if key == "confidence" else dict(_STR)
            if key == "source" and (top or not inherits_provenance(record)):
                required.append(key)
            continue
        props[key] = _value_schema(s)
        if s.required and s.attr not in getattr(record, "flat_stack_fields", ()):
            required.append(key)
    return {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


def json_schema() -> dict[str, Any]:
    """One schema per data file, as a document keyed by file name."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "rocm-vllm-resolver data files (matrix/*.toml, read as JSON)",
        "type": "object",
        "properties": {
            file: {
                "type": "object",
                "properties": {key: {"type": "array", "items": _table_schema(rec, top=True)}},
                "additionalProperties": False,
            }
            for file, (key, rec, _) in FILES.items()
        },
    }


# --- `matrix show --json` -------------------------------------------------------------------


@functools.cache
def _json_kinds(record: type[msgspec.Struct]) -> tuple[tuple[str, str], ...]:
    """Each attribute with how ``to_json`` writes it: as a map ("pairs", "keyed") or plainly."""
    out = []
    for f in msgspec.structs.fields(record):
        tp, extra = _unwrap(f.type)
        kind = _classify(tp, extra)["kind"]
        out.append((f.name, kind if kind in ("pairs", "keyed", "provenance") else "plain"))
    return tuple(out)


def to_json(record: msgspec.Struct) -> dict[str, Any]:
    """A record as plain JSON, by attribute name: versions as text, maps as objects (pins with
    whether each moves), its provenance as ``source`` and ``confidence`` (and ``note``)."""
    out: dict[str, Any] = {}
    for name, kind in _json_kinds(type(record)):
        value = getattr(record, name)
        if kind == "provenance":
            out["source"], out["confidence"] = value.source, value.confidence
            if value.note:
                out["note"] = value.note
        elif value is None:
            out[name] = None
        elif kind == "keyed":
            out[name] = {
                p.component: {"repo": p.repo, "ref": p.ref, "moving": p.moving} for p in value
            }
        elif kind == "pairs":
            out[name] = {k: _plain(v) for k, v in value}
        else:
            out[name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, msgspec.Struct):
        return to_json(value)
    if isinstance(value, Version):
        return str(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


if __name__ == "__main__":  # regenerate docs/matrix.schema.json
    print(json.dumps(json_schema(), indent=2, sort_keys=True))
