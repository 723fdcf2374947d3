"""What a fleet plan hands to the schedulers: per group a Slurm batch script and Kubernetes
manifests (a Deployment and a Service), written together into one directory, atomically.

The container command comes from the single-node tools: ``artifacts.runcmd`` (docker, podman) and
``artifacts.apptainer``, with the serving env ``artifacts.images`` recommends for the group's gfx
targets, so a group's script runs exactly what ``rocm-vllm image`` prints for one of its nodes.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from resolver.artifacts.runcmd import DEFAULT_HF_CACHE
from resolver.data.model import ContainerImage, Matrix
from resolver.fleet.layout import SlurmLayout
from resolver.fleet.plan import FleetPlan, Group, fleet_json, render_text
from resolver.util import atomic, shell
from resolver.util.errors import InputError, UsageError
from resolver.util.safety import is_safe, shown

Engine = Literal["docker", "podman", "apptainer", "singularity"]
ENGINES: tuple[str, ...] = ("docker", "podman", "apptainer", "singularity")
# Checked with fullmatch: a pattern's "$" would accept a trailing newline into the script.
_FEATURE_RE = re.compile(r"[A-Za-z0-9_.&|!()\[\]*,-]{1,200}")
_SHM_RE = re.compile(r"[1-9][0-9]{0,5}(Mi|Gi)")
_TIME_RE = re.compile(r"([0-9]{1,3}-)?[0-9]{1,3}(:[0-9]{2}){0,2}")
_NAMESPACE_RE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
# What a Slurm host list of validated node names looks like (resolver.fleet.hostlist).
_HOSTLIST_RE = re.compile(r"[A-Za-z0-9._,\[\]-]{1,100000}")
# Labels the AMD node labeller sets that say which hardware a node has (not firmware versions).
SELECTOR_LABELS = (
    "amd.com/gpu.device-id",
    "amd.com/gpu.product-name",
    "amd.com/gpu.cu-count",
    "amd.com/gpu.vram",
    # Not amd.com/gpu.driver-version: it is the kernel module's version, so after a driver
    # upgrade every pod pinned on it would be unschedulable.
    "amd.com/gpu.compute-memory-partition",
    "amd.com/compute-memory-partition",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Options:
    engine: Engine = "docker"
    model: str | None = None
    port: int = 8000
    hf_cache: str = DEFAULT_HF_CACHE
    # sbatch --constraint instead of --nodelist, for the groups whose nodes all have it
    constraint: str | None = None
    partition: str | None = None  # sbatch --partition
    reservation: str | None = None  # sbatch --reservation, for the jobs of its nodes
    time: str = "04:00:00"
    shm_size: str = "16Gi"
    namespace: str | None = None
    # What Slurm said of the gathered nodes (partitions, their limits, gres): the batch scripts
    # split a group into jobs Slurm can start (fleet gather --slurm); None: one job per group.
    slurm: SlurmLayout | None = None

    def check(self) -> None:
        if self.engine not in ENGINES:
            raise UsageError(
                f"--engine {self.engine!r} is not one of {', '.join(ENGINES)}",
                hint="use --engine docker, podman, apptainer or singularity",
            )
        if self.constraint is not None and not _FEATURE_RE.fullmatch(self.constraint):
            raise UsageError(
                f"--constraint {self.constraint!r} is not a Slurm feature expression",
                hint="e.g. --constraint mi300x or 'mi300x&ib'",
            )
        from resolver.fleet.slurm import check_reservation

        check_reservation(self.reservation)  # one rule for the srun probes and the scripts
        if self.partition is not None and not is_safe("partition", self.partition):
            raise UsageError(
                f"--partition {self.partition!r} is not a partition name",
                hint="letters, digits, - _ .",
            )
        if not _TIME_RE.fullmatch(self.time):
            raise UsageError(
                f"--time {self.time!r} is not a Slurm time limit",
                hint="e.g. 04:00:00 or 1-00:00:00",
            )
        if not _SHM_RE.fullmatch(self.shm_size):
            raise UsageError(
                f"--shm-size {self.shm_size!r} is not a size", hint="e.g. 16Gi or 512Mi"
            )
        if self.namespace is not None and not _NAMESPACE_RE.fullmatch(self.namespace):
            raise UsageError(
                f"--namespace {self.namespace!r} is not a Kubernetes namespace name",
                hint="lower-case letters, digits and -",
            )
        from resolver.artifacts.runcmd import check_run_inputs

        check_run_inputs(model=self.model, port=self.port, hf_cache=self.hf_cache)


def _image(group: Group) -> ContainerImage | None:
    if group.sizing is not None and group.sizing.status == "needs-spx":
        return None  # TP across partitions is never served: the group gets no files
    if group.pinned is not None:
        return group.pinned
    d = group.image
    if d is None or d.plan is None:
        return None
    return d.plan.candidate.image


# How the node's GPUs are shared out, said in the scripts and manifests: partitions are served
# one replica each, and why (resolver.artifacts.parallel).
PLACEMENT_CODES = (
    "cpx-one-replica-per-partition",
    "one-replica-per-partition",
    "tp-across-partitions",
)


def placement_notes(placed: Any) -> list[str]:
    """The placement's words on partitions, each with its source."""
    from resolver.explain.words import word

    return [
        f"{word(w.message)} ({word(w.source)})"
        for w in placed.warnings
        if w.code in PLACEMENT_CODES
    ]


