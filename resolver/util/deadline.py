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

import gc
import os
import signal
import threading
import time
import warnings
from types import FrameType, TracebackType
from typing import Any, Final, Self

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


class within:
    """Arm the timer for ``seconds`` (see the module docstring)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.armed = False
        self.outer_left = 0.0
        self.started = 0.0
        self.previous: Any = None

    def __enter__(self) -> Self:
        usable = (
            hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
        )
        if not usable or self.seconds <= 0:
            return self
        self.outer_left, _ = signal.getitimer(signal.ITIMER_REAL)
        if self.outer_left and self.outer_left <= self.seconds:
            return self  # an enclosing deadline ends first: it is the one that fires
        seconds = self.seconds

        def _expired(signum: int, frame: FrameType | None) -> None:
            raise DeadlineExceeded(seconds)

        self.started = time.monotonic()
        self.previous = signal.signal(signal.SIGALRM, _expired)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        self.armed = True
        return self

    def __exit__(
        self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self.armed:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)
        if self.outer_left:
            left = self.outer_left - (time.monotonic() - self.started)
            signal.setitimer(signal.ITIMER_REAL, max(0.001, left))
        if isinstance(exc, DeadlineExceeded):
            # The interrupted frames may hold a half-open socket (a connect cut short): drop them
            # now so it is closed here, quietly, not reported as unclosed at a later collection.
            del tb
            seen: BaseException | None = exc
            while seen is not None:
                seen.__traceback__ = None
                seen = seen.__context__
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ResourceWarning)
                gc.collect()
