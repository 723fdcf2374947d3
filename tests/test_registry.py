"""artifacts.registry against a real docker-registry on loopback (open and behind token auth)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resolver.artifacts.registry import DOCKER_HUB, DigestCache, RegistryClient, parse_registry
from resolver.util.errors import RegistryError, ResolverError, UsageError
from tests import services

OFFICIAL = "vllm/vllm-openai-rocm"


def client(url: str, cache_dir: Path | None = None, **kw: object) -> RegistryClient:
    cache = DigestCache(cache_dir / "digests.json") if cache_dir else None
    return RegistryClient(parse_registry(url), cache=cache, backoff=0.05, **kw)  # type: ignore[arg-type]


# --- registry URLs ------------------------------------------------------------------------------


def test_default_is_docker_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCM_VLLM_REGISTRY", raising=False)
    reg = parse_registry(None)
    assert reg.url == DOCKER_HUB
    assert reg.image_name(OFFICIAL) == OFFICIAL


def test_env_names_a_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCM_VLLM_REGISTRY", "http://127.0.0.1:5000/")
    reg = parse_registry(None)
    assert reg.url == "http://127.0.0.1:5000"
    assert reg.image_name(OFFICIAL) == "127.0.0.1:5000/vllm/vllm-openai-rocm"


def test_mirror_project_prefix_becomes_part_of_the_name() -> None:
    reg = parse_registry("https://harbor.example.com/dockerhub")
    assert reg.repository(OFFICIAL) == "dockerhub/vllm/vllm-openai-rocm"
    assert reg.image_name(OFFICIAL) == "harbor.example.com/dockerhub/vllm/vllm-openai-rocm"


@pytest.mark.parametrize(
    "bad", ["ftp://x", "http://", "http://a b", "http://host/x?y=1", "https://h/UPPER case"]
)
def test_bad_registry_url_is_a_usage_error(bad: str) -> None:
    with pytest.raises(ResolverError) as err:
        parse_registry(bad)
    assert err.value.hint


@given(st.text(max_size=60))
def test_any_registry_text_either_parses_or_fails_cleanly(text: str) -> None:
    try:
        reg = parse_registry(text)
    except ResolverError:
        return
    assert reg.url.startswith(("http://", "https://"))


# --- digests from a real registry ----------------------------------------------------------------


@pytest.mark.registry
def test_single_manifest_digest_is_what_the_push_reported(shim_images) -> None:  # type: ignore[no-untyped-def]
    got = client(shim_images.registry).resolve(OFFICIAL, "v0.24.0")
    assert got.digest == shim_images.official.digest
    assert got.media_type == "application/vnd.docker.distribution.manifest.v2+json"
    assert not got.from_cache


@pytest.mark.registry
def test_oci_index_digest_is_the_index_not_a_platform_manifest(shim_images) -> None:  # type: ignore[no-untyped-def]
    got = client(shim_images.registry).resolve(OFFICIAL, "v0.20.0")
    assert got.digest == shim_images.index.digest
    assert got.media_type == "application/vnd.oci.image.index.v1+json"


@pytest.mark.registry
def test_docker_manifest_list_digest(shim_images) -> None:  # type: ignore[no-untyped-def]
    got = client(shim_images.registry).resolve(OFFICIAL, "v0.20.1")
    assert got.digest == shim_images.manifest_list.digest
    assert got.media_type == "application/vnd.docker.distribution.manifest.list.v2+json"


@pytest.mark.registry
def test_unknown_tag_says_not_found_and_what_to_do(shim_images) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RegistryError) as err:
        client(shim_images.registry).resolve(OFFICIAL, "v9.9.9")
    assert "v9.9.9 not found" in err.value.message
    assert "refresh" in (err.value.hint or "")
    assert err.value.exit_code == 4


def test_registry_down_fails_after_retries() -> None:
    port = services.free_port()  # nothing listens there
    started = time.monotonic()
    with pytest.raises(RegistryError) as err:
        client(f"http://127.0.0.1:{port}", retries=3).resolve(OFFICIAL, "v0.24.0")
    assert "connection failed" in err.value.message
    assert "3 tries" in err.value.message
    assert "--registry" in (err.value.hint or "")
    assert time.monotonic() - started >= 0.05 + 0.1  # backed off between tries


def test_silent_registry_times_out() -> None:
    with services.silent_port() as port, pytest.raises(RegistryError) as err:
        client(f"http://127.0.0.1:{port}", timeout=0.3, retries=2).resolve(OFFICIAL, "v0.24.0")
    assert "timed out after 0.3s" in err.value.message


def test_unsafe_tag_is_refused_before_any_request() -> None:
    with pytest.raises(ResolverError):
        client("http://127.0.0.1:9").resolve(OFFICIAL, "v1;rm -rf /")


# --- token auth (the Docker Hub flow) -------------------------------------------------------------


@pytest.mark.registry
def test_bearer_token_flow_against_a_token_auth_registry(token_registry, shim_images) -> None:  # type: ignore[no-untyped-def]
    import requests

    url, tokens = token_registry
    assert requests.head(f"{url}/v2/{OFFICIAL}/manifests/v0.24.0", timeout=5).status_code == 401
    before = len(tokens.requests)
    c = client(url)
    assert c.resolve(OFFICIAL, "v0.24.0").digest == shim_images.official.digest
    asked = tokens.requests[before:]
    assert asked == [{"scope": [f"repository:{OFFICIAL}:pull"], "service": [tokens.service]}]
    # The token is reused for the same repository.
    assert c.resolve(OFFICIAL, "v0.20.0").digest == shim_images.index.digest
    assert len(tokens.requests) == before + 1


@pytest.mark.registry
def test_token_registry_unknown_tag_is_still_a_404(token_registry) -> None:  # type: ignore[no-untyped-def]
    url, _ = token_registry
    with pytest.raises(RegistryError, match="not found"):
        client(url).resolve(OFFICIAL, "v0.0.1")


# --- the on-disk cache ----------------------------------------------------------------------------


@pytest.mark.registry
def test_registry_is_asked_every_time_and_the_answer_is_cached(shim_images, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first = client(shim_images.registry, tmp_path).resolve(OFFICIAL, "v0.24.0")
    second = client(shim_images.registry, tmp_path).resolve(OFFICIAL, "v0.24.0")
    assert (first.from_cache, second.from_cache) == (False, False)
    assert second.digest == first.digest
    data = json.loads((tmp_path / "digests.json").read_text())
    assert data[f"{shim_images.registry}/{OFFICIAL}:v0.24.0"]["digest"] == first.digest


@pytest.mark.registry
def test_a_stale_cached_digest_never_beats_the_registry(shim_images, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The tag moved: the cache says the old digest, the registry the new one; the registry wins."""
    key = f"{shim_images.registry}/{OFFICIAL}:v0.24.0"
    DigestCache(tmp_path / "digests.json").put(key, shim_images.mismatched.digest, None)
    got = client(shim_images.registry, tmp_path).resolve(OFFICIAL, "v0.24.0")
    assert (got.digest, got.from_cache) == (shim_images.official.digest, False)
    assert (
        json.loads((tmp_path / "digests.json").read_text())[key]["digest"]
        == shim_images.official.digest
    )


