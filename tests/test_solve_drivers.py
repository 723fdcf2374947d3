"""The driver rules of ``solve/checks/`` on the shipped data (drivers.toml's release pairs):
a patch release is that release, not its series' x.y.0 (issue 34), and AMD's ROCm 10.0 driver
table is read as it is (31.10-31.30 run ROCm 10.0)."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from resolver.data import matrix
from resolver.data.node import from_flags
from resolver.solve import OK_VERDICTS, Decision, Request, solve
from resolver.util.errors import MatrixError
from resolver.util.versions import parse_spec

from .conftest import LIVE_MATRIX

M = matrix.load_dir(LIVE_MATRIX)


def decide(
    gfx: str, driver: str | None, vllm: str | None = None, pci: str | None = None
) -> Decision:
    node = from_flags(gfx=gfx, gpus=1, driver=driver, os=None, rocm=None, python=None)
    if pci is not None:
        node = msgspec.structs.replace(
            node, gpus=tuple(msgspec.structs.replace(g, pci_device_id=pci) for g in node.gpus)
        )
    return solve(M, node, Request(vllm=parse_spec(vllm) if vllm else None))


def codes(d: Decision) -> set[str]:
    return {r.code for ev in d.rejected for r in ev.reasons}


@pytest.mark.parametrize("driver", ["6.4.1", "6.4.3", "6.4.4"])
def test_rdna4_runs_on_the_6_4_releases_that_know_it(driver: str) -> None:
    d = decide("gfx1201", driver)
    assert d.verdict == "supported", (driver, d.verdict)
    assert "driver-predates-gpu" not in codes(d)
    assert d.plan is not None and d.plan.candidate.label.endswith("-rocm72")


def test_the_x_y_0_release_before_the_gpu_is_refused_and_the_fix_is_the_release_that_knows_it() -> (
    None
):
    d = decide("gfx1201", "6.4.0")
    assert d.verdict == "blocked_host_fix"
    assert d.host_fix is not None
    changes = {r.fix.change.value for r in d.host_fix.reasons if r.fix and r.fix.change}
    assert changes == {"6.4.1"}  # the smallest move: within the series, not to 30.10
    node = d.node
    for r in d.host_fix.reasons:
        assert r.fix is not None and r.fix.change is not None
        node = r.fix.change.apply(node)
    assert node.driver_version == "6.4.1"
    assert solve(M, node, Request()).verdict in OK_VERDICTS


def test_a_series_alone_is_not_refused_but_says_which_release_it_needs() -> None:
    d = decide("gfx1201", "6.4")
    assert d.verdict == "supported_with_warnings"
    assert d.plan is not None
    (adv,) = [w for w in d.plan.warnings if w.code == "driver-release-unchecked"]
    assert adv.change is not None and adv.change.value == "6.4.1"


def test_a_series_that_ended_before_the_gpu_is_refused_whatever_its_release() -> None:
    d = decide("gfx1201", "6.3")  # every 6.3.x shipped before ROCm 6.4.0, and 6.4.1 added RDNA4
    assert d.verdict == "blocked_host_fix"
    assert "driver-predates-gpu" in codes(d)


@pytest.mark.parametrize(("driver", "ok"), [("6.3.0", False), ("6.3.1", True), ("6.3.4", True)])
def test_mi325x_is_known_from_the_release_rocm_6_3_1_shipped_with(driver: str, ok: bool) -> None:
    d = decide("gfx942", driver, pci="74a5")
    assert ("driver-predates-gpu" not in codes(d)) is ok, (driver, d.verdict)


@pytest.mark.parametrize("driver", ["31.10.0", "31.20.0", "31.30.0"])
def test_amd_s_rocm_10_driver_table_is_read_as_it_is(driver: str) -> None:
    d = decide("gfx942", driver, vllm="==0.33.0")
    assert d.verdict == "supported", (driver, d.verdict)
    assert d.plan is not None and d.plan.candidate.rocm is not None
    assert str(d.plan.candidate.rocm) == "10.0.0"


def test_the_message_names_the_node_s_own_release() -> None:
    d = decide("gfx1201", "6.3.2")
    messages = [
        r.message for ev in d.rejected for r in ev.reasons if r.code == "driver-predates-gpu"
    ]
    said_as = {
        (m.key, m.value("driver"), str(m.value("paired")), str(m.value("first"))) for m in messages
    }
    assert said_as == {("driver-predates-gpu", "6.3.2", "6.3.2", "6.4.1")}


@pytest.mark.parametrize(
    ("pairs", "field"),
    [
        ('"6.4.0" = "6.4.0"\n"6.4.1" = "6.3.9"\n', "later driver release with an older ROCm"),
        ('"6.4.0" = "6.4.9"\n', "paired_rocm is 6.4.0"),
        ('"6.5.0" = "6.5.0"\n', "is not a release of series 6.4"),
    ],
)
def test_broken_release_pairs_are_refused_at_load(tmp_path: Path, pairs: str, field: str) -> None:
    data = tmp_path / "matrix"
    shutil.copytree(LIVE_MATRIX, data)
    path = data / "drivers.toml"
    text = path.read_text()
    start = text.index("[driver.releases]\n", text.index('series = "6.4"'))
    end = text.index("\n\n", start)
    path.write_text(text[:start] + "[driver.releases]\n" + pairs.rstrip("\n") + text[end:])
    with pytest.raises(MatrixError) as err:
        matrix.load_dir(data)
    assert field in str(err.value)
