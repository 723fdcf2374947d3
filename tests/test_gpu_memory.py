"""GPU memory facts (issue 37, the memory fit's inputs): every AMD product's memory and its
partition modes in ``gfx.toml``, every NVIDIA board's in ``nvidia-gpus.toml``.

The readings are checked against the real tool outputs they cite (the probe's own fixtures,
copied from public repositories: tests/probe/fixtures/SOURCES.md), read by the probe itself;
AMD's stated sizes are ROCm's GPU spec table (gpu-arch-specs.rst), the partition sizes AMD's
partitioning guides (ROCm/amdgpu-docs)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from resolver.data import matrix
from resolver.data.model import GpuProduct, Matrix
from resolver.probe import probe_files
from tests.probe_data import probe_matrix

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "probe" / "fixtures"
GIB = 2**30
MIB = 2**20
# What the drivers keep back in the readings here: 16 MiB (CDNA, RDNA2/3), 80 MiB (RDNA4).
RESERVE = 128 * MIB
# GPUs per package where ROCm enumerates each die as its own GPU (AMD's table: "per GCD").
DIES = {"Instinct MI250X": 2, "Instinct MI250": 2}
# Logical GPUs a compute mode makes: SPX/DPX/TPX/QPX fixed, CPX one per XCD (AMD SMI's
# partition guide: MI300X/MI325X/MI355X 8, MI300A 6; MI308X's 4 in its KFD capture).
COMPUTE = {"SPX": {1}, "DPX": {2}, "TPX": {3}, "QPX": {4}, "CPX": {4, 6, 8}}


@pytest.fixture(scope="module")
def live() -> Matrix:
    return matrix.load_dir(ROOT / "matrix")


def _products(m: Matrix) -> list[tuple[str, GpuProduct]]:
    return [(g.name, p) for g in m.gfx for p in g.products]


def _product(m: Matrix, name: str, pci: str | None = None) -> GpuProduct:
    found = [p for _, p in _products(m) if p.name == name and pci in (None, p.pci_device_id)]
    assert found, name
    return found[0]


def test_every_instinct_product_has_memory_or_says_unknown(live: Matrix) -> None:
    for gfx, p in _products(live):
        if p.family != "instinct":
            continue
        where = f"{gfx} {p.name} {p.pci_device_id}"
        assert p.memory_source, f"{where}: no memory_source"
        if p.memory_bytes is None:
            assert p.memory_confidence == "unknown", f"{where}: no memory and not marked unknown"
        else:
            assert p.memory_confidence != "unknown", where


def test_every_memory_fact_names_its_source(live: Matrix) -> None:
    for gfx, p in _products(live):
        where = f"{gfx} {p.name}"
        if p.memory_bytes is not None or p.memory_confidence == "unknown":
            assert p.memory_source, where
        if p.marketed_memory_bytes is not None:
            assert "gpu-arch-specs.rst@" in p.marketed_memory_source, where
            assert p.marketed_memory_bytes % GIB == 0, f"{where}: AMD states whole GiB"
        for part in p.partitions:
            assert part.provenance.source, where


def test_readings_sit_just_under_amds_stated_size(live: Matrix) -> None:
    """A driver reading is AMD's size less a few MiB (per die where a package has two)."""
    checked = 0
    for gfx, p in _products(live):
        if p.memory_bytes is None or p.marketed_memory_bytes is None:
            continue
        whole = p.memory_bytes * DIES.get(p.name, 1)
        assert p.marketed_memory_bytes - RESERVE * DIES.get(p.name, 1) <= whole, (gfx, p.name)
        assert whole <= p.marketed_memory_bytes, (gfx, p.name)
        checked += 1
    assert checked >= 40


def test_apus_have_unified_memory_and_no_vram_figure(live: Matrix) -> None:
    apus = [p for _, p in _products(live) if p.memory_unified]
    names = {p.name for p in apus}
    assert "Instinct MI300A" in names
    assert any("Ryzen AI Max" in n for n in names)  # Strix Halo, gfx1151
    for p in apus:
        assert p.memory_bytes is None and p.memory_confidence == "unknown", p.name
        assert "APU" in p.memory_source, p.name
    strix = next(g for g in live.gfx if g.name == "gfx1151")
    assert all(p.memory_unified for p in strix.products)


def test_partition_memory_is_total_over_partitions_where_the_docs_say_so(live: Matrix) -> None:
    seen = set()
    for _, p in _products(live):
        total = p.marketed_memory_bytes or p.memory_bytes
        for part in p.partitions:
            assert part.logical_gpus in COMPUTE[part.compute], (p.name, part)
            if part.memory_bytes is None:
                assert part.provenance.confidence == "unknown", (p.name, part)
                continue
            assert total is not None
            assert part.memory_bytes * part.logical_gpus == total, (p.name, part)
            seen.add((p.name, part.compute, part.memory))
    # AMD's guide: MI300X in CPX is 8 GPUs of 24 GB, in NPS1 and in NPS4 alike.
    assert ("Instinct MI300X", "CPX", "NPS4") in seen
    mi300x = _product(live, "Instinct MI300X")
    cpx = {part.memory: part.memory_bytes for part in mi300x.partitions if part.compute == "CPX"}
    assert cpx == {"NPS1": 24 * GIB, "NPS4": 24 * GIB}
    # NPS4 is CPX only on MI300X (the number of memory partitions cannot exceed the compute ones)
    assert all(part.compute == "CPX" for part in mi300x.partitions if part.memory == "NPS4")


