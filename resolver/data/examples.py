"""Example nodes from ``matrix/nodes.toml`` as ``Node`` facts (these machines have no AMD GPU)."""

from __future__ import annotations

from resolver.data import matrix
from resolver.data.node import Gpu, Node, Origin
from resolver.util.errors import InputError


def example_node(name: str) -> Node:
    m = matrix.load()
    ex = m.example(name)
    if ex is None:
        names = ", ".join(e.name for e in m.examples)
        raise InputError(
            f"--example {name!r} is not an embedded example", hint=f"choose one of: {names}"
        )

    def is_apu(name: str) -> bool:
        target = m.gfx_target(name)
        return target is not None and target.families == ("ryzen-apu",)

    gpus = tuple(
        Gpu(gfx=ex.gfx[i % len(ex.gfx)], product=ex.product, apu=is_apu(ex.gfx[i % len(ex.gfx)]))
        for i in range(ex.gpus)
    )
    return Node(
        gpus=gpus,
        gfx_targets=tuple(sorted(set(ex.gfx))),
        physical_gpu_count=ex.gpus,
        logical_gpu_count=ex.gpus,
        driver_version=ex.driver,
        os=ex.os,
        python=ex.python,
        rocm_version=ex.rocm,
        origin=Origin(f"example:{ex.name}"),
    )
