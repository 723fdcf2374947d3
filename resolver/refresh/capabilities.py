"""What each vLLM release's ROCm platform accepts, read from its sdist (issue 20).

``vllm/platforms/rocm.py`` declares ``RocmPlatform.supported_quantization``: the quantization
methods vLLM lets run on ROCm in that release. It changes between releases (``bitsandbytes``
left in 0.28.0, ``modelopt_mxfp8`` arrived in 0.21.0), so a list kept in code is wrong for some
release; this source reads the list itself, with Python's own parser (the file is never run),
into one ``capabilities.toml`` record per release.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any, Final

from resolver.refresh.common import Candidate, SourceResult
from resolver.refresh.http import IntegrityError
from resolver.refresh.sdist import (
    MAX_FILES,
    MAX_MEMBER_BYTES,
    PEP691,
    PROJECT,
    ArchiveError,
    IndexFile,
    ReleaseFactsSource,
)

WANTED: Final = re.compile(
    r"vllm/platforms/rocm\.py|vllm/config/cache\.py|vllm/config\.py"
    r"|vllm/model_executor/kernels/linear/scaled_mm/pytorch\.py"
    r"|vllm/model_executor/kernels/linear/__init__\.py"
    # the attention backends and the registry that names their classes (issue 34)
    r"|vllm/v1/attention/backend\.py|vllm/v1/attention/backends/(mla/)?"
    r"(registry|rocm_[a-z0-9_]{1,64}|triton_[a-z0-9_]{1,64}|aiter_[a-z0-9_]{1,64}"
    r"|turboquant_attn|ultraquant_attn)\.py"
    r"|vllm/models/[a-z0-9_]{1,64}/(amd/rocm|sparse_mla)\.py"  # model-picked ROCm backends
)
# The kernel lists vLLM picks a linear kernel from, per format and platform (_POSSIBLE_*_KERNELS).
KERNELS: Final = "vllm/model_executor/kernels/linear/__init__.py"
_KERNEL_TABLE: Final = re.compile(r"_POSSIBLE_([A-Z0-9_]+)_KERNELS")
_CLASS: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
FILE: Final = "vllm/platforms/rocm.py"
# Where torch's FP8 scaled-MM (the FP8 GEMM every GPU without AITER uses) is gated on ROCm.
SCALED_MM: Final = (
    "vllm/model_executor/kernels/linear/scaled_mm/pytorch.py",
    "_rocm_torch_fp8_scaled_mm_supported",
)
CACHE_FILES: Final = ("vllm/config/cache.py", "vllm/config.py")  # where CacheDType is defined
_METHOD: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def supported_quantization(text: str) -> list[str] | None:
    """The string list assigned to ``supported_quantization`` in the ROCm platform class, or
    None when the file has no such literal list (then nothing is claimed)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            target = (
                stmt.target
                if isinstance(stmt, ast.AnnAssign)
                else stmt.targets[0]
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                else None
            )
            if not (isinstance(target, ast.Name) and target.id == "supported_quantization"):
                continue
            value = stmt.value if isinstance(stmt, ast.AnnAssign | ast.Assign) else None
            if not isinstance(value, ast.List):
                return None
            out = []
            for element in value.elts:
                if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
                    return None
                if not _METHOD.fullmatch(element.value):
                    return None  # nothing a method name could be: the list is not trusted
                out.append(element.value)
            return list(dict.fromkeys(out))
    return None


def rocm_kernels(text: str) -> dict[str, list[str]] | None:
    """Per format (``mxfp8``, ``fp8``, ``wfp8a16``, ...), the kernel classes of the
    ``PlatformEnum.ROCM`` entry of each ``_POSSIBLE_<FORMAT>_KERNELS`` table, in vLLM's order
    (an empty list is a format with no ROCm kernel); None when the file has no such table."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    out: dict[str, list[str]] = {}
    for stmt in tree.body:
        target = (
            stmt.target
            if isinstance(stmt, ast.AnnAssign)
            else (
                stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
            )
        )
        value = stmt.value if isinstance(stmt, ast.AnnAssign | ast.Assign) else None
        if not (isinstance(target, ast.Name) and isinstance(value, ast.Dict)):
            continue
        m = _KERNEL_TABLE.fullmatch(target.id)
        if not m:
            continue
        for key, entry in zip(value.keys, value.values, strict=True):
            if not (isinstance(key, ast.Attribute) and key.attr == "ROCM"):
                continue
            if not isinstance(entry, ast.List):
                return None
            names = [e.id for e in entry.elts if isinstance(e, ast.Name)]
            if len(names) != len(entry.elts) or not all(_CLASS.fullmatch(n) for n in names):
                return None
            out[m.group(1).lower()] = names
    return out or None


def cache_dtypes(text: str) -> list[str] | None:
    """The names in the module-level ``CacheDType = Literal[...]``, or None."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for stmt in tree.body:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == "CacheDType"
            and isinstance(stmt.value, ast.Subscript)
        ):
            continue
        inner = stmt.value.slice
        elements = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        out = []
        for element in elements:
            if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
                return None
            if not _METHOD.fullmatch(element.value):
                return None
            out.append(element.value)
        return list(dict.fromkeys(out))
    return None