@pytest.mark.parametrize(
    ("fixture", "name", "pci"),
    [
        ("rocminfo-gfx942-mi300x-4gpu-thamada.txt", "Instinct MI300X", "74a1"),
        ("rocminfo-gfx1101-rx7800xt-empty-name-rocm2625.txt", "Radeon RX 7800 XT", "747e"),
        ("rocminfo-gfx1201-with-igpu-gfx1036-rocm5861.txt", "Radeon RX 9070 XT", "7550"),
        ("rocminfo-gfx1200-rx9060xt-generic-name-rocm6295.txt", "Radeon RX 9060 XT", "7590"),
        ("rocminfo-gfx1030-override-rx6700xt-1gpu-ega4l-vbsnn.txt", "Radeon RX 6700 XT", "73df"),
        ("rocminfo-gfx906-mi50-8gpu-delaunay-regression.txt", "Instinct MI50", "66a1"),
        ("rocminfo-gfx900-mi25-7gpu-bankh-gpucompute.txt", "Instinct MI25", "6860"),
    ],
)
def test_readings_are_what_the_probe_reads_in_the_cited_output(
    live: Matrix, fixture: str, name: str, pci: str
) -> None:
    node = probe_files(rocminfo=FIXTURES / fixture, matrix=probe_matrix())
    vram = {g.vram_bytes for g in node.gpus if g.vram_bytes}
    assert _product(live, name, pci).memory_bytes in vram


def test_mi308x_partition_is_the_kfd_memory_bank(live: Matrix, tmp_path: Path) -> None:
    kfd = tmp_path / "sys/class/kfd/kfd"
    kfd.parent.mkdir(parents=True)
    shutil.copytree(FIXTURES / "sysfs" / "kfd-gfx942-mi308x-8gpu-cpx-k8sdp", kfd)
    node = probe_files(sysfs=tmp_path, matrix=probe_matrix())
    banks = {g.vram_bytes or 0 for g in node.gpus}
    mi308x = _product(live, "Instinct MI308X")
    (part,) = mi308x.partitions
    # 48 GiB each; one partition of each GPU shows 16 MiB less (the driver's reserve)
    assert part.memory_bytes is not None and max(banks) == part.memory_bytes
    assert min(banks) >= part.memory_bytes - RESERVE
    assert len(node.gpus) == 8 * part.logical_gpus


def test_mi100_reading_is_rocm_smis() -> None:
    text = (FIXTURES / "peers" / "telegraf" / "mi100_rocm571.json").read_text()
    assert '"VRAM Total Memory (B)": "34342961152"' in text


def test_nvidia_memory_rows(live: Matrix) -> None:
    for g in live.nvidia_gpus:
        ids = [i for row in g.memory for i in row.pci_device_ids]
        assert len(ids) == len(set(ids)), g.name
        assert set(ids) <= set(g.pci_device_ids), g.name
        for row in g.memory:
            stated = row.marketed_memory_bytes
            assert stated is not None and row.provenance.source
            if row.memory_bytes is not None:
                assert row.memory_source
                assert row.memory_bytes <= stated
    h200 = next(g for g in live.nvidia_gpus if g.name == "NVIDIA H200")
    (row,) = [r for r in h200.memory if "2335" in r.pci_device_ids]
    query = FIXTURES / "nvidia" / "nvidia-smi-query-h200-20261202.csv"
    with query.open() as f:
        (line,) = list(csv.DictReader(f, skipinitialspace=True))
    assert line["memory.total [MiB]"] == "143771 MiB"
    assert row.memory_bytes == 143771 * MIB


def test_frozen_copy_carries_the_same_memory_facts(live: Matrix) -> None:
    frozen = matrix.load_dir(ROOT / "tests" / "data" / "matrix")
    facts = {
        (g, p.name, p.pci_device_id, p.pci_revision): (
            p.memory_bytes,
            p.marketed_memory_bytes,
            p.memory_unified,
            p.partitions,
        )
        for g, p in _products(live)
    }
    compared = 0
    for g, p in _products(frozen):
        key = (g, p.name, p.pci_device_id, p.pci_revision)
        if key in facts:
            assert facts[key] == (
                p.memory_bytes,
                p.marketed_memory_bytes,
                p.memory_unified,
                p.partitions,
            ), key
            compared += 1
    assert compared >= 50
