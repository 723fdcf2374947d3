"""What Slurm says of the nodes a gather found, for the batch scripts written from it: the
partitions that hold each node, each partition's limits, and the GPUs each node's gres declares.

A group's nodes may sit in different partitions, under a MaxNodes smaller than the group, or
declare other GPU counts than their probe saw: a batch script Slurm accepts is made from these
facts, not from the probe (``fleet.artifacts``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class PartitionLimits:
    """What a partition allows one job (sinfo ``%s`` and ``%l``); None: no limit."""

    max_nodes: int | None = None
    max_minutes: int | None = None


UNKNOWN_START = "an unknown time"  # a StartTime scontrol did not print as one


@dataclass(frozen=True, slots=True)
class Pending:
    """A reservation that had not started when scontrol was asked."""

    start: str  # its StartTime (the controller's local time), or UNKNOWN_START
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SlurmLayout:
    """The partitions and gres of the nodes a gather asked about (sinfo's answer)."""

    member_of: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # node -> partitions
    limits: Mapping[str, PartitionLimits] = field(default_factory=dict)
    # node -> the GPUs its gres declares (sinfo %G; 0: no gpu gres); a node not here: not known
    gpus: Mapping[str, int] = field(default_factory=dict)
    # node -> its features (sinfo %f), for a per-group --constraint; a node not here: not known
    features: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # node -> the active reservation holding it (scontrol show reservation): its job names it
    reserved: Mapping[str, str] = field(default_factory=dict)
    # reservation -> its StartTime and nodes, for those not yet started: a job pends until then
    pending: Mapping[str, Pending] = field(default_factory=dict)


# A Slurm feature name as sinfo %f lists it (and --constraint names it).
FEATURE_RE = re.compile(r"[A-Za-z0-9_.:+-]{1,64}")
# scontrol's StartTime (ISO 8601 without a zone: the controller's local time)
START_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")
MAX_COUNT = 1_000_000  # nodes of a job, GPUs of a node: anything above is not what sinfo says


def _count(value: object) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT
    return value if ok else None  # type: ignore[return-value]


def layout_json(layout: SlurmLayout) -> dict[str, Any]:
    """The layout as `fleet gather` saves it in its summary, for `fleet plan DIR`."""
    parts = {p for n in layout.member_of for p in layout.member_of[n]}
    return {
        "partitions": {
            p: {"max_nodes": lim.max_nodes, "max_minutes": lim.max_minutes}
            for p, lim in layout.limits.items()
            if p in parts
        },
        "nodes": {
            n: {
                "partitions": list(layout.member_of[n]),
                "gpus": layout.gpus.get(n),
                **({"features": list(layout.features[n])} if n in layout.features else {}),
                **({"reservation": layout.reserved[n]} if n in layout.reserved else {}),
            }
            for n in layout.member_of
        },
        **(
            {
                "pending_reservations": {
                    r: {"start": p.start, "nodes": list(p.nodes)} for r, p in layout.pending.items()
                }
            }
            if layout.pending
            else {}
        ),
    }


def layout_from_json(data: object, *, max_minutes: int) -> SlurmLayout | None:
    """A saved layout, every name and number checked as sinfo's were (a summary is a file anyone
    may have edited); None when it is not one."""
    from resolver.util.safety import is_safe

    if not isinstance(data, dict):
        return None
    partitions, nodes = data.get("partitions"), data.get("nodes")
    if not isinstance(partitions, dict) or not isinstance(nodes, dict):
        return None
    limits: dict[str, PartitionLimits] = {}
    for name, lim in partitions.items():
        if not (is_safe("partition", name) and isinstance(lim, dict)):
            return None
        minutes = _count(lim.get("max_minutes"))
        limits[name] = PartitionLimits(
            _count(lim.get("max_nodes")) or None,
            minutes if minutes and minutes <= max_minutes else None,
        )
    member_of: dict[str, tuple[str, ...]] = {}
    gpus: dict[str, int] = {}
    features: dict[str, tuple[str, ...]] = {}
    reserved: dict[str, str] = {}
    for name, node in nodes.items():
        held = node.get("partitions") if isinstance(node, dict) else None
        if not (is_safe("node_name", name) and isinstance(held, list)):
            return None
        if not all(isinstance(p, str) and p in limits for p in held):
            return None
        member_of[name] = tuple(held)
        if (count := _count(node.get("gpus"))) is not None:
            gpus[name] = count
        feats = node.get("features")
        if isinstance(feats, list) and len(feats) <= 256:
            if not all(isinstance(f, str) and FEATURE_RE.fullmatch(f) for f in feats):
                return None
            features[name] = tuple(feats)
        if (resv := node.get("reservation")) is not None:
            if not (isinstance(resv, str) and is_safe("partition", resv)):
                return None
            reserved[name] = resv
    pending = _pending(data.get("pending_reservations", {}))
    if pending is None:
        return None
    return SlurmLayout(member_of, limits, gpus, features, reserved, pending)


def _pending(saved: object) -> dict[str, Pending] | None:
    """Saved reservations not yet started, as ``slurm.read_pending`` keeps them (scontrol's
    StartTime, or UNKNOWN_START; node names); None when one is not that."""
    from resolver.util.safety import is_safe

    if not isinstance(saved, dict) or len(saved) > 10_000:
        return None
    out: dict[str, Pending] = {}
    for resv, entry in saved.items():
        start = entry.get("start") if isinstance(entry, dict) else None
        nodes = entry.get("nodes") if isinstance(entry, dict) else None
        if not (is_safe("partition", resv) and isinstance(start, str)):
            return None
        if start != UNKNOWN_START and START_RE.fullmatch(start) is None:
            return None
        if not (isinstance(nodes, list) and len(nodes) <= MAX_COUNT):
            return None
        if not all(isinstance(n, str) and is_safe("node_name", n) for n in nodes):
            return None
        out[resv] = Pending(start, tuple(nodes))
    return out
