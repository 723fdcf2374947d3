"""What stops one candidate: one function per reason code, in one module per family.

``MatrixProvider.evaluate`` calls them; each returns a ``Reason`` (or ``None`` when the check
passes). Checks that cannot be made say so with a ``Advisory`` (driver unknown, Python or glibc
unknown) instead of stopping the path. The families: ``gpu`` (gfx shipped or not), ``gates``
(FP8/MX/KV feature gates), ``listed`` (what the release lists), ``driver`` (the amdgpu driver's
age and window, with ``amdgpu``: what a release knows and the moves), ``wheel`` (Python, glibc,
host ROCm), ``unknown`` (facts the data lacks); ``facts`` the facts they cite. Every name is
re-exported here, where callers import it from.
"""

from __future__ import annotations

from resolver.solve.checks.amdgpu import (
    DriverMove,
    driver_knows,
    driver_move,
    drivers_for,
    first_product,
    first_release_knowing,
    gpus_first_rocm,
    knows_gpus,
    node_release,
    shipped_with,
)
from resolver.solve.checks.driver import (
    driver_check,
    driver_predates_gpu,
    driver_release_unchecked,
    driver_runs,
    driver_warnings,
    driver_window,
    preview_driver_window,
)
from resolver.solve.checks.gates import (
    fp8_unsupported,
    gate_checks,
    kv_fp8_unsupported,
    mx_unsupported,
)
from resolver.solve.checks.gpu import (
    gfx_check,
    gfx_contradicted,
    gfx_hint,
    gfx_not_buildable,
    gfx_not_shipped,
    gfx_unsupported,
    gfx_unsupported_by_vllm,
)
from resolver.solve.checks.listed import (
    fp8_admitted,
    kv_cache_dtype_backend,
    kv_cache_dtype_listed,
    quantization_listed,
)
from resolver.solve.checks.unknown import artifact_facts_unknown, release_facts_unknown
from resolver.solve.checks.wheel import (
    glibc_check,
    host_rocm_check,
    host_rocm_shadowing,
    python_check,
    wheel_checks,
)

__all__ = [
    "DriverMove",
    "artifact_facts_unknown",
    "driver_check",
    "driver_knows",
    "driver_move",
    "driver_predates_gpu",
    "driver_release_unchecked",
    "driver_runs",
    "driver_warnings",
    "driver_window",
    "drivers_for",
    "first_product",
    "first_release_knowing",
    "fp8_admitted",
    "fp8_unsupported",
    "gate_checks",
    "gfx_check",
    "gfx_contradicted",
    "gfx_hint",
    "gfx_not_buildable",
    "gfx_not_shipped",
    "gfx_unsupported",
    "gfx_unsupported_by_vllm",
    "glibc_check",
    "gpus_first_rocm",
    "host_rocm_check",
    "host_rocm_shadowing",
    "knows_gpus",
    "kv_cache_dtype_backend",
    "kv_cache_dtype_listed",
    "kv_fp8_unsupported",
    "mx_unsupported",
    "node_release",
    "preview_driver_window",
    "python_check",
    "quantization_listed",
    "release_facts_unknown",
    "shipped_with",
    "wheel_checks",
]
