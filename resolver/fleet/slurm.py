"""Gather probe reports from a Slurm cluster: ``srun`` runs ``rocm-vllm probe --json`` once on
every node of a partition or node list (one task per node) and each node's answer is read back.

A production partition is rarely all idle, so nodes are asked in steps, not one allocation:
chunks of at most ``CHUNK`` nodes (and never more than the partition's MaxNodes), up to
``PARALLEL`` steps at once, each with ``--immediate`` so that a busy node fails its step at once
instead of after the whole timeout. A step that cannot be allocated is split in halves until the
nodes that block it stand alone; those are reported busy, with srun's reason. Nodes the controller
reports down, drained or not responding are not asked, and fully allocated nodes are reported busy
without asking unless ``wait_busy`` (then each step waits for its nodes within the time limit).
A node whose task prints nothing usable is listed with what it printed on stderr. Everything runs
under one time limit; a node that has not answered by then is listed as such. When no step could
be allocated at all, with one reason, that is one Slurm error (exit 4), named once.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import signal
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from resolver.fleet import hostlist
from resolver.fleet.layout import (
    FEATURE_RE,
    START_RE,
    UNKNOWN_START,
    PartitionLimits,
    Pending,
    SlurmLayout,
)
from resolver.fleet.reports import GatheredWhere, NodeReport, report_from_json
from resolver.util import bounded, capture
from resolver.util.errors import InputError, SlurmError, UsageError
from resolver.util.safety import is_safe, shown

MARKER = "@rocm-vllm-node "
# Every task first names the node it runs on (slurmd sets SLURMD_NODENAME), then runs the probe,
# under coreutils' timeout where the node has it ($0 is the per-task limit in seconds), so a hung
# probe ends its own task and srun returns in time. A probe that ignores SIGTERM is KILLed 5 s
# later and timeout exits 137, as an OOM kill would: one that ends so after its limit exits 124.
_WRAPPER = (
    f'printf "{MARKER}%s\\n" "$SLURMD_NODENAME"; '
    'command -v timeout >/dev/null 2>&1 || exec "$@"; '
    't=$(date +%s); timeout -k 5 "$0" "$@"; s=$?; '
    '[ "$s" -eq 137 ] && [ $(($(date +%s) - t)) -ge "$0" ] && exit 124; exit "$s"'
)
TIMED_OUT = 124  # timeout(1)'s exit status
_EXITED_RE = re.compile(r"srun: error: (\S+): tasks? [0-9,\-]+: Exited with exit code (\d+)")
DEFAULT_PROBE = ("rocm-vllm", "probe", "--json")
MAX_TIMEOUT = 86_400.0  # --timeout: a day
SINFO_LIMIT = 16 * capture.MiB  # sinfo -N for 100,000 nodes is a few MiB
# node, partition (default: *), state, MaxNodes, MaxTime, gres, partition availability (up,
# down, drain, inact), features, and last (it may hold "|") the down or drain reason
SINFO_FORMAT = "%N|%P|%t|%s|%l|%G|%a|%f|%E"
REASON_LIMIT = 120  # characters of a node's down/drain reason shown (an admin's free text)
# `scontrol show reservation --oneliner`: one reservation per line, Key=Value words.
_RESV_RE = re.compile(r"(?:^|\s)(ReservationName|Nodes|State|Flags|StartTime)=(\S*)")
SRUN_LIMIT = 256 * capture.MiB  # every node's report (a few KiB each) for a large partition
SRUN_LINE = 1024  # srun --label cuts a task's output lines at this many bytes
# Lines of one srun step's stdout or stderr read (a step has at most CHUNK tasks, each report a
# few dozen lines): 256 MiB of short lines would otherwise be tens of millions of strings.
SRUN_LINES = 1_000_000
CHUNK = 128  # nodes per srun step at most: one busy node costs its step, not the whole gather
PARALLEL = 8  # srun steps at once (each is a job step the controller schedules)
IMMEDIATE = 2  # seconds a step waits for its allocation when busy nodes are not waited for
# srun's words for an allocation refused because other jobs hold the nodes (ESLURM_NODES_BUSY,
# "Resources temporarily unavailable" and the like), as opposed to a limit or a bad request.
_BUSY_SAID = re.compile(r"busy|temporarily unavailable|insufficient priority", re.IGNORECASE)
# sinfo states whose nodes have no CPU free for a step: busy, not asked unless waited for.
_BUSY = ("alloc", "comp")
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
    partition: str | None  # the one partition that holds every node (named, or the only one)
    # node -> the partitions that hold it (a node may be in several)
    member_of: dict[str, tuple[str, ...]] = field(default_factory=dict)
    limits: dict[str, PartitionLimits] = field(default_factory=dict)
    gpus: dict[str, int] = field(default_factory=dict)  # node -> GPUs its gres declares
    down: dict[str, str] = field(default_factory=dict)  # partition -> availability, when not up
    reasons: dict[str, str] = field(default_factory=dict)  # node -> down/drain reason, shown
    features: dict[str, tuple[str, ...]] = field(default_factory=dict)  # node -> sinfo %f
    reserved: dict[str, str] = field(default_factory=dict)  # node -> its active reservation
    # reservation -> its StartTime and nodes, for each scontrol lists as not started (INACTIVE)
    pending: dict[str, Pending] = field(default_factory=dict)

    @property
    def layout(self) -> SlurmLayout:
        """What sinfo said of the target's nodes (their partitions and gres) and those
        partitions' limits."""
        member_of = {n: self.partitions_of(n) for n in self.nodes}
        held = {p for parts in member_of.values() for p in parts}
        limits = {p: lim for p, lim in self.limits.items() if p in held}
        gpus = {n: self.gpus[n] for n in self.nodes if n in self.gpus}
        features = {n: self.features[n] for n in self.nodes if n in self.features}
        reserved = {n: self.reserved[n] for n in self.nodes if n in self.reserved}
        return SlurmLayout(member_of, limits, gpus, features, reserved, dict(self.pending))

    def partitions_of(self, node: str) -> tuple[str, ...]:
        if self.partition is not None:
            return (self.partition,)
        return self.member_of.get(node, ())

    @property
    def max_minutes(self) -> int | None:
        """The job time limit batch scripts for these nodes must keep within (None: none)."""
        if self.partition is None:
            return None
        return self.limits.get(self.partition, PartitionLimits()).max_minutes


