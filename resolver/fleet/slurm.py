"""Gather probe reports from a Slurm cluster: ``srun`` runs ``rocm-vllm probe --json`` once on
every node of a partition or node list (one task per node) and each node's answer is read back.

Nodes the controller reports down, drained or not responding are not asked; they are listed with
their state. A node whose task prints nothing usable is listed with what it printed on stderr.
Everything runs under one time limit; a node that has not answered by then is listed as such.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from resolver import bounded, capture
from resolver.errors import InputError, SlurmError, UsageError
from resolver.fleet import hostlist
from resolver.fleet.reports import NodeReport, report_from_json
from resolver.safety import is_safe, shown

MARKER = "@rocm-vllm-node "
# Every task first names the node it runs on (slurmd sets SLURMD_NODENAME), then runs the probe,
# under coreutils' timeout where the node has it ($0 is the per-task limit in seconds), so a hung
# probe ends its own task and srun returns in time.
_WRAPPER = (
    f'printf "{MARKER}%s\\n" "$SLURMD_NODENAME"; '
    'if command -v timeout >/dev/null 2>&1; then exec timeout -k 5 "$0" "$@"; fi; exec "$@"'
)
TIMED_OUT = 124  # timeout(1)'s exit status
_EXITED_RE = re.compile(r"srun: error: (\S+): tasks? [0-9,\-]+: Exited with exit code (\d+)")
DEFAULT_PROBE = ("rocm-vllm", "probe", "--json")
MAX_TIMEOUT = 86_400.0  # --timeout: a day
SINFO_LIMIT = 16 * capture.MiB  # sinfo -N for 100,000 nodes is a few MiB
SRUN_LIMIT = 256 * capture.MiB  # every node's report (a few KiB each) for a large partition
SRUN_LINE = 1024  # srun --label cuts a task's output lines at this many bytes
_STATE_RE = re.compile(r"[a-z_]{1,16}[*~#!%$@^-]*")
# Node states in which srun cannot run a task (sinfo %t short forms; "*" = not responding).
_UNUSABLE = (
    "down",
    "drain",
    "drng",
    "fail",
    "failg",
    "maint",
    "futr",
    "futu",
    "inval",
    "boot",
    "pow_dn",
    "powr_dn",
    "unk",
)


@dataclass(frozen=True, slots=True)
class Target:
    nodes: tuple[str, ...]  # every node asked about, in order
    states: dict[str, str]  # node -> sinfo state
    partition: str | None


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SlurmError(
            f"{name} is not on PATH",
            hint="run on a Slurm login node, or install Slurm's client tools "
            "(Debian: slurm-client)",
        )
    return path


def _run(args: Sequence[str], env: Mapping[str, str] | None, timeout: float) -> capture.Captured:
    try:
        run = capture.run(args, env=env, timeout=timeout, limit=SINFO_LIMIT)
    except OSError as exc:
        raise SlurmError(
            f"{Path(args[0]).name} could not start ({exc.strerror or type(exc).__name__})",
            hint="check the Slurm client tools on PATH",
        ) from None
    if run.timed_out:
        raise SlurmError(
            f"{Path(args[0]).name} did not answer within {timeout:.0f}s",
            hint="check that slurmctld is up (`sinfo`)",
        )
    if run.truncated:
        raise SlurmError(
            f"{Path(args[0]).name} printed more than {SINFO_LIMIT // capture.MiB} MiB",
            hint="give a smaller partition or node list",
        )
    return run


def check_timeout(timeout: float) -> float:
    """``--timeout``: a finite number of seconds, more than 0 and at most a day."""
    if not math.isfinite(timeout) or not 0 < timeout <= MAX_TIMEOUT:
        raise UsageError(
            f"--timeout {timeout:g} is not a number of seconds above 0 and at most "
            f"{MAX_TIMEOUT:.0f}",
            hint="give seconds, e.g. --timeout 120",
        )
    return timeout


def resolve_target(
    target: str, *, env: Mapping[str, str] | None = None, timeout: float = 30
) -> Target:
    """``target`` is a partition name or a node list; a name that is both is refused."""
    run = _run([_tool("sinfo"), "-h", "-N", "-o", "%N|%P|%t"], env, timeout)
    if run.returncode != 0:
        raise SlurmError(
            f"sinfo failed: {run.stderr.strip() or run.returncode}",
            hint="check that slurmctld is up and SLURM_CONF points at its slurm.conf",
        )
    states: dict[str, str] = {}
    partitions: dict[str, list[str]] = {}
    odd: list[str] = []
    for line in run.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3:
            continue
        node, part, state = parts
        # sinfo's answer becomes srun arguments, file names and batch scripts: a name that is
        # not a host name (or a partition or state that is not plain) is left out and said.
        if not (
            is_safe("node_name", node)
            and is_safe("partition", part.rstrip("*"))
            and _STATE_RE.fullmatch(state)
        ):
            odd.append(node)
            continue
        states[node] = state
        partitions.setdefault(part.rstrip("*"), []).append(node)
    if odd and not states:
        raise SlurmError(
            "sinfo listed no node with a usable name",
            hint="check sinfo's output (`sinfo -h -N -o '%N|%P|%t'`)",
        )
    if target.startswith("partition="):
        name = target.split("=", 1)[1]
        if name not in partitions:
            raise InputError(
                f"--slurm {target}: no such partition",
                hint=f"partitions: {', '.join(sorted(partitions)) or 'none'}",
            )
        return Target(tuple(dict.fromkeys(partitions[name])), states, name)
    is_partition = target in partitions
    named_nodes = hostlist.expand(target)
    if not named_nodes:
        raise UsageError(
            f"--slurm {target!r} names no node", hint="give a partition or a node list, e.g. gpu"
        )
    if is_partition and all(n in states for n in named_nodes):
        raise UsageError(
            f"--slurm {target}: names both a partition and a node",
            hint=f"say which: --slurm partition={target}, or the node as {target},",
        )
    if is_partition:
        return Target(tuple(dict.fromkeys(partitions[target])), states, target)
    unknown = [n for n in named_nodes if n not in states]
    if unknown:
        raise InputError(
            f"--slurm {target}: neither a partition nor nodes Slurm knows "
            f"({hostlist.compress(unknown)})",
            hint=f"partitions: {', '.join(sorted(partitions)) or 'none'}; nodes: "
            f"{hostlist.compress(states) or 'none'}",
        )
    # srun without --partition asks the default partition: name one that holds every node.
    holding = [p for p, members in partitions.items() if set(named_nodes) <= set(members)]
    return Target(tuple(named_nodes), states, holding[0] if len(holding) == 1 else None)


def _usable(state: str) -> bool:
    return not state.endswith("*") and not any(state.startswith(s) for s in _UNUSABLE)


def srun_args(
    nodes: Sequence[str], probe: Sequence[str], *, timeout: float, partition: str | None
) -> list[str]:
    minutes = max(1, int(timeout // 60) + 1)
    args = [
        _tool("srun"),
        f"--nodelist={hostlist.compress(nodes)}",
        f"--nodes={len(nodes)}",
        f"--ntasks={len(nodes)}",
        "--ntasks-per-node=1",
        "--label",
        "--kill-on-bad-exit=0",
        f"--immediate={max(1, int(timeout))}",
        f"--time={minutes}",
        "--job-name=rocm-vllm-probe",
    ]
    if partition:
        args.append(f"--partition={partition}")
    task_limit = str(max(1, int(timeout) - 5))
    return [*args, "sh", "-c", _WRAPPER, task_limit, *probe]


def _joined(lines: Sequence[str]) -> str:
    """A task's lines as the text it printed. ``srun --label`` cuts output lines at 1024 bytes
    and labels each piece: a piece of exactly that length continues on the next line."""
    parts: list[str] = []
    for line in lines:
        parts.append(line)
        parts.append("" if len(line.encode("utf-8", "replace")) == SRUN_LINE else "\n")
    return "".join(parts).strip()


def _by_task(text: str) -> dict[str, list[str]]:
    tasks: dict[str, list[str]] = {}
    for line in text.splitlines():
        label, sep, rest = line.partition(": ")
        if sep and label.strip().isdigit():
            tasks.setdefault(label.strip(), []).append(rest)
    return tasks


def parse_output(
    stdout: str, stderr: str, nodes: Sequence[str], *, timeout: float | None = None
) -> list[NodeReport]:
    """The reports in ``srun --label`` output: each task's lines after its node marker."""
    out_tasks, err_tasks = _by_task(stdout), _by_task(stderr)
    asked = set(nodes)
    exits = {m.group(1): int(m.group(2)) for m in _EXITED_RE.finditer(stderr)}
    answered: dict[str, NodeReport] = {}
    claimed: dict[str, int] = {}
    for task, lines in out_tasks.items():
        if not lines or not lines[0].startswith(MARKER):
            continue
        name = lines[0][len(MARKER) :].strip()
        if name not in asked:  # a task names only a node it was sent to; anything else is noise
            continue
        if name in claimed:
            claimed[name] += 1
            continue
        claimed[name] = 1
        body = _joined(lines[1:])
        source = f"srun:{name}"
        # A task's stderr is the node's text: escaped before it reaches a reason or a terminal.
        errors = shown(" | ".join(e.strip() for e in err_tasks.get(task, []) if e.strip())[-300:])
        if exits.get(name) == TIMED_OUT:
            limit = f" within {max(1, int(timeout or 0) - 5)}s" if timeout else ""
            answered[name] = NodeReport(
                name=name, source=source, reason=f"the probe did not answer{limit}; it was stopped"
            )
            continue
        if not body:
            status = f" (exit {exits[name]})" if name in exits else ""
            answered[name] = NodeReport(
                name=name,
                source=source,
                reason=f"the probe printed nothing{status}" + (f": {errors}" if errors else ""),
            )
            continue
        try:
            data = bounded.loads_json(body)
        except ValueError as exc:
            why = f"the probe's output is {bounded.json_failure(exc, 'a usable report')}"
            answered[name] = NodeReport(
                name=name, source=source, reason=why + (f": {errors}" if errors else "")
            )
            continue
        answered[name] = report_from_json(data, name=name, source=source, origin=source)
    general = " | ".join(
        line.strip()
        for line in stderr.splitlines()
        if line.strip()
        and not line.split(":", 1)[0].strip().isdigit()
        and not _EXITED_RE.match(line.strip())
    )
    for name, count in claimed.items():
        if count > 1:  # slurmd names each task's node: two claims mean a task lied about its own
            answered[name] = NodeReport(
                name=name,
                source=f"srun:{name}",
                reason=f"{count} tasks answered as this node; none is trusted",
            )
    reports = []
    for node in nodes:
        if node in answered:
            reports.append(answered[node])
        else:
            why = "no answer from its task" + (
                f" (srun: {shown(general[-300:])})" if general else ""
            )
            reports.append(NodeReport(name=node, source=f"srun:{node}", reason=why))
    return reports


