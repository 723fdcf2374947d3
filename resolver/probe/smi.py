"""amd-smi and rocm-smi outputs -> the management library's view of the GPUs.

amd-smi: ``static`` / ``list`` text (``GPU: N`` blocks of ``KEY: value``), their ``--json`` form,
and the default table. rocm-smi: ``--showproductname`` / ``-a`` (``GPU[N] : key: value`` lines) and
the concise table in both its layouts. amd-smi before 6.4 printed broken targets such as "gfx9008"
for gfx908 (amdsmi CHANGELOG, 6.4.0 resolved issues): a target that is not a real gfx name is
replaced by the PCI id's target and reported.
"""

from __future__ import annotations

import re
from typing import Any

from resolver.probe import gfx as gfxmod
from resolver.probe.facts import GpuFact, SourceView
from resolver.probe.gfx import GfxTable
from resolver.probe.text import clean, size_to_bytes
from resolver.util import bounded
from resolver.util.versions import smi_misprint

_AMD_GPU_RE = re.compile(r"^\s*GPU:\s*([0-9]{1,9})\s*\Z")
_AMD_OTHER_RE = re.compile(r"^([A-Z][A-Z_]*):\s*[0-9]+\s*\Z")
# Linear time (see rocminfo._FIELD_RE): no lazy group followed by \s*.
_KV_RE = re.compile(r"^\s*+([A-Z](?:[A-Z0-9_]|[ ]++(?=[A-Z0-9_]))*+)\s*+:\s*+((?:.*\S)?)\s*\Z")
_ROCM_SMI_KV_RE = re.compile(
    r"^\s*+(?:GPU|card)\[([0-9]{1,9})\]\s*+:\s*+([^:\s](?:[^:\s]|\s++(?=[^:\s]))*+)\s*+:\s*+((?:.*\S)?)\s*\Z"
)
_AMD_HEADER_RE = re.compile(r"AMD-SMI\s+(\S+)\s+amdgpu version:\s*(\S+)\s+ROCm version:\s*(\S+)")
_BDF_ROW_RE = re.compile(
    r"^\|\s*([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\s+(.*?)\s*\|", re.IGNORECASE
)
_PARTITIONS = {"SPX", "DPX", "TPX", "QPX", "CPX"}
_MEM_PARTITIONS = {"NPS1", "NPS2", "NPS4", "NPS8"}


def parse_amd_smi(text: str, *, gfx_table: GfxTable) -> SourceView:
    view = SourceView(source="amd-smi")
    if (as_json := _amd_smi_json(text, view, gfx_table)) is not None:
        return as_json
    lines = clean(text)
    header = _amd_header(lines, view)
    blocks = _amd_text_blocks(lines)
    if blocks:
        for index in sorted(blocks):
            view.gpus.append(_amd_gpu(blocks[index], view, gfx_table))
    elif header:
        for line in lines:
            if row := _BDF_ROW_RE.match(line):
                view.gpus.append(
                    GpuFact(bdf=row.group(1).lower(), marketing_name=row.group(2) or None)
                )
    return _finish(view, "amd-smi", gfx_table)


def _amd_smi_json(text: str, view: SourceView, gfx_table: GfxTable) -> SourceView | None:
    """The finished view when ``text`` is JSON (amd-smi's, or rocm-smi's given as amd-smi
    output); None when it is not JSON, so the text form is read instead."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        data = bounded.loads_json(stripped)
    except ValueError:
        return None
    if isinstance(data, dict) and any(_CARD_RE.match(str(k)) for k in data):
        # a `rocm-smi --json` given as amd-smi output: read it as such
        return parse_rocm_smi(text, gfx_table=gfx_table)
    if data is None:
        return None
    _amd_json(data, view, gfx_table)
    return _finish(view, "amd-smi", gfx_table)


def _amd_header(lines: list[str], view: SourceView) -> re.Match[str] | None:
    """The table header's amd-smi, driver and ROCm versions, into the view."""
    header = next((m for m in (_AMD_HEADER_RE.search(line) for line in lines) if m), None)
    if header:
        view.facts["amd_smi_version"] = header.group(1)
        if re.match(r"^[0-9]+\.[0-9]+", header.group(2)):
            view.driver_version = header.group(2)
        view.rocm_version = (
            header.group(3) if re.match(r"^[0-9]+\.[0-9]+", header.group(3)) else None
        )
    return header


