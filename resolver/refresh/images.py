"""Container images: tags and digests of vllm/vllm-openai-rocm and rocm/vllm from an OCI registry.

Speaks the OCI distribution API (``/v2/<repo>/tags/list`` with ``Link`` pagination, ``HEAD
/v2/<repo>/manifests/<tag>`` for ``Docker-Content-Digest``), with the anonymous bearer-token
handshake Docker Hub asks for. Tag names of rocm/vllm are parsed into ROCm, vLLM, Python, torch and
family; a tag already in images.toml keeps its curated facts and gains (or updates) its digest.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from packaging.version import Version

from resolver.refresh.common import (
    IMAGE_REPOS,
    Candidate,
    Endpoints,
    Progress,
    Source,
    SourceResult,
    today,
)
from resolver.refresh.http import HttpClient, Response, parse_link_next
from resolver.util.errors import RegistryError
from resolver.util.safety import is_safe

MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.v2+json"
)
_VER = r"[0-9]+(?:\.[0-9]+){1,3}(?:\.post[0-9]+)?"
_FAMILY = re.compile(r"^(?:cdna|rdna|navi|mi[0-9]+[a-z]*|gfx[0-9a-fA-FxX]{3,4}-[a-z]+)\Z")
_DATE = re.compile(r"^[0-9]{8}\Z")
_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')


def parse_rocm_vllm_tag(tag: str) -> dict[str, str] | None:
    """``rocm6.4.1_vllm_0.10.1_20250909`` -> {rocm, vllm, ...}; None for tags in no release scheme.

    Seen schemes: rocm<R>_vllm_<V>_<date>, rocm<R>_instinct_vllm<V>_<date>,
    rocm<R>_<family>_ubuntu<U>_py<P>_vllm_<V>,
    rocm<R>_<family>_ubuntu<U>_py<P>_pytorch_<T>_vllm_<V>.
    """
    tokens = tag.split("_")
    m = re.fullmatch(rf"rocm({_VER})", tokens[0]) if tokens else None
    if not m:
        return None
    out = {"rocm": m.group(1)}
    i = 1
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok in ("vllm", "pytorch") and re.fullmatch(_VER, nxt):
            out["vllm" if tok == "vllm" else "torch"] = nxt
            i += 2
            continue
        if m2 := re.fullmatch(rf"vllm({_VER})", tok):
            out["vllm"] = m2.group(1)
        elif m2 := re.fullmatch(r"py(3\.[0-9]{1,2})", tok):
            out["python"] = m2.group(1)
        elif m2 := re.fullmatch(r"ubuntu([0-9]+\.[0-9]+)", tok):
            out["os"] = f"ubuntu-{m2.group(1)}"
        elif _FAMILY.match(tok) and "family_tag" not in out:
            out["family_tag"] = tok
        elif not (_DATE.match(tok) or tok == "instinct"):
            return None  # an unknown word: not a release tag we can read safely
        i += 1
    if "vllm" not in out:
        return None
    for field_name in ("rocm", "vllm"):
        try:
            Version(out[field_name])
        except ValueError:
            return None
    return out


MAX_TAGS = 1000  # per image repository; the real repos have a few hundred


class ImagesSource(Source):
    name = "images"
    audit = False  # --audit: also read each image's GPU code (artifacts.audit) into its arch list

    def __init__(
        self,
        client: HttpClient,
        endpoints: Endpoints,
        current: dict[str, list[dict[str, Any]]],
        *,
        repos: tuple[str, ...] = IMAGE_REPOS,
        progress: Progress | None = None,
    ) -> None:
        super().__init__(client, endpoints, current, progress=progress)
        self.repos = repos
        self._tokens: dict[str, str] = {}

    # --- registry ---------------------------------------------------------------------------

    def _get(
        self, repo: str, url: str, *, method: str = "GET", accept: str | None = None
    ) -> Response:
        headers = {"Accept": accept} if accept else {}
        if repo in self._tokens:
            headers["Authorization"] = f"Bearer {self._tokens[repo]}"
        resp = self.client.get(url, headers=headers, method=method, allow=frozenset({401, 404}))
        if resp.status == 401 and repo not in self._tokens:
            self._tokens[repo] = self._token(repo, resp.headers.get("www-authenticate", ""))
            return self._get(repo, url, method=method, accept=accept)
        if resp.status == 401:
            raise RegistryError(
                f"{method} {url}: the registry refused the token", hint="check registry access"
            )
        return resp

    def _token(self, repo: str, challenge: str) -> str:
        """Docker Hub's anonymous pull token
        (``WWW-Authenticate: Bearer realm=...,service=...``)."""
        params = dict(_CHALLENGE.findall(challenge))
        realm = params.pop("realm", "")
        if not challenge.lower().startswith("bearer") or not is_safe("url", realm):
            raise RegistryError(
                f"the registry asks for authentication this tool cannot do ({challenge[:80]!r})",
                hint="use an anonymous-pull registry or a mirror (ROCM_VLLM_REGISTRY)",
            )
        params.setdefault("scope", f"repository:{repo}:pull")
        data, _ = self.client.get_json(f"{realm}?{urlencode(params)}")
        token = data.get("token") or data.get("access_token") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token:
            raise RegistryError(f"{realm}: no token in the answer", hint="retry later")
        return token

    def list_tags(self, repo: str, result: SourceResult) -> list[str]:
        reg = self._registry()
        url: str | None = f"{reg.url}/v2/{reg.repository(repo)}/tags/list?n=1000"
        tags: list[str] = []
        pages = 0
        while url and pages < 100:
            resp = self._get(reg.repository(repo), url)
            pages += 1
            if resp.status == 404:
                result.refuse(f"image repo {repo}", f"{url} answered 404 (no such repository)")
                return tags
            data = resp.json()
            items = data.get("tags") if isinstance(data, dict) else None
            if not isinstance(items, list):
                raise RegistryError(
                    f"{url}: the tag list has no 'tags' array", hint="check ROCM_VLLM_REGISTRY"
                )
            for tag in items:
                if len(tags) >= MAX_TAGS:
                    # Every tag costs a HEAD request and maybe a record: a registry that lists
                    # thousands is not one of the image repos this tool knows.
                    result.refuse(
                        f"image repo {repo}",
                        f"lists more than {MAX_TAGS} tags; only the first {MAX_TAGS} were read",
                    )
                    return tags
                if isinstance(tag, str) and is_safe("image_tag", tag):
                    tags.append(tag)
                else:
                    result.refuse(
                        f"image {repo}:{str(tag)[:60]!r}", "is not an acceptable image tag"
                    )
            nxt = parse_link_next(resp.headers.get("link"))
            url = _absolute(reg.url, nxt) if nxt else None
        return tags

    def _registry(self) -> Any:
        """The registry and repository prefix exactly as ``image --digest`` reads the same
        ``ROCM_VLLM_REGISTRY`` (``https://harbor.example/dockerhub`` asks
        ``/v2/dockerhub/<repo>/...``): one base URL, one URL shape."""
        from resolver.artifacts.registry import parse_registry

        return parse_registry(self.ep.registry)

    def digest(self, repo: str, tag: str) -> tuple[str | None, str]:
        reg = self._registry()
        url = f"{reg.url}/v2/{reg.repository(repo)}/manifests/{tag}"
        resp = self._get(reg.repository(repo), url, method="HEAD", accept=MANIFEST_TYPES)
        return (resp.headers.get("docker-content-digest") if resp.ok else None), url

    # --- records ----------------------------------------------------------------------------

    def read(self) -> SourceResult:
        result = SourceResult(self.name)
        existing = {(r.get("repo"), r.get("tag")): r for r in self.current.get("images.toml", [])}
        releases = {_version_key(r.get("version")): r for r in self.current.get("vllm.toml", [])}
        wanted: list[tuple[str, str, dict[str, Any]]] = []
        for repo in self.repos:
            for tag in self.list_tags(repo, result):
                base = self._describe(repo, tag, existing, releases)
                if base is None:
                    result.skipped.append(f"{repo}:{tag}")
                else:
                    wanted.append((repo, tag, base))
        for i, (repo, tag, record) in enumerate(wanted):
            if self.progress:
                self.progress(f"{repo}:{tag}", i, len(wanted))
            digest, url = self.digest(repo, tag)
            if digest is None:
                result.refuse(
                    f"image {repo}:{tag}", "the registry lists the tag but has no manifest for it"
                )
                continue
            if not is_safe("digest", digest):
                result.refuse(
                    f"image {repo}:{tag}", f"digest {digest[:80]!r} is not a sha256 digest"
                )
                continue
            old = existing.get((repo, tag))
            if old is not None and old.get("digest") == digest:
                continue  # nothing new about this tag
            record = dict(record)
            record["digest"] = digest
            record["source"] = url if old is None else f"{old.get('source')}; digest: {url}"
            record["read_at"] = today()
            result.candidates.append(Candidate("images.toml", f"{repo}:{tag}", record))
        if self.progress and wanted:
            self.progress("images", len(wanted), len(wanted))
        if self.audit:
            self._audit_all(result, existing)
        return result

    def _audit_all(
        self, result: SourceResult, existing: dict[tuple[Any, Any], dict[str, Any]]
    ) -> None:
        """Audit every image that has a digest (read now or already in the data) straight from
        the registry, and propose its audited arch list: what its libraries carry, over what a
        page or Dockerfile claims. A failed audit is a refusal for that image, never a guess."""
        from resolver.artifacts.audit import audit
        from resolver.artifacts.images import audited_record
        from resolver.data import matrix
        from resolver.util.errors import ResolverError

        m = matrix.load()
        reg = self._registry()
        proposed = {(c.record.get("repo"), c.record.get("tag")): c for c in result.candidates}
        merged = {**existing, **{key: c.record for key, c in proposed.items()}}
        records = [rec for rec in merged.values() if rec.get("digest")]
        for i, rec in enumerate(records):
            repo, tag, digest = str(rec["repo"]), str(rec["tag"]), str(rec["digest"])
            if self.progress:
                self.progress(f"audit {repo}:{tag}", i, len(records))
            try:
                found = audit(m, f"docker://{repo}@{digest}", registry=reg.url)
            except ResolverError as exc:
                result.refuse(f"image {repo}:{tag}", f"audit: {exc.message}")
                continue
            record = audited_record(m, rec, digest, found)
            if record is None:
                result.refuse(
                    f"image {repo}:{tag}",
                    "audit: none of the libraries that decide 'invalid device function' "
                    "(vLLM's, torch's, AITER's, FlashAttention's) is in the image",
                )
                continue
            if record == existing.get((repo, tag)):
                continue
            record["read_at"] = today()
            cand = Candidate("images.toml", f"{repo}:{tag}", record)
            if (repo, tag) in proposed:
                result.candidates[result.candidates.index(proposed[(repo, tag)])] = cand
            else:
                result.candidates.append(cand)
        if self.progress and records:
            self.progress("audit", len(records), len(records))

    def _describe(
        self,
        repo: str,
        tag: str,
        existing: dict[tuple[Any, Any], dict[str, Any]],
        releases: dict[str, dict[str, Any]],
    ) -> dict[str, Any] | None:
        old = existing.get((repo, tag))
        if old is not None:
            return dict(old)  # curated facts stay; only the digest is read
        if repo == "vllm/vllm-openai-rocm":
            return _official(tag, releases)
        parsed = parse_rocm_vllm_tag(tag)
        if parsed is None:
            return None
        rec = _amd(repo, tag, parsed, existing)
        stream = self._streams().get(_version_key(rec["rocm"]))
        if stream and stream != "legacy":
            rec["stream"] = stream
        return rec

    def _streams(self) -> dict[str, str]:
        return {
            _version_key(r.get("version")): str(r.get("stream"))
            for r in self.current.get("rocm.toml", [])
        }


def _version_key(value: Any) -> str:
    try:
        return str(Version(str(value)))
    except ValueError:
        return str(value)


def _official(tag: str, releases: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    m = re.fullmatch(rf"v({_VER})", tag)
    if not m:
        return None  # latest, nightly-<sha>, ...: not a release
    version = m.group(1)
    rec: dict[str, Any] = {
        "repo": "vllm/vllm-openai-rocm",
        "tag": tag,
        "vllm": version,
        "entrypoint": "vllm-serve",
    }
    release = releases.get(_version_key(version))
    if release and release.get("rocm"):
        for field_name in ("rocm", "python", "arch"):
            if release.get(field_name):
                rec[field_name] = release[field_name]
        rec["confidence"] = "inferred"
        rec["note"] = (
            "Tag and digest read from the registry; ROCm, Python and arch from vllm.toml release "
            f"{version}."
        )
    else:
        rec["confidence"] = "inferred"
        rec["note"] = (
            f"Tag and digest read from the registry; vllm.toml does not know release {version}'s "
            "build yet."
        )
    return rec


def _amd(
    repo: str, tag: str, parsed: dict[str, str], existing: dict[tuple[Any, Any], dict[str, Any]]
) -> dict[str, Any]:
    rec: dict[str, Any] = {"repo": repo, "tag": tag, "rocm": parsed["rocm"], "vllm": parsed["vllm"]}
    for field_name in ("python", "torch", "family_tag"):
        if field_name in parsed:
            rec[field_name] = parsed[field_name]
    # AMD publishes no arch list: carry it over from the newest known image of the same family.
    same = [
        r
        for (r_repo, _), r in existing.items()
        if r_repo == repo and r.get("family_tag") == parsed.get("family_tag") and r.get("arch")
    ]
    same.sort(key=lambda r: _sortable(r.get("rocm")), reverse=True)
    if same:
        rec["arch"] = list(same[0]["arch"])
        rec["note"] = (
            "Tag and digest read from the registry; arch list carried over from "
            f"{repo}:{same[0].get('tag')} (same family)."
        )
    else:
        rec["note"] = "Tag and digest read from the registry; AMD publishes no arch list for it."
    rec["entrypoint"] = "shell"
    rec["confidence"] = "inferred"
    return rec


def _sortable(value: Any) -> Version:
    try:
        return Version(str(value))
    except ValueError:
        return Version("0")


def _absolute(base: str, target: str) -> str:
    if target.startswith(("http://", "https://")):
        return target
    return base + (target if target.startswith("/") else "/" + target)
