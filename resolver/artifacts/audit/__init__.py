"""`rocm-vllm audit`: which GPUs the code inside an artifact was built for, read from the code.

An artifact is a file (a library, a code object), a directory, a wheel (zip), a tar archive
(``docker save``, an image layer, plain, gzip or zstd compressed) or an OCI image layout
directory; archives inside archives are read too (a ``docker save`` holds layer tarballs), two
levels deep. Every ELF file inside is read once, whole (memory is bounded by the largest single
library, never by the artifact), for its offload bundles or its code-object target
(``resolver.artifacts.audit.bundle``). Nothing is extracted to disk.

The result is data (``Audit``); the CLI words it. ``covers`` answers for a node's gfx targets
whether the libraries that decide "invalid device function" carry code for them: vLLM's own
extensions, torch's HIP libraries, AITER and FlashAttention when the artifact has them, every
library with GPU code otherwise. A generic ISA (``gfx11-generic``) covers the processors
``amdgpu-isa.toml`` lists for it. A CUDA library's fat binaries (``audit.fatbin``) give
``sm_XY``/``compute_XY`` targets; ``cuda_coverage`` answers for a compute capability.
"""

from __future__ import annotations

import io
import os
import re
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from resolver.artifacts.audit.bundle import ELF_MAGIC, AuditError, Found, gpu_code, natural
from resolver.artifacts.audit.fatbin import Covered, coverage, cuda_code
from resolver.data.model import Matrix
from resolver.util import deadline
from resolver.util.errors import InputError, RegistryError, ResolverError
from resolver.util.safety import is_safe

MAX_LIBRARY = 4 * 1024**3  # the largest single file read (torch's HIP library is ~1-2 GB)
MAX_MEMBERS = 500_000  # files in one artifact, all levels
MAX_DEPTH = 2  # archives inside archives
MAX_RATIO = 200  # a zip member may unpack to at most this many times its stored size
# Archive entries of every kind (directories, links, devices too), all levels: each is parsed
# and skipped, so a million empty directories are a bound, not a stall.
MAX_ENTRIES = 1_000_000
# What the gzip and zstd streams of one artifact unpack to, all levels together (a ROCm vLLM
# image is ~40 GiB unpacked), and at most MAX_RATIO times the compressed bytes read plus
# RATIO_SLACK: a 2 GiB zero file inside a small .tar.gz is a bomb, stopped after a few MiB.
MAX_UNPACKED = 256 * 1024**3
RATIO_SLACK = 64 * 1024**2
MAX_TAR_HEADER = 1024**2  # a pax or GNU long-name header (a path is at most 4 KiB on Linux)
CHUNK = 1024**2  # reads are made in pieces: nothing allocates what a header claims up front
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZIP_MAGIC = b"PK\x03\x04"
# The libraries whose GPU code decides whether vLLM starts on a GPU (the kernels vLLM, torch,
# AITER and FlashAttention launch); matched on the path's file name. On CUDA: torch's CUDA
# libraries and vLLM's own FlashAttention builds (vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so).
DECISIVE = re.compile(
    r"(^|/)(vllm/(_C|_rocm_C|_moe_C)[^/]*\.so"
    r"|libtorch_hip\.so[^/]*|libc10_hip\.so[^/]*"
    r"|libtorch_cuda\.so[^/]*|libc10_cuda\.so[^/]*|vllm_flash_attn/[^/]*\.so[^/]*"
    r"|aiter/[^!]*\.so[^/]*|[^/]*flash_attn[^/]*\.so[^/]*)$"
)


_UNSHOWN = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def shown(name: str) -> str:
    """A file name from inside an artifact, with every control character written as ``\\xNN``:
    names are the archive's, not ours, and reach terminals, error lines and the data overlay
    (``image --audit``), where a line break would split a record or a message."""
    return _UNSHOWN.sub(
        lambda m: (
            f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"
        ),
        name,
    )


@dataclass(frozen=True, slots=True)
class Library:
    path: str  # inside the artifact; "a.tar!layer.tar!usr/lib/x.so" for nested archives
    targets: tuple[str, ...]
    compressed: bool
    kind: str

    @property
    def decisive(self) -> bool:
        return bool(DECISIVE.search(self.path.rsplit("!", 1)[-1]))


