"""NVIDIA nodes: the same contract as AMD ones, decided from the CUDA facts of each release.

A node's NVIDIA GPUs come from the probe (``nvidia-smi``: product, compute capability, driver,
the CUDA the driver supports; ``host.other_devices`` and ``host.nvidia``). Each release in
``cuda.toml`` offers its ``vllm/vllm-openai`` image families (``v0.32.0``, ``v0.32.0-cu129``);
each is checked for the GPU's compute capability (``cuda-arch-missing``) and for the driver
floor NVIDIA sets for the image's CUDA major (``cuda-driver-too-old``, ``nvidia.toml``). The
verdicts, reasons and fixes are the AMD solver's types, so `check`, `--json`, `upgrade` and the
fleet answer NVIDIA nodes through the same code.

The modules: ``gpus`` (what the node's GPUs and driver are), ``listing`` (each release's
images and wheel as candidates), ``evaluation`` (one candidate checked), ``unread`` (releases
whose artifacts were never read), ``provider`` (``CudaProvider``); the names callers use are
re-exported here.
"""

from __future__ import annotations

from resolver.solve.cuda.evaluation import evaluate, evaluate_candidate
from resolver.solve.cuda.gpus import VENDORS, _covers, driver_branch, nvidia_driver, nvidia_gpus
from resolver.solve.cuda.listing import _image, candidates
from resolver.solve.cuda.provider import CudaProvider

__all__ = [
    "VENDORS",
    "CudaProvider",
    "_covers",
    "_image",
    "candidates",
    "driver_branch",
    "evaluate",
    "evaluate_candidate",
    "nvidia_driver",
    "nvidia_gpus",
]