class _Unknown(Exception):
    """A construct the rule evaluator does not know: the rule is not claimed."""


# Where RocmPlatform lists the attention backends it picks from (from 0.18.0: each is validated
# against the request, KV cache dtype included, and none valid is "No valid attention backend").
PRIORITIES: Final = "_get_backend_priorities"
REGISTRY: Final = "vllm/v1/attention/backends/registry.py"  # AttentionBackendEnum -> class path
_BASE_BACKEND: Final = "AttentionBackend"  # its supports_kv_cache_dtype reads the class's list


def rocm_attention(files: dict[str, str], cache: list[str]) -> dict[str, list[str]] | None:
    """Per backend ``RocmPlatform`` picks from (``_get_backend_priorities`` in
    vllm/platforms/rocm.py) and per ``ROCM_*`` backend of the registry, the KV cache dtypes it
    accepts: its ``supported_kv_cache_dtypes``
    (inherited through the classes it imports), or what its own ``supports_kv_cache_dtype``
    admits of ``cache`` (the release's CacheDType) where it overrides the list. None when the
    release has no such function or any backend's rule is not understood: a partial answer
    would refuse a dtype the unread backend may take."""
    found = rocm_backends(files)
    if found is None:
        return None
    out: dict[str, list[str]] = {}
    try:
        for name, (path, cls) in found.items():
            out[name] = _Backends(files, cache).accepts(path, cls)
    except (_Unknown, SyntaxError, ValueError, RecursionError):
        return None
    return out or None


def rocm_backends(files: dict[str, str]) -> dict[str, tuple[str, str]] | None:
    """Per backend ``RocmPlatform`` picks from (``_get_backend_priorities``), in its order, then
    per ``ROCM_*`` backend of the registry: (the file of its class, the class name); None when
    the release has no such function or a name the registry does not map."""
    try:
        platform = ast.parse(files.get(FILE, ""))
        registry = ast.parse(files.get(REGISTRY, ""))
    except (SyntaxError, ValueError, RecursionError):
        return None
    func = next(
        (f for f in platform.body if isinstance(f, ast.FunctionDef) and f.name == PRIORITIES),
        None,
    )
    paths = _enum_paths(registry)
    if func is None or not paths:
        return None
    # The backends it picks from, then every ROCm one the registry names: those a model picks
    # itself (DeepSeek V4's sparse MLA takes fp8_ds_mla) or --attention-backend selects.
    named = sorted(
        (n.lineno, n.col_offset, n.attr)  # in the order the function names them
        for n in ast.walk(func)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == "AttentionBackendEnum"
    )
    names = [attr for _, _, attr in named] + [n for n in paths if n.startswith("ROCM_")]
    out: dict[str, tuple[str, str]] = {}
    for name in dict.fromkeys(names):
        module, _, cls = paths.get(name, "").rpartition(".")
        if not module:
            return None
        out[name.lower()] = (_module_file(module), cls)
    return out or None


def _module_file(module: str) -> str:
    return module.replace(".", "/") + ".py"


def _enum_paths(registry: ast.Module) -> dict[str, str]:
    """``AttentionBackendEnum``'s members and the class path each names."""
    for node in registry.body:
        if isinstance(node, ast.ClassDef) and node.name == "AttentionBackendEnum":
            return {
                stmt.targets[0].id: stmt.value.value
                for stmt in node.body
                if isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            }
    return {}


