"""Run a scheduler or cluster tool (sinfo, srun, kubectl, a credential helper) with a bounded wait
and bounded output.

``subprocess.run(capture_output=True)`` reads everything into memory and, after a timeout kill,
waits for the pipes to close: a tool that prints gigabytes, or a site wrapper whose child keeps
the pipe open, would outlive every limit. Here the tool runs in its own session (the whole
process group is signalled), both pipes are read in this thread with ``selectors`` against one
deadline, at most ``limit`` bytes of each are kept (the rest is read and dropped), and the pipes
are closed by the time the call returns, whoever still holds their other end. Output is decoded
as UTF-8 with replacement: a tool's bytes are never a crash.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MiB = 1024 * 1024
DEFAULT_LIMIT = 64 * MiB  # a 10,000-node srun or kubectl answer is tens of MiB
GRACE = 10.0  # seconds between the polite stop (SIGINT, srun's "cancel the step") and SIGKILL
DRAIN = 2.0  # seconds to read what is left after the process ended or was killed


@dataclass(frozen=True, slots=True)
class Captured:
    returncode: int | None  # None: it was killed at the deadline
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool  # a stream passed ``limit`` bytes; the rest was discarded


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, sig)


class _Reader:
    """Both pipes, read until EOF or a deadline, each kept up to ``limit`` bytes."""

    def __init__(self, proc: subprocess.Popen[bytes], limit: int) -> None:
        assert proc.stdout is not None
        assert proc.stderr is not None
        self.limit = limit
        self.data = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
        self.order = list(self.data)
        self.truncated = False
        self.sel = selectors.DefaultSelector()
        for fd in self.data:
            os.set_blocking(fd, False)
            self.sel.register(fd, selectors.EVENT_READ)

    @property
    def open(self) -> bool:
        return bool(self.sel.get_map())

    def until(self, deadline: float, proc: subprocess.Popen[bytes] | None = None) -> None:
        """Read until both pipes reach EOF, ``deadline`` passes, or ``proc`` (when given) has
        ended and its pipes are drained for ``DRAIN`` seconds."""
        ended_at: float | None = None
        while self.open:
            now = time.monotonic()
            if now >= deadline:
                return
            if proc is not None and ended_at is None and proc.poll() is not None:
                ended_at = now  # its pipes may stay open (a child holds them): drain, then stop
            if ended_at is not None and now - ended_at >= DRAIN:
                return
            for key, _ in self.sel.select(timeout=min(0.2, deadline - now)):
                self._read(int(key.fd))

    def _read(self, fd: int) -> None:
        try:
            chunk = os.read(fd, 64 * 1024)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.sel.unregister(fd)
            return
        buf = self.data[fd]
        room = self.limit - len(buf)
        if room > 0:
            buf += chunk[:room]
        if len(chunk) > room:
            self.truncated = True

    def close(self) -> None:
        self.sel.close()

    def text(self, index: int, errors: str = "replace") -> str:
        return bytes(self.data[self.order[index]]).decode("utf-8", errors=errors)


def run(
    args: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    limit: int = DEFAULT_LIMIT,
    polite: int | None = None,
    stdin: bytes | None = None,
    errors: str = "replace",
) -> Captured:
    """Run ``args`` (``stdin`` written to it, else no input); past ``timeout`` seconds the
    process group gets ``polite`` (twice, when given), then SIGKILL after ``GRACE`` seconds.
    Its output is decoded as UTF-8 with ``errors`` (``surrogateescape`` keeps the bytes).
    Raises OSError when it cannot start."""
    proc = subprocess.Popen(
        list(args),
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        if stdin is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):  # a helper that exits without reading its input
                proc.stdin.write(stdin)  # a server name: far below the pipe's buffer
            with contextlib.suppress(OSError):
                proc.stdin.close()
        reader = _Reader(proc, limit)
        try:
            deadline = time.monotonic() + timeout
            reader.until(deadline, proc)
            try:
                # Its pipes can reach EOF a moment before it has exited: wait for it (up to the
                # deadline) rather than take "not reaped yet" for "still running".
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            if timed_out:
                if polite is not None:
                    for _ in range(2):
                        _signal_group(proc, polite)
                    reader.until(time.monotonic() + GRACE, proc)
                if proc.poll() is None:
                    _signal_group(proc, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=GRACE)
            reader.until(time.monotonic() + DRAIN)
        finally:
            reader.close()
        return Captured(
            returncode=None if timed_out else proc.returncode,
            stdout=reader.text(0, errors),
            stderr=reader.text(1, errors),
            timed_out=timed_out,
            truncated=reader.truncated,
        )
    finally:
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if proc.poll() is None:  # killed above; reap it so no zombie or warning is left
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)
