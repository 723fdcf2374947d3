"""A small client for the OCI distribution API: turn ``repo:tag`` into the manifest digest.

Docker Hub and most registries answer an anonymous ``HEAD /v2/<repo>/manifests/<tag>`` with
401 and a ``WWW-Authenticate: Bearer realm=...,service=...,scope=...`` challenge; the client
fetches a pull token from the realm (with the user's Docker credentials for that registry when
there are any, else anonymously) and asks again. A ``Basic`` challenge (a registry with htpasswd
auth, Artifactory, Harbor robot accounts) is answered with the credentials. Credentials come
from the user's Docker config (``resolver.artifacts.credentials``) and are never printed. Registries
without auth (a local mirror, an air-gapped site) answer directly. The digest is the
``Docker-Content-Digest`` header, or the sha256 of the manifest body when a registry omits the
header.

The registry is always asked first: a tag moves, and a tag the registry denies (404, 401/403) is
an error, never answered from a cache. Resolved digests are kept on disk (``digests.json`` under
the user cache dir) only as a fallback for when the registry cannot be reached at all; such an
answer says so (``from_cache``, ``cached_at``, ``unreachable``) and the caller says it to the user.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from resolver.data import resources
from resolver.util import atomic, bounded, deadline, redact
from resolver.util.errors import RegistryError, RegistryUnreachableError, UsageError
from resolver.util.safety import is_safe, require_safe

if TYPE_CHECKING:
    import requests

    from resolver.artifacts.credentials import Credentials

CredentialLookup = Callable[[str], "Credentials | None"]


def docker_config_credentials(host: str) -> Credentials | None:
    """The user's Docker credentials for ``host`` (``resolver.artifacts.credentials.lookup``)."""
    from resolver.artifacts.credentials import lookup

    return lookup(host)


DOCKER_HUB = "https://registry-1.docker.io"
REGISTRY_ENV = "ROCM_VLLM_REGISTRY"

# Ask for an index first: a multi-platform tag's digest is the index digest, which is what
# `docker pull repo@digest` and the local RepoDigests record.
MANIFEST_ACCEPT = (
    "application/vnd.oci.image.index.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.docker.distribution.manifest.v2+json, "
    "application/vnd.oci.image.manifest.v1+json"
)
_CHALLENGE_RE = re.compile(r'(\w+)="([^"]*)"')
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
DEFAULT_DEADLINE = 60.0  # one resolve() or manifest(), retries included (ROCM_VLLM_HTTP_DEADLINE)
_sleep = time.sleep  # one place for tests to stop retries from waiting


@dataclass(frozen=True, slots=True)
class Registry:
    """Where manifests are asked for: base URL plus an optional repository prefix (a mirror
    project such as Harbor's ``https://harbor.example/dockerhub``)."""

    url: str  # scheme://host[:port]
    prefix: str = ""  # "dockerhub" -> /v2/dockerhub/<repo>/...

    @property
    def is_docker_hub(self) -> bool:
        return self.url == DOCKER_HUB

    @property
    def host(self) -> str:
        return urlsplit(self.url).netloc

    def repository(self, repo: str) -> str:
        return f"{self.prefix}/{repo}" if self.prefix else repo

    def image_name(self, repo: str) -> str:
        """The name `docker pull` uses for ``repo`` at this registry."""
        if self.is_docker_hub:
            return repo
        return f"{self.host}/{self.repository(repo)}"


