"""The solver's vocabulary: the frozen records a decision is made of (``msgspec.Struct``s: cheap to
declare at start-up; derive one with ``msgspec.structs.replace``), and the verdict and kind
literals.

Nothing here decides anything; ``resolver.solve.provider`` builds candidates and evaluations,
``resolver.solve.checks`` and ``resolver.solve.advisories`` make reasons and warnings, and
``resolver.solve.solve`` makes the ``Decision``.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, TypeVar, cast

import msgspec
from msgspec.structs import replace
from packaging.version import Version

from resolver.data.codes import AdvisoryCode, ProblemCode, ReasonCode
from resolver.data.model import (
    Confidence,
    ContainerImage,
    RocmStack,
    VllmRelease,
    WheelVariant,
)
from resolver.data.node import Node, Problem
from resolver.solve.finding import Phrase, finding
from resolver.util.errors import InputError

if TYPE_CHECKING:  # made by parse_spec: a check without --vllm never imports it
    from packaging.specifiers import SpecifierSet

    from resolver.solve.modelspec import ModelAnswer, ModelRequest

Kind = Literal["image", "wheel", "source"]
KINDS: tuple[Kind, ...] = ("image", "wheel", "source")
Severity = Literal["info", "warning"]
Verdict = Literal[
    "supported",
    "supported_with_warnings",
    "source_build_required",
    "unofficial_only",
    "unsupported",
    "blocked_host_fix",
    "unknown",
]
# `unknown`: the answer depends on facts the data does not have (never reported as unsupported).
UNKNOWN_EXIT = 6
OK_VERDICTS: frozenset[str] = frozenset(
    {"supported", "supported_with_warnings", "source_build_required"}
)

FP8_QUANT = frozenset(
    {
        "fp8",
        "fbgemm_fp8",
        "ptpc_fp8",
        "fp8_per_tensor",
        "fp8_per_block",
        "fp8_per_channel",
        "deepseek_v4_fp8",
    }
)
MX_QUANT = frozenset({"mxfp4", "mxfp8", "modelopt_mxfp8", "gpt_oss_mxfp4"})
# MXFP4 checkpoints also run without MX compute (weight-only dequantization) where a source says so.
MXFP4_QUANT = frozenset({"mxfp4", "gpt_oss_mxfp4"})


def mx_format(quant: str) -> Literal["mxfp4", "mxfp8"]:
    """The kernel format an MX quantization method runs through (capabilities.toml
    ``rocm_kernels`` keys)."""
    return "mxfp4" if quant in MXFP4_QUANT else "mxfp8"


GATES_SOURCE_FALLBACK = "matrix/gfx.toml feature gates"


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """What the user asks for: a vLLM range, a quantization, a KV cache dtype, a preferred path
    kind."""

    vllm: SpecifierSet | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    prefer: Kind | None = None
    paths: frozenset[str] | None = None  # restrict candidate kinds, e.g. {"image"}
    vendor: Literal["amd", "nvidia"] | None = None  # None: the vendor whose GPUs the node has
    # --strict: a plan that rests on a requirement nobody checked is ``unknown``, not supported
    strict: bool = False
    # --model: the model to serve and the sizing knobs the user pinned (issue 37)
    model: ModelRequest | None = None
    # The format a checkpoint's method quantizes to, where the method's name does not say it (a
    # ModelOpt or compressed-tensors FP8 checkpoint is FP8 to the GPU's gates): "fp8", "mxfp4".
    gate_as: str | None = None

    @property
    def gated_quantization(self) -> str:
        """The quantization the GPU's feature gates judge (lower case; "" for none)."""
        return (self.gate_as or self.quantization or "").lower()


class Fact(msgspec.Struct, frozen=True, kw_only=True):
    """One sourced statement a decision rests on."""

    text: Phrase
    source: str
    confidence: Confidence = "exact"
    # The candidate (its label) this fact is about; ``None`` for a fact shared by many candidates
    # (a driver's window, a GPU's gates), so the explanation can group facts without reading text.
    about: str | None = None


