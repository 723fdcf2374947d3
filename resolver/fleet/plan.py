"""Group a fleet's nodes by fingerprint, decide each group once, and say how the others can join
the plan that covers the most nodes.

The fingerprint is what the decision depends on: the gfx targets, the logical and physical GPU
counts and partition modes, the driver series (the amdgpu module version where the release is
unknown), the OS, the host ROCm and the host Python. Nodes with the same fingerprint get the
same decision, so 10,000 nodes of 50 kinds cost 50 solver runs. Host-local problems a probe
found (a missing group membership, NUMA balancing) stay listed with their node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from resolver.data.model import ContainerImage, Matrix
from resolver.data.node import Node
from resolver.explain import plan_commands
from resolver.explain.hints import route_words
from resolver.explain.report import route_json
from resolver.fleet import hostlist
from resolver.fleet.reports import NodeReport, mark_duplicates
from resolver.solve import (
    OK_VERDICTS,
    Candidate,
    Decision,
    Evaluation,
    Request,
    evaluate_pinned,
    solve,
)
from resolver.solve.finding import Phrase
from resolver.solve.routes import Route
from resolver.util.errors import InputError
from resolver.util.versions import driver_series

if TYPE_CHECKING:  # a fleet without --model loads no model code
    from resolver.solve.model import ModelAnswer

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class Fingerprint:
    gfx: tuple[str, ...]
    logical_gpus: int
    physical_gpus: int
    partitions: tuple[str, ...]  # "CPX/NPS4" per distinct mode, sorted
    driver: str | None  # "30.30" (release series) or "module 6.8" (kernel module series)
    os: str | None
    rocm: str | None
    python: str | None
    override: str | None  # HSA_OVERRIDE_GFX_VERSION
    unplaced: str | None = None  # why labels could not place the node (an unknown group)
    # The Kubernetes resource the node offers its GPUs as (amd.com/gpu, amd.com/cpx_nps4): pods
    # request one or the other, so nodes offering different ones are different groups.
    resource: str | None = None
    vendor: str = "amd"  # "nvidia": planned from vLLM's CUDA images (resolver.solve.cuda)
    products: tuple[str, ...] = ()  # NVIDIA: the GPU products nvidia-smi names
    compute: tuple[str, ...] = ()  # NVIDIA: their compute capabilities
    # --model only: the memory of one GPU (or partition) the fit is sized for; nodes of one gfx
    # with different memory (MI300X 192 GiB, MI325X 256 GiB) fit a model differently.
    gpu_memory: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "gfx_targets": list(self.gfx),
            "logical_gpu_count": self.logical_gpus,
            "physical_gpu_count": self.physical_gpus,
            "partitions": list(self.partitions),
            "driver_series": self.driver,
            "os": self.os,
            "rocm": self.rocm,
            "python": self.python,
            "hsa_override_gfx_version": self.override,
            "unplaced": self.unplaced,
            "kubernetes_resource": self.resource,
            "vendor": self.vendor,
            "nvidia_products": list(self.products),
            "compute_capabilities": list(self.compute),
            "gpu_memory_bytes": self.gpu_memory,
        }

    def short(self) -> str:
        if self.vendor == "nvidia":
            cap = f" (compute capability {', '.join(self.compute)})" if self.compute else ""
            gpus = f"{'+'.join(self.products) or 'NVIDIA GPU'} x{self.logical_gpus}{cap}"
            driver = f"NVIDIA driver {self.driver}" if self.driver else "NVIDIA driver ?"
            rest = [driver, self.os or "os ?"] + ([f"py {self.python}"] if self.python else [])
            return ", ".join([gpus, *rest])
        gpus = f"{'+'.join(self.gfx) or '?'} x{self.logical_gpus}"
        if self.partitions:
            gpus += f" {','.join(self.partitions)}"
        rest = [f"driver {self.driver}" if self.driver else "driver ?", self.os or "os ?"]
        if self.rocm:
            rest.append(f"ROCm {self.rocm}")
        if self.python:
            rest.append(f"py {self.python}")
        return ", ".join([gpus, *rest])


def _series(text: str | None) -> str | None:
    if not text:
        return None
    try:
        return driver_series(text)
    except InputError:  # a value the series parser does not know stays as written
        return text


def fingerprint(node: Node, unplaced: str | None = None) -> Fingerprint:
    if not node.gfx_targets and node.nvidia_gpus:
        return _nvidia_fingerprint(node, unplaced)
    modes = sorted(
        {
            "/".join(p for p in (g.partition.compute, g.partition.memory) if p)
            for g in node.gpus
            if g.partition
        }
        - {""}
    )
    module = node.host.get("amdgpu_module_version") if isinstance(node.host, dict) else None
    driver = _series(node.driver_version) or (
        f"module {_series(module)}" if isinstance(module, str) and module else None
    )
    rocm = node.rocm_version
    return Fingerprint(
        gfx=tuple(node.gfx_targets),
        logical_gpus=node.logical_gpu_count,
        physical_gpus=node.physical_gpu_count,
        partitions=tuple(modes),
        driver=driver,
        os=node.os,
        rocm=rocm,
        python=node.python,
        override=node.hsa_override_gfx_version,
        unplaced=unplaced,
        resource=_resource(node),
    )


def _nvidia_fingerprint(node: Node, unplaced: str | None) -> Fingerprint:
    """An NVIDIA node: what its CUDA plan depends on (products, compute capability, the driver
    branch against NVIDIA's floor per CUDA major, OS and Python)."""
    from resolver.solve.cuda import driver_branch

    gpus = node.nvidia_gpus
    branch = driver_branch(node.nvidia_driver)
    return Fingerprint(
        gfx=(),
        logical_gpus=len(gpus),
        physical_gpus=len(gpus),
        partitions=tuple(sorted({"MIG" for g in gpus if g.get("mig")})),
        driver=str(branch) if branch is not None else None,
        os=node.os,
        rocm=None,
        python=node.python,
        override=None,
        unplaced=unplaced,
        resource=_resource(node),
        vendor="nvidia",
        products=tuple(sorted({str(g.get("name") or "NVIDIA GPU") for g in gpus})),
        compute=tuple(
            sorted({str(g["compute_capability"]) for g in gpus if g.get("compute_capability")})
        ),
    )


def _resource(node: Node) -> str | None:
    value = node.host.get("kubernetes_resource") if isinstance(node.host, dict) else None
    return value if isinstance(value, str) else None


def _words(phrases: Iterable[Phrase]) -> tuple[str, ...]:
    """Each distinct finding as it is said (two that read alike are said once)."""
    from resolver.explain.words import word

    return tuple(dict.fromkeys(word(p) for p in phrases))


@dataclass(frozen=True, slots=True)
class Join:
    """What a group needs to run the fleet's main plan: nothing (``as_is``), host changes
    (``fixes``), or it cannot (``blocked`` with the reasons)."""

    status: str  # "on-plan" | "as-is" | "host-fix" | "blocked" | "unknown"
    fixes: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    # host-fix: the changes as ordered steps (the OS release first), as `rocm-vllm upgrade`
    # orders them, verified: taken, the main plan passes every check on the group's node.
    steps: tuple[tuple[str, str | None, str], ...] = ()  # (change, from, to)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "fixes": list(self.fixes),
            "reasons": list(self.reasons),
            "steps": [{"change": c, "from": a, "to": b} for c, a, b in self.steps],
        }


