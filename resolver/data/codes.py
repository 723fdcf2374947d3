"""Every code a decision can carry, as one ``Literal`` each: why a path is rejected (``ReasonCode``)
and what a decision advises (``AdvisoryCode``).

Code branches on these, never on message text; ``tests/test_codes.py`` proves that
``docs/verdicts.md`` lists each one and that nothing emits a code outside them.
"""

from __future__ import annotations

from typing import Literal, get_args

# Why one candidate cannot be used here (``resolver.solve.checks``, one function per code).
ReasonCode = Literal[
    "gfx-unsupported",
    "gfx-not-shipped",
    "fp8-unsupported",
    "mx-unsupported",
    "kv-fp8-unsupported",
    "driver-window",
    "driver-predates-gpu",
    "python-mismatch",
    "glibc-too-old",
    "host-rocm-mismatch",
    "release-facts-unknown",
    "artifact-facts-unknown",
    "quantization-not-listed",
    "kv-cache-dtype-not-listed",
    "kv-cache-dtype-no-backend",
    "fp8-not-admitted",
    "cuda-arch-missing",
    "cuda-driver-too-old",
    "cuda-quant-capability",
    "gpu-access-denied",
    "driver-os-unsupported",
    "wsl-host",
    # --model (resolver.solve.model): what the model asks of a release and of the node's GPUs
    "model-architecture-unsupported",
    "model-rocm-unsupported",
    "model-attention-unsupported",
    "model-does-not-fit",
    "model-context-too-long",
]

# What a decision advises about a candidate or the node (``resolver.solve.advisories``,
# ``resolver.solve.checks`` for checks that could not be made, ``resolver.solve.host``), and
# about the image a plan pulls and the command that runs it (``resolver.artifacts.images``,
# ``resolver.artifacts.parallel``).
AdvisoryCode = Literal[
    "model-architecture-unchecked",
    "model-architecture-fallback",
    "model-rocm-partial",
    "model-attention-unchecked",
    "model-fit-unchecked",
    "model-context-capped",
    "aiter-off-by-default",
    "aiter-partial",
    "amd-image",
    "apu-unified-memory",
    "audit-lacks-gfx",
    "cpx-one-replica-per-partition",
    "one-replica-per-partition",
    "tp-across-partitions",
    "cpx-partition",
    "cuda-arch-ptx-jit",
    "cuda-arch-unchecked",
    "kv-cache-dtype-unchecked",
    "cuda-image-needs-driver",
    "custom-allreduce-off",
    "deprecated-channel",
    "digest-changed",
    "digest-from-cache",
    "digest-mismatch",
    "image-label-gfx",
    "driver-unchecked",
    "driver-release-unchecked",
    "arch-from-docs",
    "env-not-common",
    "fp8-format",
    "glibc-unknown",
    "host-rocm-shadowing",
    "host-rocm-unknown",
    "integrated-gpu-chosen",
    "integrated-gpu-hidden",
    "kernel-floor-unchecked",
    "kernel-too-old",
    "low-confidence",
    "mixed-fp8-formats",
    "mixed-gfx",
    "mxfp4-emulated",
    "mxfp4-native",
    "mxfp8-emulated",
    "newer-releases-unknown",
    "nvidia-driver-unchecked",
    "os-not-supported",
    "os-not-supported-for-gpu",
    "os-unlisted-for-gpu",
    "override-not-needed",
    "prefer-not-met",
    "preview-rocm",
    "python-unknown",
    "rdna-multi-gpu",
    "rocm-lacks-gfx",
    "smoke-failed",
    "smoke-no-gpu",
    "smoke-gfx-mismatch",
    "smoke-compute-wrong",
    "smoke-serve-failed",
    "smoke-no-rocm",
    "smoke-no-torch",
    "smoke-no-vllm",
    "smoke-rocm-mismatch",
    "smoke-torch-mismatch",
    "smoke-vllm-mismatch",
    "stack-not-default",
    "tensor-parallel-size",
    "tensor-parallel-over-fit",
    "unknown-driver",
    "unofficial-override",
    "unpinned-ref",
    "visible-devices-ray",
    "visible-devices-hide-gfx",
    "visible-devices-count",
]

# What the probe (or a node file) reports about the node: ``resolver.data.node.Problem.code``. A
# code a node file carries that this list lacks (a newer tool wrote it) is read as
# ``probe-reported``, its words kept.
ProblemCode = Literal[
    "amd-smi-bad-target",
    "amdgpu-not-live",
    "amdgpu-not-loaded",
    "driver-release-unknown",
    "gfx-override",
    "gfx-override-invalid",
    "gpu-count-differs",
    "gpu-target-unknown",
    "hsa-runtime-error",
    "integrated-gpu-present",
    "kfd-enomem",
    "kfd-missing",
    "kfd-open-failed",
    "kfd-permission",
    "no-container-engine",
    "no-gpu",
    "no-gpu-agent-enumerator",
    "no-gpu-agents",
    "no-gpu-amd-smi",
    "no-gpu-rocm-smi",
    "no-kfd",
    "no-kfd-topology",
    "not-an-amd-gpu",
    "not-in-gpu-group",
    "numa-balancing-on",
    "partial-input",
    "partition-missing",
    "render-permission",
    "smi-misprinted-target",
    "sources-disagree",
    "visible-devices-invalid",
    "wsl",
    "probe-reported",
]

REASON_CODES: tuple[ReasonCode, ...] = get_args(ReasonCode)
ADVISORY_CODES: tuple[AdvisoryCode, ...] = get_args(AdvisoryCode)
PROBLEM_CODES: tuple[ProblemCode, ...] = get_args(ProblemCode)

# Reasons that depend on facts the data does not hold: the verdict is ``unknown``, never
# ``unsupported``.
UNKNOWN_CODES: frozenset[ReasonCode] = frozenset(
    {"release-facts-unknown", "artifact-facts-unknown"}
)
# Advisories that say a requirement the plan rests on was not checked (a fact of the node or of
# the artifact nobody read): under --strict each makes the answer unknown, naming what to give.
UNCHECKED_CODES: frozenset[str] = frozenset(
    {
        "driver-unchecked",
        "driver-release-unchecked",
        "unknown-driver",
        "kernel-floor-unchecked",
        "arch-from-docs",
        "python-unknown",
        "glibc-unknown",
        "host-rocm-unknown",
        "cuda-arch-unchecked",
        "nvidia-driver-unchecked",
        "kv-cache-dtype-unchecked",
        "model-architecture-unchecked",
        "model-attention-unchecked",
        "model-fit-unchecked",
    }
)
# Of those, the ones whose plan is ``unknown`` even without --strict: an NVIDIA GPU whose compute
# capability nobody gave is never "supported" for an arch list (what would tell is named).
FACT_UNKNOWN_CODES: frozenset[str] = frozenset({"cuda-arch-unchecked"})
# The request's quantization or KV cache dtype against the GPU's feature gates.
GATE_CODES: frozenset[ReasonCode] = frozenset(
    {"fp8-unsupported", "mx-unsupported", "kv-fp8-unsupported"}
)
# Every reason the request's quantization makes (the what-if search drops it to find what
# runs): the AMD gates, and an NVIDIA GPU below the method's compute-capability floor.
QUANT_CODES: frozenset[ReasonCode] = GATE_CODES | {"cuda-quant-capability"}
