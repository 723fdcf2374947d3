"""The ``rocm-vllm`` command line: parse, call the library, render. Nothing else lives here.

Each command group has its own module with a ``register(app, matrix_app)`` function; library
imports happen inside the command functions so that start-up stays fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, NoReturn

import typer

from resolver import __version__

# `-h` is `--help` everywhere (subcommands inherit it from the root context).
HELP: dict[str, Any] = {"help_option_names": ["-h", "--help"]}
_MODULES = (
    "check",
    "probe",
    "image",
    "dockerfile",
    "upgrade",
    "audit",
    "fleet",
    "matrix_cmd",
    "refresh",
)
# The first word of a command line -> the modules (under resolver.cli) that register it. Click
# builds every registered command's parameters from its signature at each start (~15 ms for all
# of them), so a run imports and builds only the command it runs; `rocm-vllm --help` and the
# tests get the whole `app`.
_FOR_COMMAND: dict[str, tuple[str, ...]] = {
    "check": ("check",),
    "probe": ("probe",),
    "image": ("image",),
    "dockerfile": ("dockerfile",),
    "upgrade": ("upgrade",),
    "audit": ("audit",),
    "fleet": ("fleet",),
    "matrix": ("matrix_cmd", "refresh"),
}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rocm-vllm {__version__}")
        raise typer.Exit(0)


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Can this AMD GPU node run vLLM, and exactly how?"""


def make_app(modules: tuple[str, ...] = _MODULES) -> typer.Typer:
    """The ``rocm-vllm`` application with the commands ``modules`` (resolver.cli.NAME) register."""
    root = typer.Typer(
        name="rocm-vllm",
        help="Can this AMD GPU node run vLLM, and exactly how?",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        context_settings=HELP,
    )
    matrix_app = typer.Typer(
        help="Inspect, check and update the compatibility data.",
        no_args_is_help=True,
        context_settings=HELP,
    )
    if "matrix_cmd" in modules or "refresh" in modules:
        root.add_typer(matrix_app, name="matrix")
    for name in modules:
        import_module(f"resolver.cli.{name}").register(root, matrix_app)
    root.callback()(_root)
    return root


_WHOLE: list[typer.Typer] = []


def __getattr__(name: str) -> Any:
    """``resolver.cli.app``: the whole application, built on first use (PEP 562)."""
    if name == "app":
        if not _WHOLE:
            _WHOLE.append(make_app())
        return _WHOLE[0]
    raise AttributeError(name)


def _app_for(args: list[str]) -> typer.Typer:
    modules = _FOR_COMMAND.get(args[0]) if args else None
    return make_app(modules) if modules is not None else __getattr__("app")


