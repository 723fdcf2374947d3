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
        node(
            f"gfx:{t.name}",
            "gfx",
            arch=t.arch,
            families=list(t.families),
            vllm_status=t.vllm_status,
        )
    for o in m.os:
        node(f"os:{o.id}", "os", name=o.name, glibc=str(o.glibc) if o.glibc else None)
    for r in m.rocm:
        rid = node(
            f"rocm:{r.version}", "rocm", version=str(r.version), stream=r.stream, date=r.date
        )
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
                edge(
                    did,
                    f"rocm:{r.version}",
                    "supports",
                    d.provenance.source,
                    d.provenance.confidence,
                )

    def rocm_node(version: Any) -> str:
        rel = m.rocm_release(version)
        if rel is not None:
            return f"rocm:{rel.version}"
        # A nightly a stack builds on (7.14.0a20260623) has no release record: its own node.
        return node(f"rocm:{version}", "rocm", version=str(version), stream="therock-preview")

    for v in m.vllm:
        vid = node(
            f"vllm:{v.version}", "vllm", version=str(v.version), confidence=v.provenance.confidence
        )
        for st in v.stacks:
            prov = st.provenance
            sid = node(
                f"stack:{v.version}:{st.variant}",
                "stack",
                variant=st.variant,
                default=st.default,
                preview=st.preview,
                layout=st.layout,
                base_image=st.base_image,
            )
            edge(vid, sid, "built-with", prov.source, prov.confidence)
            if st.rocm is not None:
                edge(sid, rocm_node(st.rocm), "built-with", prov.source, prov.confidence)
            for name in st.arch:
                edge(sid, f"gfx:{name}", "supports", prov.source, prov.confidence)
            for p in st.pins:
                pid = node(
                    f"pin:{p.component}:{p.repo}@{p.ref}",
                    "pin",
                    component=p.component,
                    repo=p.repo,
                    ref=p.ref,
                    moving=p.moving,
                )
                edge(sid, pid, "pins", prov.source, prov.confidence)
    for i in m.images:
        iid = node(
            f"image:{i.repo}:{i.tag}",
            "image",
            repo=i.repo,
            tag=i.tag,
            digest=i.digest,
            deprecated=i.deprecated,
        )
        if i.vllm is not None:
            node(f"vllm:{i.vllm}", "vllm", version=str(i.vllm))
            edge(iid, f"vllm:{i.vllm}", "built-with", i.provenance.source, i.provenance.confidence)
            if i.stack is not None and g.has_node(f"stack:{i.vllm}:{i.stack}"):
                edge(
                    iid,
                    f"stack:{i.vllm}:{i.stack}",
                    "built-with",
                    i.provenance.source,
                    i.provenance.confidence,
                )
        if i.rocm is not None:
            edge(
                iid,
                f"rocm:{m.rocm_release(i.rocm).version}",  # type: ignore[union-attr]
                "built-with",
                i.provenance.source,
                i.provenance.confidence,
            )
        for name in i.arch:
            edge(iid, f"gfx:{name}", "supports", i.provenance.source, i.provenance.confidence)
    for w in m.wheels:
        wid = node(
            f"wheel:{w.name}",
            "wheel",
            python=list(w.python),
            glibc_min=str(w.glibc_min),
            status=w.status,
        )
        edge(
            wid,
            f"rocm:{m.rocm_release(w.rocm).version}",  # type: ignore[union-attr]
            "built-with",
            w.provenance.source,
            w.provenance.confidence,
        )
        for v in m.vllm:
            if w.vllm is not None and w.vllm.contains(v.version):
                edge(
                    wid,
                    f"vllm:{v.version}",
                    "built-with",
                    w.provenance.source,
                    w.provenance.confidence,
                )
        for name in w.arch:
            edge(wid, f"gfx:{name}", "supports", w.provenance.source, w.provenance.confidence)
        for o in m.os:
            if o.glibc is not None and o.glibc >= w.glibc_min:
                edge(wid, f"os:{o.id}", "requires", w.provenance.source, w.provenance.confidence)
    return g


_ARTIFACTS = ("vllm", "stack", "image", "wheel")


def subgraph(
    g: nx.MultiDiGraph, *, gfx: str | None = None, vllm: Any = None, stack: str | None = None
) -> nx.MultiDiGraph:
    """The part of the graph about one GPU, a vLLM spec and/or a stack variant: the artifacts that
    match (for ``gfx``, an image, wheel or stack whose own arch list holds it; a release through its
    stacks) and everything they reach, every edge keeping its source and confidence."""
    keep: set[str] = set()
    for n, attrs in g.nodes(data=True):
        kind = attrs["type"]
        if kind not in _ARTIFACTS:
            continue
        version = (
            attrs.get("version") if kind == "vllm" else n.split(":")[1] if kind == "stack" else None
        )
        if (
            vllm is not None
            and kind in ("vllm", "stack")
            and (version is None or not vllm.contains(version, prereleases=True))
        ):
            continue
        if stack is not None and kind == "stack" and attrs.get("variant") != stack:
            continue
        if stack is not None and kind == "vllm":
            continue  # reached through its matching stacks
        if (
            stack is not None
            and kind in ("image", "wheel")
            and not any(
                b.startswith("stack:") and g.nodes[b].get("variant") == stack
                for _, b in g.out_edges(n)
            )
        ):
            continue
        # An artifact's own arch list decides (a release is kept through its stacks).
        supported = {b for _, b, k in g.out_edges(n, keys=True) if k == "supports"}
        if gfx is not None and kind != "vllm" and f"gfx:{gfx}" not in supported:
            continue
        releases = [b.split(":", 1)[1] for _, b in g.out_edges(n) if b.startswith("vllm:")]
        if (
            vllm is not None
            and kind in ("image", "wheel")
            and not any(vllm.contains(r, prereleases=True) for r in releases)
        ):
            continue
        keep.add(n)
    if stack is not None or gfx is not None:
        keep |= {
            a
            for a, b in g.edges()
            if g.nodes[a]["type"] == "vllm" and b in keep and g.nodes[b]["type"] == "stack"
        }
    reach: set[str] = set(keep)
    for n in keep:
        reach |= {b for _, b in g.out_edges(n) if g.nodes[b]["type"] not in _ARTIFACTS or b in keep}
    out: nx.MultiDiGraph = g.subgraph(reach).copy()
    return out


def to_json(g: nx.MultiDiGraph) -> dict[str, Any]:
    return {
        "nodes": [{"id": n, **attrs} for n, attrs in sorted(g.nodes(data=True))],
        "edges": [
            {"from": a, "to": b, **attrs}
            for a, b, attrs in sorted(
                g.edges(data=True), key=lambda e: (e[0], e[1], e[2]["relation"])
            )
        ],
    }


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(g: nx.MultiDiGraph) -> str:
    shapes = {
        "rocm": "box",
        "driver": "hexagon",
        "gfx": "ellipse",
        "vllm": "box3d",
        "image": "component",
        "wheel": "folder",
        "pin": "note",
        "os": "cylinder",
    }
    lines = ["digraph compatibility {", "  rankdir=LR;"]
    for n, attrs in sorted(g.nodes(data=True)):
        lines.append(f"  {_dot_id(n)} [shape={shapes.get(attrs.get('type', ''), 'plaintext')}];")
    for a, b, attrs in sorted(g.edges(data=True), key=lambda e: (e[0], e[1], e[2]["relation"])):
        lines.append(f"  {_dot_id(a)} -> {_dot_id(b)} [label={_dot_id(attrs['relation'])}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
