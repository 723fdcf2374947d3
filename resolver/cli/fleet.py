"""`rocm-vllm fleet`: many nodes -> groups, one plan, Slurm batch scripts and Kubernetes
manifests."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from resolver.cli._common import (
    GpuMemoryUtilizationOpt,
    JsonOpt,
    MaxModelLenOpt,
    OnlineOpt,
    TensorParallelOpt,
    emit_json,
    handle_errors,
    model_request,
    terminal_width,
    use_color,
)

if TYPE_CHECKING:
    from resolver.data.model import Matrix
    from resolver.fleet.plan import FleetPlan
    from resolver.fleet.reports import GatheredWhere

INPUT_PANEL = "Nodes"
OUT_PANEL = "Output"

InputsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help=(
            "Probe JSON files (`rocm-vllm probe --json` on each node), directories of them, or "
            "globs."
        ),
        show_default=False,
    ),
]
SlurmOpt = Annotated[
    str | None,
    typer.Option(
        "--slurm",
        help=(
            "Probe every node of a Slurm partition or node list through srun (gpu, gpu[001-128], "
            "partition=gpu)."
        ),
        rich_help_panel=INPUT_PANEL,
    ),
]
KubeOpt = Annotated[
    str | None,
    typer.Option(
        "--kube",
        help=(
            "`kubectl get nodes -o json` output: a file, - for stdin, or `kubectl` to ask the "
            "cluster of the current kubeconfig."
        ),
        rich_help_panel=INPUT_PANEL,
    ),
]
ProbeCmdOpt = Annotated[
    str | None,
    typer.Option(
        "--probe-command",
        help="What srun runs on each node (default: rocm-vllm probe --json).",
        rich_help_panel=INPUT_PANEL,
    ),
]
TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout", help="Seconds the whole srun fan-out may take.", rich_help_panel=INPUT_PANEL
    ),
]
WaitBusyOpt = Annotated[
    bool,
    typer.Option(
        "--wait-busy",
        help="Wait (within --timeout) for nodes busy with other jobs, not report them busy.",
        rich_help_panel=INPUT_PANEL,
    ),
]
ReservationOpt = Annotated[
    str | None,
    typer.Option(
        "--reservation",
        envvar="SLURM_RESERVATION",
        help=(
            "A Slurm reservation of yours: its nodes are probed in it, and their batch scripts "
            "carry #SBATCH --reservation (default: $SLURM_RESERVATION)."
        ),
        rich_help_panel=INPUT_PANEL,
    ),
]


def _reports(
    inputs: list[str] | None,
    slurm: str | None,
    kube: str | None,
    probe_command: str | None,
    timeout: float,
    wait_busy: bool = False,
    reservation: str | None = None,
) -> tuple[list[Any], GatheredWhere | None]:
    """The nodes' reports, and where Slurm scripts for them run: the gather's partition and its
    MaxTime (from --slurm, or a `fleet gather` directory's summary), or None."""
    from resolver.util.errors import InputError, UsageError

    given = [
        name for name, value in (("files", inputs), ("--slurm", slurm), ("--kube", kube)) if value
    ]
    if not given:
        raise UsageError(
            "no nodes given",
            hint=(
                "give probe JSON files or a directory, --slurm PARTITION|NODELIST, or --kube FILE|-"
            ),
        )
    if probe_command is not None and not slurm:
        raise UsageError("--probe-command is for --slurm", hint="add --slurm PARTITION|NODELIST")
    if wait_busy and not slurm:
        raise UsageError("--wait-busy is for --slurm", hint="add --slurm PARTITION|NODELIST")
    reports: list[Any] = []
    where: GatheredWhere | None = None
    if inputs:
        from resolver.fleet.reports import gathered_where, read_reports

        reports += read_reports(inputs)
        where = gathered_where(inputs)
    if slurm:
        from resolver.fleet import slurm as slurm_mod

        found = slurm_mod.gather(
            slurm,
            probe=slurm_mod.probe_command(probe_command),
            timeout=timeout,
            wait_busy=wait_busy,
            reservation=reservation,
        )
        reports += found.reports
        where = found.where
    if kube:
        from resolver.data import matrix
        from resolver.fleet.kube import MAX_NODE_LIST, cluster_nodes, read_nodes
        from resolver.util import bounded  # only here: keep CLI start-up free of them

        if kube == "-":
            try:
                raw = bounded.read_stdin(MAX_NODE_LIST)
            except bounded.TooLargeError:
                raise InputError(
                    "--kube -: more than 64 MiB on stdin",
                    hint="give the output of `kubectl get nodes -o json`",
                ) from None
            text, origin = raw.decode("utf-8", errors="replace"), "stdin"
        elif kube == "kubectl":
            if Path(kube).exists():
                raise UsageError(
                    "--kube kubectl: a file named kubectl is here too",
                    hint="write --kube ./kubectl for the file",
                )
            text, origin = cluster_nodes(), "kubectl get nodes"
        else:
            path = Path(kube)
            try:
                # Regular files only, size-capped: a FIFO or /dev/zero must not hang the plan.
                text, origin = bounded.read_text(path, MAX_NODE_LIST), str(path)
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(
                    (
                        f"--kube {kube}: cannot read it "
                        f"({getattr(exc, 'strerror', None) or type(exc).__name__})"
                    ),
                    hint="save it with `kubectl get nodes -o json > nodes.json`",
                ) from None
        reports += read_nodes(text, where=origin, matrix=matrix.load())
    return reports, where


def register(app: typer.Typer, matrix_app: typer.Typer) -> None:
    fleet_app = typer.Typer(
        help="Many nodes: group them, plan once per group, write sbatch scripts and manifests.",
        no_args_is_help=True,
    )
    app.add_typer(fleet_app, name="fleet")

    @fleet_app.command("plan")
    @handle_errors
    def plan(
        inputs: InputsArg = None,
        slurm: SlurmOpt = None,
        kube: KubeOpt = None,
        probe_command: ProbeCmdOpt = None,
        timeout: TimeoutOpt = 120.0,
        vllm: Annotated[
            str | None,
            typer.Option(
                "--vllm", help="vLLM version or PEP 440 spec (default: newest that fits)."
            ),
        ] = None,
        driver: Annotated[
            str | None,
            typer.Option(
                "--driver",
                help=(
                    "amdgpu driver release (e.g. 30.30.3) for nodes whose report does not name "
                    "one (live probes read only the kernel module version)."
                ),
                rich_help_panel=INPUT_PANEL,
            ),
        ] = None,
        digest: Annotated[
            bool,
            typer.Option(
                "--digest",
                help=(
                    "Pin each group's image to its manifest digest (asks the registry once per "
                    "image)."
                ),
                rich_help_panel=OUT_PANEL,
            ),
        ] = False,
        registry: Annotated[
            str | None,
            typer.Option(
                "--registry",
                envvar="ROCM_VLLM_REGISTRY",
                help="Registry or mirror base URL for the images (default: Docker Hub).",
                rich_help_panel=OUT_PANEL,
            ),
        ] = None,
        out_dir: Annotated[
            Path | None,
            typer.Option(
                "--output",
                "-o",
                help=(
                    "Write fleet.json, fleet.txt, slurm/*.sbatch and kubernetes/*.yaml here (all "
                    "or nothing)."
                ),
                rich_help_panel=OUT_PANEL,
            ),
        ] = None,
        force: Annotated[
            bool,
            typer.Option(
                "--force", help="Replace a non-empty -o directory.", rich_help_panel=OUT_PANEL
            ),
        ] = False,
        engine: Annotated[
            str,
            typer.Option(
                "--engine",
                help=(
                    "Container engine in the batch scripts: docker, podman, apptainer, singularity."
                ),
                rich_help_panel=OUT_PANEL,
            ),
        ] = "docker",
        model: Annotated[
            str | None,
            typer.Option(
                "--model",
                help="Model the servers load (Hugging Face id or path); where its config.json "
                "is here (the Hugging Face cache, a directory, the file), each group is sized "
                "for it.",
                rich_help_panel=OUT_PANEL,
            ),
        ] = None,
        online: OnlineOpt = False,
        tensor_parallel_size: TensorParallelOpt = None,
        max_model_len: MaxModelLenOpt = None,
        gpu_memory_utilization: GpuMemoryUtilizationOpt = None,
        port: Annotated[
            int, typer.Option("--port", help="Port vLLM serves on.", rich_help_panel=OUT_PANEL)
        ] = 8000,
        constraint: Annotated[
            str | None,
            typer.Option(
                "--constraint",
                help="sbatch --constraint (node features) instead of the group's node list.",
                rich_help_panel=OUT_PANEL,
            ),
        ] = None,
        partition: Annotated[
            str | None,
            typer.Option(
                "--partition",
                help="sbatch --partition (default: the partition the nodes were gathered from).",
                rich_help_panel=OUT_PANEL,
            ),
        ] = None,
        time_limit: Annotated[
            str | None,
            typer.Option(
                "--time",
                help="sbatch --time (default: 04:00:00, within the partition's MaxTime).",
                rich_help_panel=OUT_PANEL,
            ),
        ] = None,
        shm_size: Annotated[
            str,
            typer.Option(
                "--shm-size",
                help="/dev/shm size in the pods (Kubernetes quantity).",
                rich_help_panel=OUT_PANEL,
            ),
        ] = "16Gi",
        namespace: Annotated[
            str | None,
            typer.Option(
                "--namespace", help="Namespace of the manifests.", rich_help_panel=OUT_PANEL
            ),
        ] = None,
        wait_busy: WaitBusyOpt = False,
        reservation: ReservationOpt = None,
        strict: Annotated[
            bool,
            typer.Option(
                "--strict",
                help="For CI: a group whose plan rests on a requirement nobody checked (driver "
                "release, kernel floor, an arch list only a docs page claims) is unknown.",
            ),
        ] = False,
        json_out: JsonOpt = False,
    ) -> None:
        """Group nodes by fingerprint, decide each group once, and say how the rest join the main
        plan (exit 0: every node has a supported plan; 1: some do not or did not report; 2: bad
        input; 4: Slurm or kubectl failed; 6: only unknowns)."""
        from resolver.data import matrix
        from resolver.data.hfmodel import served_model
        from resolver.fleet.artifacts import Options, check_output_dir, render_all, write_dir
        from resolver.fleet.plan import plan_fleet
        from resolver.fleet.slurm import DEFAULT_JOB_TIME, job_time
        from resolver.solve import Request
        from resolver.util.versions import parse_spec

        # A local model is served from its absolute directory (mounted there on every node).
        served = served_model(model) if model is not None else None

        def options(partition: str | None, time: str, layout: Any = None) -> Options:
            made = Options(
                engine=engine,  # type: ignore[arg-type]  # checked by Options.check
                model=served,
                port=port,
                constraint=constraint,
                partition=partition,
                reservation=reservation,
                time=time,
                shm_size=shm_size,
                namespace=namespace,
                slurm=layout,
            )
            made.check()
            return made

        options(partition, time_limit or DEFAULT_JOB_TIME)  # bad flags fail before any srun
        if out_dir is not None:  # so does an -o that cannot be written (issue 40)
            check_output_dir(out_dir, force=force)
        if driver is not None:
            from resolver.util.versions import driver_series

            driver_series(driver)
        # An id whose config is not here stays a name to serve (the scripts run it unsized);
        # pinned sizes need the config.
        wanted = model_request(
            model,
            online=online,
            tensor_parallel_size=tensor_parallel_size,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            serving=True,
        )
        request = Request(vllm=parse_spec(vllm) if vllm else None, strict=strict, model=wanted)
        reports, where = _reports(
            inputs, slurm, kube, probe_command, timeout, wait_busy, reservation
        )
        # Scripts run where the nodes were found: that partition, within its MaxTime.
        gathered_in = where.partition if where is not None else None
        in_partition = partition or gathered_in
        limit = where.max_minutes if where is not None and in_partition == gathered_in else None
        # What Slurm said of each node (partitions, limits, gres): scripts Slurm can start.
        layout = where.layout if where is not None else None
        opts = options(in_partition, job_time(time_limit, in_partition, limit), layout)
        if driver is not None:
            from resolver.fleet.plan import with_driver

            reports = with_driver(reports, driver)
        m = matrix.load()
        fleet = plan_fleet(m, reports, request)
        if digest or registry:
            fleet = _point_images(fleet, registry, pin=digest)
        if out_dir is not None:
            write_dir(out_dir, render_all(m, fleet, opts), force=force)
        _show_fleet(fleet, m, json_out=json_out)
        if out_dir is not None and not json_out:
            typer.echo(
                f"\nwrote {out_dir}: fleet.json, fleet.txt, slurm/*.sbatch, kubernetes/*.yaml"
            )
        raise typer.Exit(fleet.exit_code)

    @fleet_app.command("gather")
    @handle_errors
    def gather(
        slurm: Annotated[
            str,
            typer.Option(
                "--slurm", help="A Slurm partition or node list (gpu, gpu[001-128], partition=gpu)."
            ),
        ],
        out_dir: Annotated[
            Path,
            typer.Option(
                "--output", "-o", help="Directory for NODE.json reports (all or nothing)."
            ),
        ],
        probe_command: ProbeCmdOpt = None,
        timeout: TimeoutOpt = 120.0,
        force: Annotated[
            bool, typer.Option("--force", help="Replace a non-empty -o directory.")
        ] = False,
        wait_busy: WaitBusyOpt = False,
        reservation: ReservationOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        """Run `probe --json` on every node through srun and save each node's report (exit 0: all
        answered; 1: some did not, listed with why; 4: Slurm failed)."""
        from resolver.fleet import slurm as slurm_mod
        from resolver.fleet.artifacts import check_output_dir, write_dir

        check_output_dir(out_dir, force=force)  # before any srun (issue 40)
        found = slurm_mod.gather(
            slurm,
            probe=slurm_mod.probe_command(probe_command),
            timeout=timeout,
            wait_busy=wait_busy,
            reservation=reservation,
        )
        reports = found.reports
        failed = [r for r in reports if r.node is None]
        write_dir(out_dir, _gathered_files(found, slurm), force=force)
        if json_out:
            emit_json(
                {
                    "schema_version": 1,
                    "target": slurm,
                    "partition": found.partition,
                    "max_minutes": found.max_minutes,
                    "output": str(out_dir),
                    "nodes": [r.to_json() for r in reports],
                }
            )
        else:
            typer.echo(
                f"{len(reports) - len(failed)} of {len(reports)} node(s) answered; reports "
                f"in {out_dir}"
            )
            for r in failed:
                typer.echo(f"  {r.name}: {r.reason}")
        raise typer.Exit(1 if failed else 0)


def _point_images(fleet: FleetPlan, registry: str | None, *, pin: bool) -> FleetPlan:
    """Point each group's image at ``registry``: pinned to its manifest digest (``--digest``, which
    asks the registry) or as a plain tag reference there (``--registry`` alone, no network)."""
    from resolver.artifacts.registry import DigestCache, RegistryClient, parse_registry
    from resolver.fleet.plan import pin_images, point_images

    reg = parse_registry(registry)
    if pin:
        return pin_images(fleet, RegistryClient(reg, cache=DigestCache()))
    return point_images(fleet, reg)


def _show_fleet(fleet: FleetPlan, m: Matrix, *, json_out: bool) -> None:
    """The fleet plan on stdout: JSON, rich on a colour terminal, plain text otherwise."""
    from resolver.fleet.plan import fleet_json, render_text

    if json_out:
        emit_json(fleet_json(fleet, m))
    elif use_color():
        from resolver.explain import rich_console
        from resolver.fleet.plan import render_rich

        render_rich(fleet, rich_console())
    else:
        typer.echo(render_text(fleet, width=terminal_width()), nl=False)


def _gathered_files(found: Any, slurm: str) -> dict[str, str]:
    """What `fleet gather` writes: one NODE.json per node that answered, and _gather.json listing
    every node (answered or not, with why) and the partition they were found in, with its
    MaxTime, for `fleet plan DIR`'s batch scripts."""
    import json

    from resolver import __version__
    from resolver.fleet.layout import layout_json
    from resolver.fleet.reports import GATHER_SUMMARY

    files: dict[str, str] = {}
    reports = found.reports
    for r in reports:
        if r.node is not None:
            data = {
                **r.node.to_json(),
                "hostname": r.name,
                "tool": {"name": "rocm-vllm", "version": __version__},
            }
            # r.name is a checked host name (no "/", no leading "." or "_"): a file in -o DIR.
            files[f"{r.name}.json"] = json.dumps(data, indent=2) + "\n"
    files[GATHER_SUMMARY] = (
        json.dumps(
            {
                "schema_version": 1,
                "target": slurm,
                "partition": found.partition,
                "max_minutes": found.max_minutes,
                "nodes": [r.to_json() for r in reports],
                # Each node's partitions and gres, for the batch scripts of `fleet plan DIR`.
                **({"slurm": layout_json(found.layout)} if found.layout else {}),
            },
            indent=2,
        )
        + "\n"
    )
    return files
