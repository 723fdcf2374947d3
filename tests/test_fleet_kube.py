"""Kubernetes: recorded `kubectl get nodes -o json` outputs with AMD's labels (tests/fleet_kube,
SOURCES.md says where each came from) become groups, and the generated manifests are valid
against the published Kubernetes schemas (kubernetes-validate, strict)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from resolver.data import matrix
from resolver.fleet.artifacts import Options, render_all
from resolver.fleet.kube import read_nodes
from resolver.fleet.plan import plan_fleet
from resolver.solve import Request
from tests.helpers import run_cli

RECORDED = Path(__file__).parent / "fleet_kube"
K8S_VERSIONS = ("1.25.0", "1.37.0")
FILES = sorted(p for p in RECORDED.glob("*.json") if "gfd" not in p.name)  # AMD labels
NVIDIA_FILES = sorted(RECORDED.glob("*gfd*.json"))


def _all_items() -> dict[str, Any]:
    items: list[Any] = []
    for path in FILES:
        items += json.loads(path.read_text())["items"]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def test_every_recorded_file_has_its_source() -> None:
    sources = (RECORDED / "SOURCES.md").read_text()
    assert FILES and NVIDIA_FILES
    for path in [*FILES, *NVIDIA_FILES]:
        assert f"`{path.name}`" in sources


@pytest.mark.parametrize(
    ("file", "name", "gfx", "gpus", "partitions"),
    [
        ("nodes-aks-mi300x-vf-k8sdp112.json", "aks-mi300x-0", ("gfx942",), 8, set()),
        # PR #108's older labeller writes no partition label: CPX from its counts and CUs.
        ("nodes-mi300x-cpx-k8sdp108.json", "mi300x-cpx-0", ("gfx942",), 8, {"CPX"}),
        ("nodes-mi300x-gpuop266.json", "master-1", ("gfx942",), 8, set()),
        ("nodes-mi355x-dpx-spx-gpuop555.json", "node-a", ("gfx950",), 16, {"DPX"}),
        ("nodes-mi355x-dpx-spx-gpuop555.json", "node-b", ("gfx950",), 8, {"SPX"}),
    ],
)
def test_labels_place_the_node(
    file: str, name: str, gfx: tuple[str, ...], gpus: int, partitions: set[str]
) -> None:
    reports = {
        r.name: r
        for r in read_nodes((RECORDED / file).read_text(), where=file, matrix=matrix.load())
    }
    report = reports[name]
    assert report.status == "ok", report.reason
    assert report.node is not None
    assert report.node.gfx_targets == gfx
    assert report.node.logical_gpu_count == gpus
    assert {g.partition.compute for g in report.node.gpus if g.partition} == partitions


def test_unplaceable_node_is_unknown_not_dropped() -> None:
    (report,) = read_nodes(
        (RECORDED / "nodes-vega8-beta-only-k8sdp42.json").read_text(),
        where="x",
        matrix=matrix.load(),
    )
    assert report.status == "unknown"
    assert (
        report.reason
        == "PCI device id 1638 is not a GPU the compatibility data knows; the node cannot be "
        "placed from its labels"
    )
    fleet = plan_fleet(matrix.load(), [report], Request())
    assert [(g.hostlist, g.verdict) for g in fleet.groups] == [("vega8-node", "unknown")]
    assert fleet.exit_code == 6


def _node(labels: dict[str, str], capacity: dict[str, str] | None = None) -> str:
    base = json.loads((RECORDED / "nodes-aks-mi300x-vf-k8sdp112.json").read_text())["items"][0]
    node = copy.deepcopy(base)
    node["metadata"]["labels"].update(labels)
    if capacity is not None:
        node["status"]["capacity"] = capacity
    return json.dumps({"kind": "List", "items": [node]})


@pytest.mark.parametrize(
    ("labels", "capacity", "why"),
    [
        (
            {"beta.amd.com/gpu.device-id": "74a1"},
            None,
            "the labels disagree on device-id: amd.com/gpu.device-id says 74b5; beta",
        ),
        (
            {"beta.amd.com/gpu.device-id.74a1": "8"},
            None,
            "amd.com/gpu.device-id says 74b5 but the count labels list 74a1, 74b5",
        ),
        (
            {
                "amd.com/gpu.family": "NV",
                "beta.amd.com/gpu.family": "NV",
                "beta.amd.com/gpu.family.AI": "0",
            },
            None,
            "the labels disagree on family",
        ),
        (
            {"beta.amd.com/gpu.vram": "192G"},
            None,
            (
                "the labels disagree on vram: amd.com/gpu.vram say 191G; beta.amd.com/gpu.vram say "
                "192G"
            ),
        ),
        (
            {"amd.com/compute-memory-partition": "cpx_nps4"},
            {"amd.com/spx_nps1": "8"},
            "capacity offers amd.com/spx_nps1 but amd.com/compute-memory-partition is cpx_nps4",
        ),
        (
            {"amd.com/compute-memory-partition": "xpx_nps9"},
            None,
            "amd.com/compute-memory-partition=xpx_nps9 is not",
        ),
    ],
)
def test_contradicting_labels_are_listed_with_why(
    labels: dict[str, str], capacity: dict[str, str] | None, why: str
) -> None:
    (report,) = read_nodes(_node(labels, capacity), where="x", matrix=matrix.load())
    assert report.status == "failed"
    assert report.reason is not None and report.reason.startswith(why), report.reason


def test_family_contradicting_device_id() -> None:
    labels = {
        k: v
        for k, v in json.loads(_node({}))["items"][0]["metadata"]["labels"].items()
        if "family" not in k
    }
    labels["amd.com/gpu.family"] = "NV"
    doc = {
        "kind": "List",
        "items": [
            {
                "metadata": {"name": "n", "labels": labels},
                "status": {"capacity": {"amd.com/gpu": "8"}},
            }
        ],
    }
    (report,) = read_nodes(json.dumps(doc), where="x", matrix=matrix.load())
    assert report.reason == "amd.com/gpu.family=NV contradicts device id 74b5 (gfx942)"


def test_partition_resource_and_no_device_plugin() -> None:
    doc = json.loads((RECORDED / "nodes-mi355x-dpx-spx-gpuop555.json").read_text())
    doc["items"][0]["status"]["capacity"] = {"amd.com/dpx_nps1": "16"}
    doc["items"][1]["status"]["capacity"] = {"cpu": "192"}
    a, b = read_nodes(json.dumps(doc), where="x", matrix=matrix.load())
    assert a.status == "ok" and a.resource == "amd.com/dpx_nps1"
    assert (
        b.status == "unknown"
        and b.reason == "the node offers no amd.com/gpu (is AMD's device plugin running on it?)"
    )


def test_bad_node_lists_are_bad_input() -> None:
    from resolver.util.errors import InputError

    with pytest.raises(InputError, match="not valid JSON"):
        read_nodes("{", where="x", matrix=matrix.load())
    with pytest.raises(InputError, match="not a Kubernetes node list"):
        read_nodes('{"kind": "Pod"}', where="x", matrix=matrix.load())


def test_recorded_cluster_plans_into_groups_and_valid_manifests(tmp_path: Path) -> None:
    import kubernetes_validate
    import yaml

    m = matrix.load()
    reports = read_nodes(json.dumps(_all_items()), where="recorded", matrix=matrix.load())
    fleet = plan_fleet(m, reports, Request())
    verdicts = {g.hostlist: g.verdict for g in fleet.groups}
    assert verdicts["vega8-node"] == "unknown"
    assert {k for k, v in verdicts.items() if v != "unknown"} == {
        "master-1",
        "aks-mi300x-0",
        "mi300x-cpx-0",
        "node-a",
        "node-b",
    }
    files = render_all(m, fleet, Options(model="Qwen/Qwen3-8B", shm_size="32Gi", namespace="llm"))
    manifests = {k: v for k, v in files.items() if k.startswith("kubernetes/")}
    assert len(manifests) == 5  # every placed group; none for the unknown one
    for name, text in manifests.items():
        docs = [d for d in yaml.safe_load_all(text) if d]
        assert [d["kind"] for d in docs] == ["Deployment", "Service"], name
        for doc in docs:
            # The oldest and the newest schemas kubernetes-validate ships (issue 23).
            for version in K8S_VERSIONS:
                kubernetes_validate.validate(doc, version, strict=True)
    node_a = next(g for g in fleet.groups if g.hostlist == "node-a")
    deployment = next(yaml.safe_load_all(files[f"kubernetes/{node_a.id}.yaml"]))
    pod = deployment["spec"]["template"]["spec"]
    # Never amd.com/gpu.driver-version: a module version, so a driver upgrade would leave every
    # pod unschedulable (issue 23).
    assert pod["nodeSelector"] == {
        "amd.com/gpu.device-id": "75a3",
        "amd.com/gpu.vram": "144G",
        "amd.com/compute-memory-partition": "dpx_nps1",
    }
    (container,) = pod["containers"]
    # DPX: one pod per partition (TP=1), never TP 16 across the partitions (issue 40, left).
    assert container["resources"]["limits"] == {"amd.com/gpu": 1}
    assert deployment["spec"]["replicas"] == 16
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}} in pod["volumes"]
    assert container["image"].startswith("vllm/vllm-openai-rocm:")


def test_invalid_manifest_is_caught_by_the_validator() -> None:
    """The validator is not a rubber stamp: a typo in a field fails strict validation."""
    import kubernetes_validate
    import yaml

    m = matrix.load()
    fleet = plan_fleet(
        m,
        read_nodes(
            (RECORDED / "nodes-mi300x-gpuop266.json").read_text(), where="x", matrix=matrix.load()
        ),
        Request(),
    )
    deployment = next(yaml.safe_load_all(render_all(m, fleet, Options())["kubernetes/g1.yaml"]))
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, "1.30.0", strict=True)


def test_cli_reads_stdin(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli(
        "fleet",
        "plan",
        "--kube",
        "-",
        "-o",
        str(out),
        "--json",
        input_text=json.dumps(_all_items()),
    )
    assert result.exit_code == 6, result.stderr
    data = json.loads(result.stdout)
    assert data["nodes"] == {"total": 6, "planned": 5, "unknown": 1, "failed": 0}
    assert sorted(p.name for p in (out / "kubernetes").iterdir()) == [
        f"g{i}.yaml" for i in range(1, 6)
    ]


def test_kube_kubectl_asks_the_current_cluster(tmp_path: Path) -> None:
    """`--kube kubectl` runs `kubectl get nodes -o json`; a stand-in kubectl on PATH answers
    with a recorded node list (no API server is installable here)."""
    import os
    import subprocess
    import sys

    from tests.conftest import FROZEN_MATRIX

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    recorded = RECORDED / "nodes-mi355x-dpx-spx-gpuop555.json"
    (bin_dir / "kubectl").write_text(
        f'#!/bin/sh\n[ "$*" = "get nodes -o json" ] || exit 9\ncat {recorded}\n'
    )
    (bin_dir / "kubectl").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "ROCM_VLLM_MATRIX_DIR": str(FROZEN_MATRIX),
    }
    run = subprocess.run(
        [sys.executable, "-m", "resolver", "fleet", "plan", "--kube", "kubectl", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert sorted(g["nodes"] for g in json.loads(run.stdout)["groups"]) == ["node-a", "node-b"]
    (bin_dir / "kubectl").write_text(
        '#!/bin/sh\necho "error: You must be logged in to the server (Unauthorized)" >&2\nexit 1\n'
    )
    run = subprocess.run(
        [sys.executable, "-m", "resolver", "fleet", "plan", "--kube", "kubectl"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 4
    assert run.stderr.splitlines() == [
        (
            "error: kubectl get nodes failed: error: You must be logged in to the server "
            "(Unauthorized)"
        ),
        "hint: check the current context (`kubectl config current-context`) and your access",
    ]


def test_the_current_labellers_partition_label_is_read() -> None:
    """Issue 23: ROCm/k8s-device-plugin writes amd.com/gpu.compute-memory-partition since 2025-04
    (its labeller tests list that key); a CPX node labelled so was planned as 64 full GPUs."""
    capacity = {"amd.com/gpu": "64"}
    (report,) = read_nodes(
        _node({"amd.com/gpu.compute-memory-partition": "cpx_nps4"}, capacity),
        where="x",
        matrix=matrix.load(),
    )
    assert report.status == "ok" and report.node is not None
    assert {(g.partition.compute, g.partition.memory) for g in report.node.gpus if g.partition} == {
        ("CPX", "NPS4")
    }
    m = matrix.load()
    fleet = plan_fleet(m, [report], Request())
    files = render_all(m, fleet, Options())
    text = next(v for k, v in files.items() if k.startswith("kubernetes/"))
    deployment = next(d for d in __import__("yaml").safe_load_all(text) if d)
    assert deployment["spec"]["replicas"] == 64  # one TP=1 pod per partition
    assert (
        deployment["spec"]["template"]["spec"]["nodeSelector"][
            "amd.com/gpu.compute-memory-partition"
        ]
        == "cpx_nps4"
    )
    # The two names disagreeing is a contradiction, said as such.
    (bad,) = read_nodes(
        _node(
            {
                "amd.com/gpu.compute-memory-partition": "cpx_nps4",
                "amd.com/compute-memory-partition": "spx_nps1",
            },
            capacity,
        ),
        where="x",
        matrix=matrix.load(),
    )
    assert bad.status == "failed" and "disagree on the partition mode" in str(bad.reason)


@pytest.mark.parametrize(("family", "device"), [("GC_11_0_0", "744c"), ("GC_12_0_0", "7551")])
def test_rdna_family_names_are_the_kernels(family: str, device: str) -> None:
    """amd.com/gpu.family for RDNA3/4 is libdrm's GC_11_0_0 / GC_12_0_0, not NV: it agrees with
    an RDNA device id, and contradicts a CDNA one."""
    doc = {
        "kind": "List",
        "items": [
            {
                "metadata": {
                    "name": "r",
                    "labels": {"amd.com/gpu.device-id": device, "amd.com/gpu.family": family},
                },
                "status": {"capacity": {"amd.com/gpu": "1"}},
            }
        ],
    }
    (ok,) = read_nodes(json.dumps(doc), where="x", matrix=matrix.load())
    assert ok.status == "ok", ok.reason
    doc["items"][0]["metadata"]["labels"]["amd.com/gpu.device-id"] = "74a1"  # MI300X
    (bad,) = read_nodes(json.dumps(doc), where="x", matrix=matrix.load())
    assert f"amd.com/gpu.family={family} contradicts device id 74a1" in str(bad.reason)


def test_nodes_offering_different_resources_are_different_groups() -> None:
    """A pod requests amd.com/gpu or amd.com/cpx_nps4, never both: one group cannot span them."""
    doc = json.loads((RECORDED / "nodes-mi355x-dpx-spx-gpuop555.json").read_text())
    twin = copy.deepcopy(doc["items"][0])
    twin["metadata"]["name"] = "node-c"
    twin["status"]["capacity"] = {"amd.com/dpx_nps1": "16"}
    doc["items"].append(twin)
    reports = read_nodes(json.dumps(doc), where="x", matrix=matrix.load())
    fleet = plan_fleet(matrix.load(), reports, Request())
    groups = {g.hostlist for g in fleet.groups}
    assert "node-a" in groups and "node-c" in groups  # same GPUs, other resource


def test_deployments_can_roll_and_keep_their_model_cache() -> None:
    """With every GPU of a node requested and one pod per node, the default 25%/25% rolling
    update never progresses for three replicas or fewer; the model cache was an emptyDir, lost at
    every restart; the pod needs the privileged Pod Security level, which the manifest says."""
    import yaml

    reports = read_nodes(
        (RECORDED / "nodes-mi300x-gpuop266.json").read_text(), where="x", matrix=matrix.load()
    )
    m = matrix.load()
    files = render_all(m, plan_fleet(m, reports, Request()), Options())
    text = files["kubernetes/g1.yaml"]
    deployment = next(yaml.safe_load_all(text))
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["hf-cache"]["hostPath"]["type"] == "DirectoryOrCreate"
    assert "pod-security.kubernetes.io/enforce=privileged" in text.splitlines()[1]


# --- NVIDIA nodes from GPU feature discovery labels (issue 26) ---------------------------------

GFD = Path(__file__).parent / "fleet_kube" / "nodes-a100-gfd-readme.json"


def test_an_nvidia_node_is_read_from_its_gfd_labels() -> None:
    (report,) = read_nodes(GFD.read_text(), where="gfd", matrix=matrix.load())
    assert report.node is not None and report.reason is None
    assert report.resource == "nvidia.com/gpu"
    (gpu,) = report.node.nvidia_gpus
    assert gpu["name"] == "A100-SXM4-40GB" and gpu["compute_capability"] == "8.0"
    assert report.node.nvidia_driver == "455.06"
    # GFD's machine label has a space (no valid label value): never kept for a selector.
    assert "nvidia.com/gpu.machine" not in report.labels
    # Driver 455 is older than every CUDA floor vLLM's builds need: a host fix, named. (The
    # shipped data: the frozen copy has no tags for 0.11.x, whose CUDA 11.8 build 455 runs, so
    # there the answer is unknown, never a no.)
    from tests.conftest import LIVE_MATRIX

    fleet = plan_fleet(matrix.load_dir(LIVE_MATRIX), [report], Request())
    (group,) = fleet.groups
    assert group.fingerprint.vendor == "nvidia" and group.verdict == "blocked_host_fix"
    assert group.route is not None
    assert [s.change.kind for s in group.route.steps] == ["nvidia_driver"]


def test_a_mixed_cluster_gets_manifests_per_vendor() -> None:
    import kubernetes_validate
    import yaml

    doc = json.loads(GFD.read_text())
    # The README's node on a current driver (a test variant: only the driver labels changed).
    doc["items"][0]["metadata"]["labels"]["nvidia.com/cuda.driver.major"] = "580"
    doc["items"][0]["metadata"]["labels"]["nvidia.com/cuda.driver.minor"] = "95"
    doc["items"][0]["metadata"]["labels"]["nvidia.com/cuda.driver.rev"] = "05"
    items = _all_items()
    items["items"] += doc["items"]
    m = matrix.load()
    fleet = plan_fleet(
        m, read_nodes(json.dumps(items), where="mixed", matrix=matrix.load()), Request()
    )
    a100 = next(g for g in fleet.groups if g.hostlist == "dgx-a100-0")
    assert a100.verdict == "supported" and set(fleet.main_plans) == {"amd", "nvidia"}
    files = render_all(m, fleet, Options(model="Qwen/Qwen3-8B"))
    docs = [d for d in yaml.safe_load_all(files[f"kubernetes/{a100.id}.yaml"]) if d]
    for d in docs:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(d, version, strict=True)
    pod = docs[0]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "A100-SXM4-40GB"}
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}


def test_generated_files_say_what_the_image_needs_of_a_node() -> None:
    """issue 25: the manifest's annotations and the batch script's comments state the gfx
    targets the image carries code for, its ROCm and stream, and the amdgpu driver series that
    run it, so a reader or an admission policy can check a node without running anything."""
    import yaml

    m = matrix.load()
    fleet = plan_fleet(
        m,
        read_nodes(
            (RECORDED / "nodes-mi300x-gpuop266.json").read_text(), where="x", matrix=matrix.load()
        ),
        Request(),
    )
    files = render_all(m, fleet, Options())
    group = fleet.groups[0]
    assert group.image is not None and group.image.plan is not None
    image = group.image.plan.candidate.image
    assert image is not None and image.rocm is not None
    meta = next(yaml.safe_load_all(files["kubernetes/g1.yaml"]))["metadata"]["annotations"]
    series = [d.series for d in m.drivers_running(image.rocm)]
    assert meta["rocm-vllm/needs-gfx"] == ";".join(image.arch) and "gfx942" in image.arch
    assert meta["rocm-vllm/needs-rocm"] == f"{image.rocm} ({image.stream})"
    assert meta["rocm-vllm/needs-amdgpu-driver-series"] == ",".join(series) and series
    script = files["slurm/g1.sbatch"]
    assert f"# needs: gfx {';'.join(image.arch)}; rocm {image.rocm} ({image.stream})" in script


# --- One reading of node facts (issue 34) -------------------------------------------------------

MI300X_ROCMINFO = (
    Path(__file__).parent / "probe" / "fixtures" / "rocminfo-gfx942-mi300x-4gpu-thamada.txt"
)
DRIVER_FACTS = ("amdgpu_module_version", "driver_release_source", "driver_release_confidence")


def _with(
    labels: dict[str, str] | None = None,
    node_info: dict[str, str] | None = None,
    drop: tuple[str, ...] = (),
) -> str:
    """The gpuop266 MI300X node (module 6.12.12) with labels changed and ``status.nodeInfo``."""
    doc = json.loads((RECORDED / "nodes-mi300x-gpuop266.json").read_text())
    item = doc["items"][0]
    item["metadata"]["labels"].update(labels or {})
    for key in drop:
        del item["metadata"]["labels"][key]
    if node_info is not None:
        item["status"]["nodeInfo"] = node_info
    return json.dumps(doc)


def _rocminfo_node(tmp_path: Path, module: str, m: Any) -> Any:
    """The MI300X rocminfo fixture as if its ROCk module were ``module``."""
    from resolver.probe import probe_files

    text = MI300X_ROCMINFO.read_text().replace(
        "ROCk module is loaded", f"ROCk module version {module} is loaded", 1
    )
    path = tmp_path / "rocminfo.txt"
    path.write_text(text)
    return probe_files(rocminfo=path, matrix=m)


@pytest.mark.parametrize("module", ["6.19.14", "6.18.3"])
def test_the_module_label_is_read_as_rocminfo_reads_it(tmp_path: Path, module: str) -> None:
    """The same module version gives the same driver facts, and the same confidence words,
    whether rocminfo or the labeller reported it: 6.19.14 is 31.40 (gpu-operator's own
    pairing), 6.18.3 is a module no AMD source pairs, so the release stays unknown."""
    from resolver.probe import confidence

    m = matrix.load()
    (report,) = read_nodes(_with({"amd.com/gpu.driver-version": module}), where="x", matrix=m)
    kube = report.node
    probed = _rocminfo_node(tmp_path, module, m)
    assert kube is not None and report.status == "ok"
    assert kube.driver_version == probed.driver_version
    assert {k: kube.host.get(k) for k in DRIVER_FACTS} == {
        k: probed.host.get(k) for k in DRIVER_FACTS
    }
    assert confidence(kube)["driver_version"] == confidence(probed)["driver_version"]
    codes = {p.code for p in kube.problems}
    if module == "6.19.14":
        assert kube.driver_version == "31.40" and "driver-release-unknown" not in codes
    else:  # unknown stays unknown: no release, the module kept, the problem said
        assert kube.driver_version is None and kube.host["amdgpu_module_version"] == "6.18.3"
        assert "driver-release-unknown" in codes
        (group,) = plan_fleet(m, [report], Request()).groups
        assert group.fingerprint.driver == "module 6.18"


def test_the_gpuop266_node_plans_what_rocminfo_plans(tmp_path: Path) -> None:
    """Issue 34 on the shipped data: the operator's node labelled amd.com/gpu.driver-version
    6.12.12 (AMD's 6.4.x packages) was planned the ROCm 10 image with a "driver unknown"
    warning, exit 0; it now gets the image `check --rocminfo` gives the same module."""
    from tests.conftest import LIVE_MATRIX

    env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    fleet = run_cli(
        "fleet", "plan", "--kube", str(RECORDED / "nodes-mi300x-gpuop266.json"), "--json", env=env
    )
    (group,) = json.loads(fleet.stdout)["groups"]
    text = MI300X_ROCMINFO.read_text().replace(
        "ROCk module is loaded", "ROCk module version 6.12.12 is loaded", 1
    )
    (tmp_path / "rocminfo.txt").write_text(text)
    check = json.loads(
        run_cli("check", "--rocminfo", str(tmp_path / "rocminfo.txt"), "--json", env=env).stdout
    )
    assert check["node"]["driver_version"] == "6.4"
    assert group["fingerprint"]["driver_series"] == "6.4"
    assert group["plan"]["label"] == check["plan"]["label"]
    assert group["plan"]["rocm"] == check["plan"]["rocm"]
    assert "driver-unchecked" not in {w["code"] for w in group["warnings"]}


@pytest.mark.parametrize(
    ("image", "os"),
    [
        ("Ubuntu 22.04.4 LTS", "ubuntu-22.04"),
        ("Ubuntu 24.04.1 LTS", "ubuntu-24.04"),
        ("Red Hat Enterprise Linux 9.4 (Plow)", "rhel-9.4"),
        ("SUSE Linux Enterprise Server 15 SP5", "sles-15.5"),
        ("Oracle Linux Server 9.4", "ol-9.4"),
        ("Debian GNU/Linux 12 (bookworm)", "debian-12"),
        ("Rocky Linux 9.3 (Blue Onyx)", "rocky-9.3"),
        ("Microsoft Azure Linux 3.0", "azurelinux-3.0"),
        ("CentOS Linux 7 (Core)", "centos-7"),
        # Not RHEL's own release numbers, and not OSes the data has records of: unknown.
        ("Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)", None),
        ("Talos (v1.7.0)", None),
        ("Ubuntu", None),
        ("", None),
    ],
)
def test_the_os_image_is_read(image: str, os: str | None) -> None:
    (report,) = read_nodes(
        _with(node_info={"osImage": image, "kernelVersion": "5.15.0-94-generic"}),
        where="x",
        matrix=matrix.load(),
    )
    assert report.status == "ok" and report.node is not None
    assert report.node.os == os
    assert report.node.kernel == "5.15.0-94-generic"


def test_node_feature_discovery_labels_name_the_os_and_kernel() -> None:
    """NFD's os_release labels are os-release's ID and VERSION_ID, read as the probe reads
    /etc/os-release; they name the OS where nodeInfo is absent, and the fingerprint carries it."""
    labels = {
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
        "feature.node.kubernetes.io/kernel-version.full": "6.8.0-40-generic",
    }
    m = matrix.load()
    (report,) = read_nodes(_with(labels), where="x", matrix=m)
    assert report.node is not None
    assert (report.node.os, report.node.kernel) == ("ubuntu-22.04", "6.8.0-40-generic")
    (group,) = plan_fleet(m, [report], Request()).groups
    assert group.fingerprint.os == "ubuntu-22.04"


@pytest.mark.parametrize(
    ("labels", "node_info", "why"),
    [
        ({}, {"osImage": "Ubuntu 22.04\ntouch /tmp/x"}, "status.nodeInfo.osImage "),
        ({}, {"osImage": "U" * 300}, "status.nodeInfo.osImage "),
        ({}, {"kernelVersion": "$(touch /tmp/x)"}, "status.nodeInfo.kernelVersion "),
        ({}, {"kernelVersion": "5.15.0 generic"}, "status.nodeInfo.kernelVersion "),
        (
            {"feature.node.kubernetes.io/system-os_release.ID": "ubuntu linux"},
            None,
            "label feature.node.kubernetes.io/system-os_release.ID has no valid",
        ),
        (
            {"amd.com/gpu.driver-version": "latest"},
            None,
            "amd.com/gpu.driver-version=latest is not a kernel module version",
        ),
    ],
)
def test_hostile_node_facts_are_refused(
    labels: dict[str, str], node_info: dict[str, str] | None, why: str
) -> None:
    """No kubelet writes these: the node is listed as failed with why, in no group."""
    (report,) = read_nodes(_with(labels, node_info), where="x", matrix=matrix.load())
    assert report.status == "failed"
    assert report.reason is not None and report.reason.startswith(why), report.reason


def test_one_node_object_is_a_list_of_one() -> None:
    """Issue 35, decided: `kubectl get node NAME -o json` prints one Node; it is read as a list
    of one (the command a user runs for one node). Anything else that is not a node list is
    refused in one line, and an item of another kind is listed as failed."""
    from resolver.util.errors import InputError

    m = matrix.load()
    node = json.loads(_with())["items"][0]
    (report,) = read_nodes(json.dumps(node), where="x", matrix=m)
    assert report.name == "master-1" and report.status == "ok"
    (listed,) = read_nodes(_with(), where="x", matrix=m)
    assert report.node == listed.node  # the same reading as the node in a list
    with pytest.raises(InputError, match=r"^x: not a Kubernetes node list \(kind PodList\)$"):
        read_nodes(json.dumps({"kind": "PodList", "items": [node]}), where="x", matrix=m)
    pod = {"kind": "Pod", "metadata": {"name": "p"}}
    good, bad = read_nodes(json.dumps({"kind": "List", "items": [node, pod]}), where="x", matrix=m)
    assert good.status == "ok"
    assert bad.status == "failed" and bad.reason == "a Pod, not a Node object"
    result = run_cli("fleet", "plan", "--kube", "-", "--json", input_text=json.dumps(node))
    assert result.exit_code in (0, 1, 6), result.stderr
    assert json.loads(result.stdout)["nodes"]["total"] == 1


# --- Partitions as real nodes show them (issue 40) ----------------------------------------------

DERIVED = RECORDED / "derived"


def test_every_derived_file_has_its_source_and_says_what_changed() -> None:
    sources = (RECORDED / "SOURCES.md").read_text()
    files = sorted(DERIVED.glob("*.json"))
    assert files
    for path in files:
        assert f"`{path.name}`" in sources
        for item in json.loads(path.read_text())["items"]:
            said = item["metadata"]["annotations"]["rocm-vllm.test/derived-from"]
            assert said.startswith(tuple(f"{p.name} " for p in FILES)), said


def _derived(name: str) -> dict[str, Any]:
    m = matrix.load()
    return {r.name: r for r in read_nodes((DERIVED / name).read_text(), where=name, matrix=m)}


MIXED = "nodes-mi300x-mixed-partitions-k8sdp108.json"


@pytest.mark.parametrize(
    ("name", "modes"),
    [
        # the device plugin's mixed strategy: one resource per partition type
        ("mi300x-mixed-0", {"CPX/NPS1": 32, "SPX/NPS1": 4}),
        # no resource (the single strategy refuses the node): the CU count labels say it
        ("mi300x-mixed-1", {"CPX": 32, "SPX": 4}),
    ],
)
def test_a_node_in_mixed_partition_modes_is_listed_not_refused(
    name: str, modes: dict[str, int]
) -> None:
    """N12: GPUs of one node in different partition modes are a legitimate node (the labeller
    writes count labels for each CU count and no partition label), not contradictory labels: it
    is an unknown group that says why it is not planned and what to do, with its GPUs' modes."""
    from collections import Counter

    report = _derived(MIXED)[name]
    assert report.status == "unknown" and report.node is not None
    node = report.node
    assert node.gfx_targets == ("gfx942",) and node.logical_gpu_count == 36
    assert node.physical_gpu_count == 8
    seen = Counter(
        "/".join(p for p in (g.partition.compute, g.partition.memory) if p)
        for g in node.gpus
        if g.partition
    )
    assert seen == modes
    assert {g.product for g in node.gpus} == {"Instinct MI300X"}  # the SPX GPUs' 304 CUs say so
    said = ", ".join(f"{mode} x{n}" for mode, n in sorted(modes.items()))
    assert report.reason == (
        f"mixed partition types on one node ({said}): not planned; set all its GPUs to one "
        "partition mode (amd-smi set --compute-partition MODE --memory-partition MODE) to plan it"
    )
    fleet = plan_fleet(matrix.load(), [report], Request())
    (group,) = fleet.groups
    assert (group.verdict, group.decision, fleet.failed) == ("unknown", None, ())
    assert group.fingerprint.partitions == tuple(sorted(modes))
    assert fleet.exit_code == 6


def test_mixed_partition_nodes_through_the_cli(tmp_path: Path) -> None:
    """Listed as unknown groups (exit 6), none failed, and no manifest for them."""
    out = tmp_path / "out"
    result = run_cli("fleet", "plan", "--kube", str(DERIVED / MIXED), "-o", str(out), "--json")
    assert result.exit_code == 6, result.stderr
    data = json.loads(result.stdout)
    assert data["nodes"] == {"total": 2, "planned": 0, "unknown": 2, "failed": 0}
    assert {tuple(g["fingerprint"]["partitions"]) for g in data["groups"]} == {
        ("CPX/NPS1", "SPX/NPS1"),
        ("CPX", "SPX"),
    }
    assert all(g["verdict"] == "unknown" and g["plan"] is None for g in data["groups"])
    assert not (out / "kubernetes").exists() or not list((out / "kubernetes").iterdir())


def test_a_partition_label_beside_several_partition_resources_is_a_contradiction() -> None:
    """The labeller writes the partition label only when every GPU is in that mode."""
    doc = json.loads((DERIVED / MIXED).read_text())
    del doc["items"][1]
    doc["items"][0]["metadata"]["labels"]["amd.com/gpu.compute-memory-partition"] = "cpx_nps1"
    (report,) = read_nodes(json.dumps(doc), where="x", matrix=matrix.load())
    assert report.status == "failed"
    assert report.reason == (
        "capacity offers amd.com/cpx_nps1, amd.com/spx_nps1 but "
        "amd.com/gpu.compute-memory-partition is cpx_nps1"
    )


def test_several_values_are_gpus_that_differ_a_plain_label_beside_another_is_not() -> None:
    """createLabels writes several values as count labels only; a plain label says there is one
    value, so a count label naming another beside it is a contradiction, as before."""
    # Two GPU kinds on one node: each kind's CU count, written as count labels, is no contradiction.
    labels = {
        "amd.com/gpu.device-id.74a1": "4",
        "beta.amd.com/gpu.device-id.74a1": "4",
        "amd.com/gpu.device-id.740f": "4",
        "beta.amd.com/gpu.device-id.740f": "4",
        "amd.com/gpu.cu-count.304": "4",
        "amd.com/gpu.cu-count.104": "4",
        "amd.com/gpu.family": "AI",
    }
    doc = {
        "kind": "List",
        "items": [
            {
                "metadata": {"name": "two-kinds", "labels": labels},
                "status": {"capacity": {"amd.com/gpu": "8"}},
            }
        ],
    }
    (report,) = read_nodes(json.dumps(doc), where="x", matrix=matrix.load())
    assert report.status == "ok", report.reason
    assert report.node is not None and report.node.gfx_targets == ("gfx90a", "gfx942")
    (bad,) = read_nodes(
        _node({"beta.amd.com/gpu.cu-count.38": "8"}), where="x", matrix=matrix.load()
    )
    assert bad.status == "failed"
    assert str(bad.reason).startswith("the labels disagree on cu-count: ")


OLDER = "nodes-mi300x-older-labeller-k8sdp108.json"


@pytest.mark.parametrize(
    ("name", "mode", "logical", "physical", "product"),
    [
        # 64 devices on 8 GPUs of 38 CUs each: CPX, 8 per MI300X (8 x 38 = its 304 CUs)
        ("cpx-8gpu", "CPX", 64, 8, "Instinct MI300X"),
        # no CU label: 8 per GPU is more than DPX/TPX/QPX make; which 74a1 part is not said
        ("cpx-8gpu-no-cu", "CPX", 64, 8, "Instinct MI300X / Instinct MI300A"),
        ("dpx-8gpu", "DPX", 16, 8, "Instinct MI300X"),  # 152 CUs: half an MI300X
        ("spx-8gpu", None, 8, 8, "Instinct MI300X"),  # whole GPUs: as before
    ],
)
def test_an_older_labellers_partitions_are_read_from_its_counts(
    name: str, mode: str | None, logical: int, physical: int, product: str
) -> None:
    """N11 (turn-3 12b): a labeller before 2025-04 writes no partition label; a CPX node was
    planned as whole GPUs. Its device count against its device-id count, and its CUs per device
    against the whole GPU's, say the mode; the node says how it was read."""
    report = _derived(OLDER)[name]
    assert report.status == "ok", report.reason
    node = report.node
    assert node is not None
    assert {g.partition.compute if g.partition else None for g in node.gpus} == {mode}
    assert (node.logical_gpu_count, node.physical_gpu_count) == (logical, physical)
    assert {g.product for g in node.gpus} == {product}
    assert node.host.get("partition_inferred", False) is (mode is not None)
    assert len(report.notes) == (1 if mode else 0)


def test_an_older_labellers_partitions_in_no_readable_mode_are_not_planned() -> None:
    """32 devices on 8 GPUs with no CU label: QPX on an MI300X or CPX on a 4-XCD part. The
    partition is unknown, so the node is not planned (never TP across partitions)."""
    report = _derived(OLDER)["split-4-no-cu"]
    assert report.status == "unknown" and report.node is not None
    assert report.reason == (
        "partitioned GPUs in a mode the labels do not name (32 devices on 8 GPUs, "
        "beta.amd.com/gpu.device-id.74a1=8): not planned, since a plan must not span partitions; "
        "label the node with a node labeller from 2025-04 on (it writes "
        "amd.com/gpu.compute-memory-partition), or add -cu-count to the labeller's flags"
    )
    (group,) = plan_fleet(matrix.load(), [report], Request()).groups
    assert group.verdict == "unknown"


@pytest.mark.parametrize(
    ("file", "name", "replicas"),
    [
        ("nodes-mi300x-cpx-k8sdp108.json", "mi300x-cpx-0", 8),  # recorded: 8 partitions, 1 GPU
        (f"derived/{OLDER}", "cpx-8gpu", 64),
        (f"derived/{OLDER}", "cpx-8gpu-no-cu", 64),
    ],
)
def test_an_older_labellers_cpx_node_is_never_tp_across_partitions(
    file: str, name: str, replicas: int
) -> None:
    """The manifest serves one TP=1 pod per partition (one amd.com/gpu each), not one pod with
    --tensor-parallel-size 8 across CPX partitions; the group carries the CPX warning."""
    import yaml

    m = matrix.load()
    reports = [
        r for r in read_nodes((RECORDED / file).read_text(), where=file, matrix=m) if r.name == name
    ]
    fleet = plan_fleet(m, reports, Request())
    (group,) = fleet.groups
    assert group.decision is not None
    assert "cpx-partition" in {w.code for w in group.decision.warnings}
    assert [n for n, _ in fleet.notes] == [name]
    files = render_all(m, fleet, Options(model="Qwen/Qwen3-8B"))
    deployment = next(yaml.safe_load_all(files[f"kubernetes/{group.id}.yaml"]))
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert deployment["spec"]["replicas"] == replicas
    assert container["resources"]["limits"] == {"amd.com/gpu": 1}
    args = container["args"]
    assert "--tensor-parallel-size" not in args or (
        args[args.index("--tensor-parallel-size") + 1] == "1"
    )
    for doc in yaml.safe_load_all(files[f"kubernetes/{group.id}.yaml"]):
        if doc:
            for version in K8S_VERSIONS:
                __import__("kubernetes_validate").validate(doc, version, strict=True)


@pytest.mark.parametrize(
    ("changes", "device_id", "mode", "per_gpu", "physical"),
    [
        # cpx-8gpu with capacity 63 (one partition missing, as 8 GPUs in CPX can lose one to the
        # kernel's 64 DRM nodes): the CUs still say CPX; how many per GPU the counts do not say
        ({"capacity": "63"}, "74a1", "CPX", None, 8),
        # cpx-8gpu as an MI308X (74a2, 4 XCDs of 20 CUs, no whole CU count in the data) with 32
        # devices: 4 per GPU alone could be QPX; 20 CUs per device is one XCD, so CPX
        ({"device": "74a2", "cu": "20", "capacity": "32"}, "74a2", "CPX", 4, 8),
    ],
)
def test_the_cus_decide_where_the_counts_cannot(
    changes: dict[str, str], device_id: str, mode: str, per_gpu: int | None, physical: int
) -> None:
    doc = json.loads((DERIVED / OLDER).read_text())
    item = doc["items"][0]  # cpx-8gpu, changed as the case says
    labels = item["metadata"]["labels"]
    if "device" in changes:
        labels = {
            k.replace("74a1", changes["device"]): v.replace("74a1", changes["device"])
            for k, v in labels.items()
        }
    if "cu" in changes:
        labels = {
            k.replace(".38", "." + changes["cu"]): (changes["cu"] if v == "38" else v)
            for k, v in labels.items()
        }
    item["metadata"]["labels"] = labels
    item["status"]["capacity"] = {"amd.com/gpu": changes["capacity"]}
    (report,) = read_nodes(
        json.dumps({"kind": "List", "items": [item]}), where="x", matrix=matrix.load()
    )
    assert report.status == "ok" and report.node is not None, report.reason
    assert {g.partition.compute for g in report.node.gpus if g.partition} == {mode}
    assert {g.pci_device_id for g in report.node.gpus} == {device_id}
    assert report.node.physical_gpu_count == physical
    (note,) = report.notes
    assert (f", {per_gpu} per GPU," in note) is (per_gpu is not None)


def test_many_count_labels_stay_bounded() -> None:
    """Thousands of CU count labels of 1,024 GPUs each: one unknown node, a one-line reason, no
    million Gpu records."""
    labels = {"amd.com/gpu.device-id": "74a1"}
    labels.update({f"amd.com/gpu.cu-count.{i}": "1024" for i in range(1, 3000)})
    doc = {
        "kind": "List",
        "items": [
            {
                "metadata": {"name": "h", "labels": labels},
                "status": {"capacity": {"amd.com/gpu": "8"}},
            }
        ],
    }
    (report,) = read_nodes(json.dumps(doc), where="x", matrix=matrix.load())
    assert report.status == "unknown" and report.node is not None
    assert len(report.node.gpus) <= 1024 and report.node.logical_gpu_count <= 1024
    assert report.reason is not None and len(report.reason) < 400
    assert report.reason.startswith("mixed partition types on one node (")
