"""gfx decoding, override values, ISA suffixes and the PCI table lookups."""

from __future__ import annotations

import pytest

from resolver.probe import gfx
from tests.probe_data import probe_gfx


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (90402, "gfx942"),
        (90010, "gfx90a"),
        (90012, "gfx90c"),
        (110501, "gfx1151"),
        (120001, "gfx1201"),
        (110003, "gfx1103"),
        (90500, "gfx950"),
        (100301, "gfx1031"),
        (0, None),
        (91600, None),
    ],
)
def test_target_version(value: int, name: str | None) -> None:
    assert gfx.from_target_version(value) == name


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("10.3.0", "gfx1030"),
        ("9.0.10", "gfx90a"),
        ("11.5.1", "gfx1151"),
        ("11.0", None),
        ("64.0.0", None),
        ("x", None),
    ],
)
def test_override(text: str, name: str | None) -> None:
    assert gfx.from_override(text) == name


def test_override_round_trip() -> None:
    assert gfx.to_override("gfx90a") == "9.0.10"
    assert gfx.to_override("gfx1030") == "10.3.0"


def test_split_target() -> None:
    split = gfx.split_target("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-")
    assert split is not None
    assert (split.gfx, split.sramecc, split.xnack) == ("gfx942", True, False)
    plain = gfx.split_target("gfx1100")
    assert plain is not None
    assert (plain.sramecc, plain.xnack) == (None, None)


def test_pci_lookups_come_from_the_matrix() -> None:
    assert gfx.pci_id(29857) == "74a1"
    assert gfx.pci_id("0x74A1") == "74a1"
    assert gfx.pci_id("0") is None
    assert gfx.gfx_for_pci(probe_gfx(), "740f") == "gfx90a"
    assert (
        gfx.gfx_for_pci(probe_gfx(), "6860") == "gfx900"
    )  # the fallback for KFD without gfx_target_version
    assert gfx.product_for_pci(probe_gfx(), "7550", "c0") == "Radeon RX 9070 XT"
    assert (
        gfx.product_for_pci(probe_gfx(), "7550", None, "AMD Radeon RX 9070 GRE")
        == "Radeon RX 9070 GRE"
    )
    assert " / " in (gfx.product_for_pci(probe_gfx(), "7550") or "")


def test_mi250_without_revision_is_not_guessed_to_be_mi250x() -> None:
    """issue 11, item 10: 740c is MI250X and MI250; libdrm's name "AMD Instinct MI250X/MI250" names
    both."""
    from resolver.probe.gfx import product_for_pci

    assert (
        product_for_pci(probe_gfx(), "740c", None, "AMD Instinct MI250X/MI250")
        == "Instinct MI250X / Instinct MI250"
    )
    assert product_for_pci(probe_gfx(), "740c", None, None) == "Instinct MI250X / Instinct MI250"
    assert (
        product_for_pci(probe_gfx(), "740c", "01", "AMD Instinct MI250X/MI250") == "Instinct MI250X"
    )
    assert product_for_pci(probe_gfx(), "740c", None, "AMD Instinct MI250") == "Instinct MI250"
