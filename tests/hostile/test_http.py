"""Channel: upstream HTTP (refresh sources, the registry, token servers), answered by a scripted
loopback server. Every answer ends in a response or a RegistryError (exit 4 with a hint) within
the operation's deadline; bodies are capped; Retry-After is capped and never slept in tests."""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from resolver.artifacts.registry import Registry, RegistryClient
from resolver.refresh.common import Endpoints, SourceResult
from resolver.refresh.http import MAX_RETRY_AFTER, HttpClient
from resolver.refresh.images import MAX_TAGS, ImagesSource
from resolver.util.errors import RegistryError

from .conftest import HOSTILE, assert_clean, cli, drip, endless, reply, scripted_server

statuses = st.sampled_from([200, 200, 200, 204, 301, 302, 304, 401, 404, 429, 500, 503])
bodies = st.one_of(
    st.binary(max_size=100),
    st.sampled_from(
        [
            b"[" * 100_000,
            b'{"a": ' + b"9" * 5000 + b"}",
            b"NaN",
            b"\xff\xfe",
            b'{"tags": ' + b"[" * 2000 + b"}",
        ]
    ),
    st.builds(
        lambda v: json.dumps(v).encode(),
        st.recursive(
            st.one_of(st.none(), st.integers(), st.text(max_size=8)),
            lambda i: st.lists(i, max_size=3),
            max_leaves=8,
        ),
    ),
)
header_values = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
    st.sampled_from(
        ["3600", "99999999999999999999999", "-1", "1e9", "Wed, 21 Oct 2099 07:28:00 GMT", "٣", "0"]
    ),
)


@settings(HOSTILE, max_examples=20)
@given(
    status=statuses,
    body=bodies,
    retry_after=st.one_of(st.none(), header_values),
    location=st.one_of(
        st.none(),
        st.sampled_from(["file:///etc/passwd", "/loop", "http://[::1", "gopher://x/", "//"]),
    ),
    content_length=st.one_of(st.none(), st.sampled_from(["0", "5", "99999999999", "-3", "x"])),
)
@example(status=429, body=b"", retry_after="3600", location=None, content_length=None)
@example(status=302, body=b"", retry_after=None, location="file:///etc/passwd", content_length=None)
@example(status=302, body=b"", retry_after=None, location="/loop", content_length=None)
def test_any_answer(
    status: int,
    body: bytes,
    retry_after: str | None,
    location: str | None,
    content_length: str | None,
) -> None:
    headers = {}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    if location is not None:
        headers["Location"] = location
    slept: list[float] = []
    with scripted_server() as srv:
        srv.routes["/loop"] = reply(302, b"", {"Location": "/loop"})
        if content_length is not None and status not in (204, 304):
            srv.routes["/x"] = _lying(status, body, {**headers, "Content-Length": content_length})
        else:
            srv.routes["/x"] = reply(status, body, headers)
        client = HttpClient(
            cache_dir=None, timeout=(1.0, 0.5), retries=2, sleep=slept.append, deadline=5
        )
        started = time.monotonic()
        try:
            client.get_json(f"{srv.base}/x")
        except RegistryError as exc:
            assert exc.exit_code == 4 and exc.hint
        finally:
            client.close()
    assert time.monotonic() - started < 6
    assert all(0 <= s <= MAX_RETRY_AFTER for s in slept)


def _lying(status: int, body: bytes, headers: dict[str, str]):  # type: ignore[no-untyped-def]
    def script(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)
        h.close_connection = True

    return script


def test_retry_after_is_capped() -> None:
    slept: list[float] = []
    with scripted_server() as srv:
        srv.routes["/x"] = reply(429, b"", {"Retry-After": "3600"})
        client = HttpClient(cache_dir=None, retries=2, sleep=slept.append, deadline=5)
        with pytest.raises(RegistryError):
            client.get(f"{srv.base}/x")
        client.close()
    assert slept == [MAX_RETRY_AFTER, MAX_RETRY_AFTER]


def test_dripping_server_hits_the_deadline() -> None:
    with scripted_server() as srv:
        srv.routes["/x"] = drip(every=0.5, stop=srv.stop)
        client = HttpClient(
            cache_dir=None, timeout=(2.0, 30.0), retries=3, sleep=lambda _s: None, deadline=2
        )
        started = time.monotonic()
        with pytest.raises(RegistryError, match="not finished within 2 s"):
            client.get(f"{srv.base}/x")
        client.close()
    assert time.monotonic() - started < 4


def test_endless_body_is_capped() -> None:
    with scripted_server() as srv:
        srv.routes["/x"] = endless(stop=srv.stop)
        client = HttpClient(
            cache_dir=None, retries=0, sleep=lambda _s: None, deadline=20, max_body=1 << 20
        )
        with pytest.raises(RegistryError, match="more than"):
            client.get(f"{srv.base}/x")
        client.close()


def test_refresh_against_a_dripping_server_ends_at_the_deadline() -> None:
    with scripted_server() as srv:
        srv.routes["*"] = drip(every=2.0, stop=srv.stop)
        o = cli(
            ["matrix", "refresh", "--source", "vllm"],
            env={"ROCM_VLLM_GITHUB_API": srv.base, "ROCM_VLLM_HTTP_DEADLINE": "2"},
        )
    assert_clean(o)
    assert o.code == 4 and "within 2 s" in o.err and o.seconds < 5, str(o)


