"""The ``rocm-vllm`` command line: parse, call the library, render. Nothing else lives here.

Each command group has its own module with a ``register(app, matrix_app)`` function; library
imports happen inside the command functions so that start-up stays fast.
"""

from __future__ import annotations

import typer

from resolver import __version__
from resolver.cli import check, dockerfile, image, matrix_cmd, probe, refresh

app = typer.Typer(
    name="rocm-vllm",
    help="Can this AMD GPU node run vLLM, and exactly how?",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)
matrix_app = typer.Typer(help="Inspect, check and update the compatibility data.", no_args_is_help=True)
app.add_typer(matrix_app, name="matrix")

for module in (check, probe, image, dockerfile, matrix_cmd, refresh):
    module.register(app, matrix_app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rocm-vllm {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Can this AMD GPU node run vLLM, and exactly how?"""


def main() -> None:
    app()
