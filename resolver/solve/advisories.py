"""Advisories: warnings that do not stop a path but say what to watch for, as small rules.

Candidate rules (image channel, ROCm stack, AMD's gfx list, confidence) run for every candidate;
node rules (AITER, FP8/MX formats, mixed GPUs, partitions, overrides, probe problems, and the host
checks of ``resolver.solve.host``) and decision rules (stack choice, newer unknown releases) run
once for the decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from packaging.version import Version

from resolver.data.codes import AdvisoryCode
from resolver.data.model import (
    ComponentPin,
    ContainerImage,
    GfxTarget,
    Matrix,
    Provenance,
    RocmStack,
)
from resolver.data.node import Node
from resolver.solve.finding import Phrase, finding, phrase
from resolver.solve.host import (
    host_os_warnings,
    kernel_floor_warnings,
    unified_memory_warnings,
    visible_device_warnings,
)
from resolver.solve.types import (
    FP8_QUANT,
    MX_QUANT,
    MXFP4_QUANT,
    Advisory,
    Candidate,
    Evaluation,
    Request,
    mx_format,
)

# --- candidate rules --------------------------------------------------------------------------


def candidate_warnings(
    m: Matrix, cand: Candidate, targets: Iterable[GfxTarget] = ()
) -> list[Advisory]:
    """The warnings said of a path the answer names (the plan, an alternative), made for those
    only: what AMD's matrix says of its ROCm and the node's GPUs (rocm-lacks-gfx), an arch list
    resting on a docs page alone (arch-from-docs), then its own record's: its image channel, its
    stack (for a build for ``targets``), its confidence. A rejected path's reasons are what is
    said of it, and at 4x the data hundreds of paths pass unnamed (the warm check's cost)."""
    targets = tuple(targets)
    out: list[Advisory] = []
    if cand.rocm is not None:
        out.extend(rocm_lists_gfx(m, targets, cand))
    out.extend(arch_from_docs(targets, cand))
    if (image := cand.image) is not None:
        out.extend(image_warnings(image))
    if cand.stack is not None:
        out.extend(stack_warnings(cand, cand.stack, targets))
    out.extend(low_confidence(cand))
    return out


def arch_from_docs(targets: Iterable[GfxTarget], cand: Candidate) -> list[Advisory]:
    """``arch-from-docs``: the image's code for the node's GPU rests on a docs page's claim alone,
    read neither from the release's build files nor from the image (--strict will not plan it)."""
    image = cand.image
    if image is None or image.vendor != "amd" or image.arch_from != "docs":
        return []
    gfx = [t.name for t in targets if t.name in image.arch]
    if not gfx:
        return []
    return [
        Advisory.said(
            "arch-from-docs",
            label=cand.label,
            gfx=", ".join(gfx),
            ref=image.ref,
            severity="info",
            source=image.provenance.source,
        )
    ]


def rocm_lists_gfx(m: Matrix, targets: Iterable[GfxTarget], cand: Candidate) -> list[Advisory]:
    """``rocm-lacks-gfx``: the artifact ships code for a GPU AMD's matrix for its ROCm omits."""
    assert cand.rocm is not None
    rocm = m.rocm_for(cand.rocm)
    if rocm is None or not rocm.gfx:
        return []
    out = []
    for t in targets:
        if t.name in rocm.gfx or t.name not in cand.arch:
            continue
        out.append(
            Advisory.said(
                "rocm-lacks-gfx",
                rocm=rocm.label,
                gfx=t.name,
                label=cand.label,
                first=_first_listing(m, t.name),
                source=rocm.provenance.source,
            )
        )
    return out


def _first_listing(m: Matrix, gfx: str) -> Phrase:
    listed = sorted(r.version for r in m.rocm if gfx in r.gfx)
    return (
        phrase("rocm-lacks-gfx/first", version=listed[0])
        if listed
        else phrase("rocm-lacks-gfx/never")
    )


def image_warnings(image: ContainerImage) -> list[Advisory]:
    """``deprecated-channel`` and ``amd-image``."""
    out: list[Advisory] = []
    if image.deprecated:
        out.append(
            Advisory.said(
                "deprecated-channel", repo=image.repo, ref=image.ref, source=image.provenance.source
            )
        )
    elif not image.official:
        w = finding("amd-image", repo=image.repo)
        out.append(
            # A warning, not a note: vLLM's docs call the channel deprecated, and
            # docs/verdicts.md makes a deprecated channel supported_with_warnings.
            Advisory(
                code="amd-image",
                message=w.message,
                hint=w.hint,
                source=Phrase.verbatim(image.provenance.source),
            )
        )
    return out


def built_moving(stack: RocmStack, targets: tuple[GfxTarget, ...]) -> tuple[ComponentPin, ...]:
    """The stack's pins on a moving branch that a build for ``targets`` builds: the one rule the
    check's ``unpinned-ref`` and the Dockerfile's refusal (--allow-moving-refs) share. A component
    no target is built for (FlashAttention's CK kernels, MORI, AITER behind its gate, each by the
    stack's recorded arch list) is left out of the build, so its branch cannot move it; one whose
    list the record lacks counts as built."""
    names = {t.name for t in targets}
    aiter = {t.name for t in targets if t.features.aiter == "full"} & set(stack.aiter_arch)

    def built(component: str) -> bool:
        if component == "flash_attention" and stack.fa_arch is not None:
            return bool(names & set(stack.fa_arch))
        if component == "mori" and stack.mori_arch:
            return bool(names & set(stack.mori_arch))
        if component == "aiter":
            return bool(aiter)
        return True

    return tuple(p for p in stack.moving_pins if built(p.component))


def stack_warnings(
    cand: Candidate, stack: RocmStack, targets: tuple[GfxTarget, ...] = ()
) -> list[Advisory]:
    """``preview-rocm`` for a stack on a nightly; ``unpinned-ref`` for a source build on moving
    pins it builds for ``targets`` (``built_moving``)."""
    out: list[Advisory] = []
    if stack.preview:
        out.append(
            Advisory.said(
                "preview-rocm", label=cand.label, stack=stack.label, source=stack.provenance.source
            )
        )
    # an image or wheel is built already; a build takes only what its targets need
    moving = built_moving(stack, targets) if cand.from_source and targets else ()
    if moving:
        refs = ", ".join(f"{p.component} {p.repo}@{p.ref}" for p in moving)
        out.append(
            Advisory.said(
                "unpinned-ref", label=cand.label, refs=refs, source=stack.provenance.source
            )
        )
    return out


def after_registry_checks(
    warnings: list[Advisory], *, image: str, pinned: bool, contents_checked: bool
) -> list[Advisory]:
    """``low-confidence`` once `image` has asked the registry: a tag pinned to its digest is
    confirmed there, and a smoke test that matched the data confirms what it holds, so the note
    shrinks to what is still unconfirmed, or goes."""
    if not pinned:
        return warnings
    out: list[Advisory] = []
    for w in warnings:
        if w.code != "low-confidence":
            out.append(w)
        elif not contents_checked:
            said = finding("low-confidence/pinned", image=image)
            out.append(
                Advisory(
                    code="low-confidence",
                    severity="info",
                    message=said.message,
                    hint=said.hint,
                    source=w.source,
                )
            )
    return out


def low_confidence(cand: Candidate) -> list[Advisory]:
    """``low-confidence``: the candidate's facts were inferred, not read at the release or
    registry."""
    if cand.confidence not in ("inferred", "release-branch", "unknown"):
        return []
    return [
        Advisory.said(
            "low-confidence/image" if cand.pulled else "low-confidence",
            label=cand.label,
            confidence=cand.confidence,
            vllm=cand.vllm,
            severity="info",
            source=cand.source,
        )
    ]


# --- node rules -------------------------------------------------------------------------------


def node_warnings(
    m: Matrix, node: Node, request: Request, plan: Evaluation | None
) -> list[Advisory]:
    """Every node-level advisory for ``plan`` (or for no plan), in a fixed order."""
    out: list[Advisory] = []
    targets = [t for t in (m.gfx_target(n) for n in node.gfx_targets) if t is not None]
    quant = request.gated_quantization
    fp8_asked = quant in FP8_QUANT or (request.kv_cache_dtype or "").startswith("fp8")
    release = plan.candidate.vllm if plan is not None else None
    for t in targets:
        out.extend(aiter(t, plan))
        out.extend(mxfp4(m, t, quant, release))
        if quant in MX_QUANT - MXFP4_QUANT:
            out.extend(mx_emulated(m, t, quant, release))
        out.extend(fp8_format(m, t, fp8_asked, release))
    out.extend(mixed_fp8_formats(targets, fp8_asked))
    out.extend(mixed_gfx(targets))
    out.extend(rdna_multi_gpu(node, targets))
    out.extend(custom_allreduce_off(m, node, targets, release))
    out.extend(cpx_partition(node))
    out.extend(override_not_needed(node, targets))
    out.extend(unofficial_override(plan))
    out.extend(host_os_warnings(m, node, targets))
    out.extend(kernel_floor_warnings(node, targets))
    out.extend(unified_memory_warnings(node, targets))
    out.extend(visible_device_warnings(node, targets))
    out.extend(probe_problems(node))
    return out


def aiter(t: GfxTarget, plan: Evaluation | None) -> list[Advisory]:
    """``aiter-off-by-default`` (full AITER support) and ``aiter-partial`` (Triton kernels only)."""
    if t.features.aiter == "full" and _ships_aiter(plan):
        by_image = plan is not None and plan.candidate.pulled
        w = finding("aiter-off-by-default", gfx=t.name)
        # How the user sets it depends on how the plan installs vLLM.
        hint = finding(f"aiter-off-by-default/{plan.candidate.kind}").hint if plan else w.hint
        return [
            Advisory(
                code="aiter-off-by-default",
                severity="info",
                message=w.message,
                hint=hint,
                source=w.source,
                env=(("VLLM_ROCM_USE_AITER", "1"),),
                applied_by_plan=by_image,
            )
        ]
    if t.features.aiter == "triton-only":
        return [
            Advisory.said(
                "aiter-partial", gfx=t.name, severity="info", source=t.features.provenance.source
            )
        ]
    return []


def _ships_aiter(plan: Evaluation | None) -> bool:
    """Whether the plan's vLLM has AITER to turn on: its release pins AITER (every release from
    v0.8.2 does, none before), or the release's build facts are unknown (said rather than
    hidden); with no plan, the advice is for whatever runs."""
    release = plan.candidate.release if plan is not None else None
    if release is None or not release.known:
        return True
    stack = plan.candidate.stack if plan is not None else None
    return (stack or release).pin("aiter") is not None


def _release_gate(
    m: Matrix, release: Version | None, gate: str, t: GfxTarget
) -> tuple[bool, str] | None:
    """The planned release's own answer for ``gate`` on ``t`` (capabilities.toml, read from its
    sdist) with its source; None where there is no plan or the gate was not read."""
    found = m.gate(release, gate, t.name) if release is not None else None
    return None if found is None else (found[0], found[1].provenance.source)


def mx_emulated(m: Matrix, t: GfxTarget, quant: str, release: Version | None) -> list[Advisory]:
    """``mxfp4-emulated`` / ``mxfp8-emulated`` from the release's own kernel tables: on a GPU
    without MX compute (and, for MXFP4, no source for a weight-only path) vLLM falls back to its
    emulation kernel, which runs anywhere in BF16."""
    if quant not in MX_QUANT or t.features.mx or release is None:
        return []
    fmt = mx_format(quant)
    if fmt == "mxfp4" and t.features.mxfp4 != "none":
        return []  # the recipe's weight-only path (mxfp4 below)
    caps = m.capabilities_of(release)
    if caps is None or not caps.emulates(fmt):
        return []
    kernel = next(n for n in caps.kernels(fmt) or () if n.startswith("Emulation"))
    four = fmt == "mxfp4"
    w = finding(
        "mxfp4-emulated/kernel" if four else "mxfp8-emulated",
        quant=quant,
        gfx=t.name,
        vllm=release,
        kernel=kernel,
    )
    return [
        Advisory(
            code="mxfp4-emulated" if four else "mxfp8-emulated",
            severity="info",
            message=w.message,
            hint=w.hint,
            source=Phrase.verbatim(caps.provenance.source),
        )
    ]


def mxfp4(m: Matrix, t: GfxTarget, quant: str, release: Version | None) -> list[Advisory]:
    """``mxfp4-native`` / ``mxfp4-emulated``: how an MXFP4 checkpoint runs on this GPU."""
    if quant not in MXFP4_QUANT or t.features.mxfp4 == "none":
        return mx_emulated(m, t, quant, release)
    src = t.features.mxfp4_provenance
    native = t.features.mxfp4 == "native"
    gate = _release_gate(m, release, "mx", t) if native else None
    if gate is not None and gate[0]:
        src = Provenance(source=gate[1], confidence="exact")  # the release's supports_mx says so
    code: AdvisoryCode = "mxfp4-native" if native else "mxfp4-emulated"
    w = finding(code, quant=quant, gfx=t.name)
    return [
        Advisory(
            code=code,
            severity="info",
            message=w.message,
            hint=w.hint,
            source=Phrase.verbatim(src.source),
        )
    ]


def fp8_format(m: Matrix, t: GfxTarget, fp8_asked: bool, release: Version | None) -> list[Advisory]:
    """``fp8-format``: which FP8 encoding vLLM uses on this GPU, when FP8 is asked for: the
    planned release's is_fp8_fnuz where it was read, else the GPU's hardware format."""
    if not (fp8_asked and t.features.fp8):
        return []
    gate = _release_gate(m, release, "fp8_fnuz", t)
    fnuz = gate[0] if gate is not None else t.features.fp8_format == "fnuz"
    source = gate[1] if gate is not None else t.features.provenance.source
    return [
        Advisory.said(
            "fp8-format/fnuz" if fnuz else "fp8-format", gfx=t.name, severity="info", source=source
        )
    ]


def mixed_fp8_formats(targets: list[GfxTarget], fp8_asked: bool) -> list[Advisory]:
    """``mixed-fp8-formats``: FNUZ and OCP GPUs in one node while FP8 is asked for."""
    formats = {t.features.fp8_format for t in targets if t.features.fp8}
    if len(formats) <= 1 or not fp8_asked:
        return []
    return [Advisory.said("mixed-fp8-formats")]


def mixed_gfx(targets: list[GfxTarget]) -> list[Advisory]:
    """``mixed-gfx``: several GPU types in one node."""
    if len(targets) <= 1:
        return []
    return [Advisory.said("mixed-gfx", gfx=", ".join(t.name for t in targets))]


def rdna_multi_gpu(node: Node, targets: list[GfxTarget]) -> list[Advisory]:
    """``rdna-multi-gpu``: several Radeon GPUs, whose RCCL peer-to-peer has hung."""
    gpus = node.logical_gpu_count or len(node.gpus)
    if gpus <= 1 or not any(t.arch.startswith("RDNA") for t in targets):
        return []
    return [Advisory.said("rdna-multi-gpu")]


def custom_allreduce_off(
    m: Matrix, node: Node, targets: list[GfxTarget], release: Version | None
) -> list[Advisory]:
    """``custom-allreduce-off``: several GPUs of a target vLLM keeps its custom all-reduce off
    for (the planned release's use_custom_allreduce where read, else gfx.toml
    ``features.custom_allreduce``), so tensor parallelism all-reduces through RCCL."""
    gpus = node.logical_gpu_count or len(node.gpus)
    gates = {t.name: _release_gate(m, release, "custom_allreduce", t) for t in targets}

    def enabled(t: GfxTarget) -> bool:
        gate = gates[t.name]
        return gate[0] if gate is not None else t.features.custom_allreduce

    off = [t for t in targets if not enabled(t)]
    if gpus <= 1 or not off:
        return []
    names = ", ".join(t.name for t in off)
    gate = gates[off[0].name]
    source = gate[1] if gate is not None else off[0].features.provenance.source
    return [Advisory.said("custom-allreduce-off", gfx=names, severity="info", source=source)]


def cpx_partition(node: Node) -> list[Advisory]:
    """``cpx-partition``: GPUs in CPX mode, where tensor parallelism has produced garbage."""
    if not any(g.partition and (g.partition.compute or "").upper() == "CPX" for g in node.gpus):
        return []
    return [Advisory.said("cpx-partition")]


def override_not_needed(node: Node, targets: list[GfxTarget]) -> list[Advisory]:
    """``override-not-needed``: HSA_OVERRIDE_GFX_VERSION set for a GPU vLLM supports as it is."""
    if not (node.hsa_override_gfx_version and any(t.vllm_status == "official" for t in targets)):
        return []
    return [Advisory.said("override-not-needed", override=node.hsa_override_gfx_version)]


def unofficial_override(plan: Evaluation | None) -> list[Advisory]:
    """``unofficial-override``: the plan relies on HSA_OVERRIDE_GFX_VERSION."""
    if plan is None or not plan.override:
        return []
    return [Advisory.said("unofficial-override", override=plan.override, unofficial=True)]


def probe_problems(node: Node) -> list[Advisory]:
    """The probe's problems, and partition problems of a node file written before the probe checked
    them."""
    problems = list(node.problems)
    if node.gpus:
        # A node file written before the probe checked partitions still gets the check.
        from resolver.data.partitions import partition_problems

        problems += [p for p in partition_problems(node.gpus) if p not in problems]
    return [Advisory.of_problem(p) for p in problems]


# --- decision rules ---------------------------------------------------------------------------


def prefer_not_met(
    request: Request, plan: Evaluation | None, rejected: tuple[Evaluation, ...]
) -> list[Advisory]:
    """``prefer-not-met``: ``--prefer KIND`` asked for a kind of path the plan is not, and why
    the best path of that kind failed (the fallback is said, not silent)."""
    want = request.prefer
    if want is None or plan is None or plan.candidate.kind == want:
        return []
    best = next((e for e in rejected if e.candidate.kind == want), None)
    if best is None:
        why, hint, source = phrase("prefer-not-met/none", want=want), None, Phrase.verbatim("")
    else:
        first = best.reasons[0]
        why = phrase("prefer-not-met/why", label=best.candidate.label, message=first.message)
        hint, source = first.hint, Phrase.verbatim(first.source)
    w = finding("prefer-not-met", want=want, plan=plan.candidate.label, why=why)
    return [Advisory(code="prefer-not-met", message=w.message, hint=hint or w.hint, source=source)]


def stack_choice(
    plan: Evaluation | None,
    rejected: tuple[Evaluation, ...],
    accepted: Sequence[Evaluation] = (),
) -> list[Advisory]:
    """Say which stack the plan is on and why, when it is not the release's default one: the
    default does not fit, or (``accepted``: it would) the node's driver is unknown and the plan
    is the stack the oldest driver runs."""
    if plan is None or plan.candidate.stack is None or plan.candidate.stack.default:
        return []
    c = plan.candidate
    mine = plan.candidate.stack

    def is_default(e: Evaluation) -> bool:
        return (
            e.candidate.vllm == c.vllm
            and type(e.candidate) is type(c)
            and e.candidate.stack is not None
            and e.candidate.stack.default
        )

    fits = next((e for e in accepted if is_default(e)), None)
    if fits is not None and fits.candidate.stack is not None:
        return [
            Advisory.said(
                "stack-not-default/driver-unknown",
                vllm=c.vllm,
                variant=mine.variant,
                rocm=mine.rocm,
                default=fits.candidate.stack.variant,
                default_rocm=fits.candidate.stack.rocm,
                severity="info",
            )
        ]
    default = next((e for e in rejected if is_default(e)), None)
    if default is None or default.candidate.stack is None:
        return []
    d = default.candidate.stack
    why = default.reasons[0]
    w = finding(
        "stack-not-default",
        vllm=c.vllm,
        variant=mine.variant,
        rocm=mine.rocm,
        default=d.variant,
        default_rocm=d.rocm,
        why=why.message,
    )
    return [
        Advisory(
            code="stack-not-default",
            severity="info",
            message=w.message,
            hint=why.hint,
            source=Phrase.verbatim(why.source),
        )
    ]


def newer_unknown(m: Matrix, request: Request, plan: Evaluation | None) -> list[Advisory]:
    """``newer-releases-unknown``: releases newer than the plan whose ROCm facts were never read."""
    if plan is None or (
        request.vllm is not None
        and len(request.vllm)
        and all(s.operator == "==" for s in request.vllm)
    ):
        return []
    newer = [
        r.version
        for r in m.vllm
        if not r.known
        and r.version > plan.candidate.vllm
        and (request.vllm is None or request.vllm.contains(r.version))
    ]
    if not newer:
        return []
    return [
        Advisory.said(
            "newer-releases-unknown",
            count=len(newer),
            first=min(newer),
            last=max(newer),
            severity="info",
        )
    ]