def _serving(m: Matrix, group: Group, image: ContainerImage, opts: Options) -> tuple[Any, Any]:
    """The run spec of one node of the group and its placement (GPUs, tensor parallelism,
    replicas): what `rocm-vllm image` prints for it (CPX partitions: one TP=1 replica per
    partition, never TP across them). Placed once per group: it may read the model's config."""
    from resolver.artifacts.images import serving_env
    from resolver.artifacts.parallel import place
    from resolver.artifacts.runcmd import RunSpec
    from resolver.explain.steps import serve_sizing

    assert group.image is not None
    plan = group.image.plan
    env, _warnings = serving_env(m, group.representative, plan.override if plan else None)
    placed = place(group.representative, devices=None, model=opts.model, hf_cache=opts.hf_cache)
    ref = group.ref or (
        image.ref if image.digest is None or "@" in image.ref else f"{image.ref}@{image.digest}"
    )
    sized = group.sizing
    flags = (
        serve_sizing(
            group.model, group.image.request.model, tensor_parallel=sized.tensor_parallel_size
        )
        if sized is not None
        else None
    )
    if sized is not None and sized.mode is None:
        # --model's fit decides: replicas of TP GPUs each, as many as the node holds (a
        # partitioned node keeps place()'s one TP=1 replica per partition).
        tp = sized.tensor_parallel_size
        base = placed.devices or tuple(range(sized.gpus))
        one = base[:tp] if tp < len(base) else placed.devices
        placed = replace(
            placed,
            devices=one if sized.replicas == 1 else None,
            tensor_parallel=tp,
            replicas=sized.replicas,
        )
    spec = RunSpec(
        image=ref,
        entrypoint=image.entrypoint,
        model=opts.model,
        port=opts.port,
        hf_cache=opts.hf_cache,
        env=env,
        devices=placed.devices if sized is not None and sized.replicas == 1 else None,
        tensor_parallel=placed.tensor_parallel,
        # the group's: a partition's replica may hold a shorter context than the answer's TP
        max_model_len=sized.max_model_len if sized is not None else None,
        gpu_memory_utilization=flags.gpu_memory_utilization if flags is not None else None,
        kv_cache_dtype=flags.kv_cache_dtype if flags is not None else None,
        quantization=flags.quantization if flags is not None else None,
        name=f"vllm-{group.id}",
        per_replica=placed.replicas > 1,
        vendor=image.vendor,
    )
    return spec, placed


def replica_sets(group: Group) -> tuple[str, ...]:
    """Each replica's HIP/CUDA_VISIBLE_DEVICES where --model's fit puts several replicas of TP
    GPUs on one unpartitioned node ("0,1" "2,3" ...); empty otherwise (a partitioned node's
    replica is its partition, ``$n``)."""
    sized = group.sizing
    if sized is None or sized.mode is not None or sized.replicas < 2:
        return ()
    return tuple(",".join(map(str, d)) for d in sized.devices)


def sizing_notes(group: Group) -> list[str]:
    """What the scripts and manifests say of --model's sizing, once per file."""
    sized, answer = group.sizing, group.model
    if sized is None or answer is None:
        return []
    tp = sized.tensor_parallel_size
    cap = f", --max-model-len {sized.max_model_len}" if sized.max_model_len is not None else ""
    note = (
        f"--model sized by rocm-vllm's fit: TP {tp}, {sized.replicas} replica(s) per node of "
        f"{tp} GPU(s) each{cap} (rocm-vllm check --model, docs/model-fit.md)"
    )
    return [note]


HOST_MODEL_CACHE = "/var/lib/rocm-vllm/hf-cache"
POD_SECURITY_NOTE = (
    "needs the privileged Pod Security level (seccomp Unconfined, SYS_PTRACE, a hostPath model "
    "cache): kubectl label namespace NS pod-security.kubernetes.io/enforce=privileged"
)
NVIDIA_POD_SECURITY_NOTE = (
    "needs the privileged Pod Security level (a hostPath model cache): kubectl label namespace NS "
    "pod-security.kubernetes.io/enforce=privileged"
)
NVIDIA_GPU_RESOURCE = "nvidia.com/gpu"  # the NVIDIA device plugin's resource
NVIDIA_PRODUCT_LABEL = "nvidia.com/gpu.product"  # GPU feature discovery's labels
NVIDIA_DRIVER_LABEL = "nvidia.com/cuda.driver.major"
APPTAINER_SIF = "$SIF"  # the batch script's shared SIF (pulled once, before srun)


def _engine_words(spec: Any, opts: Options) -> list[str]:
    """The engine's run words for ``spec`` (Apptainer: on the script's shared SIF)."""
    if opts.engine in ("apptainer", "singularity"):
        from resolver.artifacts.apptainer import words

        return words(spec, binary=opts.engine, image=shell.Expansion(APPTAINER_SIF))
    from resolver.artifacts.runcmd import run_words

    return run_words(spec, "podman" if opts.engine == "podman" else "docker")


