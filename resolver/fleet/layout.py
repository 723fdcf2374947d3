"""What Slurm says of the nodes a gather found, for the batch scripts written from it: the
partitions that hold each node, each partition's limits, and the GPUs each node's gres declares.

A group's nodes may sit in different partitions, under a MaxNodes smaller than the group, or
declare other GPU counts than their probe saw: a batch script Slurm accepts is made from these
facts, not from the probe (``fleet.artifacts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class PartitionLimits:
    """What a partition allows one job (sinfo ``%s`` and ``%l``); None: no limit."""

    max_nodes: int | None = None
    max_minutes: int | None = None


@dataclass(frozen=True, slots=True)
class SlurmLayout:
    """The partitions and gres of the nodes a gather asked about (sinfo's answer)."""

    member_of: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # node -> partitions
    limits: Mapping[str, PartitionLimits] = field(default_factory=dict)
    # node -> the GPUs its gres declares (sinfo %G; 0: no gpu gres); a node not here: not known
    gpus: Mapping[str, int] = field(default_factory=dict)
