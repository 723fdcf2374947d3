"""Channel: upstream HTTP (refresh sources, the registry, token servers), answered by a scripted
loopback server. Every answer ends in a response or a RegistryError (exit 4 with a hint) within
the operation's deadline; bodies are capped; Retry-After is capped and never slept in tests."""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Self

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
        ({"GITHUB_TOKEN": "tok€n"}, "failed"),
    ],
    ids=["scheme", "no-host", "bad-ipv6", "no-url", "token-non-latin1"],
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


# --- registries that lie about a digest -------------------------------------------------------
# A stand-in registry serving one image (a config and a layer, pushed as a registry stores them),
# each answer scriptable: the manifest it sends for a digest, the digest header it sends for a tag.

REPO = "vllm/vllm-openai-rocm"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"


def _sha(data: bytes) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


def _layer(files: dict[str, bytes]) -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _manifest(config: bytes, layers: list[bytes]) -> bytes:
    return json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": _sha(config),
                "size": len(config),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": _sha(x),
                    "size": len(x),
                }
                for x in layers
            ],
        }
    ).encode()


class _Image:
    """The documents and blobs a faithful registry holds for one image; tests swap answers."""

    def __init__(self) -> None:
        self.config = json.dumps({"architecture": "amd64", "os": "linux", "config": {}}).encode()
        self.layer = _layer({"usr/share/doc/readme": b"no GPU code here"})
        self.manifest = _manifest(self.config, [self.layer])
        self.digest = _sha(self.manifest)
        # What the registry serves: path -> (body, content type, Docker-Content-Digest)
        self.served: dict[str, tuple[bytes, str, str | None]] = {
            f"/v2/{REPO}/manifests/{self.digest}": (self.manifest, OCI_MANIFEST, self.digest),
            f"/v2/{REPO}/manifests/v0.24.0": (self.manifest, OCI_MANIFEST, self.digest),
            f"/v2/{REPO}/blobs/{_sha(self.config)}": (self.config, "application/json", None),
            f"/v2/{REPO}/blobs/{_sha(self.layer)}": (self.layer, "application/octet-stream", None),
        }

    def script(self, h: BaseHTTPRequestHandler) -> None:
        found = self.served.get(h.path)
        if found is None:
            reply(404, b'{"errors": []}')(h)
            return
        body, media, digest = found
        headers = {"Content-Type": media}
        if digest is not None:
            headers["Docker-Content-Digest"] = digest
        reply(200, body, headers)(h)


def _audit(srv_base: str, ref: str, *extra: str) -> object:
    return cli(["audit", f"docker://{ref}", "--registry", srv_base, "--json", *extra])


def test_a_faithful_stand_in_registry_is_audited() -> None:
    image = _Image()
    with scripted_server() as srv:
        srv.routes["*"] = image.script
        o = _audit(srv.base, f"{REPO}@{image.digest}")
    assert_clean(o)
    assert o.code == 0 and json.loads(o.out)["files"] == 2, str(o)  # the layer, its file


def test_a_manifest_rewritten_for_its_digest_is_refused_before_any_layer_is_read() -> None:
    image = _Image()
    evil = _layer({"usr/lib/evil.so": b"\x7fELF" + b"\0" * 60})
    rewritten = _manifest(image.config, [evil])
    image.served[f"/v2/{REPO}/manifests/{image.digest}"] = (rewritten, OCI_MANIFEST, image.digest)
    image.served[f"/v2/{REPO}/blobs/{_sha(evil)}"] = (evil, "application/octet-stream", None)
    with scripted_server() as srv:
        srv.routes["*"] = image.script
        o = _audit(srv.base, f"{REPO}@{image.digest}")
    assert_clean(o)
    assert o.code == 4, str(o)
    assert not any("/blobs/" in hit for hit in srv.hits), srv.hits


def test_a_manifest_by_tag_is_checked_against_the_digest_the_registry_sends() -> None:
    image = _Image()
    rewritten = _manifest(image.config, [image.layer, image.layer])
    image.served[f"/v2/{REPO}/manifests/v0.24.0"] = (rewritten, OCI_MANIFEST, image.digest)
    with scripted_server() as srv:
        srv.routes["*"] = image.script
        o = _audit(srv.base, f"{REPO}:v0.24.0")
    assert_clean(o)
    assert o.code == 4, str(o)


