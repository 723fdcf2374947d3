"""Load ``matrix/*.toml`` into frozen records and check the invariants that tie them together.

Every error names the file, the record and the field, so a broken data file is fixed in one look.
The matrix is read once per process (``load``) and shared.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from resolver.data import resources
from resolver.data.model import (
    COMPONENTS,
    CONFIDENCES,
    FAMILIES,
    LAYOUTS,
    MXFP4_SUPPORT,
    STREAMS,
    AmdgpuIsa,
    ComponentPin,
    ContainerImage,
    CudaDriverRule,
    CudaImage,
    CudaRelease,
    DriverSeries,
    ExampleNode,
    FeatureGates,
    GfxTarget,
    GpuProduct,
    KernelFloor,
    Matrix,
    NvidiaGpu,
    OsRelease,
    OsRestriction,
    Provenance,
    ReleaseCapabilities,
    RocmRelease,
    RocmStack,
    VllmRelease,
    WheelVariant,
    stack_variant,
)
from resolver.util import atomic, bounded
from resolver.util.errors import MatrixError, UnsafeValueError
from resolver.util.safety import is_safe

T = TypeVar("T")
MAX_DATA_FILE = 16 * bounded.MiB  # the largest data file is ~100 KiB
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\x85]")


class Record:
    """One TOML table with the place it came from, and typed getters that fail with that place."""

    def __init__(self, data: dict[str, Any], file: str, label: str) -> None:
        self.data = data
        self.file = file
        self.label = label

    def fail(self, field: str, problem: str) -> MatrixError:
        return MatrixError(
            f"{self.file}: {self.label}: field '{field}' {problem}",
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
            if isinstance(text, str) and _CONTROL.search(text):
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
                f"{self.file}: {self.label}: field '{field}' value {value!r} is not an acceptable "
                f"{kind.replace('_', ' ')}",
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

    known = schema.allowed(file, path)
    if known is None:
        return
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


# --- one builder per file -------------------------------------------------------------------


def _rocm(rec: Record) -> RocmRelease:
    restrictions = tuple(
        OsRestriction(
            gfx=r.strings("gfx"),
            products=r.strings("products"),
            os=r.strings("os", required=True),
            note=r.opt_text("note") or "",
            provenance=r.sub_provenance(rec),
        )
        for r in rec.tables("os_restriction")
    )
    return RocmRelease(
        version=cast(Version, rec.version("version")),
        stream=cast(Any, rec.choice("stream", STREAMS)),
        date=rec.opt_text("date"),
        gfx=rec.strings("gfx"),
        os=rec.strings("os"),
        os_restrictions=restrictions,
        pytorch=rec.strings("pytorch"),
        kmd_at_release=rec.opt_text("kmd_at_release"),
        provenance=rec.provenance(),
    )


def _os(rec: Record) -> OsRelease:
    return OsRelease(
        id=rec.text("id"),
        name=rec.text("name"),
        glibc=rec.version("glibc", required=False),
        kernels=rec.strings("kernels"),
        provenance=rec.provenance(),
    )


def _driver(rec: Record) -> DriverSeries:
    series = rec.text("series")
    user_space = rec.strings("user_space", required=True)
    for field_value in (series, *user_space):
        parts = field_value.split(".")
        if len(parts) != 2 or not all(
            bounded.ascii_int(p, max_digits=4) is not None and p == p.strip() for p in parts
        ):
            raise rec.fail("series/user_space", f"{field_value!r} is not a MAJOR.MINOR series")
    modules = rec.strings("module_versions")
    modules_source = rec.opt_text("module_versions_source") or ""
    if modules and not modules_source:
        raise rec.fail(
            "module_versions_source", "is required with module_versions (where AMD pairs them)"
        )
    return DriverSeries(
        series=series,
        # By number, so every window prints in order: "7.11" before "10.0", never "10.0, 7.11".
        user_space=tuple(sorted(user_space, key=lambda v: tuple(int(p) for p in v.split(".")))),
        paired_rocm=_opt_safe(rec, "paired_rocm", "version"),
        provenance=rec.provenance(),
        module_versions=modules,
        module_versions_source=modules_source,
        module_versions_confidence=cast(
            Any, rec.choice("module_versions_confidence", CONFIDENCES, "exact")
        ),
    )


def _gfx(rec: Record) -> GfxTarget:
    name = rec.safe("name", "gfx", rec.text("name"))
    feats = cast(Record, rec.table("features", required=True))
    families = rec.strings("families", required=True)
    for fam in families:
        if fam not in FAMILIES:
            raise rec.fail("families", f"has {fam!r}; expected {', '.join(FAMILIES)}")
    products = tuple(
        GpuProduct(
            name=p.text("name"),
            family=cast(Any, p.choice("family", FAMILIES)),
            pci_device_id=(p.opt_text("pci_device_id") or "").lower() or None,
            pci_revision=(p.opt_text("pci_revision") or "").lower() or None,
            first_rocm=p.opt_text("first_rocm"),
            compute_units=p._get("compute_units", int, False),
            provenance=p.sub_provenance(rec),
        )
        for p in rec.tables("product")
    )
    env_table = rec.table("env")
    env: list[tuple[str, str]] = []
    for key, value in (env_table.data if env_table else {}).items():
        if not isinstance(value, str):
            raise rec.fail(f"env.{key}", "must be a string")
        env.append(
            (rec.safe(f"env.{key}", "env_name", key), rec.safe(f"env.{key}", "env_value", value))
        )
    fp8 = feats.flag("fp8")
    fp8_format = feats.opt_text("fp8_format")
    if fp8 and fp8_format not in ("fnuz", "ocp"):
        raise feats.fail("fp8_format", "must be 'fnuz' or 'ocp' when fp8 = true")
    mx = feats.flag("mx")
    mxfp4 = feats.opt_text("mxfp4") or ("native" if mx else "none")
    if mxfp4 not in MXFP4_SUPPORT:
        raise feats.fail("mxfp4", f"must be one of {', '.join(MXFP4_SUPPORT)}")
    if (mxfp4 == "native") != mx:
        raise feats.fail("mxfp4", "is 'native' exactly when mx = true (native MX compute)")
    mxfp4_src = feats.opt_text("mxfp4_source")
    if mxfp4 == "emulated" and not mxfp4_src:
        raise feats.fail(
            "mxfp4_source", "is required when mxfp4 = 'emulated' (where it says MXFP4 runs)"
        )
    mxfp4_prov = (
        Provenance(
            source=mxfp4_src,
            confidence=cast(Any, feats.choice("mxfp4_confidence", CONFIDENCES, "exact")),
        )
        if mxfp4_src
        else None
    )
    return GfxTarget(
        name=name,
        arch=rec.text("arch"),
        families=cast(Any, families),
        products=products,
        features=FeatureGates(
            aiter=cast(Any, feats.choice("aiter", ("full", "triton-only", "none"))),
            fp8=fp8,
            fp8_format=cast(Any, fp8_format if fp8 else None),
            mx=mx,
            custom_allreduce=feats.flag("custom_allreduce"),
            provenance=feats.provenance(),
            mxfp4=cast(Any, mxfp4),
            mxfp4_provenance=mxfp4_prov,
        ),
        vllm_status=cast(Any, rec.choice("vllm_status", ("official", "buildable", "unsupported"))),
        vllm_note=rec.opt_text("vllm_note") or "",
        override=_opt_safe(rec, "override", "gfx_override"),
        override_target=_opt_safe(rec, "override_target", "gfx"),
        env=tuple(env),
        provenance=rec.provenance(),
        kernel_floors=tuple(_kernel_floor(k, rec) for k in rec.tables("kernel_floor")),
        unified_memory_source=rec.opt_text("unified_memory_source") or "",
        alternative=rec.opt_text("alternative") or "",
        # A route the tool recommends must say who recommends it.
        alternative_source=(
            rec.text("alternative_source")
            if rec.opt_text("alternative")
            else rec.opt_text("alternative_source") or ""
        ),
    )


def _kernel_floor(rec: Record, parent: Record) -> KernelFloor:
    floor = rec.text("min_kernel")
    parts = floor.split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise rec.fail("min_kernel", f"{floor!r} is not a MAJOR.MINOR kernel version")
    return KernelFloor(
        os=rec.text("os"),
        min_kernel=floor,
        flavour=rec.opt_text("flavour") or floor,
        provenance=rec.sub_provenance(parent),
    )


def _pins(rec: Record) -> tuple[ComponentPin, ...]:
    pins_table = rec.table("pins")
    pins: list[ComponentPin] = []
    for component, value in (pins_table.data if pins_table else {}).items():
        where = f"pins.{component}"
        if component not in COMPONENTS:
            raise rec.fail(where, f"is not a known component ({', '.join(COMPONENTS)})")
        if (
            not isinstance(value, dict)
            or set(value) - {"repo", "ref"}
            or not {"repo", "ref"} <= set(value)
        ):
            raise rec.fail(where, 'must be a table { repo = "owner/name", ref = "..." }')
        pins.append(
            ComponentPin(
                component=component,
                repo=rec.safe(f"{where}.repo", "repo", str(value["repo"])),
                ref=rec.safe(f"{where}.ref", "ref", str(value["ref"])),
            )
        )
    return tuple(sorted(pins, key=lambda p: COMPONENTS.index(p.component)))


def _base_image(rec: Record) -> str | None:
    base_image = rec.opt_text("base_image")
    if base_image is not None:
        repo, _, tag = base_image.partition(":")
        rec.safe("base_image", "image_repo", repo)
        rec.safe("base_image", "image_tag", tag)
    return base_image


def _opt_safe(rec: Record, field: str, kind: str) -> str | None:
    value = rec.opt_text(field)
    return rec.safe(field, kind, value) if value else None


def _opt_version(rec: Record, field: str) -> str | None:
    value = rec.opt_text(field)
    return rec.safe(field, "version", value) if value else None


def _stack(st: Record, parent: Record, *, default: bool) -> RocmStack:
    rocm = st.version("rocm", required=False)
    therock = st.opt_text("layout") == "therock-wheels"
    stream = (
        "therock-preview"
        if rocm is not None and rocm.is_prerelease
        else "therock"
        if therock
        else "legacy"
    )
    wheel_index = st.opt_text("wheel_index")
    python = st.opt_text("python")
    return RocmStack(
        variant=st.safe("variant", "image_tag", st.opt_text("variant") or stack_variant(rocm)),
        dockerfile=st.opt_text("dockerfile"),
        default=default,
        layout=cast(Any, st.choice("layout", LAYOUTS, "two-stage-docker")),
        stream=cast(Any, st.choice("stream", STREAMS, stream)),
        base_image=_base_image(st),
        rocm=rocm,
        python=st.safe("python", "version", python) if python else None,
        torch=_opt_version(st, "torch"),
        torchvision=_opt_version(st, "torchvision"),
        torchaudio=_opt_version(st, "torchaudio"),
        arch=st.strings("arch"),
        aiter_arch=st.strings("aiter_arch"),
        fa_arch=st.strings("fa_arch") if "fa_arch" in st.data else None,
        mori_arch=st.strings("mori_arch") if "mori_arch" in st.data else None,
        pins=_pins(st),
        images=tuple(st.safe("images", "image_tag", t) for t in st.strings("images")),
        wheel_index=st.safe("wheel_index", "url", wheel_index) if wheel_index else None,
        provenance=st.sub_provenance(parent),
    )


def _vllm(rec: Record) -> VllmRelease:
    # Two shapes: [[release.stack]] tables (read from an sdist, one per ROCm stack, the default
    # first), or the older single-stack record whose build fields sit on the release itself.
    tables = rec.tables("stack")
    if tables:
        for field_name in ("rocm", "base_image", "layout", "arch", "aiter_arch", "pins", "python"):
            if field_name in rec.data:
                raise rec.fail(
                    field_name, "belongs in a [[release.stack]] table when the release has stacks"
                )
        defaults = [t for t in tables if t.flag("default")]
        if len(defaults) != 1:
            raise rec.fail(
                "stack", f"needs exactly one stack with default = true, not {len(defaults)}"
            )
        ordered = [defaults[0], *(t for t in tables if t is not defaults[0])]
        stacks = tuple(_stack(t, rec, default=t is defaults[0]) for t in ordered)
        _unique(
            stacks,
            lambda s: s.variant,
            "vllm.toml",
            f"stack variant in release {rec.data.get('version')}",
        )
    elif "rocm" in rec.data or "base_image" in rec.data:
        stacks = (_stack(rec, rec, default=True),)
    else:
        stacks = ()
    sha = rec.opt_text("sdist_sha256")
    if sha is not None and not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise rec.fail("sdist_sha256", "must be 64 lower-case hex digits")
    return VllmRelease(
        version=cast(Version, rec.version("version")),
        date=rec.opt_text("date"),
        tag_commit=rec.opt_text("tag_commit"),
        cmake_arch=rec.strings("cmake_arch"),
        stacks=stacks,
        sdist_sha256=sha,
        provenance=rec.provenance(),
    )


def _wheel(rec: Record) -> WheelVariant:
    spec_text = rec.opt_text("vllm")
    try:
        spec = SpecifierSet(spec_text) if spec_text is not None else None
    except ValueError:
        raise rec.fail("vllm", f"{spec_text!r} is not a PEP 440 specifier") from None
    return WheelVariant(
        name=rec.text("name"),
        rocm=cast(Version, rec.version("rocm")),
        python=tuple(rec.safe("python", "python", p) for p in rec.strings("python", required=True)),
        glibc_min=cast(Version, rec.version("glibc_min")),
        vllm=spec,
        includes_nightlies=rec.flag("includes_nightlies"),
        index_url=rec.safe("index_url", "url", rec.text("index_url")),
        status=cast(Any, rec.choice("status", ("release", "nightly", "legacy"))),
        arch=rec.strings("arch"),
        provenance=rec.provenance(),
        uses_host_rocm=rec.flag("uses_host_rocm"),
    )


def _cuda_versions(rec: Record, field: str) -> tuple[Version, ...]:
    out = []
    for text in rec.strings(field):
        try:
            out.append(Version(text))
        except ValueError:
            raise rec.fail(field, f"{text!r} is not a version") from None
    return tuple(out)


def _compute_caps(rec: Record, field: str) -> tuple[str, ...]:
    caps = rec.strings(field)
    for cap in caps:
        if not re.fullmatch(r"\d{1,2}\.\d(\+PTX)?", cap):
            raise rec.fail(field, f"{cap!r} is not a compute capability (e.g. 9.0, 12.0+PTX)")
    return caps


def _cuda_release(rec: Record) -> CudaRelease:
    images = []
    for t in rec.tables("image"):
        images.append(
            CudaImage(
                repo=rec.safe("repo", "image_repo", t.opt_text("repo") or "vllm/vllm-openai"),
                tag=t.safe("tag", "image_tag", t.text("tag")),
                cuda=cast(Version, t.version("cuda")),
                arch=_compute_caps(t, "arch"),
                arch_aarch64=_compute_caps(t, "arch_aarch64"),
                note=t.opt_text("note") or "",
                digest=t.safe("digest", "digest", d) if (d := t.opt_text("digest")) else None,
            )
        )
    sha = rec.opt_text("sdist_sha256")
    if sha is not None and not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise rec.fail("sdist_sha256", "must be 64 lowercase hex digits")
    requires = rec.opt_text("requires_python")
    if requires is not None:
        try:
            SpecifierSet(requires)
        except ValueError:
            raise rec.fail("requires_python", f"{requires!r} is not a PEP 440 specifier") from None
    return CudaRelease(
        version=cast(Version, rec.version("version")),
        cuda=cast(Version, rec.version("cuda")),
        python=_opt_safe(rec, "python", "version"),
        arch=_compute_caps(rec, "arch"),
        images=tuple(images),
        wheel_cuda=rec.version("wheel_cuda", required=False),
        wheel_variants=_cuda_versions(rec, "wheel_variants"),
        requires_python=requires,
        sdist_sha256=sha,
        provenance=rec.provenance(),
    )


def _cuda_rule(rec: Record) -> CudaDriverRule:
    major = rec._get("major", int, True)
    low = rec._get("min_driver", int, True)
    if not 1 <= major <= 99 or not 100 <= low <= 9999:
        raise rec.fail(
            "major", "and min_driver must be a CUDA major (12) and a driver branch (525)"
        )
    return CudaDriverRule(major=major, min_driver=low, provenance=rec.provenance())


def _nvidia_gpu(rec: Record) -> NvidiaGpu:
    ids = rec.strings("pci_device_ids", required=True)
    for i in ids:
        if not re.fullmatch(r"[0-9a-f]{4}", i):
            raise rec.fail("pci_device_ids", f"{i!r} is not four lowercase hex digits")
    cap = rec.text("compute_capability")
    if not re.fullmatch(r"\d{1,2}\.\d", cap):
        raise rec.fail("compute_capability", f"{cap!r} is not a compute capability (e.g. 9.0)")
    return NvidiaGpu(
        name=rec.text("name"),
        compute_capability=cap,
        pci_device_ids=ids,
        provenance=rec.provenance(),
    )


def _isa(rec: Record) -> AmdgpuIsa:
    name = rec.text("name")
    if not re.fullmatch(r"gfx[0-9a-f]{3,4}|gfx[0-9]{1,2}(-[0-9])?-generic", name):
        raise rec.fail("name", f"{name!r} is not an AMDGPU processor name")
    mach = rec._get("mach", int, True)
    if not 1 <= mach <= 0xFF:
        raise rec.fail("mach", "must be an EF_AMDGPU_MACH value (1-255)")
    return AmdgpuIsa(
        name=name, mach=mach, covers=rec.strings("covers"), provenance=rec.provenance()
    )


def _kernel_tables(rec: Record) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    tables = rec.table("rocm_kernels")
    if tables is None:
        return None
    out = []
    for fmt in tables.data:
        if not re.fullmatch(r"[a-z0-9_]{1,32}", fmt):
            raise rec.fail("rocm_kernels", f"{fmt!r} is not a kernel format name")
        names = tables.strings(fmt)
        for name in names:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,99}", name):
                raise rec.fail("rocm_kernels", f"{name!r} is not a kernel class name")
        out.append((fmt, names))
    return tuple(out)


def _capabilities(rec: Record) -> ReleaseCapabilities:
    methods = rec.strings("quantization", required=True)
    for method in methods:
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", method):
            raise rec.fail("quantization", f"{method!r} is not a quantization method name")
    sha = rec.opt_text("sdist_sha256")
    if sha is not None and not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise rec.fail("sdist_sha256", "must be 64 lowercase hex digits")
    dtypes = rec.strings("kv_cache_dtypes")
    for dtype in dtypes:
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", dtype):
            raise rec.fail("kv_cache_dtypes", f"{dtype!r} is not a KV cache dtype name")
    return ReleaseCapabilities(
        version=cast(Version, rec.version("version")),
        quantization=methods,
        kv_cache_dtypes=dtypes,
        fp8=rec.strings("fp8") if "fp8" in rec.data else None,
        fp8_fnuz=rec.strings("fp8_fnuz") if "fp8_fnuz" in rec.data else None,
        mx=rec.strings("mx") if "mx" in rec.data else None,
        custom_allreduce=rec.strings("custom_allreduce")
        if "custom_allreduce" in rec.data
        else None,
        fp8_scaled_mm=rec.strings("fp8_scaled_mm") if "fp8_scaled_mm" in rec.data else None,
        rocm_kernels=_kernel_tables(rec),
        sdist_sha256=sha,
        provenance=rec.provenance(),
    )


def _image(rec: Record) -> ContainerImage:
    digest = rec.opt_text("digest")
    if digest is not None:
        rec.safe("digest", "digest", digest)
    return ContainerImage(
        repo=rec.safe("repo", "image_repo", rec.text("repo")),
        tag=rec.safe("tag", "image_tag", rec.text("tag")),
        digest=digest,
        rocm=rec.version("rocm", required=False),
        stream=cast(Any, rec.choice("stream", STREAMS, "legacy")),
        vllm=rec.version("vllm", required=False),
        python=_opt_safe(rec, "python", "version"),
        torch=rec.opt_text("torch"),
        arch=rec.strings("arch"),
        family_tag=rec.opt_text("family_tag"),
        entrypoint=cast(Any, rec.choice("entrypoint", ("vllm-serve", "shell"))),
        deprecated=rec.flag("deprecated"),
        provenance=rec.provenance(),
        stack=rec.safe("stack", "image_tag", rec.text("stack")) if "stack" in rec.data else None,
    )


def _example(rec: Record) -> ExampleNode:
    return ExampleNode(
        name=rec.text("name"),
        description=rec.text("description"),
        gfx=rec.strings("gfx", required=True),
        gpus=_positive_int(rec, "gpus"),
        product=rec.text("product"),
        driver=rec.opt_text("driver"),
        os=rec.opt_text("os"),
        python=_opt_safe(rec, "python", "version"),
        rocm=rec.opt_text("rocm"),
        provenance=rec.provenance(),
    )


def _positive_int(rec: Record, field: str) -> int:
    value = rec.data.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise rec.fail(field, "must be a whole number >= 1")
    return value


def _build(records: list[Record], builder: Callable[[Record], T]) -> tuple[T, ...]:
    return tuple(builder(r) for r in records)


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


def load_dir(directory: Path, extra: Mapping[str, list[dict[str, Any]]] | None = None) -> Matrix:
    """Read and check every data file in ``directory``, with ``extra`` records (the refreshed-data
    overlay, by file name) laid over them by key."""

    return _from_raw(_read_all(directory, extra))


_KEYS: dict[str, str] = {
    "rocm.toml": "release",
    "os.toml": "os",
    "drivers.toml": "driver",
    "gfx.toml": "gfx",
    "vllm.toml": "release",
    "wheels.toml": "variant",
    "images.toml": "image",
    "nodes.toml": "example",
    "cuda.toml": "release",
    "nvidia.toml": "cuda",
    "nvidia-gpus.toml": "gpu",
    "amdgpu-isa.toml": "isa",
    "capabilities.toml": "release",
}


def _read_all(
    directory: Path, extra: Mapping[str, list[dict[str, Any]]] | None
) -> dict[str, list[Any]]:
    return {name: _read(directory, name, key, extra) for name, key in _KEYS.items()}


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


def _from_raw(raw: Mapping[str, list[Any]]) -> Matrix:
    """Build and check the matrix from raw tables (the TOML files, with the overlay's records)."""

    def recs(name: str) -> list[Record]:
        return _records(name, _KEYS[name], raw[name])

    m = Matrix(
        rocm=_build(recs("rocm.toml"), _rocm),
        os=_build(recs("os.toml"), _os),
        drivers=_build(recs("drivers.toml"), _driver),
        gfx=_build(recs("gfx.toml"), _gfx),
        vllm=one_record_per_commit(_build(recs("vllm.toml"), _vllm)),
        wheels=_build(recs("wheels.toml"), _wheel),
        images=_build(recs("images.toml"), _image),
        examples=_build(recs("nodes.toml"), _example),
        cuda=_build(recs("cuda.toml"), _cuda_release),
        nvidia=_build(recs("nvidia.toml"), _cuda_rule),
        nvidia_gpus=_build(recs("nvidia-gpus.toml"), _nvidia_gpu),
        isa=_build(recs("amdgpu-isa.toml"), _isa),
        capabilities=_build(recs("capabilities.toml"), _capabilities),
    )
    check_invariants(m)
    return m


def _compiled_path(directory: Path, overlay_stamp: tuple[str, int, int] | None) -> Path | None:
    """Where the checked matrix for exactly these files is kept between runs.

    Parsing ~240 KB of TOML and checking it costs more than the rest of a `check`; the key is
    the sha256 of the tool version, the data directory and every data file's content (and the
    overlay's), so any edit or refresh makes a new entry, and an entry is never taken for data it
    was not built from. None when a file is missing (``load_dir`` then says which)."""
    from resolver import __version__

    h = hashlib.sha256(f"{__version__}|{directory}".encode())
    # The builders are part of the key: an entry written by an older shape of them is not read
    # back (a development checkout changes them without a new version).
    code = [Path(__file__), Path(__file__).with_name("model.py")]
    files = [*(directory / name for name in resources.MATRIX_FILES), *code]
    if overlay_stamp is not None:
        files.append(Path(overlay_stamp[0]))
    for path in files:
        try:
            content = bounded.read_bytes(path, _MAX_COMPILED)
        except OSError:
            return None
        h.update(f"|{path.name}:{len(content)}|".encode())
        h.update(content)
    return resources.cache_dir() / "matrix" / f"{h.hexdigest()[:32]}.msgpack"


_COMPILED_FORMAT = 3  # 3: the checked records as msgpack (2: the raw tables as JSON)
_MAX_COMPILED = 32 * bounded.MiB
_KEY_NAME = "compiled-cache.key"


def _seal_key() -> bytes | None:
    """The secret that seals compiled entries, kept in the data dir (not the cache dir: a shared
    or CI-restored cache holds no key, so an entry written elsewhere is never trusted). Created
    on first use, mode 0600; None when it can be neither read nor made (then no cache)."""
    from resolver.data import overlay

    path = overlay.data_dir() / _KEY_NAME
    for _ in range(2):
        try:
            key = bounded.read_bytes(path, 64)
            return key if len(key) == 32 else None
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    os.write(fd, os.urandom(32))
                finally:
                    os.close(fd)
        except OSError:
            return None
    return None


def _seal(key: bytes, payload: bytes) -> str:
    import hmac

    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def _codec_hooks() -> tuple[Any, Any]:
    """Versions and specifiers travel as their text and are parsed back into their types."""
    from packaging.specifiers import SpecifierSet

    def enc(obj: Any) -> Any:
        if isinstance(obj, Version | SpecifierSet):
            return str(obj)
        raise NotImplementedError(f"no encoding for {type(obj).__name__}")

    def dec(kind: type, obj: Any) -> Any:
        if kind is Version or kind is SpecifierSet:
            return kind(obj)
        raise NotImplementedError(f"no decoding for {kind.__name__}")

    return enc, dec


def _read_compiled(path: Path) -> Matrix | None:
    """The matrix from a cache entry, or None (missing, damaged, unsealed, or not of the record
    types).

    An entry is its seal (an HMAC of the rest, ``_seal_key``), a line break, then the checked
    ``Matrix`` as msgpack (never a pickle: a crafted file must not run code). An entry whose seal
    does not match was not written by this user's tool for these files (an edited entry could
    point every printed command at another image repository) and is a miss. A sealed entry holds
    records this tool built and checked from exactly these files (the key covers them and the
    builders' code), so it is decoded straight into the typed records: msgspec checks every
    field against its declared type, and nothing is parsed or checked twice."""
    key = _seal_key()
    if key is None:
        return None
    try:
        blob = bounded.read_bytes(path, _MAX_COMPILED)
    except OSError:
        return None
    seal, sep, payload = blob.partition(b"\n")
    import hmac

    if not sep or not hmac.compare_digest(seal, _seal(key, payload).encode()):
        return None
    import msgspec

    _, dec = _codec_hooks()
    try:
        fmt, m = msgspec.msgpack.decode(payload, type=tuple[int, Matrix], dec_hook=dec)
    except (msgspec.DecodeError, ValueError, TypeError, RecursionError):
        return None  # the data files are read again; their own errors name file and field
    return m if fmt == _COMPILED_FORMAT else None


def _write_compiled(path: Path, m: Matrix) -> None:
    """Best effort: a read-only or full cache dir only costs speed."""
    key = _seal_key()
    if key is None:
        return
    import msgspec

    enc, _ = _codec_hooks()
    with contextlib.suppress(OSError, ValueError, TypeError, NotImplementedError):
        payload = msgspec.msgpack.encode((_COMPILED_FORMAT, m), enc_hook=enc)
        atomic.write_atomic(path, _seal(key, payload).encode() + b"\n" + payload)


@functools.cache
def _load_cached(directory: str, overlay_stamp: tuple[str, int, int] | None) -> Matrix:
    from resolver.data import overlay

    compiled = _compiled_path(Path(directory), overlay_stamp)
    if compiled is not None and (m := _read_compiled(compiled)) is not None:
        return m
    extra = overlay.read(Path(overlay_stamp[0])) if overlay_stamp else None
    m = _from_raw(_read_all(Path(directory), extra))
    if compiled is not None:
        _write_compiled(compiled, m)
    return m


def load() -> Matrix:
    """The matrix in use: the embedded data with the refreshed-data overlay (if any) over it.

    Read once per process; a new overlay on disk (``matrix refresh --write``) is picked up."""
    from resolver.data import overlay

    return _load_cached(str(resources.matrix_dir()), overlay.stamp())
