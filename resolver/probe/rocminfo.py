"""rocminfo text -> the runtime's view of the GPUs.

Tolerates what people paste (shared/reference/probe.md §10): whole outputs, fragments cut with
``...``, colour codes, echoed prompts, grep output without agent markers, and a whole
``rocminfo | grep`` flattened onto one line by an issue form. Agent fields are read at the agent's
own indentation, never from the ISA or pool blocks under it (``Name:`` appears at both levels).
"""

from __future__ import annotations

import re

from resolver.data import words
from resolver.probe import gfx as gfxmod
from resolver.probe.facts import GpuFact, SourceView
from resolver.probe.gfx import GfxTable
from resolver.probe.text import clean, hex_in_parens, int_value, size_to_bytes
from resolver.util.versions import gfx_base_name

_AGENT_RE = re.compile(r"^\s*Agent\s+[0-9]+\s*\Z")
_AGENT_NUMBER_RE = re.compile(r"\s*Agent\s+([0-9]{1,6})\s*")
# Linear time on any line: the name may hold inner blanks but cannot end in one (possessive), so
# a long run of blanks is not retried at every position (a lazy name + \s* was quadratic).
_FIELD_RE = re.compile(
    r"^(\s*+)([A-Za-z](?:[A-Za-z0-9.()/_-]|[ ]++(?=[A-Za-z0-9.()/_-]))*+)\s*+:{1,2}\s*+(.*)\Z"
)
_ROCK_VERSION_RE = re.compile(r"ROCk module version\s+(\S+)\s+is loaded")
_KFD_ERR_RE = re.compile(r"Unable to open /dev/kfd read-write:\s*(.+)\Z")
_NOT_MEMBER_RE = re.compile(r"(?<!\S)(\S++) is not member of \"?(\w+)\"? group")
_FLAT_NAME_RE = re.compile(r"(?<![\w-])Name:\s+(gfx[0-9a-f]{3,4})(?![\w-])")
_FLAT_MARKETING_RE = re.compile(
    r"Marketing Name:\s+(.*?)(?=\s{2,}|\s+(?:Name|Uuid|Vendor Name):|$)"
)
_ISA_RE = re.compile(r"amdgcn-amd-amdhsa--(gfx[0-9a-f]{3,4}(?::[a-z]+[+-])*)", re.IGNORECASE)


def parse(text: str, *, gfx_table: GfxTable) -> SourceView:
    view = SourceView(source="rocminfo")
    lines = clean(text)
    _header(lines, view)
    blocks = _agent_blocks(lines)
    if blocks:
        for block in blocks:
            gpu = _agent(block, view)
            if gpu is not None:
                view.gpus.append(gpu)
        if view.gpus and _cut(lines):
            view.count_exact = False
            view.facts["partial"] = True
    elif any("AMD GCN Arch Name" in line for line in lines):
        _hip_device_query(lines, view)
    elif name_blocks := _name_blocks(lines):
        # a fragment or grep output without "Agent N" lines: one agent per agent-level Name
        for block in name_blocks:
            gpu = _agent(block, view)
            if gpu is not None:
                view.gpus.append(gpu)
        if view.gpus:
            view.count_exact = False
            view.facts["partial"] = True
    else:
        _flat(lines, view)
    _check_overrides(view, gfx_table)
    if (
        not view.gpus
        and not view.facts.get("other_devices")
        and not any(p.code.startswith(("kfd-", "amdgpu-")) for p in view.problems)
    ):
        view.said("no-gpu-agents")
    return view


def _header(lines: list[str], view: SourceView) -> None:
    for line in lines:
        stripped = line.strip()
        if match := _ROCK_VERSION_RE.search(stripped):
            view.amdgpu_loaded = True
            view.driver_version = match.group(1)
            view.facts["driver_kind"] = "dkms"
        elif "ROCk module is loaded" in stripped:
            view.amdgpu_loaded = True
            # rocminfo prints no version when /sys/module/amdgpu/version is absent: the in-tree
            # driver.
            view.facts.setdefault("driver_kind", "in-tree")
        elif "ROCk module is NOT loaded" in stripped:
            view.amdgpu_loaded = False
            view.said("amdgpu-not-loaded/rocminfo")
        elif "ROCk module is NOT live" in stripped:
            view.amdgpu_loaded = True
            view.said("amdgpu-not-live")
        elif match := _KFD_ERR_RE.search(stripped):
            _kfd_error(match.group(1).strip(), view)
        elif match := _NOT_MEMBER_RE.search(stripped):
            view.said("not-in-gpu-group/rocminfo", user=match.group(1), group=match.group(2))
        elif "hsa api call failure" in stripped or "HSA_STATUS_ERROR" in stripped:
            view.said("hsa-runtime-error")


