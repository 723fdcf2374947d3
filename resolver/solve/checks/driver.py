"""The host's amdgpu driver: ``driver-predates-gpu`` (it shipped before the GPU),
``driver-window`` (it does not run the candidate's ROCm user space) and the advisories of a driver
check that cannot be made (``driver-unchecked``, ``unknown-driver``, ``driver-release-unchecked``,
``preview-rocm``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from packaging.version import Version

from resolver.data.model import DriverSeries, GfxTarget, Matrix, RocmRelease
from resolver.data.node import Node
from resolver.solve.checks.amdgpu import (
    DriverMove,
    _driver_fix,
    _driver_hint,
    _pairs,
    _v,
    driver_knows,
    driver_move,
    drivers_for,
    first_product,
    first_release_knowing,
    node_release,
    shipped_with,
)
from resolver.solve.checks.facts import _about_path, _from_record
from resolver.solve.finding import Phrase, finding, phrase
from resolver.solve.types import Advisory, Candidate, Fact, HostChange, Reason
from resolver.util.versions import driver_series, series, series_key


def driver_predates_gpu(
    m: Matrix, node: Node, driver: DriverSeries, target: GfxTarget, cand: Candidate
) -> Reason | None:
    """``driver-predates-gpu``: the host's amdgpu shipped with a ROCm older than the first ROCm
    that supports the GPU, so its kernel driver does not know the GPU, whatever the container
    brings (a GPU newer than its driver). The node's own release counts, not its series' x.y.0:
    amdgpu 6.4.4 knows the RX 9070 XT that ROCm 6.4.1 added."""
    if target.inbox_driver_source:
        return None  # the distribution kernel's amdgpu runs it: the kernel floors decide
    product = first_product(node, target)
    if product is None or product.first_rocm is None:
        return None
    first = _v(product.first_rocm)
    release = node_release(driver, node.driver_version)
    if driver_knows(m, driver, release, first) is not False:
        return None
    good = list(drivers_for(m, node, cand))
    rocm = cand.rocm or first
    driver_hint = (
        _driver_hint(driver, rocm, good, node=node, m=m)
        if good
        else phrase("driver-predates-gpu/no-driver", product=product.name, series=series(rocm))
    )
    # The node's own release where AMD pairs it with a ROCm, else the series and its x.y.0.
    paired = release if release is not None and release in dict(_pairs(driver)) else None
    w = finding(
        "driver-predates-gpu",
        driver=str(paired) if paired is not None else f"{driver.series}.x",
        paired=shipped_with(driver, paired),
        first=first,
        first_series=series(first),
        product=product.name,
        gfx=target.name,
        driver_hint=driver_hint,
    )
    return Reason(
        code="driver-predates-gpu",
        message=w.message,
        facts=(_shipped_fact(w.facts[0], driver, paired), _from_record(w.facts[1], product)),
        hint=w.hint,
        fix=_driver_fix(driver, rocm, good, m=m, node=node) if good else None,
        gfx=(target.name,),
    )


def _shipped_fact(text: Phrase, driver: DriverSeries, release: Version | None) -> Fact:
    """Which ROCm the node's amdgpu shipped with: from the release pairs where its own release
    is known and paired, else from the series' record."""
    if release is not None and driver.releases:
        return Fact(text=text, source=driver.releases_source, confidence=driver.releases_confidence)
    return _from_record(text, driver)


def driver_release_unchecked(
    m: Matrix, node: Node, driver: DriverSeries, target: GfxTarget
) -> Advisory | None:
    """``driver-release-unchecked``: the series has releases older and newer than the GPU, and
    the node's own release is not known well enough to say which it runs."""
    product = first_product(node, target)
    if target.inbox_driver_source or product is None or product.first_rocm is None:
        return None
    first = _v(product.first_rocm)
    release = node_release(driver, node.driver_version)
    if driver_knows(m, driver, release, first) is not None:
        return None
    needed = first_release_knowing(driver, first)
    return Advisory.said(
        "driver-release-unchecked/needs" if needed else "driver-release-unchecked",
        driver=node.driver_version,
        series=driver.series,
        product=product.name,
        gfx=target.name,
        first=first,
        needed=needed,
        source=driver.releases_source or driver.provenance.source,
        change=HostChange(kind="driver", value=needed, direction="upgrade") if needed else None,
    )


def driver_runs(m: Matrix, node: Node, driver: DriverSeries | None, rocm: Version) -> bool:
    """Whether the node's known driver runs ``rocm`` by AMD's table (not a preview: those are
    checked against their release notes): then ``driver_check`` has nothing to say. It depends
    on the ROCm alone, so a solve asks it once per ROCm release."""
    if driver is None or node.driver_version is None or not driver.runs(rocm):
        return False
    release = m.rocm_for(rocm)
    return release is None or release.stream != "therock-preview"


