"""A total deadline for one network operation, whatever the server's pacing.

``requests`` only bounds each socket read: a server that drips one byte every 2 s never trips a
30 s read timeout and holds a request for hours. ``within(seconds)`` arms a real-time timer
(``SIGALRM``) that interrupts whatever the operation is blocked in (connect, a header line, a body
read, a retry's sleep) with ``DeadlineExceeded``; callers turn that into a ``RegistryError``.

Signals reach only the main thread: elsewhere (a library caller's worker thread) ``within`` is a
no-op and the per-read timeouts and size caps still apply. An outer deadline that ends sooner is
kept; the outer timer is restored when an inner one ends.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Final

ENV: Final = "ROCM_VLLM_HTTP_DEADLINE"


class DeadlineExceeded(Exception):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"not finished within {seconds:g} s")
        self.seconds = seconds


def configured(default: float) -> float:
    """``ROCM_VLLM_HTTP_DEADLINE`` (seconds, > 0) when set to a number, else ``default``."""
    raw = os.environ.get(ENV, "").strip()
    try:
        value = float(raw) if raw and len(raw) < 16 and raw.isascii() else 0.0
    except ValueError:
        value = 0.0
    return value if 0 < value < 86400 else default


@contextmanager
def within(seconds: float) -> Iterator[None]:
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or seconds <= 0:
        yield
        return
    outer_left, _ = signal.getitimer(signal.ITIMER_REAL)
    if outer_left and outer_left <= seconds:
        yield  # an enclosing deadline ends first: it is the one that fires
        return

    def _expired(signum: int, frame: FrameType | None) -> None:
        raise DeadlineExceeded(seconds)

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left:
            signal.setitimer(signal.ITIMER_REAL, max(0.001, outer_left - (time.monotonic() - started)))