def gather(
    target: str,
    *,
    probe: Sequence[str] = DEFAULT_PROBE,
    timeout: float = 120,
    env: Mapping[str, str] | None = None,
) -> list[NodeReport]:
    """Every node of ``target`` (a partition or node list), probed through one ``srun``."""
    check_timeout(timeout)
    if not probe:
        raise UsageError(
            "--probe-command is empty", hint="e.g. --probe-command 'rocm-vllm probe --json'"
        )
    resolved = resolve_target(target, env=env)
    usable = [n for n in resolved.nodes if _usable(resolved.states.get(n, "unk"))]
    skipped = [
        NodeReport(
            name=n,
            source=f"srun:{n}",
            reason=f"Slurm state {resolved.states.get(n, 'unknown')}: not asked",
        )
        for n in resolved.nodes
        if n not in usable
    ]
    if not usable:
        return skipped
    args = srun_args(usable, probe, timeout=timeout, partition=resolved.partition)
    environment = dict(env if env is not None else os.environ)
    stdout, stderr, code = _srun(args, environment, timeout + 15)
    if code not in (None, 0) and MARKER not in stdout:
        # No task ever started: the allocation itself failed (srun's own message says why).
        said = [line.strip() for line in stderr.splitlines() if line.strip()]
        raise SlurmError(
            f"srun failed before any node answered (exit {code}): "
            f"{shown((said or ['no message'])[-1])[:300]}",
            hint="check the partition, the node states (`sinfo`) and your limits "
            "(`sacctmgr show assoc user=$USER`)",
        )
    reports = parse_output(stdout, stderr, usable, timeout=timeout)
    order = {n: i for i, n in enumerate(resolved.nodes)}
    return sorted(reports + skipped, key=lambda r: order.get(r.name, len(order)))