@pytest.mark.parametrize(
    "entry_digest",
    [
        "../../../../v2/evil/manifests/pwn",
        "sha256:" + "a" * 64 + "?x=1",
        "sha256:" + "A" * 64,
        "sha256:../../../../v2/evil/manifests/pwn",
        "sha512:" + "a" * 128,
        "",
        None,
        ["sha256:" + "a" * 64],
    ],
)
def test_an_index_entry_digest_is_validated_before_it_is_asked_for(entry_digest: object) -> None:
    image = _Image()
    index = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": [
                {
                    "mediaType": OCI_MANIFEST,
                    "digest": entry_digest,
                    "size": len(image.manifest),
                    "platform": {"os": "linux", "architecture": "amd64"},
                }
            ],
        }
    ).encode()
    image.served[f"/v2/{REPO}/manifests/{_sha(index)}"] = (index, OCI_INDEX, _sha(index))
    with scripted_server() as srv:
        srv.routes["*"] = image.script
        o = _audit(srv.base, f"{REPO}@{_sha(index)}")
    assert_clean(o)
    assert o.code == 4, str(o)
    assert len(srv.hits) == 1 and not any("evil" in hit or "?" in hit for hit in srv.hits), srv.hits


@pytest.mark.parametrize("platform", ["linux/amd64", ["linux"], 7, None])
def test_an_index_platform_that_is_not_an_object_is_no_crash(platform: object) -> None:
    image = _Image()
    index = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": [{"digest": image.digest, "size": 1, "platform": platform}],
        }
    ).encode()
    image.served[f"/v2/{REPO}/manifests/{_sha(index)}"] = (index, OCI_INDEX, _sha(index))
    with scripted_server() as srv:
        srv.routes["*"] = image.script
        o = _audit(srv.base, f"{REPO}@{_sha(index)}")
    assert_clean(o)
    assert o.code == 2, str(o)  # no linux/amd64 image in it: nothing to audit


@pytest.mark.parametrize(
    "layer",
    [
        {"digest": "sha256:../../../../v2/evil/blobs/x", "size": 10},
        {"digest": "sha256:" + "0" * 64 + "?x=1", "size": 10},
        {"digest": "md5:abc", "size": 10},
        {"digest": "sha256:" + "0" * 64},
        {"digest": "sha256:" + "0" * 64, "size": -1},
        {"digest": "sha256:" + "0" * 64, "size": "10"},
        "sha256:" + "0" * 64,
    ],
)
def test_a_bad_layer_descriptor_is_the_registrys_failure(layer: object) -> None:
    image = _Image()
    doc = json.loads(image.manifest)
    doc["layers"] = [layer]
    manifest = json.dumps(doc).encode()
    image.served[f"/v2/{REPO}/manifests/{_sha(manifest)}"] = (manifest, OCI_MANIFEST, None)
    with scripted_server() as srv:
        srv.routes["*"] = image.script
        o = _audit(srv.base, f"{REPO}@{_sha(manifest)}")
    assert_clean(o)
    assert o.code == 4, str(o)
    assert not any("evil" in hit or "?" in hit for hit in srv.hits), srv.hits


@pytest.mark.parametrize("change", ["altered", "longer", "shorter"])
def test_a_layer_that_is_not_what_the_manifest_names_is_exit_4(change: str) -> None:
    image = _Image()
    path = f"/v2/{REPO}/blobs/{_sha(image.layer)}"
    body = {
        "altered": image.layer.replace(b"no GPU", b"my GPU"),
        "longer": image.layer + b"\0" * 4096,
        "shorter": image.layer[:-1024],
    }[change]
    image.served[path] = (body, "application/octet-stream", None)
    with scripted_server() as srv:
        srv.routes["*"] = image.script
        o = _audit(srv.base, f"{REPO}@{image.digest}")
    assert_clean(o)
    assert o.code == 4, str(o)


def test_a_deep_image_config_is_refused_cleanly() -> None:
    image = _Image()
    image.config = b"[" * 100_000
    image.manifest = _manifest(image.config, [image.layer])
    image.digest = _sha(image.manifest)
    image.served[f"/v2/{REPO}/manifests/{image.digest}"] = (image.manifest, OCI_MANIFEST, None)
    image.served[f"/v2/{REPO}/blobs/{_sha(image.config)}"] = (image.config, "text/plain", None)
    with scripted_server() as srv:
        srv.routes["*"] = image.script
        o = _audit(srv.base, f"{REPO}@{image.digest}")
    assert_clean(o)