def parse_registry(url: str | None, *, flag: str = "--registry") -> Registry:
    """``--registry URL`` (or ``ROCM_VLLM_REGISTRY``); none means Docker Hub. ``flag`` names the
    setting in errors, which show the URL with any credential hidden (``util.redact``)."""
    name = flag if url else REGISTRY_ENV
    raw = redact.setting(name, url or os.environ.get(REGISTRY_ENV) or "").strip()
    if not raw:
        return Registry(DOCKER_HUB)
    if "://" not in raw:
        raw = f"https://{raw}"
    try:
        parts = urlsplit(raw.rstrip("/"))
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        parts = urlsplit("invalid:")
    if "@" in parts.netloc or parts.query:
        # Credentials come from the Docker config (docker login), never from a URL that every
        # message and printed image name would have to carry.
        raise UsageError(
            f"{name} {redact.url(raw)}: a registry URL carries no user, password, token or query",
            hint="give the URL without them and log in once: docker login "
            f"{parts.netloc.rpartition('@')[2]} (read from $DOCKER_CONFIG/config.json or "
            "~/.docker/config.json)",
        )
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
        raise UsageError(
            f"{name} {redact.url(url or raw)} is not a registry URL",
            hint="give the registry's base URL, e.g. https://registry.example.com or http://127.0.0.1:5000",
        )
    base = f"{parts.scheme}://{parts.netloc}"
    require_safe("url", base, where=name if name.startswith("--") else f"--registry ({name})")
    prefix = parts.path.strip("/")
    if prefix.startswith("v2"):
        prefix = prefix[2:].strip("/")
    if prefix:
        require_safe("image_repo", prefix, where="--registry path")
    if base in ("https://docker.io", "https://index.docker.io", "https://registry.hub.docker.com"):
        base = DOCKER_HUB
    return Registry(base, prefix)


cache_dir = resources.cache_dir  # kept under this name: callers and tests use it


@dataclass(frozen=True, slots=True)
class ResolvedDigest:
    repo: str
    tag: str
    digest: str
    media_type: str | None
    registry: str
    from_cache: bool
    cached_at: float | None = None  # epoch seconds the cached answer was got from the registry
    unreachable: str | None = None  # why the registry was not asked successfully (cache answers)

    def age_seconds(self, now: float | None = None) -> float | None:
        if self.cached_at is None:
            return None
        return max(0.0, (time.time() if now is None else now) - self.cached_at)


class DigestCache:
    """``digests.json``: ``"<registry>/<repo>:<tag>" -> {digest, media_type, at}``.

    Consulted only when the registry is unreachable. Tags move (``latest``, re-pushed releases),
    so entries older than ``ttl`` seconds (default 7 days) are not used even then."""

    def __init__(self, path: Path | None = None, *, ttl: float = 7 * 24 * 3600) -> None:
        self.path = path or cache_dir() / "digests.json"
        self.ttl = ttl

    def _load(self) -> dict[str, Any]:
        try:
            data = bounded.loads_json(bounded.read_bytes(self.path, 16 * bounded.MiB))
        except (OSError, ValueError):
            return {}  # a missing or damaged cache is only a cache miss
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> dict[str, Any] | None:
        """A fresh entry whose digest is a well-formed sha256 digest (the cache is a file anyone
        with the user's rights can edit: what it says is checked before it is printed)."""
        entry = self._load().get(key)
        if not isinstance(entry, dict) or not is_safe("digest", entry.get("digest") or ""):
            return None
        at = entry.get("at", 0)
        if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at):
            return None
        if not 0 <= time.time() - at <= self.ttl:  # expired, or stamped in the future
            return None
        media_type = entry.get("media_type")
        return {
            "digest": entry["digest"],
            "media_type": media_type if isinstance(media_type, str) else None,
            "at": at,
        }

    def put(self, key: str, digest: str, media_type: str | None) -> None:
        data = self._load()
        data[key] = {"digest": digest, "media_type": media_type, "at": time.time()}
        # An unwritable cache must not fail a resolution that succeeded.
        with contextlib.suppress(OSError):
            atomic.write_atomic(self.path, json.dumps(data, indent=1, sort_keys=True))


