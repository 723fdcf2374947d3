"""ROCm releases: ``rocm-X.Y.Z`` tags of ROCm/ROCm from the GitHub API.

A tag says that a release exists, not which GPUs and OS it supports: a new release is recorded
with its stream inferred from its neighbours and empty gfx/OS lists (confidence "inferred"), so
that images and vLLM builds on it can be recorded; the compatibility matrix fills in the rest.
"""

from __future__ import annotations

import re

from packaging.version import Version

from resolver.refresh.common import (
    ROCM_REPO,
    Candidate,
    Source,
    SourceResult,
    today,
)

_ROCM_TAG = re.compile(r"^rocm-([0-9]+\.[0-9]+(?:\.[0-9]+){0,2})\Z")


class RocmSource(Source):
    name = "rocm"

    def read(self) -> SourceResult:
        result = SourceResult(self.name)
        known: dict[Version, str] = {}
        for rec in self.current.get("rocm.toml", []):
            try:
                known[Version(str(rec.get("version")))] = str(rec.get("stream"))
            except ValueError:
                continue
        oldest = min(known) if known else None
        for name, _sha in self.github_tags(ROCM_REPO, result, need_sha=False):
            m = _ROCM_TAG.match(name)
            if not m:
                result.skipped.append(name)
                continue
            version = Version(m.group(1))
            if version in known or (oldest is not None and version < oldest):
                continue
            stream = infer_stream(version, known)
            record = {
                "version": str(version),
                "stream": stream,
                "gfx": [],
                "os": [],
                "source": f"{self.ep.github_api}/repos/{ROCM_REPO}/tags (tag {name})",
                "confidence": "inferred",
                "note": f"The release exists (tag {name}); stream inferred from neighbouring "
                "releases; supported GPUs and OS not read yet (see AMD's compatibility matrix).",
                "read_at": today(),
            }
            known[version] = stream
            result.candidates.append(Candidate("rocm.toml", str(version), record))
        return result


def infer_stream(version: Version, known: dict[Version, str]) -> str:
    """The stream of the same series if known, else of the nearest older release, else legacy."""
    same = [s for v, s in known.items() if (v.major, v.minor) == (version.major, version.minor)]
    if same:
        return same[0]
    older = [v for v in known if v < version]
    return known[max(older)] if older else "legacy"
