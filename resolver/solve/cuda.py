"""NVIDIA nodes: the same contract as AMD ones, decided from the CUDA facts of each release.

A node's NVIDIA GPUs come from the probe (``nvidia-smi``: product, compute capability, driver,
the CUDA the driver supports; ``host.other_devices`` and ``host.nvidia``). Each release in
``cuda.toml`` offers its ``vllm/vllm-openai`` image families (``v0.32.0``, ``v0.32.0-cu129``);
each is checked for the GPU's compute capability (``cuda-arch-missing``) and for the driver
floor NVIDIA sets for the image's CUDA major (``cuda-driver-too-old``, ``nvidia.toml``). The
verdicts, reasons and fixes are the AMD solver's types, so `check`, `--json`, `upgrade` and the
fleet answer NVIDIA nodes through the same code.
"""

from __future__ import annotations

from typing import Any

from packaging.version import InvalidVersion, Version

from resolver.data.model import (
    ContainerImage,
    CudaImage,
    CudaRelease,
    Matrix,
    Provenance,
    WheelVariant,
)
from resolver.data.node import Node
from resolver.solve.checks import kv_cache_dtype_listed
from resolver.solve.finding import Phrase, finding, phrase
from resolver.solve.rank import _rank
from resolver.solve.types import (
    Advisory,
    Candidate,
    Evaluation,
    Fact,
    Fix,
    HostChange,
    ImageCandidate,
    MissingFact,
    Reason,
    Request,
    RequestError,
    WheelCandidate,
)

VENDORS = ("amd", "nvidia")
# The image families a plan offers: the default and the other-CUDA one (cu129); the Ubuntu
# 24.04 and EFA variants are the same build on another base, for those who ask for them.
_VARIANT_WORDS = ("ubuntu", "efa")


def nvidia_gpus(node: Node) -> list[dict[str, Any]]:
    return node.nvidia_gpus


def nvidia_driver(node: Node) -> str | None:
    return node.nvidia_driver


def driver_branch(driver: str | None) -> int | None:
    """ "580.159.04" -> 580."""
    head = (driver or "").split(".")[0]
    return int(head) if head.isdigit() and len(head) <= 4 else None


def _caps(node: Node, m: Matrix | None = None) -> list[str]:
    """The GPUs' compute capabilities: nvidia-smi's, else the one NVIDIA lists for the GPU's PCI
    device id (``nvidia-gpus.toml``; a node probed without nvidia-smi)."""
    out = set()
    for g in nvidia_gpus(node):
        if g.get("compute_capability"):
            out.add(str(g["compute_capability"]))
        elif m is not None and (known := m.nvidia_gpu(g.get("pci_device_id"))) is not None:
            out.add(known.compute_capability)
    return sorted(out)


def _cc(text: str) -> tuple[int, int] | None:
    """ "10.3" -> (10, 3); None when it is not a compute capability."""
    major, dot, minor = text.partition(".")
    if not dot or not major.isdigit() or not minor.isdigit():
        return None
    return int(major), int(minor)


def _unplaced(node: Node, m: Matrix | None = None) -> list[str]:
    """The NVIDIA GPUs whose compute capability neither nvidia-smi nor the data gives (by name,
    else PCI id): no arch list can be checked for them."""
    out = []
    for g in nvidia_gpus(node):
        if g.get("compute_capability"):
            continue
        if m is not None and m.nvidia_gpu(g.get("pci_device_id")) is not None:
            continue
        pci = g.get("pci_device_id")
        name = str(g.get("name") or (f"PCI device 10de:{pci}" if pci else "an NVIDIA GPU"))
        if name not in out:
            out.append(name)
    return out


