"""CLI for `rocm-vllm dockerfile`: a pinned source-build Dockerfile for the node's gfx targets."""

from pathlib import Path
from typing import Annotated, Any

import typer

from resolver.cli._common import (
    DriverOpt,
    ExampleOpt,
    GfxOpt,
    GpuMemoryUtilizationOpt,
    GpusOpt,
    JsonOpt,
    MaxModelLenOpt,
    ModelSpecOpt,
    NodeFileOpt,
    OnlineOpt,
    OsOpt,
    PythonOpt,
    RocminfoOpt,
    RocmOpt,
    TensorParallelOpt,
    emit_json,
    handle_errors,
    resolve_node,
    serving_request,
)

BUILD_PANEL = "Build"


def register(app: typer.Typer, matrix_app: typer.Typer) -> None:
    @app.command("dockerfile")
    @handle_errors
    def dockerfile(
        gfx: GfxOpt = None,
        gpus: GpusOpt = None,
        driver: DriverOpt = None,
        os_id: OsOpt = None,
        rocm: RocmOpt = None,
        python: PythonOpt = None,
        node_file: NodeFileOpt = None,
        rocminfo: RocminfoOpt = None,
        example: ExampleOpt = None,
        vllm: Annotated[
            str | None,
            typer.Option(
                "--vllm",
                help="vLLM version or PEP 440 spec, as for check, e.g. 0.10.0 or '0.10.*' "
                "(default: newest that fits).",
            ),
        ] = None,
        vllm_repo: Annotated[
            str | None,
            typer.Option("--vllm-repo", help="Build vLLM from this GitHub fork (owner/name)."),
        ] = None,
        vllm_ref: Annotated[
            str | None, typer.Option("--vllm-ref", help="Build vLLM at this branch, tag or commit.")
        ] = None,
        output: Annotated[
            Path | None,
            typer.Option(
                "-o", "--output", help="Write the Dockerfile here (atomically) instead of stdout."
            ),
        ] = None,
        json_out: JsonOpt = False,
        dry_run: Annotated[
            bool,
            typer.Option(
                "--dry-run",
                help="With --build: print the Dockerfile, do not build.",
                rich_help_panel=BUILD_PANEL,
            ),
        ] = False,
        max_jobs: Annotated[
            int | None,
            typer.Option(
                "--max-jobs",
                help="Bake N in as ARG MAX_JOBS's default (default: none; the build host's CPUs "
                "and memory decide at build time).",
                rich_help_panel=BUILD_PANEL,
            ),
        ] = None,
        registry_mirror: Annotated[
            str | None,
            typer.Option(
                "--registry-mirror",
                envvar="ROCM_VLLM_REGISTRY",
                help="Pull the FROM and # syntax= images through this Docker Hub mirror: HOST, "
                "HOST:PORT or HOST/PREFIX.",
                rich_help_panel=BUILD_PANEL,
            ),
        ] = None,
        mirror_config: Annotated[
            Path | None,
            typer.Option(
                "--mirror-config",
                envvar="ROCM_VLLM_MIRRORS",
                help="A TOML file of mirror base URLs (git, index, sdist, rocm_wheels, get_pip, "
                "registry) every fetch of the file goes through (docs/airgap.md).",
                rich_help_panel=BUILD_PANEL,
            ),
        ] = None,
        lock: Annotated[
            Path | None,
            typer.Option(
                "--lock",
                help="Also write the pinned stack as a CycloneDX 1.5 bill of materials (JSON): "
                "every component, repository, ref, sdist sha256 and base image digest.",
                rich_help_panel=BUILD_PANEL,
            ),
        ] = None,
        guard: Annotated[
            bool,
            typer.Option(
                "--guard",
                help="Start vLLM through an entrypoint that refuses (exit 78, one line) when a "
                "visible GPU is not one the image carries code for.",
                rich_help_panel=BUILD_PANEL,
            ),
        ] = False,
        digest: Annotated[
            bool,
            typer.Option(
                "--digest",
                help="Pin the base image to its manifest digest (asks the registry, or the "
                "--registry-mirror).",
                rich_help_panel=BUILD_PANEL,
            ),
        ] = False,
        build: Annotated[
            bool,
            typer.Option(
                "--build",
                help="Build the image through the Docker Engine.",
                rich_help_panel=BUILD_PANEL,
            ),
        ] = False,
        tag: Annotated[
            str | None,
            typer.Option(
                "--tag",
                help="Image name:tag for --build and for the build and run commands printed.",
                rich_help_panel=BUILD_PANEL,
            ),
        ] = None,
        stack: Annotated[
            str | None,
            typer.Option(
                "--stack",
                help="The release's ROCm stack to build, e.g. rocm72 (default: the one the host's "
                "driver runs).",
            ),
        ] = None,
        allow_preview: Annotated[
            bool,
            typer.Option("--allow-preview", help="Build a stack whose ROCm is a nightly/preview."),
        ] = False,
        allow_moving_refs: Annotated[
            bool,
            typer.Option(
                "--allow-moving-refs",
                help="Build a stack whose upstream pins name a branch (not reproducible).",
            ),
        ] = False,
        allow_any_base_image: Annotated[
            bool,
            typer.Option(
                "--allow-any-base-image",
                help="Accept a base image outside the allow-list (rocm/*, vllm/*, ubuntu, debian, "
                "almalinux, rockylinux on Docker Hub).",
            ),
        ] = False,
        compare_upstream: Annotated[
            bool,
            typer.Option(
                "--compare-upstream",
                help="Instead of the Dockerfile, print each ARG, ENV and stage of upstream's "
                "Dockerfiles for this release and stack (read from its sdist, verified by sha256 "
                "and cached) and how this file takes it: reproduced, differs, left out (why). "
                "Exit 1 if one is unlisted.",
            ),
        ] = False,
        model: ModelSpecOpt = None,
        online: OnlineOpt = False,
        tensor_parallel_size: TensorParallelOpt = None,
        max_model_len: MaxModelLenOpt = None,
        gpu_memory_utilization: GpuMemoryUtilizationOpt = None,
    ) -> None:
        """A source-build Dockerfile for the node's gfx targets only, with every component \
pinned, and the commands that build and run its image (sized for --model)."""
        from resolver.artifacts import dockerfile as df
        from resolver.artifacts.mirrors import load as load_mirrors
        from resolver.data import matrix as matrix_mod
        from resolver.util.atomic import check_output

        # Both targets are checked before anything is written: a bad -o never leaves --lock
        # written, nor a bad --lock -o (issue 35).
        for target in (output, lock):
            if target is not None:
                check_output(target)
        wanted, model = serving_request(
            model,
            online=online,
            tensor_parallel_size=tensor_parallel_size,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
        )  # a --model the run command could not carry fails here, before any planning
        node = resolve_node(
            gfx=gfx,
            gpus=gpus,
            driver=driver,
            os_id=os_id,
            rocm=rocm,
            python=python,
            node_file=node_file,
            rocminfo=rocminfo,
            example=example,
        )
        m = matrix_mod.load()
        # One solve: the source build the solver picks (or the one asked for), as it evaluates it.
        chosen = (
            _choose(m, node, vllm, stack=stack, json_out=json_out)
            if vllm is not None
            else df.choose(m, node, stack=stack)
        )
        plan = df.plan_dockerfile(
            m,
            node,
            chosen,
            vllm_repo=vllm_repo,
            vllm_ref=vllm_ref,
            max_jobs=max_jobs,
            allow_preview=allow_preview,
            allow_moving_refs=allow_moving_refs,
            registry_mirror=registry_mirror,
            allow_any_base=allow_any_base_image,
            guard=guard,
            mirrors=load_mirrors(mirror_config),
        )
        if compare_upstream:
            if build or output is not None or lock is not None or digest:
                from resolver.util.errors import UsageError

                raise UsageError(
                    "--compare-upstream prints a table, it writes no Dockerfile",
                    hint="drop --build, -o, --lock and --digest, or run without --compare-upstream",
                )
            _compare(plan, json_out=json_out)
            return
        image_tag = df.image_tag(plan, tag)  # checked now, so a bad --tag fails before any output
        pin_warnings: list[str] = []
        if digest:
            from resolver.artifacts.registry import DigestCache, RegistryClient, parse_registry

            client = RegistryClient(
                parse_registry(registry_mirror, flag="--registry-mirror"), cache=DigestCache()
            )
            try:
                plan, pin_warnings = df.pin_base(plan, client)
            finally:
                client.close()
        text = df.render(plan)
        run, run_notes = _run(m, node, chosen, image_tag, model, wanted)

        for warning in (*plan.warnings, *pin_warnings):
            typer.echo(f"warning: {warning}", err=True)
        if lock is not None:
            from resolver.artifacts.lock import dockerfile_bom, dumps
            from resolver.util.atomic import write_output as write_lock

            write_lock(lock, dumps(dockerfile_bom(plan)))
            typer.echo(f"wrote {lock} (CycloneDX)", err=True)
        if output is not None:
            from resolver.util.atomic import write_output

            write_output(output, text)
            typer.echo(f"wrote {output}", err=True)
        if json_out:
            from resolver.explain.report import warning_json

            data = {"schema_version": 1, **plan.to_json()}
            data["output"] = str(output) if output is not None else None
            data["tag"] = image_tag if build else None
            data["lock"] = str(lock) if lock is not None else None
            data["run_command"], data["run_args"] = run.command, list(run.args)
            data["run_notes"] = [warning_json(n) for n in run_notes]
            emit_json(data)
        elif output is None and (not build or dry_run):
            typer.echo(text, nl=False)

        if build and not dry_run:
            _build(text, plan, image_tag)
        if not json_out:
            from resolver.explain.words import word

            for note in run_notes:
                typer.echo(f"note: {word(note.message)}\n  hint: {word(note.hint)}", err=True)
            _say_next(output if not build else None, image_tag, run.command)


