"""The import layers of docs/architecture.md, enforced: each module imports only from its own layer
or the ones below it (cli -> workflows -> explain -> solve -> node/data -> core), and no new import
circle appears. Imports inside functions count too: hiding an import does not change the design.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent / "resolver"

LAYERS: dict[str, int] = {"core": 0, "data": 1, "solve": 2, "explain": 3, "workflows": 4, "cli": 5}
# Module (or package prefix) -> layer. The longest matching prefix wins.
PLACES: dict[str, str] = {
    "resolver": "core",
    "resolver.errors": "core",
    "resolver.safety": "core",
    "resolver.versions": "core",
    "resolver.atomic": "core",
    "resolver.resources": "core",
    "resolver.schema": "core",
    "resolver.model": "data",
    "resolver.matrix": "data",
    "resolver.overlay": "data",
    "resolver.graph": "data",
    "resolver.node": "data",
    "resolver.examples": "data",
    "resolver.probe": "data",
    "resolver.partitions": "data",
    "resolver.credentials": "workflows",
    "resolver.parallel": "workflows",
    "resolver.apptainer": "workflows",
    "resolver.solve": "solve",
    "resolver.explain": "explain",
    "resolver.images": "workflows",
    "resolver.registry": "workflows",
    "resolver.engine": "workflows",
    "resolver.buildkit": "workflows",
    "resolver.runcmd": "workflows",
    "resolver.dockerfile": "workflows",
    "resolver.refresh": "workflows",
    "resolver.fleet": "workflows",
    "resolver.audit": "workflows",
    "resolver.cli": "cli",
    "resolver.__main__": "cli",
}
# Import circles that exist today (none); a new one fails the test.
KNOWN_CYCLES: set[frozenset[str]] = set()


def modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def imports() -> nx.DiGraph:
    mods = modules()
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative import
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names
                ]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t.startswith("resolver") and t != name and t in mods:
                    g.add_edge(name, t)
    return g


def place(module: str) -> str:
    best = max(
        (p for p in PLACES if module == p or module.startswith(p + ".")), key=len, default=None
    )
    assert best is not None, f"{module} has no layer: add it to PLACES (and docs/architecture.md)"
    return PLACES[best]


def test_every_module_has_a_layer() -> None:
    for module in modules():
        place(module)


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    g = imports()
    upward = [
        f"{a} ({place(a)}) imports {b} ({place(b)})"
        for a, b in g.edges()
        if LAYERS[place(b)] > LAYERS[place(a)]
    ]
    assert upward == []


def test_no_new_import_circle() -> None:
    cycles = {frozenset(c) for c in nx.simple_cycles(imports()) if len(c) > 1}
    assert cycles <= KNOWN_CYCLES, sorted(sorted(c) for c in cycles - KNOWN_CYCLES)


def test_the_probe_does_not_load_the_data() -> None:
    """The probe (the node layer) gets the data from its caller: no module under resolver.probe
    imports the loader (resolver.matrix) and its process-wide cache."""
    g = imports()
    leaks = sorted(
        f"{a} imports {b}"
        for a, b in g.edges()
        if (a == "resolver.probe" or a.startswith("resolver.probe.")) and b == "resolver.matrix"
    )
    assert leaks == []