def comment(text: str) -> str:
    """``text`` for a ``#`` comment line of a script or manifest: printable ASCII as it is,
    anything else escaped (a line break in a fact must not end the comment)."""
    if text.isascii() and text.isprintable():
        return text
    # Escaped like ascii() but without its quotes: the line still starts with "#".
    return ascii(text)[1:-1]


def _hostlist(group: Group, nodes: tuple[str, ...] | None = None) -> str:
    from resolver.fleet import hostlist

    hosts = group.hostlist if nodes is None else hostlist.compress(nodes)
    if not _HOSTLIST_RE.fullmatch(hosts):  # the names were checked where they entered
        raise InputError(
            f"group {group.id}: host list {comment(hosts)[:80]} is not a Slurm node list",
            hint="node names are letters, digits, '.', '_' and '-'",
        )
    return hosts


def _shell_word(word: str) -> str:
    return shell.home_word(word)


def needs(m: Matrix, image: ContainerImage) -> tuple[tuple[str, str], ...]:
    """What the image needs of a node, as the generated files state it (annotations, script
    comments): the gfx targets it carries code for, its ROCm and stream, and the amdgpu driver
    series that run that ROCm (AMD's table); an NVIDIA image, its CUDA and driver floor."""
    if image.vendor == "nvidia":
        rule = m.cuda_driver_rule(image.cuda) if image.cuda is not None else None
        out = [("cuda", str(image.cuda) if image.cuda else "unknown")]
        if rule is not None:
            out.append(("nvidia-driver-min", str(rule.min_driver)))
        return tuple(out)
    drivers = m.drivers_running(image.rocm) if image.rocm is not None else ()
    return (
        ("gfx", ";".join(image.arch) or "unknown"),
        ("rocm", f"{image.rocm} ({image.stream})" if image.rocm else "unknown"),
        ("amdgpu-driver-series", ",".join(d.series for d in drivers) or "unknown"),
    )


@dataclass(frozen=True, slots=True)
class SlurmJob:
    """One batch job of a group: nodes Slurm can give one job (within the MaxNodes of the
    partitions it names, all in them, all with one gres count)."""

    nodes: tuple[str, ...]  # the job's nodes (with a constraint: how many, not which)
    partition: str | None  # "a" or "a,b": sbatch runs it in the first that can start it
    time: str
    gres: int | None = None  # GPUs Slurm's gres declares on each node (0: none); None: not known
    notes: tuple[str, ...] = ()  # comment lines: where the job differs from what was asked
    constraint: str | None = None  # --constraint instead of --nodelist (``_constraint``)
    reservation: str | None = None  # --reservation: every node of the job is in it


def _partition_jobs(
    nodes: list[str], parts: tuple[str, ...], gres: int | None, layout: SlurmLayout, time: str
) -> list[SlurmJob]:
    """``nodes`` (one gres count, held by every partition of ``parts``) in jobs of at most the
    MaxNodes of the partitions they name, within their MaxTime (a job past either pends forever:
    PartitionNodeLimit, PartitionTimeLimit)."""
    from resolver.fleet.layout import PartitionLimits
    from resolver.fleet.slurm import clock, minutes_of

    def limit(p: str) -> PartitionLimits:
        return layout.limits.get(p, PartitionLimits())

    asked = minutes_of(time)

    def within(p: str) -> bool:
        top = limit(p).max_minutes
        return asked is None or top is None or top >= asked

    fits = [p for p in parts if within(p)]
    notes: tuple[str, ...] = ()
    if parts and not fits:  # longer than every MaxTime: the longest there is
        longest = max(limit(p).max_minutes or 0 for p in parts)
        fits = [p for p in parts if limit(p).max_minutes == longest]
        said = f"MaxTime of {','.join(parts)} is {clock(longest)}, shorter than --time {time}"
        notes = (f"{said}: the job asks for that",)
        time = clock(longest)
    caps = [limit(p).max_nodes for p in fits]
    size = len(nodes) if not caps or None in caps else max(c for c in caps if c is not None)
    jobs = []
    for i in range(0, len(nodes), max(1, size)):
        chunk = nodes[i : i + size]
        named = [p for p in fits if (limit(p).max_nodes or len(chunk)) >= len(chunk)]
        jobs.append(SlurmJob(tuple(chunk), ",".join(named) or None, time, gres, notes))
    return jobs


def _holding(names: list[str], layout: SlurmLayout) -> dict[str, tuple[str, ...]]:
    """Each node's partitions for its job: those holding it and as many of ``names`` as one
    partition can (the one holding most first), so that a group spanning partitions gets as few
    jobs as it can, each naming every partition that holds all of its nodes."""
    left = list(names)
    chosen: dict[str, tuple[str, ...]] = {}
    while left:
        counts: dict[str, int] = {}
        for n in left:
            for p in layout.member_of.get(n, ()):
                counts[p] = counts.get(p, 0) + 1
        if not counts:  # nodes Slurm named no partition for: no --partition
            chosen.update(dict.fromkeys(left, ()))
            break
        top = max(counts, key=lambda p: counts[p])  # first of the most: sinfo's order
        taken = [n for n in left if top in layout.member_of.get(n, ())]
        shared = set.intersection(*(set(layout.member_of.get(n, ())) for n in taken))
        parts = tuple(p for p in layout.member_of.get(taken[0], ()) if p in shared)
        chosen.update(dict.fromkeys(taken, parts))
        left = [n for n in left if n not in chosen]
    return chosen


