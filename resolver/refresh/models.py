"""What each vLLM release offers a model, read from its sdist (issue 37).

Per release, into ``models.toml``:

- the model registry (``vllm/model_executor/models/registry.py``; ``models/__init__.py`` before
  0.6.3): every dict ``_VLLM_MODELS`` (``_MODELS``) spreads, by kind, kept as what changed since
  the previous release (``added``/``removed``), so the full list per release is derived, not
  stored 60 times over;
- the ROCm model limits the release states: ``_ROCM_UNSUPPORTED_MODELS`` and
  ``_ROCM_PARTIALLY_SUPPORTED_MODELS`` with their reasons (registry.py, or vllm/platforms/rocm.py);
- the ``gpu_memory_utilization`` default (``EngineArgs`` in vllm/engine/arg_utils.py, followed to
  ``CacheConfig`` where it refers there);
- per ROCm attention backend (the ones ``capabilities.rocm_backends`` finds), what its class
  states plainly: head sizes, MLA, sparse, sinks, sliding window, attention types, a GPU gate.

Every file is parsed with ``ast``, never run; a construct not understood claims nothing.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Final

from resolver.refresh import capabilities as caps
from resolver.refresh.common import Candidate, SourceResult
from resolver.refresh.sdist import IndexFile, ReleaseFactsSource

REGISTRY_FILES: Final = (
    "vllm/model_executor/models/registry.py",
    "vllm/model_executor/models/__init__.py",  # before 0.6.3
)
ARG_UTILS: Final = "vllm/engine/arg_utils.py"
CACHE_FILES: Final = ("vllm/config/cache.py", "vllm/config.py")
MLA_FILES: Final = "vllm/model_executor/layers/attention/(mla_attention|sparse_mla_attention)\\.py"
WANTED: Final = re.compile(
    r"vllm/model_executor/models/(registry|__init__)\.py"
    r"|vllm/engine/arg_utils\.py|vllm/config/cache\.py|vllm/config\.py"
    rf"|{MLA_FILES}|{caps.WANTED.pattern}"
)
_ARCH: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
_AGGREGATES: Final = ("_VLLM_MODELS", "_MODELS")
_REASON_MAX: Final = 600
# 0.6.0-0.6.2 call the text-generation dict _GENERATION_MODELS: one name, so no false churn
_KIND_NAMES: Final = {"generation": "text_generation"}
_GATE: Final = re.compile(r"[A-Za-z0-9_ ().,<>=!]{1,120}")


class _NotRead(Exception):
    """A construct this reader does not evaluate: the fact is not claimed."""


def _assigns(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level ``NAME = value`` and ``NAME: T = value``, the last one winning."""
    out: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target: ast.expr = stmt.targets[0]
            value: ast.expr | None = stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        else:
            continue
        if isinstance(target, ast.Name) and value is not None:
            out[target.id] = value
    return out


def _entries(
    value: ast.expr, names: dict[str, ast.expr], depth: int = 0
) -> list[tuple[str, tuple[str, ...]]]:
    """A registry dict's (architecture, (module, class)) entries: a dict literal, ``**``
    spreads of other module dicts, and the one comprehension vLLM writes there (``{k: (mod,
    arch) for k, (mod, arch) in _X.items() if arch == "Y"}``: 0.6.5 to 0.10.0)."""
    if depth > 5:
        raise _NotRead
    if isinstance(value, ast.DictComp):
        return _comprehension(value, names, depth)
    if not isinstance(value, ast.Dict):
        raise _NotRead
    out: list[tuple[str, tuple[str, ...]]] = []
    for key, item in zip(value.keys, value.values, strict=True):
        if key is None:  # **spread
            inner = names.get(item.id) if isinstance(item, ast.Name) else item
            if inner is None:
                raise _NotRead
            out += _entries(inner, names, depth + 1)
        elif isinstance(key, ast.Constant) and isinstance(key.value, str):
            if not _ARCH.fullmatch(key.value):
                raise _NotRead
            parts = item.elts if isinstance(item, ast.Tuple) else []
            out.append((key.value, tuple(str(getattr(p, "value", "")) for p in parts)))
        else:
            raise _NotRead
    return out


