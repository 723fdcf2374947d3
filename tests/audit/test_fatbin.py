"""artifacts.audit.fatbin: CUDA fat binaries read from real NVIDIA-built libraries (vLLM 0.33.0's
and xformers 0.0.35's PyPI wheels, fixtures/cuda/SOURCES.md), checked against what their build
recipes say they carry, and hostile bytes refused with a clear error."""

from __future__ import annotations

import contextlib
import json
import struct
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resolver.artifacts.audit import audit
from resolver.artifacts.audit.bundle import AuditError, elf_sections
from resolver.artifacts.audit.fatbin import (
    FLAG_ARCH_SPECIFIC,
    MAGIC_BYTES,
    coverage,
    cuda_code,
    entries,
    parse_target,
    runs,
)
from resolver.data import matrix

from ..helpers import run_cli
from .test_audit import NO_GPU, wheel
from .test_bounds import _grows_linearly
from .test_bundle import elf_with

ROOT = Path(__file__).resolve().parents[2]
CUDA = Path(__file__).parent / "fixtures" / "cuda"
FLASHMLA = CUDA / "vllm-0.33.0-_flashmla_extension_C.abi3.so"  # a whole real library
XFORMERS = CUDA / "xformers-0.0.35-_C.so-0.fatbin"  # real containers, cut at their bounds
C_PLAIN = CUDA / "vllm-0.33.0-_C_stable_libtorch-8888.fatbin"
C_GATED = CUDA / "vllm-0.33.0-_C_stable_libtorch-48111944.fatbin"
C_PTX = CUDA / "vllm-0.33.0-_C_stable_libtorch-47966016.fatbin"
M = matrix.load()


def targets(path: Path) -> list[str]:
    data = path.read_bytes()
    return sorted({e.target for e in entries(data)})


def test_a_real_library_carries_what_its_cmake_builds() -> None:
    # vLLM 0.33.0 cmake/external_projects/flashmla.cmake: 9.0a, and 10.0f from CUDA 12.9,
    # intersected with the release pipeline's CUDA_ARCH_X86 (7.5 ... 10.0 12.0): sm_90a, sm_100f.
    found = cuda_code(FLASHMLA.read_bytes())
    assert found is not None
    assert found.targets == ("sm_90a", "sm_100f")
    assert found.kind == "fatbin" and found.compressed  # CUDA 13 compresses cubins with zstd


