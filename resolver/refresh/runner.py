"""Run the refresh: ask each source, check every record like the data loader does, diff, write.

Sources run in dependency order (rocm, vllm, images, wheels) so that a record may refer to a
release found earlier in the same run. A record that fails any check is refused and named; the
overlay is written only with ``write=True``, only after the merged data passes the full loader,
and atomically, so a failure at any point leaves the data in use untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resolver.data import build, matrix, overlay, resources
from resolver.refresh import diff
from resolver.refresh.capabilities import CapabilitiesSource
from resolver.refresh.common import Candidate, Endpoints, Progress, Refusal
from resolver.refresh.cuda import CudaSource
from resolver.refresh.http import HttpClient
from resolver.refresh.images import ImagesSource
from resolver.refresh.models import ModelsSource
from resolver.refresh.rocm import RocmSource
from resolver.refresh.sdist import SdistSource
from resolver.refresh.vllm import VllmSource
from resolver.refresh.wheels import WheelsSource
from resolver.util.errors import MatrixError, UsageError
from resolver.util.timestamps import now

SOURCES: tuple[str, ...] = (  # dependency order
    "rocm",
    "sdist",
    "cuda",
    "capabilities",
    "models",
    "vllm",
    "images",
    "wheels",
)
# vLLM facts come from the released sdists by default; "vllm" (the files at each Git tag on
# GitHub) stays available for tags that have no sdist.
DEFAULT_SOURCES: tuple[str, ...] = ("rocm", "sdist", "images", "wheels")


@dataclass
class Outcome:
    changes: list[diff.RecordChange] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    written: Path | None = None
    target: Path = field(default_factory=overlay.overlay_path)
    requests: int = 0
    conditional: int = 0
    # What was compared with the data in use: records read from upstream and their leaf fields
    # (a summary says what it compared, never "nothing changed" after reading only a listing).
    compared_records: int = 0
    compared_fields: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.changes)


def cache_dir() -> Path:
    return resources.cache_dir() / "http"


def sdist_cache_dir() -> Path:
    """The files read from each vLLM sdist, by its sha256 (a release is downloaded once)."""
    return resources.cache_dir() / "sdist"


def refresh(
    sources: list[str] | None = None,
    *,
    write: bool = False,
    tags: list[str] | None = None,
    endpoints: Endpoints | None = None,
    client: HttpClient | None = None,
    progress: Progress | None = None,
    verify: bool = False,
    audit: bool = False,
) -> Outcome:
    """Read the sources and diff what they say against the data in use. ``verify`` re-reads
    every release the sdist sources already hold exactly (a tampered pin or date shows as a
    change); ``audit`` reads every image's GPU code from the registry into its arch list."""
    chosen = sources or list(DEFAULT_SOURCES)
    unknown = [s for s in chosen if s not in SOURCES]
    if unknown:
        raise UsageError(
            f"--source {', '.join(unknown)} is not a refresh source",
            hint=f"choose from {', '.join(SOURCES)}",
        )
    ep = endpoints or Endpoints.from_env()
    own_client = client is None
    http = client or HttpClient(cache_dir=cache_dir())
    before = overlay.current_raw()
    working = {f: list(rs) for f, rs in before.items()}
    outcome = Outcome()
    accepted: list[Candidate] = []
    try:
        for name in SOURCES:
            if name not in chosen:
                continue
            src = _source(name, http, ep, working, tags, progress)
            if verify and isinstance(src, SdistSource):
                src.verify = True
            if audit and isinstance(src, ImagesSource):
                src.audit = True
            result = src.read()
            outcome.refused.extend(result.refused)
            outcome.skipped[name] = len(result.skipped)
            for cand in result.candidates:
                problem = _check(cand, working)
                if problem:
                    outcome.refused.append(Refusal(name, f"{cand.file} {cand.key}", problem))
                    continue
                _carry_over(cand, before)
                accepted.append(cand)
                working[cand.file] = overlay.merge(
                    cand.file, working.get(cand.file, []), [cand.record]
                )
    finally:
        outcome.requests = len(http.sent)
        outcome.conditional = sum(r.conditional for r in http.sent)
        if own_client:
            http.close()
    outcome.compared_records = len(accepted)
    outcome.compared_fields = sum(diff.leaf_count(c.record) for c in accepted)
    for cand in accepted:
        change = diff.changes_for(before, cand.file, cand.key, cand.record, overlay.record_key)
        if change is not None:
            outcome.changes.append(change)
    if write and outcome.changes:
        updates: dict[str, list[dict[str, Any]]] = {}
        for c in outcome.changes:
            updates.setdefault(c.file, []).append(c.record)
        _check_whole(updates)
        outcome.written = overlay.write(updates, written_at=now())
    return outcome


