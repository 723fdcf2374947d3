"""The checked records from ``matrix/*.toml``: each file's tables read (bounded) and built into
the typed records of ``resolver.data.model``, what ties a record's fields together (its rules),
and the invariants across files. Every error names the file, the record and the field, so a
broken data file is fixed in one look.

Only a run that parses the TOML imports this (a checkout's first run, an overlay, an edited
file): ``resolver.data.matrix`` reads the compiled records otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

import msgspec
from packaging.version import Version

from resolver.data.model import (
    CONFIDENCES,
    ComponentPin,
    ContainerImage,
    CudaRelease,
    DriverSeries,
    FeatureGates,
    GfxTarget,
    GpuProduct,
    ImageChannel,
    KernelFloor,
    Matrix,
    Provenance,
    RocmStack,
    VllmRelease,
    WheelVariant,
    stack_variant,
)
from resolver.util import bounded
from resolver.util.errors import MatrixError, UnsafeValueError
from resolver.util.safety import is_safe
from resolver.util.versions import driver_series, series_key

T = TypeVar("T")
MAX_DATA_FILE = 16 * bounded.MiB  # the largest data file is ~100 KiB
_CONTROL = r"[\x00-\x1f\x7f\u2028\u2029\x85]"  # for the TOML path only: compiled there


class Record:
    """One TOML table with the place it came from, and typed getters that fail with that place."""

    def __init__(self, data: dict[str, Any], file: str, label: str, prefix: str = "") -> None:
        self.data = data
        self.file = file
        self.label = label
        self.prefix = prefix  # a keyed item's place in its record: "pins.aiter."

    def fail(self, field: str, problem: str) -> MatrixError:
        return MatrixError(
            f"{self.file}: {self.label}: field '{self.prefix}{field}' {problem}",
            hint=f"fix the record in matrix/{self.file} (rocm-vllm matrix validate re-checks it)",
        )

    def _get(self, field: str, kind: type[T] | tuple[type, ...], required: bool) -> Any:
        if field not in self.data:
            if required:
                raise self.fail(field, "is missing")
            return None
        value = self.data[field]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise self.fail(field, f"must be {_kind_name(kind)}, not {type(value).__name__}")
        for text in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            # Every data string is one line: a line break could end up as a live line of a
            # generated Dockerfile or shell command, so it is refused at load.
            if isinstance(text, str) and re.search(_CONTROL, text):
                raise self.fail(field, "contains a line break or control character")
        return value

    def text(self, field: str) -> str:
        value: str = self._get(field, str, True)
        if not value.strip():
            raise self.fail(field, "is empty")
        return value

    def opt_text(self, field: str) -> str | None:
        value: str | None = self._get(field, str, False)
        return value or None

    def flag(self, field: str, default: bool = False) -> bool:
        value: bool | None = self._get(field, bool, False)
        return default if value is None else value

    def strings(self, field: str, *, required: bool = False) -> tuple[str, ...]:
        value: list[Any] | None = self._get(field, list, required)
        if value is None:
            return ()
        if not all(isinstance(v, str) and v for v in value):
            raise self.fail(field, "must be a list of non-empty strings")
        return tuple(value)

    def version(self, field: str, *, required: bool = True) -> Version | None:
        value = self.text(field) if required else self.opt_text(field)
        if value is None:
            return None
        try:
            return Version(value)
        except ValueError:
            raise self.fail(field, f"{value!r} is not a version") from None

    def choice(self, field: str, options: Iterable[str], default: str | None = None) -> str:
        options = tuple(options)
        value = self.opt_text(field)
        if value is None:
            if default is None:
                raise self.fail(field, "is missing")
            return default
        if value not in options:
            raise self.fail(field, f"is {value!r}; expected one of {', '.join(options)}")
        return value

    def table(self, field: str, *, required: bool = False) -> Record | None:
        value: dict[str, Any] | None = self._get(field, dict, required)
        return None if value is None else Record(value, self.file, f"{self.label}.{field}")

    def tables(self, field: str) -> list[Record]:
        value: list[Any] | None = self._get(field, list, False)
        if value is None:
            return []
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.fail(field, f"item {i} must be a table")
            out.append(Record(item, self.file, f"{self.label}.{field}[{i}]"))
        return out

    def provenance(self) -> Provenance:
        return Provenance(
            source=self.text("source"),
            confidence=cast(Any, self.choice("confidence", CONFIDENCES, "exact")),
            note=self.opt_text("note") or "",
        )

    def sub_provenance(self, parent: Record) -> Provenance:
        """A nested table's own source and confidence, falling back to its parent record's."""
        inherited = parent.provenance()
        return Provenance(
            source=self.opt_text("source") or inherited.source,
            confidence=cast(Any, self.choice("confidence", CONFIDENCES, inherited.confidence)),
            note=self.opt_text("note") or "",
        )

    def safe(self, field: str, kind: str, value: str) -> str:
        if not is_safe(kind, value):
            raise UnsafeValueError(
                f"{self.file}: {self.label}: field '{self.prefix}{field}' value {value!r} is "
                f"not an acceptable {kind.replace('_', ' ')}",
                hint="data may hold only plain names, versions, commits and tags; "
                "shell and Dockerfile syntax are refused",
            )
        return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {
        str: "a string",
        bool: "true or false",
        list: "a list",
        dict: "a table",
        int: "a number",
    }
    if isinstance(kind, tuple):
        return " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


def _read(
    directory: Path, name: str, key: str, extra: Mapping[str, list[dict[str, Any]]] | None = None
) -> list[dict[str, Any]]:
    """The raw tables of one data file, with the overlay's records for it laid over them."""
    path = directory / name
    try:
        doc = bounded.load_toml(path, MAX_DATA_FILE)
    except FileNotFoundError:
        raise MatrixError(
            f"{name}: data file not found in {directory}",
            hint="reinstall rocm-vllm-resolver, or unset ROCM_VLLM_MATRIX_DIR",
        ) from None
    except ValueError as exc:  # tomllib.TOMLDecodeError, or UnicodeDecodeError
        detail = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc
        raise MatrixError(
            f"{name}: not valid TOML ({detail})", hint=f"fix the syntax of matrix/{name}"
        ) from None
    except OSError as exc:
        raise MatrixError(
            f"{name}: cannot read it ({exc.strerror or exc.__class__.__name__})",
            hint=f"matrix/{name} must be a readable file; reinstall, or unset ROCM_VLLM_MATRIX_DIR",
        ) from None
    items = doc.get(key, [])
    if not isinstance(items, list):
        raise MatrixError(
            f"{name}: '{key}' must be an array of tables ([[{key}]])", hint=f"fix matrix/{name}"
        )
    if extra and extra.get(name):
        from resolver.data import overlay

        items = overlay.merge(name, items, extra[name])
    return cast(list[dict[str, Any]], items)


