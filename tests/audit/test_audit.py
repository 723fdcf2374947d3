"""`rocm-vllm audit` on artifacts built around a real AMD-built library: wheels, directories,
`docker save`-shaped archives, OCI layouts with gzip and zstd layers, and hostile archives."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import time
import zipfile
from pathlib import Path

import jsonschema
import pytest

from resolver.artifacts.audit import audit
from resolver.data import matrix

from ..helpers import run_cli
from .test_bundle import REAL, elf_with

ROOT = Path(__file__).resolve().parents[2]
M = matrix.load()
NO_GPU = elf_with(b"\0" * 64, name=b".text")  # an ELF with no GPU code


def wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def tar_bytes(members: dict[str, bytes], *, compress: str | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    if compress == "gzip":
        return gzip.compress(raw)
    if compress == "zstd":
        import zstandard

        return zstandard.ZstdCompressor().compress(raw)
    return raw


def test_a_wheel_is_judged_on_vllms_own_extension(tmp_path: Path) -> None:
    whl = wheel(
        tmp_path / "vllm-0.33.0+rocm-cp312-cp312-linux_x86_64.whl",
        {"vllm/_C.abi3.so": REAL.read_bytes(), "vllm/other.so": NO_GPU, "vllm/__init__.py": b""},
    )
    result = audit(M, str(whl))
    (lib,) = result.libraries
    assert lib.path.endswith("!vllm/_C.abi3.so") and lib.decisive and lib.compressed
    assert result.lacking(M, "gfx1201") == [] and result.lacking(M, "gfx1300") == [lib]
    ok = run_cli("audit", str(whl), "--gfx", "gfx942,gfx1201")
    assert ok.exit_code == 0 and "gfx1201: covered" in ok.stdout
    missing = run_cli("audit", str(whl), "--gfx", "gfx1300")
    assert (
        missing.exit_code == 1
        and "NOT covered" in missing.stdout
        and "_C.abi3.so" in missing.stdout
    )


def test_a_docker_save_archive_and_an_oci_layout_are_read_layer_by_layer(tmp_path: Path) -> None:
    layer = tar_bytes({"usr/lib/python3/site-packages/vllm/_C.abi3.so": REAL.read_bytes()})
    saved = tmp_path / "image.tar"
    saved.write_bytes(
        tar_bytes(
            {
                "manifest.json": b"[]",
                "1a2b/layer.tar": layer,
                "3c4d/layer.tar.gz": tar_bytes({"opt/rocm/lib/libx.so": NO_GPU}, compress="gzip"),
            }
        )
    )
    result = audit(M, str(saved))
    assert [lib.path for lib in result.libraries] == [
        "image.tar!1a2b/layer.tar!usr/lib/python3/site-packages/vllm/_C.abi3.so"
    ]
    assert result.elf == 2
    # An OCI image layout: blobs named by digest, one gzip and one zstd layer.
    layout = tmp_path / "layout"
    blobs = layout / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    for kind in ("gzip", "zstd"):
        blob = tar_bytes({f"{kind}/vllm/_moe_C.abi3.so": REAL.read_bytes()}, compress=kind)
        (blobs / hashlib.sha256(blob).hexdigest()).write_bytes(blob)
    (layout / "index.json").write_text('{"schemaVersion": 2, "manifests": []}')
    found = audit(M, str(layout))
    assert sorted(lib.path.rsplit("!", 1)[1] for lib in found.libraries) == [
        "gzip/vllm/_moe_C.abi3.so",
        "zstd/vllm/_moe_C.abi3.so",
    ]
    assert "gfx950" in found.targets


def test_json_follows_its_schema(tmp_path: Path) -> None:
    result = run_cli("audit", str(REAL), "--gfx", "gfx1151", "--json")
    data = json.loads(result.stdout)
    schema = json.loads((ROOT / "docs" / "audit.schema.json").read_text())
    jsonschema.validate(data, schema)
    assert data["covers"]["gfx1151"]["covered"] and len(data["targets"]) == 27


def test_hostile_archives_are_refused_quickly_and_nothing_is_written(tmp_path: Path) -> None:
    # A zip bomb: 200 MB of zeros in a few hundred KB.
    bomb = tmp_path / "bomb.whl"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("vllm/_C.abi3.so", b"\x7fELF" + bytes(200 * 1024**2))
    before = set(tmp_path.iterdir())
    result = run_cli("audit", str(bomb))
    assert result.exit_code == 2 and "zip bomb" in result.stderr
    # A truncated layer.
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(tar_bytes({"a.so": REAL.read_bytes()}, compress="gzip")[:5000])
    result = run_cli("audit", str(cut))
    assert result.exit_code == 2 and "error:" in result.stderr and "Traceback" not in result.stderr
    assert set(tmp_path.iterdir()) == before | {cut}
    # Ten thousand tiny files: read in bounded time.
    many = tmp_path / "many"
    many.mkdir()
    for i in range(10_000):
        (many / f"f{i}.txt").write_bytes(b"x")
    start = time.monotonic()
    assert audit(M, str(many)).files == 10_000
    assert time.monotonic() - start < 30


def test_links_are_not_followed(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "lib.so").symlink_to(REAL)
    assert audit(M, str(d)).libraries == []


@pytest.mark.parametrize("bad", ["gfx", "--", "gfx942;rm"])
def test_a_bad_gfx_is_bad_input(bad: str) -> None:
    result = run_cli("audit", str(REAL), "--gfx", bad)
    assert result.exit_code == 2


def test_a_hostile_member_name_reaches_no_line_or_record_raw(tmp_path: Path) -> None:
    """Names inside an artifact are the archive's: a line break or an escape sequence in one is
    written out (\\x0a), so the one-line error, the terminal and the overlay record that
    `image --audit` writes stay whole."""
    from resolver.artifacts.images import audited_record

    lib = REAL.read_bytes()  # a real AMD-built library
    name = "usr/lib/python3/dist-packages/vllm/_C\n\x1b[2J.abi3.so"
    archive = tmp_path / "image.tar"
    archive.write_bytes(tar_bytes({name: lib}))
    result = audit(M, str(archive))
    (library,) = result.libraries
    assert "\n" not in library.path and "\x1b" not in library.path
    assert "vllm/_C\\x0a\\x1b[2J.abi3.so" in library.path and library.decisive
    raw = {"repo": "vllm/vllm-openai-rocm", "tag": "v0.33.0", "arch": []}
    record = audited_record(M, raw, "sha256:" + "0" * 64, result)
    assert record is not None
    assert not any(c in str(record[k]) for k in ("source", "note") for c in "\n\r\x1b")
    out = run_cli("audit", str(archive))
    assert "\x1b" not in out.output
