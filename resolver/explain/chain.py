"""The chain of a derivation: numbered "Because <facts>, <conclusion>" steps with sourced premises.

The shape follows PubGrub's derivation trees as uv reports them: each step is "Because <facts>,
<conclusion>", a step used later is cited by its number "(1)", and only facts that took part
appear. Rejected candidates are grouped (one step for "the 6 vllm/vllm-openai-rocm images for vLLM
0.20.0 to 0.24.0", not six), and everything is sorted so that the same decision always gives the
same text. Also the words for nodes and requests, and the plan's own step. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec
from packaging.version import Version

from resolver.data.codes import UNKNOWN_CODES, ReasonCode
from resolver.data.model import CONFIDENCES, Matrix
from resolver.data.node import Node
from resolver.explain import words
from resolver.explain.derivation import Premise, Step
from resolver.explain.words import word
from resolver.solve import MXFP4_QUANT, Decision, Evaluation, Fact, Reason, Request
from resolver.solve.checks.driver import user_space_window
from resolver.solve.finding import Found, phrase
from resolver.solve.types import Channel, ImageCandidate, SourceCandidate, WheelCandidate
from resolver.util.versions import driver_series, series

# Candidate-level reason codes, most fundamental first: the one a rejected candidate is filed under.
CODE_ORDER: tuple[ReasonCode, ...] = (
    "gfx-unsupported",
    "gfx-not-shipped",
    "driver-predates-gpu",
    "driver-window",
    "python-mismatch",
    "glibc-too-old",
    "host-rocm-mismatch",
    "artifact-facts-unknown",
    "release-facts-unknown",
)
# Warnings the chain already states on the plan's own step ("... if its amdgpu driver runs"; "the
# plan falls back to the official image" for --prefer that cannot be met).
HEDGED = frozenset({"driver-unchecked", "prefer-not-met"})
HINT_ORDER: tuple[str, ...] = (
    "driver",
    "vllm",
    "image",
    "quantization",
    "source-build",
    "python",
    "os",
    "host",  # the user's groups, native Linux instead of WSL
    "data",
    "override",
    "other",
)

_CONF_RANK: dict[str, int] = {c: i for i, c in enumerate(CONFIDENCES)}


# --- words for nodes and requests ------------------------------------------------------------


def describe_node(node: Node) -> str:
    if not node.gfx_targets and node.nvidia_gpus:
        return _describe_nvidia(node)
    parts = []
    count = node.logical_gpu_count or len(node.gpus)
    gfx = ",".join(node.gfx_targets) or "no GPU"
    parts.append(f"{gfx} x{count}" if count else gfx)
    parts.append(
        f"amdgpu {node.driver_version}" if node.driver_version else "amdgpu driver unknown"
    )
    if node.os:
        parts.append(node.os)
    if node.python:
        parts.append(f"Python {node.python}")
    if node.rocm_version:
        parts.append(f"host ROCm {node.rocm_version}")
    return " · ".join(parts) + f"   [{node.origin}]"


def _describe_nvidia(node: Node) -> str:
    gpus = node.nvidia_gpus
    names = sorted({str(g.get("name") or "NVIDIA GPU") for g in gpus})
    caps = sorted({str(g["compute_capability"]) for g in gpus if g.get("compute_capability")})
    parts = [
        f"{', '.join(names)} x{len(gpus)}"
        + (f" (compute capability {', '.join(caps)})" if caps else "")
    ]
    driver = node.nvidia_driver
    cuda = node.host.get("nvidia", {}).get("cuda") if isinstance(node.host, dict) else None
    parts.append(
        f"NVIDIA driver {driver}" + (f" (CUDA {cuda})" if cuda else "")
        if driver
        else "NVIDIA driver unknown"
    )
    if node.os:
        parts.append(node.os)
    if node.python:
        parts.append(f"Python {node.python}")
    return " · ".join(parts) + f"   [{node.origin}]"


def describe_request(request: Request) -> str:
    parts = []
    if request.vllm is not None and str(request.vllm):
        parts.append(f"vLLM {request.vllm}")
    if request.quantization:
        parts.append(f"{request.quantization} quantization")
    if request.kv_cache_dtype:
        parts.append(f"--kv-cache-dtype {request.kv_cache_dtype}")
    if request.prefer:
        parts.append(f"prefer a {request.prefer}")
    return ", ".join(parts)


def _wanted(request: Request) -> str:
    """What the user asked to run, as a noun phrase."""
    base = f"vLLM {request.vllm}" if request.vllm is not None and str(request.vllm) else "vLLM"
    extra = []
    if request.quantization:
        extra.append(f"{request.quantization} quantization")
    if request.kv_cache_dtype:
        extra.append(f"an {request.kv_cache_dtype} KV cache")
    return base + (" with " + " and ".join(extra) if extra else "")


def _join(items: Sequence[str], word: str = "and") -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {word} " + items[-1]


def _span(versions: Iterable[Version]) -> str:
    vs = sorted(set(versions))
    return str(vs[0]) if len(vs) == 1 else f"{vs[0]} to {vs[-1]}"


def _weakest(confidences: Iterable[str]) -> str:
    return max(confidences, key=lambda c: _CONF_RANK.get(c, len(CONFIDENCES)), default="exact")


# --- grouping rejected candidates ------------------------------------------------------------


class _Family(msgspec.Struct, frozen=True, order=True):
    """The family a candidate belongs to, in the order users think of them: a channel, and for
    images the repository (``unknown``: a release whose facts were never read)."""

    order: int
    repo: str = ""  # images: their repository

    @property
    def unknown(self) -> bool:
        return self.order > max(Channel)


def _group_of(e: Evaluation) -> _Family:
    c = e.candidate
    if {r.code for r in e.reasons} == {"release-facts-unknown"}:
        return _Family(max(Channel) + 1)
    return _Family(int(c.order), c.family)


class _One:
    """One path as the subject of a step."""

    def image(self, c: ImageCandidate) -> str:
        return c.image.ref

    def wheel(self, c: WheelCandidate) -> str:
        if c.wheel.rocm is None:
            # vLLM's PyPI wheel has no local label: "+cu130" names no file anyone installs
            return f"vLLM {c.vllm}'s PyPI wheel (CUDA {c.wheel.cuda})"
        return f"the vllm=={c.vllm}+{c.wheel.name} wheel"

    def source(self, c: SourceCandidate) -> str:
        return f"a source build of vLLM {c.vllm}"


_ONE = _One()


class _Subject(msgspec.Struct, frozen=True):
    text: str  # "the 6 vllm/vllm-openai-rocm images for vLLM 0.20.0 to 0.24.0"
    plural: bool

    def verb(self, singular: str, plural: str) -> str:
        return plural if self.plural else singular


def _subject(group: _Family, members: Sequence[Evaluation]) -> _Subject:
    cands = [e.candidate for e in members]
    n = len(cands)
    versions = _span(c.vllm for c in cands)
    if group.unknown:
        return _Subject(f"vLLM {versions}" + (f" ({n} releases)" if n > 1 else ""), n > 1)
    if n == 1:
        return _Subject(cands[0].visit(_ONE), False)
    if group.repo:
        return _Subject(f"the {n} {group.repo} images for vLLM {versions}", True)
    if group.order == Channel.WHEEL:
        names = sorted({w.name for c in cands if (w := c.installs) is not None})
        return _Subject(f"the {n} vLLM wheels ({', '.join(names)}) for vLLM {versions}", True)
    releases = len({c.vllm for c in cands})
    stacks = f", {n} ROCm stacks" if n > releases else ""  # a release can build on several stacks
    return _Subject(f"source builds of vLLM {versions} ({releases} releases{stacks})", True)


def _about(reason: Reason, node: Node) -> str:
    """The node's gfx target a reason is about, if it names one (several for mixed nodes)."""
    named = [g for g in node.gfx_targets if g in reason.gfx]
    return ",".join(named)


