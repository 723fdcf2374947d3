"""Running the ROCm command-line tools a live probe reads when they are on PATH
(``rocm_agent_enumerator``, ``rocm-smi --json``). A tool that is missing, fails to start or hangs
gives None: the probe goes on with what sysfs says."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence

_MAX_OUTPUT = 64 * 1024 * 1024
TIMEOUT = 30.0


def run(
    name: str, args: Sequence[str], env: Mapping[str, str], timeout: float = TIMEOUT
) -> str | None:
    """The tool's stdout (decoded, bounded), or None when it is not on ``env``'s PATH or cannot
    run to completion."""
    path = shutil.which(name, path=env.get("PATH") or "")
    if path is None:
        return None
    try:
        done = subprocess.run(
            [path, *args],
            capture_output=True,
            timeout=timeout,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout[:_MAX_OUTPUT].decode("utf-8", errors="replace")
