"""The node's NVIDIA GPUs and driver as the checks read them: compute capabilities
(nvidia-smi's, else ``nvidia-gpus.toml``'s by PCI id), the driver branch, and CUDA's rules for
which arch list entry runs on which capability."""

from __future__ import annotations

from typing import Any

from resolver.data.model import CudaRelease, Matrix
from resolver.data.node import Node

VENDORS = ("amd", "nvidia")


def nvidia_gpus(node: Node) -> list[dict[str, Any]]:
    return node.nvidia_gpus


def nvidia_driver(node: Node) -> str | None:
    return node.nvidia_driver


def driver_branch(driver: str | None) -> int | None:
    """ "580.159.04" -> 580."""
    head = (driver or "").split(".")[0]
    return int(head) if head.isdigit() and len(head) <= 4 else None


def _caps(node: Node, m: Matrix | None = None) -> list[str]:
    """The GPUs' compute capabilities: nvidia-smi's, else the one NVIDIA lists for the GPU's PCI
    device id (``nvidia-gpus.toml``; a node probed without nvidia-smi)."""
    out = set()
    for g in nvidia_gpus(node):
        if g.get("compute_capability"):
            out.add(str(g["compute_capability"]))
        elif m is not None and (known := m.nvidia_gpu(g.get("pci_device_id"))) is not None:
            out.add(known.compute_capability)
    return sorted(out)


def _cc(text: str) -> tuple[int, int] | None:
    """ "10.3" -> (10, 3); None when it is not a compute capability."""
    major, dot, minor = text.partition(".")
    if not dot or not major.isdigit() or not minor.isdigit():
        return None
    return int(major), int(minor)


def _unplaced(node: Node, m: Matrix | None = None) -> list[str]:
    """The NVIDIA GPUs whose compute capability neither nvidia-smi nor the data gives (by name,
    else PCI id): no arch list can be checked for them."""
    out = []
    for g in nvidia_gpus(node):
        if g.get("compute_capability"):
            continue
        if m is not None and m.nvidia_gpu(g.get("pci_device_id")) is not None:
            continue
        pci = g.get("pci_device_id")
        name = str(g.get("name") or (f"PCI device 10de:{pci}" if pci else "an NVIDIA GPU"))
        if name not in out:
            out.append(name)
    return out


def _covers(arch: tuple[str, ...], cap: str) -> bool:
    """An image carries code for ``cap``, by CUDA's rules: SASS for exactly that capability
    (``9.0``, or ``9.0a``, which runs on 9.0 only); a family target ``X.Yf`` on every X.Z with
    Z >= Y (sm_100f on 10.0 and 10.3); PTX (``X.Y+PTX``), which the driver JIT-compiles for any
    later capability (never an ``a`` target's). A plain ``X.Y`` is held to its own capability:
    vLLM builds arch-specific kernels (``10.0a``) beside it, which a 10.3 cannot run."""
    want = _cc(cap)
    if want is None:
        return False
    for entry in arch:
        base, _, ptx = entry.partition("+")
        suffix = base[-1] if base[-1:] in ("a", "f") else ""
        have = _cc(base.removesuffix(suffix) if suffix else base)
        if have is None:
            continue
        if have == want:
            return True
        if suffix == "f" and have[0] == want[0] and have[1] <= want[1]:
            return True
        if ptx == "PTX" and suffix != "a" and have <= want:
            return True
    return False


def _below_floor(
    release: CudaRelease, caps: list[str], quantization: str | None
) -> tuple[str | None, list[str]]:
    """The floor the release states for ``quantization`` and the capabilities below it."""
    floor = release.quant_floor(quantization) if quantization else None
    if floor is None or (want := _cc(floor)) is None:
        return floor, []
    return floor, [c for c in caps if (have := _cc(c)) is not None and have < want]


def _compiled(arch: tuple[str, ...]) -> tuple[str, ...]:
    """The arch list without its PTX: what runs without a JIT compile."""
    return tuple(a.partition("+")[0] for a in arch)