def _primary(e: Evaluation, blockers: frozenset[str]) -> Reason:
    def key(r: Reason) -> tuple[int, int]:
        order = CODE_ORDER.index(r.code) if r.code in CODE_ORDER else len(CODE_ORDER)
        return (0 if r.code in blockers else 1, order)

    return min(e.reasons, key=key)


class _Builder:
    """Collects steps in order and numbers them."""

    def __init__(self) -> None:
        self.steps: list[Step] = []

    def add(
        self,
        premises: Sequence[Premise],
        conclusion: str,
        *,
        cites: Sequence[int] = (),
        codes: Sequence[str] = (),
        subjects: Sequence[str] = (),
    ) -> int:
        number = len(self.steps) + 1
        self.steps.append(
            Step(
                number=number,
                premises=tuple(premises),
                conclusion=conclusion,
                cites=tuple(cites),
                codes=tuple(codes),
                subjects=tuple(subjects),
            )
        )
        return number


def _merge(facts: Iterable[Fact]) -> list[Premise]:
    """Identical statements become one premise citing all their sources."""
    texts: dict[str, list[Fact]] = {}
    for f in facts:
        texts.setdefault(word(f.text), []).append(f)
    return [
        Premise(
            text=t,
            sources=tuple(dict.fromkeys(f.source for f in fs if f.source)),
            confidence=_weakest(f.confidence for f in fs),
        )
        for t, fs in texts.items()
    ]


