"""Rules the data states, property-tested (issue 19): for nodes drawn from the data itself (gfx
target x driver series x OS release x Python), on the frozen test data and on the shipped data,

- a ``supported`` plan never violates a rule the data states: the artifact carries code for
  every GPU, the host's driver series runs the artifact's ROCm, the driver did not ship before
  the GPU's first ROCm, a wheel installs on the host's Python and glibc and, when it uses the
  host's ROCm, finds it;
- a plain ``supported`` (no warning) runs on a host OS that AMD lists for the ROCm the host's
  driver shipped with (outside that list the answer carries ``os-not-supported``);
- a ``blocked_host_fix`` answer's host changes, applied to the node, make the path it promised
  run (or a supported one ranked above it);
- an answer is ``unknown`` only with the missing facts named.
"""

from __future__ import annotations

from functools import cache

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.version import Version

from resolver.data import matrix
from resolver.data.model import Matrix
from resolver.data.node import Node, from_flags
from resolver.solve import OK_VERDICTS, Decision, Request, solve
from resolver.solve.checks import first_product
from resolver.solve.host import os_listed
from resolver.solve.provider import MatrixProvider
from resolver.util.versions import series

from .conftest import FROZEN_MATRIX, LIVE_MATRIX

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
DATA = {"frozen": FROZEN_MATRIX, "shipped": LIVE_MATRIX}


@cache
def _data(name: str) -> Matrix:
    return matrix.load_dir(DATA[name])


def _nodes(m: Matrix) -> st.SearchStrategy[tuple[str, int, str | None, str | None, str | None]]:
    gfx = sorted(g.name for g in m.gfx)
    # Each series' x.y.0, and every release AMD pairs with a ROCm (a patch release is itself).
    drivers = [
        None,
        *sorted(
            {f"{d.series}.0" for d in m.drivers} | {r for d in m.drivers for r, _ in d.releases}
        ),
    ]
    oses = [None, *sorted(o.id for o in m.os)]
    return st.tuples(
        st.sampled_from(gfx),
        st.sampled_from([1, 2, 8]),
        st.sampled_from(drivers),
        st.sampled_from(oses),
        st.sampled_from([None, "3.10", "3.11", "3.12", "3.13"]),
    )


def _decide(m: Matrix, node_facts: tuple[str, int, str | None, str | None, str | None]) -> Decision:
    gfx, gpus, driver, os_id, python = node_facts
    node = from_flags(gfx=gfx, gpus=gpus, driver=driver, os=os_id, rocm=None, python=python)
    return solve(m, node, Request())


def _shipped(m: Matrix, driver: str | None) -> Version | None:
    """The ROCm the node's amdgpu release shipped with, as the data states it: its own release's
    pair, else its series' x.y.0 (the test's own reading of drivers.toml)."""
    drv = m.driver(series(Version(driver))) if driver else None
    if drv is None or driver is None:
        return None
    pairs = dict(drv.releases)
    if driver in pairs:
        return Version(pairs[driver])
    return Version(drv.paired_rocm) if drv.paired_rocm else None


def _first_rocm(m: Matrix, node: Node, gfx: str) -> Version | None:
    """The first ROCm that supports the node's GPU, where an amdgpu release decides it (not for
    a GPU on the kernel's own amdgpu: its kernel floors do)."""
    target = m.gfx_target(gfx)
    assert target is not None
    if target.inbox_driver_source:
        return None
    product = first_product(node, target)
    return Version(product.first_rocm) if product and product.first_rocm else None


def _check_no_false_red(m: Matrix, d: Decision) -> None:
    """No path is refused because the driver predates a GPU that the node's own release, as the
    data pairs it, knows."""
    shipped = _shipped(m, d.node.driver_version)
    if shipped is None:
        return
    for ev in d.rejected:
        for r in ev.reasons:
            if r.code == "driver-predates-gpu":
                for gfx in r.gfx:
                    first = _first_rocm(m, d.node, gfx)
                    assert first is None or shipped < first, (d.node.driver_version, gfx)


def _check_supported(m: Matrix, d: Decision) -> None:
    assert d.plan is not None
    c = d.plan.candidate
    node = d.node
    if not d.plan.unofficial:
        for gfx in node.gfx_targets:
            assert gfx in c.arch, (c.label, gfx, c.arch)
    drv = m.driver(series(Version(node.driver_version))) if node.driver_version else None
    if drv is not None and c.rocm is not None:
        rocm = m.rocm_for(c.rocm)
        if rocm is None or rocm.stream != "therock-preview":
            assert drv.runs(c.rocm), (c.label, drv.series, c.rocm)
    shipped = _shipped(m, node.driver_version)
    if shipped is not None:
        for name in node.gfx_targets:
            first = _first_rocm(m, node, name)
            if first is not None:
                assert shipped >= first, (c.label, node.driver_version, name)
    if c.wheel is not None:
        if node.python is not None:
            assert node.python in c.wheel.python
        os_rel = m.os_release(node.os) if node.os else None
        if os_rel is not None and os_rel.glibc is not None:
            assert os_rel.glibc >= c.wheel.glibc_min
        if c.wheel.uses_host_rocm and node.rocm_version:
            assert series(Version(node.rocm_version)) == series(c.wheel.rocm)