@dataclass(frozen=True, slots=True)
class Gathered:
    """What a gather found: every node's report, and what the batch scripts should ask Slurm
    for (the partition that holds the nodes, its MaxTime)."""

    reports: list[NodeReport]
    partition: str | None = None
    max_minutes: int | None = None
    steps: int = 0  # srun steps run (one per chunk, plus the halves of chunks that could not start)
    layout: SlurmLayout | None = None  # every node's partitions and gres, each partition's limits

    @property
    def where(self) -> GatheredWhere:
        """Where the nodes were found, as a `fleet gather` directory's summary says it too."""
        return GatheredWhere(self.partition, self.max_minutes, self.layout)


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


def _max_nodes(text: str) -> int | None:
    """sinfo ``%s`` (job size in nodes): "1-infinite", "1-16", "4"; None when unlimited."""
    top = text.strip().rsplit("-", 1)[-1]
    return bounded.ascii_int(top, max_digits=7) if top.isdigit() else None


# One gpu entry of sinfo %G: "gpu:4", "gpu:mi300x:8(S:0-1)", "gpu:mi300x:4(IDX:0-3)".
_GRES_GPU_RE = re.compile(r"gpu(?::[A-Za-z0-9_.-]{1,64})?:([0-9]{1,6})(?:\([^()]{0,200}\))?")


def _gres_gpus(text: str) -> int | None:
    """The GPUs a node's gres declares (sinfo ``%G``): the sum of its ``gpu`` entries, 0 for a
    node without one ("(null)", or other gres only); None when sinfo's words are not read."""
    text = text.strip()
    if text in ("", "(null)"):
        return 0
    total = 0
    # Entries are comma-separated, but a socket list may hold commas too: split outside "()".
    for entry in re.split(r",(?![^()]*\))", text):
        if not entry.startswith("gpu"):
            continue
        match = _GRES_GPU_RE.fullmatch(entry)
        if match is None:
            return None
        total += int(match.group(1))
    return total


