"""Types shared by the refresh sources: where upstream lives, what a source found, what it refused."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resolver.refresh.http import HttpClient

# Where each upstream lives; every one can point at a mirror or a test server.
ENV_GITHUB_API = "ROCM_VLLM_GITHUB_API"
ENV_GITHUB_RAW = "ROCM_VLLM_GITHUB_RAW"
ENV_REGISTRY = "ROCM_VLLM_REGISTRY"
ENV_WHEELS = "ROCM_VLLM_WHEELS"

VLLM_REPO = "vllm-project/vllm"
ROCM_REPO = "ROCm/ROCm"
IMAGE_REPOS = ("vllm/vllm-openai-rocm", "rocm/vllm")

Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True)
class Endpoints:
    github_api: str = "https://api.github.com"
    github_raw: str = "https://raw.githubusercontent.com"
    registry: str = "https://registry-1.docker.io"
    wheels: str = "https://wheels.vllm.ai/rocm"
    github_token: str | None = None

    @classmethod
    def from_env(cls) -> Endpoints:
        env = os.environ
        return cls(
            github_api=env.get(ENV_GITHUB_API, cls.github_api).rstrip("/"),
            github_raw=env.get(ENV_GITHUB_RAW, cls.github_raw).rstrip("/"),
            registry=env.get(ENV_REGISTRY, cls.registry).rstrip("/"),
            wheels=env.get(ENV_WHEELS, cls.wheels).rstrip("/"),
            github_token=env.get("GITHUB_TOKEN") or None,
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


def now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


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
        self.current = current
        self.progress = progress

    def read(self) -> SourceResult:
        raise NotImplementedError