@pytest.mark.parametrize(
    "ref",
    [
        "Upper/Case:v1",
        "repo@sha256:abc",
        "repo@sha256:" + "0" * 64 + "/../x",
        "repo:tag\nerror: forged",
        "repo:ta g",
        "../../etc/passwd",
    ],
)
def test_a_malformed_reference_to_audit_is_bad_input(ref: str) -> None:
    with scripted_server() as srv:
        o = _audit(srv.base, ref)
        assert srv.hits == []
    assert_clean(o)
    assert o.code == 2, str(o)
    assert "\nerror: forged" not in o.err


def test_image_audit_through_a_rewriting_registry_writes_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    image = _Image()
    rewritten = _manifest(image.config, [])
    image.served[f"/v2/{REPO}/manifests/{image.digest}"] = (rewritten, OCI_MANIFEST, image.digest)
    data = tmp_path / "data"
    with scripted_server() as srv:
        srv.routes["*"] = image.script
        o = cli(
            ["image", "--gfx", "gfx942", "--driver", "30.30.3", "--vllm", "==0.24.0", "--audit",
             "--registry", srv.base, "--json"],
            env={"ROCM_VLLM_DATA_DIR": str(data)},
        )  # fmt: skip
    assert_clean(o)
    assert o.code == 4, str(o)
    assert not data.exists() or not any(p.is_file() for p in data.rglob("*")), list(data.rglob("*"))


# --- secrets are never shown ---------------------------------------------------------------------
# A canary stands for a token or password in each place a site puts one; it must not appear in
# stdout, stderr, JSON or a generated file, whatever the run's outcome.

CANARY = "CanarySecret7f3a9"


def _no_canary(o: object, *files: Path) -> None:
    shown = getattr(o, "out", "") + getattr(o, "err", "")  # not the argv, which holds it
    text = shown + "".join(f.read_text(errors="replace") for f in files if f.is_file())
    assert CANARY not in text, text


def _one_error_line(o: object) -> None:
    lines = [line for line in getattr(o, "err", "").splitlines() if line.startswith("error:")]
    assert len(lines) <= 1, str(o)


def _refresh(srv_base: str, env: dict[str, str], *extra: str) -> object:
    return cli(
        ["matrix", "refresh", "--source", "vllm", *extra],
        env={"ROCM_VLLM_GITHUB_API": srv_base, **env},
    )


@pytest.mark.parametrize("ending", ["\r\n", "\n", " ", "\r"])
def test_a_token_file_line_ending_is_taken_off_and_the_token_never_shown(ending: str) -> None:
    seen: list[str] = []

    def script(h: BaseHTTPRequestHandler) -> None:
        seen.append(h.headers.get("Authorization", ""))
        reply(500, b"down")(h)

    with scripted_server() as srv:
        srv.routes["*"] = script
        for json_flag in ((), ("--json",)):
            o = _refresh(srv.base, {"GITHUB_TOKEN": f"ghp_{CANARY}{ending}"}, *json_flag)
            assert_clean(o)
            assert o.code == 4, str(o)
            _no_canary(o)
    assert seen and all(value == f"Bearer ghp_{CANARY}" for value in seen), seen


@pytest.mark.parametrize("token", [f"ghp_{CANARY}\r\nX-Evil: 1", f"ghp_{CANARY}\x1b[2J"])
def test_a_token_with_a_control_character_inside_is_refused_unshown(token: str) -> None:
    with scripted_server() as srv:
        o = _refresh(srv.base, {"GITHUB_TOKEN": token})
        assert srv.hits == []
    assert_clean(o)
    assert o.code == 2 and "GITHUB_TOKEN" in o.err, str(o)
    _no_canary(o)
    _one_error_line(o)


@pytest.mark.parametrize("variable", ["ROCM_VLLM_GITHUB_API", "ROCM_VLLM_INDEX_URL"])
def test_a_mirrors_userinfo_is_sent_as_auth_and_never_shown(variable: str) -> None:
    import base64

    seen: list[str] = []

    def script(h: BaseHTTPRequestHandler) -> None:
        seen.append(h.headers.get("Authorization", ""))
        reply(500, f"no {h.path}".encode())(h)

    source = "vllm" if variable == "ROCM_VLLM_GITHUB_API" else "sdist"
    with scripted_server() as srv:
        srv.routes["*"] = script
        mirror = srv.base.replace("http://", f"http://bob:{CANARY}@")
        for json_flag in ((), ("--json",)):
            o = cli(
                ["matrix", "refresh", "--source", source, *json_flag],
                env={"ROCM_VLLM_GITHUB_API": srv.base, variable: mirror},
            )
            assert_clean(o)
            assert o.code == 4, str(o)
            _no_canary(o)
    basic = "Basic " + base64.b64encode(f"bob:{CANARY}".encode()).decode()
    assert seen and all(value == basic for value in seen), seen