class _Context:
    def __init__(self, decision: Decision, matrix: Matrix) -> None:
        self.d = decision
        self.m = matrix
        self.node = decision.node
        self.request = decision.request
        self.driver = (
            matrix.driver(driver_series(decision.node.driver_version))
            if decision.node.driver_version
            else None
        )
        self.said: set[str] = set()  # remarks already made once

    def rocm_text(self, versions: Iterable[Version]) -> str:
        vs = sorted(set(versions))
        labels: list[str] = []
        for v in (vs[0], vs[-1]) if len(vs) > 1 else vs:
            rel = self.m.rocm_for(v)
            exact = rel is not None and rel.version == v
            shown = rel.label_without_rocm if rel is not None and exact else str(v)
            labels.append(f"ROCm {shown}" if not labels else shown)
        if len(labels) == 1:
            return labels[0]
        return f"{labels[0]} to {labels[1]}"

    def glibc_text(self) -> str:
        return (
            f"glibc {self.node.glibc}"
            if self.node.glibc
            else f"{self.node.os or 'this host'}'s glibc"
        )


def _member_premise(
    ctx: _Context,
    code: str,
    subject: _Subject,
    members: Sequence[Evaluation],
    facts: Sequence[Fact],
) -> Premise | None:
    """One premise that stands for the candidate-specific facts of every member."""
    sources = tuple(dict.fromkeys(f.source for f in facts if f.source))
    conf = _weakest(f.confidence for f in facts)
    cands = [e.candidate for e in members]

    def premise(key: str, **values: str) -> Premise:
        form = words.PREMISES[key][1 if subject.plural else 0]
        return Premise(
            text=form.format(subject=subject.text, **values), sources=sources, confidence=conf
        )

    if code == "driver-window":
        rocms = [c.rocm for c in cands if c.rocm is not None]
        if not rocms:
            return None
        key = "driver-window/build" if all(c.from_source for c in cands) else "driver-window"
        return premise(key, rocms=ctx.rocm_text(rocms))
    if code in ("gfx-not-shipped", "gfx-unsupported") and all(c.from_source for c in cands):
        accepted: list[str] = []
        for c in cands:
            if c.release is not None:
                accepted += [a for a in c.release.cmake_arch if a not in accepted]
        return premise("gfx/cmake", listed=", ".join(accepted) if accepted else words.CMAKE_UNREAD)
    if code in ("gfx-not-shipped", "gfx-unsupported"):
        arch: list[str] = []
        for c in cands:
            arch += [a for a in c.arch if a not in arch]
        return premise("gfx", built=words.arch_text(arch))
    if code in ("artifact-facts-unknown", "release-facts-unknown"):
        return premise(code)
    return None


