"""The compatibility graph built from the data."""

from __future__ import annotations

import json

from resolver import graph, matrix

M = matrix.load()
G = graph.build(M)


def test_typed_nodes_for_every_record() -> None:
    types = {attrs["type"] for _, attrs in G.nodes(data=True)}
    assert types == {"rocm", "driver", "gfx", "vllm", "image", "wheel", "pin", "os"}
    assert G.nodes["gfx:gfx942"]["vllm_status"] == "official"


def test_edges_carry_relation_and_source() -> None:
    for _, _, attrs in G.edges(data=True):
        assert attrs["relation"] in {"supports", "runs-on", "built-with", "pins", "requires"}
        assert attrs["source"]


def test_driver_to_rocm_edges_follow_the_table() -> None:
    assert G.has_edge("driver:30.30", "rocm:7.2.3")
    assert not G.has_edge("driver:6.1", "rocm:7.2.3")
    assert G.has_edge("driver:6.1", "rocm:6.4.3")


def test_release_pins_and_images() -> None:
    pins = [b for _, b, k in G.out_edges("vllm:0.10.0", keys=True) if k == "pins"]
    assert "pin:aiter:ROCm/aiter@916bf3c" in pins
    assert G.has_edge("image:vllm/vllm-openai-rocm:v0.24.0", "rocm:7.2.3")
    assert G.has_edge("image:vllm/vllm-openai-rocm:v0.24.0", "gfx:gfx942")


def test_exports() -> None:
    data = graph.to_json(G)
    assert len(data["nodes"]) == G.number_of_nodes() and len(data["edges"]) == G.number_of_edges()
    json.dumps(data)
    dot = graph.to_dot(G)
    assert dot.startswith("digraph compatibility {") and '"driver:30.30" -> "rocm:7.2.3"' in dot