def minutes_of(text: str) -> int | None:
    """sinfo ``%l`` (MaxTime): "infinite", "10:00" (MM:SS), "4:00:00", "1-00:00:00"; minutes,
    rounded down, None when unlimited or unreadable."""
    text = text.strip()
    days, _, clock = text.rpartition("-") if "-" in text else ("", "", text)
    parts = clock.split(":")
    if not all(p.isdigit() and len(p) <= 4 for p in parts) or not 1 <= len(parts) <= 3:
        return None
    if days and not (days.isdigit() and len(days) <= 4):
        return None
    numbers = [int(p) for p in parts]
    if len(numbers) == 3:
        hours, minutes, _ = numbers
    elif days:  # "D-H" or "D-H:M" (Slurm's forms with days)
        hours, minutes = numbers[0], (numbers[1] if len(numbers) == 2 else 0)
    elif len(numbers) == 2:
        hours, (minutes, _) = 0, numbers
    else:
        hours, minutes = 0, numbers[0]
    return (int(days or 0) * 24 + hours) * 60 + minutes


DEFAULT_JOB_TIME = "04:00:00"


def clock(minutes: int) -> str:
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    return (f"{days}-" if days else "") + f"{hours:02d}:{mins:02d}:00"


def job_time(given: str | None, partition: str | None, max_minutes: int | None) -> str:
    """The batch scripts' ``--time``: as given, else 4 hours, within the partition's MaxTime
    (a job asking for more pends forever with reason PartitionTimeLimit)."""
    if given is None:
        if max_minutes is not None and max_minutes < 240:
            return clock(max_minutes)
        return DEFAULT_JOB_TIME
    asked = minutes_of(given)
    if max_minutes is not None and asked is not None and asked > max_minutes:
        raise UsageError(
            f"--time {given} is longer than partition {partition}'s MaxTime "
            f"({clock(max_minutes)}): the jobs would pend forever (PartitionTimeLimit)",
            hint=f"give --time {clock(max_minutes)} or less, or another --partition",
        )
    return given


