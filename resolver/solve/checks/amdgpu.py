"""What an amdgpu release knows and how to move to one that runs a ROCm: the ROCm each
release shipped with (``drivers.toml``'s release pairs), whether it knows the node's GPUs, the
series that run a path, and the driver move (hint and fix) ``driver.py``'s checks name."""

from __future__ import annotations

import functools
from typing import Literal

from packaging.version import InvalidVersion, Version

from resolver.data.model import DriverSeries, GfxTarget, GpuProduct, Matrix
from resolver.data.node import Node
from resolver.solve.finding import Phrase, phrase
from resolver.solve.host import os_listed
from resolver.solve.types import Candidate, Fix, HostChange
from resolver.util.versions import driver_label, driver_series, series, series_key


@functools.cache
def _v(text: str) -> Version:
    """A version of the data, parsed once (the driver rules compare the same few many times)."""
    return Version(text)


def first_product(node: Node, target: GfxTarget) -> GpuProduct | None:
    """The product of ``target`` on this node whose ROCm support came first: the node's own GPU
    where its PCI id says which, else the earliest of the target's products (no GPU of this
    target ran on an earlier ROCm)."""
    ids = {g.pci_device_id.lower().removeprefix("0x") for g in node.gpus if g.pci_device_id}
    known = [p for p in target.products if p.first_rocm]
    mine = [p for p in known if p.pci_device_id and p.pci_device_id in ids]
    pool = mine or known
    return min(pool, key=lambda p: _v(p.first_rocm or "0"), default=None)


def node_release(driver: DriverSeries, text: str | None) -> Version | None:
    """The node's own amdgpu release within ``driver`` (``6.4.3`` of "6.4.3" or
    "6.4.3-2194681"), None where only its series is known ("6.4", a probe's module version)."""
    head = (text or "").split("-", 1)[0]
    parts = head.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    version = _v(head)
    return version if f"{version.major}.{version.minor}" == driver.series else None


@functools.cache
def _pairs(driver: DriverSeries) -> tuple[tuple[Version, Version], ...]:
    return tuple((_v(d), _v(r)) for d, r in driver.releases)


def _ceiling(m: Matrix, driver: DriverSeries) -> Version | None:
    """The ROCm the next newer paired series shipped with: every release of ``driver`` shipped
    with an older one."""
    here = series_key(driver.series)
    newer = [d for d in m.drivers if d.paired_rocm is not None and series_key(d.series) > here]
    nxt = min(newer, key=lambda d: series_key(d.series), default=None)
    return _v(nxt.paired_rocm) if nxt is not None and nxt.paired_rocm else None


def shipped_with(driver: DriverSeries, release: Version | None) -> Version | None:
    """The ROCm the node's amdgpu shipped with, at least: its own release's where AMD pairs it,
    else the newest paired release before it, else the series' x.y.0 (``paired_rocm``)."""
    base = _v(driver.paired_rocm) if driver.paired_rocm else None
    pairs = _pairs(driver)
    if release is None:
        return base if base is not None else (pairs[0][1] if pairs else None)
    upto = [r for d, r in pairs if d <= release]
    return max(upto) if upto else base


def driver_knows(
    m: Matrix, driver: DriverSeries, release: Version | None, first: Version
) -> bool | None:
    """Did the node's amdgpu (``release`` of ``driver``; None: only the series is known) ship
    with ROCm ``first`` or later, the first to support a GPU? None where the series has releases
    on both sides and the node's own is not known well enough to tell (``6.4`` for a GPU that
    6.4.1 added)."""
    pairs = _pairs(driver)
    low = shipped_with(driver, release)
    if low is None:
        return True  # nothing recorded of the series: not ruled out
    if low >= first:
        return True
    if not pairs:
        return False  # only the series' x.y.0 is known to AMD's data
    if release is not None:
        if any(d == release for d, _ in pairs):
            return False
        later = [r for d, r in pairs if d > release]
        if later and min(later) < first:
            return False
    ceiling = _ceiling(m, driver)
    if ceiling is not None and first >= ceiling:
        return False
    return None


