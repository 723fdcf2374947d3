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
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from resolver import __version__, bounded
from resolver.errors import InputError
from resolver.node import Node, from_json

Status = Literal["ok", "unknown", "failed"]
_MAX_REPORT = 16 * 1024 * 1024


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeReport:
    name: str
    source: str  # a file path, "srun:NODE" or "kubernetes:NODE"
    node: Node | None = None
    reason: str | None = None  # failed: why there is no node; unknown: why it cannot be placed
    notes: tuple[str, ...] = ()  # listed with the node, e.g. another tool version wrote it
    # What identifies the node to a scheduler: Kubernetes labels of a labelled node, the
    # amd.com resource it offers (``amd.com/gpu`` or a partition resource such as
    # ``amd.com/cpx_nps4``).
    labels: dict[str, str] = field(default_factory=dict)
    resource: str = "amd.com/gpu"

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


def report_from_json(data: Any, *, name: str | None, source: str) -> NodeReport:
    """One probe JSON object as a report; a shape error is a failed report, not an exception."""
    fallback = name or source
    try:
        node = from_json(data, where=source)
    except InputError as exc:
        return NodeReport(
            name=fallback, source=source, reason=f"not a usable probe report: {exc.message}"
        )
    assert isinstance(data, dict)  # from_json accepted it
    reported = data.get("hostname")
    node_name = name or (reported if isinstance(reported, str) and reported else None) or fallback
    notes = tool_notes(data)
    if (
        name
        and isinstance(reported, str)
        and reported
        and reported.split(".")[0] != name.split(".")[0]
    ):
        notes += (f"the report names its host {reported!r}",)
    return NodeReport(name=node_name, source=source, node=node, notes=notes)


def _files(inputs: Sequence[str]) -> list[Path]:
    files: list[Path] = []
    for text in inputs:
        path = Path(text)
        if any(ch in text for ch in "*?["):
            # A user's absolute or relative pattern: Path.glob takes only relative ones.
            matched = sorted(Path(p) for p in glob.glob(text, recursive=True))  # noqa: PTH207
            if not matched:
                raise InputError(
                    f"{text}: the pattern matches no file",
                    hint="quote the pattern, or check the directory",
                )
            files += [p for p in matched if p.is_file()]
        elif path.is_dir():
            found = sorted(path.glob("*.json"))
            if not found:
                raise InputError(
                    f"{text}: a directory without *.json probe reports",
                    hint="write them with `rocm-vllm probe --json > NODE.json` or "
                    "`rocm-vllm fleet gather`",
                )
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(
                f"{text}: no such file or directory",
                hint="give probe JSON files, a directory of them, or a glob",
            )
    return files


# A report's "hostname" member as probe --json writes it (a JSON string without escapes).
_HOSTNAME_RE = re.compile(rb'"hostname": *"([A-Za-z0-9._-]{1,253})"')


def read_reports(inputs: Sequence[str]) -> list[NodeReport]:
    """Probe JSON files, directories of them (``*.json``) or globs. The node's name is the
    ``hostname`` the report carries, else the file's stem. An unreadable or unparsable file is a
    failed report naming why.

    Nodes of one kind write the same report but for their host name: a file whose bytes, with the
    ``hostname`` member blanked, equal an earlier file's is not parsed again (its node is the
    earlier one's with this file as origin). That halves the reading of a large fleet."""
    reports: list[NodeReport] = []
    seen: dict[bytes, NodeReport] = {}
    for path in _files(inputs):
        source = str(path)
        try:
            # Regular files only (a FIFO in the directory must not hang the fleet), size-capped.
            raw = bounded.read_bytes(path, _MAX_REPORT)
        except bounded.TooLargeError:
            reports.append(
                NodeReport(
                    name=path.stem, source=source, reason="larger than 16 MiB, not a probe report"
                )
            )
            continue
        except bounded.NotRegularFileError as exc:
            reports.append(
                NodeReport(
                    name=path.stem, source=source, reason=f"not a regular file ({exc.strerror})"
                )
            )
            continue
        except OSError as exc:
            reports.append(
                NodeReport(
                    name=path.stem,
                    source=source,
                    reason=f"cannot read it ({exc.strerror or type(exc).__name__})",
                )
            )
            continue
        matches = _HOSTNAME_RE.findall(raw)
        key = _HOSTNAME_RE.sub(b'"hostname": ""', raw) if len(matches) == 1 else None
        earlier = seen.get(key) if key is not None else None
        if earlier is not None and earlier.node is not None:
            name = matches[0].decode()
            node = replace(earlier.node, origin=f"file:{source}")
            reports.append(replace(earlier, name=name, source=source, node=node))
            continue
        try:
            data = bounded.loads_json(raw.decode("utf-8"))
        except UnicodeDecodeError:
            reports.append(NodeReport(name=path.stem, source=source, reason="not UTF-8 text"))
            continue
        except ValueError as exc:
            why = bounded.json_failure(exc, "a usable JSON report")
            reports.append(NodeReport(name=path.stem, source=source, reason=why))
            continue
        hostname = data.get("hostname") if isinstance(data, dict) else None
        name = hostname if isinstance(hostname, str) and hostname else path.stem
        report = report_from_json(data, name=name, source=source)
        if key is not None and report.node is not None and name == matches[0].decode():
            seen[key] = report
        reports.append(report)
    return reports


def mark_duplicates(reports: Iterable[NodeReport]) -> list[NodeReport]:
    """Two reports for one node name cannot both be right: every one of them is failed, with
    the other sources named, so nothing is planned on a guess."""
    items = list(reports)
    sources: dict[str, list[str]] = {}
    for r in items:
        sources.setdefault(r.name, []).append(r.source)
    out: list[NodeReport] = []
    for r in items:
        others = [s for s in sources[r.name] if s != r.source] or sources[r.name][1:]
        if len(sources[r.name]) > 1:
            out.append(
                replace(
                    r,
                    node=None,
                    reason=f"duplicate node name {r.name!r}: also reported by {', '.join(others)}",
                )
            )
        else:
            out.append(r)
    return out