def _comprehension(
    comp: ast.DictComp, names: dict[str, ast.expr], depth: int
) -> list[tuple[str, tuple[str, ...]]]:
    if len(comp.generators) != 1:
        raise _NotRead
    gen = comp.generators[0]
    source = gen.iter
    if not (
        isinstance(source, ast.Call)
        and isinstance(source.func, ast.Attribute)
        and source.func.attr == "items"
        and isinstance(source.func.value, ast.Name)
        and source.func.value.id in names
        and isinstance(gen.target, ast.Tuple)
        and len(gen.target.elts) == 2
        and isinstance(gen.target.elts[0], ast.Name)
        and isinstance(comp.key, ast.Name)
        and comp.key.id == gen.target.elts[0].id
    ):
        raise _NotRead
    inner = gen.target.elts[1]
    fields = (
        [e.id if isinstance(e, ast.Name) else "" for e in inner.elts]
        if isinstance(inner, ast.Tuple)
        else []
    )
    conditions = []
    for test in gen.ifs:  # only ``field == "literal"``
        if not (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id in fields
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant)
        ):
            raise _NotRead
        conditions.append((fields.index(test.left.id), test.comparators[0].value))
    rows = _entries(names[source.func.value.id], names, depth + 1)
    return [(k, v) for k, v in rows if all(i < len(v) and v[i] == want for i, want in conditions)]


def _dict_keys(value: ast.expr, names: dict[str, ast.expr]) -> list[str]:
    return [k for k, _ in _entries(value, names)]


def registry(files: dict[str, str]) -> tuple[dict[str, list[str]], str] | None:
    """Per kind (``text_generation``, ``multimodal``, ...: the dict's name without ``_`` and
    ``_MODELS``), the architectures the release's registry lists, with the file read; None
    when no registry file has a plain aggregate of dict literals."""
    for path in REGISTRY_FILES:
        try:
            tree = ast.parse(files.get(path, ""))
        except (SyntaxError, ValueError, RecursionError):
            return None
        names = _assigns(tree)
        agg = next((names[a] for a in _AGGREGATES if a in names), None)
        if not isinstance(agg, ast.Dict):
            continue
        out: dict[str, list[str]] = {}
        try:
            for key, item in zip(agg.keys, agg.values, strict=True):
                if key is not None or not isinstance(item, ast.Name) or item.id not in names:
                    raise _NotRead  # a literal entry in the aggregate: no kind to file it under
                kind = item.id.strip("_").lower().removesuffix("_models")
                kind = _KIND_NAMES.get(kind, kind)
                out.setdefault(kind, [])
                out[kind] += _dict_keys(names[item.id], names)
        except _NotRead:
            return None
        return {k: sorted(set(v)) for k, v in out.items()}, path
    return None


def _text(value: ast.expr | None, names: dict[str, ast.expr], depth: int = 0) -> str:
    """A string literal, a module constant naming one, or their ``+`` (implicit concatenation
    is one literal already)."""
    if depth > 5 or value is None:
        raise _NotRead
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    if isinstance(value, ast.Name):
        return _text(names.get(value.id), names, depth + 1)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return _text(value.left, names, depth + 1) + _text(value.right, names, depth + 1)
    raise _NotRead


def rocm_limits(
    files: dict[str, str],
) -> tuple[list[str], dict[str, str], str] | None:
    """(``_ROCM_UNSUPPORTED_MODELS``, ``_ROCM_PARTIALLY_SUPPORTED_MODELS`` with each reason,
    the file read) from the first of the registry or the ROCm platform that states them."""
    for path in (*REGISTRY_FILES, caps.FILE):
        try:
            names = _assigns(ast.parse(files.get(path, "")))
        except (SyntaxError, ValueError, RecursionError):
            return None
        if "_ROCM_UNSUPPORTED_MODELS" not in names and (
            "_ROCM_PARTIALLY_SUPPORTED_MODELS" not in names
        ):
            continue
        try:
            unsupported = names.get("_ROCM_UNSUPPORTED_MODELS", ast.List(elts=[]))
            if not isinstance(unsupported, ast.List | ast.Tuple | ast.Set):
                raise _NotRead
            listed = [_text(e, names) for e in unsupported.elts]
            partial_node = names.get("_ROCM_PARTIALLY_SUPPORTED_MODELS", ast.Dict([], []))
            if not isinstance(partial_node, ast.Dict):
                raise _NotRead
            partial: dict[str, str] = {}
            for key, reason in zip(partial_node.keys, partial_node.values, strict=True):
                name = _text(key, names)
                partial[name] = " ".join(_text(reason, names).split())[:_REASON_MAX]
        except _NotRead:
            return None
        if not all(_ARCH.fullmatch(n) for n in [*listed, *partial]):
            return None
        return sorted(set(listed)), dict(sorted(partial.items())), path
    return None