def _records(name: str, key: str, items: list[Any]) -> list[Record]:
    records = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise MatrixError(f"{name}: {key}[{i}] must be a table", hint=f"fix matrix/{name}")
        ident = (
            item.get("version")
            or item.get("name")
            or item.get("id")
            or item.get("series")
            or item.get("tag")
        )
        label = f"{key}[{i}]" + (f" ({ident})" if isinstance(ident, str) else "")
        _check_keys(name, item, (), label)
        records.append(Record(item, name, label))
    return records


def _check_keys(file: str, table: dict[str, Any], path: tuple[str, ...], label: str) -> None:
    """Refuse a key the data model does not have (data/schema.py): a typo is never ignored."""
    from resolver.data import schema

    record = schema.record_of(file, path)
    if record is None:
        return  # a map (pins, env): its keys are checked as it is built
    known = schema.keys(record)
    for key, value in table.items():
        where = ".".join((*path, key))
        if key not in known:
            import difflib

            close = difflib.get_close_matches(key, sorted(known), n=1)
            raise MatrixError(
                f"{file}: {label}: unknown field '{where}'"
                + (f" (did you mean '{'.'.join((*path, close[0]))}'?)" if close else ""),
                hint=(
                    f"fix the record in matrix/{file}; its fields are listed in "
                    "docs/matrix.schema.json"
                ),
            )
        if isinstance(value, dict):
            _check_keys(file, value, (*path, key), label)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    _check_keys(file, item, (*path, key), label)


def build_record(file: str, data: dict[str, Any], label: str) -> Any:
    """One table of ``file`` as its record, checked as the loader checks it (a refreshed record
    before it is kept); raises ``MatrixError`` naming ``label``."""
    from resolver.data import schema

    _check_keys(file, data, (), label)
    return _build(Record(data, file, label), schema.FILES[file][1])


