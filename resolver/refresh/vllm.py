"""vLLM releases: tags from the GitHub API, and the ROCm build facts in the Dockerfiles at each tag.

For every release tag the data does not know exactly yet, the raw file host is asked for the ROCm
Dockerfiles at the tag's commit (``docker/Dockerfile.rocm_base`` + ``docker/Dockerfile.rocm``, or
the root-level names older tags used) and ``CMakeLists.txt`` (HIP_SUPPORTED_ARCHS). They become
one ``vllm.toml`` release record with confidence "exact", its source the URLs read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from packaging.version import Version

from resolver.data.model import stack_variant
from resolver.refresh import dockerfile_parse
from resolver.refresh.common import (
    VLLM_REPO,
    Candidate,
    Endpoints,
    Progress,
    Source,
    SourceResult,
    today,
)
from resolver.refresh.http import HttpClient

_RELEASE_TAG = re.compile(
    r"^v[0-9]+\.[0-9]+\.[0-9]+(?:\.[0-9]+|\.post[0-9]+|rc[0-9]+|\.dev[0-9]+)?\Z"
)
_ROCM_IN_TAG = re.compile(r"(?:^|rocm)([0-9]+\.[0-9]+(?:\.[0-9]+)?)(?=[-_]|$)")
_PY_IN_TAG = re.compile(r"py(3\.[0-9]{1,2})(?=[-_]|$)")
_PY = re.compile(r"^3\.[0-9]{1,2}\Z")

# ARG names vLLM's ROCm Dockerfiles use for each component: (ref ARG, repo ARG).
COMPONENT_ARGS: dict[str, tuple[str, str]] = {
    "triton": ("TRITON_BRANCH", "TRITON_REPO"),
    "pytorch": ("PYTORCH_BRANCH", "PYTORCH_REPO"),
    "vision": ("PYTORCH_VISION_BRANCH", "PYTORCH_VISION_REPO"),
    "audio": ("PYTORCH_AUDIO_BRANCH", "PYTORCH_AUDIO_REPO"),
    "flash_attention": ("FA_BRANCH", "FA_REPO"),
    "aiter": ("AITER_BRANCH", "AITER_REPO"),
    "mori": ("MORI_BRANCH", "MORI_REPO"),
    "rccl": ("RCCL_BRANCH", "RCCL_REPO"),
    "hipblaslt": ("HIPBLASLT_BRANCH", "HIPBLASLT_REPO"),
    "hipblas_common": ("HIPBLAS_COMMON_BRANCH", "HIPBLAS_COMMON_REPO"),
}
# Repository names (lower case) that a literal `git clone` URL maps to, for Dockerfiles whose
# RUN lines name the repository instead of a *_REPO ARG.
_CLONE_NAMES: dict[str, str] = {
    "triton": "triton",
    "pytorch": "pytorch",
    "vision": "vision",
    "audio": "audio",
    "flash-attention": "flash_attention",
    "aiter": "aiter",
    "mori": "mori",
    "rccl": "rccl",
    "hipblaslt": "hipblaslt",
    "hipblas-common": "hipblas_common",
}
# Where the ROCm Dockerfiles lived: (base file, app file, layout), newest layout first.
_LAYOUTS = (
    ("docker/Dockerfile.rocm_base", "docker/Dockerfile.rocm", "two-stage-docker"),
    ("Dockerfile.rocm_base", "Dockerfile.rocm", "two-stage-root"),
    (None, "Dockerfile.rocm", "single-stage"),
)


class VllmSource(Source):
    name = "vllm"

    def __init__(
        self,
        client: HttpClient,
        endpoints: Endpoints,
        current: dict[str, list[dict[str, Any]]],
        *,
        tags: list[str] | None = None,
        progress: Progress | None = None,
    ) -> None:
        super().__init__(client, endpoints, current, progress=progress)
        self._cached: set[str] = set()  # URLs answered from the HTTP cache (named in refusals)
        self.forced = set(tags or [])

    # --- tags -------------------------------------------------------------------------------

    def list_tags(self, result: SourceResult) -> list[tuple[str, str]]:
        """(tag, commit sha) for every vLLM tag."""
        return self.github_tags(VLLM_REPO, result, need_sha=True)

    def _wanted(
        self, tags: list[tuple[str, str]], result: SourceResult
    ) -> list[tuple[str, str, Version]]:
        known = self.known_releases()
        oldest = min(known) if known else None
        wanted = []
        for name, sha in tags:
            if not _RELEASE_TAG.match(name):
                result.skipped.append(name)
                continue
            try:
                version = Version(name[1:])
            except ValueError:
                result.refuse(f"tag {name}", "is not a PEP 440 version")
                continue
            if name in self.forced:
                wanted.append((name, sha, version))
                continue
            if version.is_prerelease or version.is_devrelease:
                result.skipped.append(name)
                continue
            if oldest is not None and version < oldest:
                continue  # the data starts at its oldest release on purpose
            have = known.get(version)
            if have is not None and _read_exactly(have, sha):
                continue
            wanted.append((name, sha, version))
        return sorted(wanted, key=lambda t: t[2])

    # --- files at a tag ---------------------------------------------------------------------

    def _raw(self, sha: str, path: str) -> tuple[str | None, str]:
        url = f"{self.ep.github_raw}/{VLLM_REPO}/{sha}/{path}"
        headers = (
            {"Authorization": f"Bearer {self.ep.github_token}"} if self.ep.github_token else None
        )
        # A file at a full commit sha never changes: answered from the cache once read.
        resp = self.client.get(url, headers=headers, immutable=True)
        if resp.from_cache:
            self._cached.add(url)
        return (resp.text() if resp.ok else None), url

    def read_tag(
        self, tag: str, sha: str, version: Version, result: SourceResult
    ) -> Candidate | None:
        layout = ""
        for base_path, app_path, candidate_layout in _LAYOUTS:
            layout = candidate_layout
            base_text = base_url = None
            if base_path is not None:
                base_text, base_url = self._raw(sha, base_path)
                if base_text is None:
                    continue
            app_text, app_url = self._raw(sha, app_path)
            if base_path is None and app_text is None:
                continue
            break
        else:
            result.refuse(
                f"vllm {tag}", "no ROCm Dockerfile at the tag (looked in docker/ and the root)"
            )
            return None
        cmake_text, cmake_url = self._raw(sha, "CMakeLists.txt")
        files = [f for f in (base_text, app_text) if f is not None]
        urls = [
            u
            for u, t in ((base_url, base_text), (app_url, app_text), (cmake_url, cmake_text))
            if u and t
        ]
        facts = [dockerfile_parse.parse(text) for text in files]
        record = build_record(version, sha, layout, facts, cmake_text)
        problem = _missing(record)
        if problem:
            cached = [u for u in urls if u in self._cached]
            if cached and self.client.cache_dir is not None:
                problem += (
                    f" (read from the HTTP cache: {', '.join(cached)}; delete "
                    f"{self.client.cache_dir} to read the files again)"
                )
            result.refuse(f"vllm {tag}", problem)
            return None
        record["source"] = f"{VLLM_REPO}@{tag} ({sha[:10]}): " + ", ".join(urls)
        record["confidence"] = "exact"
        record["read_at"] = today()
        return Candidate("vllm.toml", str(version), with_stack(record, base_path or app_path))

    def read(self) -> SourceResult:
        result = SourceResult(self.name)
        wanted = self._wanted(self.list_tags(result), result)
        for i, (tag, sha, version) in enumerate(wanted):
            if self.progress:
                self.progress(f"vllm {tag}", i, len(wanted))
            cand = self.read_tag(tag, sha, version, result)
            if cand is not None:
                result.candidates.append(cand)
        if self.progress and wanted:
            self.progress("vllm", len(wanted), len(wanted))
        return result


def _read_exactly(rec: dict[str, Any], sha: str) -> bool:
    """Already read at this very tag commit: nothing to re-read."""
    commit = str(rec.get("tag_commit") or "")
    if rec.get("confidence", "exact") != "exact":
        return False
    # Read from the released sdist: the same files as at the tag, already exact.
    return bool(rec.get("sdist_sha256")) or (bool(commit) and sha.startswith(commit))


def _stack_fields() -> tuple[str, ...]:
    """The keys a stack table has (the data model's own, resolver.data.schema), less its identity
    and provenance: what a tag's flat read moves into the release's one stack."""
    from resolver.data import schema

    own = ("variant", "dockerfile", "default", *schema.PROVENANCE_KEYS)
    return tuple(k for k in schema.key_order("vllm.toml", ("stack",)) if k not in own)


STACK_FIELDS: tuple[str, ...] = _stack_fields()


def with_stack(flat: dict[str, Any], dockerfile: str) -> dict[str, Any]:
    """The record in the data's shape: release facts on top, the build in one default stack."""
    record = {k: v for k, v in flat.items() if k not in STACK_FIELDS}
    rocm = Version(str(flat["rocm"]))
    stack: dict[str, Any] = {
        "variant": stack_variant(rocm),
        "dockerfile": dockerfile,
        "default": True,
    }
    stack.update({k: flat[k] for k in STACK_FIELDS if k in flat})
    record["stack"] = [stack]
    return record


def _missing(record: dict[str, Any]) -> str | None:
    for field_name in ("base_image", "rocm", "arch"):
        if not record.get(field_name):
            return (
                f"the Dockerfiles at the tag give no {field_name} (file truncated or layout "
                "changed?)"
            )
    return None


def build_record(
    version: Version,
    sha: str,
    layout: str,
    facts: list[dockerfile_parse.DockerfileFacts],
    cmake_text: str | None,
) -> dict[str, Any]:
    """One vllm.toml record from parsed Dockerfiles (base image file first: its defaults win)."""
    args: dict[str, str] = {}
    clones: list[str] = []
    aiter_literal = next((f.aiter_build_archs for f in facts if f.aiter_build_archs), [])
    fa_build = next((f.fa_build_archs for f in facts if f.fa_build_archs), None)
    for f in facts:
        for k, v in f.args.items():
            args.setdefault(k, v)
        clones.extend(f.clones)
    record: dict[str, Any] = {"version": str(version), "tag_commit": sha[:10], "layout": layout}
    _base_image_facts(record, args)
    arch = _arch_list(args.get("PYTORCH_ROCM_ARCH"))
    if arch:
        record["arch"] = arch
    aiter = _arch_list(args.get("AITER_ROCM_ARCH")) or aiter_literal
    if aiter:
        record["aiter_arch"] = aiter
    if cmake_text is not None:
        cmake = dockerfile_parse.cmake_hip_archs(cmake_text)
        if cmake:
            record["cmake_arch"] = cmake
    pins = _pins(args, clones)
    if pins:
        record["pins"] = pins
    fa = _arch_list(fa_build)
    if fa and "flash_attention" in pins:
        record["fa_arch"] = fa  # FlashAttention's GPU_ARCHS as its build line evaluates it
    if "mori" in pins:
        # MORI_GPU_ARCHS where the stack sets it; [] where it does not (MORI decides itself).
        record["mori_arch"] = _arch_list(args.get("MORI_GPU_ARCHS")) or []
    return record


def _base_image_facts(record: dict[str, Any], args: Mapping[str, str]) -> None:
    """The base image, and the ROCm and Python its tag (or PYTHON_VERSION) names."""
    base_image = args.get("BASE_IMAGE")
    if not base_image:
        return
    record["base_image"] = base_image
    _, _, image_tag = base_image.partition(":")
    m = _ROCM_IN_TAG.search(image_tag)
    if m:
        record["rocm"] = m.group(1)
    py = args.get("PYTHON_VERSION") or _first(_PY_IN_TAG, image_tag)
    if py and _PY.match(py):
        record["python"] = py


def _pins(args: Mapping[str, str], clones: list[str]) -> dict[str, dict[str, str]]:
    """Component -> {repo, ref}: the ref from its ARG, the repo from its ARG or else from the
    ``git clone`` URL that names the component's repository."""
    clone_repos: dict[str, str] = {}
    for url in clones:
        repo = dockerfile_parse.github_repo(url)
        if repo:
            comp = _CLONE_NAMES.get(repo.split("/", 1)[1].lower())
            if comp:
                clone_repos.setdefault(comp, repo)
    pins: dict[str, dict[str, str]] = {}
    for comp, (ref_arg, repo_arg) in COMPONENT_ARGS.items():
        ref = args.get(ref_arg)
        if not ref:
            continue
        repo_url = args.get(repo_arg)
        repo = dockerfile_parse.github_repo(repo_url) if repo_url else clone_repos.get(comp)
        if repo_url and repo is None:
            repo = repo_url  # not a GitHub URL: kept verbatim so the safety check names it
        if repo:
            pins[comp] = {"repo": repo, "ref": ref}
    return pins


def _arch_list(value: str | None) -> list[str]:
    if not value:
        return []
    return [a.strip() for a in re.split(r"[;,\s]+", value) if a.strip()]


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    m = pattern.search(text)
    return m.group(1) if m else None
