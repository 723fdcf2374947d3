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


def render_rich(d: Derivation, console: Console) -> None:
    """The same explanation for a terminal: coloured verdict, the chain, tables for plan and
    sources."""
    from rich.markup import escape
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    numbers = {s: i for i, s in enumerate(cited_sources(d), 1)}
    style = _RICH_STYLE.get(d.verdict, "bold")
    head = Text.assemble(
        ("verdict: ", "dim"), (d.verdict, style), (f"  (exit {d.exit_code})", "dim")
    )
    console.print(head)
    console.print(Text.assemble(("node: ", "dim"), d.node))
    if d.request:
        console.print(Text.assemble(("request: ", "dim"), d.request))
    console.print()
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
    if d.hints:
        console.print()
        for h in d.hints:
            console.print(
                Text.assemble(("hint: ", "bold cyan"), (h.text, "magenta" if h.unofficial else ""))
            )
            if h.command:  # soft_wrap: printed whole, however narrow the terminal (copy-paste)
                console.print(Text(f"      $ {h.command}", style="bold"), soft_wrap=True)
    if d.plan is not None:
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
    if d.alternatives:
        console.print()
        console.print(Text("alternatives:", style="dim"))
        for a in d.alternatives:
            console.print(Padding(Text(a), (0, 0, 0, 2)))
    if d.notes:
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
    if numbers:
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