HostChangeKind = Literal[
    "driver",
    "python",
    "glibc",
    "os",
    "rocm",
    "kernel",
    "nvidia_driver",
    "groups",
    "platform",
    "gpus",
    "gtt",
]
RequestChangeKind = Literal["vllm", "quantization", "source"]
# What each change costs the user, for the what-if search (``resolver.solve.routes``): fewer
# changes first, then the cheaper ones (a venv's Python before a new OS release).
CHANGE_COST: dict[str, int] = {
    "python": 1,
    "rocm": 1,
    "groups": 1,
    "vllm": 1,
    "quantization": 1,
    "kernel": 2,
    "driver": 2,
    "nvidia_driver": 2,
    "source": 2,
    "glibc": 3,
    "os": 3,
    "platform": 4,  # another machine, or Linux installed beside Windows
    "gpus": 4,  # more GPUs of the same kind: another machine, for a model that does not fit
    "gtt": 2,  # an APU's GTT limit (ttm.pages_limit on the kernel command line, a reboot)
}


class HostChange(msgspec.Struct, frozen=True, kw_only=True):
    """One change to the host, as data: the what-if search applies it to a ``Node`` and solves
    again.

    ``driver`` is an amdgpu series ("30.30"), ``python`` a CPython version ("3.12"), ``glibc`` a
    floor ("2.35"), ``os`` an OS id ("ubuntu-22.04"), ``rocm`` a host ROCm version ("7.2.1"),
    ``kernel`` a Linux kernel floor ("6.17"), ``groups`` the groups the user joins
    ("render,video"), ``platform`` the host kind to run on ("linux": native Linux, not WSL).
    """

    kind: HostChangeKind
    value: str
    # driver only: "upgrade", or "downgrade" when every driver that runs it is older than the
    # host's.
    direction: Literal["upgrade", "downgrade"] | None = None

    host: bool = True

    @property
    def cost(self) -> int:
        return CHANGE_COST[self.kind]

    def apply(self, node: Node) -> Node:
        """The node as it would be after this change. A change a flag can state replaces that
        flag among the node's overrides, so a follow-up command describes the changed node."""
        if self.kind == "kernel":
            return replace(node, kernel=self.value)
        if self.kind == "nvidia_driver":
            return node.with_nvidia_driver(self.value)
        if self.kind == "glibc":
            return replace(node, glibc=self.value)
        if self.kind == "groups":
            return node.with_gpu_groups()
        if self.kind == "platform":
            return node.on_native_linux()
        if self.kind == "gpus":
            return node.with_gpu_count(int(self.value))
        if self.kind == "gtt":  # GiB the APU's GPU may map
            return node.with_gpu_memory(int(self.value) * 2**30)
        # A driver series becomes its x.y.0; a release a GPU needs (6.4.1) stays itself.
        driver = self.kind == "driver" and self.value.count(".") == 1
        value = f"{self.value}.0" if driver else self.value
        flag = f"--{self.kind}"
        overrides = (*((f, v) for f, v in node.overrides if f != flag), (flag, value))
        if self.kind == "driver":
            return replace(node, driver_version=value, overrides=overrides)
        if self.kind == "python":
            return replace(node, python=value, overrides=overrides)
        if self.kind == "os":  # the glibc is the new release's (the solver reads it from there)
            return replace(node, os=value, glibc=None, overrides=overrides)
        return replace(node, rocm_version=value, overrides=overrides)


class RequestChange(msgspec.Struct, frozen=True, kw_only=True):
    """One change to what is asked, as data: ``vllm`` drops the release range (the newest release
    that fits is then pinned), ``quantization`` drops the quantization and the KV cache dtype,
    ``source`` asks for a source build only."""

    kind: RequestChangeKind
    host: bool = False

    @property
    def cost(self) -> int:
        return CHANGE_COST[self.kind]

    def apply_to(self, request: Request) -> Request:
        if self.kind == "vllm":
            return msgspec.structs.replace(request, vllm=None)
        if self.kind == "quantization":
            return msgspec.structs.replace(request, quantization=None, kv_cache_dtype=None)
        return msgspec.structs.replace(request, paths=frozenset({"source"}))


Change = HostChange | RequestChange