# --- one generic builder, from the records' own declarations (resolver.data.schema) ----------


def _build(rec: Record, record: Any, parent: Record | None = None) -> Any:
    """A record from one table: each key read as ``schema.shapes`` says, then the record's rules
    (``_RULES``: what ties its fields together, and what the loader derives)."""
    from resolver.data import schema

    values: dict[str, Any] = {}
    for shape in schema.shapes(record):
        if shape.kind == "provenance":
            inherit = parent is not None and schema.inherits_provenance(record)
            values[shape.attr] = (
                rec.sub_provenance(parent) if parent is not None and inherit else rec.provenance()
            )
            continue
        value = _value(rec, shape)
        if value is not _ABSENT:
            values[shape.attr] = value
    rule = _RULES.get(record)
    if rule is not None:
        values = rule(rec, values, parent)
    return record(**values)


_ABSENT: Any = object()


def _value(rec: Record, s: Any) -> Any:  # noqa: C901 (one branch per kind of value)
    key = s.key
    if key not in rec.data:
        if s.required:
            raise rec.fail(key, "is missing")
        return _ABSENT
    if s.kind == "str":
        text = rec.text(key) if s.required else rec.opt_text(key)
        if text is None:
            return _ABSENT
        _check_text(rec, s, key, text)
        if s.specifier:
            _check_specifier(rec, key, text)
        return text
    if s.kind == "bool":
        return rec.flag(key)
    if s.kind == "int":
        return _whole(rec, s)
    if s.kind == "version":
        return rec.version(key, required=s.required) or _ABSENT
    if s.kind == "enum":
        value = rec.opt_text(key)
        if value is None:
            return _ABSENT
        if value not in s.options:
            raise rec.fail(key, f"is {value!r}; expected one of {', '.join(s.options)}")
        return value
    if s.kind in ("strs", "enums", "versions"):
        items = rec.strings(key, required=s.required)
        if s.nonempty and not items:
            raise rec.fail(key, "is empty; give at least one")
        for item in items:
            if s.kind == "enums" and item not in s.options:
                raise rec.fail(key, f"has {item!r}; expected {', '.join(s.options)}")
            _check_text(rec, s, key, item)
        if s.kind == "versions":
            return tuple(_parse_version(rec, key, item) for item in items)
        return items
    if s.kind == "table":
        return _build(cast(Record, rec.table(key, required=s.required)), s.record, rec)
    if s.kind == "tables":
        return tuple(_build(t, s.record, rec) for t in rec.tables(key))
    if s.kind == "keyed":
        return _keyed(rec, s)
    return _pairs(rec, s)


def _check_text(rec: Record, s: Any, key: str, text: str) -> None:
    if s.safe is not None:
        rec.safe(key, s.safe, text)
    if s.pattern is not None and not re.fullmatch(s.pattern, text):
        raise rec.fail(key, f"{text!r} is not {s.what}")


def _parse_version(rec: Record, key: str, text: str) -> Version:
    try:
        return Version(text)
    except ValueError:
        raise rec.fail(key, f"{text!r} is not a version") from None


def _check_specifier(rec: Record, key: str, text: str) -> None:
    from packaging.specifiers import SpecifierSet

    try:
        SpecifierSet(text)
    except ValueError:
        raise rec.fail(key, f"{text!r} is not a PEP 440 specifier") from None


def _whole(rec: Record, s: Any) -> int:
    value = rec.data.get(s.key)
    low, high = s.low, s.high
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or (low is not None and value < low)
        or (high is not None and value > high)
    ):
        span = f" >= {low}" if high is None else f" from {low} to {high}"
        raise rec.fail(s.key, f"must be a whole number{span if low is not None else ''}")
    return value