def _predicate(ctx: _Context, code: str, about: str) -> words.Predicate:
    """The code's predicate (``words.PREDICATES``) with this node's values filled in."""
    drv = f"amdgpu {ctx.driver.series}.x" if ctx.driver else words.DRIVER_UNKNOWN
    key = code if code in words.PREDICATES else "unknown" if code in UNKNOWN_CODES else "other"
    p = words.PREDICATES[key]
    values = {
        "drv": drv,
        "gfx": about or ",".join(ctx.node.gfx_targets),
        "py": f"Python {ctx.node.python}",
        "glibc": ctx.glibc_text(),
        "rocm": f"ROCm {ctx.node.rocm_version}" if ctx.node.rocm_version else words.ROCM_UNKNOWN,
    }
    tail = p.tail
    if code == "gfx-not-shipped" and "hip-error" not in ctx.said:
        ctx.said.add("hip-error")  # the symptom users search for, said once
        tail = words.HIP_SYMPTOM
    return words.Predicate(
        p.positive.format(**values),
        p.negative.format(**values),
        (p.negative_plural or p.negative).format(**values),
        tail,
    )


def _conclusion(
    ctx: _Context, code: str, subject: _Subject, about: str, *, named: bool = True
) -> str:
    """The step's conclusion about ``subject``; with ``named`` false the premises do not name the
    subject ("none of them" would have nothing to refer to), so the conclusion names it."""
    p = _predicate(ctx, code, about)
    if not named:
        body = f"{subject.text} {p.negative_plural if subject.plural else p.negative}"
    elif subject.plural:
        body = f"none of them {p.positive}"
    else:
        body = f"it {p.negative}"
    return body + p.tail


def _explain_rejected(ctx: _Context, b: _Builder, rejected: Sequence[Evaluation]) -> list[int]:
    """One step per (family, reason, gfx) among ``rejected``; returns the step numbers."""
    blockers = frozenset(r.code for r in ctx.d.blockers)
    buckets: dict[tuple[_Family, int, str, str], list[tuple[Evaluation, Reason]]] = {}
    for e in rejected:
        group = _group_of(e)
        r = _primary(e, blockers)
        code_order = CODE_ORDER.index(r.code) if r.code in CODE_ORDER else len(CODE_ORDER)
        buckets.setdefault((group, code_order, r.code, _about(r, ctx.node)), []).append((e, r))
    numbers: list[int] = []
    for (group, _, code, about), items in sorted(buckets.items(), key=lambda kv: kv[0]):
        members = sorted((e for e, _ in items), key=lambda e: (e.candidate.vllm, e.candidate.label))
        subject = _subject(group, members)
        labels = {e.candidate.label for e in members}
        specific: list[Fact] = []
        shared: list[Fact] = []
        for e, r in items:
            for f in r.facts:
                mine = f.about == e.candidate.label
                (specific if mine else shared).append(f)
        premises: list[Premise] = []
        summary = _member_premise(ctx, code, subject, members, specific) if specific else None
        if summary is not None:
            premises.append(summary)
        else:
            premises += _merge(specific)
        premises += _merge(shared)
        if not premises:  # a reason with no facts: its message is the fact
            first = items[0][1]
            premises.append(Premise(text=word(first.message), sources=(), confidence="unknown"))
        conclusion = _conclusion(ctx, code, subject, about, named=summary is not None)
        numbers.append(b.add(premises, conclusion, codes=(code,), subjects=sorted(labels)))
    return numbers