class Fix(msgspec.Struct, frozen=True, kw_only=True):
    """The smallest change that would remove a reason. ``host`` fixes change the machine and say
    how in ``change``; the others change the request or the data."""

    # "host": the host's setup besides its software versions (user groups, native Linux)
    kind: Literal["driver", "python", "os", "rocm", "vllm", "quantization", "gfx", "data", "host"]
    text: Phrase
    host: bool
    change: HostChange | None = None  # host fixes: the change itself (never parse ``text``)
    # A driver move AMD does not support on the host's OS: the OS release to move to first.
    os_first: str | None = None


class Reason(msgspec.Struct, frozen=True, kw_only=True):
    """Why one candidate cannot be used here: a code, its message, the facts it rests on, a hint,
    a fix, and what it is about (as data, for code that groups or words reasons)."""

    code: ReasonCode
    message: Phrase
    facts: tuple[Fact, ...]
    hint: Phrase
    fix: Fix | None = None
    gfx: tuple[str, ...] = ()  # the node's gfx targets the reason is about
    # The release and stack variant of the path it rejects (``None`` for what a GPU lacks
    # whatever the path: the feature gates).
    release: Version | None = None
    stack: str | None = None
    # The hint is an unofficial route (a community fork, an HSA override), with ``override`` the
    # HSA_OVERRIDE_GFX_VERSION it names, if any.
    unofficial: bool = False
    override: str | None = None

    @property
    def source(self) -> str:
        return "; ".join(dict.fromkeys(f.source for f in self.facts))


class Advisory(msgspec.Struct, frozen=True, kw_only=True):
    """An advisory about a candidate or the node: it does not stop a path, it says what to watch
    for."""

    code: AdvisoryCode | ProblemCode  # ProblemCode: a probe problem passed through
    message: Phrase
    hint: Phrase
    severity: Severity = "warning"
    source: Phrase = Phrase.verbatim("")
    env: tuple[tuple[str, str], ...] = ()  # the environment the advice asks for, if any
    # the plan's own run command (`rocm-vllm image`) already sets ``env``
    applied_by_plan: bool = False
    unofficial: bool = False  # the advice is an unofficial route (its hint says the risk)
    # A host change that heeds it (a kernel floor): the upgrade planner takes it as a step.
    change: HostChange | None = None

    @classmethod
    def said(
        cls,
        key: str,
        /,
        *,
        source: str | None = None,
        severity: Severity = "warning",
        env: tuple[tuple[str, str], ...] = (),
        applied_by_plan: bool = False,
        unofficial: bool = False,
        change: HostChange | None = None,
        **values: object,
    ) -> Advisory:
        """The advisory ``resolver.explain.words`` words as ``key`` with ``values`` (its code: the
        key's first part); ``source``: where the fact came from, by default the wording's own."""
        w = finding(key, **values)
        code, _, _ = key.partition("/")
        return cls(
            code=cast(AdvisoryCode, code),
            message=w.message,
            hint=w.hint,
            severity=severity,
            source=w.source if source is None else Phrase.verbatim(source),
            env=env,
            applied_by_plan=applied_by_plan,
            unofficial=unofficial,
            change=change,
        )

    @classmethod
    def of_problem(cls, problem: Problem) -> Advisory:
        """A probe problem passed through: the probe worded it in the node's report."""
        return cls(
            code=problem.code,
            message=Phrase.verbatim(problem.message),
            hint=Phrase.verbatim(problem.hint),
            source=Phrase.verbatim("probe"),
        )


class RequestError(InputError):
    """Bad input the solver finds (a method no release lists, a range no release matches), as
    data: the check chooses the wording and its values, the edge says it
    (``resolver.explain.words.error_words``); ``message`` holds the wording's key until then."""

    def __init__(self, said: Phrase, *, hint: Phrase | None = None, gfx: bool = False) -> None:
        super().__init__(said.key)
        self.said = said
        self.said_hint = hint
        if gfx:  # an unknown gfx target: its own reference (``unknown-gfx``)
            self.reference = "unknown-gfx"


class Channel(IntEnum):
    """The kinds of path, in the order users think of them and the solver prefers them."""

    OFFICIAL_IMAGE = 0
    AMD_IMAGE = 1
    DEPRECATED_IMAGE = 2
    WHEEL = 3
    SOURCE = 4

    @property
    def words(self) -> str:
        return _CHANNEL_WORDS[self]