def _run(
    m: Any, node: Any, chosen: Any, image_tag: str, model: str | None, wanted: Any
) -> tuple[Any, list[Any]]:
    """The docker run command of the image this Dockerfile builds, sized for --model by the
    solver's own fit of the release on this node (as `image --model` sizes a published one),
    and what to know of it (``tensor-parallel-over-fit``, as `image` says it)."""
    from resolver.artifacts.images import built_image_run, over_fit
    from resolver.artifacts.runcmd import render

    answer = None
    if wanted is not None:
        from packaging.specifiers import SpecifierSet

        from resolver.solve import Request, solve

        release = SpecifierSet(f"=={chosen.candidate.vllm}")
        fitted = solve(m, node, Request(vllm=release, paths=frozenset({"source"}), model=wanted))
        answer = fitted.model
    spec = built_image_run(m, node, chosen, image_tag, model=model, answer=answer, wanted=wanted)
    return render(spec, "docker"), over_fit(answer, wanted, spec.tensor_parallel)


def _say_next(written: Path | None, image_tag: str, run_command: str) -> None:
    """What to run next, on stderr (stdout may hold the Dockerfile): the `docker build` of a
    written file (BuildKit: its cache mounts need it), then the image's run command."""
    if written is not None:
        from resolver.util import shell

        build = ["env", "DOCKER_BUILDKIT=1", "docker", "build", "-f", str(written)]
        typer.echo(f"build: {shell.join([*build, '-t', image_tag, '.'])}", err=True)
    typer.echo(f"run: {run_command}", err=True)