class RegistryClient:
    def __init__(
        self,
        registry: Registry,
        *,
        timeout: float = 10.0,
        deadline: float = DEFAULT_DEADLINE,
        retries: int = 3,
        backoff: float = 0.5,
        cache: DigestCache | None = None,
        session: requests.Session | None = None,
        credentials: CredentialLookup | None = docker_config_credentials,
    ) -> None:
        import requests

        self.registry = registry
        self.timeout = timeout
        self.deadline = deadline  # seconds for one resolve() or manifest(), retries included
        self.retries = max(1, retries)
        self.backoff = backoff
        self.cache = cache
        self.session = session or requests.Session()
        self.session.headers.setdefault("User-Agent", "rocm-vllm-resolver")
        self._authorization: dict[str, str] = {}  # scope -> Authorization header value
        self._lookup = credentials
        self._credentials: Credentials | None = None
        self._looked_up = False

    def credentials(self) -> Credentials | None:
        """The user's credentials for this registry, looked up once and only when asked for."""
        if not self._looked_up:
            self._looked_up = True
            self._credentials = self._lookup(self.registry.host) if self._lookup else None
        return self._credentials

    # -- public -------------------------------------------------------------------------------
    def close(self) -> None:
        self.session.close()

    def resolve(self, repo: str, tag: str, *, use_cache: bool = True) -> ResolvedDigest:
        require_safe("image_repo", repo, where="image repository")
        require_safe("image_tag", tag, where="image tag")
        key = f"{self.registry.url}/{self.registry.repository(repo)}:{tag}"
        limit = deadline.configured(self.deadline)
        try:
            with deadline.within(limit):
                digest, media_type = self._manifest_digest(repo, tag)
        except (RegistryUnreachableError, deadline.DeadlineExceeded) as exc:
            # Only an unreachable (or stalled) registry lets the cache answer; a denied tag
            # (404/401) is final.
            unreachable = (
                exc.message
                if isinstance(exc, RegistryUnreachableError)
                else f"{self.registry.url} did not answer within {limit:g} s"
            )
            hit = self.cache.get(key) if use_cache and self.cache is not None else None
            if hit is None:
                if isinstance(exc, RegistryUnreachableError):
                    raise
                raise RegistryError(
                    f"{self.registry.image_name(repo)}:{tag}: {unreachable}",
                    hint="the registry is too slow or stalls; retry later, use --registry with a "
                    f"closer mirror, or raise {deadline.ENV}; without --digest the image is chosen "
                    "offline",
                ) from None
            return ResolvedDigest(
                repo,
                tag,
                hit["digest"],
                hit.get("media_type"),
                self.registry.url,
                True,
                cached_at=float(hit.get("at", 0)),
                unreachable=unreachable,
            )
        finally:
            # One lookup is a handful of requests: keep no connection open after it (a caller
            # that never calls close() must not leak sockets).
            self.session.close()
        if self.cache is not None:
            self.cache.put(key, digest, media_type)
        return ResolvedDigest(repo, tag, digest, media_type, self.registry.url, False)

    def manifest(self, repo: str, ref: str) -> tuple[dict[str, Any], str | None]:
        """The manifest (or index) ``repo:ref`` names, parsed, and its media type, within the
        deadline ``resolve`` keeps. Its bytes are verified before anything is read from them, as
        registries and containerd do: against ``ref`` when it is a digest, else against the
        ``Docker-Content-Digest`` the registry sends with it (a manifest by tag from a registry
        that sends none is the one read nothing can check)."""
        require_safe("image_repo", repo, where="image repository")
        pinned = is_safe("digest", ref)
        if not pinned and not is_safe("image_tag", ref):
            # A reference a document named (an index entry): the registry's answer is bad.
            raise RegistryError(
                f"{self.registry.image_name(repo)}: {self.registry.url} names a malformed "
                f"reference {redact.text(ref[:80])!r}",
                hint="a digest is sha256: and 64 hex digits; the registry or a mirror in between "
                "altered the document, so nothing from it is trusted",
            )
        path = f"/v2/{self.registry.repository(repo)}/manifests/{ref}"
        limit = deadline.configured(self.deadline)
        try:
            with deadline.within(limit):
                response = self._authorized("GET", path, repo)
        except deadline.DeadlineExceeded:
            self.session.close()
            raise RegistryError(
                f"{self.registry.image_name(repo)}:{ref[:19]}: {self.registry.url} did not "
                f"answer within {limit:g} s",
                hint=f"the registry is too slow or stalls; retry later, use --registry with a "
                f"closer mirror, or raise {deadline.ENV}",
            ) from None
        media_type = _media_type(response.headers.get("Content-Type"))
        if not _is_manifest(response.content, media_type):
            raise RegistryError(
                f"{self.registry.image_name(repo)}:{ref[:19]}: {self.registry.url} sent no "
                "manifest",
                hint="the URL may be a web proxy, not an OCI registry; check --registry",
            )
        served = "sha256:" + hashlib.sha256(response.content).hexdigest()
        claimed = response.headers.get("Docker-Content-Digest")
        expected = ref if pinned else claimed
        if expected is not None and expected != served:
            said = "its digest" if pinned else "the digest it sent (Docker-Content-Digest)"
            raise RegistryError(
                f"{self.registry.image_name(repo)}@{ref if pinned else ref[:40]}: the manifest "
                f"{self.registry.url} served does not match {said}",
                hint="a registry, mirror or proxy altered the manifest: nothing from it is "
                "trusted; use another --registry, or ask the registry's operator",
            )
        doc = bounded.loads_json(response.content)
        return doc, media_type or doc.get("mediaType")

    def blob(self, repo: str, digest: str) -> Any:
        """A streaming answer for one blob (a layer): the caller reads ``.raw`` and closes it.
        Authorized like a manifest request; the bytes are the caller's to verify. A digest that
        is not ``sha256:`` and 64 hex digits is refused before any request (exit 4: a manifest
        named it)."""
        import requests

        if not is_safe("digest", digest):
            raise RegistryError(
                f"{self.registry.image_name(repo)}: a manifest names the malformed blob digest "
                f"{redact.text(digest[:80])!r}",
                hint="a digest is sha256: and 64 hex digits; the registry or a mirror in between "
                "altered the manifest, so nothing from it is trusted",
            )
        path = f"/v2/{self.registry.repository(repo)}/blobs/{digest}"
        scope = f"repository:{self.registry.repository(repo)}:pull"
        for _ in range(2):
            headers = {"Accept": "*/*"}
            if scope in self._authorization:
                headers["Authorization"] = self._authorization[scope]
            try:
                response = self.session.get(
                    self.registry.url + path,
                    headers=headers,
                    stream=True,
                    timeout=self.timeout,
                    allow_redirects=True,
                )
            except requests.RequestException as exc:
                raise RegistryUnreachableError(
                    f"registry {self.registry.url}: blob {digest[:19]}: {_short(exc)}",
                    hint=f"check the network, or point --registry / {REGISTRY_ENV} at a mirror",
                ) from None
            if response.status_code == 401 and scope not in self._authorization:
                challenge = response.headers.get("WWW-Authenticate", "")
                response.close()
                self._authorization[scope] = self._answer(challenge, scope, repo)
                continue
            if response.status_code != 200:
                response.close()
                raise RegistryError(
                    f"registry {self.registry.url}: blob {digest[:19]} answered HTTP "
                    f"{response.status_code}",
                    hint="check the image reference and your access to it",
                )
            return response
        raise RegistryError(
            f"registry {self.registry.url}: blob {digest[:19]} refused access",
            hint="log in to the registry (docker login)",
        )

    # -- protocol -----------------------------------------------------------------------------
    def _manifest_digest(self, repo: str, tag: str) -> tuple[str, str | None]:
        path = f"/v2/{self.registry.repository(repo)}/manifests/{tag}"
        response = self._authorized("HEAD", path, repo)
        digest = response.headers.get("Docker-Content-Digest")
        media_type = _media_type(response.headers.get("Content-Type"))
        if not digest:
            # Some registries send the digest only with the body: hash the exact bytes served, but
            # only when they are a manifest (an empty body or a proxy's HTML page has a digest too).
            response = self._authorized("GET", path, repo)
            media_type = _media_type(response.headers.get("Content-Type"))
            if not _is_manifest(response.content, media_type):
                raise RegistryError(
                    f"{self.registry.image_name(repo)}:{tag}: {self.registry.url} sent no digest "
                    "and no manifest",
                    hint="the URL may be a web proxy, not an OCI registry; check --registry",
                )
            digest = "sha256:" + hashlib.sha256(response.content).hexdigest()
        if not is_safe("digest", digest):
            raise RegistryError(
                f"{self.registry.image_name(repo)}:{tag}: {self.registry.url} sent a malformed "
                f"digest {digest[:80]!r}",
                hint="the registry or a proxy in between is misbehaving; check --registry",
            )
        return digest, media_type

    def _authorized(self, method: str, path: str, repo: str) -> requests.Response:
        scope = f"repository:{self.registry.repository(repo)}:pull"
        response = self._send(method, path, authorization=self._authorization.get(scope))
        if response.status_code == 401:
            challenge = response.headers.get("WWW-Authenticate", "")
            self._authorization[scope] = self._answer(challenge, scope, repo)
            response = self._send(method, path, authorization=self._authorization[scope])
        self._raise_for(response, repo, path)
        return response

    def _answer(self, challenge: str, scope: str, repo: str) -> str:
        """The Authorization header for a 401 challenge: Basic with the user's credentials, or a
        Bearer token from the challenge's realm."""
        scheme = challenge.partition(" ")[0].lower()
        if scheme == "basic":
            creds = self.credentials()
            if creds is None:
                raise RegistryError(
                    f"{self.registry.url} wants a login (Basic auth) for {repo}, and the Docker "
                    f"config has no credentials for {self.registry.host}",
                    hint=f"docker login {self.registry.host} (read from $DOCKER_CONFIG/config.json "
                    "or ~/.docker/config.json: auths, credHelpers, credsStore)",
                )
            if creds.identity_token:
                raise RegistryError(
                    f"{self.registry.url} wants a password (Basic auth) for {repo}; the Docker "
                    f"config has only an identity token for {self.registry.host} ({creds.source})",
                    hint=f"docker login {self.registry.host} with a user name and password or "
                    "access token",
                )
            return f"Basic {creds.basic()}"
        if scheme == "bearer":
            return f"Bearer {self._token(challenge, scope, repo)}"
        raise RegistryError(
            f"{self.registry.url} wants {scheme or 'unknown'} authentication for {repo}, which is "
            "not supported",
            hint="only Basic and Bearer (token) auth are: use a mirror that offers them, or pin "
            "the digest by hand in matrix/images.toml",
        )

    def _token(self, challenge: str, scope: str, repo: str) -> str:
        params_text = challenge.partition(" ")[2]
        params = dict(_CHALLENGE_RE.findall(params_text))
        realm = params.get("realm")
        if not realm or not realm.startswith(("http://", "https://")):
            raise RegistryError(
                f"{self.registry.url} sent a bearer challenge without a usable realm",
                hint="the registry is misconfigured or not an OCI registry; check --registry",
            )
        query = {"scope": params.get("scope", scope)}
        if "service" in params:
            query["service"] = params["service"]
        creds = self.credentials()
        if creds is not None and creds.identity_token:
            # OAuth2 refresh-token grant (docker/distribution token spec), as `docker login` left
            # it.
            form = {
                **query,
                "grant_type": "refresh_token",
                "refresh_token": creds.secret,
                "client_id": "rocm-vllm",
            }
            response = self._request("POST", realm, data=form, what=f"token for {repo}")
        elif creds is not None:
            response = self._request(
                "GET",
                realm,
                params=query,
                headers={"Authorization": f"Basic {creds.basic()}"},
                what=f"token for {repo}",
            )
        else:
            response = self._request("GET", realm, params=query, what=f"token for {repo}")
        if response.status_code != 200:
            if creds is not None:
                raise RegistryError(
                    f"token server {redact.url(realm)} refused the credentials for "
                    f"{self.registry.host} from {creds.source} (HTTP {response.status_code}) "
                    f"for {repo}",
                    hint=f"log in again: docker login {self.registry.host}",
                )
            raise RegistryError(
                f"token server {redact.url(realm)} refused an anonymous pull token for {repo} "
                f"(HTTP {response.status_code})",
                hint="the repository may be private or misspelled; for a private one, docker "
                f"login {self.registry.host} (credentials are read from the Docker config), or use "
                "--registry with a mirror",
            )
        try:
            body = bounded.loads_json(response.content)
        except ValueError:
            body = None
        token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise RegistryError(
                f"token server {redact.url(realm)} answered without a token",
                hint="the registry's auth service is misbehaving; retry later or use --registry "
                "with a mirror",
            )
        return token

    def _send(self, method: str, path: str, *, authorization: str | None) -> requests.Response:
        headers = {"Accept": MANIFEST_ACCEPT}
        if authorization:
            headers["Authorization"] = authorization
        return self._request(method, self.registry.url + path, headers=headers, what=path)

    def _request(self, method: str, url: str, *, what: str, **kwargs: Any) -> requests.Response:
        """One HTTP call with retries: connection errors, timeouts, 429 and 5xx back off and
        retry."""
        import requests

        last: str = ""
        for attempt in range(self.retries):
            if attempt:
                _sleep(min(self.backoff * 2 ** (attempt - 1), 30.0))
            try:
                with self.session.request(
                    method, url, timeout=self.timeout, allow_redirects=True, stream=True, **kwargs
                ) as response:
                    _read_capped(response, what)
            except requests.Timeout:
                last = f"timed out after {self.timeout:g}s"
                continue
            except requests.ConnectionError as exc:
                last = f"connection failed ({_short(exc)})"
                continue
            except (requests.RequestException, ValueError) as exc:
                # A redirect to file://, a malformed URL or header: not worth retrying.
                raise RegistryError(
                    f"registry {self.registry.url}: request for {what} failed: {_short(exc)}",
                    hint=f"check --registry / {REGISTRY_ENV}: it must be an http(s) OCI registry",
                ) from None
            if response.status_code in _RETRY_STATUS:
                last = f"HTTP {response.status_code}"
                continue
            return response
        raise RegistryUnreachableError(
            f"registry {self.registry.url} did not answer for {what}: {last} ({self.retries} "
            "tries)",
            hint=f"check the network or proxy (HTTPS_PROXY), or point --registry / {REGISTRY_ENV} "
            "at a reachable mirror; without --digest the image is chosen offline",
        )

    def _raise_for(self, response: requests.Response, repo: str, path: str) -> None:
        code = response.status_code
        if code in (200, 204):
            return
        where = f"{self.registry.image_name(repo)}"
        if code == 404:
            raise RegistryError(
                f"{where}: {path.rsplit('/', 1)[-1]} not found at {self.registry.url}",
                hint="the tag may not be published (the matrix can list a tag before it exists); "
                "check the tag, try --vllm for another release, or run "
                "`rocm-vllm matrix refresh --source images`",
            )
        if code in (401, 403):
            creds = self._credentials if self._looked_up else None
            if creds is not None:
                raise RegistryError(
                    f"{where}: {self.registry.url} refused the credentials for "
                    f"{self.registry.host} from {creds.source} (HTTP {code})",
                    hint=f"log in again (docker login {self.registry.host}), or check that this "
                    f"account may pull {where}",
                )
            raise RegistryError(
                f"{where}: {self.registry.url} refused anonymous access (HTTP {code})",
                hint="the repository may be private or misspelled; docker login "
                f"{self.registry.host} (credentials are read from the Docker config), or use a "
                "mirror that allows anonymous pulls (--registry URL)",
            )
        raise RegistryError(
            f"{where}: {self.registry.url} answered HTTP {code}",
            hint="retry later, or use --registry with a mirror",
        )