def _covers(arch: tuple[str, ...], cap: str) -> bool:
    """An image carries code for ``cap``, by CUDA's rules: SASS for exactly that capability
    (``9.0``, or ``9.0a``, which runs on 9.0 only); a family target ``X.Yf`` on every X.Z with
    Z >= Y (sm_100f on 10.0 and 10.3); PTX (``X.Y+PTX``), which the driver JIT-compiles for any
    later capability (never an ``a`` target's). A plain ``X.Y`` is held to its own capability:
    vLLM builds arch-specific kernels (``10.0a``) beside it, which a 10.3 cannot run."""
    want = _cc(cap)
    if want is None:
        return False
    for entry in arch:
        base, _, ptx = entry.partition("+")
        suffix = base[-1] if base[-1:] in ("a", "f") else ""
        have = _cc(base.removesuffix(suffix) if suffix else base)
        if have is None:
            continue
        if have == want:
            return True
        if suffix == "f" and have[0] == want[0] and have[1] <= want[1]:
            return True
        if ptx == "PTX" and suffix != "a" and have <= want:
            return True
    return False


def _below_floor(
    release: CudaRelease, caps: list[str], quantization: str | None
) -> tuple[str | None, list[str]]:
    """The floor the release states for ``quantization`` and the capabilities below it."""
    floor = release.quant_floor(quantization) if quantization else None
    if floor is None or (want := _cc(floor)) is None:
        return floor, []
    return floor, [c for c in caps if (have := _cc(c)) is not None and have < want]


def _compiled(arch: tuple[str, ...]) -> tuple[str, ...]:
    """The arch list without its PTX: what runs without a JIT compile."""
    return tuple(a.partition("+")[0] for a in arch)


def _image(m: Matrix, release: CudaRelease, image: CudaImage) -> ContainerImage:
    channel = m.channel(image.repo)
    return ContainerImage(
        repo=image.repo,
        tag=image.tag,
        digest=image.digest,
        rocm=None,
        stream="legacy",  # not a ROCm image: no stream applies (JSON reports rocm_stream null)
        vllm=release.version,
        python=release.python,
        torch=None,
        arch=image.arch,
        family_tag=None,
        entrypoint="vllm-serve",
        deprecated=False,
        provenance=release.provenance,
        vendor="nvidia",
        cuda=image.cuda,
        official=channel is not None and channel.official,
    )


# The PyPI wheel is installed with the PyTorch index its install page names (cuda.toml
# wheel_index) and needs the glibc its platform tag asks for (wheel_glibc): the release's own.
_PYTHONS = ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14")  # CPython releases a spec can admit


def _wheel(release: CudaRelease) -> WheelVariant | None:
    """vLLM's PyPI wheel of the release (its CUDA and PyTorch index from the install page), or
    None when the data does not say which CUDA it is built with or where its torch comes from."""
    cuda, index = release.wheel_cuda, release.wheel_index
    if cuda is None or index is None:
        return None
    tag = f"cu{cuda.major}{cuda.minor}"
    same = next((i for i in release.images if i.cuda == cuda), None)
    takes: tuple[str, ...] = ()
    if release.requires_python:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            spec = SpecifierSet(release.requires_python)
            takes = tuple(p for p in _PYTHONS if Version(p) in spec)
        except InvalidSpecifier:
            takes = ()
    return WheelVariant(
        name=tag,
        rocm=None,
        python=takes,
        # 0: the floor was not read (the glibc check is then not made, never guessed)
        glibc_min=release.wheel_glibc or Version("0"),
        vllm=None,
        includes_nightlies=False,
        index_url=index,
        status="release",
        # Built like the release's images of the same CUDA (the pipeline's wheel build step);
        # not read from the wheel itself: inferred.
        arch=same.arch if same is not None else release.arch,
        provenance=Provenance(
            source=release.provenance.source,
            confidence="inferred",
            note="the wheel's arch list is its image family's (same pipeline), not read from the "
            "wheel",
        ),
        vendor="nvidia",
        cuda=cuda,
        requires_python=release.requires_python,
    )


def _carrier(release: CudaRelease, wheel: WheelVariant) -> CudaImage:
    """What ``evaluate`` checks a wheel by: its CUDA and its compute capabilities."""
    return CudaImage(
        repo="pypi",
        tag=wheel.name,
        cuda=wheel.cuda or release.cuda,
        arch=wheel.arch,
        arch_aarch64=(),
        provenance=wheel.provenance,
    )