def driver_check(
    m: Matrix,
    node: Node,
    driver: DriverSeries | None,
    cand: Candidate,
    *,
    move: Callable[[Version], DriverMove] | None = None,
    inbox: bool = False,
) -> tuple[Reason | None, list[Advisory]]:
    """Does the host's amdgpu driver run the candidate's ROCm user space? ``move``: the
    driver move to a ROCm (``driver_move``), where the caller keeps it for many candidates.
    ``inbox``: every GPU of the node runs on the kernel's own amdgpu, so a node that names no
    amdgpu release is not missing one (its kernel floors are checked instead)."""
    assert cand.rocm is not None
    if driver_runs(m, node, driver, cand.rocm):
        return None, []  # the usual answer (a known driver runs this release): nothing to build
    rocm = m.rocm_for(cand.rocm)
    if inbox and node.driver_version is None:
        return None, driver_warnings(node, driver, cand, rocm, inbox=True)
    # What the path needs of the driver is said only where the node's driver is unknown.
    needs = drivers_for(m, node, cand) if node.driver_version is None else ()
    warnings = driver_warnings(node, driver, cand, rocm, needs=needs)
    if node.driver_version is None or driver is None:
        return None, warnings
    if rocm is not None and rocm.stream == "therock-preview":
        return preview_driver_window(driver, cand, rocm), warnings
    return driver_window(m, driver, cand, node, move=move), warnings


def driver_warnings(
    node: Node,
    driver: DriverSeries | None,
    cand: Candidate,
    rocm: RocmRelease | None,
    *,
    needs: tuple[DriverSeries, ...] = (),
    inbox: bool = False,
) -> list[Advisory]:
    """``preview-rocm`` for a preview ROCm; ``driver-unchecked``/``unknown-driver`` when the
    driver check cannot be made (not for a node on the kernel's own amdgpu: ``inbox``)."""
    warnings: list[Advisory] = []
    if rocm is not None and rocm.stream == "therock-preview":
        warnings.append(
            Advisory.said(
                "preview-rocm/runs-on",
                label=cand.label,
                rocm=rocm.label,
                source=rocm.provenance.source,
            )
        )
    if inbox:
        return warnings
    if node.driver_version is None:
        w = finding(
            "driver-unchecked/needs" if needs else "driver-unchecked",
            rocm=cand.rocm,
            needs=", ".join(d.series + ".x" for d in needs),
        )
        warnings.append(Advisory(code="driver-unchecked", message=w.message, hint=w.hint))
    elif driver is None:
        w = finding("unknown-driver", driver=node.driver_version, rocm=cand.rocm)
        warnings.append(Advisory(code="unknown-driver", message=w.message, hint=w.hint))
    return warnings


def driver_window(
    m: Matrix,
    driver: DriverSeries,
    cand: Candidate,
    node: Node | None = None,
    *,
    move: Callable[[Version], DriverMove] | None = None,
) -> Reason | None:
    """``driver-window``: the driver series does not run the candidate's ROCm (AMD's table).
    The fix is a series that runs it and knows the node's GPUs."""
    assert cand.rocm is not None
    if driver.runs(cand.rocm):
        return None
    hint, fix = move(cand.rocm) if move is not None else driver_move(m, driver, cand.rocm, node)
    w = finding(
        "driver-window",
        label=cand.label,
        rocm=cand.rocm,
        driver=driver.series,
        window=_window(driver.user_space),
    )
    return Reason(
        code="driver-window",
        message=w.message,
        facts=(_about_path(cand, w.facts[0]), _from_record(w.facts[1], driver)),
        hint=hint,
        fix=fix,
    )


def preview_driver_window(
    driver: DriverSeries, cand: Candidate, rocm: RocmRelease
) -> Reason | None:
    """``driver-window`` for a preview: previews are not rows of AMD's table; their release notes
    list the drivers they support."""
    listed = {
        driver_series(d.strip().replace(".x", ".0"))
        for d in (rocm.kmd_at_release or "").split(",")
        if d.strip()
    }
    if driver.series in listed:
        return None
    known = (
        phrase("driver-window/preview-listed", drivers=rocm.kmd_at_release)
        if listed
        else phrase("driver-window/preview-unlisted")
    )
    w = finding(
        "driver-window/preview",
        label=cand.label,
        rocm=rocm.label,
        known=known,
        driver=driver.series,
    )
    return Reason(
        code="driver-window",
        message=w.message,
        facts=(_about_path(cand, w.facts[0]), _from_record(w.facts[1], rocm)),
        hint=w.hint,
        fix=None,
    )


def user_space_window(user_space: Iterable[str]) -> str:
    """A driver's ROCm user-space window as its findings give it ("6.1-7.2")."""
    return _window(user_space)


def _window(user_space: Iterable[str]) -> str:
    items = sorted(user_space, key=series_key)
    return f"{items[0]}-{items[-1]}" if len(items) > 1 else items[0]
