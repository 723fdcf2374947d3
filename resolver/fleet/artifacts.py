"""What a fleet plan hands to the schedulers: per group a Slurm batch script and Kubernetes
manifests (a Deployment and a Service), written together into one directory, atomically.

The container command comes from the single-node tools: ``resolver.runcmd`` (docker, podman) and
``resolver.apptainer``, with the serving env ``resolver.images`` recommends for the group's gfx
targets, so a group's script runs exactly what ``rocm-vllm image`` prints for one of its nodes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from resolver.errors import InputError, UsageError
from resolver.fleet.plan import FleetPlan, Group, fleet_json, render_text
from resolver.model import ContainerImage, Matrix

Engine = Literal["docker", "podman", "apptainer", "singularity"]
ENGINES: tuple[str, ...] = ("docker", "podman", "apptainer", "singularity")
_FEATURE_RE = re.compile(r"^[A-Za-z0-9_.&|!()\[\]*,-]{1,200}$")
_SHM_RE = re.compile(r"^[1-9][0-9]{0,5}(Mi|Gi)$")
# Labels the AMD node labeller sets that say which hardware a node has (not firmware versions).
SELECTOR_LABELS = (
    "amd.com/gpu.device-id",
    "amd.com/gpu.product-name",
    "amd.com/gpu.cu-count",
    "amd.com/gpu.vram",
    "amd.com/gpu.driver-version",
    "amd.com/compute-memory-partition",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Options:
    engine: Engine = "docker"
    model: str | None = None
    port: int = 8000
    hf_cache: str = "~/.cache/huggingface"
    constraint: str | None = None  # sbatch --constraint instead of --nodelist
    partition: str | None = None  # sbatch --partition
    time: str = "04:00:00"
    shm_size: str = "16Gi"
    namespace: str | None = None

    def check(self) -> None:
        if self.engine not in ENGINES:
            raise UsageError(
                f"--engine {self.engine!r} is not one of {', '.join(ENGINES)}",
                hint="use --engine docker, podman, apptainer or singularity",
            )
        if self.constraint is not None and not _FEATURE_RE.match(self.constraint):
            raise UsageError(
                f"--constraint {self.constraint!r} is not a Slurm feature expression",
                hint="e.g. --constraint mi300x or 'mi300x&ib'",
            )
        if self.partition is not None and not re.match(r"^[A-Za-z0-9_.-]{1,64}$", self.partition):
            raise UsageError(
                f"--partition {self.partition!r} is not a partition name",
                hint="letters, digits, - _ .",
            )
        if not re.match(r"^(\d+-)?\d{1,3}(:\d{2}){0,2}$", self.time):
            raise UsageError(
                f"--time {self.time!r} is not a Slurm time limit",
                hint="e.g. 04:00:00 or 1-00:00:00",
            )
        if not _SHM_RE.match(self.shm_size):
            raise UsageError(
                f"--shm-size {self.shm_size!r} is not a size", hint="e.g. 16Gi or 512Mi"
            )
        if self.namespace is not None and not re.match(
            r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", self.namespace
        ):
            raise UsageError(
                f"--namespace {self.namespace!r} is not a Kubernetes namespace name",
                hint="lower-case letters, digits and -",
            )
        from resolver.runcmd import RunSpec

        RunSpec(
            image="check",
            entrypoint="vllm-serve",
            model=self.model,
            port=self.port,
            hf_cache=self.hf_cache,
        )


def _image(group: Group) -> ContainerImage | None:
    if group.pinned is not None:
        return group.pinned
    d = group.image
    if d is None or d.plan is None:
        return None
    return d.plan.candidate.image


def _spec(m: Matrix, group: Group, image: ContainerImage, opts: Options) -> Any:
    from resolver.images import serving_env
    from resolver.runcmd import RunSpec

    assert group.image is not None
    env, _warnings = serving_env(m, group.representative, group.image)
    gpus = group.representative.logical_gpu_count or len(group.representative.gpus)
    ref = group.ref or (
        image.ref if image.digest is None or "@" in image.ref else f"{image.ref}@{image.digest}"
    )
    return RunSpec(
        image=ref,
        entrypoint=image.entrypoint,
        model=opts.model,
        port=opts.port,
        hf_cache=opts.hf_cache,
        env=env,
        tensor_parallel=gpus or None,
        name=f"vllm-{group.id}",
    )


def container_words(m: Matrix, group: Group, opts: Options) -> list[str] | None:
    image = _image(group)
    if image is None:
        return None
    spec = _spec(m, group, image, opts)
    if opts.engine in ("apptainer", "singularity"):
        from resolver.apptainer import words

        return words(spec, binary=opts.engine)
    from resolver.runcmd import run_words

    return run_words(spec, "podman" if opts.engine == "podman" else "docker")


def _shell_word(word: str) -> str:
    if word.startswith("~/") and shlex.quote(word[1:]) == word[1:]:
        return '"$HOME"' + word[1:]
    return shlex.quote(word)


def sbatch_script(m: Matrix, group: Group, opts: Options) -> str | None:
    """One vLLM server per node of the group: ``#SBATCH`` picks the nodes (``--nodelist`` with
    the group's host list, or ``--constraint``), one task per node, every GPU of the node."""
    words = container_words(m, group, opts)
    if words is None:
        return None
    image = _image(group)
    assert image is not None
    assert group.decision is not None
    gpus = group.representative.logical_gpu_count or len(group.representative.gpus)
    nodes = len(group.reports)
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name=vllm-{group.id}",
    ]
    if opts.constraint:
        lines.append(f"#SBATCH --constraint={opts.constraint}")
        lines.append("#SBATCH --nodes=1")
    else:
        lines.append(f"#SBATCH --nodelist={group.hostlist}")
        lines.append(f"#SBATCH --nodes={nodes}")
    if opts.partition:
        lines.append(f"#SBATCH --partition={opts.partition}")
    unpinned = "not pinned by digest: run `rocm-vllm image --digest` on a node to pin it"
    lines += [
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={gpus}",
        "#SBATCH --exclusive",
        f"#SBATCH --time={opts.time}",
        f"#SBATCH --output=vllm-{group.id}-%j.out",
        f"# rocm-vllm fleet plan, group {group.id}: {group.fingerprint.short()}",
        (
            f"# verdict {group.decision.verdict}; image {image.ref} (vLLM {image.vllm}, ROCm "
            f"{image.rocm})"
        ),
        f"# {'digest ' + image.digest if image.digest else unpinned}",
        "set -euo pipefail",
        # Each task serves on its own node; the engine sees every GPU Slurm gave the job.
        f'CONTAINER="${{CONTAINER:-{words[0]}}}"',
        "srun --ntasks-per-node=1 --kill-on-bad-exit=1 \\",
        '  "$CONTAINER" ' + " ".join(_shell_word(w) for w in words[1:]),
    ]
    return "\n".join(lines) + "\n"