SizingStatus = Literal["sized", "needs-spx"]


@dataclass(frozen=True, slots=True)
class ModelSizing:
    """How each node of a group serves --model, from the answer's fit: replicas of
    ``tensor_parallel_size`` GPUs each, as many as the node holds. A partitioned node serves one
    TP=1 replica per partition (tensor parallelism across partitions gave garbage output,
    ``resolver.artifacts.parallel``); a model that needs TP > 1 there needs the GPUs in SPX."""

    status: SizingStatus
    tensor_parallel_size: int
    replicas: int  # servers per node (0: needs-spx)
    gpus: int  # GPUs (or partitions) each node offers
    max_model_len: int | None  # where the answer caps the context (or --max-model-len pinned)
    mode: str | None = None  # the partition mode (CPX, DPX, ...) of a partitioned node

    @property
    def devices(self) -> tuple[tuple[int, ...], ...]:
        """The GPU indices of each replica, in the node's order (one partition each where
        partitioned)."""
        tp = self.tensor_parallel_size
        return tuple(tuple(range(r * tp, r * tp + tp)) for r in range(self.replicas))

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "tensor_parallel_size": self.tensor_parallel_size,
            "replicas_per_node": self.replicas,
            "gpus_per_replica": self.tensor_parallel_size,
            "gpus_per_node": self.gpus,
            "max_model_len": self.max_model_len,
            "partition_mode": self.mode,
        }


