"""`fleet plan --model` (issue 37 item 6, H17): each group is solved with the model and sized
from the solver's own fit (``Decision.model``): replicas of TP GPUs each per node, a group
whose GPUs are too few blocked with the solver's "gpus" host change, a partitioned group served
one TP=1 replica per partition only where one partition holds the model (else it needs SPX).
The batch scripts run as written (stand-in srun and engine, as tests/test_fleet.py does) and the
manifests pass the published Kubernetes schemas and tests/kube_semantics.py. Real fixtures: the
models' config.json files of tests/fixtures/models, the MI300X and MI325X records of the frozen
data. Asserts are on structure (sizes, argv words, JSON fields)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from resolver.cli._common import model_request
from resolver.data import matrix
from resolver.data.model import Matrix
from resolver.data.node import Gpu, Node, Partition, from_flags
from resolver.fleet.artifacts import Options, render_all
from resolver.fleet.plan import FleetPlan, fleet_json, plan_fleet, render_text
from resolver.fleet.reports import NodeReport
from resolver.solve import Request
from tests.helpers import REPO
from tests.kube_semantics import problems
from tests.test_fleet import _run_script
from tests.test_fleet_kube import K8S_VERSIONS

MODELS = Path(__file__).parent / "fixtures" / "models"


def _node(gpus: int) -> Node:
    return from_flags(
        gfx="gfx942", gpus=gpus, driver="30.30.3", os="ubuntu-22.04", rocm=None, python=None
    )


def _partitioned(product: str = "Instinct MI300X") -> Node:
    """8 MI300X in CPX/NPS4 (64 partitions of 24 GiB, the product's partition record)."""
    gpus = tuple(
        Gpu(gfx="gfx942", product=product, partition=Partition(compute="CPX", memory="NPS4"))
        for _ in range(64)
    )
    return Node(
        gpus=gpus,
        gfx_targets=("gfx942",),
        physical_gpu_count=8,
        logical_gpu_count=64,
        driver_version="30.30.3",
    )


def _plan(
    nodes: list[Node], slug: str, **knobs: Any
) -> tuple[Matrix, FleetPlan, dict[str, str], str]:
    m = matrix.load()
    spec = str(MODELS / slug)
    reports = [NodeReport(name=f"n{i}", source="t", node=n) for i, n in enumerate(nodes)]
    fleet = plan_fleet(m, reports, Request(model=model_request(spec, **knobs)))
    files = render_all(m, fleet, Options(model=spec, port=9000))
    return m, fleet, files, spec


def _schema(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((REPO / "docs" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(doc)
    return doc


def _valid_manifest(text: str) -> dict[str, Any]:
    """The Deployment of a manifest file, after the schemas and the API server's rules."""
    import kubernetes_validate

    docs = [d for d in yaml.safe_load_all(text) if d]
    assert problems(docs) == []
    for doc in docs:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)
    deployment: dict[str, Any] = docs[0]
    assert deployment["kind"] == "Deployment"
    return deployment


@pytest.mark.parametrize(("pinned", "tp"), [(None, None), (2, 2)])
def test_an_8_gpu_group_runs_replicas_of_the_answers_tp(
    tmp_path: Path, pinned: int | None, tp: int | None
) -> None:
    """Llama-3.1-70B on two 8x MI300X nodes: the answer's TP (1 unpinned: 131 GiB of weights
    fit one 192 GiB GPU; 2 pinned), and 8 // TP replicas per node, each on its own GPUs and
    port, in the scripts and the manifests."""
    m, fleet, files, spec = _plan(
        [_node(8), _node(8)], "llama-3.1-70b", tensor_parallel_size=pinned
    )
    [g] = fleet.groups
    assert g.verdict in ("supported", "supported_with_warnings")
    answer = g.model
    assert answer is not None and answer.fit is not None and answer.fit.fits
    chosen = answer.fit.tensor_parallel_size
    assert chosen == (tp or 1)
    sized = g.sizing
    assert sized is not None and sized.status == "sized" and sized.mode is None
    assert (sized.tensor_parallel_size, sized.replicas) == (chosen, 8 // chosen)

    runs = _run_script(files["slurm/g1.sbatch"], tmp_path)
    assert len(runs) == 2 * sized.replicas  # the stand-in srun runs each node's step here
    seen = set()
    for words in runs:
        devices = next(w.split("=", 1)[1] for w in words if w.startswith("HIP_VISIBLE_DEVICES="))
        port = int(words[words.index("--port") + 1])
        seen.add((devices, port))
        assert len(devices.split(",")) == chosen
        assert words[words.index("-p") + 1] == f"{port}:{port}"
        assert spec in words
        if chosen > 1:
            assert words[words.index("--tensor-parallel-size") + 1] == str(chosen)
        else:
            assert "--tensor-parallel-size" not in words
    # Each replica its own devices and port; the two nodes run the same set.
    expected = {
        (",".join(str(r * chosen + i) for i in range(chosen)), 9000 + r)
        for r in range(sized.replicas)
    }
    assert seen == expected

    deployment = _valid_manifest(files["kubernetes/g1.yaml"])
    assert deployment["spec"]["replicas"] == 2 * sized.replicas
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"amd.com/gpu": chosen}
    assert ("--tensor-parallel-size" in container["args"]) == (chosen > 1)
    assert "podAntiAffinity" not in pod["affinity"]  # several replicas share a node

    data = json.loads(json.dumps(fleet_json(fleet, m)))
    jsonschema.validate(data, _schema("fleet"))
    group = data["groups"][0]
    assert group["sizing"]["replicas_per_node"] == sized.replicas
    assert group["model"]["fit"]["tensor_parallel_size"] == chosen
    assert data["request"]["model"] == spec


def test_405b_on_one_gpu_nodes_is_blocked_with_the_gpus_change() -> None:
    """Llama-3.1-405B (756 GiB of weights) on 1-GPU MI300X nodes: no plan; the group's route is
    the solver's "gpus" host change (8 GPUs), and nothing is written to run it."""
    m, fleet, files, _ = _plan([_node(1), _node(1)], "llama-3.1-405b")
    [g] = fleet.groups
    assert g.verdict == "blocked_host_fix" and g.sizing is None
    assert g.route is not None
    [step] = g.route.steps
    assert (step.change.kind, step.change.value) == ("gpus", "8")
    assert {r.code for r in g.route.reasons} == {"model-does-not-fit"}
    assert not [k for k in files if k.startswith(("slurm/", "kubernetes/"))]
    assert fleet.exit_code == 1
    data = json.loads(json.dumps(fleet_json(fleet, m)))
    jsonschema.validate(data, _schema("fleet"))
    assert data["groups"][0]["route"]["steps"][0]["change"] == "gpus"
    assert data["groups"][0]["model"]["min_gpus"] == 8


def test_405b_on_8_gpu_nodes_is_one_tp8_replica() -> None:
    _, fleet, files, _ = _plan([_node(8)], "llama-3.1-405b")
    [g] = fleet.groups
    assert g.sizing is not None
    assert (g.sizing.tensor_parallel_size, g.sizing.replicas) == (8, 1)
    deployment = _valid_manifest(files["kubernetes/g1.yaml"])
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"] == {"amd.com/gpu": 8}
    assert container["args"][container["args"].index("--tensor-parallel-size") + 1] == "8"
    # One server per node: it holds every GPU.
    assert "podAntiAffinity" in deployment["spec"]["template"]["spec"]["affinity"]


def test_a_partitioned_group_needs_spx_for_a_model_one_partition_cannot_hold() -> None:
    """Llama-3.1-70B on MI300X CPX partitions (24 GiB each): the answer's TP is above 1, and TP
    across partitions is never served: no script or manifest, exit 1, and the text says SPX."""
    m, fleet, files, _ = _plan([_partitioned()], "llama-3.1-70b")
    [g] = fleet.groups
    assert g.sizing is not None
    assert (g.sizing.status, g.sizing.mode) == ("needs-spx", "CPX")
    assert g.sizing.tensor_parallel_size > 1 and g.sizing.replicas == 0
    assert sorted(files) == ["fleet.json", "fleet.txt"]
    assert fleet.exit_code == 1
    # A printed promise: the way out is named.
    assert "amd-smi set --compute-partition SPX" in render_text(fleet)
    jsonschema.validate(json.loads(json.dumps(fleet_json(fleet, m))), _schema("fleet"))


def test_a_partitioned_group_serves_one_tp1_replica_per_partition_with_a_shorter_context(
    tmp_path: Path,
) -> None:
    """Llama-3.1-8B on the same partitions: one partition holds it with a shorter context, so
    each of the 64 partitions serves a TP=1 replica at the longest --max-model-len that fits."""
    _, fleet, files, _ = _plan([_partitioned()], "llama-3.1-8b")
    [g] = fleet.groups
    answer = g.model
    assert answer is not None and g.sizing is not None
    one = max(f.largest_max_model_len for f in answer.table if f.tensor_parallel_size == 1)
    assert (g.sizing.status, g.sizing.tensor_parallel_size, g.sizing.replicas) == ("sized", 1, 64)
    assert g.sizing.max_model_len == one and 0 < one < 131072
    runs = _run_script(files["slurm/g1.sbatch"], tmp_path)
    assert len(runs) == 64
    for words in runs:
        assert words[words.index("--max-model-len") + 1] == str(one)
        assert "--tensor-parallel-size" not in words
    deployment = _valid_manifest(files["kubernetes/g1.yaml"])
    assert deployment["spec"]["replicas"] == 64
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"] == {"amd.com/gpu": 1}
    assert container["args"][container["args"].index("--max-model-len") + 1] == str(one)


def test_gpus_of_one_gfx_with_different_memory_are_different_groups() -> None:
    """MI300X (192 GiB) and MI325X (256 GiB) are both gfx942: with --model they fit it
    differently, so they are sized apart; without --model they stay one group."""
    m = matrix.load()
    nodes = [
        Node(
            gpus=tuple(Gpu(gfx="gfx942", product=p) for _ in range(8)),
            gfx_targets=("gfx942",),
            physical_gpu_count=8,
            logical_gpu_count=8,
            driver_version="30.30.3",
            os="ubuntu-22.04",
        )
        for p in ("Instinct MI300X", "Instinct MI325X")
    ]
    reports = [NodeReport(name=f"n{i}", source="t", node=n) for i, n in enumerate(nodes)]
    assert len(plan_fleet(m, reports, Request()).groups) == 1
    spec = str(MODELS / "llama-3.1-70b")
    fleet = plan_fleet(m, reports, Request(model=model_request(spec)))
    assert len(fleet.groups) == 2
    sizes = sorted(g.fingerprint.gpu_memory or 0 for g in fleet.groups)
    assert sizes[0] < sizes[1]


def test_fleet_plan_model_through_the_cli(tmp_path: Path) -> None:
    """The CLI passes --model and its knobs to every group (the files carry the pinned TP)."""
    from tests.helpers import run_cli

    report = tmp_path / "reports"
    report.mkdir()
    from resolver.probe import probe_files
    from tests.probe_data import probe_matrix

    fixture = REPO / "tests" / "probe" / "fixtures" / "rocminfo-gfx942-mi300x-4gpu-thamada.txt"
    node = probe_files(rocminfo=fixture, matrix=probe_matrix()).to_json()
    for name in ("a1", "a2"):
        (report / f"{name}.json").write_text(json.dumps({**node, "driver_version": "30.30.3"}))
    out = tmp_path / "out"
    spec = str(MODELS / "llama-3.1-70b")
    run = run_cli(
        "fleet", "plan", str(report), "--model", spec, "--tensor-parallel-size", "2", "-o", str(out)
    )
    assert run.exit_code == 0, run.stderr
    data = json.loads((out / "fleet.json").read_text())
    jsonschema.validate(data, _schema("fleet"))
    [group] = data["groups"]
    assert group["sizing"]["tensor_parallel_size"] == 2
    assert group["sizing"]["replicas_per_node"] == 2  # 4 GPUs // TP 2
    script = (out / "slurm" / "g1.sbatch").read_text()
    assert "local -a sets=(0,1 2,3)" in script


@pytest.mark.parametrize("engine", ["docker", "apptainer"])
def test_a_local_model_is_served_from_its_directory_on_every_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """`fleet plan --model ./DIR` (a directory of the planning machine, given relative): the
    scripts and the manifests serve its absolute path, mounted read-only at that path (docker
    -v, Apptainer's --bind, a hostPath volume the kubelet refuses to start without), and each
    says that every node must hold it there; a relative path in a container, or an unmounted
    one, names nothing."""
    from tests.helpers import run_cli

    report = tmp_path / "reports"
    report.mkdir()
    node = _node(8).to_json()
    (report / "a1.json").write_text(json.dumps(node))
    out = tmp_path / "out"
    monkeypatch.chdir(MODELS)
    run = run_cli(
        "fleet", "plan", str(report), "--model", "./llama-3.1-70b", "--engine", engine,
        "-o", str(out),
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    served = str(MODELS / "llama-3.1-70b")

    script = (out / "slurm" / "g1.sbatch").read_text()
    (tmp_path / "home" / ".cache" / "huggingface").mkdir(parents=True)
    runs = [w for w in _run_script(script, tmp_path) if w[0] != "pull"]
    assert runs
    for words in runs:
        mount = words.index(f"{served}:{served}:ro")  # the stand-in refuses a missing source
        assert words[mount - 1] == ("--bind" if engine == "apptainer" else "-v")
        assert served in words and "./llama-3.1-70b" not in words
    assert f"# --model {served} is a directory of the machine that planned" in script

    deployment = _valid_manifest((out / "kubernetes" / "g1.yaml").read_text())
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert served in container["args"]
    assert {"name": "model", "mountPath": served, "readOnly": True} in container["volumeMounts"]
    assert {"name": "model", "hostPath": {"path": served, "type": "Directory"}} in pod["volumes"]
    assert served in deployment["metadata"]["annotations"]["rocm-vllm/model-path"]