_CHANNEL_WORDS: dict[Channel, str] = {
    Channel.OFFICIAL_IMAGE: "official image",
    Channel.AMD_IMAGE: "AMD image",
    Channel.DEPRECATED_IMAGE: "deprecated image",
    Channel.WHEEL: "wheel",
    Channel.SOURCE: "source build",
}


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """One way to run a vLLM release here: an image, a wheel, or a source build on one ROCm
    stack. The kinds are the subclasses (``ImageCandidate``, ``WheelCandidate``,
    ``SourceCandidate``, pip's ``candidates.py`` shape): each owns its record as a required
    field, and what differs between them is a method, a property or a class attribute here, or
    ``visit`` for what a caller words or writes per kind, so no code branches on a kind."""

    kind: ClassVar[Kind]
    from_source: ClassVar[bool] = False  # built on the node's side, for its gfx
    # Installed into the user's own Python: it runs as the user (no container, no root).
    runs_as_user: ClassVar[bool] = False
    # Pulled whole from a registry, and run by the command `rocm-vllm image` prints (which sets
    # the environment an advisory asks for).
    pulled: ClassVar[bool] = False
    vllm: Version
    rocm: Version | None
    release: VllmRelease | None = None  # None: a prebuilt artifact of a release the data lacks
    stack: RocmStack | None = None  # the release's ROCm stack this path builds on, where known

    # The kinds' own records as seen through any candidate (``None`` for the other kinds); each
    # subclass declares its own as a required field.
    @property
    def image(self) -> ContainerImage | None:
        return None

    @property
    def wheel(self) -> WheelVariant | None:
        return None

    def visit(self, visitor: CandidateVisitor[R]) -> R:
        """``visitor``'s method for this kind (what a caller words or writes per kind; mypy
        checks that it handles every kind)."""
        raise NotImplementedError

    @property
    def key(self) -> tuple[str, str]:
        """What tells one path from another (two evaluations of one path share it)."""
        return (self.kind, self.name)

    @property
    def label(self) -> str:
        """The path as a user names it: an image ref, a wheel pin, a source build."""
        return self.name

    @property
    def name(self) -> str:
        """The label without its kind: a wheel is ``vllm==0.24.0+rocm700``."""
        raise NotImplementedError

    @property
    def order(self) -> Channel:
        """This path's channel, as an ordered value."""
        raise NotImplementedError

    @property
    def channel(self) -> str:
        """The channel in words: "official image", "wheel", ..."""
        return self.order.words

    def rank_group(self, *, cmake_only: bool) -> int:
        """The solver's first preference key for this kind of path (lower is better)."""
        raise NotImplementedError

    @property
    def alias_rank(self) -> int:
        """Among equal paths, the plainer name first: an image's plain tag (v0.33.0) before the
        same image's stack alias (v0.33.0-rocm100)."""
        return 0

    @property
    def family(self) -> str:
        """What paths of one channel group under in an explanation (an image's repository)."""
        return ""

    @property
    def vendor(self) -> str:
        """Whose GPUs the artifact is built for: "amd", or "nvidia" (cuda.toml's records)."""
        return "amd"

    @property
    def cuda(self) -> Version | None:
        """The CUDA an NVIDIA artifact is built with (``None`` for ROCm paths)."""
        return None

    @property
    def installs(self) -> WheelVariant | None:
        """The wheel installed into the host's Python, whose CPython and glibc the host must
        match (``None``: the path brings its own userland)."""
        return None

    @property
    def lacks(self) -> tuple[str, ...]:
        """gfx targets evidence read from the artifact says it carries no code for, though its
        arch list claims them; ``lacks_source`` names that evidence."""
        return ()

    @property
    def lacks_source(self) -> str:
        return ""

    def built_for(self, node_targets: tuple[str, ...]) -> tuple[str, ...]:
        """The gfx targets the artifact this path hands over carries code for."""
        return self.arch

    @property
    def record(self) -> ContainerImage | WheelVariant | RocmStack | VllmRelease | None:
        """The record this path rests on (a source build: its stack, else its release)."""
        return self.release

    @property
    def confidence(self) -> Confidence:
        record = self.record
        return record.provenance.confidence if record else "unknown"

    @property
    def source(self) -> str:
        """Where the data states this path's facts."""
        record = self.record
        return record.provenance.source if record else "matrix/vllm.toml"

    @property
    def arch(self) -> tuple[str, ...]:
        """The gfx targets this path's artifact carries code for (its record's arch list)."""
        record = self.record
        return record.arch if record else ()