def _satisfies(features: tuple[str, ...], expression: str) -> bool | None:
    """Whether a node with ``features`` satisfies a --constraint of names joined by ``&`` (and)
    and ``|`` (or, between and-terms); None for what else Slurm's syntax allows (counts,
    brackets, parentheses, negation), which is not evaluated here."""
    if not re.fullmatch(r"[A-Za-z0-9_.:+-]+([&|][A-Za-z0-9_.:+-]+)*", expression):
        return None
    have = set(features)
    return any(all(w in have for w in term.split("&")) for term in expression.split("|"))


def _constraint(names: list[str], opts: Options) -> tuple[str | None, tuple[str, ...]]:
    """The group's --constraint, and a note saying how it was chosen: the user's, where every
    node of the group has its features (sinfo %f, saved by `fleet gather`); else the node list.
    Without the nodes' features, the user's as given, said to be unchecked."""
    given = opts.constraint
    if given is None:
        return None, ()
    layout = opts.slurm
    if layout is None or not all(n in layout.features for n in names):
        said = (
            "not checked against the nodes' features (Slurm's are known only through --slurm "
            "or a `fleet gather` directory)"
        )
        return given, (f"--constraint {given}: {said}",)
    fits = {n: _satisfies(layout.features[n], given) for n in names}
    if None in fits.values():
        said = "an expression not evaluated here; the group's node list instead"
        return None, (f"--constraint {given}: {said}",)
    lacking = [n for n, ok in fits.items() if not ok]
    if lacking:
        from resolver.fleet.hostlist import compress

        verb = "lacks" if len(lacking) == 1 else "lack"
        said = f"{compress(lacking)} {verb} it (sinfo %f); the group's node list instead"
        return None, (f"--constraint {given}: {said}",)
    return given, (f"--constraint {given}: every node of this group has it (sinfo %f)",)


def slurm_jobs(group: Group, opts: Options) -> list[SlurmJob]:
    """The batch jobs that start the group's servers. Without what Slurm said of the nodes
    (``opts.slurm``), one job. With it: the nodes by the GPUs their gres declares, their
    reservation, then by the partitions that hold them (``--partition``, else ``_holding``),
    then in jobs within those partitions' MaxNodes. ``--constraint`` replaces the node list
    where every node of the group has it (``_constraint``)."""
    layout = opts.slurm
    names = group.names
    constraint, said = _constraint(names, opts)
    if layout is None:
        job = SlurmJob(tuple(names), opts.partition, opts.time, notes=said)
        return [replace(job, constraint=constraint, reservation=opts.reservation)]
    holding = _holding(names, layout)
    listed = opts.reservation in layout.reserved.values()
    unlisted = None if listed else opts.reservation
    later = layout.pending.get(opts.reservation or "")
    by: dict[tuple[int | None, tuple[str, ...], str | None], list[str]] = {}
    for n in names:
        parts = (opts.partition,) if opts.partition else holding[n]
        # A job in a reservation may hold only its nodes: the reserved ones apart.
        # The reservation holding the node, as scontrol said; --reservation's where scontrol
        # did not list it as active (the probe steps named it on every node then too).
        resv = layout.reserved.get(n, unlisted)
        if later is not None and later.nodes and n not in later.nodes:
            resv = layout.reserved.get(n)  # not in it: its own (active) one, or none
        by.setdefault((layout.gpus.get(n), parts, resv), []).append(n)
    return [
        replace(
            job,
            notes=said + _waits(resv, layout) + job.notes,
            constraint=constraint,
            reservation=resv,
        )
        for (gres, parts, resv), members in by.items()
        for job in _partition_jobs(members, parts, gres, layout, opts.time)
    ]


def _waits(reservation: str | None, layout: SlurmLayout) -> tuple[str, ...]:
    """A reservation that had not started when Slurm was asked: the job pends until it does."""
    if reservation is None or reservation not in layout.pending:
        return ()
    said = (
        f"reservation {reservation} had not started when Slurm was asked: it starts at "
        f"{layout.pending[reservation].start} (scontrol show reservation), and Slurm holds "
        "this job until then (squeue reason Reservation)"
    )
    return (said,)


def sbatch_scripts(m: Matrix, group: Group, opts: Options) -> dict[str, str]:
    """The group's batch scripts by file stem: ``gN``, or ``gN-1``, ``gN-2``, ... when Slurm
    cannot start the group as one job (``slurm_jobs``); none without an image path."""
    image = _image(group)
    if image is None:
        return {}
    served = _serving(m, group, image, opts)  # once per group: it may read the model's config
    jobs = slurm_jobs(group, opts)
    scripts: dict[str, str] = {}
    for i, job in enumerate(jobs, 1):
        stem = group.id if len(jobs) == 1 else f"{group.id}-{i}"
        script = sbatch_script(m, group, opts, job=job, name=stem, served=served)
        if script is not None:
            scripts[stem] = script
    return scripts


