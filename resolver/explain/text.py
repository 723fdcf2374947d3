"""A ``Decision`` in plain text: the verdict, the plan, why, and what would change the answer.

``render`` is the short form ``check`` prints; ``render_derivation`` is ``check --explain``: the
numbered "Because ..." chain of a ``Derivation``, its hints and its sources, built only from the
derivation so that the JSON form renders to the same text. ``rich`` is the same content for a
terminal. Pure string building: the CLI prints.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from typing import TYPE_CHECKING

from resolver.data.model import Matrix
from resolver.data.node import Node
from resolver.explain.chain import describe_node
from resolver.explain.derivation import Derivation, Premise, Step
from resolver.explain.hints import route_words
from resolver.explain.steps import ServeSizing, plan_commands, serve_sizing
from resolver.explain.words import word
from resolver.solve import Advisory, Decision, Evaluation, Reason
from resolver.solve.routes import Route
from resolver.util.table import fit_table

if TYPE_CHECKING:  # a check without --model loads no model code
    from resolver.solve.fit import Fit
    from resolver.solve.model import ModelAnswer

__all__ = ["cited_sources", "render", "render_derivation", "step_sentence"]

_STYLE = {
    "supported": "32",
    "supported_with_warnings": "33",
    "source_build_required": "36",
    "unofficial_only": "35",
    "unsupported": "31",
    "blocked_host_fix": "31",
    "unknown": "34",
}


WIDTH = 100  # prose wraps here unless the caller passes the terminal's width; commands never wrap
_INLINE_COMMAND = re.compile(r"`[^`]+`")


def _keep_commands_whole(text: str) -> str:
    """No-break spaces inside `backticked commands`, so wrapping never splits one."""
    return _INLINE_COMMAND.sub(lambda m: m.group(0).replace(" ", "\u00a0"), text)


def _paint(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def _plan_lines(
    ev: Evaluation, m: Matrix, node: Node, width: int = WIDTH, sizing: ServeSizing | None = None
) -> list[str]:
    c = ev.candidate
    lines = [
        f"plan: {c.channel} {c.image.ref if c.image else c.label}"
        + ("  (unofficial)" if ev.unofficial else "")
    ]
    detail = [f"vLLM {c.vllm}"]
    if c.rocm is not None:
        detail.append(f"on {m.rocm_label(c.rocm)}")
    elif c.image is not None and c.image.cuda is not None:
        detail.append(f"on CUDA {c.image.cuda}")
    elif c.wheel is not None and c.wheel.cuda is not None:
        detail.append(f"on CUDA {c.wheel.cuda} (PyPI)")
    if c.image is not None:
        if c.image.python:
            detail.append(f"Python {c.image.python}")
        if c.image.torch:
            detail.append(f"torch {c.image.torch}")
    lines.append("  " + " ".join(detail))
    record = c.record
    if record is not None:
        if c.from_source and node.gfx_targets:
            # The Dockerfile builds for this node's targets only (PYTORCH_ROCM_ARCH), so that is
            # what the artifact carries; the stack's own list says what upstream ships.
            ships = f"; the stack ships {', '.join(c.arch)}" if c.arch else ""
            built = ev.built_for(node.gfx_targets)
            whose = (
                "this node's targets"
                if built == node.gfx_targets
                else f"the targets {', '.join(node.gfx_targets)} run as under "
                f"HSA_OVERRIDE_GFX_VERSION={ev.override}"
            )
            lines += fill(
                f"builds for {', '.join(built)} only ({whose}{ships})",
                "  ",
                "    ",
                width,
            )
        elif c.arch and (
            (c.image is not None and c.image.vendor == "nvidia")
            or (c.wheel is not None and c.wheel.vendor == "nvidia")
        ):
            have = ", ".join(
                sorted({str(cc) for g in node.nvidia_gpus if (cc := g.get("compute_capability"))})
            )
            lines += fill(
                f"built for compute capability {', '.join(c.arch)}"
                + (f" (this GPU: {have})" if have else ""),
                "  ",
                "    ",
                width,
            )
        elif c.arch:
            lines += fill(f"built for {', '.join(c.arch)}", "  ", "    ", width)
        lines += fill(
            f"confidence: {record.provenance.confidence} · source: {record.provenance.source}",
            "  ",
            "    ",
            width,
        )
    lines.append("  run:")
    lines += [f"    {cmd}" for cmd in plan_commands(ev, node, sizing)]
    return lines


_GiB = 1024**3


def _gib(n: int) -> str:
    return f"{n / _GiB:.1f}"


def _tokens(n: int) -> str:
    """A context length as people write it: 131072 is 128K."""
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


def _fit_cell(f: Fit) -> str:
    from resolver.explain.report import need_bytes

    # one word, so that a narrow table wraps between cells, never inside one
    return f"{'ok' if f.fits else 'no'}:{_gib(need_bytes(f))}"


def _fit_rows(table: tuple[Fit, ...]) -> tuple[list[str], list[list[str]]]:
    """TP x context: each cell whether one sequence fits, and the GiB per GPU it needs."""
    contexts = list(dict.fromkeys(f.max_model_len for f in table))
    by_tp: dict[int, dict[int, Fit]] = {}
    for f in table:
        by_tp.setdefault(f.tensor_parallel_size, {})[f.max_model_len] = f
    header = ["TP", "weights", *(_tokens(c) for c in contexts), "largest"]
    rows = []
    for tp, cells in by_tp.items():
        any_fit = next(iter(cells.values()))
        rows.append(
            [
                str(tp),
                _gib(any_fit.weights_bytes_per_gpu),
                *(_fit_cell(cells[c]) if c in cells else "-" for c in contexts),
                _tokens(max(f.largest_max_model_len for f in cells.values())),
            ]
        )
    return header, rows


def model_lines(a: ModelAnswer, width: int = WIDTH) -> list[str]:
    """The answer about ``--model``: architecture, quantization, attention path, the fit at the
    chosen size and the table it was chosen from (TP x context -> fits, GiB per GPU)."""
    listed = (
        "not checked against the registry"
        if a.architecture_supported is None
        else f"listed by vLLM {a.release}'s registry"
        if a.architecture_supported
        else f"not in vLLM {a.release}'s registry"
        + (f" (first listed in {a.first_release})" if a.first_release is not None else "")
    )
    lines = ["", f"model: {a.spec}"]
    lines += fill(f"architecture: {a.architecture or 'unknown'}, {listed}", "  ", "    ", width)
    lines.append(f"  quantization: {a.quantization or 'none'} · KV cache dtype: {a.kv_cache_dtype}")
    for p in a.attention:
        lines += fill(f"attention: {word(p)}", "  ", "    ", width)
    if a.memory is not None:
        kind = " (unified: system memory through GTT)" if a.memory.unified else ""
        lines += fill(
            f"memory: {_gib(a.memory.bytes)} GiB per GPU{kind} · {word(a.memory.source)}",
            "  ",
            "    ",
            width,
        )
    f = a.fit
    if f is not None:
        verdict = "fits" if f.fits else "does not fit"
        lines += fill(
            f"fit: TP {f.tensor_parallel_size}"
            + (f" x PP {f.pipeline_parallel_size}" if f.pipeline_parallel_size > 1 else "")
            + f", context {f.max_model_len}: {verdict}; weights {_gib(f.weights_bytes_per_gpu)} "
            f"GiB/GPU ({f.weights_source}), KV {f.kv_cache_bytes_per_token} bytes/token/GPU, "
            f"largest context {f.largest_max_model_len}, {f.concurrency:g} sequence(s) of it "
            "at once "
            f"(gpu_memory_utilization {f.gpu_memory_utilization:g})",
            "  ",
            "    ",
            width,
        )
    if a.min_gpus is not None:
        lines.append(f"  fewest GPUs for the default context: {a.min_gpus}")
    elif f is not None:
        lines.append("  fewest GPUs for the default context: none of this node's sizes")
    if a.table:
        lines += fill(
            "fit table: tensor-parallel size x context; each cell ok (fits) or no, and the GiB "
            "one GPU needs for one sequence (weights, activations and runtime, its KV cache) "
            f"against {_gib(int(a.table[0].gpu_bytes * a.table[0].gpu_memory_utilization))} GiB "
            "usable; weights in GiB per GPU; largest: the longest context that fits",
            "  ",
            "    ",
            width,
        )
        header, rows = _fit_rows(a.table)
        lines += ["    " + ln for ln in fit_table(header, rows, width=width - 4).splitlines()]
    for n in a.notes:
        lines += fill(f"note: {word(n)}", "  ", "    ", width)
    return lines


def _warning_lines(warnings: tuple[Advisory, ...], color: bool, width: int = WIDTH) -> list[str]:
    if not warnings:
        return []
    lines = ["", "notes:" if all(w.severity == "info" for w in warnings) else "warnings:"]
    for w in sorted(warnings, key=lambda w: w.severity != "warning"):
        mark = _paint("!", "33", color) if w.severity == "warning" else "i"
        lines += fill(f"{mark} {word(w.message)}", "  ", "    ", width)
        lines += fill(f"hint: {word(w.hint)}", "    ", "      ", width)
    return lines


def _reason_lines(r: Reason, indent: str = "  ", width: int = WIDTH) -> list[str]:
    lines = fill(f"- {word(r.message)}", indent, indent + "  ", width)
    for f in r.facts:
        conf = "" if f.confidence == "exact" else f" [{f.confidence}]"
        lines += fill(f"source: {f.source}{conf}", indent + "    ", indent + "      ", width)
    lines += fill(f"hint: {word(r.hint)}", indent + "    ", indent + "      ", width)
    return lines


def _missing_lines(d: Decision, width: int) -> list[str]:
    """What an ``unknown`` answer lacks: facts the data does not hold, or (--strict) facts of
    the node or artifact nobody checked, each with how to get it."""
    unchecked = all(fact.kind == "unchecked" for fact in d.missing)
    lines = [
        "--strict: the plan rests on facts nobody checked (give them, or drop --strict):"
        if unchecked and d.request.strict
        # an NVIDIA GPU whose compute capability nobody gave: unknown without --strict too
        else "a fact of the node this answer depends on is unknown (unknown is not unsupported):"
        if unchecked
        else "the data lacks facts this answer depends on (unknown is not unsupported):"
    ]
    for fact in d.missing:
        lines += fill(f"? {word(fact.detail)}", "  ", "    ", width)
        if fact.fetch:
            lines.append(f"    fetch: {fact.fetch}")
        if hint := word(fact.hint):
            lines += fill(f"hint: {hint}", "    ", "      ", width)
    return lines


def render(
    d: Decision,
    m: Matrix,
    *,
    color: bool = False,
    verbose: bool = False,
    width: int = WIDTH,
    route: Route | None = None,
) -> str:
    """The short form. Prose wraps at ``width`` (the CLI passes the terminal's); commands, the
    plan's run lines and ``fetch:`` lines are printed whole so they copy and paste. ``route`` is
    the what-if search's best host route (``Routes.best``), worded as `--explain` words it."""
    lines = [
        f"verdict: {_paint(d.verdict, _STYLE[d.verdict], color)}  (exit {d.exit_code})",
        f"node: {describe_node(d.node)}",
        "",
    ]
    if d.verdict == "unknown":
        lines += _missing_lines(d, width)
    elif d.plan is not None:
        sizing = serve_sizing(d.model, d.request.model)
        lines += _plan_lines(d.plan, m, d.node, width, sizing)
    else:
        lines.append("no path fits this node:")
        # With a host fix, the reasons of the path it opens: another path's hint could name
        # another driver than "what would fix it" (one output, one driver fix).
        host = route if route is not None and route.host_changes else None
        shown = (host.reasons if host else ()) or d.blockers
        if not shown and d.rejected:
            shown = d.rejected[0].reasons
        for r in shown:
            lines += _reason_lines(r, width=width)
        if host is not None:  # verified: the changed node was solved again
            lead, verb = route_words(m, host)
            lines.append("")
            lines += fill(f"what would fix it: {lead}", "", "  ", width)
            lines.append(f"  then: {host.opens.candidate.label} {verb} (solved again)")
    if d.model is not None:
        lines += model_lines(d.model, width)
    lines += _warning_lines(d.warnings, color, width)
    if d.alternatives:
        lines += ["", "alternatives:"]
        lines += [f"  {e.candidate.channel}: {e.candidate.label}" for e in d.alternatives]
    if d.rejected:
        counts = Counter(r.code for e in d.rejected for r in e.reasons)
        common = ", ".join(f"{code} ({n})" for code, n in counts.most_common(4))
        lines += [
            "",
            *fill(
                f"rejected: {len(d.rejected)} other candidate(s); most common reasons: {common}",
                "",
                "  ",
                width,
            ),
        ]
        if verbose:
            for e in d.rejected:
                lines.append(f"  {e.candidate.label}:")
                for r in e.reasons:
                    lines += _reason_lines(r, indent="    ", width=width)
        else:
            lines.append("  (--verbose lists each one with its source; --json has them all)")
    lines += ["", "why, step by step, with sources: add --explain"]
    return "\n".join(lines) + "\n"


# --- check --explain: the derivation ----------------------------------------------------------

MAX_CITED = 3  # a premise standing for 40 releases cites its first sources; --json has them all


def cited_sources(d: Derivation) -> list[str]:
    """The sources the text cites, in order of first citation: the [n] numbering."""
    return list(
        dict.fromkeys(s for step in d.steps for p in step.premises for s in p.sources[:MAX_CITED])
    )


def _cite(p: Premise, numbers: dict[str, int]) -> str:
    refs = ", ".join(str(numbers[s]) for s in p.sources[:MAX_CITED])
    if len(p.sources) > MAX_CITED:
        refs += f", +{len(p.sources) - MAX_CITED} more"
    if p.confidence != "exact":
        refs = f"{refs}, {p.confidence}" if refs else p.confidence
    # No-break spaces keep a citation on one line when the text is wrapped.
    return f"{p.text}\u00a0[{refs.replace(' ', chr(0xA0))}]" if refs else p.text


def step_sentence(step: Step, numbers: dict[str, int], *, first: bool, numbered: bool) -> str:
    """ "Because <premises>, <conclusion>. (n)" -- the words of one step, shared by both
    renderers."""
    premises = [_cite(p, numbers) for p in step.premises]
    premises += [f"({c})" for c in step.cites]
    if len(premises) > 1:
        because = ", ".join(premises[:-1]) + " and " + premises[-1]
    else:
        because = "".join(premises)
    lead = "Because" if first else "And because"
    text = f"{lead} {because}, {step.conclusion}."
    return f"{text} ({step.number})" if numbered else text


def fill(text: str, indent: str, later: str | None = None, width: int = WIDTH) -> list[str]:
    lines = textwrap.wrap(
        _keep_commands_whole(text),
        width=width,
        initial_indent=indent,
        subsequent_indent=later if later is not None else indent,
        break_on_hyphens=False,
        break_long_words=False,
    ) or [indent.rstrip()]
    return [line.replace("\u00a0", " ") for line in lines]


def render_derivation(d: Derivation, width: int = WIDTH, model: ModelAnswer | None = None) -> str:
    """The plain-text explanation (golden files are this form, at the default width). Prose wraps
    at ``width``; ``$ command`` lines and the plan's run lines never wrap. With ``model``
    (--model's answer), its fit table after the plan, as the rich form and check's text print
    it."""
    numbers = {s: i for i, s in enumerate(cited_sources(d), 1)}
    lines = [
        f"verdict: {d.verdict}  (exit {d.exit_code})",
        *fill(f"node: {d.node}", "", "  ", width),
    ]
    if d.request:
        lines += fill(f"request: {d.request}", "", "  ", width)
    lines += ["", *fill(d.headline, "", width=width)]
    numbered = True  # the conclusion cites steps by number
    for i, step in enumerate(d.steps):
        lines += fill(
            step_sentence(step, numbers, first=i == 0, numbered=numbered), "  ", "    ", width
        )
    lines += fill(d.conclusion, "  ", "    ", width)
    if d.confidence is not None:
        lines += fill(f"confidence: {d.confidence}: {d.confidence_note}", "  ", "    ", width)
    if d.hints:
        lines.append("")
        for h in d.hints:
            lines += fill(f"hint: {h.text}", "", "      ", width)
            if h.command:
                lines.append(f"      $ {h.command}")
    if d.plan is not None:
        p = d.plan
        lines += ["", f"plan: {p.channel} {p.label}" + ("  (unofficial)" if p.unofficial else "")]
        detail = (
            f"vLLM {p.vllm}"
            + (f" on ROCm {p.rocm}" if p.rocm else "")
            + f" · confidence: {p.confidence}"
        )
        if p.override:
            detail += f" · needs HSA_OVERRIDE_GFX_VERSION={p.override}"
        lines += [f"  {detail}", "  run:"]
        lines += [f"    {cmd}" for cmd in p.commands]
    if model is not None:
        lines += model_lines(model, width=width)  # its first line is blank
    if d.alternatives:
        lines += ["", "alternatives:", *[f"  {a}" for a in d.alternatives]]
    if d.notes:
        lines += ["", "warnings:" if any(n.severity == "warning" for n in d.notes) else "notes:"]
        for n in d.notes:
            lines += fill(
                f"{'!' if n.severity == 'warning' else 'i'} {n.message}", "  ", "    ", width
            )
            lines += fill(f"hint: {n.hint}", "    ", "      ", width)
    if numbers:
        lines += ["", "sources:"]
        for s, i in numbers.items():
            lines += fill(f"[{i}] {s}", "  ", "      ", width)
    return "\n".join(lines) + "\n"
