"""The compatibility graph: typed nodes from the model, typed edges, each edge with its source.

Node ids are ``<type>:<key>`` (``rocm:7.2.3``, ``gfx:gfx942``, ``vllm:0.24.0``, ``driver:30.30``,
``image:vllm/vllm-openai-rocm:v0.24.0``, ``wheel:rocm700``, ``pin:triton:ROCm/triton@ba5c1517``,
``os:ubuntu-22.04``). Edge ``relation`` is one of ``supports`` (driver -> ROCm user space,
ROCm/artifact -> gfx), ``runs-on`` (ROCm -> OS), ``built-with`` (vLLM/image/wheel -> ROCm,
image/wheel -> vLLM), ``pins`` (vLLM -> component pin), ``requires`` (wheel -> OS glibc floor).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import networkx as nx

from resolver.data.model import Matrix, Provenance

# A networkx MultiDiGraph (node ids -> attribute dicts; one edge per relation, keyed by it).
# networkx ships no type hints, so to mypy it is Any.
Graph: TypeAlias = Any

Relation = Literal["supports", "runs-on", "built-with", "pins", "requires"]


@dataclass(frozen=True, slots=True)
class Edge:
    """One relation between two records, with the source and confidence of the record it is from
    (a typed view of one networkx edge: its key is the relation)."""

    src: str
    dst: str
    relation: Relation
    source: str
    confidence: str = "exact"

    def to_json(self) -> dict[str, str]:
        return {
            "from": self.src,
            "to": self.dst,
            "relation": self.relation,
            "source": self.source,
            "confidence": self.confidence,
        }


def edges(g: Graph, nodes: Iterable[str] | None = None) -> list[Edge]:
    """Every edge (or those out of ``nodes``) as typed records, in a stable order."""
    found = (
        g.out_edges(nodes, keys=True, data=True)
        if nodes is not None
        else g.edges(keys=True, data=True)
    )
    out = [Edge(a, b, k, d.get("source", ""), d.get("confidence", "exact")) for a, b, k, d in found]
    return sorted(out, key=lambda e: (e.src, e.dst, e.relation))


def out_edges(g: Graph, node_id: str) -> list[Edge]:
    return edges(g, [node_id])


def has_edge(g: Graph, src: str, dst: str, relation: Relation | None = None) -> bool:
    found = g.has_edge(src, dst, key=relation) if relation is not None else g.has_edge(src, dst)
    return bool(found)


def build(m: Matrix) -> Graph:
    """The graph of the data: every record a typed node, every relation an edge with its source."""
    b = _Builder(m)
    b.platform()
    b.releases()
    b.images()
    b.wheels()
    return b.g


class _Builder:
    """Adds the data's records to a graph, one table at a time."""

    def __init__(self, m: Matrix) -> None:
        self.m = m
        self.g: Graph = nx.MultiDiGraph()

    def node(self, node_id: str, kind: str, **attrs: Any) -> str:
        kept = {k: v for k, v in attrs.items() if v is not None}
        if node_id in self.g:
            self.g.nodes[node_id].update(kept)
        else:
            self.g.add_node(node_id, type=kind, **kept)
        return node_id

    def edge(self, a: str, b: str, relation: Relation, prov: Provenance) -> None:
        # One edge per (a, b, relation): its key is the relation; a later record replaces it.
        for end in (a, b):
            if end not in self.g:
                self.g.add_node(end)
        self.g.add_edge(a, b, key=relation, source=prov.source, confidence=prov.confidence)

    def rocm_node(self, version: Any) -> str:
        rel = self.m.rocm_release(version)
        if rel is not None:
            return f"rocm:{rel.version}"
        # A nightly a stack builds on (7.14.0a20260623) has no release record: its own node.
        return self.node(f"rocm:{version}", "rocm", version=str(version), stream="therock-preview")

    def platform(self) -> None:
        """GPUs, OS releases, ROCm releases (what they support and run on) and drivers."""
        m = self.m
        for t in m.gfx:
            self.node(
                f"gfx:{t.name}",
                "gfx",
                arch=t.arch,
                families=list(t.families),
                vllm_status=t.vllm_status,
            )
        for o in m.os:
            self.node(f"os:{o.id}", "os", name=o.name, glibc=str(o.glibc) if o.glibc else None)
        for r in m.rocm:
            rid = self.node(
                f"rocm:{r.version}", "rocm", version=str(r.version), stream=r.stream, date=r.date
            )
            for name in r.gfx:
                self.edge(rid, f"gfx:{name}", "supports", r.provenance)
            for os_id in r.os:
                runs_on = m.os_listed_as(os_id)
                if runs_on is not None:
                    self.edge(rid, f"os:{runs_on.id}", "runs-on", r.provenance)
        for d in m.drivers:
            did = self.node(f"driver:{d.series}", "driver", series=d.series)
            for r in m.rocm:
                if d.runs(r.version):
                    self.edge(did, f"rocm:{r.version}", "supports", d.provenance)

    def releases(self) -> None:
        """vLLM releases, their ROCm stacks, and what each stack builds on, supports and pins."""
        for v in self.m.vllm:
            vid = self.node(
                f"vllm:{v.version}",
                "vllm",
                version=str(v.version),
                confidence=v.provenance.confidence,
            )
            for st in v.stacks:
                prov = st.provenance
                sid = self.node(
                    f"stack:{v.version}:{st.variant}",
                    "stack",
                    variant=st.variant,
                    default=st.default,
                    preview=st.preview,
                    layout=st.layout,
                    base_image=st.base_image,
                )
                self.edge(vid, sid, "built-with", prov)
                if st.rocm is not None:
                    self.edge(sid, self.rocm_node(st.rocm), "built-with", prov)
                for name in st.arch:
                    self.edge(sid, f"gfx:{name}", "supports", prov)
                for p in st.pins:
                    # One node per commit: the loader already spells each commit once
                    # (data.build.one_record_per_commit: 669b31a -> 669b31ac).
                    ref = p.ref
                    pid = self.node(
                        f"pin:{p.component}:{p.repo}@{ref}",
                        "pin",
                        component=p.component,
                        repo=p.repo,
                        ref=ref,
                        moving=p.moving,
                    )
                    self.edge(sid, pid, "pins", prov)

    def images(self) -> None:
        for i in self.m.images:
            iid = self.node(
                f"image:{i.repo}:{i.tag}",
                "image",
                repo=i.repo,
                tag=i.tag,
                digest=i.digest,
                deprecated=i.deprecated,
            )
            if i.vllm is not None:
                self.node(f"vllm:{i.vllm}", "vllm", version=str(i.vllm))
                self.edge(iid, f"vllm:{i.vllm}", "built-with", i.provenance)
                if i.stack is not None and f"stack:{i.vllm}:{i.stack}" in self.g.nodes:
                    self.edge(iid, f"stack:{i.vllm}:{i.stack}", "built-with", i.provenance)
            if i.rocm is not None:
                self.edge(iid, self.rocm_node(i.rocm), "built-with", i.provenance)
            for name in i.arch:
                self.edge(iid, f"gfx:{name}", "supports", i.provenance)

    def wheels(self) -> None:
        m = self.m
        for w in m.wheels:
            wid = self.node(
                f"wheel:{w.name}",
                "wheel",
                python=list(w.python),
                glibc_min=str(w.glibc_min),
                status=w.status,
            )
            self.edge(wid, self.rocm_node(w.rocm), "built-with", w.provenance)
            for v in m.vllm:
                if v.version in w.releases:
                    self.edge(wid, f"vllm:{v.version}", "built-with", w.provenance)
            for name in w.arch:
                self.edge(wid, f"gfx:{name}", "supports", w.provenance)
            for o in m.os:
                if o.glibc is not None and o.glibc >= w.glibc_min:
                    self.edge(wid, f"os:{o.id}", "requires", w.provenance)


