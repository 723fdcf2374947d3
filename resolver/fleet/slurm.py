"""Gather probe reports from a Slurm cluster: ``srun`` runs ``rocm-vllm probe --json`` once on
every node of a partition or node list (one task per node) and each node's answer is read back.

Nodes the controller reports down, drained or not responding are not asked; they are listed with
their state. A node whose task prints nothing usable is listed with what it printed on stderr.
Everything runs under one time limit; a node that has not answered by then is listed as such.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from resolver.errors import InputError, SlurmError, UsageError
from resolver.fleet import hostlist
from resolver.fleet.reports import NodeReport, report_from_json

MARKER = "@rocm-vllm-node "
# Every task first names the node it runs on (slurmd sets SLURMD_NODENAME), then runs the probe.
_WRAPPER = f'printf "{MARKER}%s\\n" "$SLURMD_NODENAME"; exec "$@"'
DEFAULT_PROBE = ("rocm-vllm", "probe", "--json")
# Node states in which srun cannot run a task (sinfo %t short forms; "*" = not responding).
_UNUSABLE = ("down", "drain", "drng", "fail", "failg", "maint", "futr", "futu", "inval", "boot", "pow_dn", "powr_dn", "unk")


@dataclass(frozen=True, slots=True)
class Target:
    nodes: tuple[str, ...]  # every node asked about, in order
    states: dict[str, str]  # node -> sinfo state
    partition: str | None


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SlurmError(f"{name} is not on PATH", hint="run on a Slurm login node, or install Slurm's client tools (Debian: slurm-client)")
    return path


def _run(args: Sequence[str], env: Mapping[str, str] | None, timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(args), env=dict(env) if env is not None else None, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{args[0]} did not answer within {timeout:.0f}s", hint="check that slurmctld is up (`sinfo`)") from None


def resolve_target(target: str, *, env: Mapping[str, str] | None = None, timeout: float = 30) -> Target:
    """``target`` is a partition name or a node list; a name that is both is refused."""
    run = _run([_tool("sinfo"), "-h", "-N", "-o", "%N|%P|%t"], env, timeout)
    if run.returncode != 0:
        raise SlurmError(f"sinfo failed: {run.stderr.strip() or run.returncode}", hint="check that slurmctld is up and SLURM_CONF points at its slurm.conf")
    states: dict[str, str] = {}
    partitions: dict[str, list[str]] = {}
    for line in run.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3:
            continue
        node, part, state = parts
        states[node] = state
        partitions.setdefault(part.rstrip("*"), []).append(node)
    if target.startswith("partition="):
        name = target.split("=", 1)[1]
        if name not in partitions:
            raise InputError(f"--slurm {target}: no such partition", hint=f"partitions: {', '.join(sorted(partitions)) or 'none'}")
        return Target(tuple(dict.fromkeys(partitions[name])), states, name)
    is_partition = target in partitions
    named_nodes = hostlist.expand(target)
    if is_partition and all(n in states for n in named_nodes):
        raise UsageError(f"--slurm {target}: names both a partition and a node", hint=f"say which: --slurm partition={target}, or the node as {target},")
    if is_partition:
        return Target(tuple(dict.fromkeys(partitions[target])), states, target)
    unknown = [n for n in named_nodes if n not in states]
    if unknown:
        raise InputError(
            f"--slurm {target}: neither a partition nor nodes Slurm knows ({hostlist.compress(unknown)})",
            hint=f"partitions: {', '.join(sorted(partitions)) or 'none'}; nodes: {hostlist.compress(states) or 'none'}",
        )
    return Target(tuple(named_nodes), states, None)


def _usable(state: str) -> bool:
    return not state.endswith("*") and not any(state.startswith(s) for s in _UNUSABLE)


def srun_args(nodes: Sequence[str], probe: Sequence[str], *, timeout: float, partition: str | None) -> list[str]:
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
    return [*args, "sh", "-c", _WRAPPER, "rocm-vllm-probe", *probe]


def _by_task(text: str) -> dict[str, list[str]]:
    tasks: dict[str, list[str]] = {}
    for line in text.splitlines():
        label, sep, rest = line.partition(": ")
        if sep and label.strip().isdigit():
            tasks.setdefault(label.strip(), []).append(rest)
    return tasks


def parse_output(stdout: str, stderr: str, nodes: Sequence[str]) -> list[NodeReport]:
    """The reports in ``srun --label`` output: each task's lines after its node marker."""
    out_tasks, err_tasks = _by_task(stdout), _by_task(stderr)
    answered: dict[str, NodeReport] = {}
    for task, lines in out_tasks.items():
        if not lines or not lines[0].startswith(MARKER):
            continue
        name = lines[0][len(MARKER):].strip()
        body = "\n".join(lines[1:]).strip()
        source = f"srun:{name}"
        errors = " | ".join(e.strip() for e in err_tasks.get(task, []) if e.strip())[-300:]
        if not body:
            answered[name] = NodeReport(name=name, source=source, reason="the probe printed nothing" + (f": {errors}" if errors else ""))
            continue
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            answered[name] = NodeReport(
                name=name, source=source,
                reason=f"the probe's output is not JSON (line {exc.lineno})" + (f": {errors}" if errors else ""),
            )
            continue
        answered[name] = report_from_json(data, name=name, source=source)
    general = " | ".join(line.strip() for line in stderr.splitlines() if line.strip() and not line.split(":", 1)[0].strip().isdigit())
    reports = []
    for node in nodes:
        if node in answered:
            reports.append(answered[node])
        else:
            why = "no answer from its task" + (f" (srun: {general[-300:]})" if general else "")
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
    if timeout <= 0:
        raise UsageError(f"--timeout {timeout:g} must be positive", hint="give seconds, e.g. --timeout 120")
    if not probe:
        raise UsageError("--probe-command is empty", hint="e.g. --probe-command 'rocm-vllm probe --json'")
    resolved = resolve_target(target, env=env)
    usable = [n for n in resolved.nodes if _usable(resolved.states.get(n, "unk"))]
    skipped = [
        NodeReport(name=n, source=f"srun:{n}", reason=f"Slurm state {resolved.states.get(n, 'unknown')}: not asked")
        for n in resolved.nodes
        if n not in usable
    ]
    if not usable:
        return skipped
    args = srun_args(usable, probe, timeout=timeout, partition=resolved.partition)
    environment = dict(env if env is not None else os.environ)
    try:
        run = subprocess.run(args, env=environment, capture_output=True, text=True, timeout=timeout + 15, check=False)
        stdout, stderr = run.stdout, run.stderr
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        stderr = (exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")) + f"\ntimed out after {timeout:g}s"
    reports = parse_output(stdout, stderr, usable)
    order = {n: i for i, n in enumerate(resolved.nodes)}
    return sorted(reports + skipped, key=lambda r: order.get(r.name, len(order)))


def probe_command(text: str | None) -> tuple[str, ...]:
    if text is None:
        return DEFAULT_PROBE
    try:
        words = tuple(shlex.split(text))
    except ValueError as exc:
        raise UsageError(f"--probe-command {text!r}: {exc}", hint="quote it as a shell command line") from None
    if not words:
        raise UsageError("--probe-command is empty", hint="e.g. --probe-command 'rocm-vllm probe --json'")
    return words