R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class CandidateVisitor(Protocol[R_co]):
    """What a caller does per kind of path, one method a kind (``Candidate.visit``)."""

    def image(self, c: ImageCandidate, /) -> R_co: ...

    def wheel(self, c: WheelCandidate, /) -> R_co: ...

    def source(self, c: SourceCandidate, /) -> R_co: ...


class ImageCandidate(Candidate, frozen=True, kw_only=True):
    """A prebuilt container image."""

    kind: ClassVar[Kind] = "image"
    pulled: ClassVar[bool] = True
    image: ContainerImage  # the base's read-only view, made a field

    def visit(self, visitor: CandidateVisitor[R]) -> R:
        return visitor.image(self)

    @property
    def name(self) -> str:
        return self.image.ref

    @property
    def order(self) -> Channel:
        if self.image.official:
            return Channel.OFFICIAL_IMAGE
        return Channel.DEPRECATED_IMAGE if self.image.deprecated else Channel.AMD_IMAGE

    def rank_group(self, *, cmake_only: bool) -> int:
        preview = self.stack is not None and self.stack.preview
        aside = self.image.deprecated or self.image.stream == "therock-preview" or preview
        return 1 if aside else 0

    @property
    def alias_rank(self) -> int:
        return len(self.image.tag)

    @property
    def family(self) -> str:
        return self.image.repo

    @property
    def vendor(self) -> str:
        return self.image.vendor

    @property
    def cuda(self) -> Version | None:
        return self.image.cuda

    @property
    def lacks(self) -> tuple[str, ...]:
        return self.image.lacks

    @property
    def lacks_source(self) -> str:
        return self.image.lacks_source

    @property
    def record(self) -> ContainerImage | WheelVariant | RocmStack | VllmRelease | None:
        return self.image


class WheelCandidate(Candidate, frozen=True, kw_only=True):
    """A prebuilt wheel: AMD's ROCm wheels, or vLLM's PyPI wheel on NVIDIA."""

    kind: ClassVar[Kind] = "wheel"
    runs_as_user: ClassVar[bool] = True
    wheel: WheelVariant  # the base's read-only view, made a field

    def visit(self, visitor: CandidateVisitor[R]) -> R:
        return visitor.wheel(self)

    @property
    def label(self) -> str:
        return f"{self.name} (wheel)"

    @property
    def name(self) -> str:
        if self.wheel.rocm is None:
            return f"vllm=={self.vllm}"  # PyPI's CUDA wheel: no local version
        return f"vllm=={self.vllm}+{self.wheel.name}"

    @property
    def order(self) -> Channel:
        return Channel.WHEEL

    def rank_group(self, *, cmake_only: bool) -> int:
        return 0

    @property
    def vendor(self) -> str:
        return self.wheel.vendor

    @property
    def cuda(self) -> Version | None:
        return self.wheel.cuda

    @property
    def installs(self) -> WheelVariant | None:
        return self.wheel

    @property
    def record(self) -> ContainerImage | WheelVariant | RocmStack | VllmRelease | None:
        return self.wheel


class SourceCandidate(Candidate, frozen=True, kw_only=True):
    """A build of the release from source on one of its ROCm stacks, for the node's gfx."""

    kind: ClassVar[Kind] = "source"
    from_source: ClassVar[bool] = True
    release: VllmRelease  # a build needs the release's build facts

    def visit(self, visitor: CandidateVisitor[R]) -> R:
        return visitor.source(self)

    @property
    def name(self) -> str:
        if self.stack is not None and len(self.release.stacks) > 1:
            return f"vLLM {self.vllm} from source ({self.stack.variant} stack)"
        return f"vLLM {self.vllm} from source"

    @property
    def order(self) -> Channel:
        return Channel.SOURCE

    def rank_group(self, *, cmake_only: bool) -> int:
        # A stack that ships the target (even a preview one) before a build CMake merely accepts.
        preview = self.stack is not None and self.stack.preview
        return 4 if cmake_only else 3 if preview else 2

    def built_for(self, node_targets: tuple[str, ...]) -> tuple[str, ...]:
        return node_targets  # the Dockerfile builds for the node's targets

    @property
    def record(self) -> ContainerImage | WheelVariant | RocmStack | VllmRelease | None:
        return self.stack or self.release