_ARTIFACTS = ("vllm", "stack", "image", "wheel")


def subgraph(
    g: Graph, *, gfx: str | None = None, vllm: Any = None, stack: str | None = None
) -> Graph:
    """The part of the graph about one GPU, a vLLM spec and/or a stack variant: the artifacts that
    match (for ``gfx``, an image, wheel or stack whose own arch list holds it; a release through its
    stacks), everything they reach, and what bears on them from outside (the drivers that run the
    ROCm releases kept, and through those the OS releases), every edge keeping its source and
    confidence."""
    keep = {n for n in g.nodes if _matches(g, n, gfx=gfx, vllm=vllm, stack=stack)}
    if stack is not None or gfx is not None:
        keep |= {
            a
            for a, b in g.in_edges(keep)
            if g.nodes[a].get("type") == "vllm" and g.nodes[b].get("type") == "stack"
        }
    reach: set[str] = set(keep)
    for n in keep:
        reach |= {
            b for b in g.successors(n) if g.nodes[b].get("type") not in _ARTIFACTS or b in keep
        }
    rocm = {n for n in reach if g.nodes[n].get("type") == "rocm"}
    drivers = {a for a, _ in g.in_edges(rocm) if g.nodes[a].get("type") == "driver"}
    reach |= drivers
    reach |= {b for n in rocm for b in g.successors(n) if g.nodes[b].get("type") == "os"}
    if gfx is not None:  # the other targets the kept records list bear not on this one
        reach = {n for n in reach if g.nodes[n].get("type") != "gfx" or n == f"gfx:{gfx}"}
    return g.subgraph(reach).copy()


