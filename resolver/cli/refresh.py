"""CLI for ``rocm-vllm matrix refresh``: diff the data in use against upstream; ``--write`` saves
it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from resolver.cli._common import emit_json, handle_errors
from resolver.util.errors import UsageError

if TYPE_CHECKING:
    from resolver.refresh.runner import Outcome


# Paragraphs are single lines: the help renderer keeps hard line breaks inside a paragraph, which
# printed "With" and "installed" alone on their lines at 80 columns.
REFRESH_HELP = (
    "Compare the data with upstream (vLLM sdists, images, wheels, ROCm releases).\n\n"
    "Prints what would change and exits 1 when something did (0 when nothing did). "
    "With --write the changes go to the overlay in ROCM_VLLM_DATA_DIR (never into the installed "
    "package) and every command uses them from then on.\n\n"
    "vLLM releases are read from their sdists on the package index pip is configured with "
    "(or ROCM_VLLM_INDEX_URL), verified against the index's sha256 and cached by it.\n\n"
    "Other base URLs: ROCM_VLLM_GITHUB_API, ROCM_VLLM_GITHUB_RAW, ROCM_VLLM_REGISTRY, "
    "ROCM_VLLM_WHEELS; GITHUB_TOKEN is used when set."
)


def register(app: typer.Typer, matrix_app: typer.Typer) -> None:
    @matrix_app.command("refresh", help=REFRESH_HELP)
    @handle_errors
    def refresh_cmd(
        source: Annotated[
            list[str] | None,
            typer.Option(
                "--source",
                help="Upstream to read: sdist (vLLM releases from the package index), cuda (the "
                "same sdists' CUDA builds), capabilities (their ROCm quantization, KV cache and "
                "FP8 rules), images, wheels, rocm, or vllm (files at GitHub tags) (repeatable; "
                "default: rocm, sdist, images, wheels).",
            ),
        ] = None,
        write: Annotated[
            bool,
            typer.Option(
                "--write", help="Save what changed to the overlay in the user data directory."
            ),
        ] = False,
        tag: Annotated[
            list[str] | None,
            typer.Option(
                "--tag",
                help="Re-read this vLLM release (0.33.0 or v0.33.0) even if the data has it "
                "exactly (repeatable).",
            ),
        ] = None,
        verify: Annotated[
            bool,
            typer.Option(
                "--verify",
                help="Re-read every release the data already holds exactly and report any drift "
                "(a changed pin, date or hash shows as a change; exit 1).",
            ),
        ] = False,
        audit: Annotated[
            bool,
            typer.Option(
                "--audit",
                help="With --source images: also audit every image that has a digest, straight "
                "from the registry (rocm-vllm audit), and propose its audited arch list.",
            ),
        ] = False,
        json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    ) -> None:
        # The help text lives in REFRESH_HELP: one line per paragraph, so the terminal wraps it.
        from resolver.refresh import diff
        from resolver.refresh.runner import refresh

        sources = [s.strip() for item in (source or []) for s in item.split(",") if s.strip()]
        if audit and "images" not in sources:
            raise UsageError(
                "--audit reads images: it needs --source images",
                hint="run `rocm-vllm matrix refresh --source images --audit`",
            )
        if json_out:
            outcome = refresh(sources or None, write=write, tags=tag, verify=verify, audit=audit)
        else:
            outcome = _with_progress(sources or None, write, tag, verify, audit)
        if json_out:
            doc = {"schema_version": 1, **diff.to_json(outcome.changes, outcome.refused)}
            doc.update(
                {
                    "written": str(outcome.written) if outcome.written else None,
                    "overlay": str(outcome.target),
                    "skipped": outcome.skipped,
                    "requests": {"sent": outcome.requests, "conditional": outcome.conditional},
                    "compared": {
                        "records": outcome.compared_records,
                        "fields": outcome.compared_fields,
                    },
                }
            )
            emit_json(doc)
        else:
            typer.echo(
                diff.render(
                    outcome.changes,
                    outcome.refused,
                    target=str(outcome.target),
                    written=outcome.written is not None,
                    compared=(outcome.compared_records, outcome.compared_fields),
                )
            )
        if outcome.changed and not outcome.written:
            raise typer.Exit(1)


def _with_progress(
    sources: list[str] | None,
    write: bool,
    tags: list[str] | None,
    verify: bool = False,
    audit: bool = False,
) -> Outcome:
    """Run the refresh under a progress bar on stderr (rich comes with typer)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from resolver.refresh.runner import refresh

    console = Console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("refresh", total=None)

        def progress(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total or None)

        return refresh(
            sources, write=write, tags=tags, progress=progress, verify=verify, audit=audit
        )
