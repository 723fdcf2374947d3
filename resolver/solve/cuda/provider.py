"""NVIDIA as a provider of the one solver: ``CudaProvider`` (candidates, evaluation, rank,
what is missing) and the advisories and hints it adds to a decision."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from resolver.data.model import Matrix
from resolver.data.node import Node
from resolver.solve.cuda.evaluation import evaluate
from resolver.solve.cuda.gpus import _caps, nvidia_gpus
from resolver.solve.cuda.listing import candidates
from resolver.solve.cuda.unread import _unread, _unread_releases
from resolver.solve.finding import Phrase, phrase
from resolver.solve.rank import _rank
from resolver.solve.types import (
    Advisory,
    Candidate,
    Evaluation,
    MissingFact,
    Request,
    RequestError,
)

if TYPE_CHECKING:
    from resolver.solve.modelspec import GpuMemory


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
        memory = self.memory if q.model is not None else None
        return evaluate(
            self.m,
            self.node,
            release,
            image,
            cand,
            q.quantization,
            q.kv_cache_dtype,
            q,
            memory=memory,
        )

    @functools.cached_property
    def memory(self) -> GpuMemory | None:
        """The GPU memory --model's fit is sized for (``model.gpu_memory``), read once per
        solve."""
        from resolver.solve.model import gpu_memory

        return gpu_memory(self.m, self.node)

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

    def finish(self, chosen: Evaluation) -> Evaluation:
        return chosen  # an NVIDIA path's advisories are all made when it is evaluated
