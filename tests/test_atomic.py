"""Atomic writes: the old content survives a failed write and no temporary file is left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from resolver.util.atomic import write_atomic


class Boom(bytes):
    """Bytes whose write fails half-way, like a full disk."""


def test_replaces_content_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.txt"
    write_atomic(target, "one")
    write_atomic(target, b"two", mode=0o600)
    assert target.read_text() == "two" and (target.stat().st_mode & 0o777) == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["f.txt"]


def test_failure_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "f.txt"
    write_atomic(target, "old")

    def fail(self: Path, other: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "replace", fail)
    with pytest.raises(OSError, match="No space"):
        write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_missing_parent_is_an_error_when_asked(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "nope" / "f.txt", "x", make_parent=False)
