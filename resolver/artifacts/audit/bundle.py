"""GPU code inside one file: clang offload bundles and bare AMDGPU code objects, read as bytes.

A HIP library keeps its device code in the ELF section ``.hip_fatbin``: one or more offload
bundles, each either uncompressed (``__CLANG_OFFLOAD_BUNDLE__``, then the entry count and, per
entry, offset, size and ID) or compressed (``CCOB``: version 1, 2 or 3, the method (0 zlib, 1
zstd), the sizes and a hash, then the compressed bundle). The entry IDs
(``hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-``) are what ``clang-offload-bundler --list``
prints. The layout is LLVM's (clang/lib/Driver/OffloadBundler.cpp). A bare code object (a
``.hsaco``, an ELF for ``EM_AMDGPU``) names its processor in ``e_flags`` (``amdgpu-isa.toml``).

Everything is bounded: sizes are checked against the data before they are used, decompression
stops at the size the header declares (and at ``MAX_UNPACKED``), and a header that lies is an
``AuditError``, never a crash or a runaway allocation.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from resolver.util.errors import InputError

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
ELF_MAGIC = b"\x7fELF"
EM_AMDGPU = 224
MAX_UNPACKED = 1024**3  # one bundle unpacked; real ones are a few MB to a few hundred
MAX_ENTRIES = 4096
MAX_ID = 512
MAX_SECTIONS = 65535
MAX_NAME = 256  # a section name read (".hip_fatbin" is 11): a longer one is not ours
# Everything the bundles of one section unpack to, together: a section of many small
# compressed bundles each claiming MAX_UNPACKED is a bomb, not a library.
MAX_SECTION_UNPACKED = 2 * MAX_UNPACKED
# A compressed bundle unpacks to at most this many times its compressed bytes (plus 1 MiB): real
# ones are 5-100x (the fixture's is 40x); zstd turns 70 KB of zeros into 1 GiB, and a wheel of
# many such "libraries" would be a time bomb however little memory each one takes.
MAX_BUNDLE_RATIO = 1000


Bytes = bytes | bytearray  # a file's bytes as read: a bytearray is filled in place, not copied

_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


def printable(text: str) -> str:
    """``text`` from inside a file with everything but printable ASCII written ``\\xNN``: an
    offload-bundle ID reaches terminals and JSON, and an escape sequence there is the file's."""
    return _UNPRINTABLE.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else "?", text
    )


