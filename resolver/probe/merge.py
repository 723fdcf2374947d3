"""Several sources -> one ``Node``. sysfs (the kernel's view) wins over amd-smi and rocm-smi,
which win over rocminfo (the runtime's view) and rocm_agent_enumerator; what they disagree on
becomes a problem, never a wipe: a source that names no target takes it from one that does, and
devices only another source lists (with their own PCI address or unique id) are added. Which
source gave each field goes to ``host.gpu_sources``.

Counting: ``logical_gpu_count`` = GPU agents a deployment can use; ``physical_gpu_count`` =
distinct devices (partitions share unique_id and PCI bus:device); an APU beside a discrete GPU is
listed with ``integrated: true`` and counted nowhere; a lone APU is the target and counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from resolver.data import words
from resolver.data.node import Gpu, Node, Origin, Partition, Problem
from resolver.probe import gfx as gfxmod
from resolver.probe.facts import GpuFact, SourceView
from resolver.probe.gfx import GfxTable

PRIORITY = ("sysfs", "amd-smi", "rocm-smi", "rocminfo", "rocm_agent_enumerator")
# Fields a GPU record reports, with the source that said each (``host.gpu_sources``).
_PROVENANCE = (
    "gfx",
    "runtime_gfx",
    "marketing_name",
    "pci_device_id",
    "compute_units",
    "vram_bytes",
    "unique_id",
    "compute_partition",
    "memory_partition",
    "bdf",
)
_FILL = (
    "marketing_name",
    "pci_device_id",
    "pci_revision",
    "compute_units",
    "vram_bytes",
    "unique_id",
    "compute_partition",
    "memory_partition",
    "apu",
    "xnack",
    "sramecc",
    "bdf",
)


def merge(
    views: Sequence[SourceView],
    *,
    origin: str,
    gfx_table: GfxTable,
    env: Mapping[str, str] | None = None,
) -> tuple[Node, list[Problem]]:
    """The merged node (without host facts) and the problems found, in source order."""
    ordered = sorted(
        views, key=lambda v: PRIORITY.index(v.source) if v.source in PRIORITY else len(PRIORITY)
    )
    problems: list[Problem] = [p for v in ordered for p in v.problems]
    with_gpus = [v for v in ordered if v.gpus]
    base = next((v for v in with_gpus if v.count_exact), with_gpus[0] if with_gpus else None)
    facts: list[GpuFact] = (
        [GpuFact(**{s: getattr(g, s) for s in GpuFact.__slots__}) for g in base.gpus]
        if base
        else []
    )
    said: dict[int, dict[str, str]] = {
        id(f): {n: base.source for n in _PROVENANCE if getattr(f, n) is not None}
        for f in facts
        if base is not None
    }
    for other in with_gpus:
        if other is base or base is None:
            continue
        _enrich(facts, base, other, problems, said)
        if base.source != "sysfs":
            _add_unlisted(facts, other, said)
    override = _apply_env_override(facts, env or {}, problems)
    implied = next(
        (v.facts.get("implied_override") for v in ordered if v.facts.get("implied_override")), None
    )
    if base is not None and not base.count_exact:
        problems.append(Problem.said("partial-input", source=base.source))
    for fact in facts:
        fact.apu = bool(fact.apu) or gfxmod.is_apu_target(gfx_table, fact.gfx)
    has_discrete = any(not f.apu for f in facts)
    gpus = _gpus(facts, has_discrete, problems, gfx_table)
    counted = [g for g in gpus if not g.integrated]
    # Devices whose target no source states still count: the node has them.
    counted_facts = [(i, f) for i, f in enumerate(facts) if not (f.apu and has_discrete)]
    keys = {f.physical_key(i) for i, f in counted_facts}
    unknown = [f for _, f in counted_facts if not (f.gfx and gfxmod.is_gfx_name(f.gfx))]
    if unknown and not any(p.code == "gpu-target-unknown" for p in problems):
        problems.append(Problem.said("gpu-target-unknown", count=len(unknown)))
    driver = next((v.driver_version for v in ordered if v.driver_version), None)
    rocm = next((v.rocm_version for v in ordered if v.rocm_version), None)
    host: dict[str, Any] = {}
    listed = _with_gfx(facts)
    if listed:
        host["gpu_sources"] = [dict(sorted(said.get(id(f), {}).items())) for f in listed]
    if unknown:
        host["unidentified_gpus"] = [_unidentified(f) for f in unknown]
    others = other_devices(ordered)
    if others:
        host["other_devices"] = others
    node = Node(
        gpus=tuple(gpus),
        gfx_targets=tuple(sorted({g.gfx for g in counted})),
        physical_gpu_count=len(keys),
        logical_gpu_count=len(counted_facts),
        hsa_override_gfx_version=override or implied,
        rocm_version=rocm,
        driver_version=driver,
        origin=Origin(origin),
        host=host,
    )
    from resolver.data.partitions import partition_problems

    problems += partition_problems(node.gpus)
    return node, _dedupe(problems)


def _unidentified(fact: GpuFact) -> dict[str, Any]:
    """A GPU the sources list without a target: counted, and what is known of it kept."""
    return {
        "pci_device_id": fact.pci_device_id,
        "marketing_name": fact.marketing_name,
        "vram_bytes": fact.vram_bytes,
        "unique_id": fact.unique_id,
        "pci_bdf": fact.bdf,
        "compute_units": fact.compute_units,
    }


def other_devices(views: Sequence[SourceView]) -> list[dict[str, Any]]:
    """Accelerators that are not AMD GPUs (a Hygon DCU, an NVIDIA or Intel GPU), one per device
    across sources (matched by unique id, else PCI address), later sources filling gaps."""
    out: list[dict[str, Any]] = []
    # rocminfo first: its Marketing Name is the product's, rocm-smi's card series a PCI-database
    # name
    for view in sorted(views, key=lambda v: v.source != "rocminfo"):
        for device in view.facts.get("other_devices") or []:
            same = next(
                (
                    o
                    for o in out
                    if (device.get("unique_id") and o.get("unique_id") == device.get("unique_id"))
                    or (device.get("pci_bdf") and o.get("pci_bdf") == device.get("pci_bdf"))
                ),
                None,
            )
            if same is None:
                out.append(dict(device))
                continue
            for key, value in device.items():
                if same.get(key) is None and value is not None:
                    same[key] = value
    return out


def _with_gfx(facts: list[GpuFact]) -> list[GpuFact]:
    return [f for f in facts if f.gfx and gfxmod.is_gfx_name(f.gfx)]


def _pair(facts: list[GpuFact], other: SourceView) -> list[tuple[GpuFact, GpuFact]]:
    """Match devices across sources by unique_id, else PCI address, else position when the
    counts agree (rocminfo, amd-smi and rocm-smi all list GPUs in KFD node order)."""
    pairs = []
    unmatched = list(other.gpus)
    for fact in facts:
        match = next(
            (o for o in unmatched if fact.unique_id and o.unique_id == fact.unique_id), None
        )
        if match is None:
            match = next((o for o in unmatched if fact.bdf and o.bdf == fact.bdf), None)
        if match is not None:
            unmatched.remove(match)
            pairs.append((fact, match))
    if not pairs and len(other.gpus) == len(facts):
        pairs = list(zip(facts, other.gpus, strict=True))
    return pairs


def _add_unlisted(facts: list[GpuFact], other: SourceView, said: dict[int, dict[str, str]]) -> None:
    """Devices another source lists with an identity (unique id or PCI address) that no device
    of the base has: they are more GPUs, not noise, so they are added rather than dropped. The
    kernel's view (sysfs) is complete and is never added to; devices without an identity cannot
    be told apart and are only counted against (``gpu-count-differs``)."""
    known_uid = {f.unique_id for f in facts if f.unique_id}
    known_bdf = {f.bdf for f in facts if f.bdf}
    if not (known_uid or known_bdf):
        return
    for extra in other.gpus:
        if extra.unique_id in known_uid or extra.bdf in known_bdf:
            continue
        if not ((extra.unique_id and known_uid) or (extra.bdf and known_bdf)):
            continue
        added = GpuFact(**{name: getattr(extra, name) for name in GpuFact.__slots__})
        facts.append(added)
        said[id(added)] = {n: other.source for n in _PROVENANCE if getattr(added, n) is not None}


def _enrich(
    facts: list[GpuFact],
    base: SourceView,
    other: SourceView,
    problems: list[Problem],
    said: dict[int, dict[str, str]],
) -> None:
    for fact, extra in _pair(facts, other):
        record = said.setdefault(id(fact), {})
        if fact.gfx is None and extra.gfx:
            # a source that lists the devices without naming them (amd-smi list, rocm-smi
            # --showid) takes the target from one that names it
            fact.gfx, fact.runtime_gfx = extra.gfx, extra.runtime_gfx or extra.gfx
            record.setdefault("gfx", other.source)
        if (
            other.source == "rocminfo"
            and base.source == "rocm-smi"
            and extra.marketing_name
            and not gfxmod.is_generic_marketing_name(extra.marketing_name)
        ):
            # rocm-smi's "Card Series" is the PCI database's name ("Navi 32 [Radeon RX 7700 XT /
            # 7800 XT]"); rocminfo's Marketing Name is the product's
            fact.marketing_name = extra.marketing_name
            record["marketing_name"] = other.source
        for name in _FILL:
            if getattr(fact, name) is None and getattr(extra, name) is not None:
                setattr(fact, name, getattr(extra, name))
                if name in _PROVENANCE:
                    record.setdefault(name, other.source)
        already = any(p.code == "gfx-override" for p in problems)
        if (
            other.source == "rocminfo"
            and extra.runtime_gfx
            and fact.gfx
            and extra.runtime_gfx != fact.gfx
        ):
            fact.runtime_gfx = extra.runtime_gfx
            if already:
                continue
            problems.append(
                Problem.said(
                    "gfx-override/sources",
                    runtime=extra.runtime_gfx,
                    source=base.source,
                    physical=fact.gfx,
                    override=gfxmod.to_override(extra.runtime_gfx),
                )
            )
    mine = sorted({f.gfx for f in facts if f.gfx})
    theirs = sorted(
        {(g.gfx or "") for g in other.gpus if g.gfx}
        - {f.runtime_gfx for f in facts if f.runtime_gfx}
    )
    if theirs and set(theirs) - set(mine):
        problems.append(
            Problem.said(
                "sources-disagree",
                source=base.source,
                mine=", ".join(mine) or words.text("sources-disagree/no-gpu"),
                other=other.source,
                theirs=", ".join(theirs),
            )
        )
    if other.count_exact and base.count_exact and len(other.gpus) != len(facts):
        hidden = other.source == "rocminfo" and len(other.gpus) < len(facts)
        problems.append(
            Problem.said(
                "gpu-count-differs/hidden" if hidden else "gpu-count-differs",
                source=base.source,
                count=len(facts),
                other=other.source,
                other_count=len(other.gpus),
            )
        )


def _apply_env_override(
    facts: list[GpuFact], env: Mapping[str, str], problems: list[Problem]
) -> str | None:
    """HSA_OVERRIDE_GFX_VERSION (and the per-GPU ``_<n>`` form, checked first) changes only what
    the runtime loads; sysfs keeps the physical target."""
    value = env.get("HSA_OVERRIDE_GFX_VERSION")
    gpu_index = 0
    for fact in facts:
        if not fact.gfx:
            continue
        own = env.get(f"HSA_OVERRIDE_GFX_VERSION_{gpu_index}", value)
        gpu_index += 1
        if own is None:
            continue
        target = gfxmod.from_override(own)
        if target is None:
            problems.append(Problem.said("gfx-override-invalid", override=own))
            continue
        fact.runtime_gfx = target
        if target != fact.gfx:
            problems.append(
                Problem.said("gfx-override", override=own, physical=fact.gfx, runtime=target)
            )
    return value


def _gpus(
    facts: list[GpuFact], has_discrete: bool, problems: list[Problem], gfx_table: GfxTable
) -> list[Gpu]:
    usable = _with_gfx(facts)
    products = _products(facts, gfx_table)
    gpus = []
    for fact in usable:
        assert fact.gfx is not None
        integrated = bool(fact.apu) and has_discrete
        gpus.append(
            Gpu(
                gfx=fact.gfx,
                product=products[id(fact)],
                pci_device_id=fact.pci_device_id,
                compute_units=fact.compute_units,
                vram_bytes=fact.vram_bytes,
                unique_id=fact.unique_id,
                partition=Partition(compute=fact.compute_partition, memory=fact.memory_partition)
                if fact.compute_partition or fact.memory_partition
                else None,
                integrated=integrated,
                runtime_gfx=fact.runtime_gfx if fact.runtime_gfx != fact.gfx else None,
                xnack=fact.xnack,
                sramecc=fact.sramecc,
                apu=bool(fact.apu),
                marketing_name=fact.marketing_name,
                pci_bdf=fact.bdf,
            )
        )
        if integrated:
            problems.append(Problem.said("integrated-gpu-present", gfx=fact.gfx))
    return gpus


def _device_cus(facts: list[GpuFact]) -> dict[int, int | None]:
    """Each fact's whole-device CU count: partitions of one device (same physical key) add up
    (8 x 38 CUs in CPX is an MI300X's 304); unknown when any partition lacks a count."""
    groups: dict[str, list[GpuFact]] = {}
    for index, fact in enumerate(facts):
        groups.setdefault(fact.physical_key(index), []).append(fact)
    totals: dict[int, int | None] = {}
    for members in groups.values():
        counts = [m.compute_units for m in members]
        total = sum(c for c in counts if c) if all(counts) else None
        for member in members:
            totals[id(member)] = total
    return totals


def _products(facts: list[GpuFact], gfx_table: GfxTable) -> dict[int, str | None]:
    """Product per fact. A device whose CU total fits no product (a partition missing from the
    capture) takes the product its siblings with the same PCI id resolved to, when they agree."""
    totals = _device_cus(facts)
    out = {id(f): _product(f, gfx_table, totals[id(f)]) for f in facts}
    by_id: dict[str, set[str]] = {}
    for fact in facts:
        name = out[id(fact)]
        if fact.pci_device_id and name and " / " not in name:
            by_id.setdefault(fact.pci_device_id, set()).add(name)
    for fact in facts:
        name = out[id(fact)]
        agreed = by_id.get(fact.pci_device_id or "", set())
        if name and " / " in name and len(agreed) == 1 and next(iter(agreed)) in name.split(" / "):
            out[id(fact)] = next(iter(agreed))
    return out


def _product(fact: GpuFact, gfx_table: GfxTable, device_cus: int | None = None) -> str | None:
    product = gfxmod.product_for_pci(
        gfx_table, fact.pci_device_id, fact.pci_revision, fact.marketing_name, device_cus
    )
    if product:
        return product
    if not gfxmod.is_generic_marketing_name(fact.marketing_name):
        return (fact.marketing_name or "").strip() or None
    return None


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[str, str]] = set()
    out = []
    for problem in problems:
        if (problem.code, problem.message) not in seen:
            seen.add((problem.code, problem.message))
            out.append(problem)
    return out