def _class_field(tree: ast.Module, cls: str, field: str) -> ast.expr | None:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.target.id == field
                ):
                    return stmt.value
    return None


def _float_default(value: ast.expr | None) -> str | None:
    """``0.9`` or ``Field(default=0.92, ...)``, as written (a float in (0, 1])."""
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "Field"
    ):
        value = next((k.value for k in value.keywords if k.arg == "default"), None)
    if isinstance(value, ast.Constant) and isinstance(value.value, float) and 0 < value.value <= 1:
        return repr(value.value)
    return None


def gpu_memory_utilization(files: dict[str, str]) -> tuple[str, str] | None:
    """The ``gpu_memory_utilization`` a plain ``vllm serve`` runs with, and where it is read:
    ``EngineArgs``' default, followed to ``CacheConfig`` where it says
    ``CacheConfig.gpu_memory_utilization`` (0.8.5 on)."""
    try:
        engine = ast.parse(files.get(ARG_UTILS, ""))
    except (SyntaxError, ValueError, RecursionError):
        return None
    value = _class_field(engine, "EngineArgs", "gpu_memory_utilization")
    found = _float_default(value)
    if found is not None:
        return found, f"{ARG_UTILS} (EngineArgs.gpu_memory_utilization)"
    if not (
        isinstance(value, ast.Attribute)
        and isinstance(value.value, ast.Name)
        and value.value.id == "CacheConfig"
    ):
        return None
    for path in CACHE_FILES:
        try:
            tree = ast.parse(files.get(path, ""))
        except (SyntaxError, ValueError, RecursionError):
            return None
        found = _float_default(_class_field(tree, "CacheConfig", value.attr))
        if found is not None:
            return found, f"{ARG_UTILS} (EngineArgs) -> {path} (CacheConfig.{value.attr})"
    return None


# --- the ROCm attention backends ----------------------------------------------------------------

# record field -> the AttentionBackend classmethod whose plain ``return True/False`` it records
_FLAGS: Final = {
    "mla": "is_mla",
    "sparse": "is_sparse",
    "sink": "supports_sink",
    "sliding_window": "supports_sliding_window",
}


def _method(classes: list[ast.ClassDef], name: str) -> tuple[ast.ClassDef, ast.FunctionDef]:
    """The class that defines ``name`` first in the MRO, and its definition."""
    for cls in classes:
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                return cls, stmt
    raise _NotRead  # the release's backend API has no such method


def _returned(method: ast.FunctionDef) -> ast.expr:
    """The expression of a method whose body is one ``return`` (docstrings aside)."""
    body = [s for s in method.body if not isinstance(s, ast.Expr)]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        raise _NotRead
    return body[0].value


def _flag(classes: list[ast.ClassDef], name: str) -> bool:
    value = _returned(_method(classes, name)[1])
    if isinstance(value, ast.Constant) and isinstance(value.value, bool):
        return value.value
    raise _NotRead


def _head_sizes(classes: list[ast.ClassDef]) -> dict[str, Any]:
    """``head_sizes`` (empty: any) from ``get_supported_head_sizes`` where the base's
    ``supports_head_size`` reads it, or ``head_size_min`` from an override
    ``return head_size >= N``."""
    owner, method = _method(classes, "supports_head_size")
    if owner.name != caps._BASE_BACKEND:
        value = _returned(method)
        arg = method.args.args[-1].arg if method.args.args else ""
        if (
            isinstance(value, ast.Compare)
            and isinstance(value.left, ast.Name)
            and value.left.id == arg
            and len(value.ops) == 1
            and isinstance(value.ops[0], ast.GtE)
            and isinstance(value.comparators[0], ast.Constant)
            and type(value.comparators[0].value) is int
        ):
            return {"head_size_min": value.comparators[0].value}
        raise _NotRead
    listed = _returned(_method(classes, "get_supported_head_sizes")[1])
    if not isinstance(listed, ast.List):
        raise _NotRead
    sizes = [e.value for e in listed.elts if isinstance(e, ast.Constant) and type(e.value) is int]
    if len(sizes) != len(listed.elts) or not all(0 < s < 10_000 for s in sizes):
        raise _NotRead
    return {"head_sizes": [str(s) for s in sorted(set(sizes))]}