def main() -> None:
    """The console script: like ``app()``, but a usage error (unknown option, a value of the wrong
    type) is one ``error:`` line plus a ``hint:`` line, as every other bad input is."""
    import sys

    # `image --smoke=serve` is the documented spelling of --smoke-serve (a flag takes no value).
    if sys.argv[1:2] == ["image"]:
        sys.argv[2:] = ["--smoke-serve" if a == "--smoke=serve" else a for a in sys.argv[2:]]
    click_exception = _click_exception()
    wants_json = _wants_json(_before_dashes(sys.argv[1:]))
    odd = _non_ascii_number(sys.argv[1:])
    if odd is not None:
        # Click's int()/float() read other scripts' digits: `--port ٨٠` would serve on port 80.
        _usage_error(
            f"{odd[0]} {odd[1]!a} is not a number in ASCII digits",
            f"write {odd[0]} with the digits 0-9, e.g. {odd[0]} 8",
            wants_json=wants_json,
        )
    repeated = _repeated(sys.argv[1:])
    if repeated is not None:
        # Click keeps the last of a repeated option: `--node a.json --node b.json` would decide
        # for b alone and say nothing. One node per command; many nodes are a fleet.
        name, values = repeated
        hint = (
            "for many nodes: rocm-vllm fleet plan FILE... (see `rocm-vllm fleet plan --help`)"
            if name in ("--node", "--rocminfo", "--example")
            else f"give {name} once"
        )
        _usage_error(
            f"{name} given {len(values)} times ({', '.join(values)}); a command decides for "
            "one value",
            hint,
            wants_json=wants_json,
        )

    try:
        code = _app_for(sys.argv[1:])(standalone_mode=False)
    except click_exception as caught:
        exc: Any = caught  # click's exception API: show(), format_message(), exit_code, ctx
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `rocm-vllm`: show the help
            exc.show()
            sys.exit(0)
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "rocm-vllm"
        _usage_error(
            exc.format_message(),
            f"see `{command} --help`",
            wants_json=wants_json,
            exit_code=int(exc.exit_code),
        )
    except typer.Abort:
        print("aborted", file=sys.stderr)
        sys.exit(130)
    except KeyboardInterrupt:
        print("aborted", file=sys.stderr)
        sys.exit(130)
    except Exception as bug:  # noqa: BLE001 - the last line of defence: a bug, never a traceback
        from resolver.cli import crash

        report = crash.save_report(bug, sys.argv)
        print(f"error: internal error ({crash.one_line(bug)})", file=sys.stderr)
        where = (
            f"a crash report is saved in {report}" if report else "no crash report could be saved"
        )
        print(
            f"hint: this is a bug in rocm-vllm; {where}: please attach it to an issue",
            file=sys.stderr,
        )
        sys.exit(crash.EXIT_INTERNAL)
    sys.exit(code if isinstance(code, int) else 0)


# Options that take one value: giving one twice is refused rather than silently keeping the last.
SINGLE_VALUED = (
    "--node",
    "--rocminfo",
    "--example",
    "--gfx",
    "--gpus",
    "--driver",
    "--os",
    "--rocm",
    "--python",
    "--vllm",
)


def _before_dashes(argv: list[str]) -> list[str]:
    return argv[: argv.index("--")] if "--" in argv else argv


def _wants_json(argv: list[str]) -> bool:
    """--json, or its spelling --format json (check, upgrade, matrix graph)."""
    from itertools import pairwise

    return "--json" in argv or "--format=json" in argv or ("--format", "json") in pairwise(argv)


def _usage_error(message: str, hint: str, *, wants_json: bool, exit_code: int = 2) -> NoReturn:
    """A command-line error: two lines on stderr, and under --json the same error as the JSON
    object every other error is (docs/cli.md), so that a pipeline into jq always gets JSON."""
    import sys

    if wants_json:
        from resolver.cli._common import emit_json, error_document

        emit_json(error_document("usage", message, hint, exit_code))
    print(f"error: {message}", file=sys.stderr)
    print(f"hint: {hint}", file=sys.stderr)
    sys.exit(exit_code)


# Options whose value the command-line parser turns into a number.
NUMERIC = frozenset({"--gpus", "--port", "--max-jobs", "--timeout"})


def _non_ascii_number(argv: list[str]) -> tuple[str, str] | None:
    """The first numeric option whose value is not plain ASCII (``٨٠``, ``²``, ``８``)."""
    for i, word in enumerate(argv):
        if word == "--":
            break
        name, eq, value = word.partition("=")
        if name in NUMERIC:
            value = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            if not value.isascii():
                return name, value
    return None


def _repeated(argv: list[str]) -> tuple[str, list[str]] | None:
    seen: dict[str, list[str]] = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            break
        name, eq, value = word.partition("=")
        if name in SINGLE_VALUED:
            if not eq:
                value = argv[i + 1] if i + 1 < len(argv) else ""
                i += 1
            seen.setdefault(name, []).append(value)
        i += 1
    return next(((n, v) for n, v in seen.items() if len(v) > 1), None)


def _click_exception() -> type[Exception]:
    """Click's usage-error base class: vendored in typer >= 0.26, the real click before."""
    import importlib

    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            cls = importlib.import_module(module).ClickException
        except (ImportError, AttributeError):
            continue
        if isinstance(cls, type) and issubclass(cls, Exception):
            return cls
    raise RuntimeError("typer without click's exceptions")  # unreachable with any supported typer
