"""The compatibility graph: typed nodes from the model, typed edges, each edge with its source.

Node ids are ``<type>:<key>`` (``rocm:7.2.3``, ``gfx:gfx942``, ``vllm:0.24.0``, ``driver:30.30``,
``image:vllm/vllm-openai-rocm:v0.24.0``, ``wheel:rocm700``, ``pin:triton:ROCm/triton@ba5c1517``,
``os:ubuntu-22.04``). Edge ``relation`` is one of ``supports`` (driver -> ROCm user space,
ROCm/artifact -> gfx), ``runs-on`` (ROCm -> OS), ``built-with`` (vLLM/image/wheel -> ROCm,
image/wheel -> vLLM), ``pins`` (vLLM -> component pin), ``requires`` (wheel -> OS glibc floor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from resolver.model import Matrix, Provenance

Relation = Literal["supports", "runs-on", "built-with", "pins", "requires"]


@dataclass(frozen=True, slots=True)
class Edge:
    """One relation between two records, with the source and confidence of the record it is from."""

    src: str
    dst: str
    relation: Relation
    source: str
    confidence: str = "exact"


class Graph:
    """Nodes (id -> attributes, ``type`` always set) and edges, at most one per (src, dst,
    relation). A few hundred nodes: plain dicts, no graph library (networkx took 240 ms to import
    for a view the decision path never uses)."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self._out: dict[str, dict[tuple[str, str], Edge]] = {}

    def add_node(self, node_id: str, **attrs: Any) -> str:
        """Add a node or merge ``attrs`` into the one there."""
        self.nodes.setdefault(node_id, {}).update(attrs)
        return node_id

    def add_edge(self, edge: Edge) -> None:
        """Add an edge (a later one with the same src, dst and relation replaces it)."""
        for end in (edge.src, edge.dst):
            self.nodes.setdefault(end, {})
        self._out.setdefault(edge.src, {})[(edge.dst, edge.relation)] = edge

    @property
    def edges(self) -> list[Edge]:
        return [e for out in self._out.values() for e in out.values()]

    def out_edges(self, node_id: str) -> list[Edge]:
        return list(self._out.get(node_id, {}).values())

    def has_edge(self, src: str, dst: str, relation: Relation | None = None) -> bool:
        out = self._out.get(src, {})
        if relation is not None:
            return (dst, relation) in out
        return any(d == dst for d, _ in out)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def subgraph(self, keep: set[str]) -> Graph:
        """The nodes in ``keep`` and the edges between them."""
        sub = Graph()
        for n in keep:
            sub.add_node(n, **self.nodes[n])
        for e in self.edges:
            if e.src in keep and e.dst in keep:
                sub.add_edge(e)
        return sub


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
        self.g = Graph()

    def node(self, node_id: str, kind: str, **attrs: Any) -> str:
        kept = {k: v for k, v in attrs.items() if v is not None}
        return self.g.add_node(node_id, type=kind, **kept)

    def edge(self, a: str, b: str, relation: Relation, prov: Provenance) -> None:
        self.g.add_edge(Edge(a, b, relation, prov.source, prov.confidence))

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
                    pid = self.node(
                        f"pin:{p.component}:{p.repo}@{p.ref}",
                        "pin",
                        component=p.component,
                        repo=p.repo,
                        ref=p.ref,
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
                if i.stack is not None and f"stack:{i.vllm}:{i.stack}" in self.g:
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
                if w.vllm is not None and w.vllm.contains(v.version):
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
    stacks) and everything they reach, every edge keeping its source and confidence."""
    keep = {n for n in g.nodes if _matches(g, n, gfx=gfx, vllm=vllm, stack=stack)}
    if stack is not None or gfx is not None:
        keep |= {
            e.src
            for e in g.edges
            if g.nodes[e.src].get("type") == "vllm"
            and e.dst in keep
            and g.nodes[e.dst].get("type") == "stack"
        }
    reach: set[str] = set(keep)
    for n in keep:
        reach |= {
            e.dst
            for e in g.out_edges(n)
            if g.nodes[e.dst].get("type") not in _ARTIFACTS or e.dst in keep
        }
    return g.subgraph(reach)


def _matches(g: Graph, n: str, *, gfx: str | None, vllm: Any, stack: str | None) -> bool:
    """Is artifact ``n`` one the filters keep?"""
    attrs = g.nodes[n]
    kind = attrs.get("type")
    if kind not in _ARTIFACTS:
        return False
    out = g.out_edges(n)
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
            g.nodes[e.dst].get("type") == "stack" and g.nodes[e.dst].get("variant") == stack
            for e in out
        ):
            return False
    # An artifact's own arch list decides (a release is kept through its stacks).
    if gfx is not None and kind != "vllm" and not g.has_edge(n, f"gfx:{gfx}", "supports"):
        return False
    if vllm is not None and kind in ("image", "wheel"):
        releases = [e.dst.split(":", 1)[1] for e in out if e.dst.startswith("vllm:")]
        return any(vllm.contains(r, prereleases=True) for r in releases)
    return True


def to_json(g: Graph) -> dict[str, Any]:
    return {
        "nodes": [{"id": n, **attrs} for n, attrs in sorted(g.nodes.items())],
        "edges": [
            {
                "from": e.src,
                "to": e.dst,
                "relation": e.relation,
                "source": e.source,
                "confidence": e.confidence,
            }
            for e in _sorted_edges(g)
        ],
    }


def _sorted_edges(g: Graph) -> list[Edge]:
    return sorted(g.edges, key=lambda e: (e.src, e.dst, e.relation))


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(g: Graph) -> str:
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
    for n, attrs in sorted(g.nodes.items()):
        lines.append(f"  {_dot_id(n)} [shape={shapes.get(attrs.get('type', ''), 'plaintext')}];")
    for e in _sorted_edges(g):
        lines.append(f"  {_dot_id(e.src)} -> {_dot_id(e.dst)} [label={_dot_id(e.relation)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
