"""`rocm-vllm matrix show|validate|graph`: look at the data the answers rest on."""

from enum import StrEnum
from typing import Annotated, Any, assert_never

import typer

from resolver.cli._common import (
    JsonOpt,
    completer,
    emit_json,
    format_option,
    handle_errors,
    pick_format,
    terminal_width,
    wrapped,
)
from resolver.util.table import fit_table

TABLES = (
    "rocm",
    "drivers",
    "gfx",
    "vllm",
    "wheels",
    "images",
    "nodes",
    "os",
    "capabilities",
    "cuda",
)
SCHEMA_VERSION = 1  # of every `matrix ... --json` document


class GraphFormat(StrEnum):
    """`matrix graph --format`; --json is --format json."""

    json = "json"
    graphml = "graphml"
    dot = "dot"


def _rows(m: Any, table: str) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    """Header, text rows and JSON records for one table."""

    def conf(p: Any) -> str:
        return str(p.confidence)

    if table == "rocm":
        header = ["version", "stream", "date", "gfx", "confidence"]
        recs = m.rocm
        rows = [
            [str(r.version), r.stream, r.date or "?", ",".join(r.gfx) or "?", conf(r.provenance)]
            for r in recs
        ]
    elif table == "drivers":
        header = ["amdgpu", "runs ROCm user space", "released with", "confidence"]
        recs = m.drivers
        rows = [
            [d.series + ".x", ", ".join(d.user_space), d.paired_rocm or "-", conf(d.provenance)]
            for d in recs
        ]
    elif table == "gfx":
        header = ["gfx", "arch", "vllm", "aiter", "fp8", "mx", "mxfp4", "products"]
        recs = m.gfx
        rows = [
            [
                t.name,
                t.arch,
                t.vllm_status,
                t.features.aiter,
                (t.features.fp8_format or "yes") if t.features.fp8 else "no",
                "yes" if t.features.mx else "no",
                t.features.mxfp4,
                "; ".join(dict.fromkeys(p.name for p in t.products))[:70],
            ]
            for t in recs
        ]
    elif table == "vllm":
        header = ["vllm", "rocm", "stacks", "python", "arch (shipped)", "pins", "confidence"]
        recs = m.vllm
        rows = [
            [
                str(v.version),
                str(v.rocm) if v.rocm else "?",
                ",".join(
                    s.variant + ("*" if s.default and len(v.stacks) > 1 else "") for s in v.stacks
                )
                or "?",
                v.python or "?",
                ",".join(v.arch) or "?",
                ",".join(p.component for p in v.pins) or "-",
                conf(v.provenance),
            ]
            for v in recs
        ]
    elif table == "wheels":
        header = ["variant", "rocm", "python", "glibc>=", "vllm", "status"]
        recs = m.wheels
        rows = [
            [
                w.name,
                str(w.rocm),
                ",".join(w.python),
                str(w.glibc_min),
                w.vllm or "?",
                w.status,
            ]
            for w in recs
        ]
    elif table == "images":
        header = ["image", "rocm", "vllm", "arch", "entry", "confidence"]
        recs = m.images
        rows = [
            [
                i.ref + (" (deprecated)" if i.deprecated else ""),
                str(i.rocm) if i.rocm else "?",
                str(i.vllm) if i.vllm else "?",
                ",".join(i.arch),
                i.entrypoint,
                conf(i.provenance),
            ]
            for i in recs
        ]
    elif table == "nodes":
        header = ["example", "gfx", "gpus", "driver", "os", "description"]
        recs = m.examples
        rows = [
            [e.name, ",".join(e.gfx), str(e.gpus), e.driver or "-", e.os or "-", e.description]
            for e in recs
        ]
    elif table == "capabilities":
        header = ["vllm", "quantization (ROCm platform)", "KV cache dtypes"]
        recs = m.capabilities
        rows = [
            [str(c.version), ", ".join(c.quantization), ", ".join(c.kv_cache_dtypes) or "-"]
            for c in recs
        ]
    elif table == "cuda":
        header = ["vllm", "cuda", "images", "wheel cuda", "arch"]
        recs = m.cuda
        rows = [
            [
                str(r.version),
                str(r.cuda),
                ", ".join(i.tag for i in r.images) or "-",
                str(r.wheel_cuda) if r.wheel_cuda else "-",
                ", ".join(r.arch),
            ]
            for r in recs
        ]
    else:
        header = ["os", "name", "glibc", "kernels"]
        recs = m.os
        rows = [
            [o.id, o.name, str(o.glibc) if o.glibc else "?", ", ".join(o.kernels)] for o in recs
        ]
    return header, rows, [_record_json(r) for r in recs]