def first_release_knowing(driver: DriverSeries, first: Version) -> str | None:
    """The oldest release of ``driver`` AMD paired with ROCm ``first`` or later, where its x.y.0
    did not (``6.4.1`` for RX 9070 XT); None where the series' first release does, or none is
    known to."""
    base = _v(driver.paired_rocm) if driver.paired_rocm else None
    if base is not None and base >= first:
        return None
    return next((str(d) for d, r in _pairs(driver) if r >= first), None)


def gpus_first_rocm(m: Matrix, node: Node) -> Version | None:
    """The newest of the first ROCm releases that support the node's GPUs: a driver that shipped
    with an older ROCm predates one of them (``driver-predates-gpu``'s rule)."""
    firsts = [
        _v(product.first_rocm)
        for name in node.gfx_targets
        if (target := m.gfx_target(name)) is not None
        and (product := first_product(node, target)) is not None
        and product.first_rocm is not None
    ]
    return max(firsts, default=None)


def knows_gpus(m: Matrix, node: Node, driver: DriverSeries, floor: Version | None = None) -> bool:
    """Some release of the series knows every GPU of the node (``driver-predates-gpu``'s rule; a
    series whose release ROCm is not recorded is not ruled out). ``floor``: the node's
    ``gpus_first_rocm``, where the caller asks for many drivers."""
    newest = floor if floor is not None else gpus_first_rocm(m, node)
    if newest is None or (driver.paired_rocm is None and not driver.releases):
        return True
    base = shipped_with(driver, None)
    return (base is not None and base >= newest) or any(r >= newest for _, r in _pairs(driver))


def drivers_for(m: Matrix, node: Node, cand: Candidate) -> tuple[DriverSeries, ...]:
    """The amdgpu series that run this path on this node: they run its ROCm user space (any
    series, for a path whose ROCm is not known) and know the node's GPUs (what a plan needs of
    the host's driver; where a driver fix is chosen)."""
    pool = m.drivers_running(cand.rocm) if cand.rocm is not None else m.drivers
    floor = gpus_first_rocm(m, node)
    return tuple(d for d in pool if knows_gpus(m, node, d, floor))


# The hint and the fix of a driver that does not run a ROCm.
DriverMove = tuple[Phrase, Fix | None]


def driver_move(m: Matrix, driver: DriverSeries, rocm: Version, node: Node | None) -> DriverMove:
    """How to get from ``driver`` to one that runs ``rocm`` (and knows the node's GPUs)."""
    good = [d for d in m.drivers_running(rocm) if node is None or knows_gpus(m, node, d)]
    fix = _driver_fix(driver, rocm, good, m=m, node=node) if good else None
    return _driver_hint(driver, rocm, good, node=node, m=m), fix


def _best_driver(
    driver: DriverSeries | None,
    rocm: Version,
    good: list[DriverSeries],
    floor: Version | None = None,
    release: Version | None = None,
) -> tuple[str, Literal["upgrade", "downgrade"]]:
    """The smallest move from the host's driver to one that runs ``rocm``: a later release of
    the host's own series where one knows the GPUs (``floor``: their newest first ROCm) and the
    host's ``release`` does not; else the oldest series newer than the host's; only when none is
    newer, the newest older one (a downgrade). A series whose x.y.0 predates the GPUs is named by
    the release that knows them (``6.4.1``)."""

    def value(d: DriverSeries) -> str:
        needed = first_release_knowing(d, floor) if floor is not None else None
        return needed or d.series

    here = series_key(driver.series) if driver is not None else None
    if here is None:
        paired = [
            d for d in good if d.paired_rocm and series(Version(d.paired_rocm)) == series(rocm)
        ]
        return value(paired[0] if paired else good[0]), "upgrade"
    if driver is not None and driver in good and floor is not None:
        needed = first_release_knowing(driver, floor)
        if needed is not None and (release is None or release < _v(needed)):
            return needed, "upgrade"
    forward = [d for d in good if series_key(d.series) > here]
    if forward:
        return value(min(forward, key=lambda d: series_key(d.series))), "upgrade"
    return value(max(good, key=lambda d: series_key(d.series))), "downgrade"


