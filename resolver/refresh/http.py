"""One HTTP session for every upstream source: timeouts, retries, conditional requests, a disk cache.

Why a cache: a refresh reads dozens of pages and files. Mutable resources (API pages, tag lists,
index pages) are revalidated with ``If-None-Match`` / ``If-Modified-Since``, so a repeat costs a 304
each. Files addressed by a full commit SHA cannot change, so they are answered from the cache
without a request at all (``immutable=True``), including a remembered 404.

Failures become ``RegistryError`` (exit 4) with the URL in the message; nothing here prints.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resolver import atomic
from resolver.errors import RegistryError

DEFAULT_TIMEOUT: tuple[float, float] = (5.0, 30.0)  # connect, read
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
USER_AGENT = "rocm-vllm-resolver (matrix refresh)"
_KEPT_HEADERS = ("etag", "last-modified", "link", "content-type", "docker-content-digest", "date")


@dataclass(frozen=True)
class Response:
    url: str
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    from_cache: bool = False

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            raise RegistryError(
                f"{self.url}: the response is not valid JSON",
                hint="the upstream answered with something else (a proxy page?); retry later "
                "or point the base URL at a working mirror",
            ) from None


class IntegrityError(RegistryError):
    """A download that is not what the index promised (hash or size): refuse that file only."""


@dataclass(frozen=True)
class SentRequest:
    """What went over the wire, so tests and ``--json`` can show how much a refresh cost."""

    method: str
    url: str
    conditional: bool
    status: int


@dataclass
class HttpClient:
    cache_dir: Path | None = None
    timeout: tuple[float, float] = DEFAULT_TIMEOUT
    retries: int = 3
    backoff: float = 0.5
    sleep: Callable[[float], None] = time.sleep
    sent: list[SentRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        import requests  # only refresh needs requests; keep it off the check path

        self._requests = requests
        self.session = requests.Session()
        self.session.headers["User-Agent"] = USER_AGENT

    def close(self) -> None:
        self.session.close()

    # --- public ---------------------------------------------------------------------------

    def get(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        immutable: bool = False,
        method: str = "GET",
        allow: frozenset[int] = frozenset({404}),
    ) -> Response:
        """Fetch ``url``; statuses in ``allow`` are returned, any other failure raises."""
        key = self._key(method, url, headers)
        cached = self._cache_read(key)
        if immutable and cached is not None:
            return cached
        send_headers = dict(headers or {})
        if cached is not None and cached.ok:
            if "etag" in cached.headers:
                send_headers["If-None-Match"] = cached.headers["etag"]
            if "last-modified" in cached.headers:
                send_headers["If-Modified-Since"] = cached.headers["last-modified"]
        conditional = "If-None-Match" in send_headers or "If-Modified-Since" in send_headers
        resp = self._send(method, url, send_headers, conditional)
        if resp.status == 304 and cached is not None:
            return Response(
                url, cached.status, {**cached.headers, **_pick(resp.headers)}, cached.body, True
            )
        if resp.ok or (resp.status == 404 and immutable):
            self._cache_write(key, resp)
        if resp.ok or resp.status in allow:
            return resp
        raise RegistryError(
            f"{method} {url} failed: HTTP {resp.status}",
            hint=_hint_for(resp.status),
        )

    def get_json(
        self, url: str, *, headers: Mapping[str, str] | None = None
    ) -> tuple[Any, Response]:
        resp = self.get(url, headers=headers, allow=frozenset())
        return resp.json(), resp

    def download(
        self,
        url: str,
        *,
        sha256: str,
        max_bytes: int,
        deadline: float = 900.0,
        progress: Callable[[int, int], None] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> bytes:
        """A large file (an sdist) streamed to memory, checked against its published sha256.

        Not kept in the response cache (the caller caches what it extracted, keyed by the hash).
        Bounded in size and in total time, whatever the server's pacing; connection failures are
        retried like ``get``. A hash mismatch is an upstream failure: nothing is returned."""
        req = self._requests
        last_problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self.sleep(self._delay(attempt, None))
            started = time.monotonic()
            digest = hashlib.sha256()
            chunks: list[bytes] = []
            size = 0
            try:
                with self.session.get(
                    url, headers=dict(headers or {}), timeout=self.timeout, stream=True
                ) as r:
                    self.sent.append(SentRequest("GET", url, False, r.status_code))
                    if r.status_code in RETRY_STATUSES:
                        last_problem = f"HTTP {r.status_code}"
                        continue
                    if not 200 <= r.status_code < 300:
                        raise RegistryError(
                            f"GET {url} failed: HTTP {r.status_code}", hint=_hint_for(r.status_code)
                        )
                    total = _int_header(r.headers.get("Content-Length"))
                    if total is not None and total > max_bytes:
                        raise IntegrityError(
                            f"GET {url}: {total} bytes is more than the {max_bytes} allowed",
                            hint="the index lists a file far larger than any release; check the mirror",
                        )
                    for chunk in r.iter_content(chunk_size=1 << 16):
                        size += len(chunk)
                        if size > max_bytes:
                            raise IntegrityError(
                                f"GET {url}: more than {max_bytes} bytes", hint="check the mirror"
                            )
                        if time.monotonic() - started > deadline:
                            raise RegistryError(
                                f"GET {url}: not finished within {deadline:.0f} s",
                                hint="the server is too slow; retry later or use a closer mirror",
                            )
                        digest.update(chunk)
                        chunks.append(chunk)
                        if progress:
                            progress(size, total or 0)
            except (req.Timeout, req.ConnectionError, req.exceptions.ChunkedEncodingError) as exc:
                self.sent.append(SentRequest("GET", url, False, 0))
                last_problem = _short(exc)
                continue
            except req.RequestException as exc:
                raise RegistryError(f"GET {url} failed: {_short(exc)}", hint=_hint_for(0)) from None
            if digest.hexdigest() != sha256:
                raise IntegrityError(
                    f"GET {url}: sha256 {digest.hexdigest()[:16]}... does not match the index's "
                    f"{sha256[:16]}...",
                    hint="the download was altered or truncated, or the mirror serves another file; "
                    "nothing was read from it",
                )
            return b"".join(chunks)
        raise RegistryError(
            f"GET {url} failed after {self.retries + 1} attempts: {last_problem}",
            hint="the index is unreachable; retry later or set ROCM_VLLM_INDEX_URL to a mirror",
        )

    # --- wire -------------------------------------------------------------------------------

    def _send(
        self, method: str, url: str, headers: Mapping[str, str], conditional: bool
    ) -> Response:
        req = self._requests
        last_problem = ""
        last_retry_after: str | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                self.sleep(self._delay(attempt, last_retry_after))
            last_retry_after = None
            try:
                r = self.session.request(method, url, headers=dict(headers), timeout=self.timeout)
                body = r.content  # reads the whole body; a short body raises here
            except (req.Timeout, req.ConnectionError, req.exceptions.ChunkedEncodingError) as exc:
                self.sent.append(SentRequest(method, url, conditional, 0))
                last_problem = _short(exc)
                continue
            status = r.status_code
            self.sent.append(SentRequest(method, url, conditional, status))
            if status in RETRY_STATUSES:
                last_problem = f"HTTP {status}"
                last_retry_after = r.headers.get("Retry-After")
                continue
            return Response(url, status, _pick(r.headers), body)
        raise RegistryError(
            f"{method} {url} failed after {self.retries + 1} attempts: {last_problem}",
            hint="the upstream is unreachable or overloaded; retry later, or set the source's "
            "base URL (ROCM_VLLM_GITHUB_API, ROCM_VLLM_GITHUB_RAW, ROCM_VLLM_REGISTRY, "
            "ROCM_VLLM_WHEELS) to a mirror",
        )

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after and retry_after.isdigit():
            return min(float(retry_after), 60.0)
        return float(self.backoff * (2 ** (attempt - 1)))

    # --- cache ------------------------------------------------------------------------------

    def _key(self, method: str, url: str, headers: Mapping[str, str] | None) -> str:
        accept = (headers or {}).get("Accept", "")
        return hashlib.sha256(f"{method} {url} {accept}".encode()).hexdigest()

    def _cache_read(self, key: str) -> Response | None:
        if self.cache_dir is None:
            return None
        path = self.cache_dir / f"{key}.json"
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
            body = (self.cache_dir / f"{key}.body").read_bytes()
            return Response(meta["url"], int(meta["status"]), dict(meta["headers"]), body, True)
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a missing or damaged entry is simply not cached

    def _cache_write(self, key: str, resp: Response) -> None:
        if self.cache_dir is None:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        meta = {"url": resp.url, "status": resp.status, "headers": dict(resp.headers)}
        atomic.write_atomic(self.cache_dir / f"{key}.body", resp.body)
        atomic.write_atomic(self.cache_dir / f"{key}.json", json.dumps(meta).encode())


def _pick(headers: Mapping[str, str]) -> dict[str, str]:
    lowered = {k.lower(): v for k, v in headers.items()}
    kept = {k: lowered[k] for k in _KEPT_HEADERS if k in lowered}
    if "www-authenticate" in lowered:
        kept["www-authenticate"] = lowered["www-authenticate"]
    return kept


def _int_header(value: str | None) -> int | None:
    if value is None or not value.isascii() or not value.isdigit() or len(value) > 18:
        return None
    return int(value)


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"{type(exc).__name__}: {text[:200]}"


def _hint_for(status: int) -> str:
    if status in (401, 403):
        return "the upstream refused the request; set GITHUB_TOKEN for GitHub, or check registry access"
    return "check the base URL of this source (see rocm-vllm matrix refresh --help)"


def parse_link_next(link: str | None) -> str | None:
    """The ``rel="next"`` target of an RFC 8288 ``Link`` header (GitHub and OCI pagination)."""
    if not link:
        return None
    for part in link.split(","):
        section = part.split(";")
        if len(section) < 2:
            continue
        target = section[0].strip()
        if not (target.startswith("<") and target.endswith(">")):
            continue
        if any(p.strip().replace(" ", "") in ('rel="next"', "rel=next") for p in section[1:]):
            return target[1:-1]
    return None