def _amd_text_blocks(lines: list[str]) -> dict[int, dict[str, str]]:
    """The text form's ``GPU: n`` blocks -> their keys, as ``KEY`` and ``SECTION.KEY`` (the first
    value of each wins)."""
    blocks: dict[int, dict[str, str]] = {}
    current: dict[str, str] | None = None
    sections: list[tuple[int, str]] = []  # (indent, NAME) of the enclosing "NAME:" lines
    for line in lines:
        if match := _AMD_GPU_RE.match(line):
            current = blocks.setdefault(int(match.group(1)), {})
            sections = []
            continue
        if _AMD_OTHER_RE.match(line):
            current = None  # CPU: n / AI_NIC: n blocks describe no GPU
            continue
        kv = _KV_RE.match(line)
        if current is None or not kv:
            continue
        depth = len(line) - len(line.lstrip())
        key = kv.group(1).strip().upper().replace(" ", "_")
        sections = [(d, name) for d, name in sections if d < depth]
        if not kv.group(2):
            sections.append((depth, key))
            continue
        if _value(kv.group(2)) is None:
            continue  # "N/A" says nothing and must not hide the same key of a later section
        if sections:
            current.setdefault(f"{sections[-1][1]}.{key}", kv.group(2))
        current.setdefault(key, kv.group(2))
    return blocks


def _amd_json(data: Any, view: SourceView, gfx_table: GfxTable) -> None:
    records = data.get("gpu_data", data.get("gpus", [data])) if isinstance(data, dict) else data
    if not isinstance(records, list):
        return
    for record in records:
        if not isinstance(record, dict):
            continue
        flat: dict[str, str] = {}
        _flatten(record, flat)
        if not flat:
            continue  # an empty object describes no GPU
        view.gpus.append(_amd_gpu(flat, view, gfx_table))


def _flatten(obj: Any, out: dict[str, str], prefix: str = "", section: str = "") -> None:
    """JSON record -> the text form's keys: ``KEY`` and ``SECTION.KEY`` (first one wins), so
    ``driver.version`` is not hidden by ``vbios.version``."""
    if isinstance(obj, dict):
        if set(obj) >= {"value", "unit"} and not isinstance(obj["value"], (dict, list)):
            _put(out, prefix, section, f"{obj['value']} {obj['unit']}")
            return
        for key, value in obj.items():
            _flatten(value, out, str(key).upper(), prefix)
    elif isinstance(obj, list):
        return
    elif obj is not None and _value(str(obj)) is not None:
        _put(out, prefix, section, str(obj))


def _put(out: dict[str, str], key: str, section: str, value: str) -> None:
    if section:
        out.setdefault(f"{section}.{key}", value)
    out.setdefault(key, value)


def _amd_gpu(kv: dict[str, str], view: SourceView, gfx_table: GfxTable) -> GpuFact:
    gpu = GpuFact()
    gpu.marketing_name = _value(kv.get("MARKET_NAME"))
    gpu.pci_device_id = gfxmod.pci_id(_value(kv.get("DEVICE_ID")))
    rev = _value(kv.get("REV_ID"))
    gpu.pci_revision = rev.lower().removeprefix("0x").zfill(2) if rev else None
    cus = _value(kv.get("NUM_COMPUTE_UNITS"))
    gpu.compute_units = bounded.ascii_int(cus)
    target = (_value(kv.get("TARGET_GRAPHICS_VERSION")) or "").lower()
    if target and smi_misprint(target):
        _smi_target(target, gpu, view)
    elif gfxmod.is_gfx_name(target) and (
        gfxmod.is_known(gfx_table, target) or not gfxmod.gfx_for_pci(gfx_table, gpu.pci_device_id)
    ):
        gpu.gfx = gpu.runtime_gfx = target
    elif target:
        physical = gfxmod.gfx_for_pci(gfx_table, gpu.pci_device_id)
        gpu.gfx = gpu.runtime_gfx = physical
        view.said(
            "amd-smi-bad-target/pci" if physical else "amd-smi-bad-target",
            target=target,
            pci=gpu.pci_device_id,
            physical=physical,
        )
    gpu.compute_partition = _choice(
        kv.get("COMPUTE_PARTITION") or kv.get("ACCELERATOR_PARTITION"), _PARTITIONS
    )
    gpu.memory_partition = _choice(kv.get("MEMORY_PARTITION"), _MEM_PARTITIONS)
    bdf = _value(kv.get("BUS.BDF") or kv.get("BDF"))
    gpu.bdf = bdf.lower() if bdf and re.fullmatch(r"[0-9a-fA-F:.]+", bdf) else None
    serial = _value(kv.get("ASIC.ASIC_SERIAL") or kv.get("ASIC_SERIAL"))
    if serial and re.fullmatch(r"0x[0-9a-fA-F]{16}", serial):
        # the ASIC serial is the device's unique_id (amdsmi reads .../device/unique_id)
        gpu.unique_id = serial[2:].lower()
    uuid = _uuid_parts(_value(kv.get("UUID")))
    if uuid:
        gpu.unique_id = gpu.unique_id or uuid[1]
        if gpu.pci_device_id is None:
            gpu.pci_device_id = uuid[0]
    size = _value(
        kv.get("VRAM.SIZE") or kv.get("VRAM.VRAM_SIZE") or kv.get("VRAM_SIZE") or kv.get("SIZE")
    )
    gpu.vram_bytes = size_to_bytes(size)
    version = _value(
        kv.get("DRIVER.VERSION") or kv.get("DRIVER.DRIVER_VERSION") or kv.get("DRIVER_VERSION")
    )
    if version and re.match(r"^[0-9]+\.[0-9]+", version) and view.driver_version is None:
        view.driver_version = version
    return gpu