@pytest.mark.registry
def test_a_denied_tag_is_an_error_even_with_a_cached_digest(shim_images, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    key = f"{shim_images.registry}/{OFFICIAL}:v9.9.8"
    DigestCache(tmp_path / "digests.json").put(key, "sha256:" + "c" * 64, None)
    with pytest.raises(RegistryError, match=r"v9\.9\.8 not found") as err:
        client(shim_images.registry, tmp_path).resolve(OFFICIAL, "v9.9.8")
    assert err.value.exit_code == 4


def test_unreachable_registry_falls_back_to_the_cache_and_says_how_old(tmp_path: Path) -> None:
    port = services.free_port()
    url = f"http://127.0.0.1:{port}"
    cache = DigestCache(tmp_path / "digests.json")
    cache.put(f"{url}/{OFFICIAL}:v0.24.0", "sha256:" + "d" * 64, None)
    data = json.loads(cache.path.read_text())
    data[f"{url}/{OFFICIAL}:v0.24.0"]["at"] -= 3 * 3600
    cache.path.write_text(json.dumps(data))
    got = RegistryClient(parse_registry(url), cache=cache, retries=1).resolve(OFFICIAL, "v0.24.0")
    assert got.from_cache and got.digest == "sha256:" + "d" * 64
    assert got.unreachable and "did not answer" in got.unreachable
    age = got.age_seconds()
    assert age is not None and 3 * 3600 <= age < 3 * 3600 + 60


def test_cache_serves_offline_and_expires(tmp_path: Path) -> None:
    cache = DigestCache(tmp_path / "digests.json", ttl=60)
    port = services.free_port()
    key = f"http://127.0.0.1:{port}/{OFFICIAL}:v0.24.0"
    digest = "sha256:" + "a" * 64
    cache.put(key, digest, None)
    reg_client = RegistryClient(parse_registry(f"http://127.0.0.1:{port}"), cache=cache, retries=1)
    assert reg_client.resolve(OFFICIAL, "v0.24.0").digest == digest  # no registry needed
    stale = json.loads(cache.path.read_text())
    stale[key]["at"] -= 120
    cache.path.write_text(json.dumps(stale))
    with pytest.raises(RegistryError):
        reg_client.resolve(OFFICIAL, "v0.24.0")


def test_damaged_cache_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "digests.json"
    path.write_text("{not json")
    cache = DigestCache(path)
    assert cache.get("anything") is None
    cache.put("k", "sha256:" + "b" * 64, None)
    assert cache.get("k")["digest"] == "sha256:" + "b" * 64  # type: ignore[index]


def test_cache_dir_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from resolver.artifacts.registry import cache_dir

    monkeypatch.setenv("ROCM_VLLM_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("ROCM_VLLM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x" / "rocm-vllm"


def test_usage_error_class_for_bad_scheme() -> None:
    with pytest.raises(UsageError):
        parse_registry("ftp://mirror")


# --- registries that misbehave: a local server answering the way broken proxies do --------------


class _Misbehaving:
    """A loopback HTTP server whose manifest answers are set per test."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        answer = (status, headers, body)

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, with_body: bool) -> None:
                code, hdrs, data = answer
                self.send_response(code)
                for k, v in hdrs.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if with_body:
                    self.wfile.write(data)

            def do_HEAD(self) -> None:
                self._reply(False)

            def do_GET(self) -> None:
                self._reply(True)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _resolve_against(status: int, headers: dict[str, str], body: bytes) -> str:
    server = _Misbehaving(status, headers, body)
    try:
        return client(server.url).resolve(OFFICIAL, "v0.24.0", use_cache=False).digest
    finally:
        server.close()


def test_no_digest_header_hashes_a_real_manifest_body() -> None:
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [],
        }
    ).encode()
    import hashlib

    digest = _resolve_against(
        200, {"Content-Type": "application/vnd.oci.image.index.v1+json"}, manifest
    )
    assert digest == "sha256:" + hashlib.sha256(manifest).hexdigest()


@pytest.mark.parametrize(
    ("headers", "body", "message"),
    [
        ({}, b"", "sent no digest and no manifest"),
        (
            {"Content-Type": "text/html"},
            b"<html>proxy login</html>",
            "sent no digest and no manifest",
        ),
        ({"Docker-Content-Digest": "sha256:abc;rm -rf /"}, b"", "sent a malformed digest"),
        ({"Location": "file:///etc/passwd"}, b"", "request for .* failed"),
    ],
)
def test_broken_answers_are_registry_errors_never_pinned(
    headers: dict[str, str], body: bytes, message: str
) -> None:
    status = 302 if "Location" in headers else 200
    with pytest.raises(RegistryError, match=message) as info:
        _resolve_against(status, headers, body)
    assert info.value.exit_code == 4 and info.value.hint


# --- credentials and control characters in a registry URL --------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://bob:s3cr3tTok@registry.example.com",
        "https://s3cr3tTok@registry.example.com/dockerhub",
        "https://registry.example.com/?token=s3cr3tTok",
    ],
)
def test_a_registry_url_with_a_login_is_refused_without_showing_it(url: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_registry(url)
    assert "s3cr3tTok" not in err.value.message + (err.value.hint or "")
    assert "docker login registry.example.com" in (err.value.hint or "")


@pytest.mark.parametrize(
    "url", ["https://r.example.com\n", "http://r.example.com/\x1b[2J", "x" * 3000]
)
def test_a_registry_setting_with_a_control_character_names_the_setting(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROCM_VLLM_REGISTRY", url)
    with pytest.raises(UsageError, match=r"^ROCM_VLLM_REGISTRY ") as err:
        parse_registry(None)
    assert "\n" not in err.value.message and "\x1b" not in err.value.message


def test_a_manifest_is_verified_against_the_digest_it_was_asked_by() -> None:
    manifest = json.dumps(
        {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json"}
    ).encode()
    import hashlib

    good = "sha256:" + hashlib.sha256(manifest).hexdigest()
    other = "sha256:" + "0" * 64
    server = _Misbehaving(
        200, {"Content-Type": "application/vnd.oci.image.manifest.v1+json"}, manifest
    )
    try:
        doc, _media = client(server.url).manifest(OFFICIAL, good)
        assert doc["schemaVersion"] == 2
        with pytest.raises(RegistryError, match="does not match") as err:
            client(server.url).manifest(OFFICIAL, other)
        assert err.value.exit_code == 4
        for ref in ("../../v2/evil/manifests/x", f"{good}?x=1", "sha256:abc"):
            with pytest.raises(RegistryError, match="malformed reference"):
                client(server.url).manifest(OFFICIAL, ref)
    finally:
        server.close()
