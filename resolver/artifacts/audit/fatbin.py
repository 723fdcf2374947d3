"""GPU code inside one CUDA library: the fat binaries of its ``.nv_fatbin`` and ``__nv_relfatbin``
ELF sections, read as bytes.

A fat binary section holds containers back to back (padding between them is skipped). Each
container starts with a 16-byte header: the magic ``0xBA55ED50``, a version (1), the header's own
size (16) and the size of the entries that follow. Each entry has a header of at least 64 bytes:
its kind (1 PTX, 2 a cubin: ELF SASS), its header size, the payload's size (the payload follows
the header), the architecture number (90 for sm_90 / compute_90) and 64 bits of flags, among
them the payload's compression (0x2000 LZ4, 0x8000 zstd). These are the layouts that
open-source readers document (gpuocelot's and n-eiling/cuda-fatbin-decompression's
``fat_text_header``, nvopen-tools' FORMAT_SPECIFICATION.md); nothing here runs cuobjdump.

The variant of a target is in the entry's flags: 0x100000 an arch-specific target (``sm_90a``:
what LLVM's ELF.h calls EF_CUDA_ACCELERATORS_V1 in the cubin of an ELF-ABI-7 entry, which agrees
with this flag on every entry of xformers 0.0.35's ``_C.so``), 0x200000 a family target
(``sm_100f``: vLLM 0.33.0's ``_qutlass_C`` is built only for 10.0f by its CMake, and only its
entries carry this flag). CUDA 13's cubins (ELF ABI 8) no longer mark either in ``e_flags``,
so the flags are read, never the payload: nothing is decompressed, and an entry costs a header.

Everything is bounded: every offset and size is checked against the section before it is used;
a lying header is an ``AuditError``, never a crash, and the walk is linear in the section.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Literal

from resolver.artifacts.audit.bundle import AuditError, Bytes, Found, elf_sections, natural

MAGIC = 0xBA55ED50
MAGIC_BYTES = struct.pack("<I", MAGIC)
SECTIONS = (".nv_fatbin", "__nv_relfatbin")
KIND_PTX = 1
KIND_CUBIN = 2
HEADER = 16  # a container's header
ENTRY = 64  # the least an entry's header holds (newer ones are 80 or 112 bytes)
MAX_ENTRY_HEADER = 4096  # a larger entry header is not one this reader knows
FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
FLAG_ARCH_SPECIFIC = 0x100000  # "a": runs on that one compute capability only
FLAG_FAMILY = 0x200000  # "f": runs on its family (same major, same or later minor)
MIN_ARCH, MAX_ARCH = 10, 9_999  # sm_10 was the first; sm_XYZ is three digits: past is a lie
# Entries of one file, all sections: libcublasLt (the largest CUDA library) holds ~5,500.
MAX_FATBIN_ENTRIES = 1_000_000

Covered = Literal["cubin", "ptx"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One fat binary entry: SASS for a real architecture, or PTX for a virtual one."""

    kind: Literal["sass", "ptx"]
    arch: int  # 90 for sm_90 / compute_90
    variant: Literal["", "a", "f"]
    compressed: bool

    @property
    def target(self) -> str:
        """``sm_90a``, ``sm_100f``, ``compute_80``: the names cuobjdump and nvcc use."""
        return f"{'sm' if self.kind == 'sass' else 'compute'}_{self.arch}{self.variant}"


def entries(data: Bytes, start: int = 0, stop: int | None = None) -> list[Entry]:
    """Every entry of the fat binary containers in ``data[start:stop]``, read in place."""
    stop = len(data) if stop is None else stop
    out: list[Entry] = []
    pos = data.find(MAGIC_BYTES, start, stop)
    while pos >= 0:
        if pos + HEADER > stop:
            raise AuditError("a CUDA fat binary header is cut short", hint="a damaged file")
        _, version, header, size = struct.unpack_from("<IHHQ", data, pos)
        end = pos + header + size
        if version != 1 or header < HEADER or end > stop:
            raise AuditError(
                f"a CUDA fat binary header lies (version {version}, or sizes past its section)",
                hint="a damaged or hostile file",
            )
        _container(data, pos + header, end, out)
        # The next container follows, maybe after padding: searched for past this one only.
        pos = data.find(MAGIC_BYTES, max(end, pos + HEADER), stop)
    return out