# --- Kubernetes -----------------------------------------------------------------------------------


def _yaml(value: Any, indent: int = 0) -> list[str]:
    """Block YAML for dicts and lists of JSON scalars (JSON strings are YAML scalars)."""
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{key}:")
                lines += _yaml(item, indent + 1)
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item:
                sub = _yaml(item, indent + 1)
                lines.append(f"{pad}- {sub[0].lstrip()}")
                lines += sub[1:]
            else:
                lines.append(f"{pad}- {_scalar(item)}")
    return lines


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return json.dumps(str(value))


def _selector(group: Group) -> tuple[dict[str, str], list[dict[str, Any]], str]:
    """Node selection: the labeller's labels every node of the group shares, the nodes' own
    names, and the GPU resource they offer."""
    labelled = [r for r in group.reports if r.labels]
    common: dict[str, str] = {}
    if labelled and len(labelled) == len(group.reports):
        first = labelled[0].labels
        for key in SELECTOR_LABELS:
            values = {r.labels.get(key) for r in labelled}
            if len(values) == 1 and first.get(key):
                common[key] = first[key]
    if not common:
        ids = {
            g.pci_device_id for r in group.reports if r.node for g in r.node.gpus if g.pci_device_id
        }
        if len(ids) == 1:
            common["amd.com/gpu.device-id"] = ids.pop()
    names = sorted({r.name for r in group.reports})
    expressions = [{"key": "kubernetes.io/hostname", "operator": "In", "values": names}]
    resources = {r.resource for r in group.reports}
    resource = resources.pop() if len(resources) == 1 else "amd.com/gpu"
    return common, expressions, resource