def _gpu_lines(job: SlurmJob, probed: int) -> list[str]:
    """``--gpus-per-node``: every GPU Slurm's gres declares on the nodes (asking more is refused),
    the probe's count where Slurm's is not known."""
    if job.gres is None:
        return [f"#SBATCH --gpus-per-node={probed}"]
    if job.gres == 0:
        return ["# Slurm declares no GPU gres on these nodes: --exclusive gives the job them whole"]
    lines = [f"#SBATCH --gpus-per-node={job.gres}"]
    if job.gres != probed:
        lines.append(
            f"# Slurm's gres declares {job.gres} GPUs on these nodes, the probe saw {probed}: "
            "the job asks for Slurm's count"
        )
    return lines


# After `serve`: each node's server is a job step of its own, in the background; the job waits
# for them all and names the nodes whose server stopped with an error.
_RUN_ON = [
    "# Each node's server is a job step of its own: one that fails, or loses its node, stops only",
    "# itself (--no-kill keeps the job). The job's output names the nodes whose server stopped;",
    (
        "# see the steps with: squeue -s -j JOBID, or after the job: sacct -j JOBID -o "
        "JobID,NodeList,State,ExitCode"
    ),
    "run_on() {",
    "  local rc=0",
    (
        '  srun --nodes=1 --ntasks=1 --kill-on-bad-exit=0 ${1:+"--nodelist=$1"} '
        'bash -c "$(declare -f serve); serve" || rc=$?'
    ),
    "  if ((rc != 0)); then",
    (
        '    echo "rocm-vllm: the server on ${1:-this node} stopped (exit $rc); the other nodes '
        'keep serving" >&2'
    ),
    "  fi",
    '  return "$rc"',
    "}",
    "declare -A on=()",
]
_WAIT_ALL = [
    '  run_on "$node" &',
    '  on[$!]="$node"',
    "done",
    "failed=()",
    'for pid in "${!on[@]}"; do',
    '  wait "$pid" || failed+=("${on[$pid]:-this node}")',
    "done",
    "if ((${#failed[@]})); then",
    '  echo "rocm-vllm: servers that stopped with an error: ${failed[*]}" >&2',
    "  exit 1",
    "fi",
]


def sbatch_script(
    m: Matrix,
    group: Group,
    opts: Options,
    *,
    job: SlurmJob | None = None,
    name: str | None = None,
    served: tuple[Any, Any] | None = None,
) -> str | None:
    """One vLLM server per node of ``job`` (default: the group's one job): ``#SBATCH`` picks the
    nodes (``--nodelist`` with the job's host list, or ``--constraint``), one task per node,
    every GPU of the node; each node's server is its own job step."""
    image = _image(group)
    if image is None:
        return None
    assert group.decision is not None
    job = job or slurm_jobs(group, opts)[0]
    name = name or group.id
    spec, placed = served or _serving(m, group, image, opts)
    words = _engine_words(spec, opts)
    node = group.representative
    gpus = node.logical_gpu_count or len(node.gpus) or len(node.nvidia_gpus)
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name=vllm-{name}",
    ]
    if job.constraint:
        lines.append(f"#SBATCH --constraint={job.constraint}")
    else:
        lines.append(f"#SBATCH --nodelist={_hostlist(group, job.nodes)}")
    lines.append(f"#SBATCH --nodes={len(job.nodes)}")
    if job.partition:
        lines.append(f"#SBATCH --partition={job.partition}")
    if job.reservation:
        lines.append(f"#SBATCH --reservation={job.reservation}")
    unpinned = "not pinned by digest: run `rocm-vllm image --digest` on a node to pin it"
    lines += [
        "#SBATCH --ntasks-per-node=1",
        *_gpu_lines(job, gpus),
        "#SBATCH --exclusive",
        "#SBATCH --no-kill",
        f"#SBATCH --time={job.time}",
        f"#SBATCH --output=vllm-{name}-%j.out",
        *(comment(f"# {note}") for note in job.notes),
        f"# rocm-vllm fleet plan, group {group.id}: {comment(group.fingerprint.short())}",
        comment(
            f"# verdict {group.decision.verdict}; image {image.ref} (vLLM {image.vllm}, "
            + (f"CUDA {image.cuda})" if image.vendor == "nvidia" else f"ROCm {image.rocm})")
        ),
        comment(f"# {'digest ' + image.digest if image.digest else unpinned}"),
        comment("# needs: " + "; ".join(f"{k} {v}" for k, v in needs(m, image))),
        *(comment(f"# {note}") for note in model_notes(m, image, opts)),
        *(comment(f"# {note}") for note in local_model_notes(spec.model_mount)),
        *(comment(f"# {note}") for note in placement_notes(placed)),
        *(comment(f"# {note}") for note in sizing_notes(group)),
        "set -euo pipefail",
        f'CONTAINER="${{CONTAINER:-{words[0]}}}"',
    ]
    if opts.engine in ("apptainer", "singularity"):
        from resolver.artifacts.apptainer import oci_ref, sif_name

        # Pull the image once, to the submit directory (shared storage on a cluster), and run
        # that SIF on every node: Apptainer's advice, rather than every node pulling docker://.
        # The file is named by the image's reference and digest, never by the group number: an
        # existing one holds this very image. A pull that fails because another job of the same
        # image has just written the file is no failure (`|| [ -f "$SIF" ]`).
        lines += [
            f'SIF="${{SIF:-$PWD/{sif_name(spec.image)}}}"',
            '[ -f "$SIF" ] || "$CONTAINER" pull "$SIF" '
            + shell.quote(f"docker://{oci_ref(spec.image)}")
            + ' || [ -f "$SIF" ]',
            "export SIF",
        ]
    sets = replica_sets(group)
    if sets:
        # Each replica sees its own TP GPUs: the visibility variable names the loop's $devices
        # (a device list), not $n (one partition's index).
        from resolver.artifacts.runcmd import REPLICA_DEVICE, visible_devices_var

        var = visible_devices_var(spec)
        one = f"{var}={REPLICA_DEVICE}"
        words = [
            shell.Expansion(f"{var}=$devices") if isinstance(w, shell.Expansion) and w == one else w
            for w in words
        ]
    body = '"$CONTAINER" ' + " ".join(_shell_word(w) for w in words[1:])
    serve = [
        "serve() {",
        # A bind source must exist (Apptainer refuses a missing one; Docker would create it).
        f"  mkdir -p {_shell_word(opts.hf_cache)}",
    ]
    if sets:
        # --model: replicas of TP GPUs each, each on its own devices and port.
        serve += [
            "  local n port devices",
            f"  local -a sets=({' '.join(sets)})",
            f"  for ((n = 0; n < {len(sets)}; n++)); do",
            f"    port=$(({opts.port} + n))",
            "    devices=${sets[n]}",
            f"    {body} &",
            "  done",
            "  wait",
        ]
    elif placed.replicas > 1:
        # CPX: one TP=1 server per partition, each on its own device and port (as `rocm-vllm
        # image` prints for one node); tensor parallelism across partitions gives garbage.
        serve += [
            "  local n port",
            f"  for ((n = 0; n < {placed.replicas}; n++)); do",
            f"    port=$(({opts.port} + n))",
            f"    {body} &",
            "  done",
            "  wait",
        ]
    else:
        serve.append(f"  {body}")
    lines += [
        *serve,
        "}",
        "export CONTAINER",
        *_RUN_ON,
        f"for node in {' '.join(shell.quote(n) for n in job.nodes) or shell.quote('')}; do",
        *_WAIT_ALL,
    ]
    return "\n".join(lines) + "\n"


