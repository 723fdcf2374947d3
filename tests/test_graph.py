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
    # Issue 34: --gfx gfx942 kept 8 other gfx targets (those its stacks and ROCm list too).
    assert {n for n, a in sub.nodes(data=True) if a.get("type") == "gfx"} == {"gfx:gfx942"}
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
    found = graph.paths(live, "driver:6.4", "vllm:0.33.0").found
    assert found and all(e.source for p in found for e in p.hops)
    shortest = found[0]
    assert len(shortest.hops) == 3 and shortest.hops[0].src == "driver:6.4"


def test_paths_follow_the_meaning_of_the_edges() -> None:
    """Issue 34: --path listed 20 undirected detours (driver:6.4 - rocm:6.1.0 - gfx:gfx942 -
    stack:0.33.0:rocm72 ...). A driver meets a release at the ROCm releases its stacks build on; a
    gfx target reaches a release through the stacks, images and wheels that list it."""
    from .conftest import LIVE_MATRIX

    live = graph.build(matrix.load_dir(LIVE_MATRIX))
    driver = graph.paths(live, "driver:6.4", "vllm:0.33.0").found
    for p in driver:
        kinds = [live.nodes[n]["type"] for n in p.walk]
        assert kinds == ["driver", "rocm", "stack", "vllm"], p.walk
        # every stack on the way belongs to the release and builds on the ROCm the driver runs
        assert p.walk[2].startswith("stack:0.33.0:") and live.has_edge(p.walk[0], p.walk[1])
    assert graph.arrows(driver[0]).startswith("driver:6.4 -> rocm:")
    gfx = graph.paths(live, "gfx:gfx942", "vllm:0.33.0").found
    assert gfx[0].walk[1].startswith("stack:0.33.0:") and gfx[0].via == "gfx:gfx942"
    middles = {live.nodes[p.walk[1]]["type"] for p in gfx}
    assert middles == {"stack", "image", "wheel"} and all(len(p.hops) == 2 for p in gfx)
    for p in gfx:  # each middle record lists gfx942 itself
        assert live.has_edge(p.walk[1], "gfx:gfx942", key="supports")
    # No path wanders through a gfx target, an OS or a release it did not start or end at.
    for a, b in [
        ("driver:6.4", "vllm:0.33.0"),
        ("image:vllm/vllm-openai-rocm:v0.24.0", "driver:30.30"),
    ]:
        for p in graph.paths(live, a, b).found:
            assert not any(live.nodes[n]["type"] in ("gfx", "os") for n in p.walk[1:-1]), p.walk


def test_unrelated_records_have_no_path() -> None:
    """Issue 35: gfx906 is on no stack, image or wheel of 0.33.0; that its ROCm supports it is
    no relation (the stack's own arch list says what it runs on)."""
    from .conftest import LIVE_MATRIX

    live = graph.build(matrix.load_dir(LIVE_MATRIX))
    assert graph.paths(live, "gfx:gfx906", "vllm:0.33.0").found == ()
    many = graph.paths(live, "gfx:gfx942", "os:ubuntu-22.04")
    assert len(many.found) == graph.MAX_PATHS and many.omitted > 0


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
    assert data["paths"] and data["exit_code"] == 0
    assert all(hop["source"] for p in data["paths"] for hop in p["hops"])
    assert data["paths"][0]["walk"][0] == "driver:6.4"
    text = run_cli("matrix", "graph", "--path", "driver:6.4", "vllm:0.33.0", env=env)
    assert text.stdout.startswith("1. driver:6.4 -> rocm:")
    bad = run_cli("matrix", "graph", "--path", "nope:1", "vllm:0.33.0", env=env)
    assert bad.exit_code == 2 and "no record 'nope:1'" in bad.stderr


def test_unrelated_records_on_the_command_line() -> None:
    """Issue 35: exit 1 (not an internal error), and JSON under --json."""
    from .conftest import LIVE_MATRIX
    from .helpers import run_cli

    env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    ends = ("gfx:gfx906", "vllm:0.33.0")
    out = run_cli("matrix", "graph", "--path", *ends, "--json", env=env)
    assert out.exit_code == 1
    data = json.loads(out.stdout)
    assert data["paths"] == [] and data["exit_code"] == 1
    text = run_cli("matrix", "graph", "--path", *ends, env=env)
    assert text.exit_code == 1 and text.stdout.startswith("no path between")


def test_path_lines_fit_the_terminal() -> None:
    """Issue 34: --path lines were up to 704 characters; they wrap at COLUMNS, and only a single
    unbreakable word (a source's URL or path) may stick out."""
    from .conftest import LIVE_MATRIX
    from .helpers import run_cli

    for columns in (60, 80, 120):
        env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX), "COLUMNS": str(columns)}
        out = run_cli("matrix", "graph", "--path", "gfx:gfx942", "os:ubuntu-22.04", env=env)
        assert out.exit_code == 0
        for line in out.stdout.splitlines():
            assert len(line) <= columns or " " not in line.strip(), (columns, line)
