"""Maintainer script: make the recorded sdist slices the refresh tests serve.

    python -m tests.refresh.record_sdist PAGE.json SDIST_DIR VERSION...

PAGE.json is the index's real PEP 691 page for vllm (``curl -H 'Accept:
application/vnd.pypi.simple.v1+json' <index>/vllm/``); SDIST_DIR holds the real sdists it lists,
each checked against the page's sha256. For each VERSION the files ``rocm-vllm matrix refresh
--source sdist`` reads are repacked, bytes unchanged, as ``recorded/sdist/vllm-VERSION.tar.gz``
(top directory, names and contents as released; mtimes zeroed so the slice is reproducible), and
the page is saved with only the sdist entries (``pypi-simple-vllm.json``), as served.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import sys
import tarfile
from pathlib import Path

from resolver.refresh.sdist import read_members

OUT = Path(__file__).parent / "recorded" / "sdist"


def slice_bytes(version: str, files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            info = tarfile.TarInfo(f"vllm-{version}/{path}")
            info.size = len(files[path])
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(files[path]))
    return gzip.compress(raw.getvalue(), mtime=0)


def main(page_path: str, sdist_dir: str, *versions: str) -> None:
    page = json.loads(Path(page_path).read_text())
    page["files"] = [f for f in page["files"] if f["filename"].endswith(".tar.gz")]
    by_name = {f["filename"]: f for f in page["files"]}
    OUT.mkdir(parents=True, exist_ok=True)
    for version in versions:
        name = f"vllm-{version}.tar.gz"
        data = (Path(sdist_dir) / name).read_bytes()
        if hashlib.sha256(data).hexdigest() != by_name[name]["hashes"]["sha256"]:
            raise SystemExit(f"{name}: sha256 differs from the index page")
        files = {k: v.encode("utf-8") for k, v in read_members(data).items()}
        (OUT / name).write_bytes(slice_bytes(version, files))
    (OUT / "pypi-simple-vllm.json").write_text(json.dumps(page, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