def candidates(m: Matrix, request: Request) -> list[tuple[CudaRelease, CudaImage, Candidate]]:
    out: list[tuple[CudaRelease, CudaImage, Candidate]] = []
    for release in sorted(m.cuda, key=lambda r: r.version, reverse=True):
        if request.vllm is not None and release.version not in request.vllm:
            continue
        record = next((r for r in m.vllm if r.version == release.version), None)
        wheel = _wheel(release)
        if wheel is not None and (request.paths is None or "wheel" in request.paths):
            as_image = _carrier(release, wheel)
            out.append(
                (
                    release,
                    as_image,
                    WheelCandidate(vllm=release.version, rocm=None, release=record, wheel=wheel),
                )
            )
        if request.paths is not None and "image" not in request.paths:
            continue
        for image in release.images:
            if any(word in image.tag for word in _VARIANT_WORDS):
                continue
            out.append(
                (
                    release,
                    image,
                    ImageCandidate(
                        vllm=release.version,
                        rocm=None,
                        release=record,
                        image=_image(m, release, image),
                    ),
                )
            )
    return out


def evaluate(
    m: Matrix,
    node: Node,
    release: CudaRelease,
    image: CudaImage,
    cand: Candidate,
    quantization: str | None = None,
    kv_cache_dtype: str | None = None,
    model: Request | None = None,
) -> Evaluation:
    reasons: list[Reason] = []
    warnings: list[Advisory] = []
    src = release.provenance.source
    kv = (kv_cache_dtype or "").lower()
    if kv and kv != "auto":
        # CacheDType is platform-wide (the AMD check, stated once); what the CUDA attention
        # backends take per compute capability is not read: said, and unknown under --strict.
        listed = kv_cache_dtype_listed(m, cand, Request(kv_cache_dtype=kv))
        if listed is not None:
            reasons.append(listed)
        else:
            warnings.append(
                Advisory.said(
                    "kv-cache-dtype-unchecked",
                    dtype=kv,
                    vllm=release.version,
                    caps=", ".join(_caps(node, m)) or "unknown",
                    severity="info",
                    source=src,
                )
            )
    label = cand.label
    gpus = nvidia_gpus(node)
    product = str(gpus[0].get("name") or "the GPU") if gpus else "the GPU"
    caps = _caps(node, m)
    missing = [c for c in caps if not _covers(image.arch, c)]
    if missing:
        w = finding(
            "cuda-arch-missing",
            label=label,
            listed=", ".join(image.arch),
            product=product,
            missing=", ".join(missing),
            first_missing=missing[0],
        )
        reasons.append(
            Reason(
                code="cuda-arch-missing",
                message=w.message,
                facts=(
                    Fact(text=w.facts[0], source=src, about=label),
                    Fact(text=w.facts[1], source="nvidia-smi"),
                ),
                hint=w.hint,
                release=release.version,
            )
        )
    # The method's floor where the release's config states one (a method it does not state is
    # not checked here: vLLM itself refuses it at load if the GPU is below its floor).
    floor, below = _below_floor(release, caps, quantization)
    if quantization and floor and below:
        w = finding(
            "cuda-quant-capability",
            vllm=release.version,
            method=quantization,
            floor=floor,
            product=product,
            caps=", ".join(below),
        )
        reasons.append(
            Reason(
                code="cuda-quant-capability",
                message=w.message,
                facts=(
                    Fact(text=w.facts[0], source=src, about=str(release.version)),
                    Fact(text=w.facts[1], source="nvidia-smi"),
                ),
                hint=w.hint,
                release=release.version,
            )
        )
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
    if (wheel := cand.installs) is not None:
        reasons += _wheel_reasons(m, node, release, wheel, label)
    rule = m.cuda_driver_rule(image.cuda)
    driver = nvidia_driver(node)
    branch = driver_branch(driver)
    if rule is None:
        warnings.append(
            Advisory.said(
                "nvidia-driver-unchecked/no-rule", major=image.cuda.major, severity="info"
            )
        )
    elif branch is None:
        warnings.append(
            Advisory.said(
                "nvidia-driver-unchecked",
                cuda=image.cuda,
                label=label,
                major=image.cuda.major,
                min_driver=rule.min_driver,
                source=rule.provenance.source,
            )
        )
    elif branch < rule.min_driver:
        w = finding(
            "cuda-driver-too-old",
            label=label,
            cuda=image.cuda,
            major=image.cuda.major,
            min_driver=rule.min_driver,
            driver=driver,
        )
        reasons.append(
            Reason(
                code="cuda-driver-too-old",
                message=w.message,
                facts=(
                    Fact(text=w.facts[0], source=src, about=label),
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
        )
    if model is not None:
        from resolver.solve.model import model_rules

        found, said = model_rules(m, node, model, cand, amd=False)
        reasons += found
        warnings += said
    return Evaluation(candidate=cand, reasons=tuple(reasons), warnings=tuple(warnings))


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
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    out: list[Reason] = []
    src = release.provenance.source
    if node.python and wheel.requires_python:
        try:
            takes = SpecifierSet(wheel.requires_python)
            python = Version(node.python)
        except (InvalidSpecifier, InvalidVersion):
            takes = None
        if takes is not None and python not in takes:
            fits = [v for v in ("3.12", *wheel.python) if Version(v) in takes]
            w = finding(
                "python-mismatch/cuda" if fits else "python-mismatch/cuda-none",
                label=label,
                requires=wheel.requires_python,
                python=node.python,
                vllm=release.version,
                fit=fits[0] if fits else "",
            )
            out.append(
                Reason(
                    code="python-mismatch",
                    message=w.message,
                    facts=(Fact(text=w.facts[0], source=src, about=label),),
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
            )
    os_rel = m.os_listed_as(node.os) if node.os else None
    glibc_text = node.glibc or (str(os_rel.glibc) if os_rel and os_rel.glibc else None)
    try:
        glibc = Version(glibc_text) if glibc_text else None
    except InvalidVersion:
        glibc = None
    floor = release.wheel_glibc
    if glibc is not None and floor is not None and glibc < floor:
        w = finding(
            "glibc-too-old/cuda",
            label=label,
            platform=release.wheel_platform or "manylinux",
            glibc_min=floor,
            glibc=glibc,
            vllm=release.version,
        )
        out.append(
            Reason(
                code="glibc-too-old",
                message=w.message,
                facts=(Fact(text=w.facts[0], source=src, about=label),),
                hint=w.hint,
                fix=Fix(
                    kind="os",
                    text=w.fix,
                    host=True,
                    change=HostChange(kind="glibc", value=str(wheel.glibc_min)),
                ),
                release=release.version,
            )
        )
    return out


def evaluate_candidate(
    m: Matrix, node: Node, cand: Candidate, request: Request | None = None
) -> Evaluation:
    """An NVIDIA candidate (another group's plan) checked on ``node`` with every check a
    candidate of its own would get, the request's quantization and KV cache dtype included."""
    quant = request.quantization if request is not None else None
    kv = request.kv_cache_dtype if request is not None else None
    if cand.runs_as_user:  # vLLM's PyPI wheel, checked on the image that carries its build
        release = m.cuda_release(cand.vllm)
        wheel = _wheel(release) if release is not None else None
        if release is not None and wheel is not None:
            carrier = _carrier(release, wheel)
            return evaluate(m, node, release, carrier, cand, quant, kv, request)
    for release in m.cuda:
        for image in release.images:
            if cand.label == f"{image.repo}:{image.tag}":
                return evaluate(m, node, release, image, cand, quant, kv, request)
    raise RequestError(
        phrase("request/cuda-image-unknown", label=cand.label),
        hint=phrase("request/cuda-image-unknown-hint"),
    )


def _image_needs_driver(
    plan: Evaluation | None, rejected: tuple[Evaluation, ...]
) -> list[Advisory]:
    """A wheel planned where the same release's image fails only on the driver: say so, and what
    the image needs (a newer branch gives the container)."""
    if plan is None or not plan.candidate.runs_as_user:
        return []
    for e in rejected:
        c = e.candidate
        if c.pulled and c.vllm == plan.candidate.vllm and e.host_fixable:
            fix = next((r.fix for r in e.reasons if r.fix is not None), None)
            return [
                Advisory.said(
                    "cuda-image-needs-driver",
                    label=c.label,
                    fix=fix.text if fix else phrase("cuda-image-needs-driver/unknown"),
                    vllm=c.vllm,
                    severity="info",
                    source=e.reasons[0].source,
                )
            ]
    return []


def _recipe_hint(m: Matrix, node: Node, request: Request) -> Phrase:
    """vLLM's own CUDA recipe, built for this node's compute capability only."""
    from resolver.util import shell

    releases = [
        r
        for r in sorted(m.cuda, key=lambda r: r.version, reverse=True)
        if request.vllm is None or r.version in request.vllm
    ]
    if not releases:
        return phrase("cuda-recipe/hint-none")
    release = releases[0]
    caps = " ".join(_caps(node, m)) or " ".join(release.arch)
    words = [
        "docker",
        "build",
        "-f",
        "docker/Dockerfile",
        "--target",
        "vllm-openai",
        "--build-arg",
        f"torch_cuda_arch_list={caps}",
        "-t",
        f"vllm-cuda:{release.version}",
        f"https://github.com/vllm-project/vllm.git#v{release.version}",
    ]
    return phrase("cuda-recipe/hint", command=shell.join(words))


def _driver_refuses(m: Matrix, node: Node, release: CudaRelease) -> bool:
    """Whether NVIDIA's floor for the release's CUDA (images and wheels alike) is above the
    host's driver branch (a host whose branch is unknown is not refused here)."""
    branch = driver_branch(nvidia_driver(node))
    cudas = {release.cuda, *(release.wheel_variants or ())}
    if release.wheel_cuda is not None:
        cudas.add(release.wheel_cuda)
    floors = [r.min_driver for c in cudas if (r := m.cuda_driver_rule(c)) is not None]
    return branch is not None and bool(floors) and branch < min(floors)


def _unread(m: Matrix, node: Node, request: Request) -> tuple[MissingFact, ...]:
    """Releases in the request whose build covers the GPU but whose image tags the data has not
    read (an sdist without the publish script): what would tell, and how to read it."""
    caps = _caps(node, m)
    out = []
    for release in sorted(m.cuda, key=lambda r: r.version, reverse=True):
        if release.images or (request.vllm is not None and release.version not in request.vllm):
            continue
        if _below_floor(release, caps, request.quantization)[1]:
            continue  # the method's floor refuses every artifact of the release alike
        if _driver_refuses(m, node, release):
            continue  # its CUDA needs a newer driver than the host's: not a path as it stands
        if caps and all(_covers(release.arch, c) for c in caps):
            out.append(
                MissingFact(
                    kind="release",
                    subject=str(release.version),
                    detail=phrase("missing/cuda-no-tags", vllm=release.version, arch=release.arch),
                    fetch=None,
                    source=Phrase.verbatim(release.provenance.source),
                )
            )
    return tuple(out[:3])


def _unread_releases(m: Matrix, request: Request) -> tuple[MissingFact, ...]:
    """Releases in the request that ``vllm.toml`` lists but whose CUDA image tags and wheel the
    data does not hold (no ``cuda.toml`` record, or one read from an sdist without the publish
    script or the wheel's CUDA): newest first, with the command that reads them."""
    cuda = {r.version: r for r in m.cuda}
    out = []
    for version in sorted({r.version for r in m.vllm}, reverse=True):
        if request.vllm is not None and version not in request.vllm:
            continue
        release = cuda.get(version)
        if release is not None and (release.images or _wheel(release) is not None):
            continue
        if release is None:
            detail = phrase("missing/cuda-unread", vllm=version)
            source = ""
        else:
            detail = phrase("missing/cuda-no-artifacts", vllm=version, arch=release.arch)
            source = release.provenance.source
        out.append(
            MissingFact(
                kind="release",
                subject=str(version),
                detail=detail,
                # a read sdist that said nothing of images or wheel says no more when re-read
                fetch=None
                if release is not None
                else f"rocm-vllm matrix refresh --source cuda --tag {version} --write",
                source=Phrase.verbatim(source),
            )
        )
    return tuple(out[:3])


def _as_nvidia_node(node: Node) -> Node:
    """A report written before issue 38 counts an NVIDIA node's GPUs as 0 and calls it a problem
    (``not-an-amd-gpu``): the decision's node counts them and drops that problem, as the probe
    now does."""
    from msgspec.structs import replace

    if node.gfx_targets or node.logical_gpu_count:
        return node
    count = len(nvidia_gpus(node))
    problems = tuple(p for p in node.problems if p.code != "not-an-amd-gpu")
    return replace(node, physical_gpu_count=count, logical_gpu_count=count, problems=problems)


class CudaProvider:
    """NVIDIA as a provider of the one solver (``resolver.solve.solve``): vLLM's CUDA images and
    PyPI wheel of each release, checked for the GPU's compute capability, the quantization's
    floor, the KV cache dtype and NVIDIA's driver floor. The verdict is chosen where AMD's is."""

    def __init__(self, m: Matrix, node: Node, request: Request) -> None:
        if not nvidia_gpus(node):
            raise RequestError(
                phrase("request/no-nvidia-gpu"), hint=phrase("request/no-nvidia-gpu-hint")
            )
        self.m = m
        self.request = request
        self.node = _as_nvidia_node(node)
        if request.paths is not None and not request.paths & {"image", "wheel"}:
            raise RequestError(
                phrase("request/cuda-no-source"), hint=_recipe_hint(m, self.node, request)
            )
        self._listed = {c.key: (release, image, c) for release, image, c in candidates(m, request)}

    def unplaceable(self) -> tuple[MissingFact, ...]:
        return ()  # a GPU the data cannot place is an advisory per artifact (cuda-arch-unchecked)

    def candidates(self) -> list[Candidate]:
        return [c for _, _, c in self._listed.values()]

    def evaluate(self, cand: Candidate) -> Evaluation:
        release, image, _ = self._listed[cand.key]
        q = self.request
        return evaluate(
            self.m, self.node, release, image, cand, q.quantization, q.kv_cache_dtype, q
        )

    def rank_key(self, e: Evaluation) -> tuple[object, ...]:
        return _rank(e, self.request.prefer)

    def nothing_listed(self) -> tuple[MissingFact, ...]:
        """No release in the request has CUDA artifacts in the data: what would tell, or bad
        input (a range no release with images matches)."""
        m, request = self.m, self.request
        if not m.cuda:
            return (
                MissingFact(
                    kind="release",
                    subject="cuda",
                    detail=phrase("missing/cuda-none"),
                    fetch="rocm-vllm matrix refresh --source cuda",
                ),
            )
        if unread := _unread_releases(m, request):
            # A release the data lists whose CUDA artifacts were never read is not bad input:
            # what they are is unknown, and the refresh names them (issue 38 a).
            return unread
        spec = str(request.vllm) if request.vllm else "any"
        known = [r for r in m.cuda if r.images]
        raise RequestError(
            phrase("request/cuda-no-release", spec=spec),
            hint=phrase(
                "request/cuda-no-release-hint", first=known[0].version, last=known[-1].version
            )
            if known
            else phrase("request/cuda-no-release-hint-none"),
        )

    def unread(self, rejected: tuple[Evaluation, ...]) -> tuple[MissingFact, ...]:
        return _unread(self.m, self.node, self.request)

    def warnings(
        self, plan: Evaluation | None, rejected: tuple[Evaluation, ...], accepted: list[Evaluation]
    ) -> list[Advisory]:
        return _image_needs_driver(plan, rejected)