def _keyed(rec: Record, s: Any) -> tuple[Any, ...]:
    """A table of tables keyed by one field of the item (pins: component -> {repo, ref})."""
    from resolver.data import schema

    table = cast(Record, rec.table(s.key))
    item_shapes = {x.attr: x for x in schema.shapes(s.record)}
    key_shape = item_shapes.pop(s.keyed_by)
    fields = {x.key for x in item_shapes.values()}
    out = []
    for name, value in table.data.items():
        where = f"{s.key}.{name}"
        if name not in key_shape.options:
            raise rec.fail(where, f"is not a known {s.keyed_by} ({', '.join(key_shape.options)})")
        if not isinstance(value, dict) or set(value) != fields:
            shown = ", ".join(f'{f} = "..."' for f in sorted(fields))
            raise rec.fail(where, f"must be a table {{ {shown} }}")
        item = Record(value, rec.file, rec.label, prefix=f"{where}.")
        values = {x.attr: _value(item, x) for x in item_shapes.values()}
        out.append(s.record(**{s.keyed_by: name, **values}))
    order = key_shape.options
    return tuple(sorted(out, key=lambda p: order.index(getattr(p, s.keyed_by))))


def _pairs(rec: Record, s: Any) -> tuple[tuple[str, Any], ...] | Any:
    """A map written as a TOML table (env, rocm_kernels), kept as ordered pairs."""
    table = rec.table(s.key)
    if table is None:
        return _ABSENT
    out: list[tuple[str, Any]] = []
    for name, value in table.data.items():
        where = f"{s.key}.{name}"
        if s.key_safe is not None:
            rec.safe(where, s.key_safe, name)
        if s.key_pattern is not None and not re.fullmatch(s.key_pattern, name):
            raise rec.fail(s.key, f"{name!r} is not {s.key_what}")
        if s.item_strs:
            items = table.strings(name)
            for item in items:
                _check_text(rec, s, s.key, item)
            out.append((name, items))
        else:
            if not isinstance(value, str):
                raise rec.fail(where, "must be a string")
            _check_text(rec, s, where, value)
            out.append((name, value))
    return tuple(out)


# --- the rules of each record: what ties its fields together, and what the loader derives ----


def _driver_rules(rec: Record, v: dict[str, Any], parent: Record | None) -> dict[str, Any]:
    # By number, so every window prints in order: "7.11" before "10.0", never "10.0, 7.11".
    v["user_space"] = tuple(sorted(v["user_space"], key=series_key))
    if v.get("module_versions") and not v.get("module_versions_source"):
        raise rec.fail(
            "module_versions_source", "is required with module_versions (where AMD pairs them)"
        )
    if v.get("releases"):
        if not v.get("releases_source"):
            raise rec.fail("releases_source", "is required with releases (where AMD pairs them)")
        for release, rocm in v["releases"]:
            if driver_series(release) != v["series"] or release.count(".") != 2:
                raise rec.fail("releases", f"{release!r} is not a release of series {v['series']}")
            if rocm.count(".") != 2:
                raise rec.fail("releases", f"{release!r}: {rocm!r} is not a ROCm MAJOR.MINOR.PATCH")
        # In release order, so that the ROCm a release shipped with is found by bisecting.
        v["releases"] = tuple(sorted(v["releases"], key=lambda p: Version(p[0])))
    return v


def _gfx_rules(rec: Record, v: dict[str, Any], parent: Record | None) -> dict[str, Any]:
    # A route the tool recommends must say who recommends it.
    if v.get("alternative") and not v.get("alternative_source"):
        raise rec.fail("alternative_source", "is missing")
    return v


def _feature_rules(rec: Record, v: dict[str, Any], parent: Record | None) -> dict[str, Any]:
    fp8, mx = v.get("fp8", False), v.get("mx", False)
    if fp8 and v.get("fp8_format") not in ("fnuz", "ocp"):
        raise rec.fail("fp8_format", "must be 'fnuz' or 'ocp' when fp8 = true")
    if not fp8:
        v.pop("fp8_format", None)
    mxfp4 = v.setdefault("mxfp4", "native" if mx else "none")
    if (mxfp4 == "native") != mx:
        raise rec.fail("mxfp4", "is 'native' exactly when mx = true (native MX compute)")
    if mxfp4 == "emulated" and not v.get("mxfp4_source"):
        raise rec.fail(
            "mxfp4_source", "is required when mxfp4 = 'emulated' (where it says MXFP4 runs)"
        )
    return v


def _product_rules(rec: Record, v: dict[str, Any], parent: Record | None) -> dict[str, Any]:
    for key in ("pci_device_id", "pci_revision"):
        if v.get(key):
            v[key] = v[key].lower()
    return v


