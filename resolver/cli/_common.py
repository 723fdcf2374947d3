"""Options every node-taking command shares, error handling, and output helpers."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from enum import Enum, StrEnum
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer

from resolver.util.errors import InputError, ResolverError, UsageError

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Enum)

NODE_PANEL = "Node (default: probe this machine)"


def _matrix_or_none() -> Any:
    """The data for completion; None when it cannot be loaded (completion then offers nothing)."""
    from resolver.data import matrix

    try:
        return matrix.load()
    except ResolverError:
        return None


def complete_gfx(incomplete: str) -> list[str]:
    """Shell completion for --gfx: the gfx targets the data knows; after a comma, the next one."""
    m = _matrix_or_none()
    done, _, last = incomplete.rpartition(",")
    prefix = f"{done}," if done else ""
    names = sorted(g.name for g in m.gfx) if m is not None else []
    return [prefix + name for name in names if name.startswith(last)]


def complete_example(incomplete: str) -> list[str]:
    """Shell completion for --example: the embedded example nodes."""
    m = _matrix_or_none()
    return [e.name for e in m.examples if e.name.startswith(incomplete)] if m is not None else []


def completer(*values: str) -> Callable[[str], list[str]]:
    """Shell completion for an option with a fixed set of values (--format)."""

    def complete(incomplete: str) -> list[str]:
        return [v for v in values if v.startswith(incomplete)]

    return complete


GfxOpt = Annotated[
    str | None,
    typer.Option(
        "--gfx",
        help="gfx target(s), comma-separated: gfx942 or gfx942,gfx950.",
        rich_help_panel=NODE_PANEL,
        autocompletion=complete_gfx,
    ),
]
GpusOpt = Annotated[
    int | None,
    typer.Option("--gpus", help="Number of GPUs vLLM may use.", rich_help_panel=NODE_PANEL),
]
DriverOpt = Annotated[
    str | None,
    typer.Option(
        "--driver", help="amdgpu driver version, e.g. 30.30.3 or 6.4.1.", rich_help_panel=NODE_PANEL
    ),
]
# An NVIDIA node by flags (issue 38): what nvidia-smi would say of it.
CcOpt = Annotated[
    str | None,
    typer.Option(
        "--cc",
        help="NVIDIA: the GPUs' CUDA compute capability, e.g. 9.0 (with --gpus, --nvidia-driver).",
        rich_help_panel=NODE_PANEL,
    ),
]
NvidiaGpuOpt = Annotated[
    str | None,
    typer.Option(
        "--nvidia-gpu",
        help="NVIDIA: the GPU product, e.g. H200 (its compute capability from the data).",
        rich_help_panel=NODE_PANEL,
    ),
]
NvidiaDriverOpt = Annotated[
    str | None,
    typer.Option(
        "--nvidia-driver",
        help="NVIDIA driver version, e.g. 580.159.04 (or its branch, 580).",
        rich_help_panel=NODE_PANEL,
    ),
]
OsOpt = Annotated[
    str | None,
    typer.Option(
        "--os", help="Host OS as ID-VERSION, e.g. ubuntu-22.04.", rich_help_panel=NODE_PANEL
    ),
]
RocmOpt = Annotated[
    str | None,
    typer.Option(
        "--rocm", help="ROCm installed on the host, e.g. 7.2.3.", rich_help_panel=NODE_PANEL
    ),
]
PythonOpt = Annotated[
    str | None,
    typer.Option("--python", help="Host Python for wheels, e.g. 3.12.", rich_help_panel=NODE_PANEL),
]
# Lists, so that a repeated flag is seen and refused (click keeps the last value silently).
NodeFileOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--node", help="Probe JSON written by `rocm-vllm probe --json`.", rich_help_panel=NODE_PANEL
    ),
]
RocminfoOpt = Annotated[
    list[Path] | None,
    typer.Option("--rocminfo", help="A saved `rocminfo` output.", rich_help_panel=NODE_PANEL),
]
ExampleOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--example",
        help="An embedded example node (see `rocm-vllm matrix show nodes`).",
        rich_help_panel=NODE_PANEL,
        autocompletion=complete_example,
    ),
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Machine-readable output (stable schema, see docs/).")
]

# --model and vLLM's sizing knobs (issue 37): the same names as vLLM's own flags.
MODEL_PANEL = "Model (docs/model-fit.md)"
ModelSpecOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="The model to serve: a Hugging Face id (read from the local Hugging Face cache), a "
        "model directory or a config.json; its architecture, quantization, attention path and "
        "memory fit are checked.",
        rich_help_panel=MODEL_PANEL,
    ),
]
OnlineOpt = Annotated[
    bool,
    typer.Option(
        "--online",
        help="Fetch --model's config.json (and its safetensors index, never weights) from "
        "HF_ENDPOINT (default https://huggingface.co) into the Hugging Face cache first.",
        rich_help_panel=MODEL_PANEL,
    ),
]
TensorParallelOpt = Annotated[
    int | None,
    typer.Option(
        "--tensor-parallel-size",
        help="Pin vLLM's --tensor-parallel-size (default: one server on every GPU given; the fit "
        "names the smallest that fits).",
        rich_help_panel=MODEL_PANEL,
    ),
]
MaxModelLenOpt = Annotated[
    int | None,
    typer.Option(
        "--max-model-len",
        help="Pin vLLM's --max-model-len (default: the model's own context, else the largest "
        "that fits).",
        rich_help_panel=MODEL_PANEL,
    ),
]
GpuMemoryUtilizationOpt = Annotated[
    float | None,
    typer.Option(
        "--gpu-memory-utilization",
        help="Pin vLLM's --gpu-memory-utilization, 0 < F <= 1 (default: the release's own).",
        rich_help_panel=MODEL_PANEL,
    ),
]


class TextOrJson(StrEnum):
    """``--format`` of a command whose only outputs are its text and its JSON document."""

    text = "text"
    json = "json"


def format_option(help_text: str) -> Any:
    """``--format``: one option naming the output; its values are the ``Enum`` the parameter is
    annotated with (Click's choice gives the shell completion and the error for a bad value)."""
    return typer.Option("--format", help=f"{help_text}.", show_choices=True)


def pick_format(chosen: F | None, aliases: Mapping[F, bool], default: F) -> F:
    """The one output format: ``--format``, or the flag that is its alias (``--json`` is
    ``--format json``; each alias is spelled ``--VALUE``). Two that ask for different outputs
    are a usage error (exit 2): keeping one silently would print what was not asked for."""
    said = {f"--{fmt.value}": fmt for fmt, given in aliases.items() if given}
    if chosen is not None:
        said[f"--format {chosen.value}"] = chosen
    asked = set(said.values())
    if len(asked) > 1:
        *first, last = said
        raise UsageError(
            f"{', '.join(first)} and {last} ask for different outputs",
            hint="give one output format: --format VALUE or one of its flags (--json is "
            "--format json)",
        )
    return next(iter(asked)) if asked else default


def wants_json(kwargs: Mapping[str, Any]) -> bool:
    """Whether a command's arguments ask for JSON: ``--json`` or ``--format json``."""
    fmt = kwargs.get("output_format")
    return bool(kwargs.get("json_out")) or (fmt is not None and str(fmt.value) == "json")


def error_document(code: str, message: str, hint: str | None, exit_code: int) -> dict[str, Any]:
    """The one JSON shape of an error under --json (docs/cli.md; the error branch of every
    published schema): parser errors in ``resolver.cli.main`` and ``ResolverError`` alike."""
    return {
        "schema_version": 1,
        "error": {"code": code, "message": message, "hint": hint, "exit_code": exit_code},
    }


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn a ``ResolverError`` into one error line, one hint line and its exit code."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ResolverError as exc:
            from resolver.explain.words import error_words

            error_words(exc)  # the solver's bad input is data until here: worded at the edge
            if wants_json(kwargs):
                # --json promises JSON on stdout: the error is an object there too
                emit_json(error_document(exc.reference, exc.message, exc.hint, exc.exit_code))
            typer.echo(f"error: {exc.message}", err=True)
            if exc.hint:
                typer.echo(f"hint: {exc.hint}", err=True)
            raise typer.Exit(exc.exit_code) from None

    return wrapper


def resolve_node(
    *,
    gfx: str | None,
    gpus: int | None,
    driver: str | None,
    os_id: str | None,
    rocm: str | None,
    python: str | None,
    node_file: Path | Sequence[Path] | None,
    rocminfo: Path | Sequence[Path] | None,
    example: str | Sequence[str] | None,
    vendor: str | None = None,
    cc: str | None = None,
    nvidia_gpu: str | None = None,
    nvidia_driver: str | None = None,
) -> Any:
    """The node a command decides for: one source (file, rocminfo, example or live probe), then
    flags on top of it. Flags alone describe a node too: an AMD one (--gfx), or an NVIDIA one
    (--cc or --nvidia-gpu, --nvidia-driver, or --vendor nvidia; --gpus counts either)."""
    from resolver.data import node as node_mod

    nvidia_flags = cc is not None or nvidia_gpu is not None or nvidia_driver is not None
    no_source = not (node_file or rocminfo or example)
    if nvidia_flags or (vendor == "nvidia" and gfx is None and no_source and gpus is not None):
        nv = _nvidia_node(
            gfx=gfx,
            gpus=gpus,
            cc=cc,
            name=nvidia_gpu,
            driver=nvidia_driver,
            others=(node_file, rocminfo, example, driver, rocm),
        )
        said = node_mod.from_flags(
            gfx=None, gpus=None, driver=None, os=os_id, rocm=None, python=python
        )
        from msgspec.structs import replace

        return replace(nv, os=said.os, python=said.python)

    node_path: Path | None = _only_one("--node", node_file)
    rocminfo_path: Path | None = _only_one("--rocminfo", rocminfo)
    example_name: str | None = _only_one("--example", example)

    sources = [
        name
        for name, value in (
            ("--node", node_path),
            ("--rocminfo", rocminfo_path),
            ("--example", example_name),
        )
        if value
    ]
    if len(sources) > 1:
        raise UsageError(
            f"{' and '.join(sources)} both describe the node",
            hint="give only one of --node, --rocminfo, --example",
        )
    flags: dict[str, Any] = {
        "gfx": gfx,
        "gpus": gpus,
        "driver": driver,
        "os": os_id,
        "rocm": rocm,
        "python": python,
    }
    flag_node = node_mod.from_flags(
        gfx=gfx, gpus=gpus, driver=driver, os=os_id, rocm=rocm, python=python
    )
    if node_path is not None:
        base = node_mod.read_node_file(node_path)
    elif rocminfo_path is not None:
        from resolver.data import matrix
        from resolver.probe import probe_files

        base = probe_files(rocminfo=rocminfo_path, matrix=matrix.load())
    elif example_name is not None:
        from resolver.data.examples import example_node

        base = example_node(example_name)
    elif gfx is not None:
        return flag_node
    else:
        from resolver.data import matrix
        from resolver.probe import probe_live

        base = probe_live(matrix=matrix.load())
    return node_mod.merge_flags(base, flag_node, flags)


def _nvidia_node(
    *,
    gfx: str | None,
    gpus: int | None,
    cc: str | None,
    name: str | None,
    driver: str | None,
    others: tuple[object, ...],
) -> Any:
    """An NVIDIA node from flags alone: a product name is looked up in nvidia-gpus.toml (its
    compute capability); one the data does not list is refused, never guessed."""
    from resolver.data import node as node_mod

    if gfx is not None or any(others):
        raise UsageError(
            "--cc, --nvidia-gpu and --nvidia-driver describe an NVIDIA node by themselves",
            hint="give them with --gpus (and --os, --python) only; for a probed node use --node "
            "FILE, or --gfx/--driver for an AMD one",
        )
    product = None
    if name is not None:
        from resolver.data import matrix

        known = matrix.load().nvidia_gpus
        want = name.strip().lower().removeprefix("nvidia ").strip()
        found = next((g for g in known if g.name.lower().removeprefix("nvidia ") == want), None)
        if found is None:
            raise InputError(
                f"--nvidia-gpu {name!r} is not a GPU the data lists",
                hint="give its compute capability instead (--cc 9.0); listed: "
                + ", ".join(g.name.removeprefix("NVIDIA ") for g in known),
            )
        if cc is not None and cc != found.compute_capability:
            raise InputError(
                f"--cc {cc} contradicts --nvidia-gpu {name}: the data lists "
                f"{found.name} as compute capability {found.compute_capability}",
                hint="give one of them",
            )
        product, cc = found.name, found.compute_capability
    return node_mod.from_nvidia_flags(name=product, cc=cc, gpus=gpus, driver=driver)


def _only_one(flag: str, value: object) -> Any:
    """A node flag given once; given twice it would silently describe only the last node."""
    if value is None or isinstance(value, (str, Path)):
        return value
    values = list(value) if isinstance(value, Sequence) else [value]
    if len(values) > 1:
        shown = " ".join(f"{flag} {v}" for v in values)
        raise UsageError(
            f"{shown}: one command decides for one node, and {flag} was given {len(values)} times",
            hint="for many nodes in one run: rocm-vllm fleet plan a.json b.json (docs/fleet.md); "
            f'for one answer each: for f in a.json b.json; do rocm-vllm check {flag} "$f"; done',
        )
    return values[0] if values else None


def emit_json(data: Any) -> None:
    from resolver.util import jsontext

    sys.stdout.write(jsontext.dumps(data) + "\n")


def use_color() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


DEFAULT_WIDTH = 100


def terminal_width(*, err: bool = False) -> int:
    """Where prose wraps: COLUMNS when set, else the width of the terminal the text goes to (stderr
    with ``err``), else of any terminal the command runs in (`check | less` still wraps for the
    screen it is read on), else 100. Commands are never wrapped, whatever this says."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), 40)
    first = 2 if err else 1
    for fd in (first, 1, 2, 0):
        try:
            if os.isatty(fd):
                return max(os.get_terminal_size(fd).columns, 40)
        except OSError:  # a closed descriptor, or a tty that reports no size
            continue
    return DEFAULT_WIDTH


def wrapped(text: str, *, width: int, later: str | None = None) -> str:
    """One line of commentary filled to ``width``: its own indentation starts it, continuation
    lines go two spaces deeper (or ``later``); `backticked commands` are never split."""
    from resolver.explain.text import fill

    indent = text[: len(text) - len(text.lstrip(" "))]
    return "\n".join(
        fill(text.lstrip(" "), indent, later if later is not None else indent + "  ", width)
    )


def format_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, width: int, rule: bool = True
) -> str:
    """``resolver.util.table.format_table`` (tables live a layer down, where the fleet's written
    plan reaches them too)."""
    from resolver.util import table

    return table.format_table(header, rows, width=width, rule=rule)


def stdout_file() -> str | None:
    """The regular file stdout is redirected to (`image --format compose > vllm.yaml`), so a
    follow-up can name it: relative to the working directory where it lies under it; None for a
    terminal, a pipe, or where /proc does not say."""
    import stat

    try:
        if not stat.S_ISREG(os.fstat(1).st_mode):
            return None
        target = Path("/proc/self/fd/1").readlink()
    except OSError:
        return None
    if not target.is_absolute() or target.name.endswith(" (deleted)"):
        return None
    if not str(target).isprintable():  # a control character would break the printed command
        return None
    try:
        return str(target.relative_to(Path.cwd()))
    except ValueError:
        return str(target)


def serving_request(
    spec: str | None,
    *,
    online: bool,
    tensor_parallel_size: int | None,
    max_model_len: int | None,
    gpu_memory_utilization: float | None,
    port: int = 8000,
    hf_cache: str | None = None,
) -> tuple[Any, str | None]:
    """``model_request`` for a command that prints a run command (image, dockerfile), with the
    model that command serves: a local model's absolute directory (mounted there), else the spec
    as given. Bad sizes fail first, then what the run command could not carry (a model path it
    cannot mount, ``port``, ``hf_cache``: ``runcmd.check_run_inputs``), before any planning."""
    from resolver.artifacts.runcmd import DEFAULT_HF_CACHE, check_run_inputs

    wanted = model_request(
        spec,
        online=online,
        tensor_parallel_size=tensor_parallel_size,
        max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization,
        serving=True,
    )
    served = wanted.served if wanted is not None and wanted.served else spec
    check_run_inputs(model=served, port=port, hf_cache=hf_cache or DEFAULT_HF_CACHE)
    return wanted, served


def model_request(
    spec: str | None,
    *,
    online: bool = False,
    tensor_parallel_size: int | None = None,
    max_model_len: int | None = None,
    gpu_memory_utilization: float | None = None,
    serving: bool = False,
) -> Any:
    """The ``ModelRequest`` for ``--model`` and its sizing knobs (None without ``--model``).

    Offline by default: the config is read from the local Hugging Face cache, a directory or a
    config.json; ``--online`` first fetches the config files through ``HF_ENDPOINT``.
    ``serving`` (image, fleet plan, where ``--model`` always named what to serve): a model whose
    config is not here (``model_cached``) gives None, and the caller says so, unless a size is
    pinned (sizes need the config).
    hfmodel and fit are imported only here, so a ``check`` without ``--model`` loads neither."""
    check_sizing(
        spec,
        tensor_parallel_size=tensor_parallel_size,
        max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization,
        online=online,
    )
    if spec is None:
        return None
    pinned = (tensor_parallel_size, max_model_len, gpu_memory_utilization)
    required = not serving or any(x is not None for x in pinned)
    from resolver.data import hfmodel
    from resolver.solve.model import ModelRequest

    if online:
        if not hfmodel.is_model_id(spec):
            from resolver.util.errors import ModelError

            raise ModelError(
                f"--online fetches a Hugging Face id, and {spec!r} is not one",
                hint="give org/name with --online, or drop --online for a local directory or "
                "config.json",
            )
        from resolver.refresh.hf import fetch_model_files

        fetch_model_files(spec)
    elif not required and not model_cached(spec):
        return None
    return ModelRequest(
        spec=spec,
        config=hfmodel.read_model(spec),
        served=hfmodel.served_model(spec),
        tensor_parallel_size=tensor_parallel_size,
        max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization,
    )


def model_cached(spec: str) -> bool:
    """Whether ``spec`` names something ``read_model`` can look at here: an existing path, or a
    Hugging Face id with an entry in the local cache (its ``refs/main``). Anything else is only a
    name for the run command (a path inside the container, a model not downloaded yet)."""
    from resolver.data import hfmodel

    try:
        if Path(spec).expanduser().exists():
            return True
    except (OSError, RuntimeError):  # a name too long, ~user of nobody
        return False
    if not hfmodel.is_model_id(spec):
        return False
    return (hfmodel.cache_repo_dir(spec) / "refs" / "main").exists()


def check_sizing(
    spec: str | None,
    *,
    tensor_parallel_size: int | None,
    max_model_len: int | None,
    gpu_memory_utilization: float | None,
    online: bool = False,
) -> None:
    """Refuse a sizing knob out of range, or given without ``--model``, before anything slow."""
    from resolver.data.node import MAX_GPUS

    if tensor_parallel_size is not None and not 1 <= tensor_parallel_size <= MAX_GPUS:
        raise UsageError(
            f"--tensor-parallel-size {tensor_parallel_size} is not a GPU count",
            hint=f"give a whole number of GPUs from 1 to {MAX_GPUS}",
        )
    if max_model_len is not None:
        from resolver.data.hfmodel import MAX_CONTEXT

        if not 1 <= max_model_len <= MAX_CONTEXT:
            raise UsageError(
                f"--max-model-len {max_model_len} is not a context length",
                hint=f"give a number of tokens from 1 to {MAX_CONTEXT}",
            )
    # NaN fails both comparisons, so it is refused too.
    if gpu_memory_utilization is not None and not 0 < gpu_memory_utilization <= 1:
        raise UsageError(
            f"--gpu-memory-utilization {gpu_memory_utilization} is not a fraction in (0, 1]",
            hint="give the share of each GPU's memory vLLM may take, e.g. 0.9",
        )
    if spec is None:
        given = [
            flag
            for flag, value in (
                ("--tensor-parallel-size", tensor_parallel_size),
                ("--max-model-len", max_model_len),
                ("--gpu-memory-utilization", gpu_memory_utilization),
                ("--online", online or None),
            )
            if value is not None
        ]
        if given:
            raise UsageError(
                f"{', '.join(given)} sizes a model, and no --model was given",
                hint="add --model ORG/NAME (or a model directory, or its config.json)",
            )
