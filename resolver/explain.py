"""A ``Decision`` in words: the verdict, the plan, why, and what would change the answer.

Pure string building (the CLI prints). ``color=True`` adds ANSI styles; piped output and
``NO_COLOR`` get plain text.
"""

from __future__ import annotations

from collections import Counter

from resolver.model import Matrix
from resolver.node import Node
from resolver.report import plan_commands
from resolver.solve import Decision, Evaluation, Reason, Warning

_STYLE = {
    "supported": "32",
    "supported_with_warnings": "33",
    "source_build_required": "36",
    "unofficial_only": "35",
    "unsupported": "31",
    "blocked_host_fix": "31",
}


def _paint(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def describe_node(node: Node) -> str:
    parts = []
    count = node.logical_gpu_count or len(node.gpus)
    gfx = ",".join(node.gfx_targets) or "no GPU"
    parts.append(f"{gfx} x{count}" if count else gfx)
    parts.append(f"amdgpu {node.driver_version}" if node.driver_version else "amdgpu driver unknown")
    if node.os:
        parts.append(node.os)
    if node.python:
        parts.append(f"Python {node.python}")
    if node.rocm_version:
        parts.append(f"host ROCm {node.rocm_version}")
    return " · ".join(parts) + f"   [{node.origin}]"


def _plan_lines(ev: Evaluation, m: Matrix, node: Node) -> list[str]:
    c = ev.candidate
    rocm = m.rocm_for(c.rocm) if c.rocm is not None else None
    lines = [f"plan: {c.channel} {c.image.ref if c.image else c.label}" + ("  (unofficial)" if ev.unofficial else "")]
    detail = [f"vLLM {c.vllm}"]
    if rocm is not None:
        detail.append(f"on {rocm.label}")
    elif c.rocm is not None:
        detail.append(f"on ROCm {c.rocm}")
    if c.image is not None:
        if c.image.python:
            detail.append(f"Python {c.image.python}")
        if c.image.torch:
            detail.append(f"torch {c.image.torch}")
    lines.append("  " + " ".join(detail))
    record = c.image or c.wheel or c.release
    if record is not None:
        arch = getattr(record, "arch", ())
        if arch:
            lines.append(f"  built for {', '.join(arch)}")
        lines.append(f"  confidence: {record.provenance.confidence} · source: {record.provenance.source}")
    lines.append("  run:")
    lines += [f"    {cmd}" for cmd in plan_commands(ev, node)]
    return lines


def _warning_lines(warnings: tuple[Warning, ...], color: bool) -> list[str]:
    if not warnings:
        return []
    lines = ["", "notes:" if all(w.severity == "info" for w in warnings) else "warnings:"]
    for w in sorted(warnings, key=lambda w: w.severity != "warning"):
        mark = _paint("!", "33", color) if w.severity == "warning" else "i"
        lines.append(f"  {mark} {w.message}")
        lines.append(f"    hint: {w.hint}")
    return lines


def _reason_lines(r: Reason, indent: str = "  ") -> list[str]:
    lines = [f"{indent}- {r.message}"]
    for f in r.facts:
        conf = "" if f.confidence == "exact" else f" [{f.confidence}]"
        lines.append(f"{indent}    source: {f.source}{conf}")
    lines.append(f"{indent}    hint: {r.hint}")
    return lines


def render(d: Decision, m: Matrix, *, color: bool = False, verbose: bool = False) -> str:
    lines = [
        f"verdict: {_paint(d.verdict, _STYLE[d.verdict], color)}  (exit {d.exit_code})",
        f"node: {describe_node(d.node)}",
        "",
    ]
    if d.plan is not None:
        lines += _plan_lines(d.plan, m, d.node)
    else:
        lines.append("no path fits this node:")
        shown = d.blockers or (d.host_fix.reasons if d.host_fix else ())
        if not shown and d.rejected:
            shown = d.rejected[0].reasons
        for r in shown:
            lines += _reason_lines(r)
        if d.host_fix is not None:
            lines.append("")
            lines.append(f"what would fix it: {'; '.join(r.fix.text for r in d.host_fix.reasons if r.fix)}")
            lines.append(f"  then: {d.host_fix.candidate.label}")
    lines += _warning_lines(d.warnings, color)
    if d.alternatives:
        lines += ["", "alternatives:"]
        lines += [f"  {e.candidate.channel}: {e.candidate.label}" for e in d.alternatives]
    if d.rejected:
        counts = Counter(r.code for e in d.rejected for r in e.reasons)
        common = ", ".join(f"{code} ({n})" for code, n in counts.most_common(4))
        lines += ["", f"rejected: {len(d.rejected)} other candidate(s); most common reasons: {common}"]
        if verbose:
            for e in d.rejected:
                lines.append(f"  {e.candidate.label}:")
                for r in e.reasons:
                    lines += _reason_lines(r, indent="    ")
        else:
            lines.append("  (--verbose lists each one with its source; --json has them all)")
    return "\n".join(lines) + "\n"
