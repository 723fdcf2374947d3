"""The one way the tool writes a time: UTC, whole seconds, ISO 8601 with ``Z``."""

from __future__ import annotations

import datetime as _dt


def now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
