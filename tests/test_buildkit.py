"""BuildKit trace decoding: readable lines from real-shaped StatusResponse payloads; never
raises."""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from resolver.artifacts.buildkit import Progress


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value: bytes | int) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _status(*parts: bytes) -> str:
    return base64.b64encode(b"".join(parts)).decode()


def _vertex(digest: str, name: str, *, cached: bool = False, error: str = "") -> bytes:
    body = _field(1, digest.encode()) + _field(3, name.encode()) + (_field(4, 1) if cached else b"")
    body += _field(7, error.encode()) if error else b""
    return _field(1, body)


def _log(digest: str, msg: str) -> bytes:
    return _field(3, _field(1, digest.encode()) + _field(3, 1) + _field(4, msg.encode()))


def test_steps_once_then_logs_then_errors() -> None:
    p = Progress()
    assert p.feed(_status(_vertex("sha256:a", "[final 2/3] RUN --mount=type=cache make"))) == [
        "[final 2/3] RUN --mount=type=cache make"
    ]
    # BuildKit repeats a vertex as its state changes; it is announced once.
    assert p.feed(_status(_vertex("sha256:a", "[final 2/3] RUN --mount=type=cache make"))) == []
    assert p.feed(_status(_log("sha256:a", "compiling\nlinking\n"))) == ["  compiling", "  linking"]
    assert p.feed(
        _status(_vertex("sha256:b", "[base 1/2] COPY busybox /bin/busybox", cached=True))
    ) == ["[base 1/2] COPY busybox /bin/busybox  (cached)"]
    lines = p.feed(
        _status(
            _vertex("sha256:a", "[final 2/3] RUN --mount=type=cache make", error="exit code: 2")
        )
    )
    assert lines == ["ERROR [final 2/3] RUN --mount=type=cache make: exit code: 2"]
    assert p.errors == ["[final 2/3] RUN --mount=type=cache make: exit code: 2"]


@given(st.text(max_size=200) | st.binary(max_size=200).map(lambda b: base64.b64encode(b).decode()))
def test_garbage_never_raises(aux: str) -> None:
    assert isinstance(Progress().feed(aux), list)