LABEL_GFX = "rocm-vllm.gfx"  # what `rocm-vllm dockerfile` images say they carry code for
_MAX_LABELS = 256  # labels kept from an image's config (its own words: bounded, escaped)


@dataclass(slots=True)
class Audit:
    artifact: str
    libraries: list[Library] = field(default_factory=list)
    files: int = 0  # files looked at
    elf: int = 0  # ELF files read
    # Archives nested deeper than MAX_DEPTH: not read, so their GPU code is unknown.
    unread: int = 0
    # The image's own labels (its config), where the artifact is an image; escaped like names.
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def labelled_gfx(self) -> tuple[str, ...] | None:
        """The gfx targets the image's ``rocm-vllm.gfx`` label states; None without one."""
        said = self.labels.get(LABEL_GFX)
        if said is None:
            return None
        return tuple(g for g in said.replace(",", ";").split(";") if g)

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(sorted({t for lib in self.libraries for t in lib.targets}, key=natural))

    def judged(self) -> list[Library]:
        """The libraries ``covers`` judges: the decisive ones where the artifact has them."""
        decisive = [lib for lib in self.libraries if lib.decisive]
        return decisive or self.libraries

    def lacking(self, m: Matrix, gfx: str) -> list[Library]:
        """The judged libraries with no code for ``gfx`` (none: the artifact covers it)."""
        return [lib for lib in self.judged() if not any(runs(m, t, gfx) for t in lib.targets)]

    def judged_cuda(self) -> list[Library]:
        """The CUDA libraries ``cuda_coverage`` judges: the decisive ones where there are any."""
        cuda = [lib for lib in self.libraries if lib.kind == "fatbin"]
        return [lib for lib in cuda if lib.decisive] or cuda

    def cuda_coverage(self, cc: tuple[int, int]) -> dict[str, Covered | None]:
        """Per judged CUDA library (its path), how its code runs on compute capability ``cc``:
        "cubin", "ptx" (only through a JIT compile) or None ("no kernel image is available")."""
        return {lib.path: coverage(lib.targets, cc) for lib in self.judged_cuda()}


def image_labels(raw: object) -> dict[str, str]:
    """An image config's ``Labels`` as text this tool may print: string keys and values only,
    control characters escaped, at most ``_MAX_LABELS``."""
    if not isinstance(raw, dict):
        return {}
    out: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(key, str) and isinstance(value, str) and len(out) < _MAX_LABELS:
            out[shown(key[:256])] = shown(value[:4096])
    return out


def common_arch(m: Matrix, result: Audit) -> tuple[str, ...]:
    """The gfx targets (as ``gfx.toml`` names them) every judged library carries code for: the
    arch list an audit gives an image (a generic ISA counts for each processor it covers)."""
    judged = result.judged()
    if not judged:
        return ()
    known = [g.name for g in m.gfx]
    return tuple(g for g in known if all(any(runs(m, t, g) for t in lib.targets) for lib in judged))


def runs(m: Matrix, target: str, gfx: str) -> bool:
    """Code built for ``target`` ("gfx942:sramecc+:xnack-", "gfx11-generic") runs on ``gfx``."""
    base = target.split(":", 1)[0]
    if base == gfx:
        return True
    generic = next((i for i in m.isa if i.name == base), None)
    return generic is not None and gfx in generic.covers


ENGINE_PREFIX = "docker-daemon:"  # an image in the local engine (skopeo's transport names)
REGISTRY_PREFIX = "docker://"  # an image in a registry, layers streamed


