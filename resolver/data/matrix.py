"""The matrix in use: read once per process (``load``) and shared, from the compiled records the
wheel ships, else from this user's sealed cache, else from ``matrix/*.toml`` through
``resolver.data.build`` (which checks them), then cached.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, get_args, get_origin

import msgspec
from packaging.version import Version

from resolver.data import resources
from resolver.data.model import LOWER_HEX, Deferred, Matrix
from resolver.util import atomic, bounded
from resolver.util.errors import MatrixError

# Not hashlib/hmac: hashlib loads OpenSSL, a few ms of every start. BLAKE2 is CPython's own
# module and hmac.compare_digest is _operator's; hashlib stands in where a build lacks _blake2.
try:
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover - CPython builds carry it
    from hashlib import blake2b as _blake2b
from _operator import _compare_digest


def load_dir(directory: Path, extra: Mapping[str, list[dict[str, Any]]] | None = None) -> Matrix:
    """Read and check every data file in ``directory``, with ``extra`` records (the refreshed-data
    overlay, by file name) laid over them by key (``resolver.data.build``)."""
    from resolver.data import build

    return build.from_raw(build.read_all(directory, extra))


def _key_files(directory: Path, overlay_stamp: tuple[str, int, int] | None) -> list[Path]:
    """What a compiled entry is built from: every data file, the overlay, and the builders (an
    entry written by an older shape of them is not read back: a development checkout changes them
    without a new version)."""
    builders = ("build.py", "model.py", "schema.py")
    code = [Path(__file__), *(Path(__file__).with_name(n) for n in builders)]
    files = [*(directory / name for name in resources.MATRIX_FILES), *code]
    if overlay_stamp is not None:
        files.append(Path(overlay_stamp[0]))
    return files


def _content_key(directory: Path | None, files: list[Path]) -> str | None:
    """The BLAKE2b of the tool version, the data directory and every file's content (no
    directory for the shipped compiled matrix: it is built before it is installed)."""
    from resolver import __version__

    where = "shipped" if directory is None else str(directory)
    h = _blake2b(f"{__version__}|{_COMPILED_FORMAT}|{where}".encode(), digest_size=32)
    for path in files:
        try:
            content = bounded.read_bytes(path, _MAX_COMPILED)
        except OSError:
            return None
        h.update(f"|{path.name}:{len(content)}|".encode())
        h.update(content)
    return h.hexdigest()[:32]


# A file changed less than this long ago may change again within one tick of its timestamps
# without its stat changing: its stat is not yet taken as the identity of its content.
_SETTLED_NS = 2_000_000_000


def _stat_key(directory: Path, files: list[Path], stats: list[os.stat_result]) -> str:
    from resolver import __version__

    h = _blake2b(f"{__version__}|{directory}".encode(), digest_size=16)
    for path, st in zip(files, stats, strict=True):
        h.update(
            f"|{path}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}".encode()
        )
    return h.hexdigest()


def _compiled_path(
    directory: Path, overlay_stamp: tuple[str, int, int] | None, key: bytes
) -> Path | None:
    """Where the checked matrix for exactly these files is kept between runs.

    Parsing ~240 KB of TOML and checking it costs more than the rest of a `check`; an entry is
    named by the BLAKE2b of the tool version, the data directory and every data file's content
    (and the overlay's), so any edit or refresh makes a new entry, and an entry is never taken for
    data it was not built from. Hashing ~600 KB at every start is itself a millisecond or two, so
    the content key is also kept under the files' stat (device, inode, size, mtime, ctime), as git
    keeps its index: sealed like the entries, and only once every file has settled (an edit
    changes ctime, which nothing can set back). None when a file is missing (``load_dir`` then
    says which)."""
    files = _key_files(directory, overlay_stamp)
    try:
        stats = [path.stat() for path in files]
    except OSError:
        return None
    entries = resources.cache_dir() / "matrix"
    index = entries / f"{_stat_key(directory, files, stats)}.stat"
    content = _read_index(index, key)
    if content is None:
        content = _content_key(directory, files)
        if content is None:
            return None
        import time

        now = time.time_ns()
        settled = all(now - max(st.st_mtime_ns, st.st_ctime_ns) > _SETTLED_NS for st in stats)
        if settled:
            with contextlib.suppress(OSError):
                payload = f"{index.stem}|{content}".encode()
                atomic.write_atomic(index, f"{_seal(key, payload)}\n{content}\n".encode())
    return entries / f"{content}.msgpack"


def _read_index(index: Path, key: bytes) -> str | None:
    """The content key kept under these stats, when its seal is this user's tool's."""
    try:
        seal, content = bounded.read_bytes(index, 256).decode("ascii").split()
    except (OSError, ValueError):  # missing, unreadable, or not two words of ASCII
        return None
    payload = f"{index.stem}|{content}".encode()
    if not _compare_digest(seal.encode(), _seal(key, payload).encode()):
        return None
    # 32 lower-case hex digits (a content key), checked without compiling a pattern at each start
    return content if len(content) == 32 and LOWER_HEX.issuperset(content) else None


# 6: deferred tables as extensions, read in place (5: vendor and model tables deferred)
_COMPILED_FORMAT = 6
_MAX_COMPILED = 32 * bounded.MiB
_KEY_NAME = "compiled-cache.key"


def _seal_key() -> bytes | None:
    """The secret that seals compiled entries, kept in the data dir (not the cache dir: a shared
    or CI-restored cache holds no key, so an entry written elsewhere is never trusted). Created
    on first use, mode 0600; None when it can be neither read nor made (then no cache)."""
    from resolver.data import overlay

    path = overlay.data_dir() / _KEY_NAME
    for _ in range(2):
        try:
            key = bounded.read_bytes(path, 64)
            return key if len(key) == 32 else None
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    os.write(fd, os.urandom(32))
                finally:
                    os.close(fd)
        except OSError:
            return None
    return None


def _seal(key: bytes, payload: bytes | memoryview) -> str:
    return _blake2b(payload, key=key, digest_size=32).hexdigest()  # keyed BLAKE2b is a MAC


# The msgpack extension code a ``Deferred`` table's encoded records travel under: an extension's
# data is handed back as a view of the mapped file (``_deferred_view``, ``_Mapped``), where a plain
# byte string would be copied out of it (~0.9 MB of fresh memory at four times today's data).
_DEFERRED_EXT = 1


def _deferred_view(code: int, data: memoryview) -> memoryview:
    if code != _DEFERRED_EXT:
        raise ValueError(f"unknown msgpack extension {code}")
    return data


def _codec_hooks(unchanged: Callable[[], bool] | None = None) -> tuple[Any, Any]:
    """Versions travel as their text and are parsed back. ``unchanged``: whether the mapped file
    the records are decoded from still holds the bytes that were checked (``_Mapped``), asked
    again before a deferred table is decoded from it."""

    def enc(obj: Any) -> Any:
        if isinstance(obj, Version):
            return str(obj)
        if isinstance(obj, Deferred):  # its records as msgpack, decoded on first read
            raw = obj.raw()
            data = raw if raw is not None else msgspec.msgpack.encode(obj.get(), enc_hook=enc)
            return msgspec.msgpack.Ext(_DEFERRED_EXT, data)
        raise NotImplementedError(f"no encoding for {type(obj).__name__}")

    parsed: dict[str, Version] = {}  # the data repeats its versions ("7.2.3" ...)

    def dec(kind: Any, obj: Any) -> Any:
        if kind is Version:
            found = parsed.get(obj)
            if found is None:
                found = parsed[obj] = Version(obj)
            return found
        if get_origin(kind) is Deferred and isinstance(obj, memoryview):
            (records,) = get_args(kind)
            table = functools.partial(_decode_table, records, dec)
            if unchanged is not None:
                table = functools.partial(_guarded, unchanged, table)
            return Deferred.encoded(obj, table)
        raise NotImplementedError(f"no decoding for {kind!r}")

    return enc, dec


def _decode_table(records: Any, dec: Callable[[Any, Any], Any], raw: memoryview) -> Any:
    """A ``Deferred`` table's records, on first read. Its bytes passed the entry's seal (or are
    the wheel's own), so a failure here is a defect of this tool, said as a data error."""

    try:
        return msgspec.msgpack.decode(raw, type=records, dec_hook=dec)
    except (msgspec.DecodeError, ValueError, TypeError, RecursionError) as e:
        raise MatrixError(
            f"a table of the compiled matrix does not decode ({e})",
            hint="remove the rocm-vllm cache directory (ROCM_VLLM_CACHE_DIR) and run again",
        ) from e


def _guarded(
    unchanged: Callable[[], bool], table: Callable[[memoryview], Any], raw: memoryview
) -> Any:
    """A deferred table read from a mapped file, when the file still is what was checked."""
    if not unchanged():
        raise MatrixError(
            "the compiled matrix changed on disk while this command ran",
            hint="run the command again",
        )
    return table(raw)


def _read_compiled(path: Path, key: bytes) -> Matrix | None:
    """The matrix from a cache entry, or None (missing, damaged, unsealed, or not of the record
    types).

    An entry is its seal (a keyed BLAKE2b of the rest, ``_seal_key``), a line break, then the
    checked ``Matrix`` as msgpack (never a pickle: a crafted file must not run code). An entry
    whose seal does not match was not written by this user's tool for these files (an edited
    entry could point every printed command at another image repository) and is a miss. A sealed
    entry holds records this tool built and checked from exactly these files (the key covers them
    and the builders' code), so it is decoded straight into the typed records: msgspec checks every
    field against its declared type, and nothing is parsed or checked twice.

    Hashing the entry is itself ~1.5 ms at four times today's data, so once a settled entry's seal
    has been checked, its stat is kept beside it (``ENTRY.seen``), sealed, as the data files' stats
    are (``_compiled_path``): while the entry's stat is unchanged, before and after it is read, the
    bytes read are the bytes checked. Any write to it changes its ctime (which nothing can set
    back) and a replaced or copied-in entry is another inode: then the seal is checked again."""
    try:
        mapped = _Mapped(path)
    except (OSError, ValueError):
        return None
    blob = mapped.data
    cut = blob.find(b"\n", 0, 256)  # the seal is 64 hex digits; the payload is not copied
    if cut < 0:
        return None
    payload = memoryview(blob)[cut + 1 :]
    stamp = mapped.stamp
    mark = path.with_name(path.name + ".seen")
    known = _read_mark(mark, key, path.name) == stamp
    if not known and not _compare_digest(blob[:cut], _seal(key, payload).encode()):
        return None
    m = _decode_compiled(payload, mapped.unchanged)
    if m is None or not mapped.unchanged():  # written to while it was read: not what was checked
        return None
    if not known and _settled(mapped.before):
        with contextlib.suppress(OSError):
            atomic.write_atomic(
                mark, f"{_seal(key, _mark_payload(path.name, stamp))}\n{stamp}\n".encode()
            )
    return m


class _Mapped:
    """A regular file of at most ``_MAX_COMPILED`` bytes, mapped read-only, with its stat when
    mapped (``stamp``).

    Mapped, not read: a read copies the compiled matrix (2 MB at four times today's data) into
    fresh memory, which the kernel hands over a page at a time; a mapping shares the page cache's
    pages (~340 fewer page faults a check at four times today's data, ~180 at today's: a few ms
    where faults are dear, as in a VM). The file stays
    open so that ``unchanged`` can ask, after any read of the mapping, whether it was written to
    since it was mapped (a write changes its ctime, which nothing sets back). A file truncated
    under a running command would be a SIGBUS, as for any mapped file; nothing that writes these
    truncates them: this tool replaces an entry (``atomic.write_atomic``), and installers unlink
    a package's files before writing them anew (each installed ``.so`` is mapped too)."""

    __slots__ = ("before", "data", "fd", "stamp")

    def __init__(self, path: Path) -> None:
        import mmap
        import stat

        self.fd = -1
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        self.before = os.fstat(self.fd)
        if not stat.S_ISREG(self.before.st_mode) or not 0 < self.before.st_size <= _MAX_COMPILED:
            raise OSError(f"{path}: not a non-empty regular file within the size limit")
        self.data = mmap.mmap(self.fd, 0, access=mmap.ACCESS_READ)
        self.stamp = _stat_line(self.before)

    def unchanged(self) -> bool:
        try:
            return _stat_line(os.fstat(self.fd)) == self.stamp
        except OSError:
            return False

    def __del__(self) -> None:  # the descriptor is this object's; the mapping keeps its own
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)


def _stat_line(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _settled(st: os.stat_result) -> bool:
    import time

    return time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > _SETTLED_NS


def _mark_payload(name: str, stamp: str) -> bytes:
    return f"seen|{name}|{stamp}".encode()


def _read_mark(mark: Path, key: bytes, name: str) -> str | None:
    """The entry stat kept in ``mark`` when its seal is this user's tool's, for this entry."""
    try:
        seal, stamp = bounded.read_bytes(mark, 256).decode("ascii").split()
    except (OSError, ValueError):  # missing, unreadable, or not two words of ASCII
        return None
    expected = _seal(key, _mark_payload(name, stamp)).encode()
    return stamp if _compare_digest(seal.encode(), expected) else None


def _decode_compiled(
    payload: memoryview, unchanged: Callable[[], bool] | None = None
) -> Matrix | None:
    _, dec = _codec_hooks(unchanged)
    try:
        fmt, m = msgspec.msgpack.decode(
            payload, type=tuple[int, Matrix], dec_hook=dec, ext_hook=_deferred_view
        )
    except (msgspec.DecodeError, ValueError, TypeError, RecursionError):
        return None  # the data files are read again; their own errors name file and field
    return m if fmt == _COMPILED_FORMAT else None


def _write_compiled(path: Path, m: Matrix, key: bytes) -> None:
    """Best effort: a read-only or full cache dir only costs speed."""

    enc, _ = _codec_hooks()
    with contextlib.suppress(OSError, ValueError, TypeError, NotImplementedError):
        payload = msgspec.msgpack.encode((_COMPILED_FORMAT, m), enc_hook=enc)
        atomic.write_atomic(path, _seal(key, payload).encode() + b"\n" + payload)


# --- the compiled matrix shipped in the wheel ----------------------------------------------------


def shipped_key(directory: Path) -> str | None:
    """What a shipped compiled matrix is built from: the tool version, the compiled format, every
    data file's and the builders' content; not the directory (it is built before it is
    installed). None when a file is missing."""
    return _content_key(None, _key_files(directory, None))


def compile_shipped(directory: Path) -> bytes:
    """The checked matrix of ``directory`` as the wheel ships it (``hatch_build.py``): its
    ``shipped_key``, a line break, then the records as msgpack. Raises ``MatrixError`` as
    ``load_dir`` does: a wheel is never built from data the loader refuses."""

    key = shipped_key(directory)
    if key is None:
        raise MatrixError(f"a data file is missing from {directory}", hint="restore matrix/")
    enc, _ = _codec_hooks()
    payload = msgspec.msgpack.encode((_COMPILED_FORMAT, load_dir(directory)), enc_hook=enc)
    return key.encode() + b"\n" + payload


def _read_shipped(path: Path, directory: Path) -> Matrix | None:
    """The matrix the wheel ships, when it was built from exactly the files in ``directory``
    (an edited installed data file makes it a miss). It is package code, trusted like the
    ``.py`` files beside it: no seal, and no cache dir or seal key is needed to read it."""
    try:
        mapped = _Mapped(path)
    except (OSError, ValueError):
        return None
    blob = mapped.data
    cut = blob.find(b"\n", 0, 64)
    if cut < 0 or blob[:cut].decode("ascii", "replace") != shipped_key(directory):
        return None
    return _decode_compiled(memoryview(blob)[cut + 1 :], mapped.unchanged)


@functools.cache
def _load_cached(directory: str, overlay_stamp: tuple[str, int, int] | None) -> Matrix:
    from resolver.data import overlay

    shipped = resources.shipped_compiled(Path(directory)) if overlay_stamp is None else None
    if shipped is not None:
        found = _read_shipped(shipped, Path(directory))
        if found is not None:
            return found
    key = _seal_key()  # None: no cache (neither read nor written)
    compiled = _compiled_path(Path(directory), overlay_stamp, key) if key is not None else None
    if compiled is not None and key is not None:  # (the second test is for the type checker)
        found = _read_compiled(compiled, key)
        if found is not None:
            return found
    extra = overlay.read(Path(overlay_stamp[0])) if overlay_stamp else None
    from resolver.data import build

    m = build.from_raw(build.read_all(Path(directory), extra))
    if compiled is not None and key is not None:
        _write_compiled(compiled, m, key)
    return m


def load() -> Matrix:
    """The matrix in use: the embedded data with the refreshed-data overlay (if any) over it.

    Read once per process; a new overlay on disk (``matrix refresh --write``) is picked up."""
    from resolver.data import overlay

    return _load_cached(str(resources.matrix_dir()), overlay.stamp())


def reload() -> None:
    """Forget the matrix this process read: the next ``load`` reads it again as a new process
    would (shipped compiled file, sealed cache entry or TOML).

    For tests and long-lived callers whose data dir, cache dir or files changed under the same
    path; a new overlay needs no reload (``load`` keys on its stamp)."""
    _load_cached.cache_clear()