# --- Kubernetes -----------------------------------------------------------------------------------


def gfd_product(name: str) -> str:
    """The value NVIDIA's GPU feature discovery gives ``nvidia.com/gpu.product``: the product
    name with spaces as dashes ("NVIDIA H200" -> "NVIDIA-H200"; NVIDIA/k8s-device-plugin
    docs/gpu-feature-discovery/README.md, Generated Labels)."""
    value = re.sub(r"[^A-Za-z0-9_.-]", "", name.strip().replace(" ", "-"))[:63]
    # A label value starts and ends with an alphanumeric (what the API server accepts).
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value)


def _nvidia_selector(
    m: Matrix, group: Group, image: ContainerImage
) -> tuple[dict[str, str], list[dict[str, Any]], str]:
    """NVIDIA nodes: GFD's product label, the driver's major at or above NVIDIA's floor for the
    image's CUDA (``nvidia.com/cuda.driver.major``: a newer driver keeps the pod schedulable),
    the nodes' names, and the device plugin's ``nvidia.com/gpu``."""
    common: dict[str, str] = {}
    product = (
        gfd_product(group.fingerprint.products[0]) if len(group.fingerprint.products) == 1 else ""
    )
    if product:
        common[NVIDIA_PRODUCT_LABEL] = product
    names = sorted({r.name for r in group.reports})
    expressions: list[dict[str, Any]] = [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": names}
    ]
    rule = m.cuda_driver_rule(image.cuda) if image.cuda is not None else None
    if rule is not None:
        expressions.append(
            {"key": NVIDIA_DRIVER_LABEL, "operator": "Gt", "values": [str(rule.min_driver - 1)]}
        )
    return common, expressions, NVIDIA_GPU_RESOURCE


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


def model_notes(m: Matrix, image: ContainerImage, opts: Options) -> list[str]:
    """What a script or manifest says when no --model was given and the image's vLLM requires
    the positional model (serve_model_tag "required", to v0.8.2): it would stop at argument
    parsing."""
    if opts.model is not None or not any(
        r.version == image.vllm and r.serve_model_tag == "required" for r in m.vllm
    ):
        return []
    note = (
        f"vLLM {image.vllm}'s `vllm serve` requires the model and none was given: plan again "
        "with --model ORG/NAME (as written, the server stops at argument parsing)"
    )
    return [note]


def local_model_notes(model_dir: str | None) -> list[str]:
    """What a script or manifest says of a local --model (``RunSpec.model_mount``): it is served
    from a directory of the machine that planned, which the nodes must hold at that path."""
    if model_dir is None:
        return []
    note = (
        f"--model {model_dir} is a directory of the machine that planned: every node must hold "
        "it at this path (shared storage, or a copy); it is mounted read-only there"
    )
    return [note]