def audit(m: Matrix, artifact: str, *, registry: str | None = None) -> Audit:
    """Read ``artifact`` for GPU code (module docstring): a path, ``docker-daemon:IMAGE`` (the
    local engine's ``docker save`` stream) or ``docker://REPO:TAG`` (the registry's layers,
    streamed and verified against their digests; ``registry`` is the base URL)."""
    machs = {i.mach: i.name for i in m.isa}
    if artifact.startswith(ENGINE_PREFIX):
        return _from_engine(artifact, machs)
    if artifact.startswith(REGISTRY_PREFIX):
        return _from_registry(artifact, machs, registry)
    path = Path(artifact)
    try:
        info = path.lstat()
    except OSError as exc:
        raise AuditError(
            f"{artifact}: cannot read it ({exc.strerror or type(exc).__name__})",
            hint="give a wheel, a library, a directory, a docker save archive or an OCI layout",
        ) from None
    result = Audit(artifact=artifact)
    reader = _Reader(result, machs)
    if stat.S_ISDIR(info.st_mode):
        reader.directory(path)
    elif stat.S_ISREG(info.st_mode):
        reader.file(path, path.name, info.st_size)
    else:
        raise AuditError(f"{artifact}: not a file or directory", hint="give a regular file")
    return result


class _Reader:
    def __init__(self, result: Audit, machs: dict[int, str]) -> None:
        self.result = result
        self.machs = machs
        self.entries = 0  # archive entries of every kind, all levels
        self.unpacked = 0  # bytes the gzip and zstd streams gave, all levels

    def _count(self) -> None:
        self.result.files += 1
        if self.result.files > MAX_MEMBERS:
            raise AuditError(
                f"the artifact holds more than {MAX_MEMBERS} files",
                hint="audit one layer or one directory at a time",
            )

    def directory(self, root: Path) -> None:
        """Every regular file under ``root``, in name order, walked with a stack of our own
        (a tree thousands of levels deep is no recursion error); links are never followed, and
        entries of every kind count toward ``MAX_ENTRIES``."""
        stack = [root]
        while stack:
            here = stack.pop()
            try:
                with os.scandir(here) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError as exc:
                raise AuditError(
                    f"{shown(str(here))}: cannot list it ({exc.strerror or type(exc).__name__})",
                    hint="check its permissions (every directory of the artifact is read)",
                ) from None
            subdirs = []
            for entry in entries:
                self.entries += 1
                if self.entries > MAX_ENTRIES:
                    raise AuditError(
                        f"{shown(str(root))}: more than {MAX_ENTRIES} entries",
                        hint="audit one layer or one directory at a time",
                    )
                try:
                    if entry.is_dir(follow_symlinks=False):
                        subdirs.append(Path(entry.path))
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        continue  # links and devices: never followed
                    size = entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue  # gone since it was listed
                path = Path(entry.path)
                self.file(path, shown(path.relative_to(root).as_posix()), size)
            stack.extend(reversed(subdirs))

    def file(self, path: Path, name: str, size: int) -> None:
        """One regular file on disk; one that cannot be opened or read is the input's fault
        (exit 2), named, never an internal error."""
        try:
            with path.open("rb") as fh:
                self.stream(fh, name, size, depth=0)
        except OSError as exc:
            raise AuditError(
                f"{shown(str(path))}: cannot read it ({exc.strerror or type(exc).__name__})",
                hint="check its permissions (every file of the artifact is read)",
            ) from None

    def _whole(self, fh: IO[bytes], head: bytes, size: int | None, name: str) -> bytearray:
        """The rest of ``fh`` after ``head``, at most ``MAX_LIBRARY`` bytes, read in ``CHUNK``
        pieces into one buffer: memory follows the bytes that arrive, never a size asked for up
        front (a 4 GiB request fails under a 4 GiB address-space limit)."""
        if size is not None and size > MAX_LIBRARY:
            raise AuditError(
                f"{name}: {size} bytes, more than one library may be ({MAX_LIBRARY})",
                hint="a damaged or hostile archive",
            )
        data = bytearray(head)
        try:
            while chunk := fh.read(min(CHUNK, MAX_LIBRARY + 1 - len(data))):
                data += chunk
                if len(data) > MAX_LIBRARY:
                    raise AuditError(
                        f"{name}: larger than {MAX_LIBRARY} bytes", hint="a hostile file"
                    )
        except MemoryError:
            del data
            raise AuditError(
                f"{name}: does not fit in the memory this process may use",
                hint="raise the memory limit (ulimit -v, the container's limit); one library is "
                "read whole",
            ) from None
        return data

    def stream(self, fh: IO[bytes], name: str, size: int | None, *, depth: int) -> None:
        """One file: an ELF is read for GPU code, an archive is opened, anything else skipped."""
        self._count()
        head = fh.read(512)
        if head[:4] == ELF_MAGIC:
            data = self._whole(fh, head, size, name)
            self.result.elf += 1
            try:
                # An ELF carries AMD or CUDA code, never both: the CUDA reader only when not AMD.
                found = gpu_code(data, self.machs) or cuda_code(data)
            except AuditError as exc:
                raise AuditError(f"{name}: {exc.message}", hint=exc.hint) from None
            if found is not None:
                self._add(name, found)
                self.unpacked += found.unpacked  # bundles count toward what the artifact unpacks
                if self.unpacked > MAX_UNPACKED:
                    raise AuditError(
                        f"{name}: the artifact unpacks to more than {MAX_UNPACKED} bytes",
                        hint="audit one layer or one directory at a time",
                    )
            return
        archive = (
            head[:4] in (ZIP_MAGIC, ZSTD_MAGIC)
            or head[:2] == GZIP_MAGIC
            or head[257:262] == b"ustar"
        )
        if archive and depth > MAX_DEPTH:
            self.result.unread += 1  # said, never taken for "no GPU code"
            return
        if head[:4] == ZIP_MAGIC:
            # A zip's directory is at its end: a file is read in place, an archive member (a
            # wheel inside a tar) through a bounded copy.
            if isinstance(fh, io.BufferedReader) and _seekable(fh):
                fh.seek(0)
                self.zip(fh, name, depth=depth + 1)
            else:
                whole = self._whole(fh, head, size, name)
                self.zip(cast(IO[bytes], _Memory(whole)), name, depth=depth + 1)
        elif head[:2] == GZIP_MAGIC or head[:4] == ZSTD_MAGIC or head[257:262] == b"ustar":
            self.tar(cast(IO[bytes], _Prefixed(head, fh)), name, depth=depth + 1)

    def _add(self, name: str, found: Found) -> None:
        self.result.libraries.append(
            Library(path=name, targets=found.targets, compressed=found.compressed, kind=found.kind)
        )

    def zip(self, src: IO[bytes], name: str, *, depth: int) -> None:
        try:
            # zipfile reads the whole central directory up front: its entry count (the end
            # record's, read first) is bounded before that happens.
            end = zipfile._EndRecData(src)  # type: ignore[attr-defined]
            listed = int(end[zipfile._ECD_ENTRIES_TOTAL]) if end else 0  # type: ignore[attr-defined]
            if listed > MAX_MEMBERS:
                raise AuditError(
                    f"{name}: a zip that lists {listed} members, more than {MAX_MEMBERS}",
                    hint="a damaged or hostile wheel",
                )
            src.seek(0)
            archive = zipfile.ZipFile(src)
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError):
            raise AuditError(f"{name}: not a readable zip", hint="a damaged wheel") from None
        except MemoryError:
            raise AuditError(
                f"{name}: its zip directory does not fit in memory", hint="a hostile wheel"
            ) from None
        with archive:
            for info in archive.infolist():
                if info.is_dir():
                    continue
                inner = f"{name}!{shown(info.filename)}"
                if info.flag_bits & 0x1:
                    raise AuditError(
                        f"{inner}: encrypted; its code cannot be read",
                        hint="audit the artifact unencrypted (wheels are never encrypted)",
                    )
                if info.file_size > MAX_LIBRARY or info.file_size > MAX_RATIO * max(
                    info.compress_size, 1024
                ):
                    raise AuditError(
                        f"{inner}: claims {info.file_size} bytes from "
                        f"{info.compress_size} (a zip bomb?)",
                        hint="a damaged or hostile wheel",
                    )
                try:
                    with archive.open(info) as member:
                        self.stream(member, inner, info.file_size, depth=depth)
                except (ResolverError, deadline.DeadlineExceeded):
                    raise  # a nested archive's own error, or the deadline
                except (NotImplementedError, RuntimeError):
                    # zipfile: an unsupported method (deflate64, implode...) or a password.
                    raise AuditError(
                        f"{inner}: stored with compression method {info.compress_type}, which "
                        "cannot be read",
                        hint="wheels use stored (0), deflate (8), bzip2 (12) or lzma (14)",
                    ) from None
                except Exception as exc:  # noqa: BLE001 - BadZipFile, EOFError, OSError, zlib.error,
                    # lzma.LZMAError...: whatever a damaged member raises is the wheel's fault
                    raise AuditError(
                        f"{inner}: cannot be read ({type(exc).__name__})",
                        hint="a damaged wheel",
                    ) from None

    def tar(self, fh: IO[bytes], name: str, *, depth: int) -> None:
        head = fh.read(4)
        packed = _Counted(_Prefixed(head, fh))
        src: IO[bytes] = cast(IO[bytes], packed)
        try:
            # Decompressed here, not by tarfile, so what a stream unpacks is counted and bounded.
            if head == ZSTD_MAGIC:
                import zstandard

                src = cast(IO[bytes], zstandard.ZstdDecompressor().stream_reader(src))
            elif head[:2] == GZIP_MAGIC:
                import gzip

                src = cast(IO[bytes], gzip.GzipFile(fileobj=src, mode="rb"))
            if head == ZSTD_MAGIC or head[:2] == GZIP_MAGIC:
                src = cast(IO[bytes], _Unpacked(src, packed, self, name))
            with tarfile.open(fileobj=src, mode="r|", tarinfo=_BoundedTarInfo) as archive:
                for member in archive:
                    # A stream's members are not kept: each is freed once read.
                    archive.members = []  # type: ignore[attr-defined]
                    self.entries += 1
                    if self.entries > MAX_ENTRIES:
                        raise AuditError(
                            f"{name}: the artifact holds more than {MAX_ENTRIES} archive entries",
                            hint="audit one layer or one directory at a time",
                        )
                    if not member.isfile():
                        continue
                    extracted = archive.extractfile(member)
                    if extracted is None:
                        continue
                    self.stream(extracted, f"{name}!{shown(member.name)}", member.size, depth=depth)
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
            raise AuditError(
                f"{name}: not a readable tar archive ({type(exc).__name__})",
                hint="a truncated or damaged archive",
            ) from None
        except (ResolverError, deadline.DeadlineExceeded):
            raise  # the registry's failure or the deadline: not the archive's
        except Exception as exc:  # noqa: BLE001 - zstandard.ZstdError, imported lazily
            raise AuditError(
                f"{name}: cannot be decompressed ({type(exc).__name__})",
                hint="a truncated or damaged archive",
            ) from None


