"""One HTTP session for every upstream source: timeouts, retries, conditional requests, a disk
cache.

Why a cache: a refresh reads dozens of pages and files. Mutable resources (API pages, tag lists,
index pages) are revalidated with ``If-None-Match`` / ``If-Modified-Since``, so a repeat costs a 304
each. Files addressed by a full commit SHA cannot change, so they are answered from the cache
without a request at all (``immutable=True``), including a remembered 404.

Failures become ``RegistryError`` (exit 4) with the URL in the message; nothing here prints.
A URL's ``user:token@`` (an Artifactory or Nexus mirror) is taken off before the request and sent
as HTTP auth to that host only (``adopt``): what is kept, cached, counted or shown is the URL
without it, and every URL a message shows goes through ``util.redact``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resolver.util import atomic, bounded, deadline, redact
from resolver.util.errors import RegistryError

DEFAULT_TIMEOUT: tuple[float, float] = (5.0, 30.0)  # connect, read
DEFAULT_DEADLINE = 120.0  # one get(), retries and sleeps included (ROCM_VLLM_HTTP_DEADLINE)
MAX_BODY = 32 * 1024 * 1024  # an API page, index page or data file; sdists use download()
DOWNLOAD_DEADLINE = 900.0  # one download() (an sdist of ~50 MB on a slow link), the same env var
MAX_RETRY_AFTER = 30.0  # a Retry-After of an hour is not honoured for an hour
_sleep = time.sleep  # one place for tests to stop retries from waiting
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
USER_AGENT = "rocm-vllm-resolver (matrix refresh)"
_KEPT_HEADERS = (
    "etag",
    "last-modified",
    "link",
    "content-type",
    "docker-content-digest",
    "date",
    "x-repo-commit",  # the Hub's snapshot commit (refresh/hf.py)
)


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
            return bounded.loads_json(self.body)
        except ValueError as exc:  # not JSON, not UTF-8, nested too deep, a number too long
            detail = f" ({exc})" if isinstance(exc, bounded.TooDeepError) else ""
            cached = (
                " (answered from the HTTP cache: delete the cache dir to read it again)"
                if self.from_cache
                else ""
            )
            raise RegistryError(
                f"{redact.url(self.url)}: the response is not valid JSON{detail}{cached}",
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
    sleep: Callable[[float], None] | None = None  # None: _sleep (time.sleep)
    sent: list[SentRequest] = field(default_factory=list)
    deadline: float | None = None  # seconds per get(); None: ROCM_VLLM_HTTP_DEADLINE or 120
    max_body: int = MAX_BODY
    # host[:port] -> (user, password), from URLs given with userinfo; never shown
    credentials: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        import requests  # only refresh needs requests; keep it off the check path

        self._requests = requests
        self.session = requests.Session()
        self.session.headers["User-Agent"] = USER_AGENT

    def close(self) -> None:
        self.session.close()

    def adopt(self, url: str) -> str:
        """``url`` without its userinfo, which is kept as the HTTP auth of its host."""
        clean, auth = redact.split_userinfo(url)
        if auth is not None:
            self.credentials[_host(clean)] = auth
        return clean

    def _auth(self, url: str, headers: Mapping[str, str]) -> tuple[str, str] | None:
        # An explicit Authorization (a GitHub or registry token) wins over the URL's userinfo.
        if any(k.lower() == "authorization" for k in headers):
            return None
        return self.credentials.get(_host(url))

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
        """Fetch ``url``; statuses in ``allow`` are returned, any other failure raises.

        The whole call (retries and their sleeps included) ends within the client's deadline."""
        url = self.adopt(_sendable(url))
        limit = (
            self.deadline if self.deadline is not None else deadline.configured(DEFAULT_DEADLINE)
        )
        try:
            with deadline.within(limit):
                return self._get(
                    url, headers=headers, immutable=immutable, method=method, allow=allow
                )
        except deadline.DeadlineExceeded:
            self.session.close()  # the interrupted connection is not reused
            raise RegistryError(
                f"{method} {redact.url(url)}: not finished within {limit:g} s",
                hint="the server is too slow or stalls; retry later, use a closer mirror, or "
                f"raise {deadline.ENV}",
            ) from None

    def _get(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None,
        immutable: bool,
        method: str,
        allow: frozenset[int],
    ) -> Response:
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
            f"{method} {redact.url(url)} failed: HTTP {resp.status}",
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
        deadline_s: float = DOWNLOAD_DEADLINE,
        progress: Callable[[int, int], None] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> bytes:
        """A large file (an sdist) streamed to memory, checked against its published sha256.

        Not kept in the response cache (the caller caches what it extracted, keyed by the hash).
        Bounded in size and in total time, whatever the server's pacing; connection failures are
        retried like ``get``. A hash mismatch is an upstream failure: nothing is returned."""
        try:
            with deadline.within(
                deadline.configured(deadline_s) if self.deadline is None else self.deadline
            ):
                return self._download(url, sha256, max_bytes, deadline_s, progress, headers)
        except deadline.DeadlineExceeded as exc:
            self.session.close()
            raise RegistryError(
                f"GET {redact.url(url)}: not finished within {exc.seconds:g} s",
                hint="the server is too slow; retry later or use a closer mirror",
            ) from None

    def _download(
        self,
        url: str,
        sha256: str,
        max_bytes: int,
        deadline: float,
        progress: Callable[[int, int], None] | None,
        headers: Mapping[str, str] | None,
    ) -> bytes:
        req = self._requests
        last_problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                (self.sleep or _sleep)(self._delay(attempt, None))
            started = time.monotonic()
            digest = hashlib.sha256()
            chunks: list[bytes] = []
            size = 0
            try:
                with self.session.get(
                    url,
                    headers=dict(headers or {}),
                    timeout=self.timeout,
                    stream=True,
                    auth=self._auth(url, headers or {}),
                ) as r:
                    self.sent.append(SentRequest("GET", url, False, r.status_code))
                    if r.status_code in RETRY_STATUSES:
                        last_problem = f"HTTP {r.status_code}"
                        continue
                    if not 200 <= r.status_code < 300:
                        raise RegistryError(
                            f"GET {redact.url(url)} failed: HTTP {r.status_code}",
                            hint=_hint_for(r.status_code),
                        )
                    total = _int_header(r.headers.get("Content-Length"))
                    if total is not None and total > max_bytes:
                        raise IntegrityError(
                            f"GET {redact.url(url)}: {total} bytes is more than the {max_bytes} "
                            "allowed",
                            hint="the index lists a file far larger than any release; check the "
                            "mirror",
                        )
                    for chunk in r.iter_content(chunk_size=1 << 16):
                        size += len(chunk)
                        if size > max_bytes:
                            raise IntegrityError(
                                f"GET {redact.url(url)}: more than {max_bytes} bytes",
                                hint="check the mirror",
                            )
                        if time.monotonic() - started > deadline:
                            raise RegistryError(
                                f"GET {redact.url(url)}: not finished within {deadline:.0f} s",
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
            except (req.RequestException, ValueError) as exc:
                raise _request_failed("GET", url, exc, headers) from None
            if digest.hexdigest() != sha256:
                raise IntegrityError(
                    f"GET {redact.url(url)}: sha256 {digest.hexdigest()[:16]}... does not match "
                    f"the index's {sha256[:16]}...",
                    hint="the download was altered or truncated, or the mirror serves another "
                    "file; nothing was read from it",
                )
            return b"".join(chunks)
        raise RegistryError(
            f"GET {redact.url(url)} failed after {self.retries + 1} attempts: {last_problem}",
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
                (self.sleep or _sleep)(self._delay(attempt, last_retry_after))
            last_retry_after = None
            try:
                with self.session.request(
                    method,
                    url,
                    headers=dict(headers),
                    timeout=self.timeout,
                    stream=True,
                    auth=self._auth(url, headers),
                ) as r:
                    body = self._body(r, method, url)  # a short body raises here
            except (req.Timeout, req.ConnectionError, req.exceptions.ChunkedEncodingError) as exc:
                self.sent.append(SentRequest(method, url, conditional, 0))
                last_problem = _short(exc)
                continue
            except (req.RequestException, ValueError) as exc:
                # A malformed base URL, a redirect to file:// or in a loop, a header value (a
                # GITHUB_TOKEN) that is not header-safe: retrying cannot help.
                raise _request_failed(method, url, exc, headers) from None
            status = r.status_code
            self.sent.append(SentRequest(method, url, conditional, status))
            if status in RETRY_STATUSES:
                last_problem = f"HTTP {status}"
                last_retry_after = r.headers.get("Retry-After")
                continue
            return Response(url, status, _pick(r.headers), body)
        raise RegistryError(
            f"{method} {redact.url(url)} failed after {self.retries + 1} attempts: {last_problem}",
            hint="the upstream is unreachable or overloaded; retry later, or set the source's "
            "base URL (ROCM_VLLM_GITHUB_API, ROCM_VLLM_GITHUB_RAW, ROCM_VLLM_REGISTRY, "
            "ROCM_VLLM_WHEELS) to a mirror",
        )

    def _body(self, r: Any, method: str, url: str) -> bytes:
        """The body, at most ``max_body`` bytes (a longer or endless body is refused)."""
        declared = _int_header(r.headers.get("Content-Length"))
        if method != "HEAD" and declared is not None and declared > self.max_body:
            raise RegistryError(
                f"{method} {redact.url(url)}: {declared} bytes is more than the "
                f"{self.max_body} allowed",
                hint="the upstream answered with something far larger than any page it serves; "
                "check the base URL",
            )
        chunks: list[bytes] = []
        size = 0
        for chunk in r.iter_content(chunk_size=1 << 16):
            size += len(chunk)
            if size > self.max_body:
                raise RegistryError(
                    f"{method} {redact.url(url)}: more than {self.max_body} bytes",
                    hint="the upstream sends an endless or oversized body; check the base URL",
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        seconds = bounded.ascii_int(retry_after, max_digits=9)
        if seconds is not None:
            return float(min(seconds, MAX_RETRY_AFTER))
        return float(min(self.backoff * (2 ** (attempt - 1)), MAX_RETRY_AFTER))

    # --- cache ------------------------------------------------------------------------------

    def _key(self, method: str, url: str, headers: Mapping[str, str] | None) -> str:
        accept = (headers or {}).get("Accept", "")
        return hashlib.sha256(f"{method} {url} {accept}".encode()).hexdigest()

    def _cache_read(self, key: str) -> Response | None:
        if self.cache_dir is None:
            return None
        path = self.cache_dir / f"{key}.json"
        try:
            meta = bounded.loads_json(bounded.read_bytes(path, 1024 * 1024))
            body = bounded.read_bytes(self.cache_dir / f"{key}.body", self.max_body)
        except (OSError, ValueError):
            return None  # a missing or damaged entry is simply not cached
        if not isinstance(meta, dict):
            return None
        url, status, headers = meta.get("url"), meta.get("status"), meta.get("headers")
        if (
            not isinstance(url, str)
            or not isinstance(status, int)
            or not 100 <= status <= 599
            or not isinstance(headers, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
            # A truncated or altered body (a crash mid-write, a full disk, a hand edit) would be
            # served forever: each entry carries its body's hash and a mismatch is refetched.
            or meta.get("sha256") != hashlib.sha256(body).hexdigest()
        ):
            return None
        return Response(url, status, headers, body, True)

    def _cache_write(self, key: str, resp: Response) -> None:
        if self.cache_dir is None:
            return
        meta = {
            "url": resp.url,
            "status": resp.status,
            "headers": dict(resp.headers),
            "sha256": hashlib.sha256(resp.body).hexdigest(),
        }
        # A read-only or full cache dir costs a request next time, nothing else.
        with contextlib.suppress(OSError):
            self.cache_dir.mkdir(parents=True, exist_ok=True)
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


def _request_failed(
    method: str, url: str, exc: BaseException, headers: Mapping[str, str] | None = None
) -> RegistryError:
    # The error's text may quote a header value (a GITHUB_TOKEN that is not header-safe) or the
    # URL: it is shown only with both hidden.
    return RegistryError(
        f"{method} {redact.url(url)} failed: {_short(exc, (headers or {}).values())}",
        hint="check the source's base URL (ROCM_VLLM_GITHUB_API, ROCM_VLLM_GITHUB_RAW, "
        "ROCM_VLLM_REGISTRY, ROCM_VLLM_WHEELS, ROCM_VLLM_INDEX_URL: an http(s) URL that does not "
        "redirect elsewhere) and GITHUB_TOKEN (a token, nothing else)",
    )


def _short(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return redact.text(f"{type(exc).__name__}: {text[:200]}", _secrets(secrets))


def _secrets(values: Iterable[str]) -> list[str]:
    """Header values as secrets to hide, with the token of ``Bearer TOKEN`` on its own."""
    out: list[str] = []
    for value in values:
        out += [value, value.partition(" ")[2]]
    return out


def _host(url: str) -> str:
    return url.partition("://")[2].partition("/")[0].partition("?")[0].lower()


def _sendable(url: str) -> str:
    """``url`` when it holds no control character (a line break in a base URL setting would be
    sent as ``%0A`` and echoed as a line of its own); else a RegistryError that shows it
    escaped."""
    if redact.has_control(url):
        raise RegistryError(
            f"{redact.url(url)}: the URL carries a control character",
            hint="check the source's base URL (ROCM_VLLM_GITHUB_API, ROCM_VLLM_GITHUB_RAW, "
            "ROCM_VLLM_REGISTRY, ROCM_VLLM_WHEELS, ROCM_VLLM_INDEX_URL): one URL on one line",
        )
    return url


def _hint_for(status: int) -> str:
    if status in (401, 403):
        return (
            "the upstream refused the request; set GITHUB_TOKEN for GitHub, or check registry "
            "access"
        )
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