def _attn_types(classes: list[ast.ClassDef], enum: dict[str, str]) -> list[str]:
    """What ``supports_attn_type`` admits: ``attn_type == AttentionType.X`` or ``attn_type in
    (AttentionType.X, ...)``, each member as the enum's value ("decoder", "encoder_decoder")."""
    method = _method(classes, "supports_attn_type")[1]
    value = _returned(method)
    arg = method.args.args[-1].arg if method.args.args else ""
    if not (
        isinstance(value, ast.Compare)
        and isinstance(value.left, ast.Name)
        and value.left.id == arg
        and len(value.ops) == 1
    ):
        raise _NotRead
    op, right = value.ops[0], value.comparators[0]
    if isinstance(op, ast.Eq):
        members = [right]
    elif isinstance(op, ast.In) and isinstance(right, ast.Tuple | ast.List | ast.Set):
        members = list(right.elts)
    else:
        raise _NotRead
    out = []
    for m in members:
        if not (isinstance(m, ast.Attribute) and m.attr in enum):
            raise _NotRead
        out.append(enum[m.attr])
    return list(dict.fromkeys(out))


def _gate(classes: list[ast.ClassDef]) -> str:
    """``supports_compute_capability`` as written: "" where it admits every GPU (``return
    True``), else its return expression verbatim (not evaluated per gfx here)."""
    method = _method(classes, "supports_compute_capability")[1]
    body = [s for s in method.body if not isinstance(s, ast.Expr | ast.ImportFrom)]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        raise _NotRead
    value = body[0].value
    if isinstance(value, ast.Constant) and value.value is True:
        return ""
    text = ast.unparse(value)
    if not _GATE.fullmatch(text):
        raise _NotRead
    return text


def _attention_enum(backends: caps._Backends) -> dict[str, str]:
    """``AttentionType``'s members and values (vllm/v1/attention/backend.py)."""
    try:
        _, cls = backends._class("vllm/v1/attention/backend.py", "AttentionType")
    except (caps._Unknown, SyntaxError, ValueError, RecursionError):
        return {}
    return {
        stmt.targets[0].id: stmt.value.value
        for stmt in cls.body
        if isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
        and re.fullmatch(r"[a-z_]{1,32}", stmt.value.value)
    }


def attention_traits(files: dict[str, str]) -> list[dict[str, Any]] | None:
    """One table per ROCm attention backend with each trait its class states plainly (a trait
    not stated plainly is left out: unknown); None before 0.18.0's validated selection."""
    found = caps.rocm_backends(files)
    if found is None:
        return None
    backends = caps._Backends(files, [])
    enum = _attention_enum(backends)
    out: list[dict[str, Any]] = []
    for name, (path, cls_name) in found.items():
        # Each table names the file and class it was read from (the record's sdist is prefixed
        # where the record is assembled): every fact names its source.
        where = {"source": f"{path} ({cls_name} and its bases)"}
        try:
            classes = list(backends._mro(path, cls_name))
        except (caps._Unknown, SyntaxError, ValueError, RecursionError):
            out.append({"name": name, **where})  # its class is not readable: nothing known
            continue
        out.append({**_traits(name, classes, enum), **where})
    return out


def _traits(name: str, classes: list[ast.ClassDef], enum: dict[str, str]) -> dict[str, Any]:
    """One backend's table: each trait its classes state plainly, the rest left out."""
    rec: dict[str, Any] = {"name": name}
    readers: list[tuple[str, Any]] = [
        ("head", lambda: _head_sizes(classes)),
        *((f, lambda m=m: _flag(classes, m)) for f, m in _FLAGS.items()),
        ("attn_types", lambda: _attn_types(classes, enum)),
        ("gfx_gate", lambda: _gate(classes)),
    ]
    for field, read in readers:
        try:
            value = read()
        except (_NotRead, caps._Unknown):
            continue
        if field == "head":
            rec.update(value)
        else:
            rec[field] = value
    return rec


# --- the record --------------------------------------------------------------------------------