def _unsupported_step(
    ctx: _Context, b: _Builder, reason: Reason, rejected: Sequence[Evaluation]
) -> int:
    """A GPU vLLM does not support at all: the target's own record says it; one step covers every
    path."""
    gfx = _about(reason, ctx.node) or ",".join(ctx.node.gfx_targets)
    target = ctx.m.gfx_target(gfx)
    if (
        target is not None
    ):  # the target's own record, worded as a sentence rather than "gfx906: ..."
        facts = [
            Fact(
                text=phrase("gfx-unsupported/record", gfx=gfx, note=target.vllm_note.rstrip(".")),
                source=target.provenance.source,
                confidence=target.provenance.confidence,
            )
        ]
    else:
        facts = [
            f
            for e in rejected
            for r in e.reasons
            if r.code == "gfx-unsupported"
            for f in r.facts
            if f.about != e.candidate.label
        ]
    checked = [e for e in rejected if not {r.code for r in e.reasons} <= UNKNOWN_CODES]
    kinds = sorted(
        {e.candidate.kind for e in checked}, key=lambda k: ("image", "wheel", "source").index(k)
    )
    names = {"image": "images", "wheel": "wheels", "source": "source builds"}
    premises = [
        *_merge(facts),
        Premise(
            text=f"none of the {len(checked)} {_join([names[k] for k in kinds], 'or')} in the data "
            f"is built for {gfx}",
            sources=(),
        ),
    ]
    return b.add(premises, f"no vLLM path runs on {gfx}", codes=("gfx-unsupported",))


def _gate_step(ctx: _Context, b: _Builder, reasons: Sequence[Reason]) -> int:
    """Quantization gates are about the GPU, not a candidate: one step covers every path."""
    names = sorted({a for r in reasons if (a := _about(r, ctx.node))}) or list(ctx.node.gfx_targets)
    gfx = _join(names)
    premises = []
    for name in names:
        t = ctx.m.gfx_target(name)
        if t is None:
            continue
        g = t.features
        has = f"has hardware FP8 ({g.fp8_format})" if g.fp8 else "has no hardware FP8"
        mx = (
            " and MX formats" if g.mx else (" but no MX formats" if g.fp8 else " and no MX formats")
        )
        premises.append(
            Premise(
                text=f"{name} ({t.arch}) {has}{mx}",
                sources=(g.provenance.source,),
                confidence=g.provenance.confidence,
            )
        )
    premises.append(
        Premise(
            text=_gate_premise(reasons, (ctx.request.quantization or "").lower()),
            sources=(),
            confidence="exact",
        )
    )
    things = []
    if ctx.request.quantization and any(
        r.code in ("fp8-unsupported", "mx-unsupported") for r in reasons
    ):
        things.append(f"{ctx.request.quantization} quantization")
    if ctx.request.kv_cache_dtype and any(r.code == "kv-fp8-unsupported" for r in reasons):
        things.append(f"an {ctx.request.kv_cache_dtype} KV cache")
    return b.add(
        premises,
        f"no vLLM build can serve {_join(things) or 'this request'} on {gfx}",
        codes=tuple(sorted({r.code for r in reasons})),
    )


def _gate_premise(reasons: Sequence[Reason], quant: str = "") -> str:
    needs = []
    for r in sorted(reasons, key=lambda r: r.code):
        key = (
            f"{r.code}/mxfp4"
            if f"{r.code}/mxfp4" in words.GATE_NEEDS and quant in MXFP4_QUANT
            else r.code
        )
        if key in words.GATE_NEEDS:
            needs.append(words.GATE_NEEDS[key])
    return _join(list(dict.fromkeys(needs)))


# --- successes -------------------------------------------------------------------------------


