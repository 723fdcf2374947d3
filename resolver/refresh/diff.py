"""Compare refreshed records with the data in use, field by field, and say it in words or JSON.

Provenance fields (``source``, ``read_at``, ``note``) do not count as a change on their own; gfx
lists compare as sets (upstream reorders them without meaning anything); versions compare as
versions (``6.2`` == ``6.2.0``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from resolver.refresh.common import Refusal

IGNORED = frozenset({"source", "read_at", "note"})
GFX_LISTS = frozenset({"arch", "aiter_arch", "fa_arch", "mori_arch", "cmake_arch", "gfx"})
VERSION_FIELDS = frozenset({"version", "rocm", "glibc_min"})
DEFAULTS: dict[str, Any] = {"confidence": "exact", "includes_nightlies": False, "deprecated": False}


@dataclass(frozen=True)
class FieldChange:
    field: str
    old: Any
    new: Any


@dataclass
class RecordChange:
    file: str
    key: str
    kind: str  # "added" | "changed"
    record: dict[str, Any]
    fields: list[FieldChange] = field(default_factory=list)


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in record.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, f"{name}."))
        elif isinstance(v, list) and v and all(isinstance(i, dict) for i in v):
            # A release's ROCm stacks, keyed by variant so reordering is not a change.
            for i, item in enumerate(v):
                out.update(flatten(item, f"{name}[{item.get('variant', i)}]."))
        else:
            out[name] = v
    return out


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _norm(name: str, value: Any) -> Any:
    name = _leaf(name)
    if value is None or value == [] or value == "":
        return None
    if name in GFX_LISTS and isinstance(value, list):
        return tuple(sorted(str(v) for v in value))
    if isinstance(value, list):
        return tuple(value)
    if name in VERSION_FIELDS:
        try:
            return Version(str(value))
        except ValueError:
            return value
    return value


# Facts only a release's sdist gives (its upload date; how its `vllm serve` takes the model, from
# the CLI files the Git-tag reader does not fetch): absent from a record another source read, they
# are not a change.
READ_FROM_SDIST_ONLY = frozenset({"date", "serve_model_tag", "serve_model_option", "serve_source"})


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[FieldChange]:
    a, b = flatten(old), flatten(new)
    changes = []
    for name in sorted(set(a) | set(b)):
        if _leaf(name) in IGNORED:
            continue
        va = _norm(name, a.get(name, DEFAULTS.get(name)))
        vb = _norm(name, b.get(name, DEFAULTS.get(name)))
        if name not in b and _leaf(name) in READ_FROM_SDIST_ONLY:
            continue  # a source that cannot read it (a Git tag's files) does not unsay it
        if va != vb:
            changes.append(FieldChange(name, a.get(name), b.get(name)))
    return changes


def changes_for(
    current: dict[str, list[dict[str, Any]]],
    file: str,
    key: str,
    record: dict[str, Any],
    key_of: Any,
) -> RecordChange | None:
    old = next((r for r in current.get(file, []) if key_of(file, r) == key), None)
    if old is None:
        return RecordChange(file, key, "added", record)
    fields = compare(old, record)
    return RecordChange(file, key, "changed", record, fields) if fields else None


# --- rendering ---------------------------------------------------------------------------------


def _show(value: Any) -> str:
    if value is None or value == "":
        return "(none)"
    if isinstance(value, list):
        return " ".join(str(v) for v in value) or "(none)"
    return str(value)


def _summary(record: dict[str, Any]) -> list[str]:
    lines = []
    facts = [
        f"{k} {_show(record[k])}"
        for k in ("rocm", "python", "vllm", "digest", "base_image")
        if record.get(k)
    ]
    if facts:
        lines.append(", ".join(facts))
    for k in ("arch", "aiter_arch", "cmake_arch", "python", "glibc_min"):
        if isinstance(record.get(k), list) and k != "python" and record.get(k):
            lines.append(f"{k}: {_show(record[k])}")
    pins = record.get("pins")
    if isinstance(pins, dict) and pins:
        lines.append(
            "pins: " + ", ".join(f"{c} {p.get('repo')}@{p.get('ref')}" for c, p in pins.items())
        )
    for stack in record.get("stack") or []:
        if isinstance(stack, dict):
            head = f"stack {stack.get('variant')}" + (" (default)" if stack.get("default") else "")
            lines.append(head + ":")
            lines += [
                f"  {line}"
                for line in _summary({k: v for k, v in stack.items() if k != "source"})[:-1]
            ]
    lines.append(f"source: {record.get('source')}")
    return lines


def leaf_count(value: Any) -> int:
    """The fields of a record, nested tables and lists counted by their leaves."""
    if isinstance(value, dict):
        return sum(leaf_count(v) for v in value.values())
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return sum(leaf_count(v) for v in value)
    return 1


def render(
    changes: list[RecordChange],
    refused: list[Refusal],
    *,
    target: str,
    written: bool,
    compared: tuple[int, int] | None = None,
) -> str:
    out: list[str] = []
    for file in sorted({c.file for c in changes}):
        mine = [c for c in changes if c.file == file]
        added = sum(c.kind == "added" for c in mine)
        out.append(f"{file}: {added} new, {len(mine) - added} changed")
        for c in mine:
            conf = c.record.get("confidence", "exact")
            if c.kind == "added":
                out.append(f"  + {c.key}  new ({conf})")
                out.extend(f"      {line}" for line in _summary(c.record))
            else:
                out.append(f"  ~ {c.key}  changed")
                for f in c.fields:
                    out.append(f"      {f.field}: {_show(f.old)} -> {_show(f.new)}")
                out.append(f"      source: {c.record.get('source')}")
    if refused:
        out.append(f"refused ({len(refused)}, never written):")
        out.extend(f"  ! [{r.source}] {r.what}: {r.reason}" for r in refused)
    if not changes:
        if compared is not None and compared[0]:
            out.append(
                f"nothing changed: compared {compared[0]} record(s), {compared[1]} field(s) read "
                "from upstream with the data in use"
            )
        elif compared is not None and refused:
            out.append(
                f"nothing changed: no record was read from upstream ({len(refused)} refused)"
            )
        elif compared is not None:
            out.append(
                "nothing changed: no new record upstream (what the data holds exactly was not "
                "read again; --verify re-reads it)"
            )
        else:
            out.append("nothing changed: the data in use matches upstream")
    elif written:
        out.append(f"wrote {len(changes)} record(s) to {target}")
    else:
        out.append(
            f"{len(changes)} record(s) differ from the data in use; run with --write to save them "
            f"to {target}"
        )
    return "\n".join(out)


def to_json(changes: list[RecordChange], refused: list[Refusal]) -> dict[str, Any]:
    return {
        "changed": bool(changes),
        "changes": [
            {
                "file": c.file,
                "key": c.key,
                "kind": c.kind,
                "fields": [{"field": f.field, "old": f.old, "new": f.new} for f in c.fields],
                "record": c.record,
            }
            for c in changes
        ],
        "refused": [{"source": r.source, "what": r.what, "reason": r.reason} for r in refused],
    }
