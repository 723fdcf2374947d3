"""Node reports: what each node of a fleet said about itself, or why it said nothing.

A report comes from a probe JSON file (``probe --json`` on the node), from ``srun`` fan-out
(``resolver.fleet.slurm``) or from Kubernetes node labels (``resolver.fleet.kube``). A report
with ``node`` is grouped and planned; one without is listed with ``reason`` and left out of the
groups. A node whose facts cannot place it (labels naming a GPU the data does not know) has a
``node`` without gfx targets and an ``unplaced`` reason: it forms an ``unknown`` group, it is not
dropped.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from resolver import __version__
from resolver.data.node import Node, Origin, from_json
from resolver.fleet.layout import SlurmLayout, layout_from_json
from resolver.util import bounded
from resolver.util.errors import InputError
from resolver.util.safety import is_safe, shown

Status = Literal["ok", "unknown", "failed"]
MAX_REPORT = 16 * 1024 * 1024  # a probe report is a few KiB


class NodeReport(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    source: str  # a file path, "srun:NODE" or "kubernetes:NODE"
    node: Node | None = None
    reason: str | None = None  # failed: why there is no node; unknown: why it cannot be placed
    notes: tuple[str, ...] = ()  # listed with the node, e.g. another tool version wrote it
    # What identifies the node to a scheduler: Kubernetes labels of a labelled node, the
    # amd.com resource it offers (``amd.com/gpu`` or a partition resource such as
    # ``amd.com/cpx_nps4``).
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    resource: str = "amd.com/gpu"
    busy: bool = False  # Slurm could not start a step on it (allocated to other jobs)

    @property
    def status(self) -> Status:
        if self.node is None:
            return "failed"
        return "unknown" if self.reason else "ok"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "status": self.status,
            "reason": self.reason,
            "busy": self.busy,
            "notes": list(self.notes),
        }


def tool_notes(data: dict[str, Any]) -> tuple[str, ...]:
    """A report written by another version of this tool is read, and says so."""
    tool = data.get("tool")
    if not isinstance(tool, dict):
        return ()
    version = tool.get("version")
    if isinstance(version, str) and version != __version__:
        return (f"written by rocm-vllm {version}, read by {__version__}: fields may differ",)
    return ()


def node_key(name: str) -> str:
    """What makes two reports the same node: ``N1``, ``n1`` and ``n1.cluster.local`` are one."""
    return name.split(".", 1)[0].lower()


def report_from_json(
    data: Any, *, name: str | None, source: str, origin: str | None = None
) -> NodeReport:
    """One probe JSON object as a report; a shape error, or a value that is not what a probe
    writes, is a failed report, not an exception. The node's name must be a host name
    (``util.safety`` ``node_name``): it becomes a file name, a batch script's node list and a
    manifest's node selector."""
    fallback = shown(name or source)
    source = shown(source)
    if name is not None and not is_safe("node_name", name):
        return NodeReport(
            name=fallback,
            source=source,
            reason="not a usable probe report: its node name is not a host name",
        )
    try:
        node = from_json(data, where=source, origin=origin)
    except InputError as exc:
        return NodeReport(
            name=fallback, source=source, reason=f"not a usable probe report: {exc.message}"
        )
    assert isinstance(data, dict)  # from_json accepted it
    reported = data.get("hostname")
    if isinstance(reported, str) and reported and not is_safe("node_name", reported):
        return NodeReport(
            name=fallback,
            source=source,
            reason=f"not a usable probe report: 'hostname' is {shown(reported)}, not a host name",
        )
    node_name = name or (reported if isinstance(reported, str) and reported else None)
    if node_name is None:
        return NodeReport(
            name=fallback, source=source, reason="not a usable probe report: it names no host"
        )
    notes = tool_notes(data)
    if (
        name
        and isinstance(reported, str)
        and reported
        and reported.split(".")[0] != name.split(".")[0]
    ):
        notes += (f"the report names its host {reported!r}",)
    return NodeReport(name=node_name, source=source, node=node, notes=notes)


