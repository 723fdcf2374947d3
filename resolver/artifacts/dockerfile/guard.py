"""``dockerfile --guard``: the entrypoint that checks the visible GPUs against the image's
targets (``dockerfiles/common/guard.sh``) before it runs vLLM."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from resolver.artifacts.dockerfile.plan import DockerfilePlan
from resolver.util.errors import UsageError

# `dockerfile --guard`: the entrypoint that checks the visible GPUs against the image's targets
# (dockerfiles/common/guard.sh) before it runs vLLM.
GUARD_PATH: Final = "/usr/local/bin/rocm-vllm-guard"
GUARD_EXIT: Final = 78  # EX_CONFIG, what the guard exits with


def guard_lines(plan: DockerfilePlan, root: Path) -> str:
    """``--guard``: the guard script written into the image line by line (readable here, each
    line shell-quoted), and the gfx list it checks against."""
    if not plan.guard:
        return ""
    import shlex

    try:
        script = (root / "common" / "guard.sh").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(
            f"the guard script common/guard.sh is missing from {root}",
            hint="reinstall rocm-vllm-resolver",
        ) from None
    # Every line in single quotes, even a bare word: shellcheck reads an unquoted `fi` or `done`
    # argument as a misplaced keyword.
    lines = script.rstrip("\n").split("\n")
    quoted = " \\\n        ".join(
        f"'{line}'" if "'" not in line else shlex.quote(line) for line in lines
    )
    return (
        "\n# The entrypoint guard (rocm-vllm dockerfile --guard): vLLM starts only when every GPU\n"
        "# it will use (after ROCR_/HIP_VISIBLE_DEVICES) is one of ROCM_VLLM_GFX; else one line\n"
        "# and exit 78.\n"
        "# hadolint ignore=SC2016\n"
        f"RUN printf '%s\\n' \\\n        {quoted} \\\n"
        f"    > {GUARD_PATH} \\\n"
        f"    && chmod 0755 {GUARD_PATH}\n"
        f'ENV ROCM_VLLM_GFX="{";".join(plan.gfx)}"'
    )