def _kfd_error(reason: str, view: SourceView) -> None:
    lowered = reason.lower()
    if "permission denied" in lowered or "operation not permitted" in lowered:
        view.said("kfd-permission/rocminfo", error=reason)
    elif "no such file" in lowered:
        view.said("kfd-missing", error=reason)
    elif "cannot allocate memory" in lowered:
        view.said("kfd-enomem", error=reason)
    else:
        view.said("kfd-open-failed", error=reason)


def _cut(lines: list[str]) -> bool:
    """A paste cut out of a longer output: rocminfo numbers its agents 1, 2, ... with the CPUs
    first, so agents that do not start at 1 or skip numbers, or an elision line ("...") between
    them, mean that GPUs were left out (the MI250 paste that starts at Agent 16)."""
    numbers = [int(m.group(1)) for line in lines if (m := _AGENT_NUMBER_RE.match(line))]
    if numbers and numbers != list(range(1, len(numbers) + 1)):
        return True
    return any(line.strip() in ("...", "…", "[...]", "(...)") for line in lines)


def _agent_blocks(lines: list[str]) -> list[list[str]]:
    starts = [i for i, line in enumerate(lines) if _AGENT_RE.match(line)]
    blocks = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        blocks.append(lines[start + 1 : end])
    return blocks


def _name_blocks(lines: list[str]) -> list[list[str]]:
    """Lines cut at each agent-level ``Name:`` (the least indented one that is not an ISA name),
    for pastes that lost the ``Agent N`` markers. Empty for a one-line (flattened) paste."""
    starts: list[tuple[int, int]] = []
    for index, line in enumerate(lines):
        match = _FIELD_RE.match(line)
        if match and match.group(2).strip() == "Name" and not _ISA_RE.search(match.group(3)):
            starts.append((index, len(match.group(1))))
    if not starts or sum(1 for line in lines if line.strip()) < 2:
        return []
    depth = min(d for _, d in starts)
    cuts = [i for i, d in starts if d == depth]
    return [
        lines[a : (cuts[n + 1] if n + 1 < len(cuts) else len(lines))] for n, a in enumerate(cuts)
    ]


def _agent(block: list[str], view: SourceView) -> GpuFact | None:
    fields, isas, vram = _agent_fields(block)
    name = fields.get("Name", "").strip()
    device_type = fields.get("Device Type", "").strip().upper()
    if device_type == "DCU":
        _dcu(fields, isas, vram, view)
        return None
    if device_type and device_type != "GPU":
        return None  # CPU agents and the NPU (DSP) never count
    if not device_type and not gfx_base_name(name):
        return None
    gpu = GpuFact()
    reported = gfx_base_name(name) if name else None
    features = next(
        (
            f
            for f in (gfxmod.split_target(i) for i in isas)
            if f and not gfxmod.GENERIC_RE.match(f.gfx)
        ),
        None,
    )
    gpu.runtime_gfx = reported or (features.gfx if features else None)
    gpu.gfx = gpu.runtime_gfx
    if features:
        gpu.sramecc, gpu.xnack = features.sramecc, features.xnack
    marketing = fields.get("Marketing Name")
    gpu.marketing_name = marketing.strip() if marketing is not None else None
    gpu.pci_device_id = gfxmod.pci_id(hex_in_parens(fields.get("Chip ID")))
    gpu.compute_units = int_value(fields.get("Compute Unit"))
    gpu.vram_bytes = vram
    _agent_identity(gpu, fields)
    if gpu.gfx is None:
        view.said(
            "gpu-target-unknown/rocminfo",
            name=name or words.text("gpu-target-unknown/no-name"),
        )
    return gpu


def _agent_fields(block: list[str]) -> tuple[dict[str, str], list[str], int | None]:
    """One agent's block -> its agent-level fields (first value of each key at the indent of its
    first ``Name:``), its ISA names, and the size of its first coarse-grained (non-kernarg) pool:
    the VRAM."""
    fields: dict[str, str] = {}
    indent: int | None = None
    isas: list[str] = []
    vram: int | None = None
    pending_coarse = False
    for line in block:
        match = _FIELD_RE.match(line)
        if not match:
            continue
        depth, key, value = len(match.group(1)), match.group(2).strip(), match.group(3).strip()
        if indent is None and key == "Name":
            indent = depth
        if key == "Segment":
            pending_coarse = "COARSE GRAINED" in value and "KERNARG" not in value
            continue
        if key == "Size" and pending_coarse and vram is None:
            vram = size_to_bytes(value)
            pending_coarse = False
            continue
        if key == "Name" and (isa := _ISA_RE.search(value)):
            isas.append(isa.group(1))
            continue
        if indent is not None and depth == indent:
            fields.setdefault(key, value)
    return fields, isas, vram