def model_sizing(node: Node, decision: Decision) -> ModelSizing | None:
    """The group's replicas for ``decision``'s --model answer (None: no model, or its memory
    was not known so nothing was sized)."""
    from resolver.artifacts.parallel import PER_GPU
    from resolver.data.partitions import _compute_mode
    from resolver.explain.steps import serve_sizing
    from resolver.solve.model import node_gpus

    answer = decision.model
    if answer is None or answer.fit is None or decision.plan is None:
        return None
    tp = answer.fit.tensor_parallel_size
    gpus = node_gpus(node)
    sized = serve_sizing(answer, decision.request.model, tensor_parallel=tp)  # one replica's
    context = sized.max_model_len if sized is not None else None
    mode = next((m for g in node.gpus if (m := _compute_mode(g)) in ("CPX", *PER_GPU)), None)
    if mode is not None:
        if tp == 1:
            return ModelSizing("sized", 1, gpus, gpus, context, mode)
        # One partition still serves it with a shorter context, unless the user pinned more.
        pinned = decision.request.model
        one = max(
            (f.largest_max_model_len for f in answer.table if f.tensor_parallel_size == 1),
            default=0,
        )
        if (
            one > 0
            and pinned is not None
            and pinned.tensor_parallel_size is None
            and (pinned.max_model_len is None or pinned.max_model_len <= one)
        ):
            return ModelSizing("sized", 1, gpus, gpus, pinned.max_model_len or one, mode)
        return ModelSizing("needs-spx", tp, 0, gpus, context, mode)
    return ModelSizing("sized", tp, max(1, gpus // tp), gpus, context)


@dataclass(frozen=True, slots=True)
class Group:
    """Nodes with one fingerprint, decided once. Immutable: each stage (decide, join, pin)
    returns a new group (``dataclasses.replace``)."""

    id: str
    fingerprint: Fingerprint
    reports: tuple[NodeReport, ...]
    decision: Decision | None = None
    error: str | None = None  # the solver refused the facts (e.g. no GPU): the group is unknown
    join: Join | None = None
    # blocked_host_fix: the what-if search's best route to the group's own plan (check's route)
    route: Route | None = None
    image: Decision | None = None  # the image decision the artifacts run (None: no image path)
    pinned: ContainerImage | None = (
        None  # that image with its registry digest (fleet plan --digest)
    )
    ref: str | None = None  # what docker/podman/kubelet pull: mirror host, @digest when pinned
    sizing: ModelSizing | None = None  # --model: how each node serves it (None: not sized)

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.reports]

    @property
    def hostlist(self) -> str:
        return hostlist.compress(self.names)

    @property
    def representative(self) -> Node:
        node = self.reports[0].node
        assert node is not None
        return node

    @property
    def verdict(self) -> str:
        if self.decision is None:
            return "unknown"
        return self.decision.verdict

    @property
    def plan(self) -> Evaluation | None:
        return self.decision.plan if self.decision is not None else None

    @property
    def model(self) -> ModelAnswer | None:
        """The answer about --model for what the group runs: its image decision's (the release
        the scripts start), else its own decision's."""
        for d in (self.image, self.decision):
            if d is not None and d.model is not None:
                return d.model
        return None

    @property
    def pulls(self) -> ContainerImage | None:
        """The image its image decision plans (what the group's scripts and manifests run)."""
        plan = self.image.plan if self.image is not None else None
        return plan.candidate.image if plan is not None else None


@dataclass(frozen=True, slots=True)
class FleetPlan:
    groups: tuple[Group, ...]
    failed: tuple[NodeReport, ...]
    request: Request
    main_plan: str | None = None  # the candidate label the most nodes can run
    main_nodes: int = 0
    # Per vendor (a mixed fleet: the AMD groups join the AMD plan, the NVIDIA ones the CUDA one):
    # vendor -> (label, nodes that run it as they are).
    main_plans: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    notes: tuple[tuple[str, str], ...] = ()  # (node, note)
    matrix: Matrix | None = None  # the data it was planned on (the routes are worded from it)

    @property
    def node_count(self) -> int:
        return sum(len(g.reports) for g in self.groups) + len(self.failed)

    @property
    def exit_code(self) -> int:
        """0: every reported node has a supported plan; 1: some cannot run vLLM (or --model as
        partitioned) or failed to report; 6: nothing is wrong except that the data cannot place
        some nodes."""
        if self.failed or any(
            g.decision is not None
            and g.decision.verdict not in OK_VERDICTS
            and g.verdict != "unknown"
            for g in self.groups
        ):
            return 1
        if any(g.sizing is not None and g.sizing.status == "needs-spx" for g in self.groups):
            return 1  # a partitioned node cannot serve the model as it is
        if any(g.verdict == "unknown" for g in self.groups):
            return 6
        return 0


def group_reports(
    reports: Iterable[NodeReport], memory: Callable[[Node], int | None] | None = None
) -> tuple[list[Group], list[NodeReport]]:
    """Reports by fingerprint; ``memory`` (--model): a GPU's memory is part of it."""
    buckets: dict[Fingerprint, list[NodeReport]] = {}
    failed: list[NodeReport] = []
    for r in mark_duplicates(reports):
        if r.node is None:
            failed.append(r)
            continue
        fp = fingerprint(r.node, r.reason)
        if memory is not None:
            fp = replace(fp, gpu_memory=memory(r.node))
        buckets.setdefault(fp, []).append(r)
    ordered = sorted(
        buckets.items(), key=lambda kv: (-len(kv[1]), kv[0].unplaced is not None, repr(kv[0]))
    )
    groups = [
        Group(id=f"g{i}", fingerprint=fp, reports=tuple(rs))
        for i, (fp, rs) in enumerate(ordered, 1)
    ]
    return groups, failed


def _decide(m: Matrix, group: Group, request: Request) -> Group:
    """The group with its decision, route and image decision (or the error that stopped it)."""
    if group.fingerprint.unplaced is not None:
        return replace(group, error=group.fingerprint.unplaced)
    try:
        decision = solve(m, group.representative, request)
    except InputError as exc:
        from resolver.explain.words import error_words

        return replace(group, error=error_words(exc).message)
    route: Route | None = None
    if decision.verdict == "blocked_host_fix":
        from resolver.solve.routes import search

        found = search(m, decision).host
        route = found[0] if found else None
    image: Decision | None = None
    if decision.verdict in OK_VERDICTS or decision.verdict == "unofficial_only":
        from resolver.artifacts.images import IMAGE_PATHS

        if decision.plan is not None and decision.plan.candidate.pulled:
            image = decision
        else:
            image_request = Request(
                vllm=request.vllm,
                quantization=request.quantization,
                kv_cache_dtype=request.kv_cache_dtype,
                paths=IMAGE_PATHS,
                model=request.model,  # the image's release sizes the model the scripts serve
            )
            found_image = solve(m, group.representative, image_request)
            if found_image.plan is not None and found_image.plan.candidate.pulled:
                image = found_image
    sized = image or decision
    sizing = model_sizing(group.representative, sized) if request.model is not None else None
    return replace(group, decision=decision, route=route, image=image, sizing=sizing)


def pin_images(fleet: FleetPlan, client: Any) -> FleetPlan:
    """Ask the registry once per distinct image for its manifest digest and put it on every group
    that runs it (``resolver.artifacts.images.pin``); a digest that moved is a ``registry`` note."""
    from resolver.artifacts.images import image_ref, pin

    done: dict[tuple[str, str], Any] = {}
    notes: list[tuple[str, str]] = []
    groups: list[Group] = []
    for g in fleet.groups:
        image = g.pulls
        if image is None:
            groups.append(g)
            continue
        key = (image.repo, image.tag)
        if key not in done:
            done[key] = pin(image, client)
            notes += [("registry", m) for m in _words(w.message for w in done[key].warnings)]
        groups.append(
            replace(g, pinned=done[key].image, ref=image_ref(done[key].image, client.registry))
        )
    return replace(fleet, groups=tuple(groups), notes=(*fleet.notes, *notes))


def point_images(fleet: FleetPlan, registry: Any) -> FleetPlan:
    """Each group's image as a plain tag reference on ``registry`` (a mirror; no network)."""
    from resolver.artifacts.images import image_ref

    return replace(
        fleet,
        groups=tuple(
            replace(g, ref=image_ref(image, registry)) if (image := g.pulls) is not None else g
            for g in fleet.groups
        ),
    )


_RUNS_IT = ("on-plan", "as-is")  # join statuses of groups that run the main plan unchanged


def _pinned(m: Matrix, group: Group, cand: Candidate, request: Request) -> Evaluation | None:
    """``cand`` (another group's plan) evaluated on this group's node: the group solved pinned to
    that plan, not looked up among its own alternatives (which hold only the releases its own
    request reached)."""
    if group.decision is None:
        return None
    if group.plan is not None and group.plan.candidate.key == cand.key:
        return group.plan
    return evaluate_pinned(m, group.representative, request, cand)


def _join(m: Matrix, group: Group, cand: Candidate, request: Request) -> Join:
    d = group.decision
    if d is None:
        return Join("unknown", reasons=(group.error or "not decided",))
    if d.plan is not None and d.plan.candidate.key == cand.key:
        return Join("on-plan")
    ev = _pinned(m, group, cand, request)
    assert ev is not None
    if ev.ok and not ev.unofficial:
        return Join("as-is")
    if ev.host_fixable:
        # The one what-if search, asked for this plan: the fewest host changes, each set verified
        # by evaluating the plan on the changed node.
        from resolver.solve.routes import search

        found = search(m, d, goal=cand).host
        if found:
            route = tuple((st.change.kind, st.before, st.change.value) for st in found[0].steps)
            return Join("host-fix", fixes=_words(ev.fix_texts), steps=route)
        return Join("host-fix", fixes=_words(ev.fix_texts))
    if ev.ok:  # runs only off the supported path (an override, an unshipped gfx)
        return Join("blocked", reasons=(f"{cand.label} runs here only unofficially",))
    return Join("blocked", reasons=_words(r.message for r in ev.reasons))


def with_driver(reports: Sequence[NodeReport], driver: str) -> list[NodeReport]:
    """``--driver RELEASE`` for every node whose report does not name its driver release (live
    probes read only the kernel module's version, which no AMD table maps to a release)."""
    driver_series(driver)  # a bad value is an InputError before anything else happens
    out = []
    for r in reports:
        if r.node is not None and r.node.driver_version is None:
            r = msgspec.structs.replace(
                r,
                node=msgspec.structs.replace(
                    r.node,
                    driver_version=driver,
                    overrides=(*r.node.overrides, ("--driver", driver)),
                ),
            )
        out.append(r)
    return out


def plan_fleet(m: Matrix, reports: Sequence[NodeReport], request: Request) -> FleetPlan:
    """Group, decide each group once, pick the plan that covers the most nodes, and say for
    every other group what would let it join."""
    memory = None
    if request.model is not None:  # the fit depends on a GPU's memory: part of the fingerprint
        from resolver.solve.model import gpu_memory

        def memory(node: Node) -> int | None:
            found = gpu_memory(m, node)
            return found.bytes if found is not None else None

    grouped, failed = group_reports(reports, memory)
    groups = [_decide(m, g, request) for g in grouped]
    joins: dict[str, Join] = {}
    main_plans: dict[str, tuple[str, int]] = {}
    # The main plan is the one the most nodes chose (among equals, the largest group's); it is
    # then solved on every other group, pinned to it, to say which run it as they are (and count
    # them), which need host changes, and which cannot.
    # A mixed fleet has one main plan per vendor: an NVIDIA node never runs a ROCm image.
    for vendor in dict.fromkeys(g.fingerprint.vendor for g in groups):
        mine = [g for g in groups if g.fingerprint.vendor == vendor]
        # Plans are told apart by ``Candidate.key`` (the label is only how a report names one).
        chosen: dict[tuple[str, str], Candidate] = {}
        votes: dict[tuple[str, str], int] = {}
        for g in mine:
            if g.plan is not None and g.verdict in OK_VERDICTS:
                key = g.plan.candidate.key
                chosen.setdefault(key, g.plan.candidate)
                votes[key] = votes.get(key, 0) + len(g.reports)
        if not votes:
            continue
        order = list(chosen)
        key = max(votes, key=lambda k: (votes[k], -order.index(k)))
        for g in mine:
            joins[g.id] = _join(m, g, chosen[key], request)
        runs = sum(len(g.reports) for g in mine if joins[g.id].status in _RUNS_IT)
        main_plans[vendor] = (chosen[key].label, runs)
    # The fleet's main plan: the one the most nodes run, among the vendors' own.
    main_plan, main_nodes = (
        max(main_plans.values(), key=lambda p: p[1]) if main_plans else (None, 0)
    )
    return FleetPlan(
        groups=tuple(replace(g, join=joins.get(g.id)) for g in groups),
        failed=tuple(failed),
        request=request,
        main_plan=main_plan,
        main_nodes=main_nodes,
        main_plans=main_plans,
        notes=tuple((r.name, n) for g in groups for r in g.reports for n in r.notes),
        matrix=m,
    )


# --- plain data and text ------------------------------------------------------------------------


def group_json(g: Group, m: Matrix) -> dict[str, Any]:
    from resolver.explain import candidate_json, reason_json, warning_json
    from resolver.explain.report import model_json

    d = g.decision
    image = g.pinned or g.pulls
    return {
        "id": g.id,
        "nodes": g.hostlist,
        "node_count": len(g.reports),
        "fingerprint": g.fingerprint.to_json(),
        "verdict": g.verdict,
        "exit_code": d.exit_code if d is not None else 6,
        "plan": candidate_json(d.plan.candidate) if d is not None and d.plan is not None else None,
        "image": {"ref": g.ref or image.ref, "digest": image.digest} if image is not None else None,
        "warnings": [warning_json(w) for w in d.warnings] if d is not None else [],
        "blockers": [reason_json(r) for r in d.blockers] if d is not None else [],
        # the what-if search's route (check's), never a fix nobody solved again
        "host_fix": list(_words(r.fix.text for r in g.route.reasons if r.fix is not None))
        if g.route is not None
        else None,
        "route": route_json(g.route) if g.route is not None else None,
        "missing": list(_words(f.detail for f in d.missing))
        if d is not None
        else ([g.error] if g.error else []),
        "join": g.join.to_json() if g.join is not None else None,
        # --model: check's model section for the release the group runs, and its replicas.
        "model": model_json(answer) if (answer := g.model) is not None else None,
        "sizing": g.sizing.to_json() if g.sizing is not None else None,
        "sources": sorted(
            {
                r.source.split(":", 1)[0]
                if r.source.startswith(("srun:", "kubernetes:"))
                else "file"
                for r in g.reports
            }
        ),
    }


def fleet_json(fleet: FleetPlan, m: Matrix) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "exit_code": fleet.exit_code,
        "request": {
            "vllm": str(fleet.request.vllm) if fleet.request.vllm is not None else None,
            "model": fleet.request.model.spec if fleet.request.model is not None else None,
        },
        "nodes": {
            "total": fleet.node_count,
            "planned": sum(len(g.reports) for g in fleet.groups if g.decision is not None),
            "unknown": sum(len(g.reports) for g in fleet.groups if g.decision is None),
            "failed": len(fleet.failed),
        },
        "main_plan": {"label": fleet.main_plan, "node_count": fleet.main_nodes}
        if fleet.main_plan
        else None,
        "main_plans": {
            vendor: {"label": label, "node_count": n}
            for vendor, (label, n) in fleet.main_plans.items()
        },
        "groups": [group_json(g, m) for g in fleet.groups],
        "failed": [r.to_json() for r in fleet.failed],
        "notes": [{"node": n, "note": note} for n, note in fleet.notes],
    }