class _BoundedTarInfo(tarfile.TarInfo):
    """tarfile reads a pax or GNU long-name header's data whole, at the size the header
    claims: more than ``MAX_TAR_HEADER`` is refused before it is read."""

    def _proc_gnulong(self, archive: tarfile.TarFile) -> tarfile.TarInfo:
        self._bounded()
        return cast(tarfile.TarInfo, super()._proc_gnulong(archive))  # type: ignore[misc]

    def _proc_pax(self, archive: tarfile.TarFile) -> tarfile.TarInfo:
        self._bounded()
        return cast(tarfile.TarInfo, super()._proc_pax(archive))  # type: ignore[misc]

    def _bounded(self) -> None:
        if self.size > MAX_TAR_HEADER:
            raise AuditError(
                f"a tar header claims {self.size} bytes of names or attributes",
                hint="a damaged or hostile archive",
            )


class _Counted(io.RawIOBase):
    """A stream whose bytes read so far are counted (a compressed stream's input)."""

    def __init__(self, fh: io.RawIOBase) -> None:
        self._fh = fh
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = self._fh.readinto(buffer) or 0
        self.count += n
        return n


class _Unpacked(io.RawIOBase):
    """A decompressed stream, bounded: at most ``MAX_RATIO`` times the compressed bytes read
    (plus ``RATIO_SLACK``), and at most ``MAX_UNPACKED`` for the artifact, all levels."""

    def __init__(self, fh: IO[bytes], packed: _Counted, reader: _Reader, name: str) -> None:
        self._fh = fh
        self._packed = packed
        self._reader = reader
        self._name = name
        self._count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._fh.read(min(len(buffer), CHUNK))
        n = len(data)
        buffer[:n] = data
        self._count += n
        self._reader.unpacked += n
        if self._count > MAX_RATIO * self._packed.count + RATIO_SLACK:
            raise AuditError(
                f"{self._name}: unpacks to more than {MAX_RATIO} times its compressed size "
                "(a compression bomb?)",
                hint="a damaged or hostile archive",
            )
        if self._reader.unpacked > MAX_UNPACKED:
            raise AuditError(
                f"{self._name}: the artifact unpacks to more than {MAX_UNPACKED} bytes",
                hint="audit one layer or one directory at a time",
            )
        return n


