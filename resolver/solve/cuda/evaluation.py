"""One NVIDIA candidate checked on a node: the KV cache dtype, the GPUs' compute
capabilities against its arch list (``cuda-arch-missing``) and the method's floor
(``cuda-quant-capability``), the PyPI wheel's Python and glibc, and NVIDIA's driver floor for its
CUDA major (``cuda-driver-too-old``, ``nvidia.toml``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from resolver.data.model import CudaImage, CudaRelease, Matrix, WheelVariant
from resolver.data.node import Node
from resolver.solve.checks import kv_cache_dtype_listed
from resolver.solve.cuda.gpus import (
    _below_floor,
    _caps,
    _compiled,
    _covers,
    _unplaced,
    driver_branch,
    nvidia_driver,
    nvidia_gpus,
)
from resolver.solve.cuda.listing import _carrier, _wheel
from resolver.solve.finding import Phrase, finding, phrase
from resolver.solve.host import host_glibc
from resolver.solve.types import (
    Advisory,
    Candidate,
    Evaluation,
    Fact,
    Fix,
    HostChange,
    Reason,
    Request,
    RequestError,
)

if TYPE_CHECKING:
    from resolver.solve.modelspec import GpuMemory


def evaluate(
    m: Matrix,
    node: Node,
    release: CudaRelease,
    image: CudaImage,
    cand: Candidate,
    quantization: str | None = None,
    kv_cache_dtype: str | None = None,
    model: Request | None = None,
    *,
    memory: GpuMemory | None,
) -> Evaluation:
    """Every check of an NVIDIA path, family by family (``memory``: the GPU memory --model's
    fit is sized for, ``model.gpu_memory``'s answer, which the caller keeps)."""
    # One family at a time, in the order their reasons and advisories have always been listed.
    reasons, warnings = _kv_checks(m, node, release, cand, kv_cache_dtype)
    found, said = _arch_checks(m, node, release, image, cand.label, quantization)
    reasons += found
    warnings += said
    if (wheel := cand.installs) is not None:
        reasons += _wheel_reasons(m, node, release, wheel, cand.label)
    found, said = _driver_checks(m, node, release, image, cand)
    reasons += found
    warnings += said
    if model is not None:
        from resolver.solve.model import model_rules

        found, said = model_rules(m, node, model, cand, amd=False, memory=memory)
        reasons += found
        warnings += said
    return Evaluation(candidate=cand, reasons=tuple(reasons), warnings=tuple(warnings))


def _kv_checks(
    m: Matrix, node: Node, release: CudaRelease, cand: Candidate, kv_cache_dtype: str | None
) -> tuple[list[Reason], list[Advisory]]:
    """``--kv-cache-dtype`` against the release's ``CacheDType``."""
    kv = (kv_cache_dtype or "").lower()
    if not kv or kv == "auto":
        return [], []
    # CacheDType is platform-wide (the AMD check, stated once); what the CUDA attention
    # backends take per compute capability is not read: said, and unknown under --strict.
    listed = kv_cache_dtype_listed(m, cand, Request(kv_cache_dtype=kv))
    if listed is not None:
        return [listed], []
    return [], [
        Advisory.said(
            "kv-cache-dtype-unchecked",
            dtype=kv,
            vllm=release.version,
            caps=", ".join(_caps(node, m)) or "unknown",
            severity="info",
            source=release.provenance.source,
        )
    ]


def _arch_checks(
    m: Matrix,
    node: Node,
    release: CudaRelease,
    image: CudaImage,
    label: str,
    quantization: str | None,
) -> tuple[list[Reason], list[Advisory]]:
    """The GPUs' compute capabilities against the artifact's arch list and the method's floor;
    what runs only through a JIT compile, and the GPUs no arch list can be checked for."""
    src = release.provenance.source
    gpus = nvidia_gpus(node)
    product = str(gpus[0].get("name") or "the GPU") if gpus else "the GPU"
    caps = _caps(node, m)
    missing = [c for c in caps if not _covers(image.arch, c)]
    found = (
        _arch_missing(release, image, label, product, missing),
        _quant_capability(release, caps, product, quantization),
    )
    warnings: list[Advisory] = []
    jit = [c for c in caps if c not in missing and not _covers(_compiled(image.arch), c)]
    if jit:
        warnings.append(
            Advisory.said(
                "cuda-arch-ptx-jit",
                label=label,
                caps=", ".join(jit),
                ptx=", ".join(a for a in image.arch if a.endswith("+PTX")),
                severity="info",
                source=src,
            )
        )
    unplaced = _unplaced(node, m)
    if unplaced:
        warnings.append(
            Advisory.said(
                "cuda-arch-unchecked",
                label=label,
                arch=", ".join(image.arch),
                product=", ".join(unplaced),
                severity="info",
                source=src,
            )
        )
    return [r for r in found if r is not None], warnings


def _arch_missing(
    release: CudaRelease, image: CudaImage, label: str, product: str, missing: list[str]
) -> Reason | None:
    """``cuda-arch-missing``: the artifact carries no code for some of the GPUs' capabilities."""
    if not missing:
        return None
    w = finding(
        "cuda-arch-missing",
        label=label,
        listed=", ".join(image.arch),
        product=product,
        missing=", ".join(missing),
        first_missing=missing[0],
    )
    return Reason(
        code="cuda-arch-missing",
        message=w.message,
        facts=(
            Fact(text=w.facts[0], source=release.provenance.source, about=label),
            Fact(text=w.facts[1], source="nvidia-smi"),
        ),
        hint=w.hint,
        release=release.version,
    )


def _quant_capability(
    release: CudaRelease, caps: list[str], product: str, quantization: str | None
) -> Reason | None:
    """``cuda-quant-capability``: a GPU below the floor the release states for the method."""
    # The method's floor where the release's config states one (a method it does not state is
    # not checked here: vLLM itself refuses it at load if the GPU is below its floor).
    floor, below = _below_floor(release, caps, quantization)
    if not (quantization and floor and below):
        return None
    w = finding(
        "cuda-quant-capability",
        vllm=release.version,
        method=quantization,
        floor=floor,
        product=product,
        caps=", ".join(below),
    )
    return Reason(
        code="cuda-quant-capability",
        message=w.message,
        facts=(
            Fact(text=w.facts[0], source=release.provenance.source, about=str(release.version)),
            Fact(text=w.facts[1], source="nvidia-smi"),
        ),
        hint=w.hint,
        release=release.version,
    )


def _driver_checks(
    m: Matrix, node: Node, release: CudaRelease, image: CudaImage, cand: Candidate
) -> tuple[list[Reason], list[Advisory]]:
    """The host's driver branch against NVIDIA's floor for the artifact's CUDA major
    (``cuda-driver-too-old``; said, not checked, where the rule or the branch is not known)."""
    label = cand.label
    rule = m.cuda_driver_rule(image.cuda)
    driver = nvidia_driver(node)
    branch = driver_branch(driver)
    if rule is None:
        return [], [
            Advisory.said(
                "nvidia-driver-unchecked/no-rule", major=image.cuda.major, severity="info"
            )
        ]
    if branch is None:
        return [], [
            Advisory.said(
                "nvidia-driver-unchecked",
                cuda=image.cuda,
                label=label,
                major=image.cuda.major,
                min_driver=rule.min_driver,
                source=rule.provenance.source,
            )
        ]
    if branch >= rule.min_driver:
        return [], []
    w = finding(
        "cuda-driver-too-old",
        label=label,
        cuda=image.cuda,
        major=image.cuda.major,
        min_driver=rule.min_driver,
        driver=driver,
    )
    too_old = Reason(
        code="cuda-driver-too-old",
        message=w.message,
        facts=(
            Fact(text=w.facts[0], source=release.provenance.source, about=label),
            Fact(text=w.facts[1], source=rule.provenance.source),
        ),
        hint=_driver_hint(m, release, cand, image, branch, rule.min_driver, w.hint),
        fix=Fix(
            kind="driver",
            text=w.fix,
            host=True,
            change=HostChange(kind="nvidia_driver", value=str(rule.min_driver)),
        ),
        release=release.version,
    )
    return [too_old], []


def _driver_hint(
    m: Matrix,
    release: CudaRelease,
    cand: Candidate,
    image: CudaImage,
    branch: int,
    min_driver: int,
    plain: Phrase,
) -> Phrase:
    """What to do about a driver too old for the build: the PyPI wheel names the release's other
    CUDA wheels this driver runs (release assets, not on PyPI); a CUDA 13 image ships CUDA's
    forward compatibility libraries."""
    if cand.installs is not None:
        fits = [
            v
            for v in release.wheel_variants
            if (r := m.cuda_driver_rule(v)) is not None and r.min_driver <= branch
        ]
        if fits:
            return phrase(
                "cuda-driver-too-old/variant",
                min_driver=min_driver,
                vllm=release.version,
                variants=", ".join(str(v) for v in fits),
                cuda=image.cuda,
            )
        return plain
    if image.cuda.major >= 13:
        return phrase("cuda-driver-too-old/compat", min_driver=min_driver)
    return plain


def _wheel_reasons(
    m: Matrix, node: Node, release: CudaRelease, wheel: WheelVariant, label: str
) -> list[Reason]:
    """The PyPI wheel against the host's Python (pyproject's requires-python) and glibc (the
    wheels are manylinux_2_28)."""
    found = (
        _python_reason(node, release, wheel, label),
        _glibc_reason(m, node, release, wheel, label),
    )
    return [r for r in found if r is not None]


def _python_reason(
    node: Node, release: CudaRelease, wheel: WheelVariant, label: str
) -> Reason | None:
    """``python-mismatch``: the host's Python is not one the wheel's requires-python takes."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not (node.python and wheel.requires_python):
        return None
    try:
        takes = SpecifierSet(wheel.requires_python)
        python = Version(node.python)
    except (InvalidSpecifier, InvalidVersion):
        return None
    if python in takes:
        return None
    fits = [v for v in ("3.12", *wheel.python) if Version(v) in takes]
    w = finding(
        "python-mismatch/cuda" if fits else "python-mismatch/cuda-none",
        label=label,
        requires=wheel.requires_python,
        python=node.python,
        vllm=release.version,
        fit=fits[0] if fits else "",
    )
    return Reason(
        code="python-mismatch",
        message=w.message,
        facts=(Fact(text=w.facts[0], source=release.provenance.source, about=label),),
        hint=w.hint,
        fix=Fix(
            kind="python",
            text=w.fix,
            host=True,
            change=HostChange(kind="python", value=fits[0]),
        )
        if fits
        else None,
        release=release.version,
    )


def _glibc_reason(
    m: Matrix, node: Node, release: CudaRelease, wheel: WheelVariant, label: str
) -> Reason | None:
    """``glibc-too-old``: the host's glibc (the node's, else its OS release's) is below the
    floor of the wheel's platform tag."""
    glibc, _ = host_glibc(m, node)
    floor = release.wheel_glibc
    if glibc is None or floor is None or glibc >= floor:
        return None
    w = finding(
        "glibc-too-old/cuda",
        label=label,
        platform=release.wheel_platform or "manylinux",
        glibc_min=floor,
        glibc=glibc,
        vllm=release.version,
    )
    return Reason(
        code="glibc-too-old",
        message=w.message,
        facts=(Fact(text=w.facts[0], source=release.provenance.source, about=label),),
        hint=w.hint,
        fix=Fix(
            kind="os",
            text=w.fix,
            host=True,
            change=HostChange(kind="glibc", value=str(wheel.glibc_min)),
        ),
        release=release.version,
    )


def evaluate_candidate(
    m: Matrix, node: Node, cand: Candidate, request: Request | None = None
) -> Evaluation:
    """An NVIDIA candidate (another group's plan) checked on ``node`` with every check a
    candidate of its own would get, the request's quantization and KV cache dtype included."""
    quant = request.quantization if request is not None else None
    kv = request.kv_cache_dtype if request is not None else None
    memory = None
    if request is not None and request.model is not None:
        from resolver.solve.model import gpu_memory

        memory = gpu_memory(m, node)
    if cand.runs_as_user:  # vLLM's PyPI wheel, checked on the image that carries its build
        release = m.cuda_release(cand.vllm)
        wheel = _wheel(release) if release is not None else None
        if release is not None and wheel is not None:
            carrier = _carrier(release, wheel)
            return evaluate(m, node, release, carrier, cand, quant, kv, request, memory=memory)
    for release in m.cuda:
        for image in release.images:
            if cand.label == f"{image.repo}:{image.tag}":
                return evaluate(m, node, release, image, cand, quant, kv, request, memory=memory)
    raise RequestError(
        phrase("request/cuda-image-unknown", label=cand.label),
        hint=phrase("request/cuda-image-unknown-hint"),
    )