def _container(data: Bytes, pos: int, end: int, out: list[Entry]) -> None:
    """The entries of one container, ``data[pos:end]``, appended to ``out``."""
    while pos + ENTRY <= end:
        kind, _, header, size = struct.unpack_from("<HHIQ", data, pos)
        (arch,) = struct.unpack_from("<I", data, pos + 28)
        (flags,) = struct.unpack_from("<Q", data, pos + 40)
        if header < ENTRY or header > MAX_ENTRY_HEADER or pos + header + size > end:
            raise AuditError(
                "a CUDA fat binary entry lies outside its container", hint="a damaged file"
            )
        if kind in (KIND_PTX, KIND_CUBIN):
            if not MIN_ARCH <= arch <= MAX_ARCH:
                raise AuditError(
                    f"a CUDA fat binary entry claims architecture {arch}", hint="a damaged file"
                )
            variant: Literal["", "a", "f"] = (
                "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
            )
            out.append(
                Entry(
                    kind="sass" if kind == KIND_CUBIN else "ptx",
                    arch=arch,
                    variant=variant,
                    compressed=bool(flags & (FLAG_LZ4 | FLAG_ZSTD)),
                )
            )
            if len(out) > MAX_FATBIN_ENTRIES:
                raise AuditError(
                    f"a library claims more than {MAX_FATBIN_ENTRIES} CUDA fat binary entries",
                    hint="a damaged or hostile file",
                )
        # Other kinds (seen: none in real libraries) are skipped, never guessed at.
        pos += header + size
    # Fewer than ENTRY bytes left over: padding, not an entry.


def cuda_code(data: Bytes) -> Found | None:
    """The CUDA code of one ELF file's bytes (its targets, sorted: ``compute_80``, ``sm_90a``),
    or None when it carries none."""
    sections = elf_sections(data)
    if not sections:
        return None
    found: list[Entry] = []
    for name in SECTIONS:
        if name in sections:
            offset, size = sections[name]
            found += entries(data, offset, offset + size)
    if not found:
        return None
    targets = tuple(sorted({e.target for e in found}, key=natural))
    return Found(targets=targets, compressed=any(e.compressed for e in found), kind="fatbin")


def capability(text: str) -> tuple[int, int] | None:
    """``"9.0"`` -> (9, 0); None for anything else."""
    major, dot, minor = text.strip().partition(".")
    if not dot or not major.isdigit() or not minor.isdigit() or len(minor) != 1:
        return None
    return int(major), int(minor)


def parse_target(target: str) -> tuple[Literal["sass", "ptx"], tuple[int, int], str] | None:
    """``"sm_100f"`` -> ("sass", (10, 0), "f"); None for a name that is not a CUDA target."""
    prefix, _, rest = target.partition("_")
    if prefix not in ("sm", "compute"):
        return None
    variant = rest[-1:] if rest[-1:] in ("a", "f") else ""
    digits = rest[: len(rest) - len(variant)]
    if not digits.isdigit() or len(digits) < 2:
        return None
    number = int(digits)
    return ("sass" if prefix == "sm" else "ptx"), (number // 10, number % 10), variant


def runs(target: str, cc: tuple[int, int]) -> Covered | None:
    """How code built for ``target`` runs on a GPU of compute capability ``cc``, by CUDA's rules
    (CUDA C++ Programming Guide, binary and PTX compatibility; NVIDIA's "Family-Specific
    Architecture Features" post): a cubin ``sm_XY`` on X.Z with Z >= Y, ``sm_XYf`` likewise
    (its family), ``sm_XYa`` on X.Y only; PTX ``compute_XY`` JIT-compiled for any capability >=
    X.Y, ``compute_XYf`` within its family, ``compute_XYa`` on X.Y only. "cubin" when a cubin
    runs, "ptx" when only a JIT compile does (a slower first start), None when neither."""
    parsed = parse_target(target)
    if parsed is None:
        return None
    kind, have, variant = parsed
    if variant == "a":
        fits = have == cc
    elif variant == "f" or kind == "sass":
        fits = have[0] == cc[0] and have[1] <= cc[1]
    else:
        fits = have <= cc
    if not fits:
        return None
    return "cubin" if kind == "sass" else "ptx"


def coverage(targets: tuple[str, ...], cc: tuple[int, int]) -> Covered | None:
    """The best way one library's ``targets`` run on ``cc``: a cubin, else PTX, else None."""
    ways = {runs(t, cc) for t in targets}
    return "cubin" if "cubin" in ways else "ptx" if "ptx" in ways else None
