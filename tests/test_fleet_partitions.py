"""DPX/TPX/QPX partitions in the run command, the batch scripts and the manifests (issue 40,
left): a physical GPU split into 2 (DPX) or 4 (QPX) logical GPUs serves one TP=1 replica per
partition, never tensor parallelism across all of them; TP inside one physical GPU is refused,
TP across GPUs (one partition of each) is served with a warning.

The DPX node is real published data: ROCm/gpu-operator#555's MI355X `dpx_nps1` node (16
logical GPUs). No published amd-smi, sysfs or label output of a QPX node exists that we found,
so the QPX node is built here from its facts (8 GPUs x 4 partitions), and says so. The CPX
fixtures are the recorded KFD topologies of ROCm/k8s-device-plugin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from resolver.artifacts.parallel import physical_gpus, place
from resolver.data import matrix
from resolver.data.node import Gpu, Node, Partition
from resolver.fleet.artifacts import Options, slurm_jobs
from resolver.fleet.kube import read_nodes
from resolver.fleet.layout import (
    PartitionLimits,
    Pending,
    SlurmLayout,
    layout_from_json,
    layout_json,
)
from resolver.fleet.slurm import read_pending, read_reservations
from resolver.probe import probe_files
from resolver.util.errors import UsageError
from tests.helpers import said
from tests.probe_data import probe_matrix

ROOT = Path(__file__).parent
DPX_NODES = ROOT / "fleet_kube" / "nodes-mi355x-dpx-spx-gpuop555.json"
SYSFS = ROOT / "probe" / "fixtures" / "sysfs"


@pytest.fixture(scope="module")
def dpx_node() -> Node:
    reports = read_nodes(DPX_NODES.read_text(), where="x", matrix=matrix.load())
    [node] = [r.node for r in reports if r.name == "node-a"]
    assert node is not None
    return node


def qpx_node() -> Node:
    """8 MI300X in QPX (4 logical GPUs each, AMD's table): built from flags, not recorded."""
    gpus = tuple(
        Gpu(gfx="gfx942", partition=Partition(compute="QPX", memory="NPS1")) for _ in range(32)
    )
    return Node(gpus=gpus, gfx_targets=("gfx942",), physical_gpu_count=8, logical_gpu_count=32)


def test_a_dpx_node_serves_one_tp1_replica_per_partition(dpx_node: Node) -> None:
    placed = place(dpx_node, devices=None, model=None, hf_cache="/nonexistent")
    assert (placed.devices, placed.tensor_parallel, placed.replicas) == ((0,), 1, 16)
    [w] = placed.warnings
    assert w.code == "one-replica-per-partition" and w.severity == "info"
    assert (w.message.value("mode"), w.message.value("per_gpu")) == ("DPX", 2)
    assert "gpu-partitioning" in said(w.source) and "#20125" in said(w.source)


@pytest.mark.parametrize(
    ("devices", "tp"),
    [((0, 2), 2), ((0, 2, 4, 6, 8, 10, 12, 14), 8)],
)
def test_tp_across_dpx_gpus_is_served_with_a_warning(
    dpx_node: Node, devices: tuple[int, ...], tp: int
) -> None:
    placed = place(dpx_node, devices=devices, model=None, hf_cache="/nonexistent")
    assert (placed.devices, placed.tensor_parallel, placed.replicas) == (devices, tp, 1)
    [w] = placed.warnings
    assert w.code == "tp-across-partitions" and w.message.value("gpus") == len(devices)


def test_tp_within_one_dpx_gpu_is_refused(dpx_node: Node) -> None:
    with pytest.raises(UsageError) as err:
        place(dpx_node, devices=(2, 3), model=None, hf_cache="/nonexistent")
    assert "DPX partitions of one GPU (devices 2 and 3)" in str(err.value)
    assert err.value.hint is not None and "(--devices 0,2)" in err.value.hint


def test_qpx_partitions_group_by_four() -> None:
    node = qpx_node()
    keys = physical_gpus(node, "QPX")
    assert len(set(keys)) == 8 and keys[:5] == ["gpu:0"] * 4 + ["gpu:1"]
    placed = place(node, devices=None, model=None, hf_cache="/nonexistent")
    assert (placed.tensor_parallel, placed.replicas) == (1, 32)
    assert placed.warnings[0].message.value("per_gpu") == 4
    across = place(node, devices=(0, 4, 8, 12), model=None, hf_cache="/nonexistent")
    assert across.tensor_parallel == 4
    with pytest.raises(UsageError, match="QPX partitions of one GPU"):
        place(node, devices=(4, 7), model=None, hf_cache="/nonexistent")


@pytest.mark.parametrize(
    ("tree", "gpus", "per"),
    [("kfd-gfx942-mi300x-8gpu-cpx-k8sdp", 8, 8), ("kfd-gfx942-mi308x-8gpu-cpx-k8sdp", 8, 4)],
)
def test_recorded_cpx_partitions_belong_to_their_gpus(tree: str, gpus: int, per: int) -> None:
    """The recorded KFD topologies: the partitions of one GPU (one unique id) are in a row,
    the order the placement falls back to when a node carries no ids."""
    node = probe_files(sysfs=SYSFS / tree, matrix=probe_matrix())
    keys = physical_gpus(node, "CPX")
    assert len(set(keys)) == gpus
    assert keys == sorted(keys, key=keys.index)  # each GPU's partitions together
    assert max(keys.count(k) for k in keys) == per
    # CPX keeps its rule: no tensor parallelism across partitions at all.
    other = keys.index(keys[-1])  # a partition of another GPU
    with pytest.raises(UsageError, match="CPX partitions"):
        place(node, devices=(0, other), model=None, hf_cache="/nonexistent")


def test_dpx_scripts_and_manifests_serve_each_partition(tmp_path: Path) -> None:
    """The recorded DPX node planned end to end: its Deployment runs 16 pods of 1 partition
    each (no --tensor-parallel-size 16), its batch script 16 servers, and both say why."""
    import os
    import subprocess
    import sys

    from tests.conftest import FROZEN_MATRIX

    out = tmp_path / "plan"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "resolver",
            "fleet",
            "plan",
            "--kube",
            str(DPX_NODES),
            "--model",
            "org/m",
            "-o",
            str(out),
        ],
        env={**os.environ, "ROCM_VLLM_MATRIX_DIR": str(FROZEN_MATRIX)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    docs = [
        doc
        for path in (out / "kubernetes").iterdir()
        for doc in yaml.safe_load_all(path.read_text())
        if doc["kind"] == "Deployment"
    ]
    dpx = next(d for d in docs if "DPX" in d["metadata"]["annotations"]["rocm-vllm/group"])
    spx = next(d for d in docs if "SPX" in d["metadata"]["annotations"]["rocm-vllm/group"])
    container = dpx["spec"]["template"]["spec"]["containers"][0]
    assert dpx["spec"]["replicas"] == 16
    assert container["resources"]["limits"] == {"amd.com/gpu": 1}
    assert "--tensor-parallel-size" not in container["args"]
    assert (
        "DPX mode (2 partitions per GPU)" in dpx["metadata"]["annotations"]["rocm-vllm/placement"]
    )
    assert "rocm-vllm/placement" not in spx["metadata"]["annotations"]
    scripts = [p.read_text() for p in (out / "slurm").iterdir()]
    [dpx_script] = [t for t in scripts if "DPX/NPS1" in t]
    assert "for ((n = 0; n < 16; n++)); do" in dpx_script
    assert '"HIP_VISIBLE_DEVICES=$n"' in dpx_script
    assert "# DPX mode (2 partitions per GPU)" in dpx_script
    assert "--tensor-parallel-size" not in dpx_script
    assert json.loads((out / "fleet.json").read_text())["nodes"]["planned"] == 2


# --- reservations not yet started ---------------------------------------------------------------

# `scontrol show reservation --oneliner` as Slurm 22.05-24.11 print it (the test cluster's own
# output has these fields; tests/test_fleet_slurm.py reads a live one).
SCONTROL = (
    "ReservationName=now NodeCnt=1 Nodes=n8 StartTime=2026-01-01T00:00:00 "
    "EndTime=2027-01-01T00:00:00 Users=root State=ACTIVE\n"
    "ReservationName=later StartTime=2026-12-02T06:48:13 EndTime=2026-12-02T07:48:13 "
    "Nodes=n[5-6] NodeCnt=2 Users=root State=INACTIVE\n"
)


def test_pending_reservations_are_read_apart_from_active_ones() -> None:
    assert read_reservations(SCONTROL) == {"n8": "now"}
    assert read_pending(SCONTROL) == {"later": Pending("2026-12-02T06:48:13", ("n5", "n6"))}


def test_a_job_in_a_pending_reservation_says_it_waits_and_holds_only_its_nodes() -> None:
    layout = SlurmLayout(
        member_of={n: ("wide",) for n in ("n5", "n6", "n7")},
        limits={"wide": PartitionLimits(max_nodes=None)},
        gpus={"n5": 4, "n6": 4, "n7": 4},
        pending={"later": Pending("2026-12-02T06:48:13", ("n5", "n6"))},
    )
    again = layout_from_json(json.loads(json.dumps(layout_json(layout))), max_minutes=60)
    assert again == layout

    class _Group:
        names = ("n5", "n6", "n7")

    opts = Options(slurm=layout, reservation="later")
    jobs = slurm_jobs(_Group(), opts)  # type: ignore[arg-type]
    by = {job.nodes: job for job in jobs}
    assert set(by) == {("n5", "n6"), ("n7",)}
    assert by[("n5", "n6")].reservation == "later" and by[("n7",)].reservation is None
    assert any("starts at 2026-12-02T06:48:13" in n for n in by[("n5", "n6")].notes)
    assert not any("starts at" in n for n in by[("n7",)].notes)


@pytest.mark.parametrize(
    "entry",
    [{"start": "tomorrow", "nodes": []}, {"start": "2026-12-02T06:48:13", "nodes": ["a b"]}, "x"],
)
def test_a_saved_pending_reservation_is_checked(entry: object) -> None:
    saved = layout_json(SlurmLayout(member_of={"n1": ("p",)}, limits={"p": PartitionLimits()}))
    saved["pending_reservations"] = {"later": entry}
    assert layout_from_json(saved, max_minutes=60) is None