def _join_text(g: Group) -> str:
    if g.join is None:
        return "-"
    return {
        "on-plan": "on it",
        "as-is": "can run it as is",
        "host-fix": "; ".join(g.join.fixes),
        "blocked": "cannot: " + "; ".join(g.join.reasons[:2]),
        "unknown": "unknown",
    }[g.join.status]


def _row(g: Group) -> tuple[str, str, str, str, str, str]:
    plan = g.plan.candidate.label if g.plan is not None else "-"
    return (g.id, g.hostlist, str(len(g.reports)), g.verdict, plan, _join_text(g))


_RICH_STYLE = {
    "supported": "bold green",
    "supported_with_warnings": "bold yellow",
    "source_build_required": "bold yellow",
    "unofficial_only": "bold magenta",
    "blocked_host_fix": "bold red",
    "unsupported": "bold red",
    "unknown": "bold blue",
}


def render_rich(fleet: FleetPlan, console: Any) -> None:
    """The same answer for a terminal: a table with coloured verdicts, then the details."""
    from rich.markup import escape
    from rich.table import Table

    total = fleet.node_count
    console.print(
        f"[dim]fleet:[/dim] {total} node(s) in {len(fleet.groups)} group(s), {len(fleet.failed)} "
        "without a usable report"
    )
    for line in main_plan_lines(fleet):
        head, _, rest = line.partition(": ")
        console.print(f"[dim]{escape(head)}:[/dim] {escape(rest)}")
    table = Table(show_lines=False, header_style="bold")
    for column in ("group", "nodes", "n", "verdict", "plan", "to join the main plan"):
        table.add_column(column, justify="right" if column == "n" else "left")
    for g in fleet.groups:
        gid, nodes, n, verdict, plan, join = _row(g)
        table.add_row(
            gid,
            escape(nodes),
            n,
            f"[{_RICH_STYLE.get(verdict, 'bold')}]{verdict}[/]",
            escape(plan),
            escape(join),
        )
    console.print(table)
    details = render_text(fleet).split("\n\n", 2)
    if len(details) > 2:
        console.print(escape(details[2].rstrip("\n")))


