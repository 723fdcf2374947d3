"""CLI for `rocm-vllm dockerfile`: a pinned source-build Dockerfile for the node's gfx targets."""

from pathlib import Path
from typing import Annotated

import typer

from resolver.cli._common import (
    DriverOpt,
    ExampleOpt,
    GfxOpt,
    GpusOpt,
    JsonOpt,
    NodeFileOpt,
    OsOpt,
    PythonOpt,
    RocminfoOpt,
    RocmOpt,
    emit_json,
    handle_errors,
    resolve_node,
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
                "--vllm", help="vLLM release to build, e.g. 0.10.0 (default: newest that fits)."
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
            typer.Option("--tag", help="Image name:tag for --build.", rich_help_panel=BUILD_PANEL),
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
    ) -> None:
        """A source-build Dockerfile for the node's gfx targets only, with every component \
pinned."""
        from resolver.artifacts import dockerfile as df
        from resolver.artifacts.mirrors import load as load_mirrors
        from resolver.data import matrix as matrix_mod

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
        chosen = df.choose(m, node, vllm=vllm, stack=stack)
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
        image_tag = df.image_tag(plan, tag)  # checked now, so a bad --tag fails before any output
        pin_warnings: list[str] = []
        if digest:
            from resolver.artifacts.registry import DigestCache, RegistryClient, parse_registry

            client = RegistryClient(parse_registry(registry_mirror), cache=DigestCache())
            try:
                plan, pin_warnings = df.pin_base(plan, client)
            finally:
                client.close()
        text = df.render(plan)

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
            data = {"schema_version": 1, **plan.to_json()}
            data["output"] = str(output) if output is not None else None
            data["tag"] = image_tag if build else None
            data["lock"] = str(lock) if lock is not None else None
            emit_json(data)
        elif output is None and (not build or dry_run):
            typer.echo(text, nl=False)

        if build and not dry_run:
            _build(text, plan, image_tag)


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
