"""Types shared by the refresh sources: where upstream lives, what a source found, what it
refused."""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resolver.refresh.http import HttpClient
from resolver.data import resources

# Where each upstream lives; every one can point at a mirror or a test server.
ENV_GITHUB_API = "ROCM_VLLM_GITHUB_API"
ENV_GITHUB_RAW = "ROCM_VLLM_GITHUB_RAW"
ENV_REGISTRY = "ROCM_VLLM_REGISTRY"
ENV_WHEELS = resources.ENV_WHEELS
ENV_INDEX = "ROCM_VLLM_INDEX_URL"

VLLM_REPO = "vllm-project/vllm"
ROCM_REPO = "ROCm/ROCm"
IMAGE_REPOS = ("vllm/vllm-openai-rocm", "rocm/vllm")

Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True)
class Endpoints:
    github_api: str = "https://api.github.com"
    github_raw: str = "https://raw.githubusercontent.com"
    registry: str = "https://registry-1.docker.io"
    wheels: str = resources.DEFAULT_WHEELS
    github_token: str | None = None
    index: str | None = None  # a PEP 691 package index; None: pip's configured index

    # (host[:port], user, password) taken off the base URLs' userinfo: sent as HTTP auth by the
    # client (``HttpClient.adopt``), never kept in a URL that a record or a message shows.
    credentials: tuple[tuple[str, str, str], ...] = field(default=(), repr=False)

    @classmethod
    def from_env(cls) -> Endpoints:
        """The base URLs and token from the environment, each refused with a one-line error
        naming the variable (never its value) when it carries a control character (a base URL
        also with a query); a token file's trailing CR/LF is taken off."""
        from resolver.util import redact

        env = os.environ
        creds: list[tuple[str, str, str]] = []

        def base(name: str, default: str) -> str:
            clean, auth = redact.base_url(name, env.get(name, default))
            if auth is not None:
                creds.append((clean.partition("://")[2].partition("/")[0].lower(), *auth))
            return clean.rstrip("/")

        token = redact.setting("GITHUB_TOKEN", (env.get("GITHUB_TOKEN") or "").strip())
        return cls(
            github_api=base(ENV_GITHUB_API, cls.github_api),
            github_raw=base(ENV_GITHUB_RAW, cls.github_raw),
            # The registry keeps its URL: parse_registry refuses userinfo there, as `image` does.
            registry=redact.setting(ENV_REGISTRY, env.get(ENV_REGISTRY, cls.registry)).rstrip("/"),
            wheels=base(ENV_WHEELS, cls.wheels),
            github_token=token or None,
            index=base(ENV_INDEX, "") or None,
            credentials=tuple(creds),
        )

    def github_headers(self) -> dict[str, str]:
        headers = {"Accept": "application/vnd.github+json"}
        if self.github_token:
            headers["Authorization"] = f"Bearer {self.github_token}"
        return headers


@dataclass(frozen=True)
class Candidate:
    """A record as read from upstream, in the TOML shape of its data file."""

    file: str
    key: str
    record: dict[str, Any]


@dataclass(frozen=True)
class Refusal:
    """Something upstream said that is not trusted enough to keep; named in the output."""

    source: str
    what: str
    reason: str


@dataclass
class SourceResult:
    source: str
    candidates: list[Candidate] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # read but not a release (rc tags, "latest")

    def refuse(self, what: str, reason: str) -> None:
        self.refused.append(Refusal(self.source, what, reason))


def today() -> str:
    return _dt.datetime.now(_dt.UTC).date().isoformat()


_SHA = re.compile(r"^[0-9a-f]{40}\Z")


class Source:
    """One upstream source: fetches once in ``read`` and answers with a ``SourceResult``.

    ``current`` is the data in use (embedded + overlay), as raw records per file."""

    name = ""

    def __init__(
        self,
        client: HttpClient,
        endpoints: Endpoints,
        current: dict[str, list[dict[str, Any]]],
        *,
        progress: Progress | None = None,
    ) -> None:
        self.client = client
        self.ep = endpoints
        for host, user, password in endpoints.credentials:
            client.credentials[host] = (user, password)
        self.current = current
        self.progress = progress

    def read(self) -> SourceResult:
        raise NotImplementedError

    def known_releases(self) -> dict[Any, dict[str, Any]]:
        """The vLLM releases in the data in use, by Version (records whose version does not parse
        are left to the loader to refuse)."""
        from packaging.version import Version

        known: dict[Any, dict[str, Any]] = {}
        for rec in self.current.get("vllm.toml", []):
            try:
                known[Version(str(rec.get("version")))] = rec
            except ValueError:  # InvalidVersion, or digits past Python's int-string limit
                continue
        return known

    def github_tags(
        self, repo: str, result: SourceResult, *, need_sha: bool
    ) -> list[tuple[str, str]]:
        """(tag, commit sha) for every tag of ``repo`` from the GitHub API, following pagination.

        Names must be safe git refs; with ``need_sha`` a tag without a 40-hex commit is refused,
        otherwise its sha is ''. At most 50 pages: far beyond any repo here, and it stops a Link
        header that loops."""
        from resolver.refresh.http import parse_link_next
        from resolver.util.safety import is_safe

        url: str | None = f"{self.ep.github_api}/repos/{repo}/tags?per_page=100"
        out: list[tuple[str, str]] = []
        pages = 0
        while url and pages < 50:
            if self.progress:
                self.progress(f"{repo} tags", pages, pages + 1)
            data, resp = self.client.get_json(url, headers=self.ep.github_headers())
            pages += 1
            if not isinstance(data, list):
                result.refuse(url, "the tags page is not a JSON list")
                break
            for item in data:
                name = item.get("name") if isinstance(item, dict) else None
                commit = item.get("commit") if isinstance(item, dict) else None
                sha = commit.get("sha") if isinstance(commit, dict) else None
                if not isinstance(name, str) or (need_sha and not isinstance(sha, str)):
                    result.refuse(f"tag entry {str(item)[:60]!r}", "has no name or commit sha")
                    continue
                if not is_safe("ref", name):
                    result.refuse(f"tag {name[:60]!r}", "is not an acceptable git ref")
                    continue
                if need_sha and not _SHA.match(str(sha)):
                    result.refuse(
                        f"tag {name}", f"commit {str(sha)[:60]!r} is not a 40-hex commit sha"
                    )
                    continue
                out.append((name, sha if isinstance(sha, str) and _SHA.match(sha) else ""))
            url = parse_link_next(resp.headers.get("link"))
        return out
