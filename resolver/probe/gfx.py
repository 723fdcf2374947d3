"""gfx names: decoding KFD's ``gfx_target_version``, the override variable, ISA suffixes, and the
PCI device id -> product/gfx lookup (from ``matrix/gfx.toml``, the one table the project keeps).

The lookups take a ``GfxTable`` built by the caller from the data's gfx records
(``GfxTable.of(matrix.gfx)``): the probe is the node layer and never loads the data itself.

Sources: ROCR-Runtime libhsakmt ``HSA_GET_GFX_VERSION_*`` (decimal major, one hex digit each for
minor and stepping), ROCR-Runtime topology.c (override format), shared/reference/probe.md §2, §4,
§5.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from resolver.data.model import GfxTarget

_GFX_RE = re.compile(r"^gfx[0-9a-f]{3,4}\Z")
# amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-  /  gfx942:sramecc+:xnack-
_FULL_TARGET_RE = re.compile(r"(gfx[0-9a-f]{3,4})((?::[a-z]+[+-])*)", re.IGNORECASE)
_OVERRIDE_RE = re.compile(r"^\s*([0-9]{1,2})\.([0-9]{1,3})\.([0-9]{1,3})\s*\Z")

# MI300-class targets: the only ones whose KFD nodes can be compute partitions.
PARTITIONABLE = frozenset({"gfx940", "gfx941", "gfx942", "gfx950"})
# Generic ISA names (gfx11-generic, gfx9-4-generic) are never an agent's target.
GENERIC_RE = re.compile(r"^gfx[0-9]+(?:-[0-9]+)*-generic\Z")


def is_gfx_name(text: str | None) -> bool:
    return bool(text) and bool(_GFX_RE.match(text or ""))


def from_target_version(value: int) -> str | None:
    """KFD ``gfx_target_version`` -> gfx name: 90010 -> gfx90a, 110501 -> gfx1151; 0 or a minor or
    stepping above 0xf (no single hex digit) -> None."""
    if value <= 0:
        return None
    major, minor, step = (value // 10000) % 100, (value // 100) % 100, value % 100
    if major == 0 or minor > 0xF or step > 0xF:
        return None
    return f"gfx{major}{minor:x}{step:x}"


def from_override(text: str | None) -> str | None:
    """``HSA_OVERRIDE_GFX_VERSION`` (``major.minor.stepping``, decimal fields: 9.0.10 is gfx90a)
    -> gfx name, or None when the runtime would reject it (major > 63, minor/stepping > 255) or
    when it names no single-hex-digit target."""
    match = _OVERRIDE_RE.match(text or "")
    if not match:
        return None
    major, minor, step = (int(g) for g in match.groups())
    if major > 63 or minor > 255 or step > 255 or minor > 0xF or step > 0xF:
        return None
    return f"gfx{major}{minor:x}{step:x}"


def to_override(gfx: str) -> str | None:
    """gfx1030 -> 10.3.0, gfx90a -> 9.0.10: the override value that makes the runtime load
    ``gfx``."""
    if not is_gfx_name(gfx):
        return None
    digits = gfx[3:]
    major, minor, step = digits[:-2], digits[-2], digits[-1]
    return f"{int(major)}.{int(minor, 16)}.{int(step, 16)}"


@dataclass(frozen=True, slots=True)
class TargetFeatures:
    gfx: str
    sramecc: bool | None
    xnack: bool | None


def split_target(text: str) -> TargetFeatures | None:
    """``amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`` or ``gfx942:sramecc+:xnack-`` -> base target
    and feature flags; None when no gfx target is in the text."""
    match = _FULL_TARGET_RE.search(text or "")
    if not match:
        return None
    flags = {f[:-1].lower(): f.endswith("+") for f in match.group(2).split(":") if f}
    return TargetFeatures(
        gfx=match.group(1).lower(), sramecc=flags.get("sramecc"), xnack=flags.get("xnack")
    )


def pci_id(value: str | int | None) -> str | None:
    """Any spelling of a PCI device id (29857, "0x74A1", "74a1") -> "74a1"; None if it is 0 or not
    one."""
    if value is None:
        return None
    if isinstance(value, int):
        number = value
    else:
        text = value.strip().lower()
        if not text.isascii() or len(text) > 18:
            return None
        try:
            number = (
                int(text, 16)
                if text.startswith("0x") or re.search(r"[a-f]", text)
                else int(text, 10)
            )
        except ValueError:
            return None
    if number <= 0 or number > 0xFFFF:
        return None
    return f"{number:04x}"


@dataclass(frozen=True, slots=True)
class PciEntry:
    gfx: str
    name: str
    revision: str | None
    family: str
    compute_units: int | None


@dataclass(frozen=True, slots=True)
class GfxTable:
    """What the data knows of gfx targets, in the shape the probe looks things up in: PCI device
    id -> products, normalised product name -> targets, target -> families."""

    pci: Mapping[str, tuple[PciEntry, ...]]
    names: Mapping[str, frozenset[str]]
    families: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, targets: Iterable[GfxTarget]) -> GfxTable:
        """The table of the data's gfx records (``Matrix.gfx``)."""
        targets = tuple(targets)
        pci: dict[str, list[PciEntry]] = {}
        names: dict[str, set[str]] = {}
        for target in targets:
            for product in target.products:
                if product.pci_device_id:
                    pci.setdefault(product.pci_device_id.lower(), []).append(
                        PciEntry(
                            gfx=target.name,
                            name=product.name,
                            revision=product.pci_revision,
                            family=product.family,
                            compute_units=product.compute_units,
                        )
                    )
                names.setdefault(_norm_name(product.name), set()).add(target.name)
        return cls(
            pci={k: tuple(v) for k, v in pci.items()},
            names={k: frozenset(v) for k, v in names.items()},
            families={t.name: tuple(t.families) for t in targets},
        )