class Evaluation(msgspec.Struct, frozen=True, kw_only=True):
    """A candidate with what stops it (``reasons``) and what to watch for (``warnings``)."""

    candidate: Candidate
    reasons: tuple[Reason, ...]
    warnings: tuple[Advisory, ...]
    unofficial: bool = (
        False  # works only off the supported path (source build for an unshipped gfx, override)
    )
    override: str | None = None  # HSA_OVERRIDE_GFX_VERSION this path relies on
    # (node gfx, near target) pairs: the gfx runs the near target's code under ``override``
    runs_as: tuple[tuple[str, str], ...] = ()
    cmake_only: bool = (
        False  # a source build for a gfx its stack does not ship (CMake accepts it; nothing more)
    )

    @property
    def ok(self) -> bool:
        return not self.reasons

    def built_for(self, node_targets: tuple[str, ...]) -> tuple[str, ...]:
        """The gfx targets the artifact this path hands over carries code for: a prebuilt one,
        its arch list; a source build, the node's targets, each one the override runs as its
        near target built as that target (gfx1031 -> gfx1030)."""
        if not self.candidate.from_source:
            return self.candidate.built_for(node_targets)
        near = dict(self.runs_as)
        return tuple(dict.fromkeys(near.get(t, t) for t in node_targets))

    @property
    def host_fixable(self) -> bool:
        return bool(self.reasons) and all(r.fix is not None and r.fix.host for r in self.reasons)

    @property
    def fix_texts(self) -> tuple[Phrase, ...]:
        """Each distinct fix of the reasons, in order (two reasons one driver move cures name it
        once)."""
        return tuple(dict.fromkeys(r.fix.text for r in self.reasons if r.fix is not None))


class MissingFact(msgspec.Struct, frozen=True, kw_only=True):
    """A fact the answer depends on that the data does not hold, and how to get it."""

    kind: Literal["gfx", "release", "driver", "unchecked"]
    subject: str  # "gfx1299", "0.34.0", "99.1"; for "unchecked", the advisory's code
    detail: Phrase
    fetch: str | None  # the command that reads it from upstream, where one exists
    source: Phrase = Phrase.verbatim("")  # where the data says the subject exists
    hint: Phrase = Phrase.verbatim("")  # for "unchecked": what to give so that it can be checked

    @classmethod
    def unchecked(cls, advisory: Advisory) -> MissingFact:
        """A requirement an advisory says nobody checked, as what the answer lacks."""
        return cls(
            kind="unchecked",
            subject=advisory.code,
            detail=advisory.message,
            fetch=None,
            source=advisory.source,
            hint=advisory.hint,
        )


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """The answer for a node and a request: the verdict, the plan, the rejected paths and why."""

    verdict: Verdict
    node: Node
    request: Request
    plan: Evaluation | None
    warnings: tuple[Advisory, ...]
    rejected: tuple[Evaluation, ...]
    alternatives: tuple[Evaluation, ...]
    blockers: tuple[Reason, ...] = ()  # reasons shared by every candidate (the root causes)
    host_fix: Evaluation | None = None  # the closest path a host change would open
    missing: tuple[MissingFact, ...] = ()  # with verdict "unknown": what the data lacks
    model: ModelAnswer | None = None  # with --model: architecture, attention path, memory fit

    @property
    def exit_code(self) -> int:
        if self.verdict == "unknown":
            return UNKNOWN_EXIT
        return 0 if self.verdict in OK_VERDICTS else 1


class Reporter:
    """Progress hooks; the default does nothing (the CLI may print with ``--verbose``)."""

    def considering(self, candidate: Candidate) -> None: ...

    def rejecting(self, candidate: Candidate, reasons: tuple[Reason, ...]) -> None: ...

    def accepting(self, candidate: Candidate) -> None: ...