def _matches(g: Graph, n: str, *, gfx: str | None, vllm: Any, stack: str | None) -> bool:
    """Is artifact ``n`` one the filters keep?"""
    attrs = g.nodes[n]
    kind = attrs.get("type")
    if kind not in _ARTIFACTS:
        return False
    succ = list(g.successors(n))
    if vllm is not None and kind in ("vllm", "stack"):
        version = attrs.get("version") if kind == "vllm" else n.split(":")[1]
        if version is None or not vllm.contains(version, prereleases=True):
            return False
    if stack is not None:
        if kind == "vllm":
            return False  # reached through its matching stacks
        if kind == "stack" and attrs.get("variant") != stack:
            return False
        if kind in ("image", "wheel") and not any(
            g.nodes[b].get("type") == "stack" and g.nodes[b].get("variant") == stack for b in succ
        ):
            return False
    # An artifact's own arch list decides (a release is kept through its stacks).
    if gfx is not None and kind != "vllm" and not g.has_edge(n, f"gfx:{gfx}", key="supports"):
        return False
    if vllm is not None and kind in ("image", "wheel"):
        releases = [b.split(":", 1)[1] for b in succ if b.startswith("vllm:")]
        return any(vllm.contains(r, prereleases=True) for r in releases)
    return True


def to_json(g: Graph) -> dict[str, Any]:
    """networkx's node-link form, with the endpoints named ``from``/``to`` (an edge's ``source``
    is where its fact comes from) and the relation as the edge key:
    ``nx.node_link_graph(data, source="from", target="to", edges="edges", key="relation")``
    reads it back."""
    return {
        "directed": True,
        "multigraph": True,
        "graph": {},
        "nodes": [{"id": n, **attrs} for n, attrs in sorted(g.nodes(data=True))],
        "edges": [e.to_json() for e in edges(g)],
    }


def to_graphml(g: Graph) -> str:
    """GraphML (Gephi, Cytoscape, ``nx.read_graphml``): lists become comma-separated text, as
    GraphML attributes are scalars."""
    flat: Graph = nx.MultiDiGraph()
    for n, attrs in g.nodes(data=True):
        flat.add_node(_xml(n), **{k: _scalar(v) for k, v in attrs.items()})
    for a, b, k, d in g.edges(keys=True, data=True):
        flat.add_edge(
            _xml(a), _xml(b), key=_xml(k), relation=_xml(k), **{x: _scalar(v) for x, v in d.items()}
        )
    return "\n".join(nx.generate_graphml(flat)) + "\n"