_VENDOR_NAMES = {"amd": "AMD", "nvidia": "NVIDIA"}


def main_plan_lines(fleet: FleetPlan) -> list[str]:
    """The main plan, or one per vendor in a mixed fleet (each vendor's groups join their own)."""
    total = fleet.node_count
    if len(fleet.main_plans) > 1:
        lines = []
        for vendor, (label, runs) in fleet.main_plans.items():
            of = sum(len(g.reports) for g in fleet.groups if g.fingerprint.vendor == vendor)
            name = _VENDOR_NAMES.get(vendor, vendor)
            lines.append(
                f"main plan for {name} GPUs: {label}  ({runs} of {of} {name} nodes run it as "
                "they are)"
            )
        return lines
    if fleet.main_plan:
        said = f"{fleet.main_nodes} of {total} nodes run it as they are"
        return [f"main plan: {fleet.main_plan}  ({said})"]
    return []


def _model_text(g: Group) -> list[str]:
    """--model: how the group's nodes serve it (TP, replicas per node, the context cap)."""
    answer, sized = g.model, g.sizing
    if answer is None or g.plan is None:
        return []  # a blocked group: its host fix (more GPUs) says it
    if sized is None:
        return [f"  model {answer.spec}: not sized (the memory of its GPUs is not known)"]
    cap = f", --max-model-len {sized.max_model_len}" if sized.max_model_len is not None else ""
    tp = sized.tensor_parallel_size
    if sized.status == "needs-spx":
        needs = (
            f"  model {answer.spec}: needs tensor parallelism {tp}, and these GPUs are in "
            f"{sized.mode} mode, where each partition serves one TP=1 replica (TP across "
            "partitions has produced garbage output, vllm-project/vllm#20125): no batch script "
            "or manifest; switch the GPUs to SPX (amd-smi set --compute-partition SPX) to serve it"
        )
        return [needs]
    each = f"one per {sized.mode} partition" if sized.mode else f"{tp} GPU(s) each"
    return [f"  model {answer.spec}: TP {tp}, {sized.replicas} replica(s) per node ({each}){cap}"]