def _check_driver_os(m: Matrix, d: Decision) -> None:
    """The OS rule of the driver: AMD lists the host's OS for the ROCm its driver shipped with."""
    node = d.node
    if not node.os or not node.driver_version:
        return
    drv = m.driver(series(Version(node.driver_version)))
    if drv is None or drv.paired_rocm is None:
        return
    rocm = m.rocm_release(Version(drv.paired_rocm))
    if rocm is not None and rocm.os:
        assert os_listed(node.os, rocm.os), (node.os, drv.series, d.plan and d.plan.candidate.label)


@pytest.mark.parametrize("data", sorted(DATA))
def test_no_supported_plan_breaks_a_rule_the_data_states(data: str) -> None:
    m = _data(data)

    @PROPERTY
    @given(facts=_nodes(m))
    def check(facts: tuple[str, int, str | None, str | None, str | None]) -> None:
        d = _decide(m, facts)
        if d.verdict in ("supported", "supported_with_warnings", "source_build_required"):
            _check_supported(m, d)
        if d.verdict == "supported":
            _check_driver_os(m, d)
        if d.verdict == "unknown":
            assert d.missing, facts
        _check_no_false_red(m, d)
        if d.verdict == "blocked_host_fix":
            assert d.host_fix is not None and d.host_fix.host_fixable
            node = d.node
            for r in d.host_fix.reasons:
                assert r.fix is not None and r.fix.change is not None
                node = r.fix.change.apply(node)
            fixed = solve(m, node, Request())
            assert fixed.verdict in (*OK_VERDICTS, "unofficial_only"), (facts, fixed.verdict)
            # The path the fix promised runs once the fix is made.
            again = MatrixProvider(m, node, Request()).evaluate(d.host_fix.candidate)
            assert again.ok, (facts, d.host_fix.candidate.label, [r.code for r in again.reasons])
            if fixed.verdict in OK_VERDICTS:
                _check_supported(m, fixed)

    check()


KERNELS = [None, "6.8.0-45-generic", "6.14.0-37-generic", "6.17.0-1012-oem", "7.0.0-15-generic"]
VISIBLE: list[dict[str, str]] = [
    {},
    {"HIP_VISIBLE_DEVICES": "0"},
    {"ROCR_VISIBLE_DEVICES": ""},
    {"ROCR_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "0"},
]


def _kernel_below_floor(m: Matrix, node: Node) -> bool:
    """The data's kernel floor for one of the node's GPUs on its OS, which its kernel is below."""
    if not node.kernel or not node.os:
        return False
    have = tuple(int(p) for p in node.kernel.split("-")[0].split(".")[:2])
    for name in node.gfx_targets:
        target = m.gfx_target(name)
        assert target is not None
        for floor in target.kernel_floors:
            if os_listed(node.os, (floor.os,)):
                need = tuple(int(p) for p in floor.min_kernel.split("."))
                if have < need:
                    return True
    return False


@pytest.mark.parametrize("data", sorted(DATA))
def test_host_facts_the_data_states_are_never_broken_by_a_plain_supported(data: str) -> None:
    """Kernel floors and the GPUs the environment leaves visible (issue 34): a plain ``supported``
    is never on a kernel below the GPU's floor, with no GPU visible, or with both HIP's and
    ROCR's masks set (Ray fails); and a node whose own patch release the data pairs with a ROCm
    that knows its GPU is never refused for its driver's age."""
    m = _data(data)
    gfx = sorted(g.name for g in m.gfx if g.vllm_status == "official")
    drivers = [None, *sorted({r for d in m.drivers for r, _ in d.releases})]
    oses = [None, "ubuntu-22.04", "ubuntu-24.04", "ubuntu-26.04"]

    @PROPERTY
    @given(
        facts=st.tuples(
            st.sampled_from(gfx),
            st.sampled_from(drivers),
            st.sampled_from(oses),
            st.sampled_from(KERNELS),
            st.sampled_from(range(len(VISIBLE))),
        )
    )
    def check(facts: tuple[str, str | None, str | None, str | None, int]) -> None:
        name, driver, os_id, kernel, visible = facts
        node = from_flags(gfx=name, gpus=2, driver=driver, os=os_id, rocm=None, python=None)
        node = msgspec.structs.replace(node, kernel=kernel, visible_devices=VISIBLE[visible])
        d = solve(m, node, Request())
        if d.verdict == "supported":
            assert not _kernel_below_floor(m, node), facts
            assert VISIBLE[visible].get("ROCR_VISIBLE_DEVICES") != "", facts
            assert len(VISIBLE[visible]) < 2, facts
        _check_no_false_red(m, d)

    check()
