"""The compatibility graph: typed nodes from the model, typed edges, each edge with its source.

Node ids are ``<type>:<key>`` (``rocm:7.2.3``, ``gfx:gfx942``, ``vllm:0.24.0``, ``driver:30.30``,
``image:vllm/vllm-openai-rocm:v0.24.0``, ``wheel:rocm700``, ``pin:triton:ROCm/triton@ba5c1517``,
``os:ubuntu-22.04``). Edge ``relation`` is one of ``supports`` (driver -> ROCm user space,
ROCm/artifact -> gfx), ``runs-on`` (ROCm -> OS), ``built-with`` (vLLM/image/wheel -> ROCm,
image/wheel -> vLLM), ``pins`` (vLLM -> component pin), ``requires`` (wheel -> OS glibc floor).
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from resolver.model import Matrix


def build(m: Matrix) -> nx.MultiDiGraph:
    g = nx.MultiDiGraph()

    def node(node_id: str, kind: str, **attrs: Any) -> str:
        g.add_node(node_id, type=kind, **{k: v for k, v in attrs.items() if v is not None})
        return node_id

    def edge(a: str, b: str, relation: str, source: str, confidence: str = "exact") -> None:
        g.add_edge(a, b, key=relation, relation=relation, source=source, confidence=confidence)

    for t in m.gfx:
        node(f"gfx:{t.name}", "gfx", arch=t.arch, families=list(t.families), vllm_status=t.vllm_status)
    for o in m.os:
        node(f"os:{o.id}", "os", name=o.name, glibc=str(o.glibc) if o.glibc else None)
    for r in m.rocm:
        rid = node(f"rocm:{r.version}", "rocm", version=str(r.version), stream=r.stream, date=r.date)
        for name in r.gfx:
            edge(rid, f"gfx:{name}", "supports", r.provenance.source, r.provenance.confidence)
        for os_id in r.os:
            base = ".".join(os_id.split(".")[:2]) if os_id.count(".") > 1 else os_id
            target = next((o.id for o in m.os if base == o.id or base.startswith(o.id + ".")), None)
            if target is None and "-" in os_id:
                family, _, ver = os_id.partition("-")
                target = next((o.id for o in m.os if o.id == f"{family}-{ver.split('.')[0]}"), None)
            if target is not None:
                edge(rid, f"os:{target}", "runs-on", r.provenance.source, r.provenance.confidence)
    for d in m.drivers:
        did = node(f"driver:{d.series}", "driver", series=d.series)
        for r in m.rocm:
            if d.runs(r.version):
                edge(did, f"rocm:{r.version}", "supports", d.provenance.source, d.provenance.confidence)
    for v in m.vllm:
        vid = node(f"vllm:{v.version}", "vllm", version=str(v.version), confidence=v.provenance.confidence)
        if v.rocm is not None:
            edge(vid, f"rocm:{m.rocm_release(v.rocm).version}", "built-with", v.provenance.source, v.provenance.confidence)  # type: ignore[union-attr]
        for name in v.arch:
            edge(vid, f"gfx:{name}", "supports", v.provenance.source, v.provenance.confidence)
        for p in v.pins:
            pid = node(f"pin:{p.component}:{p.repo}@{p.ref}", "pin", component=p.component, repo=p.repo, ref=p.ref)
            edge(vid, pid, "pins", v.provenance.source, v.provenance.confidence)
    for i in m.images:
        iid = node(f"image:{i.repo}:{i.tag}", "image", repo=i.repo, tag=i.tag, digest=i.digest, deprecated=i.deprecated)
        if i.vllm is not None:
            node(f"vllm:{i.vllm}", "vllm", version=str(i.vllm))
            edge(iid, f"vllm:{i.vllm}", "built-with", i.provenance.source, i.provenance.confidence)
        if i.rocm is not None:
            edge(iid, f"rocm:{m.rocm_release(i.rocm).version}", "built-with", i.provenance.source, i.provenance.confidence)  # type: ignore[union-attr]
        for name in i.arch:
            edge(iid, f"gfx:{name}", "supports", i.provenance.source, i.provenance.confidence)
    for w in m.wheels:
        wid = node(f"wheel:{w.name}", "wheel", python=list(w.python), glibc_min=str(w.glibc_min), status=w.status)
        edge(wid, f"rocm:{m.rocm_release(w.rocm).version}", "built-with", w.provenance.source, w.provenance.confidence)  # type: ignore[union-attr]
        for v in m.vllm:
            if w.vllm is not None and w.vllm.contains(v.version):
                edge(wid, f"vllm:{v.version}", "built-with", w.provenance.source, w.provenance.confidence)
        for name in w.arch:
            edge(wid, f"gfx:{name}", "supports", w.provenance.source, w.provenance.confidence)
        for o in m.os:
            if o.glibc is not None and o.glibc >= w.glibc_min:
                edge(wid, f"os:{o.id}", "requires", w.provenance.source, w.provenance.confidence)
    return g


def to_json(g: nx.MultiDiGraph) -> dict[str, Any]:
    return {
        "nodes": [{"id": n, **attrs} for n, attrs in sorted(g.nodes(data=True))],
        "edges": [
            {"from": a, "to": b, **attrs}
            for a, b, attrs in sorted(g.edges(data=True), key=lambda e: (e[0], e[1], e[2]["relation"]))
        ],
    }


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(g: nx.MultiDiGraph) -> str:
    shapes = {"rocm": "box", "driver": "hexagon", "gfx": "ellipse", "vllm": "box3d", "image": "component",
              "wheel": "folder", "pin": "note", "os": "cylinder"}
    lines = ["digraph compatibility {", "  rankdir=LR;"]
    for n, attrs in sorted(g.nodes(data=True)):
        lines.append(f"  {_dot_id(n)} [shape={shapes.get(attrs.get('type', ''), 'plaintext')}];")
    for a, b, attrs in sorted(g.edges(data=True), key=lambda e: (e[0], e[1], e[2]["relation"])):
        lines.append(f"  {_dot_id(a)} -> {_dot_id(b)} [label={_dot_id(attrs['relation'])}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
