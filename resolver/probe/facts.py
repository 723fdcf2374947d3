"""What one source (rocminfo, amd-smi, rocm-smi, sysfs) says, before the sources are merged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from resolver.data.codes import ProblemCode
from resolver.data.node import Problem


@dataclass(slots=True)
class GpuFact:
    """One GPU agent / logical device as a single source describes it; unknowns stay None."""

    gfx: str | None = None  # physical target (sysfs, PCI table) or what the source printed
    runtime_gfx: str | None = (
        None  # what the HSA runtime loads code for (differs under an override)
    )
    marketing_name: str | None = None
    pci_device_id: str | None = None  # "74a1"
    pci_revision: str | None = None  # "c0"
    compute_units: int | None = None
    vram_bytes: int | None = None
    unique_id: str | None = None  # 16 hex digits, as HIP prints after "GPU-"
    compute_partition: str | None = None
    memory_partition: str | None = None
    apu: bool | None = None
    xnack: bool | None = None
    sramecc: bool | None = None
    num_xcc: int | None = None
    bdf: str | None = None  # "0000:1b:00.0"; for partitions the function is the partition index
    kfd_node: int | None = None
    render_minor: int | None = None

    def physical_key(self, fallback: int) -> str:
        """Partitions of one GPU share unique_id and PCI bus:device; anything else is its own."""
        if self.unique_id:
            return f"uid:{self.unique_id}"
        if self.bdf:
            return f"pci:{self.bdf.rsplit('.', 1)[0]}"
        return f"idx:{fallback}"


@dataclass(slots=True)
class SourceView:
    """The GPUs and node facts one input states, with the problems found reading it."""

    source: str  # "rocminfo", "amd-smi", "rocm-smi", "sysfs"
    gpus: list[GpuFact] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    driver_version: str | None = None
    rocm_version: str | None = None
    amdgpu_loaded: bool | None = None
    # Some sources (a flattened one-line paste) list targets but cannot tell how many GPUs there
    # are.
    count_exact: bool = True
    facts: dict[str, Any] = field(default_factory=dict)

    def problem(self, code: ProblemCode, message: str, hint: str) -> None:
        if not any(p.code == code and p.message == message for p in self.problems):
            self.problems.append(Problem(code=code, message=message, hint=hint))

    def said(self, key: str, /, **values: object) -> None:
        """Add the problem ``resolver.data.words`` words as ``key`` (once)."""
        found = Problem.said(key, **values)
        self.problem(found.code, found.message, found.hint)