def render_text(fleet: FleetPlan, width: int | None = None) -> str:
    """The plan in words: the main plan, a table of the groups, what each group needs. With
    ``width`` (a terminal's) the table and the prose fit it (commands never wrap); without it
    (fleet.txt) each group is one table line."""
    from resolver.explain.text import fill
    from resolver.util.table import fit_table

    def fit(line: str) -> list[str]:
        if width is None:
            return [line]
        indent = line[: len(line) - len(line.lstrip(" "))]
        return fill(line.lstrip(" "), indent, indent + "  ", width)

    lines: list[str] = []
    total = fleet.node_count
    lines += fit(
        f"fleet: {total} node(s) in {len(fleet.groups)} group(s), {len(fleet.failed)} without a "
        "usable report"
    )
    for line in main_plan_lines(fleet):
        lines += fit(line)
    lines.append("")
    header = ("group", "nodes", "n", "verdict", "plan", "to join the main plan")
    rows = [_row(g) for g in fleet.groups]
    if not rows:  # no table of nothing: say why there is nothing to plan
        why = "no node was given" if not fleet.failed else "no node gave a usable report"
        lines += fit(f"nothing to plan: {why}" + (" (listed below)" if fleet.failed else ""))
    elif width is not None:
        lines += fit_table(header, rows, width=width).splitlines()
    else:
        widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header) - 1)]
        for row in [header, *rows]:
            lines.append(
                "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])) + "  " + row[-1]
            )
    lines.append("")
    for g in fleet.groups:
        lines += fit(f"{g.id}: {g.fingerprint.short()}")
        lines += [ln for said in _model_text(g) for ln in fit(said)]
        if g.decision is None:
            lines += fit(f"  unknown: {g.error}")
        elif g.decision.missing:
            lines += [
                ln for f in g.decision.missing for ln in fit(f"  unknown: {_words([f.detail])[0]}")
            ]
        elif g.route is not None and fleet.matrix is not None:  # check's route, solved again
            lead, _ = route_words(fleet.matrix, g.route)
            lines += fit(
                f"  host fix for its own best plan ({g.route.opens.candidate.label}): {lead}"
            )
        elif g.plan is not None and g.image is None:
            lines += fit(
                "  no prebuilt image fits: no batch script or manifest; the plan is "
                f"{g.plan.candidate.label}"
            )
            lines += [f"    {cmd}" for cmd in plan_commands(g.plan, g.representative)]
    if fleet.failed:
        lines.append("")
        lines.append("nodes without a usable report:")
        lines += [ln for r in fleet.failed for ln in fit(f"  {r.name} ({r.source}): {r.reason}")]
    if fleet.notes:
        lines.append("")
        lines.append("notes:")
        lines += [ln for n, note in fleet.notes for ln in fit(f"  {n}: {note}")]
    return "\n".join(lines) + "\n"
