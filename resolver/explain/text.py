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

from resolver.data.model import Matrix
from resolver.data.node import Node
from resolver.explain.chain import describe_node
from resolver.explain.derivation import Derivation, Premise, Step
from resolver.explain.hints import route_words
from resolver.explain.steps import plan_commands
from resolver.explain.words import word
from resolver.solve import Advisory, Decision, Evaluation, Reason
from resolver.solve.routes import Route

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


def _plan_lines(ev: Evaluation, m: Matrix, node: Node, width: int = WIDTH) -> list[str]:
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
    lines += [f"    {cmd}" for cmd in plan_commands(ev, node)]
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
        lines += _plan_lines(d.plan, m, d.node, width)
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


def render_derivation(d: Derivation, width: int = WIDTH) -> str:
    """The plain-text explanation (golden files are this form, at the default width). Prose wraps
    at ``width``; ``$ command`` lines and the plan's run lines never wrap."""
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
