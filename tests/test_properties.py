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

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.version import Version

from resolver.data import matrix
from resolver.data.model import Matrix
from resolver.data.node import from_flags
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
    drivers = [None, *sorted(f"{d.series}.0" for d in m.drivers)]
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
    if drv is not None and drv.paired_rocm is not None:
        for name in node.gfx_targets:
            target = m.gfx_target(name)
            assert target is not None
            product = first_product(node, target)
            if product is not None and product.first_rocm is not None:
                assert Version(drv.paired_rocm) >= Version(product.first_rocm), (
                    c.label,
                    drv.series,
                    product.name,
                )
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