@pytest.mark.parametrize(
    "variable",
    ["ROCM_VLLM_GITHUB_API", "ROCM_VLLM_GITHUB_RAW", "ROCM_VLLM_WHEELS", "ROCM_VLLM_INDEX_URL"],
)
def test_a_line_break_in_a_base_url_is_refused_and_forges_no_line(variable: str) -> None:
    with scripted_server() as srv:
        o = cli(
            ["matrix", "refresh", "--source", "vllm"],
            env={"ROCM_VLLM_GITHUB_API": srv.base, variable: f"{srv.base}/x\nerror: forged"},
        )
        assert srv.hits == []
    assert_clean(o)
    assert o.code == 2 and variable in o.err, str(o)
    _one_error_line(o)


@pytest.mark.parametrize("tail", [f"/api?access_token={CANARY}", f"?{CANARY}", f"/#{CANARY}"])
def test_a_query_token_in_a_base_url_is_refused_unshown(tail: str) -> None:
    with scripted_server() as srv:
        srv.routes["*"] = reply(500, b"down")
        o = _refresh(srv.base + tail, {})
        assert srv.hits == []
    assert_clean(o)
    assert o.code == 2 and "ROCM_VLLM_GITHUB_API" in o.err, str(o)
    _no_canary(o)


@pytest.mark.parametrize(
    "registry",
    [
        f"https://bob:{CANARY}@registry.example.com",
        f"https://{CANARY}@registry.example.com/dockerhub",
        f"https://registry.example.com/?token={CANARY}",
        f"registry.example.com/x?{CANARY}",
        f"https://registry.example.com/{CANARY}\nerror: forged",
    ],
)
@pytest.mark.parametrize("where", ["flag", "env"])
def test_a_registry_url_with_a_secret_is_refused_unshown(registry: str, where: str) -> None:
    flags = ["--registry", registry] if where == "flag" else []
    env = {} if where == "flag" else {"ROCM_VLLM_REGISTRY": registry}
    for argv in (
        ["image", "--gfx", "gfx942", "--digest", *flags],
        ["image", "--gfx", "gfx942", "--digest", "--json", *flags],
        ["audit", "docker://vllm/vllm-openai-rocm:v0.24.0", *flags],
    ):
        o = cli(argv, env=env)
        assert_clean(o)
        assert o.code == 2, str(o)
        _no_canary(o)
        _one_error_line(o)


@pytest.mark.parametrize(
    "mirror",
    [
        f"bob:{CANARY}@harbor.example.com/dockerhub",
        f"https://harbor.example.com/dockerhub?token={CANARY}",
        f"bob:{CANARY}@harbor.example.com/x\nerror: forged",
    ],
)
def test_a_registry_mirror_with_a_secret_is_refused_unshown(mirror: str, tmp_path: Path) -> None:
    out = tmp_path / "Dockerfile"
    o = cli(["dockerfile", "--gfx", "gfx942", "--registry-mirror", mirror, "-o", str(out)])
    assert_clean(o)
    assert o.code == 2, str(o)
    _no_canary(o, out)
    _one_error_line(o)


@pytest.mark.parametrize(
    "line",
    [
        f'index = "https://bob:{CANARY}@pypi.example.com/simple"',
        f'git = "https://{CANARY}@git.example.com/github"',
        f'sdist = "https://files.example.com/vllm?token={CANARY}"',
        f'registry = "bob:{CANARY}@harbor.example.com/dockerhub"',
        f'[apt]\n"http://archive.ubuntu.com/ubuntu" = "http://bob:{CANARY}@apt.example.com/u"',
        f'index = "https://bob:{CANARY}@pypi.example.com/x\\nerror: forged"',
    ],
)
def test_a_mirror_config_with_a_secret_is_refused_unshown(line: str, tmp_path: Path) -> None:
    config = tmp_path / "mirrors.toml"
    config.write_text(line + "\n")
    out = tmp_path / "Dockerfile"
    for via in ("flag", "env"):
        flags = ["--mirror-config", str(config)] if via == "flag" else []
        env = {} if via == "flag" else {"ROCM_VLLM_MIRRORS": str(config)}
        o = cli(["dockerfile", "--gfx", "gfx942", *flags, "-o", str(out)], env=env)
        assert_clean(o)
        assert o.code == 2, str(o)
        _no_canary(o, out)
        _one_error_line(o)