_AMD_UUID_RE = re.compile(
    r"^([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{4})-([0-9a-f]{4})-1[0-9a-f]{3}-[89ab][0-9a-f]([0-9a-f]{2})-([0-9a-f]{4})([0-9a-f]{8})\Z"
)


def _uuid_parts(text: str | None) -> tuple[str, str] | None:
    """amd-smi's UUID -> (PCI device id, unique_id). amdsmi_uuid_gen (ROCm/amdsmi
    src/amd_smi/amd_smi_uuid.cc) packs the device id into the low 16 bits of the first group,
    a function/partition byte above it, and the 64-bit ASIC serial (= KFD unique_id) into the top
    byte of the first group, the clock-sequence-low byte and the last 12 hex digits:
    ``67ff740f-0000-1000-80e6-b5bb3c3ce0db`` is device 0x740f, serial 67e6b5bb3c3ce0db."""
    match = _AMD_UUID_RE.match((text or "").strip().lower())
    if not match:
        return None
    top, _fcn, did, mid, low6, hi4, lo8 = match.groups()
    if mid != "0000":
        return None
    device = gfxmod.pci_id("0x" + did)
    serial = f"{top}{low6}{hi4}{lo8}"
    return (device, serial) if device and serial.strip("0") else None


def parse_rocm_smi(text: str, *, gfx_table: GfxTable) -> SourceView:
    """``rocm-smi`` text (``GPU[N] : key: value`` lines, the concise tables) or its ``--json``
    form (``{"card0": {...}, "system": {...}}``), told apart by content."""
    view = SourceView(source="rocm-smi")
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            data = bounded.loads_json(stripped)
        except ValueError:
            data = None
        if (
            isinstance(data, dict)
            and not any(_CARD_RE.match(str(k)) for k in data)
            and ("gpu_data" in data or "gpu" in data)
        ):
            # an `amd-smi --json` given as rocm-smi output
            return parse_amd_smi(text, gfx_table=gfx_table)
        if isinstance(data, dict):
            _rocm_smi_json(data, view)
            return _finish(view, "rocm-smi", gfx_table)
        if isinstance(data, list):
            return parse_amd_smi(text, gfx_table=gfx_table)
    lines = clean(text)
    if _csv(lines, view):
        return _finish(view, "rocm-smi", gfx_table)
    if not any(_ROCM_SMI_KV_RE.match(line) for line in lines) and any(
        _AMD_GPU_RE.match(line) for line in lines
    ):
        # amd-smi's `GPU: N` blocks given as rocm-smi output
        return parse_amd_smi(text, gfx_table=gfx_table)
    per_gpu: dict[int, dict[str, str]] = {}
    for line in lines:
        if match := _ROCM_SMI_KV_RE.match(line):
            _put_key(per_gpu.setdefault(int(match.group(1)), {}), match.group(2), match.group(3))
        elif (kv := re.match(r"^\s*Driver version:\s*(\S+)", line)) and view.driver_version is None:
            view.driver_version = kv.group(1)
    if per_gpu:
        for index in sorted(per_gpu):
            gpu = _rocm_smi_gpu(per_gpu[index], view)
            if gpu is not None:
                view.gpus.append(gpu)
    else:
        _concise(lines, view)
    return _finish(view, "rocm-smi", gfx_table)


_CARD_RE = re.compile(r"^card([0-9]{1,9})\Z")


