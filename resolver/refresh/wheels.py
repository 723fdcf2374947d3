"""vLLM ROCm wheels: variants, versions and Python tags from the wheel index (a PEP 503 page).

Each ``vllm-<version>+<variant>-<py>-<abi>-manylinux_<a>_<b>_<arch>.whl`` link on
``<index>/vllm/`` says that the variant exists, which vLLM versions it carries, for which Python,
and its glibc floor. A known variant keeps its curated facts and takes the ranges read here; a new
variant is matched to a ROCm release in rocm.toml by its digits (``rocm721`` -> 7.2.1).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from resolver.refresh.common import Candidate, Source, SourceResult, today

_VARIANT = re.compile(r"^rocm([0-9]{2,4})\Z")
_MANYLINUX = re.compile(r"^manylinux_([0-9]+)_([0-9]+)_")
_CPYTHON = re.compile(r"^cp3([0-9]{1,2})\Z")


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.files: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href") or ""
            name = unquote(urlsplit(href).path.rsplit("/", 1)[-1])
            if name:
                self.files.append(name)


def wheel_files(html: str) -> list[str]:
    parser = _Links()
    parser.feed(html)
    return [f for f in parser.files if f.endswith(".whl")]


class WheelsSource(Source):
    name = "wheels"

    def read(self) -> SourceResult:
        result = SourceResult(self.name)
        url = f"{self.ep.wheels}/vllm/"
        if self.progress:
            self.progress("wheel index", 0, 1)
        resp = self.client.get(url, headers={"Accept": "text/html"}, allow=frozenset())
        seen: dict[str, dict[str, Any]] = {}
        for name in wheel_files(resp.text()):
            try:
                project, version, _build, tags = parse_wheel_filename(name)
            except (InvalidWheelFilename, ValueError):
                result.refuse(f"wheel {name[:80]!r}", "is not a valid wheel file name")
                continue
            if project != "vllm" or not version.local:
                result.skipped.append(name)
                continue
            variant = version.local
            if not _VARIANT.match(variant):
                result.skipped.append(name)  # cu129, cpu, ...: not a ROCm variant
                continue
            entry = seen.setdefault(variant, {"versions": set(), "python": set(), "glibc": set()})
            entry["versions"].add(Version(version.public))
            for t in tags:
                if m := _CPYTHON.match(t.interpreter):
                    entry["python"].add(f"3.{m.group(1)}")
                if m := _MANYLINUX.match(t.platform):
                    entry["glibc"].add(Version(f"{m.group(1)}.{m.group(2)}"))
        known = {str(r.get("name")): r for r in self.current.get("wheels.toml", [])}
        rocm_versions = [str(r.get("version")) for r in self.current.get("rocm.toml", [])]
        for variant, entry in sorted(seen.items()):
            record = self._record(variant, entry, known.get(variant), rocm_versions, url, result)
            if record is not None:
                result.candidates.append(Candidate("wheels.toml", variant, record))
        if self.progress:
            self.progress("wheel index", 1, 1)
        return result

    def _record(
        self,
        variant: str,
        entry: dict[str, Any],
        old: dict[str, Any] | None,
        rocm_versions: list[str],
        url: str,
        result: SourceResult,
    ) -> dict[str, Any] | None:
        versions: list[Version] = sorted(entry["versions"])
        releases = [v for v in versions if not (v.is_devrelease or v.is_prerelease)]
        nightlies = len(releases) < len(versions)
        if not entry["python"] or not entry["glibc"]:
            result.refuse(
                f"wheel variant {variant}", "its wheels carry no CPython or manylinux tag"
            )
            return None
        low, high = (releases or versions)[0], (releases or versions)[-1]
        record: dict[str, Any] = dict(old) if old else {}
        record.update(
            {
                "name": variant,
                "python": sorted(entry["python"], key=Version),
                "glibc_min": str(min(entry["glibc"])),
                "vllm": f">={low},<={high}" if not nightlies else f">={low}",
                "includes_nightlies": nightlies,
            }
        )
        if old is None:
            rocm = match_rocm(variant, rocm_versions)
            if rocm is None:
                result.refuse(
                    f"wheel variant {variant}",
                    "no single ROCm release in rocm.toml matches its digits",
                )
                return None
            record.update(
                {
                    "rocm": rocm,
                    "index_url": f"{self.ep.wheels}/",
                    "status": "release" if releases else "nightly",
                    "confidence": "inferred",
                    "note": f"Found on the wheel index; ROCm {rocm} matched from the variant name; "
                    "arch list not published.",
                }
            )
        record["source"] = url
        record["read_at"] = today()
        if old is not None and _same(old, record):
            return None
        return record


def _same(old: dict[str, Any], new: dict[str, Any]) -> bool:
    keys = ("python", "glibc_min", "vllm", "includes_nightlies")
    return all(old.get(k, False if k == "includes_nightlies" else None) == new.get(k) for k in keys)


def match_rocm(variant: str, rocm_versions: list[str]) -> str | None:
    """``rocm721`` -> the one known ROCm release whose digits start with 721 (7.2.1).

    vLLM names variants by the first digits of the ROCm version without dots, which is
    ambiguous on its own (rocm100 is 10.0.0); only an unambiguous match is accepted.
    """
    m = _VARIANT.match(variant)
    if not m:
        return None
    digits = m.group(1)
    matches = set()
    for text in rocm_versions:
        try:
            v = Version(text)
        except ValueError:
            continue
        parts = [*v.release, 0, 0][:3]
        if "".join(str(p) for p in parts).startswith(digits):
            matches.add(Version(".".join(str(p) for p in parts)))
    if not matches:
        return None
    # A short name ("rocm72") matches a whole series: take its first release. Matches in
    # different series are ambiguous.
    if len({(x.major, x.minor) for x in matches}) != 1:
        return None
    return str(min(matches))