def _driver_fix(
    driver: DriverSeries | None,
    rocm: Version,
    good: list[DriverSeries],
    *,
    m: Matrix | None = None,
    node: Node | None = None,
) -> Fix:
    """The driver move; among the series that would do, one AMD supports on the host's OS when
    there is one, else the move names the OS step it needs (amdgpu 6.4 is not for Ubuntu 20.04)."""
    floor = gpus_first_rocm(m, node) if m is not None and node is not None else None
    release = node_release(driver, node.driver_version) if driver and node else None
    if m is not None and node is not None:
        good = _prefer_os(m, node, good)
    best, direction = _best_driver(driver, rocm, good, floor, release)
    step = _os_step(m, node, best) if m is not None and node is not None else None
    text = (
        phrase("driver-window/fix-os-first", best=driver_label(best), os=node.os, step=step)
        if step and node
        else phrase("driver-window/fix", best=driver_label(best))
    )
    return Fix(
        kind="driver",
        text=text,
        host=True,
        change=HostChange(kind="driver", value=best, direction=direction),
        os_first=step,
    )


def _os_support(m: Matrix, d: DriverSeries) -> tuple[str, ...] | None:
    """The OS releases AMD supports at the ROCm ``d`` was released with (None: not recorded)."""
    if d.paired_rocm is None:
        return None
    rel = m.rocm_release(Version(d.paired_rocm))
    return rel.os if rel is not None and rel.os else None


def _prefer_os(m: Matrix, node: Node, good: list[DriverSeries]) -> list[DriverSeries]:
    if not node.os:
        return good
    # Known to be supported there: a series whose OS support is not recorded is no better bet.
    on_os = [
        d for d in good if (oses := _os_support(m, d)) is not None and os_listed(node.os, oses)
    ]
    return on_os or good


def _os_step(m: Matrix, node: Node, best: str) -> str | None:
    """The OS release to move the host to before ``best`` when AMD does not support ``best`` on
    the host's OS: the nearest newer release of the same OS where there is one."""
    d = m.driver(driver_series(best))
    oses = _os_support(m, d) if d is not None else None
    if not node.os or not oses or os_listed(node.os, oses):
        return None
    family = node.os.partition("-")[0]
    same = [o for o in oses if o.partition("-")[0] == family]

    def key(o: str) -> Version:
        try:
            return Version(o.partition("-")[2])
        except InvalidVersion:
            return Version("0")

    newer = sorted((o for o in same if key(o) > key(node.os)), key=key)
    step = (newer or sorted(same, key=key) or list(oses))[0]
    # One spelling everywhere (check's fix, upgrade's step): the data's OS record, which a point
    # release AMD lists (ubuntu-22.04.5) belongs to.
    record = m.os_listed_as(step)
    return record.id if record is not None else step


def _driver_hint(
    driver: DriverSeries | None,
    rocm: Version,
    good: list[DriverSeries],
    *,
    node: Node | None = None,
    m: Matrix | None = None,
) -> Phrase:
    if not good:
        return phrase("driver-window/hint-none", series=series(rocm))
    floor = gpus_first_rocm(m, node) if m is not None and node is not None else None
    release = node_release(driver, node.driver_version) if driver and node else None
    best, direction = _best_driver(driver, rocm, good, floor, release)
    others = ", ".join(
        driver_label((first_release_knowing(d, floor) if floor else None) or d.series)
        for d in sorted(good, key=lambda d: series_key(d.series))
        if d.series != driver_series(best)
    )
    return phrase(
        "driver-window/hint-others" if others else "driver-window/hint",
        direction=direction,
        best=driver_label(best),
        series=series(rocm),
        others=others,
    )
