"""gfx.toml against the tables it is read from (issue 34): every AMD GPU target LLVM and AMD's
rocm-bootstrap know is a target the data knows, so no real AMD GPU is answered `unknown`; every
PCI id is one the PCI ID Repository lists for AMD, or one an AMD table gives that it lacks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from resolver.data import matrix
from resolver.data.node import from_flags
from resolver.probe.gfx import GfxTable, gfx_for_pci, product_for_pci
from resolver.solve import Request, solve

from .conftest import LIVE_MATRIX
from .helpers import run_cli

M = matrix.load_dir(LIVE_MATRIX)
LIVE = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}

# LLVM's AMDGPU processor table, its amdgcn rows (the r600 rows name no gfx target):
# llvm/llvm-project llvm/docs/AMDGPUUsage.rst@f5c8b0a9139bcc301b75f3e77e307f65f7f870d8, table
# "AMDGPU Processors". That version no longer lists gfx940/gfx941 and does not yet list gfx125x.
LLVM_PROCESSORS = (
    *("gfx600", "gfx601", "gfx602"),
    *("gfx700", "gfx701", "gfx702", "gfx703", "gfx704", "gfx705"),
    *("gfx801", "gfx802", "gfx803", "gfx805", "gfx810"),
    *("gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c"),
    *("gfx942", "gfx950"),
    *("gfx1010", "gfx1011", "gfx1012", "gfx1013"),
    *("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"),
    *("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"),
    *("gfx1200", "gfx1201"),
)

# AMD's target table: rocm-bootstrap 0.3.0 (PyPI wheel sha256:62d0160ecdd86f7132dbab9aec257cb2
# c96327df2592b0633aa6bb56399cc095) rocm_bootstrap/targets.py, 34 targets read from amd-llvm's
# GCNProcessors.td. gfx1250-strict is a compile target of gfx1250 (the same gfx_target_version
# 120500), which KFD never reports, so it is not a gfx record.
ROCM_BOOTSTRAP_TARGETS = (
    *("gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c"),
    *("gfx942", "gfx950"),
    *("gfx1010", "gfx1011", "gfx1012", "gfx1013"),
    *("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"),
    *("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"),
    *("gfx1200", "gfx1201", "gfx1250", "gfx1250-strict", "gfx1251"),
)
NOT_REPORTED_BY_KFD = {"gfx1250-strict"}

# AMD vendor device lines of the PCI ID Repository as Debian ships it (the file's header says which)
PCI_IDS = Path(__file__).parent / "gfx_data" / "pci-ids-1002.txt"

# PCI ids that only AMD's own tables give (pci.ids lacks them); each product's source names them
NOT_IN_PCI_IDS = {
    "75a1": "GPUOpen-Tools/device_info",  # MI355X
    "74b4": "embers",  # MI300A VF (AMD ChipID header)
    "74b6": "embers",  # MI308X VF
}


def amd_pci_ids() -> dict[str, str]:
    ids: dict[str, str] = {}
    for line in PCI_IDS.read_text(encoding="utf-8").splitlines():
        if m := re.fullmatch(r"\t([0-9a-f]{4})  (.+)", line):
            ids[m.group(1)] = m.group(2)
    return ids


def test_the_tables_read_have_the_size_their_sources_give() -> None:
    assert len(ROCM_BOOTSTRAP_TARGETS) == len(set(ROCM_BOOTSTRAP_TARGETS)) == 34
    assert len(set(LLVM_PROCESSORS)) == len(LLVM_PROCESSORS)
    assert "1002" not in amd_pci_ids() and len(amd_pci_ids()) > 1000


def test_every_target_llvm_or_rocm_bootstrap_names_is_a_gfx_record() -> None:
    known = {g.name for g in M.gfx}
    wanted = (set(LLVM_PROCESSORS) | set(ROCM_BOOTSTRAP_TARGETS)) - NOT_REPORTED_BY_KFD
    assert sorted(wanted - known) == []


@pytest.mark.parametrize("gfx", ["gfx1032", "gfx1035", "gfx1251"])
def test_check_on_a_target_the_issue_named_has_an_answer(gfx: str) -> None:
    """RX 6600 (gfx1032), Rembrandt's iGPU (gfx1035) and gfx1251 were exit 6, verdict unknown."""
    out = run_cli("check", "--gfx", gfx, "--json", env=LIVE)
    data = json.loads(out.stdout)
    assert data["verdict"] not in ("unknown", "supported", "supported_with_warnings"), data
    assert out.exit_code == data["exit_code"] == 1
    assert not data.get("missing")


@pytest.mark.parametrize(
    "gfx", sorted((set(LLVM_PROCESSORS) | set(ROCM_BOOTSTRAP_TARGETS)) - NOT_REPORTED_BY_KFD)
)
def test_no_llvm_target_is_answered_unknown(gfx: str) -> None:
    node = from_flags(gfx=gfx, gpus=None, driver=None, os=None, rocm=None, python=None)
    assert solve(M, node, Request()).verdict != "unknown"


def test_a_target_vllm_never_builds_is_unsupported_not_unknown() -> None:
    built = {g for v in M.vllm for g in (*v.cmake_arch, *v.arch)}
    for gfx in set(LLVM_PROCESSORS) - built:
        target = next(g for g in M.gfx if g.name == gfx)
        assert target.vllm_status == "unsupported", gfx


def test_every_pci_id_is_in_the_pci_id_repository_or_named_by_an_amd_table() -> None:
    ids = amd_pci_ids()
    missing: dict[str, list[str]] = {}
    for target in M.gfx:
        for product in target.products:
            if product.pci_device_id and product.pci_device_id not in ids:
                missing.setdefault(product.pci_device_id, []).append(product.provenance.source)
    assert set(missing) == set(NOT_IN_PCI_IDS)
    for pci_id, sources in missing.items():
        assert all(NOT_IN_PCI_IDS[pci_id] in s for s in sources), (pci_id, sources)


def test_a_probe_names_the_gpus_by_the_ids_added() -> None:
    """Without gfx_target_version (old KFD), the PCI id alone says which target and product."""
    table = GfxTable.of(M.gfx)
    assert gfx_for_pci(table, "6861") == "gfx900"  # Vega 10 XT, Radeon PRO WX 9100
    assert gfx_for_pci(table, "1902") == "gfx1153"  # Krackan2, Radeon 840M/820M
    assert gfx_for_pci(table, "743f") == "gfx1034"  # Navi 24, RX 6400/6500 XT
    assert gfx_for_pci(table, "75a8") == "gfx950"  # MI350P
    # 73ff is RX 6600 class (gfx1032) except revision df, an RX 6750 GRE 10GB (gfx1031)
    assert gfx_for_pci(table, "73ff") is None
    assert product_for_pci(table, "73ff", "df") == "Radeon RX 6750 GRE 10GB"