def test_image_digest_against_a_dripping_registry_ends_at_the_deadline() -> None:
    with scripted_server() as srv:
        srv.routes["*"] = drip(every=2.0, stop=srv.stop)
        o = cli(
            ["image", "--gfx", "gfx942", "--registry", srv.base, "--digest"],
            env={"ROCM_VLLM_HTTP_DEADLINE": "2"},
        )
    assert_clean(o)
    assert o.code == 4 and "within 2 s" in o.err and o.seconds < 5, str(o)


def test_image_digest_against_an_endless_registry() -> None:
    with scripted_server() as srv:
        srv.routes["*"] = endless(stop=srv.stop)
        o = cli(
            ["image", "--gfx", "gfx942", "--registry", srv.base, "--digest"],
            env={"ROCM_VLLM_HTTP_DEADLINE": "8"},
        )
    assert_clean(o)
    assert o.code == 4, str(o)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"ROCM_VLLM_GITHUB_API": "htp://bad"}, "failed"),
        ({"ROCM_VLLM_GITHUB_API": "http://"}, "failed"),
        ({"ROCM_VLLM_GITHUB_API": "http://[::1"}, "failed"),
        ({"ROCM_VLLM_GITHUB_API": "not a url at all"}, "failed"),
        ({"GITHUB_TOKEN": "abc\r\nX-Evil: 1"}, "failed"),
        ({"GITHUB_TOKEN": "tok€n"}, "failed"),
    ],
    ids=["scheme", "no-host", "bad-ipv6", "no-url", "token-newline", "token-non-latin1"],
)
def test_refresh_request_failures_are_exit_4(env: dict[str, str], needle: str) -> None:
    with scripted_server() as srv:
        srv.routes["*"] = reply(200, b"[]")
        o = cli(
            ["matrix", "refresh", "--source", "vllm"], env={"ROCM_VLLM_GITHUB_API": srv.base, **env}
        )
    assert_clean(o)
    assert o.code == 4 and needle in o.err, str(o)


@pytest.mark.parametrize(
    "target", ["file:///etc/passwd", "/loop"], ids=["file-redirect", "redirect-loop"]
)
def test_refresh_redirects_are_exit_4(target: str) -> None:
    with scripted_server() as srv:
        srv.routes["/loop"] = reply(302, b"", {"Location": "/loop"})
        srv.routes["*"] = reply(302, b"", {"Location": target})
        o = cli(["matrix", "refresh", "--source", "vllm"], env={"ROCM_VLLM_GITHUB_API": srv.base})
    assert_clean(o)
    assert o.code == 4, str(o)


def test_tag_lists_are_capped() -> None:
    tags = [f"t{i}" for i in range(5000)]
    with scripted_server() as srv:
        srv.routes["/v2/rocm/vllm/tags/list"] = reply(
            200, json.dumps({"name": "rocm/vllm", "tags": tags}).encode()
        )
        client = HttpClient(cache_dir=None, retries=0, sleep=lambda _s: None, deadline=10)
        source = ImagesSource(client, Endpoints(registry=srv.base), {}, repos=("rocm/vllm",))
        result = SourceResult("images")
        listed = source.list_tags("rocm/vllm", result)
        client.close()
    assert len(listed) == MAX_TAGS
    assert any("more than" in r.reason for r in result.refused)


@pytest.mark.parametrize(
    "token_body",
    [
        b"[" * 100_000,
        b'{"token": ' + b"9" * 5000 + b"}",
        b"\xff",
        b'{"token": ["x"]}',
        b"x" * (5 * 1024 * 1024),
    ],
    ids=["deep", "huge-int", "binary", "wrong-type", "huge"],
)
def test_registry_token_replies(token_body: bytes) -> None:
    with scripted_server() as srv:
        srv.routes["/token"] = reply(200, token_body)
        srv.routes["*"] = reply(
            401, b"", {"WWW-Authenticate": f'Bearer realm="{srv.base}/token",service="x"'}
        )
        client = RegistryClient(Registry(srv.base), retries=1, deadline=5)
        with pytest.raises(RegistryError) as caught:
            client.resolve("vllm/vllm-openai-rocm", "v0.24.0", use_cache=False)
        client.close()
    assert caught.value.exit_code == 4 and caught.value.hint


@settings(HOSTILE, max_examples=15)
@given(
    challenge=st.one_of(
        header_values,
        st.builds(lambda r, s: f'Bearer realm="{r}",service="{s}"', header_values, header_values),
    ),
    digest=st.one_of(st.none(), header_values, st.just("sha256:" + "a" * 64 + "\n")),
)
def test_registry_any_challenge_and_digest(challenge: str, digest: str | None) -> None:
    with scripted_server() as srv:
        headers = {"WWW-Authenticate": challenge}
        if digest is not None:
            headers["Docker-Content-Digest"] = digest
        srv.routes["*"] = reply(401, b"", headers)
        client = RegistryClient(Registry(srv.base), timeout=0.5, retries=1, deadline=3)
        try:
            got = client.resolve("vllm/vllm-openai-rocm", "v0.24.0", use_cache=False)
            assert got.digest.startswith("sha256:") and "\n" not in got.digest
        except RegistryError as exc:
            assert exc.exit_code == 4 and exc.hint
        finally:
            client.close()