def _rocm_smi_json(data: dict[str, Any], view: SourceView) -> None:
    """``rocm-smi ... --json``: one object per ``cardN`` with the text form's keys (their spelling
    varies across ROCm versions), and ``system`` with the driver version."""
    system = data.get("system")
    if isinstance(system, dict):
        version = system.get("Driver version") or system.get("Driver Version")
        if isinstance(version, str) and re.match(r"^[0-9]+\.[0-9]+", version.strip()):
            view.driver_version = version.strip()
    cards = sorted(
        (
            (int(m.group(1)), value)
            for key, value in data.items()
            if (m := _CARD_RE.match(str(key)))
        ),
        key=lambda item: item[0],
    )
    for _, record in cards:
        if not isinstance(record, dict):
            continue
        kv: dict[str, str] = {}
        for key, value in record.items():
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                _put_key(kv, str(key), str(value))
        gpu = _rocm_smi_gpu(kv, view)
        if gpu is not None and any(getattr(gpu, name) is not None for name in gpu.__slots__):
            view.gpus.append(gpu)  # a card entry that states nothing is not evidence of a GPU


def _put_key(kv: dict[str, str], key: str, value: str) -> None:
    """Keys are matched lower-cased, except one: ``Card model`` (ROCm <= 6.0) is the subsystem
    id, ``Card Model`` (ROCm 6.1 on) the PCI device id."""
    name = key.strip().rstrip(":").strip()
    if name == "Card Model":
        kv.setdefault("device id", value)
    kv.setdefault(name.lower(), value)


def _csv(lines: list[str], view: SourceView) -> bool:
    """``rocm-smi ... --csv``: a ``device,...`` header, then one ``cardN,...`` row per GPU (a
    warning line may come first)."""
    import csv

    start = next((i for i, line in enumerate(lines) if line.startswith("device,")), None)
    if start is None:
        return False
    header = next(csv.reader([lines[start]]))
    for row in csv.reader(line for line in lines[start + 1 :] if _CARD_ROW_RE.match(line)):
        kv: dict[str, str] = {}
        for key, value in zip(header[1:], row[1:], strict=False):
            _put_key(kv, key, value)
        gpu = _rocm_smi_gpu(kv, view)
        if gpu is not None and any(getattr(gpu, name) is not None for name in gpu.__slots__):
            view.gpus.append(gpu)
    return True


_CARD_ROW_RE = re.compile(r"^card[0-9]+,")


# "vram Total Memory (MiB)" (Hygon's rocm-smi), "VRAM Total Memory (B)" (AMD's)
_VRAM_KEY_RE = re.compile(r"^vram total memory \((b|kib|kb|mib|mb|gib|gb)\)\Z")
_VRAM_FACTOR = {
    "b": 1,
    "kib": 1024,
    "kb": 1024,
    "mib": 1024**2,
    "mb": 1024**2,
    "gib": 1024**3,
    "gb": 1024**3,
}
_HEXISH_RE = re.compile(r"^0x[0-9a-fA-F]+\Z")


def _rocm_smi_gpu(kv: dict[str, str], view: SourceView) -> GpuFact | None:
    """One device from rocm-smi's keys (lower-cased). Key names across ROCm versions: ``GPU ID``
    (<= 5.7) / ``Device ID``; ``Card series`` / ``Card Series``; ``Card model`` / ``Card Model``
    (see ``_put_key``) is a name only when it is not a hex number."""
    vendor = (_value(kv.get("card vendor")) or "").lower()
    if any(word in vendor for word in _FOREIGN_VENDORS):
        _foreign(kv, vendor, view)
        return None
    gpu = GpuFact()
    names = [_value(kv.get(k)) for k in ("card series", "device name", "card model")]
    gpu.marketing_name = next((n for n in names if n and not _HEXISH_RE.match(n)), None)
    gpu.pci_device_id = gfxmod.pci_id(_value(kv.get("device id") or kv.get("gpu id")))
    rev = _value(kv.get("device rev"))
    gpu.pci_revision = (
        rev.lower().removeprefix("0x").zfill(2) if rev and _HEXISH_RE.match(rev) else None
    )
    _smi_target(_value(kv.get("gfx version")), gpu, view)
    gpu.unique_id = _unique_id(_value(kv.get("unique id")))
    gpu.compute_partition = _choice(
        kv.get("compute partition") or kv.get("current compute partition"), _PARTITIONS
    )
    gpu.memory_partition = _choice(
        kv.get("memory partition") or kv.get("current memory partition"), _MEM_PARTITIONS
    )
    gpu.vram_bytes = _rocm_smi_vram(kv)
    bus = _value(kv.get("pci bus"))
    gpu.bdf = bus.lower() if bus and _BDF_RE.fullmatch(bus) else None
    return gpu