def manifests(m: Matrix, group: Group, opts: Options) -> str | None:
    image = _image(group)
    if image is None:
        return None
    spec = _spec(m, group, image, opts)
    gpus = group.representative.logical_gpu_count or len(group.representative.gpus) or 1
    name = f"vllm-{group.id}"
    labels = {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/managed-by": "rocm-vllm",
    }
    node_selector, expressions, resource = _selector(group)
    serve = []
    if spec.model:
        serve += ["--model", spec.model]
    if gpus > 1:
        serve += ["--tensor-parallel-size", str(gpus)]
    serve += ["--port", str(opts.port)]
    container: dict[str, Any] = {"name": "vllm", "image": spec.image}
    if image.entrypoint == "shell":
        container["command"] = ["vllm"]
        container["args"] = ["serve", *serve]
    else:
        container["args"] = serve
    env: list[dict[str, Any]] = [
        {
            "name": "HF_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}},
        },
    ]
    env += [{"name": k, "value": v} for k, v in spec.env]
    probe = {"httpGet": {"path": "/health", "port": "http"}}
    container.update(
        {
            "ports": [{"name": "http", "containerPort": opts.port, "protocol": "TCP"}],
            "env": env,
            "resources": {"limits": {resource: gpus}, "requests": {resource: gpus}},
            "startupProbe": {**probe, "periodSeconds": 10, "failureThreshold": 180},
            "readinessProbe": {**probe, "periodSeconds": 10, "failureThreshold": 3},
            "livenessProbe": {**probe, "periodSeconds": 30, "failureThreshold": 3},
            "volumeMounts": [
                {"name": "dshm", "mountPath": "/dev/shm"},
                {"name": "hf-cache", "mountPath": "/root/.cache/huggingface"},
            ],
            "securityContext": {
                "capabilities": {"add": ["SYS_PTRACE"]},
                "seccompProfile": {"type": "Unconfined"},
            },
        }
    )
    pod_spec: dict[str, Any] = {}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    pod_spec["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": expressions}]
            }
        },
        # One server per node: each takes every GPU of its node.
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": name}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        },
    }
    pod_spec["containers"] = [container]
    pod_spec["volumes"] = [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": opts.shm_size}},
        {"name": "hf-cache", "emptyDir": {}},
    ]
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if opts.namespace:
        metadata["namespace"] = opts.namespace
    metadata["annotations"] = {
        "rocm-vllm/group": group.fingerprint.short(),
        "rocm-vllm/verdict": group.verdict,
        "rocm-vllm/image": image.ref,
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": len(group.reports),
            "selector": {"matchLabels": {"app.kubernetes.io/instance": name}},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }
    svc_meta: dict[str, Any] = {"name": name, "labels": labels}
    if opts.namespace:
        svc_meta["namespace"] = opts.namespace
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": svc_meta,
        "spec": {
            "selector": {"app.kubernetes.io/instance": name},
            "ports": [{"name": "http", "port": opts.port, "targetPort": "http", "protocol": "TCP"}],
        },
    }
    header = (
        f"# rocm-vllm fleet plan, group {group.id} ({group.hostlist}): {group.fingerprint.short()}"
    )
    return "\n".join([header, "---", *_yaml(deployment), "---", *_yaml(service)]) + "\n"


# --- the output directory -------------------------------------------------------------------------


def render_all(m: Matrix, fleet: FleetPlan, opts: Options) -> dict[str, str]:
    """Every file of the output directory, by relative path."""
    opts.check()
    files: dict[str, str] = {
        "fleet.json": json.dumps(fleet_json(fleet, m), indent=2) + "\n",
        "fleet.txt": render_text(fleet),
    }
    for g in fleet.groups:
        script = sbatch_script(m, g, opts)
        if script is not None:
            files[f"slurm/{g.id}.sbatch"] = script
        manifest = manifests(m, g, opts)
        if manifest is not None:
            files[f"kubernetes/{g.id}.yaml"] = manifest
    return files


def write_dir(target: Path, files: Mapping[str, str], *, force: bool = False) -> None:
    """All files appear at once: they are written into a temporary directory beside ``target``
    and renamed into place. An existing non-empty ``target`` is replaced only with ``force``
    (then swapped, never merged); on any failure nothing is left behind."""
    target = target.absolute()
    if target.exists() and not target.is_dir():
        raise InputError(
            f"-o {target}: exists and is not a directory", hint="give a directory path"
        )
    if target.is_dir() and any(target.iterdir()) and not force:
        raise InputError(
            f"-o {target}: the directory is not empty",
            hint="give a new directory, or --force to replace it",
        )
    if not target.parent.is_dir():
        raise InputError(
            f"-o {target}: {target.parent} does not exist", hint="create the parent directory first"
        )
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for rel, text in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if rel.endswith(".sbatch"):
                path.chmod(0o755)
        tmp.chmod(0o755)
        old: Path | None = None
        if target.exists():
            old = target.parent / f".{target.name}.old-{os.getpid()}"
            target.rename(old)
        try:
            tmp.rename(target)
        except OSError:
            if old is not None:
                old.rename(target)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        raise InputError(
            f"-o {target}: cannot write it ({exc.strerror or type(exc).__name__})",
            hint="check the path and its permissions",
        ) from None
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        raise