def natural(target: str) -> tuple[object, ...]:
    """gfx906 before gfx1010: the digits compared as numbers."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", target))


class AuditError(InputError):
    """An artifact that cannot be read as what it claims (exit 2)."""


@dataclass(frozen=True, slots=True)
class Found:
    """GPU code one file carries: the processor names (with feature suffixes) and how."""

    targets: tuple[str, ...]
    compressed: bool
    kind: str  # "bundle" (a .hip_fatbin) or "code-object" (a bare AMDGPU ELF)
    unpacked: int = 0  # what its compressed bundles unpacked to (counted toward the artifact's)


def elf_sections(data: Bytes) -> dict[str, tuple[int, int]] | None:
    """Section name -> (offset, size) of a 64-bit little-endian ELF; None if ``data`` is not one.
    Offsets and sizes outside the data are an AuditError. Linear in the table: each name is
    looked for over at most ``MAX_NAME`` bytes (a table with no NUL is not searched per section)."""
    if len(data) < 64 or data[:4] != ELF_MAGIC or data[4] != 2 or data[5] != 1:
        return None
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shnum == 0:
        return {}
    if shentsize < 64 or shnum > MAX_SECTIONS or shoff + shnum * shentsize > len(data):
        raise AuditError(
            "an ELF file's section table lies outside the file",
            hint="the file is truncated or not a real library",
        )
    if shstrndx >= shnum:
        raise AuditError("an ELF file names no valid section-name table", hint="a damaged file")

    def header(i: int) -> tuple[int, ...]:
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)

    names = header(shstrndx)
    base, limit = names[4], names[4] + names[5]
    if limit > len(data):
        raise AuditError("an ELF section-name table lies outside the file", hint="a damaged file")
    out: dict[str, tuple[int, int]] = {}
    for i in range(shnum):
        sh = header(i)
        start = base + sh[0]
        end = data.find(b"\0", start, min(limit, start + MAX_NAME)) if start < limit else -1
        if end < 0:
            continue
        name = bytes(data[start:end]).decode("ascii", errors="replace")
        kind, offset, size = sh[1], sh[4], sh[5]
        if kind == 8:  # SHT_NOBITS: no bytes in the file
            continue
        if offset + size > len(data):
            raise AuditError(
                f"ELF section {name[:40]!r} lies outside the file",
                hint="the file is truncated or not a real library",
            )
        out[name] = (offset, size)
    return out


def _entries(raw: Bytes, at: int = 0, stop: int | None = None) -> tuple[list[str], int]:
    """The entry IDs of the uncompressed bundle at ``at`` in ``raw``, and where the bundle ends
    (past its entry table and every code object it names): read in place, never copied. The
    bundle ends by ``stop`` (the section's end in ``raw``)."""
    stop = len(raw) if stop is None else stop
    if stop < at + len(BUNDLE_MAGIC) + 8 or raw[at : at + len(BUNDLE_MAGIC)] != BUNDLE_MAGIC:
        raise AuditError("an offload bundle does not start with its magic", hint="a damaged file")
    (count,) = struct.unpack_from("<Q", raw, at + len(BUNDLE_MAGIC))
    if count > MAX_ENTRIES:
        raise AuditError(f"an offload bundle claims {count} entries", hint="a damaged file")
    pos = at + len(BUNDLE_MAGIC) + 8
    end = pos
    ids = []
    for _ in range(count):
        if pos + 24 > stop:
            raise AuditError("an offload bundle's entry table is cut short", hint="a damaged file")
        offset, size, id_len = struct.unpack_from("<QQQ", raw, pos)
        pos += 24
        # Offsets count from the bundle's start (LLVM's OffloadBundler).
        if id_len > MAX_ID or pos + id_len > stop or at + offset + size > stop:
            raise AuditError(
                "an offload bundle entry lies outside the bundle", hint="a damaged file"
            )
        ids.append(printable(bytes(raw[pos : pos + id_len]).decode("ascii", errors="replace")))
        pos += id_len
        end = max(end, at + offset + size)
    return ids, max(end, pos)


def _decompress(data: Bytes, pos: int, stop: int | None = None) -> tuple[bytes, int]:
    """One compressed bundle at ``pos``: its uncompressed bytes and its length in ``data`` (the
    section ends at ``stop``)."""
    stop = len(data) if stop is None else stop
    if pos + 8 > stop:
        raise AuditError("a compressed offload bundle is cut short", hint="a damaged file")
    version, method = struct.unpack_from("<HH", data, pos + 4)
    header = {1: 20, 2: 24, 3: 32}.get(version)
    if header is None:
        raise AuditError(
            f"a compressed offload bundle has version {version}",
            hint="LLVM writes versions 1 to 3; a newer one needs a newer rocm-vllm",
        )
    if pos + header > stop:
        raise AuditError("a compressed offload bundle is cut short", hint="a damaged file")
    if version == 1:
        (unpacked,) = struct.unpack_from("<I", data, pos + 8)
        total = stop - pos  # v1 has no total size: the rest of the section
    elif version == 2:
        total, unpacked = struct.unpack_from("<II", data, pos + 8)
    else:
        total, unpacked = struct.unpack_from("<QQ", data, pos + 8)
    if total < header or pos + total > stop or unpacked > MAX_UNPACKED:
        raise AuditError(
            "a compressed offload bundle's sizes lie (past the section, or too large unpacked)",
            hint="a damaged or hostile file",
        )
    if unpacked > MAX_BUNDLE_RATIO * (total - header) + 1024**2:
        raise AuditError(
            f"a compressed offload bundle claims {unpacked} bytes from {total - header} (more "
            f"than {MAX_BUNDLE_RATIO} times: a compression bomb?)",
            hint="a damaged or hostile file",
        )
    payload = bytes(data[pos + header : pos + total])
    try:
        if method == 1:
            import zstandard

            raw = zstandard.ZstdDecompressor().decompress(payload, max_output_size=unpacked)
        elif method == 0:
            inflater = zlib.decompressobj()
            raw = inflater.decompress(payload, unpacked + 1)
        else:
            raise AuditError(
                f"a compressed offload bundle uses method {method}",
                hint="LLVM writes 0 (zlib) or 1 (zstd)",
            )
    except AuditError:
        raise
    except Exception as exc:  # noqa: BLE001 - zlib.error, ValueError, zstandard.ZstdError (lazy)
        raise AuditError(
            f"a compressed offload bundle does not decompress ({type(exc).__name__})",
            hint="a truncated or damaged file",
        ) from None
    if len(raw) != unpacked:
        raise AuditError(
            "a compressed offload bundle unpacks to another size than its header says",
            hint="a damaged or hostile file",
        )
    return raw, total


def bundle_ids(section: Bytes, start: int = 0, stop: int | None = None) -> tuple[list[str], bool]:
    """``_bundles`` without the unpacked size."""
    ids, compressed, _ = _bundles(section, start, stop)
    return ids, compressed


def _bundles(
    section: Bytes, start: int = 0, stop: int | None = None
) -> tuple[list[str], bool, int]:
    """Every entry ID of the bundles in a ``.hip_fatbin`` section (``section[start:stop]``, read
    in place: the section of a 2 GB library is not copied), whether any was compressed, and how
    many bytes the compressed ones unpacked to. Bundles follow each other, padded; what lies
    between them is skipped. Linear in the section: each magic is searched for once past where
    the last search found it, and the next search starts past the bundle just read (its code
    objects are not searched again)."""
    ids: list[str] = []
    compressed = False
    unpacked = 0
    stop = len(section) if stop is None else stop
    pos = start
    c = u = -2  # where each magic was last found (-1: not past there; -2: not searched yet)
    while pos < stop:
        if c != -1 and c < pos:
            c = section.find(CCOB_MAGIC, pos, stop)
        if u != -1 and u < pos:
            u = section.find(BUNDLE_MAGIC, pos, stop)
        starts = [x for x in (c, u) if x >= 0]
        if not starts:
            break
        pos = min(starts)
        if pos == c:
            raw, used = _decompress(section, pos, stop)
            unpacked += len(raw)
            if unpacked > MAX_SECTION_UNPACKED:
                raise AuditError(
                    f"a .hip_fatbin section unpacks to more than {MAX_SECTION_UNPACKED} bytes",
                    hint="a damaged or hostile file",
                )
            ids += _entries(raw)[0]
            compressed = True
            pos += max(used, 1)
        else:
            entries, end = _entries(section, pos, stop)
            ids += entries
            pos = max(end, pos + len(BUNDLE_MAGIC) + 8)
    return ids, compressed, unpacked


def processor(entry_id: str) -> str | None:
    """ "hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-" -> "gfx942:sramecc+:xnack-"; None for
    a host or non-AMDGPU entry."""
    kind, _, rest = entry_id.partition("-")
    if kind not in ("hip", "hipv4", "openmp") or not rest.startswith("amdgcn-"):
        return None
    target = rest.split("--", 1)[1] if "--" in rest else rest.rsplit("-", 1)[-1]
    return target or None


def code_object_target(data: Bytes, machs: Mapping[int, str]) -> str | None:
    """The processor of a bare AMDGPU code object (``e_flags``' machine value), with its xnack
    and sramecc settings (code object v4+), or None for another ELF."""
    if len(data) < 64 or data[:4] != ELF_MAGIC or data[4] != 2 or data[5] != 1:
        return None
    (machine,) = struct.unpack_from("<H", data, 0x12)
    if machine != EM_AMDGPU:
        return None
    (flags,) = struct.unpack_from("<I", data, 0x30)
    name = machs.get(flags & 0xFF)
    if name is None:
        return f"unknown(mach 0x{flags & 0xFF:02x})"
    features = ""
    sramecc = flags & 0xC00
    xnack = flags & 0x300
    if sramecc in (0x800, 0xC00):
        features += ":sramecc" + ("+" if sramecc == 0xC00 else "-")
    if xnack in (0x200, 0x300):
        features += ":xnack" + ("+" if xnack == 0x300 else "-")
    return name + features


def gpu_code(data: Bytes, machs: Mapping[int, str]) -> Found | None:
    """The GPU code of one file's bytes, or None when it carries none."""
    target = code_object_target(data, machs)
    if target is not None:
        return Found(targets=(target,), compressed=False, kind="code-object")
    sections = elf_sections(data)
    if not sections or ".hip_fatbin" not in sections:
        return None
    offset, size = sections[".hip_fatbin"]
    ids, compressed, unpacked = _bundles(data, offset, offset + size)
    targets = tuple(sorted(dict.fromkeys(t for t in (processor(i) for i in ids) if t), key=natural))
    if not targets:
        return None
    return Found(targets=targets, compressed=compressed, kind="bundle", unpacked=unpacked)