def _files(inputs: Sequence[str]) -> list[str]:
    """The report files ``inputs`` name, as path strings (a fleet has 100,000 of them: Path
    objects cost more than reading the files)."""
    files: list[str] = []
    for text in inputs:
        path = Path(text)
        if any(ch in text for ch in "*?["):
            # A user's absolute or relative pattern: Path.glob takes only relative ones.
            # Sorted as paths (by their parts).
            matched = sorted(
                glob.glob(text, recursive=True),  # noqa: PTH207
                key=lambda p: Path(p).parts,
            )
            if not matched:
                raise InputError(
                    f"{text}: the pattern matches no file",
                    hint="quote the pattern, or check the directory",
                )
            files += [str(Path(p)) for p in matched if os.path.isfile(p)]  # noqa: PTH113
        elif path.is_dir():
            # As Path(text) / name spells them ("reports/a.json", "a.json" in "."), by name.
            base = str(path)
            prefix = "" if base == "." else base if base.endswith("/") else base + "/"
            names = sorted(os.listdir(path))  # noqa: PTH208 (names, not Paths: see above)
            found = [prefix + name for name in names if name.endswith(".json")]
            if not found:
                raise InputError(
                    f"{text}: a directory without *.json probe reports",
                    hint="write them with `rocm-vllm probe --json > NODE.json` or "
                    "`rocm-vllm fleet gather`",
                )
            files += found
        elif path.is_file():
            files.append(str(path))
        else:
            raise InputError(
                f"{text}: no such file or directory",
                hint="give probe JSON files, a directory of them, or a glob",
            )
    return files


# What decides a report's plan, read in one pass: msgspec decodes these members straight into
# typed records and skips the rest of the text without building it. They are the fingerprint's
# facts (``fleet.plan.fingerprint``), what the plan reads from every node besides (the driver
# release ``--driver`` fills in, the GPUs' PCI device ids a manifest selects on, the variables
# that choose the GPUs vLLM sees) and the tool version a note names. Each is typed as
# ``node.from_json`` requires it: a member of another type fails the view, and the report is then
# read in full, which says what is wrong with it.
class _PartitionView(msgspec.Struct, frozen=True):
    compute: str | None = None
    memory: str | None = None


class _GpuView(msgspec.Struct, frozen=True):
    gfx: str
    pci_device_id: str | None = None
    partition: _PartitionView | None = None
    integrated: bool = False
    runtime_gfx: str | None = None


class _DeviceView(msgspec.Struct, frozen=True):
    """An entry of ``host.other_devices`` (an NVIDIA node's GPUs), as its fingerprint reads it."""

    vendor: str | None = None
    kind: str | None = None
    name: str | None = None
    pci_device_id: str | None = None
    compute_capability: str | None = None
    mig: bool | None = None
    driver: str | None = None


class _NvidiaView(msgspec.Struct, frozen=True):
    driver: str | None = None


class _HostView(msgspec.Struct, frozen=True):
    amdgpu_module_version: str | None = None
    kubernetes_resource: str | None = None
    nvidia: _NvidiaView | None = None
    other_devices: tuple[_DeviceView, ...] | None = None


class _VisibleView(msgspec.Struct, frozen=True, rename="upper"):
    rocr_visible_devices: str | None = None
    hip_visible_devices: str | None = None
    cuda_visible_devices: str | None = None


class _ToolView(msgspec.Struct, frozen=True):
    version: str | None = None


class _ReportView(msgspec.Struct, frozen=True):
    """A report as far as its plan goes. Without its host name it is the report's key: two
    reports with equal keys are planned alike (the same fingerprint, driver, device ids and
    visible GPUs). The probe's members are UNSET when absent, as ``_PROBE_KEYS`` tells them from
    null."""

    hostname: str | None = None
    target: msgspec.Raw | UnsetType = UNSET  # a `fleet gather` summary has one: read in full
    tool: _ToolView | None = None
    gpus: tuple[_GpuView, ...] | UnsetType | None = UNSET
    gfx_targets: tuple[str, ...] | UnsetType | None = UNSET
    physical_gpu_count: int | UnsetType | None = UNSET
    driver_version: str | UnsetType | None = UNSET
    logical_gpu_count: int | None = None
    hsa_override_gfx_version: str | None = None
    rocm_version: str | None = None
    os: str | None = None
    python: str | None = None
    host: _HostView | None = None
    visible_devices: _VisibleView | None = None


