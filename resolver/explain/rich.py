"""The explanation for a terminal, with rich: coloured verdict, the chain, tables for plan and
sources. The same words as ``text.render_derivation`` (it shares ``step_sentence`` and the source
numbering). rich is imported inside the functions only, so that no other path (``check --json``,
plain text) pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resolver.explain.derivation import Derivation
from resolver.explain.text import cited_sources, step_sentence

if TYPE_CHECKING:
    from rich.console import Console

    from resolver.solve.model import ModelAnswer

__all__ = ["render_rich", "rich_console"]


_RICH_STYLE = {
    "supported": "bold green",
    "supported_with_warnings": "bold yellow",
    "source_build_required": "bold cyan",
    "unofficial_only": "bold magenta",
    "unsupported": "bold red",
    "blocked_host_fix": "bold red",
    "unknown": "bold blue",
}


def render_rich(d: Derivation, console: Console, model: ModelAnswer | None = None) -> None:
    """The same explanation for a terminal: coloured verdict, the chain, tables for plan and
    sources; with ``model`` (--model's answer), its fit table as check's text prints it."""
    numbers = {s: i for i, s in enumerate(cited_sources(d), 1)}
    _print_head(d, console)
    _print_chain(d, numbers, console)
    _print_hints(d, console)
    _print_plan(d, console)
    if model is not None:
        _print_model(model, console)
    _print_alternatives(d, console)
    _print_notes(d, console)
    _print_sources(numbers, console)


def _print_head(d: Derivation, console: Console) -> None:
    """Verdict (coloured by kind), exit code, node and request."""
    from rich.text import Text

    style = _RICH_STYLE.get(d.verdict, "bold")
    head = Text.assemble(
        ("verdict: ", "dim"), (d.verdict, style), (f"  (exit {d.exit_code})", "dim")
    )
    console.print(head)
    console.print(Text.assemble(("node: ", "dim"), d.node))
    if d.request:
        console.print(Text.assemble(("request: ", "dim"), d.request))
    console.print()


def _print_chain(d: Derivation, numbers: dict[str, int], console: Console) -> None:
    """Headline, the numbered steps, the conclusion and its confidence."""
    from rich.padding import Padding
    from rich.text import Text

    mark = ("✔ ", "green") if d.ok else ("✘ ", "red")
    console.print(Text.assemble(mark, (d.headline, "bold")))
    numbered = True  # the conclusion cites steps by number
    for i, step in enumerate(d.steps):
        console.print(
            Padding(
                Text(step_sentence(step, numbers, first=i == 0, numbered=numbered)), (0, 0, 0, 2)
            )
        )
    console.print(Padding(Text(d.conclusion, style="bold"), (0, 0, 0, 2)))
    if d.confidence is not None:
        console.print(
            Padding(
                Text(f"confidence: {d.confidence}: {d.confidence_note}", style="dim"), (0, 0, 0, 2)
            )
        )


def _print_hints(d: Derivation, console: Console) -> None:
    from rich.text import Text

    if not d.hints:
        return
    console.print()
    for h in d.hints:
        console.print(
            Text.assemble(("hint: ", "bold cyan"), (h.text, "magenta" if h.unofficial else ""))
        )
        if h.command:  # soft_wrap: printed whole, however narrow the terminal (copy-paste)
            console.print(Text(f"      $ {h.command}", style="bold"), soft_wrap=True)


def _print_plan(d: Derivation, console: Console) -> None:
    """The plan as a table, then its commands below it."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    if d.plan is None:
        return
    p = d.plan
    table = Table(
        title="plan" + (" (unofficial)" if p.unofficial else ""),
        show_header=False,
        title_justify="left",
        expand=False,
    )
    table.add_column(style="dim")
    table.add_column()
    table.add_row("path", f"{p.channel} {escape(p.label)}")
    table.add_row("vLLM", p.vllm + (f" on ROCm {p.rocm}" if p.rocm else ""))
    table.add_row("confidence", p.confidence)
    if p.override:
        table.add_row("needs", f"HSA_OVERRIDE_GFX_VERSION={p.override}")
    console.print()
    console.print(table)
    console.print(Text("  run:", style="dim"))
    for c in p.commands:  # outside the table: a table cell would wrap the command
        console.print(Text(f"    {c}", style="bold"), soft_wrap=True)


def _print_model(model: ModelAnswer, console: Console) -> None:
    """The answer about --model and its fit table (``text.model_lines``, fitted to the
    terminal by ``util.table.fit_table``), each cell's ok green and no red."""
    from rich.text import Text

    from resolver.explain.text import model_lines

    for line in model_lines(model, width=console.width):
        said = Text(line)
        said.highlight_regex(r"\bok:[0-9.]+", "green")
        said.highlight_regex(r"\bno:[0-9.]+", "red")
        if line.startswith("model:"):
            said.stylize("dim", 0, len("model:"))
        console.print(said, soft_wrap=True)  # model_lines wrapped it already


def _print_alternatives(d: Derivation, console: Console) -> None:
    from rich.padding import Padding
    from rich.text import Text

    if not d.alternatives:
        return
    console.print()
    console.print(Text("alternatives:", style="dim"))
    for a in d.alternatives:
        console.print(Padding(Text(a), (0, 0, 0, 2)))


def _print_notes(d: Derivation, console: Console) -> None:
    """Warnings and notes, each with its hint; headed "warnings:" when any is one."""
    from rich.padding import Padding
    from rich.text import Text

    if not d.notes:
        return
    console.print()
    console.print(
        Text(
            "warnings:" if any(n.severity == "warning" for n in d.notes) else "notes:",
            style="dim",
        )
    )
    for n in d.notes:
        sym = ("! ", "bold yellow") if n.severity == "warning" else ("i ", "blue")
        console.print(Text.assemble(sym, n.message))
        console.print(Padding(Text.assemble(("hint: ", "cyan"), n.hint), (0, 0, 0, 4)))


def _print_sources(numbers: dict[str, int], console: Console) -> None:
    """The cited sources, numbered as the steps cite them."""
    from rich.markup import escape
    from rich.table import Table

    if not numbers:
        return
    table = Table(title="sources", title_justify="left", show_header=False, expand=False)
    table.add_column(justify="right", style="dim")
    table.add_column()
    for s, i in numbers.items():
        table.add_row(f"[{i}]", escape(s))
    console.print()
    console.print(table)


def rich_console(*, width: int | None = None, force_terminal: bool | None = None) -> Any:
    """A rich Console for stdout (imported here so that no other path pays for rich)."""
    from rich.console import Console

    return Console(width=width, force_terminal=force_terminal, highlight=False, soft_wrap=False)