def release_facts(files: dict[str, str]) -> tuple[dict[str, Any], dict[str, list[str]] | None]:
    """The record's fields from one release's files, except the registry delta; and the
    registry by kind (None: not read)."""
    record: dict[str, Any] = {}
    read: list[str] = []
    reg = registry(files)
    if reg is not None:
        read.append(f"{reg[1]} (the model registry)")
    limits = rocm_limits(files)
    if limits is not None:
        unsupported, partial, where = limits
        record["rocm_unsupported"] = unsupported
        if partial:
            record["rocm_partial"] = partial
        read.append(f"{where} (_ROCM_UNSUPPORTED_MODELS, _ROCM_PARTIALLY_SUPPORTED_MODELS)")
    gmu = gpu_memory_utilization(files)
    if gmu is not None:
        record["gpu_memory_utilization"] = gmu[0]
        read.append(gmu[1])
    backends = attention_traits(files)
    if backends is not None:
        record["backend"] = backends
        read.append(f"{caps.FILE} ({caps.PRIORITIES}) with {caps.REGISTRY} and each backend class")
    record["_read"] = read
    return record, reg[0] if reg is not None else None


def delta(
    before: dict[str, set[str]] | None, now: dict[str, list[str]]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(added, removed) by kind from the release before (None: this is the first) to now."""
    base = before or {}
    added = {k: sorted(set(v) - base.get(k, set())) for k, v in now.items()}
    removed = {k: sorted(base[k] - set(now.get(k, ()))) for k in base}
    return {k: v for k, v in added.items() if v}, {k: v for k, v in removed.items() if v}


def cumulative(records: list[dict[str, Any]]) -> dict[str, dict[str, set[str]]]:
    """The registry by kind at each release, from raw records in version order."""
    from packaging.version import Version

    out: dict[str, dict[str, set[str]]] = {}
    have: dict[str, set[str]] = {}
    for rec in sorted(records, key=lambda r: Version(str(r.get("version")))):
        if "added" not in rec and "removed" not in rec and not rec.get("registry_read"):
            continue
        have = {k: set(v) for k, v in have.items()}
        for kind, names in dict(rec.get("removed", {})).items():
            have[kind] = have.get(kind, set()) - set(names)
        for kind, names in dict(rec.get("added", {})).items():
            have.setdefault(kind, set()).update(names)
        out[str(rec.get("version"))] = {k: v for k, v in have.items() if v}
    return out


def model_record(
    sdist: IndexFile, files: dict[str, str], before: dict[str, set[str]] | None
) -> tuple[dict[str, Any] | None, dict[str, list[str]] | None, str]:
    """(models.toml record, the registry by kind, why None)."""
    facts, reg = release_facts(files)
    read = facts.pop("_read")
    if not read:
        return None, None, "the sdist states none of the model facts read"
    record: dict[str, Any] = {"version": str(sdist.version)}
    if reg is not None:
        added, removed = delta(before, reg)
        record["registry_read"] = True
        if added:
            record["added"] = added
        if removed:
            record["removed"] = removed
    record.update(facts)
    where = (
        f"PyPI wheel {sdist.filename} sha256 {sdist.sha256}"
        if sdist.filename.endswith(".whl")
        else f"vllm {sdist.version} sdist sha256:{sdist.sha256[:12]}"
    )
    if not sdist.filename.endswith(".whl"):
        record["sdist_sha256"] = sdist.sha256
    record["source"] = f"{where} " + ", ".join(read)
    for table in record.get("backend") or ():
        table["source"] = f"{where} {table['source']}"
    return record, reg, ""


class ModelsSource(ReleaseFactsSource):
    """``matrix refresh --source models``: one ``models.toml`` record per release the data
    knows. The registry is kept as a delta, so once any release is read every later one is read
    again too (from the sdist cache): its delta is against the release before it."""

    name = "models"
    table = "models.toml"
    wanted = WANTED
    cache_tag = "models-1"

    def _wanted(self, listed: list[IndexFile]) -> list[IndexFile]:
        chosen = super()._wanted(listed)
        if not chosen:
            return chosen
        first = min(f.version for f in chosen)
        known = self.known_releases()
        return [f for f in listed if f.version >= first and f.version in known] or chosen

    def read(self) -> SourceResult:
        from packaging.version import Version

        result = SourceResult(self.name)
        have = cumulative(list(self.current.get(self.table, [])))
        sets: dict[Version, dict[str, set[str]]] = {Version(k): v for k, v in have.items()}
        for sdist, files in self.releases(result):
            older = [v for v in sets if v < sdist.version]
            before = sets[max(older)] if older else None
            record, reg, why = model_record(sdist, files, before)
            if record is None:
                result.refuse(f"vllm {sdist.version} sdist", why)
                continue
            if reg is not None:
                sets[sdist.version] = {k: set(v) for k, v in reg.items()}
            result.candidates.append(Candidate(self.table, str(sdist.version), record))
        return result
