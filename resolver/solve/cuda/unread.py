"""Releases the data has not read the CUDA artifacts of: what would tell, and how to read
it (a ``MissingFact`` each, newest first)."""

from __future__ import annotations

from resolver.data.model import CudaRelease, Matrix
from resolver.data.node import Node
from resolver.solve.cuda.gpus import _below_floor, _caps, _covers, driver_branch, nvidia_driver
from resolver.solve.cuda.listing import _wheel
from resolver.solve.finding import Phrase, phrase
from resolver.solve.types import MissingFact, Request


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
