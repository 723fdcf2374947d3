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
from typing import Any, Final

from resolver.refresh.sdist import IndexFile, ReleaseFactsSource

WANTED: Final = re.compile(r"vllm/platforms/rocm\.py|vllm/config/cache\.py|vllm/config\.py")
FILE: Final = "vllm/platforms/rocm.py"
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
    """A construct the FP8 rule's evaluator does not know: the rule is not claimed."""


def fp8_targets(text: str, gfx_names: list[str]) -> list[str] | None:
    """The gfx targets ``RocmPlatform.supports_fp8`` admits, by evaluating its return expression
    for each name (vLLM tests the GPU's gcnArchName by substring: ``"gfx94" in arch``). Only
    substring tests, ``any(... for x in [literals])``, ``and``/``or``/``not``, module-level
    ``_ON_*`` flags and ``on_*()`` helpers are understood; anything else claims nothing."""
    try:
        rule = _Fp8Rule(ast.parse(text))
    except (SyntaxError, ValueError, _Unknown):
        return None
    try:
        return [g for g in gfx_names if rule.admits(g)]
    except _Unknown:
        return None


class _Fp8Rule:
    """``supports_fp8``'s return expression with the module's flags and helpers it may use."""

    def __init__(self, tree: ast.Module) -> None:
        self.flags: dict[str, ast.expr] = {}
        self.helpers: dict[str, ast.expr] = {}
        for stmt in tree.body:
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
                if isinstance(node, ast.ClassDef)
                for f in node.body
                if isinstance(f, ast.FunctionDef) and f.name == "supports_fp8"
            ),
            None,
        )
        if method is None:
            raise _Unknown
        self.arch = {"_GCN_ARCH"}  # the GPU's gcnArchName, however the code names it
        result: ast.expr | None = None
        for stmt in method.body:
            if isinstance(stmt, ast.Assign) and "gcnArchName" in ast.unparse(stmt.value):
                self.arch |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
            elif isinstance(stmt, ast.Return) and stmt.value is not None:
                result = stmt.value
        if result is None:
            raise _Unknown
        self.result = result

    def admits(self, gfx: str) -> bool:
        return self._ev(self.result, gfx, 0)

    def _is_arch(self, expr: ast.expr) -> bool:
        return isinstance(expr, ast.Name) and expr.id in self.arch

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
        literals = comp.iter.elts if isinstance(comp.iter, ast.List | ast.Tuple) else None
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
    read = [f"{FILE} (RocmPlatform.supported_quantization)"]
    fp8 = fp8_targets(text, gfx_names) if gfx_names else None
    if fp8 is not None:
        record["fp8"] = fp8
        read[0] = f"{FILE} (RocmPlatform.supported_quantization; supports_fp8, evaluated per gfx)"
    for name in CACHE_FILES:
        dtypes = cache_dtypes(files.get(name, ""))
        if dtypes:
            record["kv_cache_dtypes"] = dtypes
            read.append(f"{name} (CacheDType)")
            break
    record["sdist_sha256"] = sdist.sha256
    record["source"] = f"vllm {version} sdist sha256:{sdist.sha256[:12]} " + ", ".join(read)
    return record, ""


class CapabilitiesSource(ReleaseFactsSource):
    """``matrix refresh --source capabilities``: one record per release the data knows."""

    name = "capabilities"
    table = "capabilities.toml"
    wanted = WANTED
    cache_tag = "capabilities-2"  # v2 also reads the KV cache dtypes

    def record(self, sdist: IndexFile, files: dict[str, str]) -> tuple[dict[str, Any] | None, str]:
        names = [str(g.get("name")) for g in self.current.get("gfx.toml", []) if g.get("name")]
        return capability_record(sdist, files, names)