def manifests(m: Matrix, group: Group, opts: Options) -> str | None:
    from resolver.artifacts.runcmd import model_args, names_serve

    image = _image(group)
    if image is None:
        return None
    spec, placed = _serving(m, group, image, opts)
    # CPX: one pod per partition, each given one partition by the device plugin (TP=1), as
    # `rocm-vllm image` serves one replica per partition; otherwise one pod takes the node.
    per_replica = placed.replicas > 1
    gpus = 1 if per_replica else placed.gpus or 1
    sized = group.sizing
    if sized is not None and sized.mode is None:
        gpus = sized.tensor_parallel_size  # --model: each pod holds one replica's TP GPUs
    name = f"vllm-{group.id}"
    labels = {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/managed-by": "rocm-vllm",
    }
    nvidia = image.vendor == "nvidia"
    node_selector, expressions, resource = (
        _nvidia_selector(m, group, image) if nvidia else _selector(group)
    )
    # A partition's replica is TP=1 (never TP across partitions); --model's replicas are TP each.
    serve = [*model_args(spec, placed.tensor_parallel or 1), "--port", str(opts.port)]
    container: dict[str, Any] = {"name": "vllm", "image": spec.image}
    if names_serve(spec):
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
    # The device plugin decides which GPUs a pod sees; a visibility variable would fight it.
    env += [{"name": k, "value": v} for k, v in spec.env if not k.endswith("_VISIBLE_DEVICES")]
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
        }
    )
    if not nvidia:  # ROCm's container flags; the NVIDIA device plugin needs neither
        container["securityContext"] = {
            "capabilities": {"add": ["SYS_PTRACE"]},
            "seccompProfile": {"type": "Unconfined"},
        }
    pod_spec: dict[str, Any] = {}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    pod_spec["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": expressions}]
            }
        },
    }
    if not per_replica:
        # One server per node: each takes every GPU of its node.
        pod_spec["affinity"]["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": name}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    pod_spec["containers"] = [container]
    pod_spec["volumes"] = [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": opts.shm_size}},
        # On the node's disk, so a restarted pod does not download the model again.
        {"name": "hf-cache", "hostPath": {"path": HOST_MODEL_CACHE, "type": "DirectoryOrCreate"}},
    ]
    if (model_dir := spec.model_mount) is not None:
        # A local model: the node's directory at the same path, read-only (a pod whose node
        # lacks it does not start: "type: Directory" makes the kubelet say so).
        container["volumeMounts"].append(
            {"name": "model", "mountPath": model_dir, "readOnly": True}
        )
        pod_spec["volumes"].append(
            {"name": "model", "hostPath": {"path": model_dir, "type": "Directory"}}
        )
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if opts.namespace:
        metadata["namespace"] = opts.namespace
    metadata["annotations"] = {
        "rocm-vllm/group": group.fingerprint.short(),
        "rocm-vllm/verdict": group.verdict,
        "rocm-vllm/image": image.ref,
        "rocm-vllm/pod-security": NVIDIA_POD_SECURITY_NOTE if nvidia else POD_SECURITY_NOTE,
        **({"rocm-vllm/placement": " ".join(said)} if (said := placement_notes(placed)) else {}),
        **({"rocm-vllm/model-sizing": " ".join(told)} if (told := sizing_notes(group)) else {}),
        **(
            {"rocm-vllm/model-path": " ".join(where)}
            if (where := local_model_notes(spec.model_mount))
            else {}
        ),
        # What the image needs of a node (its gfx code, ROCm, driver series): admission policies
        # and people read it without running anything.
        **{f"rocm-vllm/needs-{k}": v for k, v in needs(m, image)},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": len(group.reports) * placed.replicas,
            # Each pod holds its node's GPUs, so a surge pod has nowhere to start: replace one
            # pod at a time (the default 25%/25% never progresses for three replicas or fewer).
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
            },
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
    header = comment(
        f"# rocm-vllm fleet plan, group {group.id} ({_hostlist(group)}): "
        f"{group.fingerprint.short()}"
    )
    note = NVIDIA_POD_SECURITY_NOTE if nvidia else POD_SECURITY_NOTE
    notes = "".join(comment(f"# {n}") + "\n" for n in model_notes(m, image, opts))
    return header + "\n" + comment(f"# {note}") + "\n" + notes + _dump_yaml([deployment, service])


def _dump_yaml(documents: list[dict[str, Any]]) -> str:
    """The manifests through a YAML library: every scalar is quoted or escaped as YAML needs
    (a ``\r``, U+0085 or U+2028 in a value cannot start a new line or document)."""
    import yaml

    # libyaml's emitter where PyYAML has it (its wheels do): the pure-Python one costs ~20 ms a
    # manifest, most of a large fleet's plan.
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(
        documents,
        Dumper=dumper,
        explicit_start=True,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=False,
        width=4096,
    )


# --- the output directory -------------------------------------------------------------------------