def _kernel_floor_rules(rec: Record, v: dict[str, Any], parent: Record | None) -> dict[str, Any]:
    v.setdefault("flavour", v["min_kernel"])
    return v


def _stack_rules(rec: Record, v: dict[str, Any], parent: Record | None) -> dict[str, Any]:
    rocm = v.get("rocm")
    if "stream" not in v:
        preview = rocm is not None and rocm.is_prerelease
        therock = v.get("layout") == "therock-wheels"
        v["stream"] = "therock-preview" if preview else "therock" if therock else "legacy"
    if not v.get("variant"):
        v["variant"] = rec.safe("variant", "image_tag", stack_variant(rocm))
    base_image = v.get("base_image")
    if base_image is not None:
        repo, _, tag = base_image.partition(":")
        rec.safe("base_image", "image_repo", repo)
        rec.safe("base_image", "image_tag", tag)
    return v


def _vllm_rules(rec: Record, v: dict[str, Any], parent: Record | None) -> dict[str, Any]:
    # Two shapes: [[release.stack]] tables (read from an sdist, one per ROCm stack, the default
    # first), or the older single-stack record whose build fields sit on the release itself.
    flat = [f for f in VllmRelease.flat_stack_fields if f in rec.data]
    stacks: tuple[RocmStack, ...] = v.get("stacks", ())
    if stacks:
        if flat:
            raise rec.fail(
                flat[0], "belongs in a [[release.stack]] table when the release has stacks"
            )
        defaults = [st for st in stacks if st.default]
        if len(defaults) != 1:
            raise rec.fail(
                "stack", f"needs exactly one stack with default = true, not {len(defaults)}"
            )
        stacks = (defaults[0], *(st for st in stacks if st is not defaults[0]))
        _unique(
            stacks,
            lambda st: st.variant,
            "vllm.toml",
            f"stack variant in release {rec.data.get('version')}",
        )
    elif "rocm" in rec.data or "base_image" in rec.data:
        stacks = (msgspec.structs.replace(_build(rec, RocmStack, rec), default=True),)
    v["stacks"] = stacks
    return v


def _image_rules(rec: Record, v: dict[str, Any], parent: Record | None) -> dict[str, Any]:
    # Evidence against a claim must say where it comes from.
    if v.get("lacks") and not v.get("lacks_source"):
        raise rec.fail("lacks_source", "is required with lacks (the evidence)")
    return v


_RULES: dict[type, Callable[[Record, dict[str, Any], Record | None], dict[str, Any]]] = {
    ContainerImage: _image_rules,
    DriverSeries: _driver_rules,
    GfxTarget: _gfx_rules,
    FeatureGates: _feature_rules,
    GpuProduct: _product_rules,
    KernelFloor: _kernel_floor_rules,
    RocmStack: _stack_rules,
    VllmRelease: _vllm_rules,
}


# --- invariants across files ----------------------------------------------------------------


def _unique(items: Iterable[T], key: Callable[[T], object], file: str, what: str) -> None:
    seen: set[object] = set()
    for item in items:
        k = key(item)
        if k in seen:
            raise MatrixError(
                f"{file}: duplicate {what} {k}", hint=f"keep one record per {what} in matrix/{file}"
            )
        seen.add(k)


def check_invariants(m: Matrix) -> None:
    """The data as a whole: no empty file, one record per key, and every gfx target and ROCm
    release a record names exists (checked in file order, so the first problem is reported)."""
    _check_not_empty(m)
    _check_unique(m)
    known_gfx = {g.name for g in m.gfx}
    for r in m.rocm:
        _gfx_known(known_gfx, r.gfx, "rocm.toml", f"release {r.version}", "gfx")
        for restr in r.os_restrictions:
            _gfx_known(
                known_gfx, restr.gfx, "rocm.toml", f"release {r.version}", "os_restriction.gfx"
            )
    for v in m.vllm:
        _check_vllm_release(m, known_gfx, v)
    for w in m.wheels:
        _gfx_known(known_gfx, w.arch, "wheels.toml", f"variant {w.name}", "arch")
        _rocm_known(m, w.rocm, "wheels.toml", f"variant {w.name}")
    for i in m.images:
        _gfx_known(known_gfx, i.arch, "images.toml", f"image {i.repo}:{i.tag}", "arch")
        _gfx_known(known_gfx, i.lacks, "images.toml", f"image {i.repo}:{i.tag}", "lacks")
        _rocm_known(m, i.rocm, "images.toml", f"image {i.repo}:{i.tag}")
    for e in m.examples:
        _gfx_known(known_gfx, e.gfx, "nodes.toml", f"example {e.name}", "gfx")
    for d in m.drivers:
        if d.paired_rocm is not None and m.rocm_release(Version(d.paired_rocm)) is None:
            raise MatrixError(
                f"drivers.toml: series {d.series}: field 'paired_rocm' names unknown ROCm "
                f"{d.paired_rocm}",
                hint="add the release to matrix/rocm.toml or fix the version",
            )
        _check_driver_releases(d)


