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

from packaging.version import InvalidVersion, Version

from resolver.refresh.common import Candidate, SourceResult
from resolver.refresh.sdist import IndexFile, SdistSource, list_sdists

WANTED: Final = re.compile(r"vllm/platforms/rocm\.py")
FILE: Final = "vllm/platforms/rocm.py"
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


def capability_record(sdist: IndexFile, files: dict[str, str]) -> tuple[dict[str, Any] | None, str]:
    text = files.get(FILE)
    if text is None:
        return None, f"the sdist has no {FILE}"
    methods = supported_quantization(text)
    if methods is None:
        return None, f"{FILE} assigns no literal supported_quantization list"
    version = str(sdist.version)
    return {
        "version": version,
        "quantization": methods,
        "sdist_sha256": sdist.sha256,
        "source": f"vllm {version} sdist sha256:{sdist.sha256[:12]} {FILE} "
        "(RocmPlatform.supported_quantization)",
    }, ""


class CapabilitiesSource(SdistSource):
    """``matrix refresh --source capabilities``: one record per release the data knows."""

    name = "capabilities"
    wanted = WANTED
    cache_tag = "capabilities"

    def _wanted(self, listed: list[IndexFile]) -> list[IndexFile]:
        releases = self.known_releases()
        have: dict[Version, dict[str, Any]] = {}
        for rec in self.current.get("capabilities.toml", []):
            try:
                have[Version(str(rec.get("version")))] = rec
            except InvalidVersion:
                continue
        return [
            f
            for f in listed
            if str(f.version) in self.forced
            or (f.version in releases and have.get(f.version, {}).get("sdist_sha256") != f.sha256)
        ]

    def read(self) -> SourceResult:
        result = SourceResult(self.name)
        wanted = self._wanted(list_sdists(self.client, self.base, result))
        for i, sdist in enumerate(wanted):
            if self.progress:
                self.progress(f"vllm {sdist.version}", i, len(wanted))
            files = self.files_of(sdist, result)
            if files is None:
                continue
            record, why = capability_record(sdist, files)
            if record is None:
                result.refuse(f"vllm {sdist.version} sdist", why)
                continue
            result.candidates.append(Candidate("capabilities.toml", str(sdist.version), record))
        return result