class _Memory(io.RawIOBase):
    """A seekable, read-only file over a buffer already in memory, not copied (a wheel inside
    a tar, read by zipfile, which seeks)."""

    def __init__(self, data: bytearray) -> None:
        self._view = memoryview(data)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._view)}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        piece = self._view[self._pos : self._pos + len(buffer)]
        n = len(piece)
        buffer[:n] = piece
        self._pos += n
        return n


def _seekable(fh: IO[bytes]) -> bool:
    try:
        return bool(fh.seekable())
    except (AttributeError, ValueError):
        return False


class _Prefixed(io.RawIOBase):
    """``head`` (already read) followed by the rest of ``fh``: the sniffed bytes are not lost.
    Read-only and forward-only, as tarfile's streaming mode reads."""

    def __init__(self, head: bytes, fh: IO[bytes]) -> None:
        self._head = head
        self._fh = fh

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._fh.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


# -- images: the local engine and a registry ------------------------------------------------------


def _from_engine(artifact: str, machs: dict[int, str]) -> Audit:
    from resolver.artifacts.engine import DockerEngine

    name = artifact[len(ENGINE_PREFIX) :]
    _reference(name)
    result = Audit(artifact=artifact)
    with DockerEngine() as engine:
        try:
            image = engine.client.images.get(name)  # raises at once; the stream only when read
            result.labels = image_labels(image.labels)
            chunks = engine.client.api.get_image(name)
        except Exception as exc:  # noqa: BLE001 - docker.errors.* without importing docker here
            raise AuditError(
                f"{name}: the engine has no such image ({type(exc).__name__})",
                hint="pull it first (docker pull), or give a registry reference: docker://REF",
            ) from None
        stream = cast(IO[bytes], _Chunks(iter(chunks)))
        limit = deadline.configured(REGISTRY_DEADLINE)
        try:
            # An engine that streams for ever (or drips) is bounded like a registry.
            with deadline.within(limit):
                _Reader(result, machs).stream(stream, name, None, depth=0)
        except deadline.DeadlineExceeded:
            from resolver.util.errors import DockerEngineError

            raise DockerEngineError(
                f"{shown(name)}: the engine's image stream did not end within {limit:g} s",
                hint=f"the engine is too slow or the image too large; raise {deadline.ENV}",
            ) from None
    return result


