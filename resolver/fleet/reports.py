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
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

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


# A report's "hostname" member as probe --json writes it (a JSON string without escapes).
_HOSTNAME_RE = re.compile(rb'"hostname": *"([A-Za-z0-9._-]{1,253})"')
# A GPU's own identity (its unique id, its PCI address): every node's differ, nothing planned
# depends on them. Only values inside the patterns node.from_json accepts are blanked (hex ids,
# plain BDFs), so a blanked report equal to an earlier one is as safe as that one.
_ID_VALUE = rb'"((?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]|[0-9A-Fa-f]{8,32})"'
# One pattern per member, each replaced by a literal (a template would be expanded per match, and
# a 100,000-node fleet has millions of them).
_IDENTITY_RES = tuple(
    (re.compile(b'"' + member + b'": *' + _ID_VALUE), b'"' + member + b'": ""')
    for member in (b"unique_id", b"pci_bdf")
)
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


def _host_and_key(raw: bytes) -> tuple[str | None, bytes | None]:
    """The report's one ``hostname`` and the report with it and its GPUs' own ids blanked (what
    nodes of a kind share); (None, None) unless the report names exactly one host name."""
    found = _HOSTNAME_RE.search(raw)
    if found is None or _HOSTNAME_RE.search(raw, found.end()) is not None:
        return None, None
    key = raw[: found.start(1)] + raw[found.end(1) :]
    for pattern, blank in _IDENTITY_RES:
        key = pattern.sub(blank, key)
    return found.group(1).decode(), key


def read_reports(inputs: Sequence[str]) -> list[NodeReport]:
    """Probe JSON files, directories of them (``*.json``) or globs. The node's name is the
    ``hostname`` the report carries, else the file's stem. An unreadable or unparsable file is a
    failed report naming why.

    Nodes of one kind write the same report but for their host name and their GPUs' own ids: a
    file whose bytes, with the ``hostname`` member and the GPUs' ``unique_id`` / ``pci_bdf``
    blanked, equal an earlier file's is not parsed again (its node is the earlier one's with this
    file as origin; the ids are not planned on). A fleet of 100,000 nodes of 50 kinds is parsed
    50 times."""
    reports: list[NodeReport] = []
    seen: dict[bytes, NodeReport] = {}
    for path in _files(inputs):
        source = shown(path)
        stem = shown(os.path.splitext(os.path.basename(path))[0])  # noqa: PTH119, PTH122
        try:
            # Regular files only (a FIFO in the directory must not hang the fleet), size-capped.
            raw = bounded.read_bytes(path, MAX_REPORT)
        except bounded.TooLargeError:
            reports.append(
                NodeReport(
                    name=stem, source=source, reason="larger than 16 MiB, not a probe report"
                )
            )
            continue
        except bounded.NotRegularFileError as exc:
            reports.append(
                NodeReport(name=stem, source=source, reason=f"not a regular file ({exc.strerror})")
            )
            continue
        except OSError as exc:
            reports.append(
                NodeReport(
                    name=stem,
                    source=source,
                    reason=f"cannot read it ({exc.strerror or type(exc).__name__})",
                )
            )
            continue
        host, key = _host_and_key(raw)
        earlier = seen.get(key) if key is not None else None
        if (
            earlier is not None
            and earlier.node is not None
            and host is not None
            and is_safe("node_name", host)
        ):
            name = host
            node = msgspec.structs.replace(earlier.node, origin=Origin(f"file:{source}"))
            reports.append(msgspec.structs.replace(earlier, name=name, source=source, node=node))
            continue
        try:
            data = bounded.loads_json(raw.decode("utf-8"))
        except UnicodeDecodeError:
            reports.append(NodeReport(name=stem, source=source, reason="not UTF-8 text"))
            continue
        except ValueError as exc:
            why = bounded.json_failure(exc, "a usable JSON report")
            reports.append(NodeReport(name=stem, source=source, reason=why))
            continue
        if is_gather_summary(data):
            continue  # what `fleet gather -o DIR` writes beside the reports: not a node
        if not isinstance(data, dict) or not _PROBE_KEYS & data.keys():
            reports.append(
                NodeReport(
                    name=stem,
                    source=source,
                    reason="not a probe report (none of gpus, gfx_targets, driver_version); "
                    "write it with `rocm-vllm probe --json`",
                )
            )
            continue
        hostname = data.get("hostname")
        name = hostname if isinstance(hostname, str) and hostname else Path(path).stem
        report = report_from_json(data, name=name, source=str(path))
        if key is not None and report.node is not None and name == host:
            seen[key] = report
        reports.append(report)
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