def _check_driver_releases(d: DriverSeries) -> None:
    """A later driver release never shipped with an older ROCm, and the series' first release
    shipped with the ROCm the series is paired with: the driver rules bisect on both."""
    rocms = [Version(rocm) for _, rocm in d.releases]
    if rocms != sorted(rocms):
        raise MatrixError(
            f"drivers.toml: series {d.series}: field 'releases' pairs a later driver release "
            "with an older ROCm",
            hint="check the pairs against AMD's release notes",
        )
    first = dict(d.releases).get(f"{d.series}.0")
    if first is not None and d.paired_rocm is not None and first != d.paired_rocm:
        raise MatrixError(
            f"drivers.toml: series {d.series}: releases pair {d.series}.0 with ROCm {first}, "
            f"but paired_rocm is {d.paired_rocm}",
            hint="one of the two records is wrong: fix it",
        )


def _check_not_empty(m: Matrix) -> None:
    for file, records in (
        ("rocm.toml", m.rocm),
        ("os.toml", m.os),
        ("drivers.toml", m.drivers),
        ("gfx.toml", m.gfx),
        ("vllm.toml", m.vllm),
        ("wheels.toml", m.wheels),
        ("images.toml", m.images),
        ("nodes.toml", m.examples),
    ):
        if not records:
            # An emptied file would silently turn every answer into "nothing fits".
            raise MatrixError(
                f"{file}: no records",
                hint=f"restore matrix/{file}; every data file holds at least one record",
            )


def _check_unique(m: Matrix) -> None:
    _unique(m.rocm, lambda r: r.version, "rocm.toml", "release")
    _unique(m.os, lambda o: o.id, "os.toml", "OS id")
    _unique(m.drivers, lambda d: d.series, "drivers.toml", "series")
    # A module version in two series would make the probe's reading of it a guess.
    _unique(
        (v for d in m.drivers for v in d.module_versions),
        lambda v: v,
        "drivers.toml",
        "module version",
    )
    _unique(m.gfx, lambda g: g.name, "gfx.toml", "gfx target")
    _unique(m.vllm, lambda v: v.version, "vllm.toml", "release")
    _unique(m.wheels, lambda w: w.name, "wheels.toml", "variant")
    _unique(m.images, lambda i: (i.repo, i.tag), "images.toml", "image")
    _unique(m.examples, lambda e: e.name, "nodes.toml", "example")


def _check_vllm_release(m: Matrix, known_gfx: set[str], v: VllmRelease) -> None:
    _gfx_known(known_gfx, v.cmake_arch, "vllm.toml", f"release {v.version}", "cmake_arch")
    for st in v.stacks:
        where = f"release {v.version} stack {st.variant}"
        for field_name in ("arch", "aiter_arch", "fa_arch", "mori_arch"):
            _gfx_known(known_gfx, getattr(st, field_name) or (), "vllm.toml", where, field_name)
        # A nightly (7.14.0a20260623) is a preview of its series and has no release record.
        if st.rocm is not None and not st.rocm.is_prerelease:
            _rocm_known(m, st.rocm, "vllm.toml", where)
    if v.provenance.confidence != "unknown" and v.rocm is None:
        raise MatrixError(
            f"vllm.toml: release {v.version}: field 'rocm' is missing but confidence is "
            f"{v.provenance.confidence!r}",
            hint='give the base ROCm, or mark the release confidence = "unknown"',
        )


def _gfx_known(
    known_gfx: set[str], names: Iterable[str], file: str, label: str, field: str
) -> None:
    for name in names:
        if name not in known_gfx:
            raise MatrixError(
                f"{file}: {label}: field '{field}' names unknown gfx target {name!r}",
                hint="add the target to matrix/gfx.toml or fix the name",
            )