MAX_BODY = 4 * 1024 * 1024  # a manifest, an error page or a token reply is a few KiB


def _read_capped(response: requests.Response, what: str) -> None:
    """Read the body into ``response`` (its ``.content``), refusing more than ``MAX_BODY``."""
    chunks: list[bytes] = []
    size = 0
    # Read even a HEAD answer's (empty) body: that is what lets the connection close cleanly.
    for chunk in response.iter_content(chunk_size=1 << 16):
        size += len(chunk)
        if size > MAX_BODY:
            raise RegistryError(
                f"{redact.url(response.url)}: the answer for {what} is larger than "
                f"{MAX_BODY // (1024 * 1024)} MiB",
                hint="this is not an OCI registry (or a proxy sends an endless body); check "
                "--registry",
            )
        chunks.append(chunk)
    response._content = b"".join(chunks)
    response._content_consumed = True


def _media_type(value: str | None) -> str | None:
    return value.split(";", 1)[0].strip() if value else None


_MANIFEST_TYPES = frozenset(
    {
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    }
)


def _is_manifest(body: bytes, media_type: str | None) -> bool:
    """A JSON object with a schemaVersion, of a manifest media type (by header or by body)."""
    try:
        doc = bounded.loads_json(body)
    except ValueError:
        return False
    if not isinstance(doc, dict) or "schemaVersion" not in doc:
        return False
    return (media_type or doc.get("mediaType")) in _MANIFEST_TYPES


def _short(exc: Exception) -> str:
    text = str(exc)
    # urllib3 messages repeat the whole pool description; the last clause says what happened.
    tail = text.rsplit(":", 1)[-1].strip(" )'\"") if ":" in text else text
    # A request's error can quote its URL or headers: shown only with any credential hidden.
    return redact.text(tail[:120]) or exc.__class__.__name__
