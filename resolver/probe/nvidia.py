"""NVIDIA GPUs, read from NVIDIA's own tool (issue 26, first step: the probe).

``nvidia-smi -q -x`` (XML: the driver and the CUDA version it supports, and per GPU the product,
architecture, PCI ids and bus id, memory, MIG mode, UUID) and ``nvidia-smi --query-gpu=...
--format=csv`` (the compute capability, which the XML does not carry) are read live where
``nvidia-smi`` is on PATH, or from saved files (``probe --nvidia-smi FILE``: XML, CSV or the
plain ``nvidia-smi`` table, told apart by content). Without the tool, ``host.nvidia_devices``
still notices the GPU from ``/proc/driver/nvidia/version`` and the device nodes. A compute
capability nvidia-smi did not say is filled from the data (``fill_capabilities``: the caller's
``nvidia-gpus.toml`` records, by PCI device id, else by product name), with where it came from.

The result is plain data for ``host.other_devices`` (one entry per GPU, ``vendor: "nvidia"``)
and ``host.nvidia`` (driver, CUDA, where each came from); nothing here plans. Every value is
checked against a pattern before it is kept: a field that does not match is left out.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

from resolver.probe import tools

TIMEOUT = 15.0
QUERY = (
    "index,name,pci.bus_id,pci.device_id,compute_cap,memory.total,driver_version,"
    "mig.mode.current,uuid"
)
MAX_XML = 16 * 1024 * 1024
_VERSION = re.compile(r"[0-9]{1,4}(?:\.[0-9]{1,4}){1,3}")
_CUDA = re.compile(r"[0-9]{1,2}\.[0-9]{1,2}")
_CAPABILITY = re.compile(r"[0-9]{1,2}\.[0-9]{1,2}")
_BUS = re.compile(r"(?:[0-9A-Fa-f]{4})?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")
_DEVICE_ID = re.compile(r"(?:0x)?([0-9A-Fa-f]{4})10[dD][eE]")  # 0x233510DE: device, vendor
_MIB = re.compile(r"([0-9]{1,9}) MiB")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._()/+-]{0,79}")
_UUID = re.compile(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ARCH = re.compile(r"[A-Za-z]{2,20}")
_MIG = {"enabled": True, "disabled": False}
# The plain table's banner: "NVIDIA-SMI 580.159.04  Driver Version: 580.159.04  CUDA Version: 13.0"
_BANNER = re.compile(r"NVIDIA-SMI\s+\S+\s+Driver Version:\s+(\S+)\s+CUDA Version:\s+(\S+)")
_TABLE_MIB = re.compile(r"([0-9]{1,9})MiB\s*/\s*([0-9]{1,9})MiB")


@dataclass(slots=True)
class NvidiaReading:
    """What nvidia-smi said: the node's driver and CUDA version, and one dict per GPU."""

    driver: str | None = None
    cuda: str | None = None
    gpus: list[dict[str, Any]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def host_facts(self) -> dict[str, Any]:
        return {"driver": self.driver, "cuda": self.cuda, "sources": list(self.sources)}


def _kept(pattern: re.Pattern[str], text: str | None) -> str | None:
    value = (text or "").strip()
    return value if pattern.fullmatch(value) else None


def _gpu(**facts: Any) -> dict[str, Any]:
    """One GPU in the shape of ``host.other_devices`` (the fields the AMD entries have, too)."""
    return {
        "vendor": "nvidia",
        "kind": "GPU",
        "gfx": None,
        "name": facts.get("name"),
        "pci_device_id": facts.get("pci_device_id"),
        "pci_bdf": facts.get("pci_bdf"),
        "unique_id": facts.get("uuid"),
        "vram_bytes": facts.get("vram_bytes"),
        "compute_units": None,
        "compute_capability": facts.get("compute_capability"),
        "compute_capability_source": "nvidia-smi" if facts.get("compute_capability") else None,
        "architecture": facts.get("architecture"),
        "mig": facts.get("mig"),
        "driver": facts.get("driver"),
    }


def _bus(text: str | None) -> str | None:
    match = _BUS.fullmatch((text or "").strip())
    return match.group(1).lower() if match else None


def _device_id(text: str | None) -> str | None:
    match = _DEVICE_ID.fullmatch((text or "").strip())
    return match.group(1).lower() if match else None


def _mib(text: str | None) -> int | None:
    match = _MIB.fullmatch((text or "").strip())
    return int(match.group(1)) * 1024 * 1024 if match else None


def parse_xml(text: str) -> NvidiaReading | None:
    """``nvidia-smi -q -x``; None when the text is not that XML. Entity declarations are refused
    before parsing (nvidia-smi writes none; they are how an XML file grows without bound)."""
    if len(text) > MAX_XML or "<!ENTITY" in text or "<nvidia_smi_log" not in text:
        return None
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        return None
    if root.tag != "nvidia_smi_log":
        return None
    reading = NvidiaReading(
        driver=_kept(_VERSION, root.findtext("driver_version")),
        cuda=_kept(_CUDA, root.findtext("cuda_version")),
        sources=["nvidia-smi -q -x"],
    )
    for gpu in root.findall("gpu"):
        mig = (gpu.findtext("mig_mode/current_mig") or "").strip().lower()
        reading.gpus.append(
            _gpu(
                name=_kept(_NAME, gpu.findtext("product_name")),
                architecture=_kept(_ARCH, gpu.findtext("product_architecture")),
                pci_device_id=_device_id(gpu.findtext("pci/pci_device_id")),
                pci_bdf=_bus(gpu.findtext("pci/pci_bus_id") or gpu.get("id")),
                uuid=_kept(_UUID, gpu.findtext("uuid")),
                vram_bytes=_mib(gpu.findtext("fb_memory_usage/total")),
                mig=_MIG.get(mig),
                driver=reading.driver,
            )
        )
    return reading


def parse_csv(text: str) -> NvidiaReading | None:
    """``nvidia-smi --query-gpu=FIELDS --format=csv`` with its header line (any of the fields of
    ``QUERY``, in any order); None when the header is not one."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or "name" not in [h.strip() for h in lines[0].split(",")]:
        return None
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True))
    except csv.Error:  # a field past csv's 131,072-character limit, a NUL: not nvidia-smi's
        return None
    header = [h.split(" [", 1)[0].strip() for h in rows[0]]
    reading = NvidiaReading(sources=["nvidia-smi --query-gpu"])
    for row in rows[1:]:
        if len(row) != len(header):
            continue
        cell = dict(zip(header, (c.strip() for c in row), strict=True))
        mib = cell.get("memory.total")
        driver = _kept(_VERSION, cell.get("driver_version"))
        reading.driver = reading.driver or driver
        reading.gpus.append(
            _gpu(
                name=_kept(_NAME, cell.get("name")),
                pci_device_id=_device_id(cell.get("pci.device_id")),
                pci_bdf=_bus(cell.get("pci.bus_id")),
                compute_capability=_kept(_CAPABILITY, cell.get("compute_cap")),
                uuid=_kept(_UUID, cell.get("uuid")),
                vram_bytes=_mib(f"{mib} MiB" if mib and mib.isdigit() else mib),
                mig=_MIG.get((cell.get("mig.mode.current") or "").lower()),
                driver=driver,
            )
        )
    return reading


def parse_table(text: str) -> NvidiaReading | None:
    """The plain ``nvidia-smi`` table: the banner (driver, CUDA) and per GPU its index line
    (index, product, bus id), the line below it (memory) and the MIG cell. It names no PCI device
    id or compute capability (``fill_capabilities`` adds the latter from the data by name); a
    product name the table cut short ("...") is kept as printed. None when there is no banner."""
    if len(text) > MAX_XML:
        return None
    banner = _BANNER.search(text)
    if banner is None:
        return None
    reading = NvidiaReading(
        driver=_kept(_VERSION, banner.group(1)),
        cuda=_kept(_CUDA, banner.group(2)),
        sources=["nvidia-smi"],
    )
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = line.split("|")
        if len(cells) < 5:  # a GPU's lines have three cells between bars; the process list one
            continue
        words = cells[1].split()
        bus = _bus(cells[2].split()[0]) if cells[2].split() else None
        if len(words) < 2 or not words[0].isdigit() or bus is None:
            continue
        name = words[1:-1] if words[-1] in ("On", "Off") else words[1:]
        below = lines[i + 1].split("|") if i + 1 < len(lines) else []
        mib = _TABLE_MIB.search(below[2]) if len(below) > 2 else None
        third = lines[i + 2].split("|") if i + 2 < len(lines) else []
        mig = third[3].strip().lower() if len(third) > 3 else ""
        reading.gpus.append(
            _gpu(
                name=_kept(_NAME, " ".join(name)),
                pci_bdf=bus,
                vram_bytes=int(mib.group(2)) * 1024 * 1024 if mib else None,
                mig=_MIG.get(mig),
                driver=reading.driver,
            )
        )
    return reading


def parse(text: str) -> NvidiaReading | None:
    """A saved nvidia-smi output, XML, CSV or the plain table, told apart by content."""
    if "<nvidia_smi_log" in text:
        return parse_xml(text)
    if _BANNER.search(text[:4096]):
        return parse_table(text)
    return parse_csv(text)


def fill_capabilities(
    gpus: list[dict[str, Any]], known: Callable[[str | None, str | None], str | None]
) -> None:
    """Each GPU's compute capability where nvidia-smi did not say it (the XML and the plain table
    never do): ``known(pci_device_id, name)``, the caller's data (the probe never loads it). Each
    GPU says where its capability came from: ``nvidia-smi``, ``nvidia-gpus.toml`` or nowhere
    (null: the solver then answers unknown, never supported)."""
    for gpu in gpus:
        if gpu.get("compute_capability"):
            continue
        cap = known(gpu.get("pci_device_id"), gpu.get("name"))
        if cap is not None and _CAPABILITY.fullmatch(cap):
            gpu["compute_capability"] = cap
            gpu["compute_capability_source"] = "nvidia-gpus.toml"


def merge(readings: list[NvidiaReading]) -> NvidiaReading | None:
    """The XML's view, with what the CSV adds (the compute capability) matched by bus id."""
    readings = [r for r in readings if r is not None and r.gpus]
    if not readings:
        return None
    base = readings[0]
    for other in readings[1:]:
        base.driver = base.driver or other.driver
        base.cuda = base.cuda or other.cuda
        base.sources += [s for s in other.sources if s not in base.sources]
        by_bus = {g["pci_bdf"]: g for g in other.gpus if g.get("pci_bdf")}
        for gpu in base.gpus:
            extra = by_bus.get(gpu.get("pci_bdf"))
            if extra is None:
                continue
            for key, value in extra.items():
                if gpu.get(key) is None and value is not None:
                    gpu[key] = value
    return base


def read_live(env: Mapping[str, str]) -> NvidiaReading | None:
    """Ask nvidia-smi (XML, then the CSV query); None when it is not there or says nothing."""
    xml = tools.run("nvidia-smi", ["-q", "-x"], env, timeout=TIMEOUT)
    query = tools.run("nvidia-smi", [f"--query-gpu={QUERY}", "--format=csv"], env, timeout=TIMEOUT)
    return merge([r for r in (parse_xml(xml or ""), parse_csv(query or "")) if r is not None])