# What XML 1.0 cannot carry at all, escaped or not (C0 controls but tab and line breaks, lone
# surrogates, U+FFFE and U+FFFF): written as text, so the document stays well-formed.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", value)


def _scalar(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return _xml(",".join(str(v) for v in value))
    return _xml(value)


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(g: Graph) -> str:
    """Graphviz DOT: node shapes by type; each edge labelled with its relation and carrying its
    source and confidence (``tooltip``, shown on hover in SVG output)."""
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
    for e in edges(g):
        said = f"{e.source} ({e.confidence})"
        lines.append(
            f"  {_dot_id(e.src)} -> {_dot_id(e.dst)} [label={_dot_id(e.relation)}, "
            f"tooltip={_dot_id(said)}];"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


MAX_PATHS = 20
PATH_CUTOFF = 6

# Records with their own arch list: what they run on is that list, not what their ROCm supports.
_OWN_ARCH = frozenset({"stack", "image", "wheel"})
# What many records share: two records meet at one only when each names it itself ("both run on
# gfx942"), not when one reaches it through another (a driver's ROCm supports it, an image's arch
# list names it: nothing ties the driver to the image).
_TRAITS = frozenset({"gfx", "os"})


@dataclass(frozen=True, slots=True)
class GraphPath:
    """One way two records are related: the hops in reading order (``hops[0]`` touches the
    first record), each the data's edge as it is (``src -> dst``) with its source, and the
    record where the two sides meet (``via``; the far end when one reaches the other)."""

    hops: tuple[Edge, ...]
    walk: tuple[str, ...]
    via: str

    def to_json(self) -> dict[str, Any]:
        return {"walk": list(self.walk), "via": self.via, "hops": [e.to_json() for e in self.hops]}


@dataclass(frozen=True, slots=True)
class GraphPaths:
    """The paths found (at most ``MAX_PATHS``, shortest first) and how many more there were."""

    found: tuple[GraphPath, ...]
    omitted: int = 0


def _kind(g: Graph, n: str) -> str:
    return str(g.nodes[n].get("type", ""))


def _meaningful(g: Graph, leg: list[str]) -> bool:
    """Does a chain of edges (``leg[0] -> leg[1] -> ...``) say something about its ends? Not when
    it runs from an artifact through its ROCm to a gfx target (the artifact's own arch list says
    what it runs on), nor from an image or wheel through its release into the release's other
    stacks (``vllm -> stack`` only starts a chain)."""
    kinds = [_kind(g, n) for n in leg]
    for i in range(1, len(leg)):
        a, b = kinds[i - 1], kinds[i]
        if a == "rocm" and b == "gfx" and any(k in _OWN_ARCH for k in kinds[: i - 1]):
            return False
        if a == "vllm" and b == "stack" and i > 1:
            return False
    return True


def _legs(g: Graph, start: str, *, forward: bool) -> dict[str, list[list[str]]]:
    """The shortest meaningful chains of edges from ``start`` to each record it reaches
    (``forward``), or to ``start`` from each record that reaches it, keyed by that record; every
    chain is written along its edges."""
    best: dict[str, list[list[str]]] = {start: [[start]]}
    frontier = [[start]]
    for _ in range(PATH_CUTOFF):
        grown: list[list[str]] = []
        for leg in frontier:
            tip = leg[-1] if forward else leg[0]
            for nxt in g.successors(tip) if forward else g.predecessors(tip):
                if nxt in leg:
                    continue
                cand = [*leg, nxt] if forward else [nxt, *leg]
                have = best.get(nxt)
                if have is not None and len(have[0]) < len(cand):
                    continue  # a shorter chain already reaches it
                if not _meaningful(g, cand):
                    continue
                best.setdefault(nxt, []).append(cand)
                grown.append(cand)
        frontier = grown
    return best


def _nearest(g: Graph, meets: set[str], *, down: bool) -> set[str]:
    """The meeting records nearest the two ends: a shared descendant is dropped when another one
    reaches it (``driver:6.4`` and ``vllm:0.33.0`` meet at ROCm 7.2.3, not at every gfx target
    ROCm 7.2.3 supports); a shared ancestor when it reaches another one."""
    below = {m: nx.descendants(g, m) & meets for m in meets}
    if down:
        return {m for m in meets if not any(m in below[o] for o in meets)}
    return {m for m in meets if not below[m]}


def _along(g: Graph, walk: list[str]) -> list[Edge]:
    """The data's edge under each step of a walk (a step may run against its edge)."""
    return [_hop(g, a, b) for a, b in itertools.pairwise(walk)]


def _hop(g: Graph, a: str, b: str) -> Edge:
    forward = g.get_edge_data(a, b)
    if forward:
        key, data = min(forward.items())
        return Edge(a, b, key, data.get("source", ""), data.get("confidence", "exact"))
    key, data = min((g.get_edge_data(b, a) or {}).items())
    return Edge(b, a, key, data.get("source", ""), data.get("confidence", "exact"))


def paths(g: Graph, start: str, end: str) -> GraphPaths:
    """The ways two records are related, read along the meaning of the edges: one reaches the other
    (``vllm:0.33.0 -> stack:0.33.0:rocm72 -> gfx:gfx942``), both reach a record
    (``driver:6.4 -> rocm:7.2.3 <- stack:0.33.0:rocm72 <- vllm:0.33.0``), or one record reaches
    both (``gfx:gfx942 <- image:...:v0.33.0 -> vllm:0.33.0``), meeting at the nearest such
    records. A chain never runs through a gfx target, an OS or a release into unrelated ones, nor
    from an artifact through its ROCm to a gfx its own arch list lacks. At most ``MAX_PATHS``
    (shortest first), each at most ``PATH_CUTOFF`` hops a side; no path when none is meaningful."""
    if start == end:
        return GraphPaths(())
    down_a, down_b = _legs(g, start, forward=True), _legs(g, end, forward=True)
    up_a, up_b = _legs(g, start, forward=False), _legs(g, end, forward=False)
    walks: list[tuple[list[str], str]] = []  # (the records from start to end, where they meet)
    # One end reaches the other: the chain itself, read from the start.
    walks += [(leg, end) for leg in down_a.get(end, [])]
    walks += [(leg[::-1], start) for leg in down_b.get(start, [])]
    ends = {start, end}
    # Both reach a record: start -> ... -> m <- ... <- end.
    for m in sorted(_nearest(g, (set(down_a) & set(down_b)) - ends, down=True)):
        walks += [
            (a + b[::-1][1:], m)
            for a in down_a[m]
            for b in down_b[m]
            if _kind(g, m) not in _TRAITS or len(a) == len(b) == 2
        ]
    # A record reaches both: start <- ... <- m -> ... -> end.
    for m in sorted(_nearest(g, (set(up_a) & set(up_b)) - ends, down=False)):
        walks += [(a[::-1] + b[1:], m) for a in up_a[m] for b in up_b[m]]
    found = [GraphPath(tuple(_along(g, w)), tuple(w), via) for w, via in walks]
    # Shortest first; of equal length, one end reaching the other before a meeting.
    found.sort(key=lambda p: (len(p.hops), p.via not in ends, p.walk))
    return GraphPaths(tuple(found[:MAX_PATHS]), max(0, len(found) - MAX_PATHS))


def arrows(p: GraphPath) -> str:
    """A path's walk with each hop's direction: ``a -> b`` along the edge, ``a <- b`` against."""
    out = [p.walk[0]]
    for here, e in zip(p.walk[1:], p.hops, strict=True):
        out.append(("-> " if e.dst == here else "<- ") + here)
    return " ".join(out)