def _srun(args: list[str], env: dict[str, str], limit: float) -> tuple[str, str, int | None]:
    """Run srun; past ``limit`` seconds it gets SIGINT twice (srun's "cancel the step"), then
    SIGKILL (its whole process group: a site wrapper's children too)."""
    try:
        run = capture.run(args, env=env, timeout=limit, limit=SRUN_LIMIT, polite=signal.SIGINT)
    except OSError as exc:
        raise SlurmError(
            f"srun could not start ({exc.strerror or type(exc).__name__})",
            hint="check the Slurm client tools on PATH",
        ) from None
    err = run.stderr
    if run.timed_out:
        err += f"\nsrun did not finish within {limit:g}s"
    if run.truncated:
        err += f"\nsrun printed more than {SRUN_LIMIT // capture.MiB} MiB; the rest was dropped"
    return run.stdout, err, run.returncode


def probe_command(text: str | None) -> tuple[str, ...]:
    if text is None:
        return DEFAULT_PROBE
    try:
        words = tuple(shlex.split(text))
    except ValueError as exc:
        raise UsageError(
            f"--probe-command {text!r}: {exc}", hint="quote it as a shell command line"
        ) from None
    if not words:
        raise UsageError(
            "--probe-command is empty", hint="e.g. --probe-command 'rocm-vllm probe --json'"
        )
    return words