def _agent_identity(gpu: GpuFact, fields: dict[str, str]) -> None:
    """Where the agent sits: its unique id (not the all-f placeholder), APU memory, KFD node and
    PCI address."""
    uuid = fields.get("Uuid", "").strip()
    if re.fullmatch(r"GPU-[0-9a-fA-F]{16}", uuid) and uuid[4:].strip("f") != "":
        gpu.unique_id = uuid[4:].lower()
    if "APU" in fields.get("Memory Properties", ""):
        gpu.apu = True
    gpu.kfd_node = int_value(fields.get("Node"))
    bdfid = int_value(fields.get("BDFID"))
    if bdfid:
        gpu.bdf = f"0000:{(bdfid >> 8) & 0xFF:02x}:{(bdfid >> 3) & 0x1F:02x}.{bdfid & 0x7}"


def _dcu(fields: dict[str, str], isas: list[str], vram: int | None, view: SourceView) -> None:
    """A Hygon DCU agent (``Device Type: DCU``, e.g. gfx928): ROCm-derived, but not an AMD GPU."""
    uuid = fields.get("Uuid", "").strip()
    name = fields.get("Name", "").strip().lower()
    features = next((f for f in (gfxmod.split_target(i) for i in isas) if f), None)
    view.facts.setdefault("other_devices", []).append(
        {
            "vendor": "hygon"
            if "hygon" in fields.get("Vendor Name", "").lower()
            else fields.get("Vendor Name", "").strip() or None,
            "kind": "DCU",
            "gfx": name if gfxmod.is_gfx_name(name) else (features.gfx if features else None),
            "name": (fields.get("Marketing Name") or "").strip() or None,
            "pci_device_id": gfxmod.pci_id(hex_in_parens(fields.get("Chip ID"))),
            "unique_id": uuid[4:].lower() if re.fullmatch(r"GPU-[0-9a-fA-F]{16}", uuid) else None,
            "vram_bytes": vram,
            "compute_units": int_value(fields.get("Compute Unit")),
            "source": view.source,
        }
    )


def _flat(lines: list[str], view: SourceView) -> None:
    """No agent markers: grep output or a one-line paste. Each agent-level ``Name: gfx...`` is one
    GPU; ISA names (``amdgcn-amd-amdhsa--...``) give the feature flags."""
    text = "\n".join(lines)
    names = list(_FLAT_NAME_RE.finditer(text))
    isas = [f for f in (gfxmod.split_target(m.group(1)) for m in _ISA_RE.finditer(text)) if f]
    for match in names:
        gpu = GpuFact(gfx=match.group(1), runtime_gfx=match.group(1))
        marketing = _FLAT_MARKETING_RE.search(text, match.end())
        if marketing and not _FLAT_NAME_RE.search(text, match.end(), marketing.start()):
            gpu.marketing_name = marketing.group(1).strip()
        feature = next((f for f in isas if f.gfx == gpu.gfx), None)
        if feature:
            gpu.sramecc, gpu.xnack = feature.sramecc, feature.xnack
        view.gpus.append(gpu)
    if names:
        view.count_exact = False
        view.facts["partial"] = True


def _check_overrides(view: SourceView, gfx_table: GfxTable) -> None:
    """rocminfo prints the runtime's target. When the chip id says another one, an
    HSA_OVERRIDE_GFX_VERSION was in effect: keep the physical target and flag it."""
    for gpu in view.gpus:
        physical = gfxmod.gfx_for_pci(gfx_table, gpu.pci_device_id)
        if gpu.gfx is None and physical:
            gpu.gfx = physical
            continue
        if physical and gpu.runtime_gfx and physical != gpu.runtime_gfx:
            gpu.gfx = physical
            override = gfxmod.to_override(gpu.runtime_gfx)
            view.facts["implied_override"] = override
            view.said(
                "gfx-override/rocminfo",
                runtime=gpu.runtime_gfx,
                physical=physical,
                pci=gpu.pci_device_id,
                override=override,
            )


_HIP_LINE_RE = re.compile(r"^\[GPU ([0-9]{1,9})\]\s++((?:.*\S)?)\s*\Z")


def _hip_device_query(lines: list[str], view: SourceView) -> None:
    """A HIP device-query listing (``[GPU n] value: description``): the same runtime view."""
    gpus: dict[int, GpuFact] = {}
    for line in lines:
        match = _HIP_LINE_RE.match(line)
        if not match:
            continue
        gpu = gpus.setdefault(int(match.group(1)), GpuFact())
        value, _, label = match.group(2).partition(": ")
        if label == "AMD GCN Arch Name" and (target := gfxmod.split_target(value)):
            gpu.gfx = gpu.runtime_gfx = target.gfx
            gpu.sramecc, gpu.xnack = target.sramecc, target.xnack
        elif label.startswith("Number of multi-processors"):
            gpu.compute_units = int_value(value)
        elif label == "Total Global Memory (MB)":
            gpu.vram_bytes = size_to_bytes(f"{value} MB")
        elif not value and gpu.marketing_name is None and match.group(2):
            gpu.marketing_name = match.group(2)
    view.gpus.extend(gpus[i] for i in sorted(gpus))
