"""BuildKit progress from the Docker Engine's build stream, as readable lines.

With ``version=2`` the engine's ``/build`` endpoint reports progress as ``moby.buildkit.trace``
events whose ``aux`` is a base64 protobuf ``StatusResponse`` (moby/buildkit
``api/services/control/control.proto``). The SDK has no decoder for it and the project takes no
protobuf dependency for five fields, so this reads the wire format directly:
StatusResponse{1: Vertex, 3: VertexLog}, Vertex{1: digest, 3: name, 4: cached, 7: error},
VertexLog{1: vertex digest, 4: msg}. Anything it cannot read is skipped, never raised.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(buf):
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            break
    raise ValueError("bad varint")


def _fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) for each field of one protobuf message; varints as int, bytes as
    bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise ValueError("truncated field")
            yield number, buf[pos : pos + size]
            pos += size
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"wire type {wire}")


def _text(value: int | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else ""


class Progress:
    """Turns successive trace payloads into lines: each step once when it starts (or is cached),
    its output as it arrives, and its error."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._announced: set[str] = set()
        self.errors: list[str] = []

    def feed(self, aux: str) -> list[str]:
        try:
            payload = base64.b64decode(aux, validate=True)
            return self._status(payload)
        except (ValueError, binascii.Error):
            return []

    def _status(self, payload: bytes) -> list[str]:
        lines: list[str] = []
        for number, value in _fields(payload):
            if not isinstance(value, bytes):
                continue
            if number == 1:
                lines += self._vertex(value)
            elif number == 3:
                lines += self._log(value)
        return lines

    def _vertex(self, buf: bytes) -> list[str]:
        digest = name = error = ""
        cached = False
        for number, value in _fields(buf):
            if number == 1:
                digest = _text(value)
            elif number == 3:
                name = _text(value)
            elif number == 4:
                cached = bool(value)
            elif number == 7:
                error = _text(value)
        if name:
            self._names[digest] = name
        out = []
        if name and digest not in self._announced:
            self._announced.add(digest)
            out.append(f"{name}{'  (cached)' if cached else ''}")
        if error:
            message = f"{self._names.get(digest, name) or 'step'}: {error}"
            if message not in self.errors:
                self.errors.append(message)
                out.append(f"ERROR {message}")
        return out

    def _log(self, buf: bytes) -> list[str]:
        msg = b""
        for number, value in _fields(buf):
            if number == 4 and isinstance(value, bytes):
                msg += value
        return [f"  {line}" for line in msg.decode("utf-8", "replace").splitlines() if line.strip()]