def test_real_containers_read_as_their_build_lists_say() -> None:
    # Kernels built for every CUDA_ARCHS entry of the release (7.5 8.0 8.6 8.9 9.0 10.0 12.0).
    assert targets(C_PLAIN) == ["sm_100", "sm_120", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90"]
    # A kernel gated to "9.0a;10.0f;...;12.0f" in CMakeLists.txt (CUDA >= 13.0 branch).
    assert targets(C_GATED) == ["sm_100f", "sm_120f", "sm_90a"]
    # A Marlin-style list: 7.5 and 8.0+PTX (a cubin and the PTX it was compiled from).
    assert targets(C_PTX) == ["compute_80", "sm_75", "sm_80"]
    assert targets(XFORMERS) == ["compute_80", "sm_75", "sm_80", "sm_90a"]


def test_the_arch_specific_flag_agrees_with_the_cubins_own_elf_flags() -> None:
    """xformers' cubins are stored uncompressed with ELF ABI 7, whose e_flags name the SM in the
    low byte and the "a" variant in EF_CUDA_ACCELERATORS_V1 (0x800; LLVM's ELF.h): an independent
    check of the fat binary flag this reader takes the variant from."""
    data = XFORMERS.read_bytes()
    _, _, header, size = struct.unpack_from("<IHHQ", data, 0)
    pos, checked = header, 0
    while pos < header + size:
        kind, _, ehs, psz = struct.unpack_from("<HHIQ", data, pos)
        (arch,) = struct.unpack_from("<I", data, pos + 28)
        (flags,) = struct.unpack_from("<Q", data, pos + 40)
        cubin = data[pos + ehs : pos + ehs + psz]
        if kind == 2:
            assert cubin[:4] == b"\x7fELF" and cubin[7] == 0x33 and cubin[8] == 7  # CUDA, ABI 7
            (e_flags,) = struct.unpack_from("<I", cubin, 0x30)
            assert e_flags & 0xFF == arch
            assert bool(e_flags & 0x800) == bool(flags & FLAG_ARCH_SPECIFIC)
            checked += 1
        pos += ehs + psz
    assert checked == 3


def test_both_sections_and_padding_between_containers_are_read() -> None:
    plain, gated, ptx = C_PLAIN.read_bytes(), C_GATED.read_bytes(), C_PTX.read_bytes()
    lib = elf_with(plain + bytes(8) + gated, name=b".nv_fatbin")
    found = cuda_code(lib)
    assert found is not None and "sm_90a" in found.targets and "sm_75" in found.targets
    rel = elf_with(ptx, name=b"__nv_relfatbin")
    found = cuda_code(rel)
    assert found is not None and found.targets == ("compute_80", "sm_75", "sm_80")
    assert cuda_code(NO_GPU) is None


@pytest.mark.parametrize(
    ("target", "cc", "way"),
    [
        ("sm_80", (8, 0), "cubin"),
        ("sm_80", (8, 6), "cubin"),  # same major, later minor
        ("sm_80", (9, 0), None),  # a cubin never crosses a major
        ("sm_86", (8, 0), None),  # nor runs on an earlier minor
        ("sm_90a", (9, 0), "cubin"),
        ("sm_100a", (10, 3), None),  # arch-specific: that one capability only
        ("sm_100f", (10, 3), "cubin"),  # family: 10.0 and 10.3
        ("sm_100f", (12, 0), None),
        ("compute_80", (12, 0), "ptx"),  # PTX JIT-compiles forward
        ("compute_80", (7, 5), None),
        ("compute_90a", (10, 0), None),
        ("compute_100f", (10, 3), "ptx"),
        ("compute_100f", (11, 0), None),
        ("gfx942", (9, 0), None),  # not a CUDA target
    ],
)
def test_cuda_compatibility_rules(target: str, cc: tuple[int, int], way: str | None) -> None:
    assert runs(target, cc) == way


def test_a_cubin_wins_over_ptx() -> None:
    assert coverage(("compute_80", "sm_86"), (8, 6)) == "cubin"
    assert coverage(("compute_80", "sm_86"), (9, 0)) == "ptx"
    assert coverage(("sm_90a",), (10, 0)) is None
    assert parse_target("sm_x") is None and parse_target("sm_1") is None


def test_a_wheel_reports_its_sm_list_and_coverage(tmp_path: Path) -> None:
    nv = b".nv_fatbin"
    c = elf_with(C_PLAIN.read_bytes() + C_GATED.read_bytes() + C_PTX.read_bytes(), name=nv)
    whl = wheel(
        tmp_path / "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl",
        {
            "vllm/_C_stable_libtorch.abi3.so": c,
            "vllm/_flashmla_extension_C.abi3.so": FLASHMLA.read_bytes(),
            "vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so": elf_with(XFORMERS.read_bytes(), name=nv),
            "vllm/cumem_allocator.abi3.so": NO_GPU,
        },
    )
    result = audit(M, str(whl))
    assert {lib.kind for lib in result.libraries} == {"fatbin"}
    judged = {lib.path.rsplit("!", 1)[1] for lib in result.judged_cuda()}
    # vLLM's own extension and its FlashAttention are decisive; FlashMLA is not.
    assert judged == {"vllm/_C_stable_libtorch.abi3.so", "vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so"}
    h200 = result.cuda_coverage((9, 0))
    assert set(h200.values()) == {"cubin"}
    b300 = result.cuda_coverage((10, 3))  # sm_100f in _C; FlashAttention only through PTX
    assert sorted(v or "none" for v in b300.values()) == ["cubin", "ptx"]
    v100 = result.cuda_coverage((7, 0))
    assert set(v100.values()) == {None}

    out = run_cli("audit", str(whl), "--json")
    assert out.exit_code == 0
    data = json.loads(out.stdout)
    jsonschema.validate(data, json.loads((ROOT / "docs" / "audit.schema.json").read_text()))
    assert data["targets"] == [
        "compute_80", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a",
        "sm_100", "sm_100f", "sm_120", "sm_120f",
    ]  # fmt: skip
    # vLLM's cubins are zstd-compressed, xformers' PTX LZ4-compressed.
    assert [(lib["kind"], lib["compressed"]) for lib in data["libraries"]] == [("fatbin", True)] * 3
    text = run_cli("audit", str(whl)).stdout
    assert "targets (all libraries): compute_80 sm_75 sm_80" in text and "sm_90a sm_100f" in text


# -- hostile input ------------------------------------------------------------------------------


def test_lying_headers_are_refused() -> None:
    real = bytearray(C_PLAIN.read_bytes())
    too_big = bytearray(real)
    struct.pack_into("<Q", too_big, 8, len(real) * 2)  # the container claims past its section
    with pytest.raises(AuditError, match="fat binary header lies"):
        entries(too_big)
    entry = bytearray(real)
    struct.pack_into("<Q", entry, 16 + 8, 1 << 40)  # an entry's payload past its container
    with pytest.raises(AuditError, match="outside its container"):
        entries(entry)
    small = bytearray(real)
    struct.pack_into("<I", small, 16 + 4, 8)  # an entry header smaller than 64 bytes
    with pytest.raises(AuditError):
        entries(small)
    with pytest.raises(AuditError, match="cut short"):
        entries(bytes(real[:10]) + MAGIC_BYTES)
    arch = bytearray(real)
    struct.pack_into("<I", arch, 16 + 28, 1 << 30)
    with pytest.raises(AuditError, match="architecture"):
        entries(arch)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.integers(0, 4183), st.binary(min_size=1, max_size=8))
def test_any_bytes_give_targets_or_an_audit_error(noise: bytes, at: int, patch: bytes) -> None:
    """Random bytes, and the real container with random bytes written over it: a list of
    entries or an AuditError, never another exception."""
    real = bytearray(C_PLAIN.read_bytes())
    real[at : at + len(patch)] = patch
    for data in (noise, MAGIC_BYTES + noise, bytes(real)):
        try:
            found = entries(data)
        except AuditError:
            continue
        assert all(parse_target(e.target) is not None for e in found)
        with contextlib.suppress(AuditError):
            cuda_code(elf_with(data, name=b".nv_fatbin"))


def test_many_containers_are_read_in_linear_time() -> None:
    one = C_GATED.read_bytes()

    def build(n: int):  # type: ignore[no-untyped-def]
        section = one * n
        return lambda: entries(section)

    _grows_linearly(build, 200)


def test_the_real_library_has_its_sections_where_the_elf_says() -> None:
    sections = elf_sections(FLASHMLA.read_bytes())
    assert sections is not None and ".nv_fatbin" in sections