@dataclass(slots=True)
class _Sinfo:
    """What ``sinfo -N -o SINFO_FORMAT`` said: each node's state, each partition's nodes,
    limits and availability (when not up), each node's gres GPUs, features and down/drain
    reason, and the nodes whose names are left out (not plain)."""

    states: dict[str, str] = field(default_factory=dict)
    partitions: dict[str, list[str]] = field(default_factory=dict)
    limits: dict[str, PartitionLimits] = field(default_factory=dict)
    gpus: dict[str, int] = field(default_factory=dict)
    down: dict[str, str] = field(default_factory=dict)
    features: dict[str, tuple[str, ...]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    odd: list[str] = field(default_factory=list)


def _features(text: str) -> tuple[str, ...]:
    """sinfo ``%f`` (the node's available features, "a,b", "(null)"): the plain ones."""
    words = [w for w in text.strip().split(",") if w and w != "(null)"]
    return tuple(w for w in words if FEATURE_RE.fullmatch(w))


def _reason(text: str) -> str | None:
    """sinfo ``%E``: an admin's free text ("none" when there is none), bounded and escaped."""
    text = text.strip()
    if not text or text == "none":
        return None
    cut = text[:REASON_LIMIT] + ("..." if len(text) > REASON_LIMIT else "")
    return shown(cut, limit=REASON_LIMIT + 3)


def _read_sinfo(text: str) -> _Sinfo:
    """``sinfo -N -o SINFO_FORMAT`` (or its older, shorter forms) read (``_Sinfo``)."""
    got = _Sinfo()
    for line in text.splitlines():
        parts = line.strip().split("|", 8)
        if len(parts) not in (3, 5, 6, 9):
            continue
        node, part, state = parts[:3]
        # sinfo's answer becomes srun arguments, file names and batch scripts: a name that is
        # not a host name (or a partition or state that is not plain) is left out and said.
        if not (
            is_safe("node_name", node)
            and is_safe("partition", part.rstrip("*"))
            and _STATE_RE.fullmatch(state)
        ):
            got.odd.append(node)
            continue
        got.states[node] = state
        name = part.rstrip("*")
        members = got.partitions.setdefault(name, [])
        if node not in members:
            members.append(node)
        if len(parts) >= 5:
            got.limits[name] = PartitionLimits(_max_nodes(parts[3]), minutes_of(parts[4]))
        if len(parts) >= 6 and (count := _gres_gpus(parts[5])) is not None:
            got.gpus[node] = count
        if len(parts) == 9:
            avail = parts[6].strip().lower()
            if avail != "up" and _STATE_RE.fullmatch(avail):
                got.down[name] = avail
            got.features[node] = _features(parts[7])
            if (why := _reason(parts[8])) is not None:
                got.reasons[node] = why
    return got


def read_reservations(text: str) -> dict[str, str]:
    """``scontrol show reservation --oneliner``: each node of an active reservation -> its name
    (a maintenance reservation's nodes read "maint" in sinfo and are left to it)."""
    held: dict[str, str] = {}
    for line in text.splitlines()[:10_000]:
        words: dict[str, str] = {m.group(1): m.group(2) for m in _RESV_RE.finditer(line)}
        name, nodes = words.get("ReservationName", ""), words.get("Nodes", "")
        if words.get("State") != "ACTIVE" or not is_safe("partition", name):
            continue  # a reservation name is as plain as a partition's, or it is not used
        try:
            members = hostlist.expand(nodes) if nodes and nodes != "(null)" else []
        except (InputError, UsageError, ValueError):
            continue
        for n in members:
            held.setdefault(n, name)
    return held


def read_pending(text: str) -> dict[str, Pending]:
    """``scontrol show reservation --oneliner``: each reservation that has not started (State
    INACTIVE) -> its StartTime and nodes. No srun step runs in one before then, and a job
    submitted to it pends (Reason=Reservation) until it starts."""
    pending: dict[str, Pending] = {}
    for line in text.splitlines()[:10_000]:
        words: dict[str, str] = {m.group(1): m.group(2) for m in _RESV_RE.finditer(line)}
        name, start = words.get("ReservationName", ""), words.get("StartTime", "")
        nodes = words.get("Nodes", "")
        if words.get("State") != "INACTIVE" or not is_safe("partition", name):
            continue
        try:
            members = hostlist.expand(nodes) if nodes and nodes != "(null)" else []
        except (InputError, UsageError, ValueError):
            members = []
        pending[name] = Pending(
            start if START_RE.fullmatch(start) else UNKNOWN_START, tuple(members)
        )
    return pending


def resolve_target(
    target: str,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 30,
) -> Target:
    """``target`` is a partition name or a node list; a name that is both is refused."""
    run = _run([_tool("sinfo"), "-h", "-N", "-o", SINFO_FORMAT], env, timeout)
    if run.returncode != 0:
        raise SlurmError(
            f"sinfo failed: {run.stderr.strip() or run.returncode}",
            hint="check that slurmctld is up and SLURM_CONF points at its slurm.conf",
        )
    got = _read_sinfo(run.stdout)
    states, partitions, limits = got.states, got.partitions, got.limits
    if got.odd and not states:
        raise SlurmError(
            "sinfo listed no node with a usable name",
            hint="check sinfo's output (`sinfo -h -N -o '%N|%P|%t'`)",
        )
    member_of = {n: tuple(p for p, members in partitions.items() if n in members) for n in states}
    # Which reservation holds each node: sinfo's state says "resv" only for some of them (an
    # idle node in a reservation may read "idle"), and a step refused for it costs seconds.
    reserved, pending = _reservations(env, timeout)

    def made(nodes: Sequence[str], partition: str | None) -> Target:
        return Target(
            tuple(nodes),
            states,
            partition,
            member_of,
            limits,
            got.gpus,
            got.down,
            got.reasons,
            got.features,
            reserved,
            pending,
        )

    if target.startswith("partition="):
        name = target.split("=", 1)[1]
        if name not in partitions:
            raise InputError(
                f"--slurm {target}: no such partition",
                hint=f"partitions: {', '.join(sorted(partitions)) or 'none'}",
            )
        return made(partitions[name], name)
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
        return made(partitions[target], target)
    unknown = [n for n in named_nodes if n not in states]
    if unknown:
        raise InputError(
            f"--slurm {target}: neither a partition nor nodes Slurm knows "
            f"({hostlist.compress(unknown)})",
            hint=f"partitions: {', '.join(sorted(partitions)) or 'none'}; nodes: "
            f"{hostlist.compress(states) or 'none'}",
        )
    # srun without --partition asks the default partition: each step names the partitions that
    # hold its nodes; batch scripts get the one partition that holds every node, if one does.
    # (one that is up: a node list is asked through the partitions that can start a job)
    holding = [
        p
        for p, members in partitions.items()
        if set(named_nodes) <= set(members) and p not in got.down
    ]
    return made(list(dict.fromkeys(named_nodes)), holding[0] if len(holding) == 1 else None)


def _reservations(
    env: Mapping[str, str] | None, timeout: float
) -> tuple[dict[str, str], dict[str, Pending]]:
    """Each node of an active reservation -> its name (``read_reservations``), and each
    reservation not yet started -> its StartTime (``read_pending``); nothing when scontrol
    cannot say (the nodes are then asked, and refused as busy)."""
    path = shutil.which("scontrol")
    if path is None:
        return {}, {}
    try:
        run = _run([path, "show", "reservation", "--oneliner"], env, timeout)
    except SlurmError:
        return {}, {}
    if run.returncode != 0:
        return {}, {}
    return read_reservations(run.stdout), read_pending(run.stdout)


def _usable(state: str) -> bool:
    return not state.endswith("*") and not any(state.startswith(s) for s in _UNUSABLE)


def srun_args(
    nodes: Sequence[str],
    probe: Sequence[str],
    *,
    timeout: float,
    partition: str | None,
    immediate: float | None = None,
    reservation: str | None = None,
) -> list[str]:
    """One step: one task on each of ``nodes``; ``partition`` may list several ("a,b"), and
    ``immediate`` is how long the step may wait for its allocation (default: ``timeout``)."""
    # Whole minutes, rounded up: no more than a partition's MaxTime when the limit is that MaxTime
    # (a step asking more is refused as if its nodes were busy).
    minutes = max(1, math.ceil(timeout / 60))
    args = [
        _tool("srun"),
        f"--nodelist={hostlist.compress(nodes)}",
        f"--nodes={len(nodes)}",
        f"--ntasks={len(nodes)}",
        "--ntasks-per-node=1",
        "--label",
        "--kill-on-bad-exit=0",
        f"--immediate={max(1, int(timeout if immediate is None else immediate))}",
        f"--time={minutes}",
        "--job-name=rocm-vllm-probe",
    ]
    if partition:
        args.append(f"--partition={partition}")
    if reservation:
        args.append(f"--reservation={reservation}")
    task_limit = str(max(1, int(timeout) - 5))
    return [*args, "sh", "-c", _WRAPPER, task_limit, *probe]


def _joined(lines: Sequence[str]) -> str:
    """A task's lines as the text it printed. ``srun --label`` cuts output lines at 1024 bytes
    and labels each piece: a piece of exactly that length continues on the next line. The lines
    hold srun's bytes (decoded with surrogateescape), so a character the cut split in two is
    measured as its bytes and whole again once the pieces are joined."""
    parts: list[str] = []
    for line in lines:
        parts.append(line)
        parts.append("" if len(line.encode("utf-8", "surrogateescape")) == SRUN_LINE else "\n")
    text = "".join(parts).strip()
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _text(raw: str) -> str:
    """srun's bytes (decoded with surrogateescape) as text: what is not UTF-8 replaced."""
    return raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _lines(text: str) -> tuple[list[str], bool]:
    """``text``'s first ``SRUN_LINES`` lines, and whether there were more (dropped)."""
    lines = text.split("\n", SRUN_LINES)
    over = len(lines) > SRUN_LINES
    if over:
        lines.pop()  # everything past the bound, in one piece: dropped
    return [line.rstrip("\r") for line in lines], over


def _by_task(lines: list[str]) -> dict[str, list[str]]:
    tasks: dict[str, list[str]] = {}
    for line in lines:
        label, sep, rest = line.partition(": ")
        if sep and label.strip().isdigit():
            tasks.setdefault(label.strip(), []).append(rest)
    return tasks


def parse_output(
    stdout: str, stderr: str, nodes: Sequence[str], *, timeout: float | None = None
) -> list[NodeReport]:
    """The reports in ``srun --label`` output: each task's lines after its node marker (the
    output as srun's bytes decoded with surrogateescape, or plain text)."""
    stderr = _text(stderr)
    # Bounded in lines as well as bytes: 256 MiB of short lines would be tens of millions of
    # strings.
    (out_lines, out_over), (err_lines, err_over) = _lines(stdout), _lines(stderr)
    out_tasks, err_tasks = _by_task(out_lines), _by_task(err_lines)
    asked = set(nodes)
    exits = {
        m.group(1): int(m.group(2)) if len(m.group(2)) <= 6 else -1  # 5,000 digits: no int
        for m in _EXITED_RE.finditer(stderr)
        if m.group(1) in asked  # only the nodes asked: a flood of others is not kept
    }
    answered: dict[str, NodeReport] = {}
    claimed: dict[str, int] = {}
    for task, lines in out_tasks.items():
        if not lines or not lines[0].startswith(MARKER):
            continue
        name = _text(lines[0][len(MARKER) :]).strip()
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
    # srun's own lines (not a task's), the last few: only their last 300 characters are shown.
    tail: deque[str] = deque(maxlen=64)
    tail.extend(
        line.strip()
        for line in err_lines
        if line.strip()
        and not line.split(":", 1)[0].strip().isdigit()
        and not _EXITED_RE.match(line.strip())
    )
    if out_over or err_over:
        tail.append(f"srun printed more than {SRUN_LINES} lines; the rest was dropped")
    general = " | ".join(tail)
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


def _busy(state: str) -> bool:
    return any(state.startswith(b) for b in _BUSY)


@dataclass(frozen=True, slots=True)
class _Step:
    nodes: tuple[str, ...]
    partition: str | None  # "a" or "a,b": every partition that holds all of the step's nodes
    wait: bool = False  # a busy node waited for: its own step, waiting for its allocation
    reservation: str | None = None  # srun --reservation: the step's nodes are in it


@dataclass(frozen=True, slots=True)
class _Outcome:
    reports: list[NodeReport]
    refused: str | None = None  # srun's reason when the step could not be allocated
    halves: tuple[_Step, ...] = ()
    started: bool = False  # the step ran (its tasks answered, or failed on their own)


def _steps(
    resolved: Target, nodes: Sequence[str], *, wait_busy: bool, reservation: str | None = None
) -> list[_Step]:
    """Chunks of nodes that share their partitions (those up) and reservation, none larger than
    CHUNK or than any of those partitions' MaxNodes. A busy node waited for gets a step of its
    own, so that waiting for it holds up no other node. Only the nodes of ``reservation`` are
    asked in it (srun refuses a step in a reservation for a node outside it)."""
    by_parts: dict[tuple[tuple[str, ...], str | None], list[str]] = {}
    steps: list[_Step] = []
    # A reservation scontrol did not list as active is named on every step, as srun's own
    # SLURM_RESERVATION would be: Slurm then says why it refuses.
    known = None if reservation in resolved.reserved.values() else reservation
    for n in nodes:
        parts = tuple(p for p in resolved.partitions_of(n) if p not in resolved.down)
        resv = (
            reservation if reservation and resolved.reserved.get(n, known) == reservation else None
        )
        if wait_busy and _busy(resolved.states.get(n, "")):
            steps.append(_Step((n,), ",".join(parts) or None, wait=True, reservation=resv))
        else:
            by_parts.setdefault((parts, resv), []).append(n)
    for (parts, resv), members in by_parts.items():
        caps = [resolved.limits.get(p, PartitionLimits()).max_nodes for p in parts]
        size = min([CHUNK, *(c for c in caps if c)])
        for i in range(0, len(members), size):
            steps.append(
                _Step(tuple(members[i : i + size]), ",".join(parts) or None, reservation=resv)
            )
    return steps


def _step_minutes(resolved: Target, step: _Step) -> int | None:
    """The MaxTime a step must keep within: the gather's partition's, else the shortest of the
    partitions the step names (a step asking more of one is refused as if its nodes were busy;
    a probe needs seconds)."""
    if resolved.partition is not None or not step.partition:
        return resolved.max_minutes
    caps = [
        top
        for p in step.partition.split(",")
        if (top := resolved.limits.get(p, PartitionLimits()).max_minutes) is not None
    ]
    return min(caps) if caps else None


def _run_step(
    step: _Step,
    probe: Sequence[str],
    env: dict[str, str],
    *,
    deadline: float,
    max_minutes: int | None,
) -> _Outcome:
    remaining = deadline - time.monotonic()
    if remaining < 3:
        return _Outcome(
            [
                NodeReport(
                    name=n, source=f"srun:{n}", reason="not asked: the gather's time ran out"
                )
                for n in step.nodes
            ]
        )
    # Whole seconds: what the task limit and the "did not answer within" reason both say.
    limit = float(round(remaining if max_minutes is None else min(remaining, max_minutes * 60)))
    args = srun_args(
        step.nodes,
        probe,
        timeout=limit,
        partition=step.partition,
        immediate=limit if step.wait else IMMEDIATE,
        reservation=step.reservation,
    )
    stdout, stderr, code = _srun(args, env, limit + 15)
    if code not in (None, 0) and MARKER not in stdout:
        # The step never started: its allocation was refused (a busy node, a limit).
        said = [line.strip() for line in stderr.splitlines() if line.strip()]
        reason = shown((said or [f"srun exited {code}"])[-1])[:300]
        if len(step.nodes) > 1:
            half = len(step.nodes) // 2
            return _Outcome(
                [],
                refused=None if _BUSY_SAID.search(reason) else f"(exit {code}): {reason}",
                halves=(
                    _Step(step.nodes[:half], step.partition, step.wait, step.reservation),
                    _Step(step.nodes[half:], step.partition, step.wait, step.reservation),
                ),
            )
        (name,) = step.nodes
        busy = _BUSY_SAID.search(reason) is not None
        return _Outcome(
            [
                NodeReport(
                    name=name,
                    source=f"srun:{name}",
                    reason=("busy: " if busy else "")
                    + f"srun could not start a step on it ({reason})",
                    busy=busy,
                )
            ],
            refused=None if busy else f"(exit {code}): {reason}",
        )
    return _Outcome(parse_output(stdout, stderr, step.nodes, timeout=limit), started=True)


def _fan_out(
    pool: ThreadPoolExecutor,
    pending: list[_Step],
    probe: Sequence[str],
    env: dict[str, str],
    deadline: float,
    resolved: Target,
    reports: list[NodeReport],
    refusals: list[str],
) -> tuple[int, int]:
    """Run ``pending`` steps, PARALLEL at once, splitting refused ones: (steps, steps started)."""
    steps = started = 0
    running: set[Future[_Outcome]] = set()
    while pending or running:
        while pending and len(running) < PARALLEL:
            step = pending.pop(0)
            steps += 1
            running.add(
                pool.submit(
                    _run_step,
                    step,
                    probe,
                    env,
                    deadline=deadline,
                    max_minutes=_step_minutes(resolved, step),
                )
            )
        done, running = wait(running, return_when=FIRST_COMPLETED)
        for future in done:
            outcome = future.result()
            reports += outcome.reports
            pending += outcome.halves
            started += outcome.started
            if outcome.refused:
                refusals.append(outcome.refused)
    return steps, started


def gather(
    target: str,
    *,
    probe: Sequence[str] = DEFAULT_PROBE,
    timeout: float = 120,
    env: Mapping[str, str] | None = None,
    wait_busy: bool = False,
    reservation: str | None = None,
) -> Gathered:
    """Every node of ``target`` (a partition or node list), probed in bounded-parallel srun steps
    (module docstring); the nodes of ``reservation`` in it, other reserved nodes not asked."""
    check_timeout(timeout)
    if reservation is None:  # srun's own default, which steps then name themselves
        reservation = (env if env is not None else os.environ).get("SLURM_RESERVATION") or None
    check_reservation(reservation)
    if not probe:
        raise UsageError(
            "--probe-command is empty", hint="e.g. --probe-command 'rocm-vllm probe --json'"
        )
    deadline = time.monotonic() + timeout
    resolved = resolve_target(target, env=env)
    if reservation is not None and reservation in resolved.pending:
        # srun would wait for it (or, with --immediate, be refused as busy on every node).
        raise SlurmError(
            f"reservation {reservation} has not started: it starts at "
            f"{resolved.pending[reservation].start} (scontrol show reservation), and no step "
            "runs in it before then, so no node was asked",
            hint="gather again once it has started, or leave out --reservation (and unset "
            "SLURM_RESERVATION) to ask the nodes outside it; `fleet plan DIR --reservation "
            f"{reservation}` then writes scripts that wait for it",
        )
    if resolved.partition in resolved.down:
        raise SlurmError(
            f"partition {resolved.partition} is {resolved.down[resolved.partition]} "
            "(sinfo %a): no job can start in it, so no node was asked",
            hint=f"`scontrol show partition {resolved.partition}`; ask an admin to bring it up, "
            "or give another partition",
        )
    skipped: list[NodeReport] = []
    asked: list[str] = []
    for n in resolved.nodes:
        state = resolved.states.get(n, "unknown")
        if (why := _not_asked(resolved, n, state, reservation)) is not None:
            skipped.append(NodeReport(name=n, source=f"srun:{n}", reason=why))
        elif _busy(state) and not wait_busy:
            skipped.append(
                NodeReport(
                    name=n,
                    source=f"srun:{n}",
                    reason=f"busy: Slurm state {state} (no CPU free for a step); not asked "
                    "(--wait-busy waits for it within --timeout)",
                    busy=True,
                )
            )
        else:
            asked.append(n)
    found = Gathered(skipped, resolved.partition, resolved.max_minutes, layout=resolved.layout)
    if not asked:
        return found
    environment = dict(env if env is not None else os.environ)
    # Each step names its reservation (or none): srun would apply this one to every step.
    environment.pop("SLURM_RESERVATION", None)
    reports: list[NodeReport] = []
    refusals: list[str] = []
    steps = started = 0
    planned = _steps(resolved, asked, wait_busy=wait_busy, reservation=reservation)
    # Steps that wait for busy nodes go last: a step pending in the queue makes Slurm refuse
    # later --immediate steps as busy, so none may wait while the others are asked.
    phases = [[st for st in planned if not st.wait], [st for st in planned if st.wait]]
    with ThreadPoolExecutor(max_workers=PARALLEL, thread_name_prefix="srun") as pool:
        for pending in phases:
            ran, began = _fan_out(
                pool, pending, probe, environment, deadline, resolved, reports, refusals
            )
            steps, started = steps + ran, started + began
    if refusals and not started and not any(r.busy for r in reports) and len(set(refusals)) == 1:
        # No step could start, all for one reason (a QOS or account limit, a partition that is
        # down): one Slurm error, named once, rather than the same reason on every node.
        raise SlurmError(
            f"srun failed before any node answered {refusals[0]}",
            hint="check the partition, the node states (`sinfo`) and your limits "
            "(`sacctmgr show assoc user=$USER`)",
        )
    order = {n: i for i, n in enumerate(resolved.nodes)}
    return Gathered(
        sorted(reports + skipped, key=lambda r: order.get(r.name, len(order))),
        resolved.partition,
        resolved.max_minutes,
        steps,
        resolved.layout,
    )


def check_reservation(name: str | None) -> str | None:
    """``--reservation``: a plain Slurm name (it goes into srun arguments and batch scripts)."""
    if name is not None and not is_safe("partition", name):
        raise UsageError(
            f"--reservation {shown(name)} is not a Slurm reservation name",
            hint="give the name `scontrol show reservation` lists, e.g. --reservation teamx",
        )
    return name


def _not_asked(resolved: Target, node: str, state: str, reservation: str | None) -> str | None:
    """Why ``node`` is not asked (its state, its partitions all down, another reservation), or
    None when it is."""
    if not _usable(state):
        why = resolved.reasons.get(node)
        return f"Slurm state {state}" + (f" (reason: {why})" if why else "") + ": not asked"
    parts = resolved.partitions_of(node)
    if parts and all(p in resolved.down for p in parts):
        said = ", ".join(f"partition {p} is {resolved.down[p]}" for p in parts)
        return f"{said}: not asked"
    held = resolved.reserved.get(node)
    if held is not None and held != reservation:
        return (
            f"reserved: in reservation {held}; not asked (--reservation {held} asks it, if the "
            "reservation admits you)"
        )
    return None


def _srun(args: list[str], env: dict[str, str], limit: float) -> tuple[str, str, int | None]:
    """Run srun; past ``limit`` seconds it gets SIGINT twice (srun's "cancel the step"), then
    SIGKILL (its whole process group: a site wrapper's children too)."""
    try:
        # Bytes kept as surrogates: srun cuts lines at a byte count, maybe inside a character.
        run = capture.run(
            args,
            env=env,
            timeout=limit,
            limit=SRUN_LIMIT,
            polite=signal.SIGINT,
            errors="surrogateescape",
        )
    except OSError as exc:
        raise SlurmError(
            f"srun could not start ({exc.strerror or type(exc).__name__})",
            hint="check the Slurm client tools on PATH",
        ) from None
    err = _text(run.stderr)
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