def render_all(m: Matrix, fleet: FleetPlan, opts: Options) -> dict[str, str]:
    """Every file of the output directory, by relative path."""
    opts.check()
    scripted = [g for g in fleet.groups if _image(g) is not None]
    if opts.constraint and opts.slurm is None and len(scripted) > 1:
        # Unchecked, one feature expression would send every group's jobs to the same nodes.
        raise UsageError(
            f"--constraint {opts.constraint}: {len(scripted)} groups, and the nodes' features "
            "are not known here, so one constraint cannot pick each group's nodes",
            hint="plan with --slurm or from a `fleet gather` directory (their features are "
            "read, and each group gets the constraint only where all its nodes have it), or "
            "leave out --constraint",
        )
    files: dict[str, str] = {
        "fleet.json": json.dumps(fleet_json(fleet, m), indent=2) + "\n",
        "fleet.txt": render_text(fleet),
    }
    for g in fleet.groups:
        for stem, script in sbatch_scripts(m, g, opts).items():
            files[f"slurm/{stem}.sbatch"] = script
        manifest = manifests(m, g, opts)
        if manifest is not None:
            files[f"kubernetes/{g.id}.yaml"] = manifest
    return files


_LEFTOVER_RE = re.compile(
    r"\.(?P<name>.{1,64})\.(?:tmp|old)-(?P<pid>[0-9]{1,10})-[a-z0-9_]{1,16}\Z"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def sweep_leftovers(parent: Path, name: str, *, older_than: float = atomic.STALE_AFTER) -> None:
    """Remove what a killed writer of ``parent/name`` left: its temporary directory and a
    replaced one it had not yet removed, once their writer is gone or they are stale."""
    cutoff = time.time() - older_than
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        match = _LEFTOVER_RE.fullmatch(entry.name)
        if match is None or match.group("name") != name[:64]:
            continue
        with contextlib.suppress(OSError):
            if not entry.is_dir(follow_symlinks=False):
                continue
            pid = int(match.group("pid"))
            if (pid != os.getpid() and not _alive(pid)) or entry.stat(
                follow_symlinks=False
            ).st_mtime < cutoff:
                shutil.rmtree(entry.path, ignore_errors=True)


def _relative(rel: str) -> Path:
    """A file of the output directory: a plain relative path that stays inside it."""
    path = Path(rel)
    if path.is_absolute() or not path.parts or any(p in ("", ".", "..") for p in path.parts):
        raise OSError(errno.EINVAL, f"{rel!a} would be written outside the output directory")
    return path


def check_output_dir(target: Path, *, force: bool = False) -> None:
    """Refuse an ``-o`` that ``write_dir`` would refuse, before the slow part (the gather, the
    planning) rather than after it: a path that is not a directory, a parent that does not
    exist, a non-empty directory without ``force``. The rename in ``write_dir`` still decides
    between writers racing for one directory."""
    target = _writable_target(target)
    if not force and target.is_dir() and any(target.iterdir()):
        raise InputError(
            f"-o {target}: the directory is not empty",
            hint="give a new directory, or --force to replace it",
        )


def _writable_target(target: Path) -> Path:
    target = target.absolute()
    try:
        target.lstat()
    except FileNotFoundError:
        pass
    except OSError as exc:  # a name of 256+ bytes, a parent that is a file, a loop: the input
        raise InputError(
            f"-o {shown(str(target)[:300])}: cannot be used ({exc.strerror or type(exc).__name__})",
            hint="give a directory path under an existing directory (each name at most 255 bytes)",
        ) from None
    if target.exists() and not target.is_dir():
        raise InputError(
            f"-o {target}: exists and is not a directory", hint="give a directory path"
        )
    if not target.parent.is_dir():
        raise InputError(
            f"-o {target}: {target.parent} does not exist", hint="create the parent directory first"
        )
    return target


def write_dir(target: Path, files: Mapping[str, str], *, force: bool = False) -> None:
    """All files appear at once: they are written into a temporary directory beside ``target``
    and renamed into place. Without ``force`` the rename itself decides: it succeeds only onto a
    missing or empty directory, so of several writers exactly one wins and the others fail
    saying the directory is not empty. With ``force`` an existing directory is swapped out, never
    merged. On any failure nothing is left behind; what a killed writer left is swept."""
    target = _writable_target(target)
    sweep_leftovers(target.parent, target.name)
    stem = f".{target.name[:64]}."
    tmp: Path | None = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f"{stem}tmp-{os.getpid()}-", dir=target.parent))
        for rel, text in files.items():
            path = tmp / _relative(rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            # A lone surrogate that slipped through is written escaped, not a crash.
            path.write_text(text, encoding="utf-8", errors="backslashreplace")
            if rel.endswith(".sbatch"):
                path.chmod(0o755)
        tmp.chmod(0o755)
        if force and target.is_dir() and any(target.iterdir()):
            _swap(tmp, target, stem)
        else:
            try:
                tmp.rename(target)
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    raise InputError(
                        f"-o {target}: the directory is not empty",
                        hint="give a new directory, or --force to replace it",
                    ) from None
                raise
        tmp = None
    except OSError as exc:
        raise InputError(
            f"-o {target}: cannot write it ({exc.strerror or type(exc).__name__})",
            hint="check the path, its length and its permissions",
        ) from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _swap(tmp: Path, target: Path, stem: str) -> None:
    old = Path(tempfile.mkdtemp(prefix=f"{stem}old-{os.getpid()}-", dir=target.parent))
    try:
        target.rename(old / "replaced")
        try:
            tmp.rename(target)
        except OSError:
            (old / "replaced").rename(target)
            raise
    finally:
        shutil.rmtree(old, ignore_errors=True)
