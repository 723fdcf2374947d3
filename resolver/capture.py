"""Run a scheduler or cluster tool (sinfo, srun, kubectl) with a bounded wait and bounded output.

``subprocess.run(capture_output=True)`` reads everything into memory and, after a timeout kill,
waits for the pipes to close: a tool that prints gigabytes, or a site wrapper whose child keeps
the pipe open, would outlive every limit. Here the tool runs in its own session (the whole
process group is killed), each stream is read by a thread that keeps at most ``limit`` bytes and
discards the rest, and nothing waits past the deadline plus a short grace. Output is decoded as
UTF-8 with replacement: a tool's bytes are never a crash.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

MiB = 1024 * 1024
DEFAULT_LIMIT = 64 * MiB  # a 10,000-node srun or kubectl answer is tens of MiB
GRACE = 10.0  # seconds between the polite stop (SIGINT, srun's "cancel the step") and SIGKILL


@dataclass(frozen=True, slots=True)
class Captured:
    returncode: int | None  # None: it was killed at the deadline
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool  # a stream passed ``limit`` bytes; the rest was discarded


def _drain(stream: IO[bytes], into: bytearray, limit: int, over: list[bool]) -> None:
    with contextlib.suppress(OSError, ValueError):
        while chunk := stream.read1(64 * 1024):  # type: ignore[attr-defined]
            room = limit - len(into)
            if room > 0:
                into += chunk[:room]
            if len(chunk) > room:
                over[0] = True


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(OSError, ValueError):
        proc.stdin.write(data)
        proc.stdin.close()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, sig)


def run(
    args: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    limit: int = DEFAULT_LIMIT,
    polite: int | None = None,
    stdin: bytes | None = None,
) -> Captured:
    """Run ``args`` (``stdin`` written to it, else no input); past ``timeout`` seconds the
    process group gets ``polite`` (twice, when given), then SIGKILL after ``GRACE`` seconds.
    Raises OSError when it cannot start."""
    proc = subprocess.Popen(
        list(args),
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    out, err = bytearray(), bytearray()
    over = [False]
    assert proc.stdout is not None
    assert proc.stderr is not None
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, out, limit, over), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, err, limit, over), daemon=True),
    ]
    if stdin is not None:
        readers.append(threading.Thread(target=_feed, args=(proc, stdin), daemon=True))
    for t in readers:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        if polite is not None:
            for _ in range(2):
                _signal_group(proc, polite)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=GRACE)
        if proc.poll() is None:
            _signal_group(proc, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=GRACE)
    # A grandchild in another session may still hold a pipe: read what came, then stop waiting.
    end = time.monotonic() + 2.0
    for t in readers:
        t.join(max(0.0, end - time.monotonic()))
    for t, stream in zip(readers[:2], (proc.stdout, proc.stderr), strict=True):
        if not t.is_alive():  # closing under a blocked reader would wait on its lock
            with contextlib.suppress(OSError):
                stream.close()
    return Captured(
        returncode=None if timed_out else proc.returncode,
        stdout=bytes(out).decode("utf-8", errors="replace"),
        stderr=bytes(err).decode("utf-8", errors="replace"),
        timed_out=timed_out,
        truncated=over[0],
    )