def _source(
    name: str,
    http: HttpClient,
    ep: Endpoints,
    current: dict[str, list[dict[str, Any]]],
    tags: list[str] | None,
    progress: Progress | None,
) -> VllmSource | SdistSource | ImagesSource | WheelsSource | RocmSource:
    if name == "sdist":
        return SdistSource(
            http, ep, current, cache=sdist_cache_dir(), versions=tags, progress=progress
        )
    if name == "capabilities":
        return CapabilitiesSource(
            http, ep, current, cache=sdist_cache_dir(), versions=tags, progress=progress
        )
    if name == "models":
        return ModelsSource(
            http, ep, current, cache=sdist_cache_dir(), versions=tags, progress=progress
        )
    if name == "cuda":
        return CudaSource(
            http, ep, current, cache=sdist_cache_dir(), versions=tags, progress=progress
        )
    if name == "vllm":
        return VllmSource(http, ep, current, tags=tags, progress=progress)
    if name == "images":
        return ImagesSource(http, ep, current, progress=progress)
    if name == "wheels":
        return WheelsSource(http, ep, current, progress=progress)
    return RocmSource(http, ep, current, progress=progress)


def _check(cand: Candidate, working: dict[str, list[dict[str, Any]]]) -> str | None:
    """Why this record must not be kept, or None: the loader's own checks, then cross-references."""
    try:
        built = build.build_record(cand.file, cand.record, cand.key)
    except MatrixError as exc:
        return exc.message
    if cand.file in (
        "cuda.toml",
        "capabilities.toml",
        "models.toml",
    ):  # no gfx targets or ROCm to cross-check
        return None
    known_gfx = {str(g.get("name")) for g in working.get("gfx.toml", [])}
    for field_name in ("arch", "aiter_arch", "fa_arch", "mori_arch", "cmake_arch", "gfx"):
        for gfx in getattr(built, field_name, ()) or ():
            if gfx not in known_gfx:
                return (
                    f"field '{field_name}' names gfx target {gfx!r}, which gfx.toml does not know"
                )
    rocm = getattr(built, "rocm", None)
    if cand.file != "rocm.toml" and rocm is not None:
        known_rocm = {overlay.record_key("rocm.toml", r) for r in working.get("rocm.toml", [])}
        if str(rocm) not in known_rocm and not any(_same_version(str(rocm), k) for k in known_rocm):
            return f"ROCm {rocm} is not in rocm.toml (refresh --source rocm first, or add it)"
    return None


def _same_version(a: str, b: str) -> bool:
    from packaging.version import Version

    try:
        return Version(a) == Version(b)
    except ValueError:
        return False


# Facts a source cannot tell, kept from the record it replaces: a release date (tag reads), the
# tag commit (older sdists' _version.py names none), and
# for images what only the registry or another page said (a pinned digest, the torch build).
_KEPT: dict[str, tuple[str, ...]] = {
    "vllm.toml": ("date", "tag_commit"),
    "images.toml": ("digest", "torch"),
}


def _carry_over(cand: Candidate, before: dict[str, list[dict[str, Any]]]) -> None:
    """Facts upstream cannot tell us stay as they were."""
    kept = _KEPT.get(cand.file, ())
    old = next(
        (r for r in before.get(cand.file, []) if overlay.record_key(cand.file, r) == cand.key),
        None,
    )
    for field_name in kept:
        if old and old.get(field_name) and field_name not in cand.record:
            cand.record[field_name] = old[field_name]


def _check_whole(updates: dict[str, list[dict[str, Any]]]) -> None:
    """The data as it would be after the write must load; otherwise nothing is written."""
    extra = overlay.read()
    merged = {
        f: overlay.merge(f, extra.get(f, []), updates.get(f, [])) for f in set(extra) | set(updates)
    }
    matrix.load_dir(resources.matrix_dir(), merged)