def _choose(m: Any, node: Any, text: str, *, stack: str | None, json_out: bool) -> Any:
    """``--vllm`` read as `check` reads it (a version or a PEP 440 specifier: one parser), and
    the source build to write for it, from one solve as ``df.choose`` makes it. A release newer
    than the data, or one whose build facts are unknown, gets `check`'s answer (one rule):
    verdict unknown, exit 6, with the refresh command that reads it."""
    from resolver.artifacts import dockerfile as df
    from resolver.solve import Request, is_nvidia, solve
    from resolver.util.versions import parse_spec

    spec = parse_spec(text)
    source = Request(vllm=spec, paths=frozenset({"source"}))
    if is_nvidia(node, source):
        return df.choose(m, node, stack=stack)  # refused there, with vLLM's CUDA recipe
    items = list(spec)
    exact = (
        items[0].version
        if len(items) == 1 and items[0].operator in ("==", "===") and "*" not in items[0].version
        else None
    )
    release = (
        next((r for r in m.vllm if spec.contains(r.version, prereleases=True)), None)
        if exact is not None
        else None
    )
    if release is not None and _facts_known(release):
        return df.choose(m, node, vllm=str(release.version), stack=stack)
    # A range, a release the data lacks, or one whose facts it lacks: the solver's answer (it
    # raises "no vLLM release in the data matches" as in `check`).
    decision = solve(m, node, source)
    # Only the release's facts: an unknown gfx or driver keeps the refusal the plan words.
    if decision.verdict == "unknown" and all(f.kind == "release" for f in decision.missing):
        _unknown(decision, json_out=json_out)
    plan = decision.plan
    if stack is None and plan is not None and plan.candidate.release is not None:
        return plan
    newest = plan.candidate.release if plan is not None else None
    if newest is None:
        matching = [r for r in m.vllm if spec.contains(r.version, prereleases=True)]
        newest = max(matching, key=lambda r: r.version)
    if stack is None:
        # Refused in the words of that same solve's evaluation of its default stack.
        release, default = newest, newest.stack
        done = next(
            (
                e
                for e in decision.rejected
                if e.candidate.from_source
                and e.candidate.release is release
                and e.candidate.stack is default
            ),
            None,
        )
        if done is not None:
            return done
    return df.choose(m, node, vllm=str(newest.version), stack=stack)