def gfx_for_pci(table: GfxTable, device_id: str | None) -> str | None:
    """The gfx target of a PCI device id, when the data names exactly one."""
    entries = table.pci.get(device_id or "", ())
    targets = {e.gfx for e in entries}
    return targets.pop() if len(targets) == 1 else None


def product_for_pci(
    table: GfxTable,
    device_id: str | None,
    revision: str | None = None,
    hint: str | None = None,
    compute_units: int | None = None,
) -> str | None:
    """Product name for a PCI id. Among products sharing an id, the revision picks first (RX 9070
    XT / 9070 GRE / 9070), then the whole-device CU count where the data states one (0x74a1:
    MI300X 304, MI300A 228), then a marketing name that names one of them; otherwise the names
    left are joined with " / " so nothing is claimed that the data cannot tell."""
    entries = list(table.pci.get(device_id or "", ()))
    if not entries:
        return None
    if revision:
        exact = [e for e in entries if e.revision and e.revision.lower() == revision.lower()]
        entries = exact or entries
    if compute_units and len({e.name for e in entries}) > 1:
        fitting = [e for e in entries if e.compute_units in (None, compute_units)]
        stated = [e for e in fitting if e.compute_units == compute_units]
        entries = stated or fitting or entries
    names = list(dict.fromkeys(e.name for e in entries))
    if len(names) == 1:
        return names[0]
    if hint:
        norm = _norm_name(hint)
        matching = [n for n in names if _norm_name(n) == norm]
        if not matching:
            # Whole-word matches only, and only one: "MI250X/MI250" (libdrm's name for 740c) names
            # both, so it picks neither.
            matching = [
                n
                for n in names
                if re.search(rf"(?<![a-z0-9]){re.escape(_norm_name(n))}(?![a-z0-9])", norm)
            ]
        if len(matching) == 1:
            return matching[0]
    return " / ".join(names)


def gfx_for_name(table: GfxTable, name: str | None) -> str | None:
    """The gfx target of a product name as amd-smi or rocm-smi print it ("MI300A", "AMD Instinct
    MI350X"), when the data names exactly one; generic names ("AMD Radeon Graphics") never match."""
    if not name or is_generic_marketing_name(name):
        return None
    targets = table.names.get(_norm_name(name), frozenset())
    if not targets and (inner := re.search(r"\[([^\]]+)\]", name)):
        # the PCI database's form rocm-smi prints: "Vega 20 [Radeon Pro VII/Radeon Instinct MI50
        # 32GB]": the products named inside, when those the data knows agree on one target
        found: set[str] = set()
        for part in inner.group(1).split("/"):
            found |= table.names.get(_norm_name(re.sub(r"\b[0-9]+\s*GB\b", "", part)), frozenset())
        targets = frozenset(found)
    return next(iter(targets)) if len(targets) == 1 else None


def is_apu_target(table: GfxTable, gfx: str | None) -> bool:
    """gfx targets the data knows only as Ryzen APUs (integrated graphics)."""
    families = table.families.get(gfx or "", ())
    return bool(families) and set(families) == {"ryzen-apu"}


def is_known(table: GfxTable, gfx: str) -> bool:
    return gfx in table.families


def _norm_name(text: str) -> str:
    text = re.sub(r"\((?:tm|r)\)", "", text.lower())
    text = re.sub(r"\b(?:amd|radeon|instinct|graphics)\b", " ", text)
    return " ".join(text.split())


GENERIC_MARKETING_NAMES = frozenset(
    {"", "amd radeon graphics", "amd radeon(tm) graphics", "radeon graphics"}
)


def is_generic_marketing_name(name: str | None) -> bool:
    """libdrm gives an empty name without amdgpu.ids and 'AMD Radeon Graphics' for unknown ids."""
    return (name or "").strip().lower() in GENERIC_MARKETING_NAMES
