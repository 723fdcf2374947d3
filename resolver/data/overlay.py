"""The user-data overlay: refreshed facts kept outside the installed package.

``rocm-vllm matrix refresh --write`` saves records here; every command reads them over the
embedded ``matrix/*.toml`` (a record replaces the embedded one with the same key, or is added).
The overlay is one JSON file, ``<data dir>/overlay.json``, written atomically; each record keeps
the ``source`` it was read from and ``read_at``. The data dir is ``ROCM_VLLM_DATA_DIR`` or the
platform's user data directory.

This module is on the ``check`` path: with no overlay it costs one ``stat``; it never imports
``requests``.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import msgspec
from packaging.version import Version

from resolver.data import resources
from resolver.util import atomic, bounded
from resolver.util.errors import InputError, MatrixError

ENV_DATA_DIR: Final = "ROCM_VLLM_DATA_DIR"
OVERLAY_NAME: Final = "overlay.json"
FORMAT: Final = 1
MAX_OVERLAY: Final = 64 * bounded.MiB

# The data files refresh can add to, and the array-of-tables key each keeps its records in.
TABLES: Final[dict[str, str]] = {
    "rocm.toml": "release",
    "vllm.toml": "release",
    "images.toml": "image",
    "wheels.toml": "variant",
    "cuda.toml": "release",
    "capabilities.toml": "release",
    "models.toml": "release",
}


class Origin(msgspec.Struct, frozen=True):
    """Where one fact came from: the embedded data, or an upstream URL read on a date."""

    file: str
    key: str
    source_url: str
    read_at: str | None  # None for embedded records (their date is the release of the package)
    overlay: bool


def data_dir() -> Path:
    override = os.environ.get(ENV_DATA_DIR)
    if override:
        return Path(override)
    return resources.user_dir("data")


def overlay_path() -> Path:
    return data_dir() / OVERLAY_NAME


def stamp() -> tuple[str, int, int] | None:
    """A cheap identity of the overlay on disk (None when there is none), for cache keys."""
    path = overlay_path()
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_mtime_ns, st.st_size)


def record_key(file: str, record: dict[str, Any]) -> str:
    """The identity a record is merged by: version, repo:tag or variant name."""
    if file == "images.toml":
        return f"{record.get('repo')}:{record.get('tag')}"
    if file == "wheels.toml":
        return str(record.get("name"))
    raw = str(record.get("version"))
    try:
        return str(Version(raw))
    except ValueError:
        return raw


def read(path: Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """The overlay's records by data file; empty when there is no overlay."""
    path = path or overlay_path()
    try:
        text = bounded.read_text(path, MAX_OVERLAY)
    except (FileNotFoundError, NotADirectoryError):
        # No overlay there (a data directory under a file has none either: --write says why).
        return {}
    except OSError as exc:
        raise _broken(path, f"cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise _broken(path, "is not UTF-8 text") from None
    try:
        doc = bounded.loads_json(text)
    except ValueError as exc:
        detail = f" ({exc})" if isinstance(exc, bounded.TooDeepError) else ""
        raise _broken(path, f"is not valid JSON{detail}") from None
    if (
        not isinstance(doc, dict)
        or doc.get("format") != FORMAT
        or not isinstance(doc.get("files"), dict)
    ):
        raise _broken(path, f"is not a format-{FORMAT} overlay")
    out: dict[str, list[dict[str, Any]]] = {}
    for file, records in doc["files"].items():
        if (
            file not in TABLES
            or not isinstance(records, list)
            or not all(isinstance(r, dict) for r in records)
        ):
            raise _broken(path, f"has an unexpected entry {file!r}")
        out[file] = records
    return out


def _broken(path: Path, problem: str) -> MatrixError:
    return MatrixError(
        f"the refreshed-data overlay {path} {problem}",
        hint="delete it (the embedded data is used) and run rocm-vllm matrix refresh --write "
        f"again; or point {ENV_DATA_DIR} elsewhere",
    )


def merge(
    file: str, embedded: list[dict[str, Any]], extra: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Embedded records with overlay records laid over them by key (replaced in place, or added)."""
    merged = list(embedded)
    index = {record_key(file, r): i for i, r in enumerate(merged)}
    for rec in extra:
        key = record_key(file, rec)
        if key in index:
            merged[index[key]] = rec
        else:
            index[key] = len(merged)
            merged.append(rec)
    return merged


def embedded_raw(file: str, directory: Path | None = None) -> list[dict[str, Any]]:
    """The records of one embedded data file as plain TOML tables."""
    path = (directory or resources.matrix_dir()) / file
    try:
        doc = bounded.load_toml(path, MAX_OVERLAY)
    except (OSError, ValueError) as exc:
        raise MatrixError(f"{file}: cannot be read ({exc})", hint=f"fix matrix/{file}") from None
    table = "gfx" if file == "gfx.toml" else TABLES.get(file, "")
    items = doc.get(table, [])
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def current_raw(
    directory: Path | None = None, path: Path | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Embedded data with the overlay over it, as plain tables: what every command sees."""
    extra = read(path)
    out = {file: merge(file, embedded_raw(file, directory), extra.get(file, [])) for file in TABLES}
    out["gfx.toml"] = embedded_raw("gfx.toml", directory)
    return out


def origins(path: Path | None = None) -> dict[tuple[str, str], Origin]:
    """(file, key) -> where that record came from, for every record in the overlay.

    Records not listed here are embedded: ``matrix show --origin`` reports them as
    ``embedded`` with their own ``source`` field.
    """
    out: dict[tuple[str, str], Origin] = {}
    for file, records in read(path).items():
        for rec in records:
            key = record_key(file, rec)
            read_at = rec.get("read_at")
            out[(file, key)] = Origin(
                file=file,
                key=key,
                source_url=str(rec.get("source", "")),
                read_at=str(read_at) if read_at else None,
                overlay=True,
            )
    return out


def write(
    updates: dict[str, list[dict[str, Any]]], *, written_at: str, path: Path | None = None
) -> Path:
    """Merge ``updates`` into the overlay by key and replace the file atomically."""
    path = path or overlay_path()
    for file in updates:
        if file not in TABLES:
            raise ValueError(f"refresh cannot write {file}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(path):
            # Read, merge and replace under one lock: two refreshes writing at once both keep
            # their records (the second merges into what the first wrote).
            files = read(path)
            for file, records in updates.items():
                # Every refreshed record says when it was read (`matrix show --origin`); a source
                # that did not stamp it was read now.
                stamped = [
                    {**rec, "read_at": rec.get("read_at") or written_at[:10]} for rec in records
                ]
                files[file] = merge(file, files.get(file, []), stamped)
            doc = {
                "format": FORMAT,
                "comment": "GENERATED by rocm-vllm matrix refresh --write; every record names its "
                "source. Delete this file to go back to the embedded data.",
                "written_at": written_at,
                "files": {f: files[f] for f in TABLES if files.get(f)},
            }
            import json

            atomic.write_atomic(path, json.dumps(doc, indent=1, sort_keys=False) + "\n")
    except OSError as exc:
        raise InputError(
            f"cannot write the refreshed-data overlay {path} "
            f"({exc.strerror or type(exc).__name__})",
            hint=f"make {path.parent} writable, or point {ENV_DATA_DIR} at a writable directory",
        ) from None
    return path


LOCK_TIMEOUT: Final = 60.0


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive ``fcntl`` lock on ``.overlay.json.lock`` next to the overlay (advisory: every
    writer of the overlay is this function's caller)."""
    import fcntl

    lock_path = path.with_name(f".{path.name}.lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        waited = 0.0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if waited >= LOCK_TIMEOUT:
                    raise InputError(
                        f"another rocm-vllm is writing {path} (waited {LOCK_TIMEOUT:g} s)",
                        hint="let it finish and run the refresh again; if none runs, delete "
                        f"{lock_path}",
                    ) from None
                time.sleep(0.05)
                waited += 0.05
        yield
    finally:
        os.close(fd)  # releases the lock