def _gfx_premises(
    ctx: _Context, ev: Evaluation, arch: tuple[str, ...], rsrc: tuple[str, ...]
) -> list[Premise]:
    """How the plan runs on the node's targets it is not built for: an override or CMake."""
    c = ev.candidate
    rconf = c.confidence
    premises: list[Premise] = []
    for name in ctx.node.gfx_targets:
        target = ctx.m.gfx_target(name)
        if target is None or name in arch:
            continue
        if ev.override and target.override and target.override_target in arch:
            premises.append(
                Premise(
                    text=f"{c.label} is built for {target.override_target} but not {name}",
                    sources=rsrc,
                    confidence=rconf,
                )
            )
            premises.append(
                Premise(
                    text=f"{name} runs {target.override_target} code when "
                    f"HSA_OVERRIDE_GFX_VERSION={target.override} is set (unofficial)",
                    sources=(target.provenance.source,),
                    confidence=target.provenance.confidence,
                )
            )
        elif c.from_source and c.release is not None and name in c.release.cmake_arch:
            premises.append(
                Premise(
                    text=f"vLLM {c.vllm}'s CMake accepts {name} (HIP_SUPPORTED_ARCHS), though vLLM "
                    "ships no artifact for it",
                    sources=tuple(dict.fromkeys((*rsrc, target.provenance.source))),
                    confidence=_weakest((rconf, target.provenance.confidence)),
                )
            )
    return premises


def _driver_premises(ctx: _Context, rocm: Version) -> tuple[list[Premise], str]:
    """The host driver's side of the plan's ROCm, and the hedge when it could not be checked."""
    premises: list[Premise] = []
    hedge = ""
    if ctx.driver is not None and ctx.driver.runs(rocm):
        # The driver's row, worded as the driver-window finding words it (one row, one wording).
        row = Found("driver-window", (("driver", ctx.driver.series),)).fact(1)
        window = (("window", user_space_window(ctx.driver.user_space)),)
        premises.append(
            Premise(
                text=word(msgspec.structs.replace(row, values=row.values + window)),
                sources=(ctx.driver.provenance.source,),
                confidence=ctx.driver.provenance.confidence,
            )
        )
    elif ctx.driver is None:
        good = list(reversed(ctx.m.drivers_running(rocm)))  # oldest first reads as a range
        listed = ", ".join(f"{d.series}.x" for d in good) or "a driver the data does not know"
        known = (
            "unknown"
            if ctx.node.driver_version is None
            else f"{ctx.node.driver_version}, which AMD's table does not list"
        )
        premises.append(
            Premise(
                text=f"the host's amdgpu driver is {known}; ROCm {series(rocm)} user space "
                f"needs amdgpu {listed}",
                sources=tuple(dict.fromkeys(d.provenance.source for d in good))[:1],
                confidence=_weakest(d.provenance.confidence for d in good) if good else "unknown",
            )
        )
        hedge = f" if its amdgpu driver runs ROCm {series(rocm)}"
    return premises, hedge


def _cuda_premises(ctx: _Context, ev: Evaluation) -> list[Premise]:
    """An NVIDIA path (issue 38): the compute capabilities it is built for against the GPU's, and
    its CUDA against NVIDIA's driver floor, from the same records the solver checked."""
    c = ev.candidate
    cuda = c.cuda
    if cuda is None:  # a ROCm path
        return []
    src = (c.source,)
    gpus = ctx.node.nvidia_gpus
    names = sorted({str(g.get("name") or "the GPU") for g in gpus}) or ["the GPU"]
    caps = sorted({str(cc) for g in gpus if (cc := g.get("compute_capability"))})
    out = [
        Premise(
            text=f"{c.label} is built with CUDA {cuda} for compute capability "
            f"{', '.join(c.arch)}"
            + (f", which covers {_join(names)} ({', '.join(caps)})" if caps else ""),
            sources=src,
            confidence=c.confidence,
        )
    ]
    rule = ctx.m.cuda_driver_rule(cuda)
    driver = ctx.node.nvidia_driver
    if rule is not None and driver:
        out.append(
            Premise(
                text=f"CUDA {cuda.major}.x needs NVIDIA driver {rule.min_driver} or newer "
                f"and this host runs {driver}",
                sources=(rule.provenance.source,),
                confidence=rule.provenance.confidence,
            )
        )
    return out