_BDF_RE = re.compile(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")
_FOREIGN_VENDORS = ("haiguang", "hygon")


def _rocm_smi_vram(kv: dict[str, str]) -> int | None:
    for key, raw in kv.items():
        match = _VRAM_KEY_RE.match(key)
        value = _value(raw)
        if match and value and (number := bounded.ascii_int(value)) is not None:
            return number * _VRAM_FACTOR[match.group(1)]
    return None


def _unique_id(text: str | None) -> str | None:
    """``0x2150e7d042a1124``, ``0x8d1457e2c20f59d2`` or ``7100fa8866904061`` -> 16 hex digits."""
    if not text:
        return None
    digits = text.lower().removeprefix("0x")
    if not re.fullmatch(r"[0-9a-f]{1,16}", digits) or not digits.strip("0"):
        return None
    return digits.zfill(16)


def _smi_target(target: str | None, gpu: GpuFact, view: SourceView) -> None:
    """rocm-smi's ``GFX Version``: taken when it is a real name; a known misprint (``gfx9010``,
    ``gfx11001``) is read as the target it stands for and said so."""
    name = (target or "").strip().lower()
    if not name:
        return
    fixed = smi_misprint(name)
    if fixed:
        gpu.gfx = gpu.runtime_gfx = fixed
        view.said("smi-misprinted-target", source=view.source, name=name, fixed=fixed)
    elif gfxmod.is_gfx_name(name):
        gpu.gfx = gpu.runtime_gfx = name


def _foreign(kv: dict[str, str], vendor: str, view: SourceView) -> None:
    """A device that is not an AMD GPU (a Hygon DCU speaks the same rocm-smi)."""
    view.facts.setdefault("other_devices", []).append(
        {
            "vendor": "hygon" if any(w in vendor for w in _FOREIGN_VENDORS) else vendor,
            "kind": "DCU",
            "gfx": None,
            "name": _value(kv.get("card series") or kv.get("device name")),
            "pci_device_id": gfxmod.pci_id(_value(kv.get("device id"))),
            "unique_id": _unique_id(_value(kv.get("unique id"))),
            "vram_bytes": _rocm_smi_vram(kv),
            "compute_units": None,
            "source": view.source,
        }
    )


def _concise(lines: list[str], view: SourceView) -> None:
    """Both concise layouts: ``0  1  0x73df,  61797 ... N/A, N/A, 0`` (DID, GUID) and
    ``0  [0x74a1 : 0x00] ... NPS1, SPX`` with the name on the next line."""
    in_table = False
    last: GpuFact | None = None
    for line in lines:
        if "Concise Info" in line:
            in_table = True
            continue
        if not in_table or line.startswith("="):
            continue
        if re.match(r"^[0-9]+\s", line):
            gpu = GpuFact()
            did = re.search(r"\b0x([0-9a-fA-F]{4})\b", line)
            gpu.pci_device_id = gfxmod.pci_id("0x" + did.group(1)) if did else None
            rev = re.search(r"\[0x[0-9a-fA-F]{4}\s*:\s*0x([0-9a-fA-F]{1,2})\]", line)
            gpu.pci_revision = rev.group(1).lower().zfill(2) if rev else None
            part = re.search(r"\b(NPS[0-9]|N/A),\s*(SPX|DPX|TPX|QPX|CPX|N/A)\b", line)
            if part:
                gpu.memory_partition = _choice(part.group(1), _MEM_PARTITIONS)
                gpu.compute_partition = _choice(part.group(2), _PARTITIONS)
            view.gpus.append(gpu)
            last = gpu
        elif last is not None and line.strip() and not last.marketing_name and line.startswith(" "):
            last.marketing_name = line.strip()
        elif "End of ROCm SMI Log" in line:
            break


def _finish(view: SourceView, tool: str, gfx_table: GfxTable) -> SourceView:
    for gpu in view.gpus:
        if gpu.gfx is None:
            # no target printed: the PCI id, else a product name the data knows ("MI300A")
            gpu.gfx = gpu.runtime_gfx = gfxmod.gfx_for_pci(
                gfx_table, gpu.pci_device_id
            ) or gfxmod.gfx_for_name(gfx_table, gpu.marketing_name)
    if not view.gpus and not view.facts.get("other_devices"):
        view.said("no-gpu-amd-smi" if tool == "amd-smi" else "no-gpu-rocm-smi")
    return view


def _value(text: str | None) -> str | None:
    if text is None:
        return None
    value = text.strip()
    return None if value in {"", "N/A", "n/a", "<redacted>"} else value


def _choice(text: str | None, allowed: set[str]) -> str | None:
    value = (_value(text) or "").upper()
    return value if value in allowed else None
