"""What each release in ``cuda.toml`` offers as candidates: its ``vllm/vllm-openai`` image
families and vLLM's PyPI wheel (checked on the image record that carries its build)."""

from __future__ import annotations

from packaging.version import Version

from resolver.data.model import (
    ContainerImage,
    CudaImage,
    CudaRelease,
    Matrix,
    Provenance,
    WheelVariant,
)
from resolver.solve.types import Candidate, ImageCandidate, Request, WheelCandidate

# The image families a plan offers: the default and the other-CUDA one (cu129); the Ubuntu
# 24.04 and EFA variants are the same build on another base, for those who ask for them.
_VARIANT_WORDS = ("ubuntu", "efa")


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
