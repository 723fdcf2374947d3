"""A local HTTP server that answers like the upstreams, from the recorded responses.

Routes (all under one loopback base URL, which tests put into the ROCM_VLLM_* variables):
- ``/repos/<owner>/<repo>/tags?per_page=100[&page=N]`` ->
  recorded/github/<owner>-<repo>-tags-pageN.json, with a GitHub-style ``Link: <...>; rel="next"``
  header while pages remain;
- ``/raw/<owner>/<repo>/<sha>/<path>`` -> recorded/raw/... (404 when the file did not exist there);
- ``/wheels/vllm/`` -> recorded/wheels/vllm-index.html;
- ``/simple/vllm/`` -> the index's real PEP 691 page (recorded/sdist/pypi-simple-vllm.json), listing
  only the releases that have a recorded slice, each with the slice's own sha256 and a relative URL;
- ``/files/<name>`` -> recorded/sdist/<name> (a real sdist cut down to the files refresh reads).
Every 200 carries an ``ETag`` and ``Last-Modified``; a matching ``If-None-Match`` gets a 304.
``faults`` injects failures per path: "500", "429", "timeout", "truncate", "malformed".
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

RECORDED = Path(__file__).parent / "recorded"
LAST_MODIFIED = "Sat, 01 Aug 2026 00:00:00 GMT"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    status: int


@dataclass
class Upstream:
    base: str = ""
    seen: list[Seen] = field(default_factory=list)
    faults: dict[str, list[str]] = field(default_factory=dict)  # path prefix -> queued faults
    overrides: dict[str, bytes] = field(default_factory=dict)  # path -> body served instead

    def requests(self, prefix: str = "") -> list[Seen]:
        return [s for s in self.seen if s.path.startswith(prefix)]


def _resolve(path: str, query: dict[str, list[str]]) -> Path | None:
    if m := re.fullmatch(r"/repos/([^/]+)/([^/]+)/tags", path):
        page = query.get("page", ["1"])[0]
        return RECORDED / "github" / f"{m.group(1)}-{m.group(2)}-tags-page{page}.json"
    if path.startswith("/raw/"):
        return RECORDED / "raw" / path[len("/raw/") :]
    if path == "/wheels/vllm/":
        return RECORDED / "wheels" / "vllm-index.html"
    if path.startswith("/files/") and "/" not in path[len("/files/") :]:
        return RECORDED / "sdist" / path[len("/files/") :]
    return None


def sdist_index_page() -> bytes:
    """The recorded PEP 691 page, pointed at the recorded slices (whose hashes differ from the
    real sdists': the slices hold only the files read)."""
    page = json.loads((RECORDED / "sdist" / "pypi-simple-vllm.json").read_text())
    files = []
    for f in page["files"]:
        sliced = RECORDED / "sdist" / f["filename"]
        if sliced.is_file():
            data = sliced.read_bytes()
            files.append(
                {
                    **f,
                    "url": f"../../files/{f['filename']}",
                    "size": len(data),
                    "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                }
            )
    page["files"] = files
    return json.dumps(page).encode()


class _Handler(BaseHTTPRequestHandler):
    """The recorded upstream; ``state`` is bound per server by ``_handler``."""

    protocol_version = "HTTP/1.1"
    state: Upstream

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        full = url.path + (f"?{url.query}" if url.query else "")
        fault = _next_fault(self.state, full)
        status = self._answer(url.path, parse_qs(url.query), fault)
        self.state.seen.append(Seen(self.command, full, dict(self.headers.items()), status))

    def _answer(self, path: str, query: dict[str, list[str]], fault: str | None) -> int:
        if fault in ("500", "429", "timeout"):
            return self._fail(fault)
        body = _body(self.state, path, query)
        if body is None:
            self._send(404, b"404: Not Found", {"Content-Type": "text/plain"})
            return 404
        if fault == "malformed":
            body = body[: len(body) // 2]
        headers = _headers(self.state, path, query, body)
        if self.headers.get("If-None-Match") == headers["ETag"]:
            self._send(304, b"", {"ETag": headers["ETag"]})
            return 304
        if fault == "truncate":
            self._send_truncated(body, headers)
            return 200
        self._send(200, body, headers)
        return 200

    def _fail(self, fault: str | None) -> int:
        """An upstream error (500, 429 with Retry-After) or a timeout."""
        if fault == "timeout":
            time.sleep(1.5)  # longer than the tests' read timeout
            self._send(504, b"")
            return 504
        status = int(fault or 0)
        self._send(status, b"upstream trouble", {"Retry-After": "0"} if fault == "429" else None)
        return status

    def _send_truncated(self, body: bytes, headers: dict[str, str]) -> None:
        # Announce the whole body, send half, close: what a dropped connection looks like.
        self.send_response(200)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2])
        self.wfile.flush()
        self.close_connection = True

    do_HEAD = do_GET


def _handler(state: Upstream) -> type[BaseHTTPRequestHandler]:
    """A handler class bound to one server's state."""
    return type("Handler", (_Handler,), {"state": state})


def _next_fault(state: Upstream, full: str) -> str | None:
    """The next queued fault for the first prefix of ``full`` that still has one (used up)."""
    for prefix, queue in state.faults.items():
        if full.startswith(prefix) and queue:
            return queue.pop(0)
    return None


def _body(state: Upstream, path: str, query: dict[str, list[str]]) -> bytes | None:
    """What the upstream serves at ``path``: an override, the sdist index, a recorded file, or
    None (404)."""
    target = _resolve(path, query)
    if path in state.overrides:
        return state.overrides[path]
    if path == "/simple/vllm/":
        return sdist_index_page()
    if target is None or not target.is_file():
        return None
    return target.read_bytes()


def _headers(
    state: Upstream, path: str, query: dict[str, list[str]], body: bytes
) -> dict[str, str]:
    """ETag, Last-Modified, the content type, and GitHub's ``Link: rel="next"`` while tag pages
    remain."""
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {"ETag": etag, "Last-Modified": LAST_MODIFIED}
    if path == "/simple/vllm/":
        headers["Content-Type"] = "application/vnd.pypi.simple.v1+json"
    elif path.endswith(".json") or "/tags" in path:
        headers["Content-Type"] = "application/json; charset=utf-8"
    if m := re.fullmatch(r"/repos/([^/]+)/([^/]+)/tags", path):
        page = int(query.get("page", ["1"])[0])
        nxt = RECORDED / "github" / f"{m.group(1)}-{m.group(2)}-tags-page{page + 1}.json"
        if nxt.is_file():
            headers["Link"] = f'<{state.base}{path}?per_page=100&page={page + 1}>; rel="next"'
    return headers


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up (timeout test) is expected, not an error to print


@contextmanager
def serve() -> Iterator[Upstream]:
    state = Upstream()
    server = _Server(("127.0.0.1", 0), _handler(state))
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
