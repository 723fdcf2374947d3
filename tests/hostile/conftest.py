"""Helpers for the hostile-input suite: run the CLI in-process and check the promises every run
keeps (a documented exit code, no traceback, bounded time), and a loopback HTTP server whose
answers a test scripts byte by byte.

Hypothesis runs with bounded examples and no per-example deadline of its own: each test asserts
the time bounds that matter (10 s per run, well under a second for a parser)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "hostile",
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
HOSTILE = settings.get_profile("hostile")

# docs/exit-codes.md: 0-5, and 70 for an internal error (a bug: never expected in this suite).
DOCUMENTED = frozenset({0, 1, 2, 3, 4, 5, 70})
MAX_RUN_SECONDS = 10.0


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    seconds: float
    argv: list[str]

    def __str__(self) -> str:
        argv = [a if len(a) < 120 else f"{a[:60]}...({len(a)} chars)" for a in self.argv]
        return (
            f"{argv!r} -> exit {self.code} in {self.seconds:.2f}s\nstdout: {self.out[-800:]}\n"
            f"stderr: {self.err[-800:]}"
        )


def cli(argv: list[str], *, env: dict[str, str] | None = None) -> Outcome:
    """``rocm-vllm ARGV`` in this process, through the console script's ``main`` (the path a user
    takes: click usage errors, ResolverError, and the crash handler)."""
    from resolver.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    started = time.monotonic()
    with (
        mock.patch.dict(os.environ, env or {}),
        mock.patch.object(sys, "argv", ["rocm-vllm", *argv]),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return Outcome(code, out.getvalue(), err.getvalue(), time.monotonic() - started, argv)


def assert_clean(o: Outcome, allowed: frozenset[int] = DOCUMENTED - {70}) -> None:
    """The promises of docs/exit-codes.md for one run."""
    assert o.code in allowed, str(o)
    assert "Traceback" not in o.err and "Traceback" not in o.out, str(o)
    assert o.seconds < MAX_RUN_SECONDS, str(o)
    if o.code in (2, 3, 4, 5):
        lines = [line for line in o.err.splitlines() if line.strip()]
        assert lines and lines[0].startswith("error: "), str(o)
        assert any(line.startswith("hint: ") for line in lines), str(o)


@pytest.fixture(autouse=True)
def _no_sleep_in_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries back off with time.sleep: the hostile suite never waits for them."""
    from resolver.artifacts import registry
    from resolver.refresh import http

    slept: list[float] = []
    monkeypatch.setattr(registry, "_sleep", slept.append, raising=False)
    monkeypatch.setattr(http, "_sleep", slept.append, raising=False)


# --- a scripted loopback HTTP server ------------------------------------------------------------

Script = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class Scripted:
    base: str = ""
    routes: dict[str, Script] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


def reply(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> Script:
    def script(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        if "Content-Length" not in (headers or {}):
            h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    return script


@contextlib.contextmanager
def scripted_server() -> Iterator[Scripted]:
    state = Scripted()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            state.hits.append(f"{self.command} {self.path}")
            script = state.routes.get(path) or state.routes.get("*")
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                (script or reply(404, b"no route"))(self)

        do_HEAD = do_GET

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: object, client_address: object) -> None:
            pass

    server = Server(("127.0.0.1", 0), Handler)
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        server.shutdown()
        server.server_close()


def drip(status: int = 200, every: float = 2.0, stop: threading.Event | None = None) -> Script:
    """Headers at once, then one body byte every ``every`` seconds, for ever (until ``stop``)."""

    def script(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Length", "1000000")
        h.send_header("Content-Type", "application/json")
        h.end_headers()
        h.wfile.flush()
        while not (stop and stop.is_set()):
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(every)

    return script


def endless(stop: threading.Event | None = None) -> Script:
    """A chunked body that never ends, as fast as the client reads."""

    def script(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        chunk = b"[" * 65536
        while not (stop and stop.is_set()):
            h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))

    return script


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path