def test_a_wheel_mirrors_login_is_left_out_of_the_printed_install_line() -> None:
    env = {"ROCM_VLLM_WHEELS": f"https://bob:{CANARY}@art.example.com/rocm?token={CANARY}"}
    node = ["--gfx", "gfx942", "--driver", "30.30.3", "--vllm", "==0.18.0", "--prefer", "wheel"]
    text = cli(["check", *node], env=env)
    data = cli(["check", *node, "--json"], env=env)
    for o in (text, data):
        assert_clean(o)
        assert o.code == 0, str(o)
        _no_canary(o)
    (install,) = [line for line in text.out.splitlines() if "uv pip install" in line]
    assert "--extra-index-url https://art.example.com/rocm/0.18.0/rocm700 " in install
    assert "~/.netrc" in install  # where uv finds the login instead
    assert "https://art.example.com/rocm/0.18.0/rocm700" in data.out


# --- registry reads are bounded: in time (ROCM_VLLM_HTTP_DEADLINE), bytes and layers ------------


def test_a_dripping_layer_ends_at_the_deadline() -> None:
    image = _Image()
    with scripted_server() as srv:
        srv.routes["*"] = image.script
        srv.routes[f"/v2/{REPO}/blobs/{_sha(image.layer)}"] = drip(every=0.5, stop=srv.stop)
        o = cli(
            ["audit", f"docker://{REPO}@{image.digest}", "--registry", srv.base],
            env={"ROCM_VLLM_HTTP_DEADLINE": "2"},
        )
    assert_clean(o)
    assert o.code == 4 and "within 2 s" in o.err and o.seconds < 4, str(o)


def test_a_dripping_manifest_ends_at_the_deadline() -> None:
    with scripted_server() as srv:
        srv.routes["*"] = drip(every=0.5, stop=srv.stop)
        o = cli(
            ["audit", f"docker://{REPO}:v0.24.0", "--registry", srv.base],
            env={"ROCM_VLLM_HTTP_DEADLINE": "2"},
        )
    assert_clean(o)
    assert o.code == 4 and o.seconds < 4, str(o)


def test_an_endless_layer_is_cut_at_the_size_the_manifest_states() -> None:
    image = _Image()
    with scripted_server() as srv:
        srv.routes["*"] = image.script
        srv.routes[f"/v2/{REPO}/blobs/{_sha(image.layer)}"] = endless(stop=srv.stop)
        o = _audit(srv.base, f"{REPO}@{image.digest}")
    assert_clean(o)
    assert o.code == 4 and o.seconds < 3, str(o)


def test_a_manifest_with_thousands_of_layers_is_refused_before_any_is_read() -> None:
    image = _Image()
    doc = json.loads(image.manifest)
    doc["layers"] = doc["layers"] * 3000
    manifest = json.dumps(doc).encode()
    image.served[f"/v2/{REPO}/manifests/{_sha(manifest)}"] = (manifest, OCI_MANIFEST, None)
    with scripted_server() as srv:
        srv.routes["*"] = image.script
        o = _audit(srv.base, f"{REPO}@{_sha(manifest)}")
    assert_clean(o)
    assert o.code == 4 and not any("/blobs/" in hit for hit in srv.hits), str(o)


class _DrippingEngine:
    """A stand-in for the Docker Engine whose `docker save` stream never ends (or breaks off)."""

    def __init__(self, *, breaks: bool = False) -> None:
        from types import SimpleNamespace

        def save(_name: str) -> object:
            yield _layer({"a": b"x"})[:512]  # a tar header, then a byte now and then, for ever
            if breaks:
                raise ConnectionError("the engine went away")
            while True:
                time.sleep(0.2)
                yield b"\0"

        image = SimpleNamespace(labels={})
        self.client = SimpleNamespace(
            images=SimpleNamespace(get=lambda _name: image),
            api=SimpleNamespace(get_image=save),
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


@pytest.mark.parametrize("breaks", [False, True], ids=["drips", "breaks-off"])
def test_an_engine_image_stream_is_bounded_by_the_deadline(
    breaks: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from resolver.artifacts import engine

    monkeypatch.setattr(engine, "DockerEngine", lambda: _DrippingEngine(breaks=breaks))
    o = cli(
        ["audit", "docker-daemon:vllm/vllm-openai-rocm:v0.24.0"],
        env={"ROCM_VLLM_HTTP_DEADLINE": "1"},
    )
    assert_clean(o)
    assert o.code == 5 and o.seconds < 3, str(o)