def _record_json(record: Any) -> dict[str, Any]:
    """A record as ``schema.to_json`` writes it, with what a reader asks of it beside: a
    release's default stack's facts on the release, and whether a stack is a preview."""
    from resolver.data import schema
    from resolver.data.model import RocmStack, VllmRelease

    out = schema.to_json(record)
    if isinstance(record, VllmRelease):
        default = out["stacks"][0] if out["stacks"] else {}
        for name in VllmRelease.flat_stack_fields:
            out[name] = default.get(name)
        for stack, st in zip(out["stacks"], record.stacks, strict=True):
            stack["preview"] = st.preview
    elif isinstance(record, RocmStack):
        out["preview"] = record.preview
    return out


# Tables a refresh can add to: their file and how a JSON record names its key in the overlay.
_OVERLAY_KEYS = {
    "rocm": ("rocm.toml", lambda r: r["version"]),
    "vllm": ("vllm.toml", lambda r: r["version"]),
    "images": ("images.toml", lambda r: f"{r['repo']}:{r['tag']}"),
    "wheels": ("wheels.toml", lambda r: r["name"]),
}


def _add_origin(
    table: str, header: list[str], rows: list[list[str]], data: list[dict[str, Any]]
) -> None:
    """Say, per record, whether it is embedded or came from a refresh (which URL, when)."""
    from resolver.data import overlay

    origins = overlay.origins()
    file, key_of = _OVERLAY_KEYS.get(table, ("", lambda r: ""))
    header.append("origin")
    for row, rec in zip(rows, data, strict=True):
        origin = origins.get((file, str(key_of(rec)))) if file else None
        if origin is not None and origin.overlay:
            rec["origin"] = {
                "overlay": True,
                "source_url": origin.source_url,
                "read_at": origin.read_at,
            }
            # A hand-written overlay record may lack read_at: say so rather than print "?".
            row.append(f"refreshed {origin.read_at or '(date not recorded)'}")
        else:
            rec["origin"] = {"overlay": False, "source_url": rec.get("source"), "read_at": None}
            row.append("embedded")


@handle_errors
def show(
    table: Annotated[
        str, typer.Argument(help=f"One of: {', '.join(TABLES)}.", autocompletion=completer(*TABLES))
    ],
    json_out: JsonOpt = False,
    origin: Annotated[
        bool,
        typer.Option("--origin", help="Say which facts came from a refresh, from where and when."),
    ] = False,
) -> None:
    """Show one data table."""
    from resolver.data import matrix
    from resolver.util.errors import UsageError

    if table not in TABLES:
        raise UsageError(f"no table {table!r}", hint=f"choose one of: {', '.join(TABLES)}")
    header, rows, data = _rows(matrix.load(), table)
    if origin:
        _add_origin(table, header, rows, data)
    if json_out:
        emit_json({"schema_version": SCHEMA_VERSION, "table": table, "records": data})
    else:
        typer.echo(fit_table(header, rows, width=terminal_width()), nl=False)


@handle_errors
def validate(json_out: JsonOpt = False) -> None:
    """Load every data file and check its invariants (exit 3 names the broken record). When a
    refreshed-data overlay is active, the data with it laid over is checked too, and said so."""
    from resolver.data import matrix, overlay, resources

    m = matrix.load_dir(resources.matrix_dir())
    counts = {
        "rocm": len(m.rocm),
        "os": len(m.os),
        "drivers": len(m.drivers),
        "gfx": len(m.gfx),
        "vllm": len(m.vllm),
        "wheels": len(m.wheels),
        "images": len(m.images),
        "nodes": len(m.examples),
        "cuda": len(m.cuda),
        "nvidia": len(m.nvidia),
        "nvidia_gpus": len(m.nvidia_gpus),
        "isa": len(m.isa),
        "capabilities": len(m.capabilities),
    }
    layer = overlay.read() if overlay.stamp() is not None else {}
    laid = {file: len(records) for file, records in layer.items() if records}
    active = bool(laid)
    if active:
        matrix.load()  # the data every command uses: embedded plus overlay, checked the same way
    info = {
        "active": active,
        "path": str(overlay.overlay_path()) if active else None,
        "records": laid,
    }
    if json_out:
        emit_json(
            {
                "schema_version": SCHEMA_VERSION,
                "valid": True,
                "directory": str(resources.matrix_dir()),
                "records": counts,
                "overlay": info,
            }
        )
    else:
        width = terminal_width()
        typer.echo(
            wrapped(
                f"ok: {sum(counts.values())} records in {resources.matrix_dir()} ("
                + ", ".join(f"{k} {v}" for k, v in counts.items())
                + ")",
                width=width,
            )
        )
        if active:
            files = ", ".join(f"{k} {v}" for k, v in laid.items())
            typer.echo(
                wrapped(
                    f"overlay active: {overlay.overlay_path()} lays {sum(laid.values())} "
                    f"refreshed record(s) over it ({files}); every command uses them, and they "
                    "check out",
                    width=width,
                )
            )