_INDEX_TYPES = frozenset(
    {
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    }
)


def _split_ref(ref: str) -> tuple[str, str]:
    if "@" in ref:
        repo, _, digest = ref.partition("@")
        return repo, digest
    head, sep, tag = ref.rpartition(":")
    if sep and "/" not in tag:
        return head, tag
    return ref, "latest"


def _reference(ref: str) -> tuple[str, str]:
    """``REPO:TAG`` or ``REPO@sha256:HEX`` split, each part checked: a malformed reference is
    the user's input (exit 2), named escaped."""
    repo, tag = _split_ref(ref)
    pinned = "@" in ref
    if not is_safe("image_repo", repo) or not is_safe("digest" if pinned else "image_tag", tag):
        raise InputError(
            f"{shown(ref[:200])}: not an image reference",
            hint="give docker://REPO:TAG or docker://REPO@sha256:<64 hex digits> (a lower-case "
            "repository; --registry names the registry)",
        )
    return repo, tag


MAX_LAYERS = 256  # an image has at most 127 layers on overlayfs; more is a hostile manifest
MAX_LAYER_BYTES = 64 * 1024**3  # one compressed layer as the manifest states its size
# One docker:// or docker-daemon: audit, every request and read (ROCM_VLLM_HTTP_DEADLINE).
REGISTRY_DEADLINE = 1800.0