class _Backends:
    """The backend classes of the files read, followed through their bases as Python would
    (depth first, left to right: single inheritance is all these files use)."""

    def __init__(self, files: dict[str, str], cache: list[str]) -> None:
        self.files, self.cache = files, cache
        self.trees: dict[str, ast.Module] = {}

    def _tree(self, path: str) -> ast.Module:
        if path not in self.trees:
            if path not in self.files:
                raise _Unknown  # a base class in a file that was not read
            self.trees[path] = ast.parse(self.files[path])
        return self.trees[path]

    def _class(self, path: str, name: str, depth: int = 0) -> tuple[str, ast.ClassDef]:
        tree = self._tree(path)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return path, node
        for node in tree.body:  # imported: from vllm.x.y import Name
            if isinstance(node, ast.ImportFrom) and node.module and depth < 5:
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        return self._class(_module_file(node.module), alias.name, depth + 1)
        raise _Unknown

    def _mro(self, path: str, name: str) -> Iterator[ast.ClassDef]:
        """The class, then its bases, each read only when the ones before did not answer (a
        backend with its own list needs no base from a file this source does not read)."""
        todo = [(path, name)]
        for _ in range(20):
            if not todo:
                return
            where, cls = self._class(*todo.pop(0))
            yield cls
            if cls.name == _BASE_BACKEND:
                return
            bases = [b.id for b in cls.bases if isinstance(b, ast.Name)]
            if len(bases) != len(cls.bases):
                raise _Unknown  # a base written as an expression
            todo = [(where, b) for b in bases] + todo

    def accepts(self, path: str, name: str) -> list[str]:
        for cls in self._mro(path, name):
            method = _member(cls, "supports_kv_cache_dtype")
            if isinstance(method, ast.FunctionDef) and cls.name != _BASE_BACKEND:
                return self._override(method)
            listed = _member(cls, "supported_kv_cache_dtypes")
            if listed is not None:
                return _literal_strings(listed)
        raise _Unknown

    def _override(self, method: ast.FunctionDef) -> list[str]:
        """The dtypes of ``cache`` a backend's own ``supports_kv_cache_dtype`` admits: its last
        return is ``dtype == "x"`` or ``dtype.startswith("x")`` (an earlier ``None`` test only
        refuses no dtype at all)."""
        arg = method.args.args[-1].arg if method.args.args else ""
        returns = [s for s in method.body if isinstance(s, ast.Return)]
        value = returns[-1].value if returns else None
        if (
            isinstance(value, ast.Compare)
            and len(value.ops) == 1
            and isinstance(value.ops[0], ast.Eq)
            and isinstance(value.left, ast.Name)
            and value.left.id == arg
            and isinstance(value.comparators[0], ast.Constant)
            and isinstance(value.comparators[0].value, str)
        ):
            return [value.comparators[0].value]
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "startswith"
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id == arg
            and len(value.args) == 1
            and isinstance(value.args[0], ast.Constant)
            and isinstance(value.args[0].value, str)
        ):
            prefix = value.args[0].value
            return [d for d in self.cache if d.startswith(prefix)]
        raise _Unknown


def _member(cls: ast.ClassDef, name: str) -> ast.expr | ast.FunctionDef | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
        target = (
            stmt.target
            if isinstance(stmt, ast.AnnAssign)
            else stmt.targets[0]
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            else None
        )
        if isinstance(target, ast.Name) and target.id == name:
            value = stmt.value if isinstance(stmt, ast.AnnAssign | ast.Assign) else None
            if value is None:
                raise _Unknown
            return value
    return None


def _literal_strings(value: ast.expr | ast.FunctionDef) -> list[str]:
    if not isinstance(value, ast.List):
        raise _Unknown  # list(...) of another table, a comprehension: not evaluated
    out = []
    for e in value.elts:
        if not (isinstance(e, ast.Constant) and isinstance(e.value, str)):
            raise _Unknown
        if not _METHOD.fullmatch(e.value):
            raise _Unknown
        out.append(e.value)
    return list(dict.fromkeys(out))


# capabilities.toml field -> the RocmPlatform classmethod whose answer it records, per gfx.
GATES: Final[dict[str, str]] = {
    "fp8": "supports_fp8",  # FP8 quantization admitted at all
    "fp8_fnuz": "is_fp8_fnuz",  # FP8 runs as float8_e4m3fnuz there (else OCP e4m3fn)
    "mx": "supports_mx",  # native MX (microscaling) kernels
    "custom_allreduce": "use_custom_allreduce",  # vLLM's custom all-reduce kernel on
}