def _facts_known(release: Any) -> bool:
    """Whether the data has what a source build of ``release`` needs (else `unknown`)."""
    return bool(
        release.known
        and release.pins
        and release.layout is not None
        and release.base_image is not None
    )


def _unknown(decision: Any, *, json_out: bool) -> None:
    """The `unknown` answer, as `check` gives it: what the data lacks and the command that reads
    it; stdout carries no Dockerfile (exit 6)."""
    from resolver.explain.report import missing_json

    missing = [missing_json(f) for f in decision.missing]
    if json_out:
        emit_json(
            {
                "schema_version": 1,
                "verdict": "unknown",
                "exit_code": decision.exit_code,
                "request": {"vllm": str(decision.request.vllm)},
                "missing": missing,
            }
        )
    else:
        typer.echo(f"verdict: unknown  (exit {decision.exit_code})", err=True)
        typer.echo(
            "the data lacks facts this answer depends on (unknown is not unsupported):", err=True
        )
        for fact in missing:
            typer.echo(f"  ? {fact['detail']}", err=True)
            if fact["fetch"]:
                typer.echo(f"    fetch: {fact['fetch']}", err=True)
    raise typer.Exit(decision.exit_code)


def _compare(plan: Any, *, json_out: bool) -> None:
    """``--compare-upstream``: the table of ``rendering.compare_upstream`` for the plan, from
    upstream's Dockerfiles in the release's sdist (the refresh's reader and its cache)."""
    from resolver.artifacts.dockerfile.rendering import compare_upstream
    from resolver.refresh import dockerfile_parse

    _check_comparable(plan)
    files = _sdist_files(plan)
    names, texts = list(files), list(files.values())
    table = compare_upstream(plan, texts, dockerfile_parse.declared_names)
    unlisted = [n for n, how, _ in table if how == "unlisted"]
    if json_out:
        emit_json(
            {
                "schema_version": 1,
                "vllm": plan.vllm_version,
                "stack": plan.stack,
                "layout": plan.layout,
                "gfx": list(plan.gfx),
                "sdist": {"url": plan.vllm_sdist[0], "sha256": plan.vllm_sdist[1]},
                "dockerfiles": names,
                "steps": [{"name": n, "how": how, "reason": why} for n, how, why in table],
                "unlisted": unlisted,
            }
        )
    else:
        typer.echo(
            f"vLLM {plan.vllm_version}, {plan.stack} stack, for {', '.join(plan.gfx)}: upstream's "
            f"{' and '.join(names)} (from the sdist) against this build"
        )
        width = max((len(n) for n, _, _ in table), default=4)
        how_w = max((len(h) for _, h, _ in table), default=3)
        typer.echo(f"{'NAME':<{width}}  {'HOW':<{how_w}}  REASON")
        for n, how, why in table:
            typer.echo(f"{n:<{width}}  {how:<{how_w}}  {why}".rstrip())
        counts: dict[str, int] = {}
        for _, how, _ in table:
            counts[how] = counts.get(how, 0) + 1
        typer.echo(", ".join(f"{c} {h}" for h, c in sorted(counts.items())))
    if unlisted:
        typer.echo(
            f"error: upstream's {', '.join(unlisted)} neither reproduced nor listed "
            "(dockerfiles/layouts.toml [[upstream_step]])",
            err=True,
        )
        raise typer.Exit(1)