def _from_registry(artifact: str, machs: dict[int, str], registry: str | None) -> Audit:
    """The image's layers from the registry (the linux/amd64 image of an index). Every document
    is verified before it is read: the index or manifest by the digest it was asked by
    (``RegistryClient.manifest``), the config and each layer by the digest and size the verified
    manifest names, streamed through the reader; the whole read ends within the deadline."""
    from resolver.artifacts.registry import RegistryClient, parse_registry

    ref = artifact[len(REGISTRY_PREFIX) :]
    repo, tag = _reference(ref)
    result = Audit(artifact=artifact)
    client = RegistryClient(parse_registry(registry))
    limit = deadline.configured(REGISTRY_DEADLINE)
    try:
        with deadline.within(limit):
            _read_image(client, repo, tag, ref, _Reader(result, machs), result)
    except deadline.DeadlineExceeded:
        raise RegistryError(
            f"{shown(ref)}: the image was not read within {limit:g} s",
            hint=f"the registry is too slow or stalls; retry later, use a closer --registry, or "
            f"raise {deadline.ENV}",
        ) from None
    finally:
        client.close()
    return result


def _platform_entry(doc: dict[str, Any], ref: str) -> str:
    """The digest of the linux/amd64 entry of an index, checked to be a digest."""
    entries = doc.get("manifests")
    if not isinstance(entries, list):
        raise RegistryError(f"{shown(ref)}: the index lists no manifests", hint=_ALTERED)
    for entry in entries[:MAX_LAYERS]:
        platform = entry.get("platform") if isinstance(entry, dict) else None
        if not isinstance(platform, dict):
            continue
        if platform.get("os") == "linux" and platform.get("architecture") == "amd64":
            digest = entry.get("digest")
            if not isinstance(digest, str) or not is_safe("digest", digest):
                raise RegistryError(
                    f"{shown(ref)}: the index names a malformed digest for linux/amd64",
                    hint=_ALTERED,
                )
            return digest
    raise AuditError(
        f"{shown(ref)}: the index lists no linux/amd64 image", hint="audit a platform image"
    )


_ALTERED = (
    "a digest is sha256: and 64 hex digits, a size a count of bytes; the registry or a mirror in "
    "between altered the document, so nothing from it is trusted"
)


def _descriptor(item: object, ref: str, what: str) -> tuple[str, int]:
    """The digest and size a manifest gives ``what`` (a layer, the config), both checked."""
    digest = item.get("digest") if isinstance(item, dict) else None
    size = item.get("size") if isinstance(item, dict) else None
    if not isinstance(digest, str) or not is_safe("digest", digest):
        raise RegistryError(f"{shown(ref)}: {what} has no well-formed digest", hint=_ALTERED)
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_LAYER_BYTES:
        raise RegistryError(
            f"{shown(ref)}: {what} {digest[:19]} states no size up to {MAX_LAYER_BYTES} bytes",
            hint=_ALTERED,
        )
    return digest, size


def _read_image(client: Any, repo: str, tag: str, ref: str, reader: _Reader, result: Audit) -> None:
    doc, media_type = client.manifest(repo, tag)
    if media_type in _INDEX_TYPES or "manifests" in doc:
        doc, media_type = client.manifest(repo, _platform_entry(doc, ref))
    layers = doc.get("layers")
    if not isinstance(layers, list):
        raise AuditError(
            f"{shown(ref)}: the manifest lists no layers", hint="not an image manifest"
        )
    if len(layers) > MAX_LAYERS:
        raise RegistryError(
            f"{shown(ref)}: the manifest lists {len(layers)} layers, more than {MAX_LAYERS}",
            hint="no image has that many layers: a hostile or damaged manifest",
        )
    described = [_descriptor(layer, ref, "a layer") for layer in layers]
    config = doc.get("config")
    if config is not None:
        result.labels = _config_labels(client, repo, _descriptor(config, ref, "the config"))
    for digest, size in described:
        response = client.blob(repo, digest)
        try:
            verified = _Verified(response.raw, digest, size)
            reader.stream(cast(IO[bytes], verified), f"{ref}!{digest[:19]}", size, depth=0)
            verified.finish()
        finally:
            response.close()