_VIEW = msgspec.json.Decoder(_ReportView)


def _view(raw: bytes) -> tuple[str | None, _ReportView | None]:
    """The report's ``hostname`` and its key (None: the report is read in full: it is not an
    object of the expected types, or it may be a `fleet gather` summary)."""
    try:
        view = _VIEW.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None, None
    if view.target is not UNSET:
        return None, None
    return view.hostname, msgspec.structs.replace(view, hostname=None)


# What every probe report has at least one of (a node without GPUs still says gpus: []).
_PROBE_KEYS = frozenset({"gpus", "gfx_targets", "driver_version", "physical_gpu_count"})
GATHER_SUMMARY = "_gather.json"  # "_" starts no host name, so no node's report is named so


def is_gather_summary(data: Any) -> bool:
    """The summary `fleet gather` writes: the target and every node's status, no GPU facts."""
    return (
        isinstance(data, dict)
        and "target" in data
        and isinstance(data.get("nodes"), list)
        and "gpus" not in data
    )


MAX_JOB_MINUTES = 366 * 24 * 60


@dataclass(frozen=True, slots=True)
class GatheredWhere:
    """Where `fleet gather` found the nodes of a directory (its summary): their partition and its
    MaxTime in minutes; from a live gather, also every node's partitions and gres."""

    partition: str | None
    max_minutes: int | None
    layout: SlurmLayout | None = None


