"""``rocm_agent_enumerator`` output -> one GPU agent per line.

The tool (ROCm/rocminfo ``rocm_agent_enumerator``) prints one gfx name per HSA agent, ``gfx000``
for each CPU agent, in agent order; uv and AOTriton read it to pick a wheel. It names targets
only: no PCI id, VRAM or unique id, so it counts and names the GPUs and nothing else.
"""

from __future__ import annotations

import re

from resolver.probe import gfx as gfxmod
from resolver.probe.facts import GpuFact, SourceView
from resolver.probe.text import clean
from resolver.util.versions import gfx_base_name

_CPU = "gfx000"
_LINE_RE = re.compile(r"^\s*(\S+)\s*\Z")


def parse(text: str) -> SourceView:
    view = SourceView(source="rocm_agent_enumerator")
    cpus = 0
    other: list[str] = []
    for line in clean(text):
        match = _LINE_RE.match(line)
        if not match:
            if line.strip():
                other.append(line.strip())
            continue
        word = match.group(1)
        if word.lower() == _CPU:
            cpus += 1
            continue
        name = gfx_base_name(word)
        if name and gfxmod.is_gfx_name(name) and not gfxmod.GENERIC_RE.match(name):
            features = gfxmod.split_target(word)
            gpu = GpuFact(gfx=name, runtime_gfx=name)
            if features:
                gpu.sramecc, gpu.xnack = features.sramecc, features.xnack
            view.gpus.append(gpu)
        else:
            other.append(word)
    view.facts["cpu_agents"] = cpus
    if not view.gpus:
        view.said(
            "no-gpu-agent-enumerator/cpu-only" if cpus and not other else "no-gpu-agent-enumerator"
        )
    return view
