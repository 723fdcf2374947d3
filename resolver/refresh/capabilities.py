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


def capability_record(sdist: IndexFile, files: dict[str, str]) -> tuple[dict[str, Any] | None, str]:
    text = files.get(FILE)
    if text is None:
        return None, f"the sdist has no {FILE}"
    methods = supported_quantization(text)
    if methods is None:
        return None, f"{FILE} assigns no literal supported_quantization list"
    version = str(sdist.version)
    record: dict[str, Any] = {"version": version, "quantization": methods}
    read = [f"{FILE} (RocmPlatform.supported_quantization)"]
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
        return capability_record(sdist, files)