def _config_labels(client: Any, repo: str, config: tuple[str, int]) -> dict[str, str]:
    """The labels of the image config a manifest names, its bytes checked against the digest."""
    from resolver.util import bounded

    digest, size = config
    if size > _MAX_CONFIG:
        raise AuditError(
            f"{repo}: its image config is larger than {_MAX_CONFIG} bytes",
            hint="not an image config",
        )
    response = client.blob(repo, digest)
    try:
        verified = _Verified(response.raw, digest, size)
        body = b""
        while chunk := verified.read(1 << 16):  # _Verified stops one byte past the size
            body += chunk
        verified.finish()
    finally:
        response.close()
    try:
        doc = bounded.loads_json(body)
    except ValueError:
        raise AuditError(
            f"{repo}: its image config is not JSON (or nested too deep)", hint="a damaged image"
        ) from None
    inner = doc.get("config") if isinstance(doc, dict) else None
    return image_labels(inner.get("Labels") if isinstance(inner, dict) else None)


_MAX_CONFIG = 4 * 1024 * 1024  # an image config is a few KB; its history can make it larger


class _Chunks(io.RawIOBase):
    """A file over an iterator of byte chunks (the engine's image stream)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._rest = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._rest:
            try:
                self._rest = next(self._chunks)
            except StopIteration:
                return 0
            except deadline.DeadlineExceeded:
                raise
            except Exception as exc:  # noqa: BLE001 - docker and requests errors, not imported here
                from resolver.util.errors import DockerEngineError

                raise DockerEngineError(
                    f"the engine's image stream broke off ({type(exc).__name__})",
                    hint="check the Docker Engine (docker info) and retry",
                ) from None
        n = min(len(buffer), len(self._rest))
        buffer[:n] = self._rest[:n]
        self._rest = self._rest[n:]
        return n


class _Verified(io.RawIOBase):
    """A blob's bytes, hashed and counted as they are read: never more than the ``size`` the
    manifest states; ``finish`` reads the rest and compares the count and the digest. A read
    the connection breaks is the registry's failure (exit 4), not the artifact's."""

    def __init__(self, raw: IO[bytes], digest: str, size: int) -> None:
        import hashlib

        self._raw = raw
        self._digest = digest
        self._size = size
        self._read = 0
        self._hash = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        # RawIOBase.read(n) allocates n bytes first: never more than the blob can still hold (a
        # reader asking for a library's worth must not need 4 GiB for a small layer).
        left = self._size + 1 - self._read
        return super().read(left if size is None or size < 0 or size > left else size) or b""

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        # One byte past the stated size is enough to know the registry sends more than it said.
        want = min(len(buffer), self._size + 1 - self._read)
        try:
            data = self._raw.read(want) if want > 0 else b""
        except Exception as exc:  # urllib3's read errors, without importing it here
            if isinstance(exc, deadline.DeadlineExceeded):
                raise
            raise RegistryError(
                f"blob {self._digest[:19]}: the registry's answer broke off ({type(exc).__name__})",
                hint="retry later, or use a closer --registry",
            ) from None
        self._read += len(data)
        if self._read > self._size:
            raise RegistryError(
                f"blob {self._digest[:19]}: the registry sends more than the {self._size} bytes "
                "the manifest states",
                hint="a proxy or mirror altered the blob; nothing from it is trusted",
            )
        self._hash.update(data)
        buffer[: len(data)] = data
        return len(data)

    def finish(self) -> None:
        while self.read(1 << 20):
            pass
        if self._read != self._size or "sha256:" + self._hash.hexdigest() != self._digest:
            raise RegistryError(
                f"blob {self._digest[:19]}: the bytes served do not match its digest and size",
                hint="a proxy or mirror altered the blob; nothing from it is trusted",
            )
