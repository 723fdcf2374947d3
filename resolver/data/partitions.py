"""Compute partitions as the node shows them: which GPUs are partitions of one device, and a GPU
that shows fewer partitions than its peers (a node-level fact the probe, the solver and the run
command all use)."""

from __future__ import annotations

from resolver.data.node import Gpu, Problem


def _compute_mode(gpu: Gpu) -> str | None:
    return (gpu.partition.compute or "").upper() or None if gpu.partition else None


def _device_key(gpu: Gpu, index: int) -> str:
    """Partitions of one GPU share its unique id and its PCI bus:device (functions differ)."""
    if gpu.unique_id:
        return f"uid:{gpu.unique_id}"
    if gpu.pci_bdf:
        return f"pci:{gpu.pci_bdf.rsplit('.', 1)[0]}"
    return f"idx:{index}"


def partition_problems(gpus: tuple[Gpu, ...] | list[Gpu]) -> list[Problem]:
    """A GPU that shows fewer partitions than another GPU of the same kind in the same compute
    mode (63 of 64: one MI300X with 7 CPX partitions beside seven with 8). The peers are the
    measure, not a per-product count: a container given one partition on purpose sees only it."""
    groups: dict[str, list[Gpu]] = {}
    for i, gpu in enumerate(gpus):
        if _compute_mode(gpu) and not gpu.integrated:
            groups.setdefault(_device_key(gpu, i), []).append(gpu)
    peers: dict[tuple[str | None, str | None], int] = {}
    for members in groups.values():
        kind = (members[0].pci_device_id or members[0].product, _compute_mode(members[0]))
        peers[kind] = max(peers.get(kind, 0), len(members))
    problems: list[Problem] = []
    for key, members in groups.items():
        first = members[0]
        mode = _compute_mode(first) or ""
        expected = peers[(first.pci_device_id or first.product, mode)]
        if len(members) < expected:
            where = first.pci_bdf.rsplit(".", 1)[0] if first.pci_bdf else key.split(":", 1)[1]
            problems.append(
                Problem.said(
                    "partition-missing",
                    where=where,
                    what=first.product or first.gfx,
                    shown=len(members),
                    expected=expected,
                    mode=mode,
                    missing=expected - len(members),
                )
            )
    return problems
