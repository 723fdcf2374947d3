"""The compatibility graph built from the data."""

from __future__ import annotations

import json

from resolver import graph, matrix

M = matrix.load()
G = graph.build(M)


def test_typed_nodes_for_every_record() -> None:
    types = {attrs["type"] for attrs in G.nodes.values()}
    assert types == {"rocm", "driver", "gfx", "vllm", "stack", "image", "wheel", "pin", "os"}
    assert G.nodes["gfx:gfx942"]["vllm_status"] == "official"


def test_edges_carry_relation_and_source() -> None:
    for e in G.edges:
        assert e.relation in {"supports", "runs-on", "built-with", "pins", "requires"}
        assert e.source


def test_driver_to_rocm_edges_follow_the_table() -> None:
    assert G.has_edge("driver:30.30", "rocm:7.2.3")
    assert not G.has_edge("driver:6.1", "rocm:7.2.3")
    assert G.has_edge("driver:6.1", "rocm:6.4.3")


def test_release_pins_and_images() -> None:
    assert G.has_edge("vllm:0.10.0", "stack:0.10.0:rocm63")
    pins = [e.dst for e in G.out_edges("stack:0.10.0:rocm63") if e.relation == "pins"]
    assert "pin:aiter:ROCm/aiter@916bf3c" in pins
    assert G.has_edge("image:vllm/vllm-openai-rocm:v0.24.0", "rocm:7.2.3")
    assert G.has_edge("image:vllm/vllm-openai-rocm:v0.24.0", "gfx:gfx942")


def test_exports() -> None:
    data = graph.to_json(G)
    assert len(data["nodes"]) == len(G.nodes) and len(data["edges"]) == len(G.edges)
    json.dumps(data)
    dot = graph.to_dot(G)
    assert dot.startswith("digraph compatibility {") and '"driver:30.30" -> "rocm:7.2.3"' in dot


def test_stacks_of_the_newest_release_and_filters() -> None:
    from resolver.versions import parse_spec

    from .conftest import LIVE_MATRIX

    live = graph.build(matrix.load_dir(LIVE_MATRIX))
    assert live.has_edge("vllm:0.33.0", "stack:0.33.0:rocm100")
    assert live.has_edge("stack:0.33.0:rocm100", "rocm:10.0.0")
    assert live.has_edge("stack:0.33.0:gfx1250", "rocm:10.1.0a20260822")
    assert live.nodes["stack:0.33.0:gfx1250"]["preview"] is True
    assert live.has_edge("image:vllm/vllm-openai-rocm:v0.33.0-rocm72", "stack:0.33.0:rocm72")
    sub = graph.subgraph(live, gfx="gfx942", vllm=parse_spec("==0.33.0"), stack="rocm72")
    stacks = {n for n, a in sub.nodes.items() if a["type"] == "stack"}
    assert stacks == {"stack:0.33.0:rocm72"}
    assert "rocm:7.2.3" in sub and "vllm:0.33.0" in sub and "rocm:10.0.0" not in sub
    assert all(e.source for e in sub.edges)
    only_1250 = graph.subgraph(live, gfx="gfx1250")
    assert {n for n, a in only_1250.nodes.items() if a["type"] == "stack"} >= {
        "stack:0.33.0:gfx1250"
    }
    assert not any(n.startswith("image:") for n in only_1250.nodes)
