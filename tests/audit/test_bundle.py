"""artifacts.audit.bundle: offload bundles and code objects read from real AMD-built code, and
hostile bytes refused with a clear error."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resolver.artifacts.audit.bundle import (
    AuditError,
    _decompress,
    bundle_ids,
    code_object_target,
    elf_sections,
    gpu_code,
    processor,
)
from resolver.data import matrix

REAL = Path(__file__).parent / "fixtures" / "jax_rocm7_plugin-0.12.0-_prng.so"
M = matrix.load()
MACHS = {i.mach: i.name for i in M.isa}


def real_section() -> bytes:
    data = REAL.read_bytes()
    sections = elf_sections(data)
    assert sections is not None
    offset, size = sections[".hip_fatbin"]
    return data[offset : offset + size]


def real_bundle() -> bytes:
    """The real bundle, uncompressed (what the CCOB holds)."""
    raw, _ = _decompress(real_section(), 0)
    return raw


def elf_with(section: bytes, name: bytes = b".hip_fatbin", machine: int = 62, flags: int = 0):  # type: ignore[no-untyped-def]
    """A minimal ELF64 with one named section (a test's own wrapper around real bundle bytes)."""
    names = b"\0" + name + b"\0.shstrtab\0"
    body = section + names
    shoff = 64 + len(body)
    header = bytearray(64)
    header[:4] = b"\x7fELF"
    header[4], header[5], header[6] = 2, 1, 1
    struct.pack_into("<HHI", header, 16, 3, machine, 1)
    struct.pack_into("<I", header, 0x30, flags)
    struct.pack_into("<Q", header, 0x28, shoff)
    struct.pack_into("<HHHHHH", header, 0x34, 64, 0, 0, 64, 3, 2)
    null = bytes(64)
    sec = struct.pack("<IIQQQQIIQQ", 1, 1, 0, 0, 64, len(section), 0, 0, 1, 0)
    strtab = struct.pack(
        "<IIQQQQIIQQ", 2 + len(name), 3, 0, 0, 64 + len(section), len(names), 0, 0, 1, 0
    )
    return bytes(header) + body + null + sec + strtab


def test_the_real_library_carries_27_targets_in_one_zstd_bundle() -> None:
    found = gpu_code(REAL.read_bytes(), MACHS)
    assert found is not None and found.compressed and found.kind == "bundle"
    assert len(found.targets) == 27
    assert {"gfx942", "gfx950", "gfx1201", "gfx1151", "gfx1250", "gfx900"} <= set(found.targets)


def test_every_bundle_form_reads_the_same_targets() -> None:
    raw = real_bundle()
    want, _ = bundle_ids(raw)
    assert len(want) == 28 and want[0].startswith("host-")
    # The same bundle zlib-compressed (CCOB version 2, method 0), and two bundles back to back.
    packed = zlib.compress(raw)
    v2 = b"CCOB" + struct.pack("<HHII", 2, 0, 24 + len(packed), len(raw)) + bytes(8) + packed
    assert bundle_ids(v2) == (want, True)
    assert bundle_ids(raw + bytes(13) + raw)[0] == want + want
    # Inside an ELF, as a HIP library carries it.
    found = gpu_code(elf_with(raw), MACHS)
    assert found is not None and not found.compressed and len(found.targets) == 27


def test_a_bare_code_object_names_its_processor_and_features() -> None:
    # gfx942 (mach 0x04c), sramecc on (0xc00), xnack off (0x200): code object v4 flags.
    flags = 0x04C | 0xC00 | 0x200
    assert code_object_target(elf_with(b"", machine=224, flags=flags), MACHS) == (
        "gfx942:sramecc+:xnack-"
    )
    found = gpu_code(elf_with(b"", machine=224, flags=0x054), MACHS)
    assert found is not None and found.targets == ("gfx11-generic",)
    assert code_object_target(elf_with(b"", machine=62), MACHS) is None  # an x86-64 library


def test_entry_ids_are_read_as_clang_offload_bundler_lists_them() -> None:
    assert processor("hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-") == (
        "gfx942:sramecc+:xnack-"
    )
    assert processor("host-x86_64-unknown-linux-gnu-") is None


@pytest.mark.parametrize(
    "mutate",
    [
        "total-past-section",
        "unpacked-lies",
        "truncated-frame",
        "entry-count",
        "unknown-version",
    ],
)
def test_a_lying_bundle_is_a_clear_error(mutate: str) -> None:
    section = bytearray(real_section())
    raw = real_bundle()
    if mutate == "total-past-section":
        struct.pack_into("<Q", section, 8, len(section) * 4)
    elif mutate == "unpacked-lies":
        struct.pack_into("<Q", section, 16, 10**12)
    elif mutate == "truncated-frame":
        total = len(section) // 2
        section = section[:total]
        struct.pack_into("<Q", section, 8, total)
    elif mutate == "entry-count":
        section = bytearray(raw)
        struct.pack_into("<Q", section, 24, 10**9)
    else:
        struct.pack_into("<H", section, 4, 9)
    with pytest.raises(AuditError) as err:
        bundle_ids(bytes(section))
    assert err.value.hint


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.sampled_from([b"", b"CCOB", b"__CLANG_OFFLOAD_BUNDLE__"]))
def test_any_bytes_are_read_or_refused_never_a_crash(noise: bytes, magic: bytes) -> None:
    for data in (magic + noise, b"\x7fELF\x02\x01" + noise, noise):
        try:
            bundle_ids(data)
            gpu_code(data, MACHS)
        except AuditError:
            pass