def _check_comparable(plan: Any) -> None:
    """A release as released: its sdist recorded, and the stack record that names its files."""
    from resolver.util.errors import UsageError

    if plan.vllm_sdist is None or plan.upstream is None:
        raise UsageError(
            f"vLLM {plan.vllm_version}: no sdist is recorded to read upstream's Dockerfiles from "
            "(a fork or ref, or a release read from Git)",
            hint="--compare-upstream compares a release as released; drop --vllm-repo/--vllm-ref",
        )


def _sdist_files(plan: Any) -> dict[str, str]:
    """The release's ROCm build files, from the sdist cache or downloaded (sha256 checked) and
    cached; offline and uncached: a RegistryError (exit 4) saying where to get them."""
    from packaging.version import Version

    from resolver.refresh import sdist
    from resolver.refresh.common import Endpoints, SourceResult
    from resolver.refresh.http import HttpClient
    from resolver.refresh.runner import cache_dir, sdist_cache_dir
    from resolver.util.errors import MatrixError, RegistryError

    url, sha = plan.vllm_sdist
    version = plan.vllm_version
    hint = (
        f"while online: rocm-vllm matrix refresh --source sdist --tag {version} caches it "
        "(from the index, or the mirror ROCM_VLLM_INDEX_URL names)"
    )
    client = HttpClient(cache_dir=cache_dir())
    try:
        src = sdist.SdistSource(client, Endpoints.from_env(), {}, cache=sdist_cache_dir())
        entry = sdist.IndexFile(
            version=Version(version),
            filename=url.rsplit("/", 1)[-1],
            url=url,
            sha256=sha,
            size=None,
            uploaded=None,
        )
        result = SourceResult("sdist")
        try:
            files = src.files_of(entry, result)
        except RegistryError as exc:
            raise RegistryError(
                f"vLLM {version}'s sdist could not be read: {exc.message}", hint=hint
            ) from None
    finally:
        client.close()
    if files is None:
        why = "; ".join(r.reason for r in result.refused) or "not read"
        raise RegistryError(f"vLLM {version}'s sdist could not be read: {why}", hint=hint)
    want = plan.upstream.dockerfile  # the stack's base file; None: the single-file layout
    for sf in sdist._stack_files(files):
        if sf.base == want or (sf.base is None and want in (None, sf.app)):
            return {p: files[p] for p in (sf.base, sf.app) if p is not None}
    raise MatrixError(
        f"vLLM {version}'s sdist has no Dockerfile {want} for the {plan.stack} stack",
        hint=f"rocm-vllm matrix refresh --source sdist --tag {version} --verify",
    )


def _build(text: str, plan: object, image_tag: str) -> None:
    import importlib
    import tempfile

    from resolver.artifacts import dockerfile as df

    # artifacts.engine (the Docker SDK wrapper) belongs to the `image` command; imported by name so
    # this module type-checks whether or not that module is present.
    engine = importlib.import_module("resolver.artifacts.engine")
    assert isinstance(plan, df.DockerfilePlan)
    with tempfile.TemporaryDirectory(prefix="rocm-vllm-build-") as context:
        image_id = engine.DockerEngine().build(
            dockerfile_text=text,
            context_dir=Path(context),
            tag=image_tag,
            buildargs=df.build_args(plan),
            on_progress=lambda line: typer.echo(line, err=True),
        )
    typer.echo(f"built {image_tag} ({image_id})", err=True)