def _rocm_known(m: Matrix, version: Version | None, file: str, label: str) -> None:
    if version is not None and m.rocm_release(version) is None:
        raise MatrixError(
            f"{file}: {label}: field 'rocm' names ROCm {version}, which rocm.toml does not know",
            hint="add the release to matrix/rocm.toml or fix the version",
        )


def read_all(
    directory: Path, extra: Mapping[str, list[dict[str, Any]]] | None
) -> dict[str, list[Any]]:
    from resolver.data import schema

    return {name: _read(directory, name, key, extra) for name, (key, _, _) in schema.FILES.items()}


def one_record_per_commit(releases: tuple[VllmRelease, ...]) -> tuple[VllmRelease, ...]:
    """One spelling per commit: upstream abbreviates the same commit differently from release to
    release (ROCm/triton 669b31a in one, 669b31ac in another); each commit pin takes the longest
    spelling the data has of it in the same repository, so the Dockerfile, its commit check and
    the lock name one commit once."""
    from msgspec.structs import replace

    known: dict[str, set[str]] = {}
    for rel in releases:
        for st in rel.stacks:
            for pin in st.pins:
                if pin.is_commit:
                    known.setdefault(pin.repo.lower(), set()).add(pin.ref)

    def longest(pin: ComponentPin) -> ComponentPin:
        if not pin.is_commit:
            return pin
        longer = [r for r in known.get(pin.repo.lower(), ()) if r.startswith(pin.ref)]
        best = max(longer, key=len)
        return pin if best == pin.ref else replace(pin, ref=best)

    out = []
    for rel in releases:
        stacks = tuple(replace(st, pins=tuple(longest(p) for p in st.pins)) for st in rel.stacks)
        out.append(rel if stacks == rel.stacks else replace(rel, stacks=stacks))
    return tuple(out)


def from_raw(raw: Mapping[str, list[Any]]) -> Matrix:
    """Build and check the matrix from raw tables (the TOML files, with the overlay's records)."""
    from resolver.data import schema

    tables = {
        attr: tuple(_build(r, record) for r in _records(name, key, raw[name]))
        for name, (key, record, attr) in schema.FILES.items()
    }
    tables["vllm"] = one_record_per_commit(tables["vllm"])
    tables["images"] = _with_channels(tables["images"], tables["channels"], tables["cuda"])
    tables["wheels"] = _with_releases(tables["wheels"], tables["vllm"])
    m = Matrix.of(tables)
    check_invariants(m)
    return m


def _with_channels(
    images: tuple[ContainerImage, ...],
    channels: tuple[ImageChannel, ...],
    cuda: tuple[CudaRelease, ...],
) -> tuple[ContainerImage, ...]:
    """Each image with what channels.toml says of its repository (official or AMD's); an image
    whose repository channels.toml does not list is refused, never guessed."""
    _unique(channels, lambda c: c.repo, "channels.toml", "channel")
    official = {c.repo: c.official for c in channels}
    named = [(f"image {i.repo}:{i.tag}", i.repo, "images.toml") for i in images]
    named += [
        (f"release {r.version} image {i.tag}", i.repo, "cuda.toml") for r in cuda for i in r.images
    ]
    for label, repo, file in named:
        if repo not in official:
            raise MatrixError(
                f"{file}: {label}: field 'repo' names {repo}, which channels.toml does not list",
                hint="add the repository to matrix/channels.toml (who publishes it, with its "
                "source) or fix the name",
            )
    return tuple(msgspec.structs.replace(i, official=official[i.repo]) for i in images)


def _with_releases(
    wheels: tuple[WheelVariant, ...], releases: tuple[VllmRelease, ...]
) -> tuple[WheelVariant, ...]:
    """Each wheel variant with the known releases its ``vllm`` range holds."""
    from packaging.specifiers import SpecifierSet

    out = []
    for w in wheels:
        spec = SpecifierSet(w.vllm) if w.vllm is not None else None  # checked PEP 440 at build
        held = tuple(r.version for r in releases if spec is not None and spec.contains(r.version))
        out.append(msgspec.structs.replace(w, releases=held))
    return tuple(out)
