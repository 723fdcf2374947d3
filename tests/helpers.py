"""Small helpers shared by the core tests."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from resolver.cli import app
from resolver.data import resources
from resolver.data.node import Node
from resolver.solve import Decision
from resolver.solve.finding import Phrase

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, env: dict[str, str] | None = None, input_text: str | None = None):  # type: ignore[no-untyped-def]
    """Invoke ``rocm-vllm`` in-process; stdout and stderr are kept apart."""
    return CliRunner().invoke(
        app,
        list(args),
        env={"NO_COLOR": "1", **(env or {})},
        input=input_text,
        catch_exceptions=False,
    )


def run_process(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m resolver ARGS`` as its own process (the console script's path: its exit
    codes and its usage errors, which in-process runs do not go through)."""
    return subprocess.run(
        [sys.executable, "-m", "resolver", *args], capture_output=True, text=True, check=False
    )


def copy_matrix(tmp: Path) -> Path:
    """A writable copy of the shipped data directory."""
    target = tmp / "matrix"
    shutil.copytree(resources.matrix_dir(), target)
    return target


def decide(
    gfx: str,
    *,
    gpus: int | None = None,
    driver: str | None = None,
    os: str | None = None,
    python: str | None = None,
    rocm: str | None = None,
    **req: object,
) -> Decision:
    """Solve for a node given as flags against the (frozen test) data; ``req`` is the Request,
    with ``vllm`` as a spec string."""
    from resolver.data import matrix
    from resolver.data.node import from_flags
    from resolver.solve import Request, solve
    from resolver.util.versions import parse_spec

    node = from_flags(gfx=gfx, gpus=gpus, driver=driver, os=os, rocm=rocm, python=python)
    if isinstance(req.get("vllm"), str):
        req["vllm"] = parse_spec(str(req["vllm"]))
    return solve(matrix.load(), node, Request(**req))  # type: ignore[arg-type]


def cpx_node(driver: str = "30.30.3"):  # type: ignore[no-untyped-def]
    """An 8x MI300X node in CPX/NPS4: 64 logical GPUs (partitions) on 8 physical ones."""
    from resolver.data.node import Gpu, Node, Partition

    return Node(
        gpus=tuple(
            Gpu(gfx="gfx942", partition=Partition(compute="CPX", memory="NPS4")) for _ in range(64)
        ),
        gfx_targets=("gfx942",),
        physical_gpu_count=8,
        logical_gpu_count=64,
        driver_version=driver,
    )


def applied(node: Node, route: Any) -> Node:
    """``node`` with a route's (or an upgrade's) host changes taken, to solve it again."""
    for step in route.steps or ():
        node = step.change.apply(node)
    return node


def said(phrase: Phrase) -> str:
    """What a finding says, for a test that checks a sourced fact or a printed line (most assert
    the finding's key and values instead)."""
    from resolver.explain.words import word

    return word(phrase)


@contextlib.contextmanager
def local_http(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on loopback for the block: its base URL (a recorded upstream's stand-in
    where a test's server needs only canned answers)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