def gathered_where(inputs: Sequence[str]) -> GatheredWhere | None:
    """The partition of the one `fleet gather` directory among ``inputs`` (None when there is
    none, or several that disagree)."""
    found: set[tuple[str | None, int | None]] = set()
    layouts: list[SlurmLayout | None] = []
    for name in inputs:
        path = Path(name) / GATHER_SUMMARY
        if not Path(name).is_dir() or not path.is_file():
            continue
        try:
            data = bounded.loads_json(bounded.read_bytes(path, MAX_REPORT).decode("utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if not is_gather_summary(data):
            continue
        part = data.get("partition")
        minutes = data.get("max_minutes")
        layouts.append(layout_from_json(data.get("slurm"), max_minutes=MAX_JOB_MINUTES))
        found.add(
            (
                part if isinstance(part, str) and is_safe("partition", part) else None,
                # A MaxTime in minutes, within a year: anything else is not one sinfo gave.
                minutes
                if isinstance(minutes, int)
                and not isinstance(minutes, bool)
                and 0 < minutes <= MAX_JOB_MINUTES
                else None,
            )
        )
    if len(found) != 1:
        return None
    ((part, minutes),) = found
    # The nodes' partitions and gres: from one summary only (two would need merging).
    return GatheredWhere(part, minutes, layouts[0] if len(layouts) == 1 else None)


def read_reports(inputs: Sequence[str]) -> list[NodeReport]:
    """Probe JSON files, directories of them (``*.json``) or globs. The node's name is the
    ``hostname`` the report carries, else the file's stem. An unreadable or unparsable file is a
    failed report naming why.

    A report costs what decides its plan, not its bytes: each file is decoded once into its key
    (``_ReportView``: the fingerprint's facts and the few others the plan reads from every node).
    The first report of each key is read in full and checked as ``node.from_json`` checks a
    ``--node`` file; it is the node its group is decided on. A later report with that key (and a
    name that is a host name) is that node with this file as origin: the members that make the
    key equal the checked ones, and nothing else of the file (its kernel, problems, host facts,
    GPU ids) is decoded or kept, so nothing else of it can reach an output. 100,000 nodes of 50
    kinds are read in full 50 times, whether or not their kernels differ."""
    reports: list[NodeReport] = []
    first: dict[_ReportView, int] = {}  # key -> the index of its report read in full
    later: dict[int, list[tuple[int, str]]] = {}  # that index -> (index, path) of its takers
    for path in _files(inputs):
        source = shown(path)
        stem = os.path.splitext(os.path.basename(path))[0]  # noqa: PTH119, PTH122
        try:
            # Regular files only (a FIFO in the directory must not hang the fleet), size-capped.
            raw = bounded.read_bytes(path, MAX_REPORT)
        except OSError as exc:
            reports.append(_unreadable(exc, shown(stem), source))
            continue
        host, key = _view(raw)
        name = host or stem
        at = first.get(key) if key is not None else None
        earlier = reports[at].node if at is not None else None
        if at is not None and earlier is not None and is_safe("node_name", name):
            node = msgspec.structs.replace(earlier, origin=Origin(f"file:{source}"))
            later.setdefault(at, []).append((len(reports), path))
            notes = reports[at].notes
            reports.append(NodeReport(name=name, source=source, node=node, notes=notes))
            continue
        report = _read_whole(raw, path, stem)
        if report is None:
            continue  # a `fleet gather` summary
        if key is not None and report.node is not None and key not in first:
            first[key] = len(reports)
        reports.append(report)
    return _redecided(reports, first, later)


def _unreadable(exc: OSError, stem: str, source: str) -> NodeReport:
    if isinstance(exc, bounded.TooLargeError):
        why = "larger than 16 MiB, not a probe report"
    elif isinstance(exc, bounded.NotRegularFileError):
        why = f"not a regular file ({exc.strerror})"
    else:
        why = f"cannot read it ({exc.strerror or type(exc).__name__})"
    return NodeReport(name=stem, source=source, reason=why)


def _read_whole(raw: bytes, path: str, stem: str) -> NodeReport | None:
    """A report read in full: parsed, every string checked (``check_tree``) and every fact
    matched against its pattern (``node.from_json``); None for a `fleet gather` summary."""
    source = shown(path)
    try:
        data = bounded.loads_json(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return NodeReport(name=shown(stem), source=source, reason="not UTF-8 text")
    except ValueError as exc:
        why = bounded.json_failure(exc, "a usable JSON report")
        return NodeReport(name=shown(stem), source=source, reason=why)
    if is_gather_summary(data):
        return None  # what `fleet gather -o DIR` writes beside the reports: not a node
    if not isinstance(data, dict) or not _PROBE_KEYS & data.keys():
        return NodeReport(
            name=shown(stem),
            source=source,
            reason="not a probe report (none of gpus, gfx_targets, driver_version); "
            "write it with `rocm-vllm probe --json`",
        )
    hostname = data.get("hostname")
    name = hostname if isinstance(hostname, str) and hostname else stem
    return report_from_json(data, name=name, source=path)


def _redecided(
    reports: list[NodeReport],
    first: dict[_ReportView, int],
    later: dict[int, list[tuple[int, str]]],
) -> list[NodeReport]:
    """A group is decided on its first node with a usable report. When the report read in full
    for a key names a node that another report names too, ``mark_duplicates`` fails it, and the
    next report of that key would stand for the group with facts it did not read: the first of
    them with a name of its own is read in full instead (a rare case: the file is read again)."""
    counts: dict[str, int] = {}
    for r in reports:
        counts[node_key(r.name)] = counts.get(node_key(r.name), 0) + 1
    for at in first.values():
        if counts[node_key(reports[at].name)] == 1:
            continue
        for i, path in later.get(at, ()):
            if counts[node_key(reports[i].name)] > 1:
                continue
            stem = os.path.splitext(os.path.basename(path))[0]  # noqa: PTH119, PTH122
            try:
                whole = _read_whole(bounded.read_bytes(path, MAX_REPORT), path, stem)
            except OSError as exc:
                whole = _unreadable(exc, shown(stem), reports[i].source)
            reports[i] = whole or reports[i]
            if reports[i].node is not None:
                break
    return reports


def mark_duplicates(reports: Iterable[NodeReport]) -> list[NodeReport]:
    """Two reports for one node cannot both be right (names that differ only in case or domain
    are one node): every one of them is failed, with the other sources named, so nothing is
    planned on a guess."""
    items = list(reports)
    sources: dict[str, list[str]] = {}
    for r in items:
        sources.setdefault(node_key(r.name), []).append(r.source)
    out: list[NodeReport] = []
    for r in items:
        same = sources[node_key(r.name)]
        others = [s for s in same if s != r.source] or same[1:]
        if len(same) > 1:
            out.append(
                msgspec.structs.replace(
                    r,
                    node=None,
                    reason=f"duplicate node name {r.name!r}: also reported by {', '.join(others)}",
                )
            )
        else:
            out.append(r)
    return out