def _plan_premises(ctx: _Context, ev: Evaluation) -> tuple[list[Premise], str]:
    """What the chosen path rests on, and the conclusion ("it runs on this node")."""
    c = ev.candidate
    record = c.record
    rsrc = (record.provenance.source,) if record else ()
    rconf = c.confidence
    premises: list[Premise] = []
    arch = c.arch
    native = [g for g in ctx.node.gfx_targets if g in arch]
    if native:
        premises.append(
            Premise(text=f"{c.label} is built for {_join(native)}", sources=rsrc, confidence=rconf)
        )
    premises += _gfx_premises(ctx, ev, arch, rsrc)
    premises += _cuda_premises(ctx, ev)
    hedge = ""
    if c.rocm is not None:
        verb = "builds on" if c.from_source else "ships"
        premises.append(
            Premise(
                text=f"{c.label} {verb} {ctx.rocm_text([c.rocm])}", sources=rsrc, confidence=rconf
            )
        )
        driver_premises, hedge = _driver_premises(ctx, c.rocm)
        premises += driver_premises
    if (w := c.installs) is not None:  # the host's Python and glibc must match the wheel's
        premises.append(
            Premise(
                text=f"{w.name} wheels exist for CPython {' or '.join(w.python)} and need glibc >= "
                f"{w.glibc_min}",
                sources=(w.provenance.source,),
                confidence=w.provenance.confidence,
            )
        )
    if ctx.request.quantization or (ctx.request.kv_cache_dtype or "").startswith("fp8"):
        for name in ctx.node.gfx_targets:
            t = ctx.m.gfx_target(name)
            if t is not None and t.features.fp8:
                fmt = f" ({t.features.fp8_format})" if t.features.fp8_format else ""
                premises.append(
                    Premise(
                        text=f"{name} has hardware FP8{fmt}"
                        + (" and MX formats" if t.features.mx else ""),
                        sources=(t.features.provenance.source,),
                        confidence=t.features.provenance.confidence,
                    )
                )
    if (ctx.request.quantization or "").lower() in MXFP4_QUANT:
        for name in ctx.node.gfx_targets:
            t = ctx.m.gfx_target(name)
            if t is not None and t.features.mxfp4 == "emulated":
                src = t.features.mxfp4_provenance
                premises.append(
                    Premise(
                        text=f"vLLM runs MXFP4 checkpoints on {name} weight-only (dequantized; "
                        f"{name} has no MX compute)",
                        sources=(src.source,),
                        confidence=src.confidence,
                    )
                )
    verb = "runs, unofficially," if ev.unofficial else "runs"
    return premises, f"{c.label} {verb} on this node{hedge}"


def _why_this(ctx: _Context, ev: Evaluation) -> str:
    c = ev.candidate
    gfx = ",".join(ctx.node.gfx_targets)
    if ev.override:
        return (
            f"the plan is the {c.channel} {c.label} under HSA_OVERRIDE_GFX_VERSION={ev.override}: "
            "unofficial, since the runtime then loads another GPU's code"
        )
    if c.from_source and ev.unofficial:
        return (
            f"no prebuilt artifact carries code for {gfx}, so the plan builds vLLM {c.vllm} from "
            "source for it: "
            "unofficial, since vLLM ships and tests nothing for this target"
        )
    if ctx.request.prefer and c.kind != ctx.request.prefer:
        return f"no {ctx.request.prefer} fits, so the plan falls back to the {c.channel}"
    if c.from_source:
        return (
            "no prebuilt image or wheel fits, so the plan builds vLLM from source for this "
            "node's GPUs only"
        )
    article = "an" if c.channel[0].lower() in "aeiou" else "a"
    return f"it is the newest vLLM release ({c.vllm}) with {article} {c.channel} that fits"


_CONF_NOTE = {
    "exact": "every fact above was read at a release tag or in the vendor's published tables",
    "release-branch": "the weakest fact above was read on a release branch, not at the tag",
    "inferred": "the weakest fact above is inferred, e.g. an image's contents from its build "
    "scripts",
    "unknown": "a fact above is unknown; treat the plan as a guess until verified",
}
