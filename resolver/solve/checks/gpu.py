"""The GPU against the artifact: ``gfx-unsupported`` and ``gfx-not-shipped`` (the artifact
carries no code for the gfx target, a source build's CMake refuses it, or evidence read from the
image contradicts its arch list), and the unofficial HSA-override paths that pass instead."""

from __future__ import annotations

import msgspec.structs

from resolver.data.model import GfxTarget, Matrix
from resolver.solve.checks.facts import _about_path, _from_record
from resolver.solve.checks.unknown import artifact_facts_unknown
from resolver.solve.finding import Found, Phrase, arch_phrase, finding, phrase
from resolver.solve.types import Candidate, Fix, Reason


def gfx_check(
    cand: Candidate, target: GfxTarget, m: Matrix | None = None, *, override: bool = True
) -> tuple[Reason | None, bool, str | None]:
    """Does the candidate run on ``target``? (reason, unofficial, HSA override it relies on).
    ``m``: the data, to name the releases whose build does accept a target a source build's
    CMake refuses. ``override``: False where the node cannot take the target's HSA override."""
    arch = cand.arch
    if not override:
        target = msgspec.structs.replace(target, override=None, override_target=None)
    if target.name in cand.lacks:
        # Evidence read from the image outweighs the arch list a docs page claims for it.
        return gfx_contradicted(cand, target), False, None
    if target.name in arch:
        return None, False, None
    # A near target the runtime can be told to load (HSA_OVERRIDE_GFX_VERSION): unofficial, and
    # the plan that uses it (also for a GPU vLLM does not support itself, such as gfx1031).
    if target.override and target.override_target in arch and not cand.from_source:
        return None, True, target.override
    if _override_build(cand, target):
        return None, True, target.override
    if target.vllm_status == "unsupported":
        return gfx_unsupported(cand, target, arch, cand.source), False, None
    if not arch:
        return artifact_facts_unknown(cand, cand.source), False, None
    # CMake accepts more targets than a stack ships; a source build may take them (unofficial).
    # Not on a preview stack: a ROCm nightly built for one GPU (gfx1250) carries nothing else.
    if (
        cand.from_source
        and cand.release is not None
        and target.name in cand.release.cmake_arch
        and not (cand.stack is not None and cand.stack.preview)
    ):
        return None, True, None
    if (
        cand.from_source
        and cand.release is not None
        and cand.release.cmake_arch  # an unread CMake list claims nothing
        and target.name not in cand.release.cmake_arch
        and m is not None
    ):
        return gfx_not_buildable(m, cand, target, cand.source), False, None
    return gfx_not_shipped(cand, target, arch, cand.source), False, None


def _override_build(cand: Candidate, target: GfxTarget) -> bool:
    """A source build of the near target, run under the override (unofficial): only where the
    build cannot target the GPU itself (gfx1031 is in no CMake list; gfx1102 builds as itself),
    and not on a preview stack, which carries its one GPU only."""
    rel = cand.release
    if not (target.override and target.override_target and cand.from_source and rel is not None):
        return False
    if target.name in rel.cmake_arch or (cand.stack is not None and cand.stack.preview):
        return False
    return target.override_target in cand.arch or target.override_target in rel.cmake_arch


def gfx_unsupported(cand: Candidate, target: GfxTarget, arch: tuple[str, ...], src: str) -> Reason:
    """``gfx-unsupported``: the artifact lacks the target and vLLM does not support it at all."""
    w = finding(
        "gfx-unsupported",
        label=cand.label,
        arch=arch_phrase(arch),
        gfx=target.name,
        note=target.vllm_note,
    )
    return Reason(
        code="gfx-unsupported",
        message=w.message,
        facts=(_about_path(cand, w.facts[0], src), _from_record(w.facts[1], target)),
        # A GPU the data gives an override names it: a build of the near target runs it
        # (``_override_build``), so "no vLLM path exists" would be untrue.
        hint=gfx_hint(target),
        gfx=(target.name,),
        unofficial=bool(target.alternative or target.override),
        override=target.override,
    )


def gfx_unsupported_by_vllm(target: GfxTarget) -> Reason:
    """``gfx-unsupported`` for a release whose facts are unknown: what the GPU lacks holds
    anyway."""
    w = finding("gfx-unsupported/by-vllm", gfx=target.name, note=target.vllm_note)
    return Reason(
        code="gfx-unsupported",
        message=w.message,
        facts=(_from_record(w.facts[0], target),),
        # A GPU the data gives an override names it: a build of the near target runs it
        # (``_override_build``), so "no vLLM path exists" would be untrue.
        hint=gfx_hint(target),
        gfx=(target.name,),
        unofficial=bool(target.alternative or target.override),
        override=target.override,
    )


def gfx_not_shipped(cand: Candidate, target: GfxTarget, arch: tuple[str, ...], src: str) -> Reason:
    """``gfx-not-shipped``: the artifact carries no code for the target; another artifact may."""
    w = finding("gfx-not-shipped", label=cand.label, arch=arch_phrase(arch), gfx=target.name)
    return _not_shipped(cand, target, w, src)


def gfx_contradicted(cand: Candidate, target: GfxTarget) -> Reason:
    """``gfx-not-shipped`` where the arch list claims the target but evidence read from the
    image (``images.toml`` ``lacks``) says it carries no code for it."""
    w = finding("gfx-not-shipped/contradicted", label=cand.label, gfx=target.name)
    return _not_shipped(cand, target, w, cand.lacks_source)


def _not_shipped(cand: Candidate, target: GfxTarget, w: Found, src: str) -> Reason:
    return Reason(
        code="gfx-not-shipped",
        message=w.message,
        facts=(_about_path(cand, w.facts[0], src),),
        hint=w.hint,
        fix=Fix(kind="gfx", text=w.fix, host=False),
        gfx=(target.name,),
    )


def gfx_not_buildable(m: Matrix, cand: Candidate, target: GfxTarget, src: str) -> Reason:
    """``gfx-not-shipped`` for a source build: the release's CMake does not accept the target
    (HIP_SUPPORTED_ARCHS), so no build of it carries code for it; the hint names the releases
    whose build does."""
    assert cand.release is not None
    able = [str(v) for v in m.cmake_accepts(target.name)]
    some = ", ".join(able) if len(able) <= 6 else f"{able[0]}, {able[1]}, ..., {able[-1]}"
    w = finding(
        "gfx-not-shipped/not-buildable" if able else "gfx-not-shipped/not-buildable-anywhere",
        vllm=cand.vllm,
        gfx=target.name,
        arch=arch_phrase(cand.release.cmake_arch),
        releases=some,
    )
    return _not_shipped(cand, target, w, src)


def gfx_hint(target: GfxTarget, *, override: bool = True) -> Phrase:
    if target.override and override:
        return phrase(
            "gfx-unsupported/hint-override",
            override=target.override,
            override_target=target.override_target,
        )
    if target.alternative:
        return Phrase.verbatim(target.alternative)
    return phrase("gfx-unsupported/hint-none")