def gate_targets(
    text: str, gfx_names: list[str], method: str, platform: str | None = None
) -> list[str] | None:
    """The gfx targets ``method`` (a ``RocmPlatform`` classmethod, or a module function of a
    kernel file whose ``on_*()`` helpers come from ``platform``, vllm/platforms/rocm.py) admits,
    by evaluating its return expression for each name (vLLM tests the GPU's gcnArchName by
    substring: ``"gfx94" in arch``). Only substring tests, ``any(... for x in [literals])``,
    ``and``/``or``/``not``, module-level ``_ON_*`` flags and ``on_*()`` helpers are understood;
    anything else claims nothing."""
    try:
        lib = ast.parse(platform) if platform is not None else None
        rule = _Rule(ast.parse(text), method, lib=lib)
        return [g for g in gfx_names if rule.admits(g)]
    except (SyntaxError, ValueError, RecursionError, _Unknown):
        return None


class _Rule:
    """A platform method's return expression with the module's flags and helpers it may use."""

    def __init__(self, tree: ast.Module, method_name: str, lib: ast.Module | None = None) -> None:
        self.flags: dict[str, ast.expr] = {}
        self.helpers: dict[str, ast.expr] = {}
        # ``lib``: the platform module whose on_*() helpers another module imports.
        for stmt in [*(lib.body if lib else []), *tree.body]:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
            ):
                self.flags[stmt.targets[0].id] = stmt.value
            elif isinstance(stmt, ast.FunctionDef):
                body = [s for s in stmt.body if not isinstance(s, ast.Expr)]
                if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value:
                    self.helpers[stmt.name] = body[0].value
        method = next(
            (
                f
                for node in ast.walk(tree)
                if isinstance(node, ast.ClassDef | ast.Module)
                for f in node.body
                if isinstance(f, ast.FunctionDef) and f.name == method_name
            ),
            None,
        )
        if method is None:
            raise _Unknown
        self.arch = {"_GCN_ARCH"}  # the GPU's gcnArchName, however the code names it
        result: ast.expr | None = None
        self.lists: dict[str, ast.expr] = {}  # local literal lists (supported_archs = [...])
        for stmt in method.body:
            if isinstance(stmt, ast.Assign) and "gcnArchName" in ast.unparse(stmt.value):
                self.arch |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
            elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.List | ast.Tuple):
                self.lists |= {t.id: stmt.value for t in stmt.targets if isinstance(t, ast.Name)}
            elif isinstance(stmt, ast.Return) and stmt.value is not None:
                result = stmt.value
        if result is None:
            raise _Unknown
        self.result = result

    def admits(self, gfx: str) -> bool:
        return self._ev(self.result, gfx, 0)

    def _is_arch(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in self.arch
        # Older releases test the property in place: torch.cuda.get_device_properties(0).gcnArchName
        return isinstance(expr, ast.Attribute) and expr.attr == "gcnArchName"

    def _ev(self, expr: ast.expr, gfx: str, depth: int) -> bool:
        if depth > 20:
            raise _Unknown
        if isinstance(expr, ast.BoolOp):
            values = [self._ev(v, gfx, depth + 1) for v in expr.values]
            return all(values) if isinstance(expr.op, ast.And) else any(values)
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            return not self._ev(expr.operand, gfx, depth + 1)
        if isinstance(expr, ast.Constant) and isinstance(expr.value, bool):
            return expr.value
        if isinstance(expr, ast.Compare):
            return self._substring(expr, gfx)
        if isinstance(expr, ast.Call):
            return self._call(expr, gfx, depth)
        if isinstance(expr, ast.Name) and expr.id in self.flags and expr.id not in self.arch:
            return self._ev(self.flags[expr.id], gfx, depth + 1)
        raise _Unknown

    def _substring(self, expr: ast.Compare, gfx: str) -> bool:
        if (
            len(expr.ops) == 1
            and isinstance(expr.ops[0], ast.In)
            and isinstance(expr.left, ast.Constant)
            and isinstance(expr.left.value, str)
            and self._is_arch(expr.comparators[0])
        ):
            return expr.left.value in gfx
        raise _Unknown

    def _call(self, expr: ast.Call, gfx: str, depth: int) -> bool:
        if not isinstance(expr.func, ast.Name):
            raise _Unknown
        if not expr.args and expr.func.id in self.helpers:
            return self._ev(self.helpers[expr.func.id], gfx, depth + 1)
        if expr.func.id != "any" or len(expr.args) != 1:
            raise _Unknown
        gen = expr.args[0]
        if not isinstance(gen, ast.GeneratorExp) or len(gen.generators) != 1:
            raise _Unknown
        comp, elt = gen.generators[0], gen.elt
        seq = (
            self.lists.get(comp.iter.id, comp.iter)
            if isinstance(comp.iter, ast.Name)
            else comp.iter
        )
        literals = seq.elts if isinstance(seq, ast.List | ast.Tuple) else None
        if (
            literals is None
            or not isinstance(comp.target, ast.Name)
            or not isinstance(elt, ast.Compare)
            or not isinstance(elt.left, ast.Name)
            or elt.left.id != comp.target.id
            or not isinstance(elt.ops[0], ast.In)
            or not self._is_arch(elt.comparators[0])
        ):
            raise _Unknown
        words = [e.value for e in literals if isinstance(e, ast.Constant)]
        if len(words) != len(literals) or not all(isinstance(w, str) for w in words):
            raise _Unknown
        return any(str(w) in gfx for w in words)


def capability_record(
    sdist: IndexFile, files: dict[str, str], gfx_names: list[str] | None = None
) -> tuple[dict[str, Any] | None, str]:
    text = files.get(FILE)
    if text is None:
        return None, f"the sdist has no {FILE}"
    methods = supported_quantization(text)
    if methods is None:
        return None, f"{FILE} assigns no literal supported_quantization list"
    version = str(sdist.version)
    record: dict[str, Any] = {"version": version, "quantization": methods}
    evaluated = []
    for field_name, method in GATES.items():
        admitted = gate_targets(text, gfx_names, method) if gfx_names else None
        if admitted is not None:
            record[field_name] = admitted
            evaluated.append(method)
    read = [
        f"{FILE} (RocmPlatform.supported_quantization"
        + (f"; {', '.join(evaluated)}, evaluated per gfx)" if evaluated else ")")
    ]
    tables = rocm_kernels(files.get(KERNELS, "")) if KERNELS in files else None
    if tables is not None:
        record["rocm_kernels"] = tables
        read.append(f"{KERNELS} (the ROCm entries of _POSSIBLE_*_KERNELS)")
    kernels = files.get(SCALED_MM[0])
    scaled_mm = (
        gate_targets(kernels, gfx_names, SCALED_MM[1], platform=text)
        if kernels and gfx_names
        else None
    )
    if scaled_mm is not None:
        record["fp8_scaled_mm"] = scaled_mm
        read.append(f"{SCALED_MM[0]} ({SCALED_MM[1]}, evaluated per gfx)")
    dtypes: list[str] = []
    for name in CACHE_FILES:
        dtypes = cache_dtypes(files.get(name, "")) or []
        if dtypes:
            record["kv_cache_dtypes"] = dtypes
            read.append(f"{name} (CacheDType)")
            break
    attention = rocm_attention(files, dtypes)
    if attention is not None:
        record["rocm_attention"] = attention
        read.append(
            f"{FILE} ({PRIORITIES}) with {REGISTRY} and each backend's supported_kv_cache_dtypes"
        )
    if sdist.filename.endswith(".whl"):  # a release with no sdist, read from its wheel
        record["source"] = f"PyPI wheel {sdist.filename} sha256 {sdist.sha256} " + ", ".join(read)
        return record, ""
    record["sdist_sha256"] = sdist.sha256
    record["source"] = f"vllm {version} sdist sha256:{sdist.sha256[:12]} " + ", ".join(read)
    return record, ""


# A release the index has only wheels of (0.15.0, 0.15.1) is read from its x86_64 wheel, whose
# vllm/ files are the sdist's: vLLM's are ~510 MB, read once (the extracted files are cached).
MAX_WHEEL_BYTES: Final = 768 * 1024**2
_X86_WHEEL: Final = re.compile(
    r"vllm-(?P<version>[0-9][0-9a-z.]{0,40})-cp[0-9]{2,3}-(abi3|cp[0-9]{2,3})-"
    r"manylinux[0-9a-z_]{0,40}_x86_64\.whl"
)


def read_wheel_members(data: bytes, wanted: re.Pattern[str] = WANTED) -> dict[str, str]:
    """The ``wanted`` files of a wheel, by path in it (a wheel has no top directory), each
    bounded as an sdist's members are; nothing touches the disk."""
    import io
    import zipfile

    files: dict[str, str] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                name = info.filename
                if not wanted.fullmatch(name) or info.is_dir():
                    continue
                if info.file_size > MAX_MEMBER_BYTES or len(files) >= MAX_FILES:
                    raise ArchiveError(f"member {name[:80]!r} is too large, or too many files")
                with archive.open(info) as fh:
                    raw = fh.read(MAX_MEMBER_BYTES + 1)
                files[name] = raw[:MAX_MEMBER_BYTES].decode("utf-8", errors="replace")
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        if isinstance(exc, ArchiveError):
            raise
        raise ArchiveError(f"not a readable wheel ({type(exc).__name__})") from None
    return files


class CapabilitiesSource(ReleaseFactsSource):
    """``matrix refresh --source capabilities``: one record per release the data knows."""

    name = "capabilities"
    table = "capabilities.toml"
    wanted = WANTED
    # v2 KV cache dtypes, v3 gates, v4 scaled-MM, v5 kernel lists, v6 attention backends
    cache_tag = "capabilities-6"

    def record(self, sdist: IndexFile, files: dict[str, str]) -> tuple[dict[str, Any] | None, str]:
        names = [str(g.get("name")) for g in self.current.get("gfx.toml", []) if g.get("name")]
        return capability_record(sdist, files, names)

    def read(self) -> SourceResult:
        result = super().read()
        for wheel in self._wheel_only(result):
            files = self._wheel_files(wheel, result)
            if files is None:
                continue
            record, why = self.record(wheel, files)
            if record is None:
                result.refuse(f"vllm {wheel.version} wheel", why)
                continue
            result.candidates.append(Candidate(self.table, str(wheel.version), record))
        return result

    def _wheel_only(self, result: SourceResult) -> list[IndexFile]:
        """The known releases the index has no sdist of, each with its x86_64 wheel: those
        with no record yet, or asked for with ``--tag`` (``--verify`` does not download ~510 MB
        again for a record read from the same wheel)."""
        from urllib.parse import urljoin

        from packaging.version import InvalidVersion, Version

        page = f"{self.base}/{PROJECT}/"
        data, _ = self.client.get_json(page, headers={"Accept": PEP691})
        items = data.get("files") if isinstance(data, dict) else None
        have = {str(r.get("version")) for r in self.current.get(self.table, [])}
        known = self.known_releases()
        sdists: set[str] = set()
        wheels: dict[Version, IndexFile] = {}
        for item in items[:10_000] if isinstance(items, list) else []:
            if not isinstance(item, dict) or item.get("yanked"):
                continue
            name, url, hashes = item.get("filename"), item.get("url"), item.get("hashes")
            if not isinstance(name, str) or not isinstance(url, str):
                continue
            if name.startswith(f"{PROJECT}-") and name.endswith(".tar.gz"):
                sdists.add(name[len(PROJECT) + 1 : -len(".tar.gz")])
            m = _X86_WHEEL.fullmatch(name)
            sha = hashes.get("sha256") if isinstance(hashes, dict) else None
            full = urljoin(page, url)
            if m is None or not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
                continue
            if not full.startswith(("https://", "http://")):
                continue
            try:
                version = Version(m.group("version"))
            except InvalidVersion:
                continue
            size = item.get("size")
            wheels.setdefault(
                version,
                IndexFile(version, name, full, sha, size if isinstance(size, int) else None, None),
            )
        return [
            w
            for v, w in sorted(wheels.items())
            if v in known and str(v) not in sdists and (str(v) not in have or str(v) in self.forced)
        ]

    def _wheel_files(self, wheel: IndexFile, result: SourceResult) -> dict[str, str] | None:
        cached = self._cache_read(wheel.sha256)
        if cached is not None:
            return cached
        if wheel.size is not None and wheel.size > MAX_WHEEL_BYTES:
            result.refuse(
                f"vllm {wheel.version} wheel",
                f"the index lists {wheel.size} bytes (limit {MAX_WHEEL_BYTES})",
            )
            return None
        try:
            data = self.client.download(wheel.url, sha256=wheel.sha256, max_bytes=MAX_WHEEL_BYTES)
            files = read_wheel_members(data, self.wanted)
        except IntegrityError as exc:
            result.refuse(f"vllm {wheel.version} wheel", exc.message)
            return None
        except ArchiveError as exc:
            result.refuse(f"vllm {wheel.version} wheel", str(exc))
            return None
        self._cache_write(wheel.sha256, files)
        return files
