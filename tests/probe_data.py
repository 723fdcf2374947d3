"""The data the probe tests hand to the probe, as the CLI does: the probe (the node layer) never
loads the data itself. Loaded at call time, so a test's overlay is seen as the CLI would see it."""

from __future__ import annotations

from resolver.data import matrix
from resolver.data.model import Matrix
from resolver.probe.gfx import GfxTable


def probe_matrix() -> Matrix:
    return matrix.load()


def probe_gfx() -> GfxTable:
    return GfxTable.of(matrix.load().gfx)