@handle_errors
def graph(
    output_format: Annotated[
        GraphFormat | None,
        format_option("json (networkx node-link, the default), graphml or dot"),
    ] = None,
    gfx: Annotated[
        str | None, typer.Option("--gfx", help="Only what concerns this gfx target.")
    ] = None,
    vllm: Annotated[
        str | None, typer.Option("--vllm", help="Only vLLM releases in this spec (e.g. '>=0.30').")
    ] = None,
    stack: Annotated[
        str | None, typer.Option("--stack", help="Only this ROCm stack variant (e.g. rocm72).")
    ] = None,
    path: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--path",
            help="FROM TO: how two records are related, e.g. --path driver:6.4 vllm:0.33.0; every "
            "hop with its source.",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """The compatibility graph built from the data (a networkx graph), as JSON, GraphML or
    Graphviz DOT (--json is --format json, as on every other command).

    Every edge keeps the source and confidence of the record it comes from; --gfx, --vllm and
    --stack cut it down to what bears on them (the drivers and OS releases included)."""
    from resolver.data import graph as graph_mod
    from resolver.data import matrix
    from resolver.util.versions import parse_spec

    fmt = pick_format(output_format, {GraphFormat.json: json_out}, GraphFormat.json)
    g = graph_mod.build(matrix.load())
    if gfx or vllm or stack:
        from resolver.util.versions import check_gfx_name

        g = graph_mod.subgraph(
            g,
            gfx=check_gfx_name(gfx) if gfx else None,
            vllm=parse_spec(vllm) if vllm else None,
            stack=stack,
        )
    if path is not None:
        # The ways between two records are text unless JSON was asked for by name.
        asked = json_out or output_format is not None
        _show_paths(graph_mod, g, path, as_json=asked and fmt is GraphFormat.json)
        return
    match fmt:
        case GraphFormat.json:
            emit_json({"schema_version": SCHEMA_VERSION, **graph_mod.to_json(g)})
        case GraphFormat.graphml:
            typer.echo(graph_mod.to_graphml(g), nl=False)
        case GraphFormat.dot:
            typer.echo(graph_mod.to_dot(g), nl=False)
        case _:
            assert_never(fmt)


def _show_paths(graph_mod: Any, g: Any, ends: tuple[str, str], *, as_json: bool) -> None:
    from resolver.util.errors import UsageError

    for end in ends:
        if end not in g:
            kinds = sorted({str(a.get("type")) for _, a in g.nodes(data=True) if a.get("type")})
            raise UsageError(
                f"--path: no record {end!r} in the graph",
                hint=f"ids are TYPE:KEY ({', '.join(kinds)}), e.g. driver:30.30, vllm:0.33.0, "
                "rocm:7.2.3; `matrix graph --json` lists them",
            )
    result = graph_mod.paths(g, *ends)
    code = 0 if result.found else 1  # exit 1: the two records are not related (docs/cli.md)
    if as_json:
        emit_json(
            {
                "schema_version": SCHEMA_VERSION,
                "from": ends[0],
                "to": ends[1],
                "paths": [p.to_json() for p in result.found],
                "omitted": result.omitted,
                "exit_code": code,
            }
        )
        raise typer.Exit(code)
    width = terminal_width()
    if not result.found:
        typer.echo(
            wrapped(
                f"no path between {ends[0]} and {ends[1]}: neither reaches the other through the "
                "data's relations, and no record ties the two together",
                width=width,
            )
        )
        raise typer.Exit(code)
    for i, p in enumerate(result.found, 1):
        typer.echo(wrapped(f"{i}. {graph_mod.arrows(p)}", width=width, later="     "))
        for e in p.hops:
            said = f"     {e.src} {e.relation} {e.dst}: {e.source} ({e.confidence})"
            typer.echo(wrapped(said, width=width, later="       "))
    if result.omitted:
        typer.echo(f"({result.omitted} longer or later path(s) not shown)")


def register(app: typer.Typer, matrix_app: typer.Typer) -> None:
    matrix_app.command("show")(show)
    matrix_app.command("validate")(validate)
    matrix_app.command("graph")(graph)
