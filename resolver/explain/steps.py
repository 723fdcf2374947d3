"""What to run for a plan: the copy-pasteable commands (pull and pin an image, install a wheel,
write and build a Dockerfile), and the flags that describe the node to a follow-up command.

Shared by the explanation (``derive``), the renderers (``text``, ``report``) and fleets; every
command is built from argv with ``shlex.join``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from resolver.data import resources
from resolver.data.node import Node
from resolver.solve import Evaluation
from resolver.util import shell

if TYPE_CHECKING:  # a check without --model loads no model code
    from resolver.solve.fit import Fit
    from resolver.solve.model import ModelAnswer, ModelRequest


class ServeSizing(msgspec.Struct, frozen=True, kw_only=True):
    """What a printed command sets for ``--model`` (vLLM's flags of the same names): each None
    where vLLM's own default is the answer."""

    model: str
    tensor_parallel_size: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    # The flags the fit chose rather than the user (the TP of every GPU, a context cap): a
    # command that sizes itself from its own solve (`rocm-vllm image`, `dockerfile`) is given
    # only the user's pins, so it never serves another command's TP on its own GPUs.
    chosen: frozenset[str] = frozenset()

    def flags(self, *, pins_only: bool = False) -> list[str]:
        """The sizing flags, in vLLM's spelling (the model itself is not among them): the one
        place they are spelled, for `rocm-vllm image`'s flags of the same names, ``vllm serve``
        and every run command, script and manifest (``artifacts.runcmd.model_args``).
        ``pins_only``: the user's own, for a follow-up command that sizes itself."""
        out: list[str] = []
        for flag, value in (
            ("--tensor-parallel-size", self.tensor_parallel_size),
            ("--max-model-len", self.max_model_len),
            ("--gpu-memory-utilization", self.gpu_memory_utilization),
            ("--kv-cache-dtype", self.kv_cache_dtype),
            ("--quantization", self.quantization),
        ):
            if value is not None and not (pins_only and flag in self.chosen):
                out += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
        return out


def serve_sizing(
    answer: ModelAnswer | None,
    request: ModelRequest | None,
    *,
    tensor_parallel: int | None = None,
) -> ServeSizing | None:
    """The sizes one server runs ``--model`` at, for the commands a plan prints. Its TP: the
    user's pin, else ``tensor_parallel`` (the GPUs a run command places it on, a fleet's replica
    TP), else every GPU of the node (the largest TP vLLM accepts for the model there): one server
    takes the GPUs it is given, as `rocm-vllm image` always has, never the fit's smallest TP with
    the rest idle. Its context: the pin, else the largest that fits at that TP where the model's
    own does not. The KV cache dtype when not ``auto``, and ``--quantization`` only where it is
    not the checkpoint's own (vLLM reads that from the config)."""
    if request is None:
        return None
    pinned = request.tensor_parallel_size
    tp = pinned or tensor_parallel or _every_gpu(answer)
    chosen: set[str] = set()
    context = request.max_model_len
    at = _fit_at(answer, tp)
    if context is None and at is not None and not at.fits and at.largest_max_model_len > 0:
        context = at.largest_max_model_len
        chosen.add("--max-model-len")
    if tp is not None and tp > 1 and not pinned:
        chosen.add("--tensor-parallel-size")
    kv = answer.kv_cache_dtype if answer is not None else "auto"
    own = request.config.quantization
    quant = answer.quantization if answer is not None else None
    return ServeSizing(
        model=request.served or request.spec,
        tensor_parallel_size=tp if tp is not None and (tp > 1 or pinned) else None,
        max_model_len=context,
        gpu_memory_utilization=request.gpu_memory_utilization,
        kv_cache_dtype=kv if kv != "auto" else None,
        quantization=quant if quant and (own is None or own.method != quant) else None,
        chosen=frozenset(chosen),
    )


def _every_gpu(answer: ModelAnswer | None) -> int | None:
    """The largest TP the fit table tried: every GPU of the node vLLM accepts for the model."""
    table = answer.table if answer is not None else ()
    return max((f.tensor_parallel_size for f in table), default=None)


def _fit_at(answer: ModelAnswer | None, tp: int | None) -> Fit | None:
    """The answer's fit at ``tp`` and the context it was judged at (its table holds each)."""
    fit = answer.fit if answer is not None else None
    if fit is None or tp is None or fit.tensor_parallel_size == tp:
        return fit
    assert answer is not None
    return next(
        (
            f
            for f in answer.table
            if f.tensor_parallel_size == tp and f.max_model_len == fit.max_model_len
        ),
        None,
    )


def _nvidia_flags(node: Node) -> list[str]:
    """An NVIDIA node given by flags (issue 38), spelled again for a follow-up command."""
    gpus = node.nvidia_gpus
    cc = next((str(g["compute_capability"]) for g in gpus if g.get("compute_capability")), None)
    if cc is None:  # nothing but a count: no plan follows from it
        return []
    out = ["--cc", cc] + (["--gpus", str(len(gpus))] if len(gpus) > 1 else [])
    if node.nvidia_driver:
        out += ["--nvidia-driver", node.nvidia_driver]
    for flag, value in (("--os", node.os), ("--python", node.python)):
        if value:
            out += [flag, value]
    return out


def _node_flags(node: Node, *, without: frozenset[str] = frozenset()) -> list[str]:
    """Flags that describe ``node`` to a follow-up command: its source, then the flags that were
    laid over it (``--example mi300x-8 --gpus 2`` stays a 2-GPU node in the next command).
    ``without`` leaves flags out that the follow-up gives itself (a hint's own ``--driver``)."""
    base = node.origin.flags()
    if base is None and not node.gfx_targets and node.nvidia_gpus:
        base = _nvidia_flags(node) if node.origin.kind == "flags" else []
        # a live NVIDIA node: no flag describes it, the follow-up probes it again
    if base is not None:
        laid = [(flag, value) for flag, value in node.overrides if flag not in without]
        return base + [part for flag, value in laid for part in (flag, value)]
    flags = ["--gfx", ",".join(node.gfx_targets)]
    if node.logical_gpu_count:
        flags += ["--gpus", str(node.logical_gpu_count)]
    # Every fact the answer depends on: a follow-up without the OS, host ROCm or Python would
    # decide for another node.
    for flag, value in (
        ("--driver", node.driver_version),
        ("--os", node.os),
        ("--rocm", node.rocm_version),
        ("--python", node.python),
    ):
        if value and flag not in without:
            flags += [flag, value]
    return flags


node_flags = _node_flags  # public name for derive's hints


def rocm_wheel_index(recorded: str, vllm: str, variant: str) -> str:
    """The per-release index of a ROCm wheel, ``<root>/<version>/<variant>`` as vLLM's docs
    write it. A record may hold the root (``.../rocm/``) or a per-release index already
    (``.../rocm/0.33.0/rocm100``: appending to it doubled the path, issue 34), whose root is two
    segments up; a mirror (ROCM_VLLM_WHEELS) stands for the root."""
    base = resources.wheels_base(recorded)
    if base.endswith(f"/{variant}"):
        base = base.rsplit("/", 2)[0]
    return f"{base}/{vllm}/{variant}"


def plan_steps(
    ev: Evaluation, node: Node, sizing: ServeSizing | None = None
) -> list[tuple[str, str]]:
    """What to run for this path: (copy-pasteable shell line, why) pairs; ``why`` may be empty.
    ``sizing`` (``serve_sizing``, with --model): the image command and the wheel's ``vllm
    serve`` carry the model and its sizes."""
    c = ev.candidate
    flags = _node_flags(node)
    # `image` and `dockerfile` size their run command from their own solve: only the pins.
    model = ["--model", sizing.model, *sizing.flags(pins_only=True)] if sizing is not None else []
    if c.image is not None:
        return [
            (shell.join(["docker", "pull", c.image.ref]), ""),
            (
                shell.join(
                    ["rocm-vllm", "image", *flags, "--vllm", f"=={c.vllm}", "--digest", *model]
                ),
                "pin by digest, print the docker run command",
            ),
        ]
    if c.wheel is not None and c.wheel.vendor == "nvidia":
        # vLLM's CUDA install page: pip with PyTorch's index of the wheel's CUDA.
        return _wheel_steps(
            node.python or "3.12",
            f"vllm=={c.vllm}",
            c.wheel.index_url,
            "assert torch.version.cuda and torch.cuda.is_available()",
            "the CUDA build of torch, and it sees the GPU",
        ) + _serve_step(sizing)
    if c.wheel is not None:
        return _wheel_steps(
            c.wheel.python[0],
            f"vllm=={c.vllm}+{c.wheel.name}",
            rocm_wheel_index(c.wheel.index_url, str(c.vllm), c.wheel.name),
            "assert torch.version.hip and not torch.version.cuda",
            "a CUDA wheel must not have slipped in",
        ) + _serve_step(sizing)
    gfx = ",".join(ev.built_for(node.gfx_targets))
    tag = f"vllm-rocm:{c.vllm}"
    stack: list[str] = []
    if c.stack is not None and c.release is not None and len(c.release.stacks) > 1:
        stack = ["--stack", c.stack.variant]
        if c.stack.preview:
            stack.append("--allow-preview")
        if c.stack.moving_pins:
            stack.append("--allow-moving-refs")
    return [
        (
            shell.join(
                [
                    "rocm-vllm",
                    "dockerfile",
                    *flags,
                    "--vllm",
                    str(c.vllm),
                    *stack,
                    "--tag",
                    tag,
                    *model,
                    "-o",
                    "Dockerfile.vllm-rocm",
                ]
            ),
            (
                f"built for {gfx} only"
                + (f", run under HSA_OVERRIDE_GFX_VERSION={ev.override}" if ev.override else "")
                + "; it prints the image's run command"
            )
            if gfx
            else "it prints the image's run command",
        ),
        (
            shell.join(
                [
                    "env",
                    "DOCKER_BUILDKIT=1",
                    "docker",
                    "build",
                    "-f",
                    "Dockerfile.vllm-rocm",
                    "-t",
                    tag,
                    ".",
                ]
            ),
            "",
        ),
    ]


def _serve_step(sizing: ServeSizing | None) -> list[tuple[str, str]]:
    """``vllm serve`` in the venv, the model positional as every release takes it."""
    if sizing is None:
        return []
    why = (
        f"one server on every GPU (TP {sizing.tensor_parallel_size}); the fit says how few suffice"
        if "--tensor-parallel-size" in sizing.chosen
        else "sized for this node"
    )
    return [(shell.join(["vllm", "serve", sizing.model, *sizing.flags()]), why)]


def plan_commands(ev: Evaluation, node: Node, sizing: ServeSizing | None = None) -> list[str]:
    """The plan's steps as text lines, each with its reason as a shell comment."""
    return [f"{cmd}   # {why}" if why else cmd for cmd, why in plan_steps(ev, node, sizing)]


def _wheel_steps(
    python: str, requirement: str, index: str, check: str, why: str
) -> list[tuple[str, str]]:
    """A uv venv, the wheel from its index, and a one-line torch check that it is the build
    the GPU needs. An index reached with ROCM_VLLM_WHEELS's user and token is printed without
    them, and the line says where uv reads the login instead."""
    login = resources.wheels_login()
    where = (
        f"uv reads the login for {login} from ~/.netrc or a keyring (--keyring-provider "
        "subprocess), as pip does; ROCM_VLLM_WHEELS's user and token are not printed"
        if login and f"://{login}/" in f"{index}/"
        else ""
    )
    return [
        (shell.join(["uv", "venv", "--python", python, ".venv"]) + " && . .venv/bin/activate", ""),
        (shell.join(["uv", "pip", "install", requirement, "--extra-index-url", index]), where),
        (f"python -c 'import torch; {check}, torch.__version__'", why),
    ]
