"""The compatibility graph built from the data."""

from __future__ import annotations

import json

from resolver.data import graph, matrix

M = matrix.load()
G = graph.build(M)


def test_typed_nodes_for_every_record() -> None:
    import networkx as nx

    assert isinstance(G, nx.MultiDiGraph)  # networkx is the graph (issue 22)
    types = {attrs["type"] for _, attrs in G.nodes(data=True)}
    assert types == {"rocm", "driver", "gfx", "vllm", "stack", "image", "wheel", "pin", "os"}
    assert G.nodes["gfx:gfx942"]["vllm_status"] == "official"


def test_edges_carry_relation_and_source() -> None:
    for e in graph.edges(G):
        assert e.relation in {"supports", "runs-on", "built-with", "pins", "requires"}
        assert e.source


def test_driver_to_rocm_edges_follow_the_table() -> None:
    assert graph.has_edge(G, "driver:30.30", "rocm:7.2.3", "supports")
    assert not G.has_edge("driver:6.1", "rocm:7.2.3")
    assert G.has_edge("driver:6.1", "rocm:6.4.3")


def test_release_pins_and_images() -> None:
    assert G.has_edge("vllm:0.10.0", "stack:0.10.0:rocm63")
    pins = [e.dst for e in graph.out_edges(G, "stack:0.10.0:rocm63") if e.relation == "pins"]
    assert "pin:aiter:ROCm/aiter@916bf3c" in pins
    assert G.has_edge("image:vllm/vllm-openai-rocm:v0.24.0", "rocm:7.2.3")
    assert G.has_edge("image:vllm/vllm-openai-rocm:v0.24.0", "gfx:gfx942")


def test_exports() -> None:
    import networkx as nx

    data = graph.to_json(G)
    assert len(data["nodes"]) == len(G.nodes) and len(data["edges"]) == len(G.edges)
    back = nx.node_link_graph(
        json.loads(json.dumps(data)), source="from", target="to", edges="edges", key="relation"
    )
    assert set(back.nodes) == set(G.nodes) and back.number_of_edges() == G.number_of_edges()
    dot = graph.to_dot(G)
    assert dot.startswith("digraph compatibility {") and '"driver:30.30" -> "rocm:7.2.3"' in dot
    assert "tooltip=" in dot  # every edge carries its source
    import io

    read = nx.read_graphml(io.BytesIO(graph.to_graphml(G).encode()))
    assert set(read.nodes) == set(G.nodes) and read.number_of_edges() == G.number_of_edges()
    edge = next(d for a, b, d in read.edges(data=True) if (a, b) == ("driver:30.30", "rocm:7.2.3"))
    assert edge["relation"] == "supports" and edge["source"]


def test_stacks_of_the_newest_release_and_filters() -> None:
    from resolver.util.versions import parse_spec

    from .conftest import LIVE_MATRIX

    live = graph.build(matrix.load_dir(LIVE_MATRIX))
    assert live.has_edge("vllm:0.33.0", "stack:0.33.0:rocm100")
    assert live.has_edge("stack:0.33.0:rocm100", "rocm:10.0.0")
    assert live.has_edge("stack:0.33.0:gfx1250", "rocm:10.1.0a20260822")
    assert live.nodes["stack:0.33.0:gfx1250"]["preview"] is True
    assert live.has_edge("image:vllm/vllm-openai-rocm:v0.33.0-rocm72", "stack:0.33.0:rocm72")
    sub = graph.subgraph(live, gfx="gfx942", vllm=parse_spec("==0.33.0"), stack="rocm72")
    stacks = {n for n, a in sub.nodes(data=True) if a["type"] == "stack"}
    assert stacks == {"stack:0.33.0:rocm72"}
    assert "rocm:7.2.3" in sub and "vllm:0.33.0" in sub and "rocm:10.0.0" not in sub
    assert all(e.source for e in graph.edges(sub))
    # Issue 22: a filter keeps what bears on the answer: the drivers that run the ROCm kept.
    assert "driver:30.30" in sub and "driver:6.4" in sub and "driver:6.1" not in sub
    only_1250 = graph.subgraph(live, gfx="gfx1250")
    assert {n for n, a in only_1250.nodes(data=True) if a["type"] == "stack"} >= {
        "stack:0.33.0:gfx1250"
    }
    assert not any(n.startswith("image:") for n in only_1250.nodes)


def test_one_node_per_commit_and_paths_between_records() -> None:
    """Issue 22: ROCm/triton 669b31a and 669b31ac were two nodes; --path explains how a driver
    and a release meet, every hop with its source."""
    from .conftest import LIVE_MATRIX

    live = graph.build(matrix.load_dir(LIVE_MATRIX))
    triton = sorted(
        a["ref"]
        for _, a in live.nodes(data=True)
        if a.get("type") == "pin"
        and a.get("repo") == "ROCm/triton"
        and a["ref"].startswith("669b31a")
    )
    assert triton == ["669b31ac"]
    found = graph.paths(live, "driver:6.4", "vllm:0.33.0")
    assert found and all(e.source for hops in found for e in hops)
    shortest = found[0]
    assert len(shortest) == 3 and shortest[0].src == "driver:6.4"


def test_a_plain_check_imports_neither_networkx_nor_the_graph() -> None:
    import os
    import subprocess
    import sys

    code = (
        "import sys, runpy\n"
        "sys.argv = ['rocm-vllm', 'check', '--gfx', 'gfx942', '--gpus', '8', '--driver', "
        "'30.30.3', '--json']\n"
        "try:\n    runpy.run_module('resolver', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('networkx' in sys.modules, 'resolver.data.graph' in sys.modules, file=sys.stderr)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, check=False
    )
    assert run.stderr.strip().splitlines()[-1] == "False False", run.stderr


def test_matrix_graph_path_on_the_command_line() -> None:
    from .conftest import LIVE_MATRIX
    from .helpers import run_cli

    env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    out = run_cli("matrix", "graph", "--path", "driver:6.4", "vllm:0.33.0", "--json", env=env)
    assert out.exit_code == 0
    data = json.loads(out.stdout)
    assert data["paths"] and all(hop["source"] for hops in data["paths"] for hop in hops)
    text = run_cli("matrix", "graph", "--path", "driver:6.4", "vllm:0.33.0", env=env)
    assert text.stdout.startswith("1. driver:6.4 - rocm:")
    bad = run_cli("matrix", "graph", "--path", "nope:1", "vllm:0.33.0", env=env)
    assert bad.exit_code == 2 and "no record 'nope:1'" in bad.stderr
