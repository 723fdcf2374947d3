"""Frozen, typed records for every fact in ``matrix/``.

Each record is a frozen ``msgspec.Struct`` (cheap to declare at start-up, decoded straight from
the compiled matrix, ``msgspec.structs.replace`` to derive one); so is ``Matrix``, which also
keeps lookup indexes, built on first use.

``resolver.data.matrix`` makes these from the TOML files and checks them; everything else reads only
these records. Each record carries a ``Provenance``: where the fact came from and how sure we are.
"""

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar, get_args, overload

import msgspec
from packaging.version import Version

from resolver.util.versions import series, series_key

Confidence = Literal["exact", "release-branch", "inferred", "unknown"]
CONFIDENCES: tuple[Confidence, ...] = ("exact", "release-branch", "inferred", "unknown")

Stream = Literal["legacy", "therock-preview", "therock"]
STREAMS: tuple[Stream, ...] = ("legacy", "therock-preview", "therock")

Family = Literal["instinct", "radeon", "radeon-pro", "ryzen-apu"]
FAMILIES: tuple[Family, ...] = ("instinct", "radeon", "radeon-pro", "ryzen-apu")

VllmStatus = Literal["official", "buildable", "unsupported"]
AiterSupport = Literal["full", "triton-only", "none"]
# MXFP4 weights: "native" = MX compute in hardware (gfx950-class); "emulated" = vLLM runs MXFP4
# checkpoints by weight-only dequantization (no MX compute); "none" = no source says it runs.
Mxfp4Support = Literal["native", "emulated", "none"]
MXFP4_SUPPORT: tuple[Mxfp4Support, ...] = ("native", "emulated", "none")
Fp8Format = Literal["fnuz", "ocp"]
Entrypoint = Literal["vllm-serve", "shell"]
Layout = Literal["single-stage", "two-stage-root", "two-stage-docker", "therock-wheels"]
LAYOUTS: tuple[Layout, ...] = (
    "single-stage",
    "two-stage-root",
    "two-stage-docker",
    "therock-wheels",
)
WheelStatus = Literal["release", "nightly", "legacy"]

# Component keys a vLLM release can pin; a release has only the ones it builds.
Component = Literal[
    "triton",
    "pytorch",
    "vision",
    "audio",
    "flash_attention",
    "aiter",
    "mori",
    "rccl",
    "hipblaslt",
    "hipblas_common",
]
COMPONENTS: tuple[str, ...] = get_args(Component)


# --- how a field is written in its data file ---------------------------------------------------
# Each record below is the one declaration of its table: ``resolver.data.schema`` reads these
# annotations to check a file, generate docs/matrix.schema.json, order keys for
# scripts/update-matrix and print `matrix show --json`. A field's default makes it optional in
# the file; ``Provenance`` is written flat (source, confidence, note) on the table it describes.


class FileMeta:
    """What a field says of its data file (``resolver.data.schema`` reads ``extra``; msgspec
    ignores ``Annotated`` metadata that is not its own ``Meta``).

    Not msgspec's ``Meta(extra=...)``: that one's hash leaves ``extra`` out, so every
    ``Annotated`` of one hashed alike and collided in typing's cache of parameterized types, a
    cost paid for each field at every start (about a millisecond of importing this module)."""

    __slots__ = ("_hash", "extra")

    def __init__(self, **extra: Any) -> None:
        self.extra: Mapping[str, Any] = extra
        self._hash = hash(tuple(sorted(extra.items())))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FileMeta) and self.extra == other.extra

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"FileMeta({', '.join(f'{k}={v!r}' for k, v in self.extra.items())})"


def safe(kind: str) -> FileMeta:
    """Each value must pass ``resolver.util.safety``'s ``kind`` pattern (it reaches a shell line,
    a Dockerfile or a URL)."""
    return FileMeta(safe=kind)


def form(pattern: str, what: str, *, keys: tuple[str, str] | None = None) -> FileMeta:
    """Each value (each item; for a map, each value's items) must match ``pattern``, else it "is
    not ``what``"; ``keys``: the pattern and name a map's keys must match."""
    if keys is None:
        return FileMeta(pattern=pattern, what=what)
    return FileMeta(pattern=pattern, what=what, key_pattern=keys[0], key_what=keys[1])


def whole(low: int, high: int | None = None) -> FileMeta:
    """A whole number from ``low`` (to ``high``)."""
    return FileMeta(low=low, high=high)


# Not written in the data file: the loader or another table sets it (an NVIDIA record's vendor).
DERIVED = FileMeta(file=False)
# A string the file gives as a PEP 440 specifier, kept as text.
SPECIFIER = FileMeta(specifier=True)
# A list the file must give at least one item of (what is decided names its first).
NONEMPTY = FileMeta(nonempty=True)
# A table of tables keyed by this field of the item (pins: component -> {repo, ref}).
KEYED_BY_COMPONENT = FileMeta(keyed_by="component")
SHA256 = form(r"[0-9a-f]{64}", "64 lower-case hex digits (a SHA-256)")


class Provenance(msgspec.Struct, frozen=True, kw_only=True):
    """Where a fact came from and how sure that is, written flat on the table it describes.
    ``read_at`` is accepted in the overlay (``matrix refresh --write``) and not kept."""

    source: str
    confidence: Confidence = "exact"
    note: str = ""


class OsRelease(msgspec.Struct, frozen=True, kw_only=True):
    id: str  # "ubuntu-22.04": os-release ID + major.minor VERSION_ID
    name: str
    glibc: Version | None = None
    kernels: tuple[str, ...] = ()
    provenance: Provenance


class OsRestriction(msgspec.Struct, frozen=True, kw_only=True):
    """A matrix footnote: these GPUs are supported only on these OS releases."""

    inherits_provenance: ClassVar[bool] = True

    gfx: tuple[str, ...] = ()
    products: tuple[str, ...] = ()
    os: tuple[str, ...]
    provenance: Provenance  # its own source when given, else the release's

    @property
    def note(self) -> str:
        return self.provenance.note


class RocmRelease(msgspec.Struct, frozen=True, kw_only=True):
    version: Version
    stream: Stream
    date: str | None = None
    gfx: tuple[str, ...] = ()
    os: tuple[str, ...] = ()  # point releases as listed, e.g. "ubuntu-22.04.5"
    pytorch: tuple[str, ...] = ()
    kmd_at_release: str | None = None  # AMD's driver cell for this release, verbatim
    os_restrictions: tuple[OsRestriction, ...] = msgspec.field(default=(), name="os_restriction")
    provenance: Provenance

    @property
    def label(self) -> str:
        return f"ROCm {self.label_without_rocm}"

    @property
    def label_without_rocm(self) -> str:
        """The version and its stream, as a range ends ("ROCm 6.4 to 7.0 (TheRock)")."""
        suffix = {"legacy": "", "therock-preview": " (TheRock preview)", "therock": " (TheRock)"}
        return f"{self.version}{suffix[self.stream]}"


_SERIES = form(r"[0-9]{1,4}\.[0-9]{1,4}", "a MAJOR.MINOR series")


class DriverSeries(msgspec.Struct, frozen=True, kw_only=True):
    """An amdgpu driver series and the ROCm user-space series it runs (containers, wheels)."""

    series: Annotated[str, _SERIES]  # "30.30", "6.4"
    # ROCm series: "6.3", "7.2", "7.14", "10.0"; kept in numeric order
    user_space: Annotated[tuple[str, ...], _SERIES, NONEMPTY]
    # the ROCm release it shipped with, where AMD says
    paired_rocm: Annotated[str | None, safe("version")] = None
    provenance: Provenance
    # amdgpu kernel module versions (/sys/module/amdgpu/version) AMD's data pairs with this
    # release, with their own source; the probe maps a module version only through these.
    module_versions: tuple[str, ...] = ()
    module_versions_source: str = ""
    module_versions_confidence: Confidence = "exact"
    # Each driver release of the series AMD paired with a ROCm release (a table "30.10.1" =
    # "7.0.1"): a GPU first supported by a patch ROCm (RX 9070 XT: 6.4.1) is known to the series'
    # later releases, not to its x.y.0.
    releases: Annotated[
        tuple[tuple[str, str], ...],
        FileMeta(safe="version", key_safe="version"),
    ] = ()
    releases_source: str = ""
    releases_confidence: Confidence = "exact"

    def runs(self, rocm: Version) -> bool:
        return series(rocm) in self.user_space


ComputePartition = Literal["SPX", "DPX", "TPX", "QPX", "CPX"]
MemoryPartition = Literal["NPS1", "NPS2", "NPS4", "NPS8"]


class PartitionMemory(msgspec.Struct, frozen=True, kw_only=True):
    """A compute + memory partition mode AMD documents for a product, and the memory of one of
    the logical GPUs it makes (what vLLM on one partition can use)."""

    inherits_provenance: ClassVar[bool] = True

    compute: ComputePartition
    memory: MemoryPartition
    logical_gpus: Annotated[int, whole(1, 64)]
    # bytes of one logical GPU; None where AMD states no size for this mode
    memory_bytes: Annotated[int | None, whole(1)] = None
    provenance: Provenance


class GpuProduct(msgspec.Struct, frozen=True, kw_only=True):
    inherits_provenance: ClassVar[bool] = True

    name: str
    family: Family
    pci_device_id: str | None = None  # lower-case hex without 0x, e.g. "74a1"
    pci_revision: str | None = None
    first_rocm: str | None = None
    provenance: Provenance  # where the name/PCI id come from; else the target's source
    # Whole-device CU count where AMD states it: tells apart products that share a PCI id
    # when no revision is known (0x74a1: MI300X 304 / MI300A 228).
    compute_units: int | None = None
    # Memory of one GPU as ROCm enumerates it (one GCD of an MI250/MI250X), in bytes: the
    # driver's own reading where a published one exists, else AMD's stated size (confidence
    # inferred: the driver keeps back a few MiB). None with confidence "unknown": not known.
    memory_bytes: Annotated[int | None, whole(1)] = None
    memory_source: str = ""
    memory_confidence: Confidence = "exact"
    # AMD's stated size for the product (its spec table's "VRAM (GiB)", whole package), in bytes
    marketed_memory_bytes: Annotated[int | None, whole(1)] = None
    marketed_memory_source: str = ""
    # An APU: the GPU's memory is system memory shared with the CPU (sized by the machine and
    # the kernel's GTT/TTM limits), not dedicated VRAM.
    memory_unified: bool = False
    partitions: tuple[PartitionMemory, ...] = msgspec.field(default=(), name="partition")


class FeatureGates(msgspec.Struct, frozen=True, kw_only=True):
    aiter: AiterSupport
    fp8: bool = False
    fp8_format: Fp8Format | None = None  # set exactly when fp8
    mx: bool = False
    # written only where it is not what mx implies ("native" with mx, else "none")
    mxfp4: Mxfp4Support = "none"
    # where MXFP4's support is stated, if not in ``provenance`` (required for "emulated")
    mxfp4_source: str = ""
    mxfp4_confidence: Confidence = "exact"
    custom_allreduce: bool = False
    provenance: Provenance

    @property
    def mxfp4_provenance(self) -> Provenance:
        """Where MXFP4's support is said: its own source, else the features' source."""
        if not self.mxfp4_source:
            return self.provenance
        return Provenance(source=self.mxfp4_source, confidence=self.mxfp4_confidence)


class KernelFloor(msgspec.Struct, frozen=True, kw_only=True):
    """AMD supports this GPU on ``os`` (an os id, e.g. "ubuntu-24.04") from kernel ``min_kernel``
    on."""

    inherits_provenance: ClassVar[bool] = True

    os: str
    min_kernel: Annotated[str, form(r"[0-9]+\.[0-9]+", "a MAJOR.MINOR kernel version")]
    flavour: str = ""  # how AMD names the kernel: "OEM 6.17", "GA 7.0"; else min_kernel
    provenance: Provenance


class GfxTarget(msgspec.Struct, frozen=True, kw_only=True):
    name: Annotated[str, safe("gfx")]
    arch: str  # "CDNA3", "RDNA4", ...
    families: tuple[Family, ...]
    vllm_status: VllmStatus
    vllm_note: str = ""
    # an HSA_OVERRIDE_GFX_VERSION people use for it (unofficial), and the gfx it makes the
    # runtime load
    override: Annotated[str | None, safe("gfx_override")] = None
    override_target: Annotated[str | None, safe("gfx")] = None
    features: FeatureGates
    # recommended serving env for this target (a table NAME = "value" in the file)
    env: Annotated[
        tuple[tuple[str, str], ...],
        FileMeta(safe="env_value", key_safe="env_name"),
    ] = ()
    products: tuple[GpuProduct, ...] = msgspec.field(default=(), name="product")
    provenance: Provenance
    # Linux releases AMD documents for this GPU with their kernel floor (APUs run the inbox
    # driver, so the kernel is the driver); empty where the data has no such statement.
    kernel_floors: tuple[KernelFloor, ...] = msgspec.field(default=(), name="kernel_floor")
    # Where AMD says how an APU's GPU memory (GTT over system RAM) is sized; "" for discrete GPUs.
    unified_memory_source: str = ""
    # Where AMD says this GPU runs on the distribution kernel's own amdgpu (its Ryzen AI tables
    # name a kernel, not an amdgpu release): the kernel floors decide, not AMD's driver table.
    inbox_driver_source: str = ""
    # The route people take where vLLM upstream does not run (a community fork), and where that
    # is said; "" where the data names none.
    alternative: str = ""
    alternative_source: str = ""


# A ref that names one state of a repository: a commit (7-40 hex) or a release-like tag
# (v1.2.3, 2.9.0, v0.1.10.post2, rocm-6.4.1). Anything else (main, a feature branch) moves.
# Patterns, compiled by ``re`` on first use: a check asks only of its plan's pins.
_FIXED_REF = r"(?:[0-9a-f]{7,40}|[A-Za-z_-]*v?[0-9]+(?:\.[0-9]+)+(?:[.-]?(?:post|rc|a|b)[0-9]+)?)\Z"
_COMMIT_REF = r"[0-9a-f]{7,40}\Z"  # a commit, full or abbreviated


class ComponentPin(msgspec.Struct, frozen=True, kw_only=True):
    component: Component
    repo: Annotated[str, safe("repo")]  # "ROCm/triton"
    ref: Annotated[str, safe("ref")]  # commit, tag or branch, verbatim from upstream

    @property
    def moving(self) -> bool:
        """A branch name (``main``): what it builds changes over time, so it is not reproducible."""
        return not fixed_ref(self.ref)

    @property
    def is_commit(self) -> bool:
        """A commit (7-40 hex digits); a tag or branch is not one."""
        return commit_ref(self.ref)


# Lower-case hex digits: a commit ref, a content key (resolver.data.matrix).
LOWER_HEX = frozenset("0123456789abcdef")
_DIGITS = frozenset("0123456789")
_PREFIX = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-")


def commit_ref(ref: str) -> bool:
    """``re.match(_COMMIT_REF, ref)``: 7-40 lower-case hex digits, a full or abbreviated commit."""
    return 7 <= len(ref) <= 40 and LOWER_HEX.issuperset(ref)


def fixed_ref(ref: str) -> bool:
    """``re.match(_FIXED_REF, ref)``, read without compiling it (a check asks it of its plan's
    pins; the pattern's compile is most of that). tests/test_data_schema.py proves them equal."""
    if commit_ref(ref):
        return True
    i = 0
    while i < len(ref) and ref[i] in _PREFIX:  # [A-Za-z_-]*v?: the prefix takes the v
        i += 1
    j = i
    while j < len(ref) and (ref[j] in _DIGITS or ref[j] == "."):
        j += 1
    core, rest = ref[i:j], ref[j:]
    if core.endswith("."):  # the separator of a suffix (1.2.3.post1)
        core, rest = core[:-1], "." + rest
    parts = core.split(".")
    if len(parts) < 2 or not all(parts):
        return False
    if not rest:
        return True
    if rest[0] in ".-":
        rest = rest[1:]
    for tag in ("post", "rc", "a", "b"):
        if rest.startswith(tag):
            number = rest[len(tag) :]
            return bool(number) and _DIGITS.issuperset(number)
    return False


def stack_variant(rocm: Version | None) -> str:
    """Upstream's name for a ROCm stack: rocm{major}{minor} (.buildkite/scripts/rocm/stack.sh)."""
    return f"rocm{rocm.major}{rocm.minor}" if rocm is not None else "default"


class RocmStack(msgspec.Struct, frozen=True, kw_only=True):
    """One ROCm build of a vLLM release: its base Dockerfile pair and what it pins.

    Up to v0.32 a release had one stack for its published image (plus, from v0.27, a separate
    gfx1250 stack on a TheRock nightly); v0.33 builds TheRock ROCm 10.0 by default and keeps a
    ROCm 7.2 stack as ``rocm72`` images and wheels."""

    inherits_provenance: ClassVar[bool] = True

    # upstream's name: rocm{major}{minor} (stack.sh), or the Dockerfile suffix (gfx1250);
    # the loader names it from its ROCm when the file does not
    variant: Annotated[str, safe("image_tag")] = ""
    dockerfile: str | None = None  # the base Dockerfile upstream builds it from
    default: bool = False  # owns the plain v<version> image tag (exactly one stack per release)
    layout: Layout = "two-stage-docker"
    # the loader derives it from rocm and layout when the file does not say
    stream: Stream = "legacy"
    base_image: str | None = None  # repo:tag, each part checked as an image reference
    rocm: Version | None = None
    python: Annotated[str | None, safe("version")] = None
    # the PyTorch wheel versions a TheRock stack installs (no source build)
    torch: Annotated[str | None, safe("version")] = None
    torchvision: Annotated[str | None, safe("version")] = None
    torchaudio: Annotated[str | None, safe("version")] = None
    arch: tuple[str, ...] = ()  # PYTORCH_ROCM_ARCH: built and shipped
    aiter_arch: tuple[str, ...] = ()
    # FlashAttention's GPU_ARCHS as the stack's build line evaluates it; None: not read
    fa_arch: tuple[str, ...] | None = None
    # MORI_GPU_ARCHS as the stack sets it; () where it sets none (MORI decides); None: not read
    mori_arch: tuple[str, ...] | None = None
    # vllm/vllm-openai-rocm tags the release pipeline publishes for it
    images: Annotated[tuple[str, ...], safe("image_tag")] = ()
    # where a TheRock stack gets ROCm and PyTorch wheels
    wheel_index: Annotated[str | None, safe("url")] = None
    pins: Annotated[tuple[ComponentPin, ...], KEYED_BY_COMPONENT] = ()
    # What else the stack's Dockerfiles do, read from the sdist (v0.30 on; empty, False or None
    # where not read). ENV of upstream's base stage a source build keeps (HSA_NO_SCRATCH_RECLAIM)
    base_env: Annotated[
        tuple[tuple[str, str], ...],
        FileMeta(safe="env_value", key_safe="env_name"),
    ] = ()
    # ENV of upstream's final image: the app file's final stage and the base file's final stage
    final_env: Annotated[
        tuple[tuple[str, str], ...],
        FileMeta(safe="env_value", key_safe="env_name"),
    ] = ()
    aiter_system_triton: bool = False  # AITER built with AITER_USE_SYSTEM_TRITON=1
    # ROCm/triton commit whose python/triton_kernels vLLM's build uses (ROCM_TRITON_KERNELS_COMMIT)
    triton_kernels_commit: Annotated[str | None, safe("ref")] = None
    # ROCr+CLR and rocprofiler-sdk that upstream builds from ROCm/rocm-systems over the base ROCm
    rocm_runtime_commit: Annotated[str | None, safe("ref")] = None
    rocprofiler_sdk_commit: Annotated[str | None, safe("ref")] = None
    # TheRock: the nightly wheel index upstream adds as --extra-index-url
    nightly_index: Annotated[str | None, safe("url")] = None
    # TheRock: the packages whose [device-<arch>] extra is installed per target (torch, ...)
    device_packages: Annotated[tuple[str, ...], safe("ref")] = ()
    # TheRock: kpack files upstream deletes under site-packages (gfx90a xnack builds that fail
    # with hipErrorInvalidImage on MI250)
    drop_kpacks: Annotated[tuple[str, ...], safe("env_value")] = ()
    # TheRock: upstream patches rocm_sdk to load its libraries without RTLD_GLOBAL
    rocm_sdk_rtld_local: bool = False
    provenance: Provenance

    @property
    def preview(self) -> bool:
        """Built on a ROCm nightly or preview: not a release anyone should pin production to."""
        return self.stream == "therock-preview" or (
            self.rocm is not None and self.rocm.is_prerelease
        )

    @property
    def moving_pins(self) -> tuple[ComponentPin, ...]:
        return tuple(p for p in self.pins if p.moving)

    @property
    def label(self) -> str:
        return f"{self.variant} stack (ROCm {self.rocm})" if self.rocm else f"{self.variant} stack"

    def pin(self, component: str) -> ComponentPin | None:
        return next((p for p in self.pins if p.component == component), None)


class VllmRelease(msgspec.Struct, frozen=True, kw_only=True):
    # The shape before v0.27 data had stacks: one stack's fields on the release itself.
    flat_stack_fields: ClassVar[tuple[str, ...]] = (
        "layout",
        "base_image",
        "rocm",
        "python",
        "arch",
        "aiter_arch",
        "pins",
    )

    version: Version
    date: str | None = None
    tag_commit: str | None = None
    sdist_sha256: Annotated[str | None, SHA256] = None
    cmake_arch: tuple[str, ...] = ()  # HIP_SUPPORTED_ARCHS: what CMake accepts (buildable)
    # How `vllm serve` takes the model, read from the sdist's CLI files (refresh/sdist.py
    # serve_cli): the positional model_tag "required" (to v0.8.2) or "optional", and `--model`
    # "refused" at argument parsing (v0.6.0-v0.11.0, vLLM #7347) or "deprecated" (a warning,
    # #25967); None where not read. Every run form passes the model positionally.
    serve_model_tag: Literal["required", "optional"] | None = None
    serve_model_option: Literal["refused", "deprecated"] | None = None
    serve_source: str = ""  # the sdist (sha256) and the files both were read from
    # the default stack first ([[release.stack]] in the file)
    stacks: tuple[RocmStack, ...] = msgspec.field(default=(), name="stack")
    provenance: Provenance

    @property
    def stack(self) -> RocmStack | None:
        """The default stack (the one that owns the plain release image tag)."""
        return self.stacks[0] if self.stacks else None

    def stack_named(self, variant: str) -> RocmStack | None:
        return next((s for s in self.stacks if s.variant == variant), None)

    # The default stack's facts, as every release had exactly one stack before v0.27.
    @property
    def layout(self) -> Layout | None:
        return self.stack.layout if self.stack else None

    @property
    def base_image(self) -> str | None:
        return self.stack.base_image if self.stack else None

    @property
    def rocm(self) -> Version | None:
        return self.stack.rocm if self.stack else None

    @property
    def python(self) -> str | None:
        return self.stack.python if self.stack else None

    @property
    def arch(self) -> tuple[str, ...]:
        return self.stack.arch if self.stack else ()

    @property
    def aiter_arch(self) -> tuple[str, ...]:
        return self.stack.aiter_arch if self.stack else ()

    @property
    def pins(self) -> tuple[ComponentPin, ...]:
        return self.stack.pins if self.stack else ()

    @property
    def known(self) -> bool:
        """Whether the build facts (base ROCm and pins) of this release are known at all."""
        return self.rocm is not None and self.provenance.confidence != "unknown"

    def pin(self, component: str) -> ComponentPin | None:
        return next((p for p in self.pins if p.component == component), None)


class WheelVariant(msgspec.Struct, frozen=True, kw_only=True):
    # "rocm700"; an NVIDIA wheel: "cu129". A local version label: it reaches `pip install`
    # lines and Dockerfiles, so no shell syntax ("x;id" is refused like any unsafe value).
    name: Annotated[str, safe("image_tag")]
    rocm: Version | None  # None: an NVIDIA (CUDA) wheel (solve/cuda/ makes those records)
    python: Annotated[tuple[str, ...], safe("python"), NONEMPTY]
    glibc_min: Version
    vllm: Annotated[str | None, SPECIFIER] = None  # PEP 440 range; None: the docs state none
    includes_nightlies: bool = False
    # The wheel's torch loads the host's /opt/rocm instead of bringing ROCm from pip (vLLM's docs:
    # the legacy-stack wheels "use a system ROCm installation"): the host must have that ROCm.
    uses_host_rocm: bool = False
    index_url: Annotated[str, safe("url")]
    status: WheelStatus
    arch: tuple[str, ...] = ()
    provenance: Provenance
    vendor: Annotated[str, DERIVED] = "amd"  # "nvidia": vLLM's PyPI wheel (cuda.toml)
    # The known vLLM releases in the ``vllm`` range, found once at load (a check then needs no
    # specifier arithmetic).
    releases: Annotated[tuple[Version, ...], DERIVED] = ()
    # the CUDA an NVIDIA wheel is compiled with, and pyproject's requires-python
    cuda: Annotated[Version | None, DERIVED] = None
    requires_python: Annotated[str | None, DERIVED] = None


ArchFrom = Literal["recipe", "docs", "audit"]


class ImageChannel(msgspec.Struct, frozen=True, kw_only=True):
    """Who publishes a container image repository (``channels.toml``)."""

    repo: Annotated[str, safe("image_repo")]
    vendor: Literal["amd", "nvidia"]
    official: bool  # built by vLLM's own release pipeline (as opposed to AMD's images)
    provenance: Provenance


class ContainerImage(msgspec.Struct, frozen=True, kw_only=True):
    repo: Annotated[str, safe("image_repo")]
    tag: Annotated[str, safe("image_tag")]
    stream: Stream = "legacy"
    rocm: Version | None = None
    vllm: Version | None = None
    python: Annotated[str | None, safe("version")] = None
    torch: str | None = None
    arch: tuple[str, ...] = ()
    entrypoint: Entrypoint
    # the release's ROCm stack variant this image was built from
    stack: Annotated[str | None, safe("image_tag")] = None
    family_tag: str | None = None  # "cdna", "rdna", "gfx94X-dcgpu", "mi300", ...
    digest: Annotated[str | None, safe("digest")] = None
    deprecated: bool = False
    # How ``arch`` was read: "recipe" (the release's build files at its tag, from the sdist),
    # "docs" (a docs page's claim), "audit" (the image's own code objects): a docs claim alone
    # is what --strict will not rest a plan on.
    arch_from: ArchFrom = "docs"
    # gfx targets evidence says the image carries no code for, whatever ``arch`` claims (an
    # issue's listing of its libraries), with that evidence's source: never planned for them.
    lacks: tuple[str, ...] = ()
    lacks_source: str = ""
    provenance: Provenance
    vendor: Annotated[str, DERIVED] = "amd"  # "nvidia": a vllm/vllm-openai image (cuda.toml)
    cuda: Annotated[Version | None, DERIVED] = None  # the CUDA an NVIDIA image is built with
    # built by vLLM's own release pipeline: what channels.toml says of its repo, set at load
    official: Annotated[bool, DERIVED] = False

    @property
    def ref(self) -> str:
        base = f"{self.repo}:{self.tag}"
        return f"{base}@{self.digest}" if self.digest else base


# X.Y, X.Ya (arch-specific: runs on X.Y only), X.Yf (family: on every X.Z, Z >= Y), +PTX
_COMPUTE_CAPS = form(
    r"[0-9]{1,2}\.[0-9][af]?(\+PTX)?", "a compute capability (e.g. 9.0, 10.0f, 12.0+PTX)"
)


class CudaImage(msgspec.Struct, frozen=True, kw_only=True):
    """One ``vllm/vllm-openai`` image family of a release (``v0.32.0``, ``v0.32.0-cu129``): the
    CUDA it is built with and the compute capabilities it carries code for ("12.0+PTX": PTX
    too, which newer GPUs JIT)."""

    repo: Annotated[str, safe("image_repo")] = "vllm/vllm-openai"
    tag: Annotated[str, safe("image_tag")]
    cuda: Version  # major.minor
    arch: Annotated[tuple[str, ...], _COMPUTE_CAPS]  # x86_64
    arch_aarch64: Annotated[tuple[str, ...], _COMPUTE_CAPS] = ()
    digest: Annotated[str | None, safe("digest")] = None
    provenance: Provenance  # its own source where given, else the release's

    inherits_provenance: ClassVar[bool] = True

    @property
    def note(self) -> str:
        return self.provenance.note

    @property
    def ref(self) -> str:
        base = f"{self.repo}:{self.tag}"
        return f"{base}@{self.digest}" if self.digest else base


class CudaRelease(msgspec.Struct, frozen=True, kw_only=True):
    """What one vLLM release's CUDA builds need from an NVIDIA host (``cuda.toml``, read from
    the release's sdist by ``matrix refresh --source cuda``)."""

    version: Version
    cuda: Version  # the images' default CUDA (major.minor)
    python: Annotated[str | None, safe("version")] = None  # the images' Python
    arch: Annotated[tuple[str, ...], _COMPUTE_CAPS]
    images: tuple[CudaImage, ...] = msgspec.field(default=(), name="image")
    wheel_cuda: Version | None = None  # the CUDA the PyPI wheels are compiled with
    # the PyTorch index the install page adds for the wheel (--extra-index-url); None: not stated
    wheel_index: Annotated[str | None, safe("url")] = None
    # the glibc the x86_64 PyPI wheel's platform tag asks of the host, and that tag
    # (manylinux_2_35_x86_64), read from the package index's file names; None: not read
    wheel_glibc: Version | None = None
    wheel_platform: Annotated[str | None, form(r"manylinux[0-9a-z_]*x86_64", "a manylinux tag")] = (
        None
    )
    # other CUDA builds vLLM publishes as release assets
    wheel_variants: tuple[Version, ...] = ()
    requires_python: Annotated[str | None, SPECIFIER] = None
    # Per quantization method (its get_name()), the lowest compute capability its config's
    # get_min_capability() admits on CUDA ("8.9" for modelopt's FP8); None: not read, and a
    # method missing here is not checked
    quant_min_capability: Annotated[
        tuple[tuple[str, str], ...] | None,
        form(
            r"[0-9]{1,2}\.[0-9]",
            "a compute capability",
            keys=(r"[a-z0-9][a-z0-9_-]{0,63}", "a quantization method name"),
        ),
    ] = None
    sdist_sha256: Annotated[str | None, SHA256] = None
    provenance: Provenance

    def quant_floor(self, method: str) -> str | None:
        """The compute capability ``method`` needs on CUDA, where the release's file states it."""
        return dict(self.quant_min_capability or ()).get(method)


class CudaDriverRule(msgspec.Struct, frozen=True, kw_only=True):
    """NVIDIA's minimum Linux driver branch for a CUDA major release (minor version
    compatibility: a CUDA 12.x build runs on any driver >= 525)."""

    major: Annotated[int, whole(1, 99)]  # a CUDA major release: 12
    min_driver: Annotated[int, whole(100, 9999)]  # a driver branch: 525
    provenance: Provenance


_METHOD_NAME = form(r"[a-z0-9][a-z0-9_-]{0,63}", "a method or dtype name")


class ReleaseCapabilities(msgspec.Struct, frozen=True, kw_only=True):
    """What one vLLM release's ROCm platform accepts (``capabilities.toml``, from its sdist)."""

    version: Version
    # RocmPlatform.supported_quantization
    quantization: Annotated[tuple[str, ...], _METHOD_NAME]
    # CacheDType (vllm/config/cache.py); empty: not read
    kv_cache_dtypes: Annotated[tuple[str, ...], _METHOD_NAME] = ()
    # The gfx targets a RocmPlatform gate admits, evaluated per target; None: not read.
    fp8: tuple[str, ...] | None = None  # supports_fp8
    fp8_fnuz: tuple[str, ...] | None = None  # is_fp8_fnuz: FP8 is e4m3fnuz there, else OCP
    mx: tuple[str, ...] | None = None  # supports_mx: native MX kernels
    custom_allreduce: tuple[str, ...] | None = None  # use_custom_allreduce
    # Where torch's FP8 scaled-MM runs (scaled_mm/pytorch.py _rocm_torch_fp8_scaled_mm_supported)
    fp8_scaled_mm: tuple[str, ...] | None = None
    # Per format (mxfp8, mxfp4, fp8, wfp8a16, ...), the linear kernels vLLM picks from on ROCm
    # (kernels/linear/__init__.py _POSSIBLE_*_KERNELS), in its order; None: not read
    rocm_kernels: Annotated[
        tuple[tuple[str, tuple[str, ...]], ...] | None,
        form(
            r"[A-Za-z_][A-Za-z0-9_]{0,99}",
            "a kernel class name",
            keys=(r"[a-z0-9_]{1,32}", "a kernel format name"),
        ),
    ] = None
    # Per ROCm attention backend (rocm.py _get_backend_priorities, and the registry's ROCM_*
    # ones), the KV cache dtypes it accepts; None: not read (before 0.18.0 nothing checks it)
    rocm_attention: Annotated[
        tuple[tuple[str, tuple[str, ...]], ...] | None,
        form(
            r"[a-z0-9][a-z0-9_-]{0,63}",
            "a KV cache dtype name",
            keys=(r"[a-z0-9_]{1,48}", "an attention backend name"),
        ),
    ] = None
    sdist_sha256: Annotated[str | None, SHA256] = None
    provenance: Provenance

    def attention_backends(self, dtype: str) -> tuple[str, ...] | None:
        """The ROCm attention backends that accept KV cache ``dtype`` (empty: none does, and
        vLLM finds "No valid attention backend"); None where the backends were not read."""
        if self.rocm_attention is None:
            return None
        return tuple(name for name, dtypes in self.rocm_attention if dtype in dtypes)

    def kernels(self, fmt: str) -> tuple[str, ...] | None:
        """The ROCm kernels of ``fmt``; None where the release's tables were not read or have
        no such format."""
        return dict(self.rocm_kernels).get(fmt) if self.rocm_kernels is not None else None

    def emulates(self, fmt: str) -> bool | None:
        """Whether vLLM falls back to an emulation kernel for ``fmt`` on ROCm (one that runs on
        any GPU, in BF16); None where not read."""
        names = self.kernels(fmt)
        return None if names is None else any(n.startswith("Emulation") for n in names)


_ARCH_NAME = form(
    r"[A-Za-z_][A-Za-z0-9_]{0,99}",
    "an architecture name",
    keys=(r"[a-z][a-z0-9_]{0,47}", "a registry kind"),
)


class AttentionTraits(msgspec.Struct, frozen=True, kw_only=True):
    """What one ROCm attention backend's class states plainly (``models.toml``): a trait left
    out (None) is one the class does not state as a plain ``return``, so it is unknown."""

    inherits_provenance: ClassVar[bool] = True

    name: Annotated[str, form(r"[a-z0-9_]{1,48}", "an attention backend name")]
    # get_supported_head_sizes (empty: any head size), or an override ``head_size >= N``
    head_sizes: Annotated[tuple[str, ...] | None, form(r"[1-9][0-9]{0,3}", "a head size")] = None
    head_size_min: Annotated[int | None, whole(1, 9999)] = None
    mla: bool | None = None  # is_mla
    sparse: bool | None = None  # is_sparse (DeepSeek V3.2-style sparse MLA)
    sink: bool | None = None  # supports_sink (attention sinks: gpt-oss)
    sliding_window: bool | None = None  # supports_sliding_window
    # supports_attn_type: AttentionType values ("decoder", "encoder_decoder", ...)
    attn_types: Annotated[tuple[str, ...] | None, form(r"[a-z_]{1,32}", "an attention type")] = None
    # supports_compute_capability's return, verbatim and not evaluated; "" admits every GPU
    gfx_gate: Annotated[str | None, form(r"[A-Za-z0-9_ ().,<>=!]{0,120}", "a gate")] = None
    provenance: Provenance

    def takes_head_size(self, head_size: int) -> bool | None:
        """Whether the backend takes ``head_size``; None where its class does not say."""
        if self.head_size_min is not None:
            return head_size >= self.head_size_min
        if self.head_sizes is None:
            return None
        return not self.head_sizes or str(head_size) in self.head_sizes


class ModelRelease(msgspec.Struct, frozen=True, kw_only=True):
    """What one vLLM release offers models (``models.toml``, from its sdist). The registry is
    kept as what changed since the previous record: ``Matrix.model_support`` adds it up."""

    version: Version
    registry_read: bool = False  # the registry was read (added/removed are then complete)
    # registry kind (text_generation, multimodal, ...) -> architectures new since the record before
    added: Annotated[tuple[tuple[str, tuple[str, ...]], ...], _ARCH_NAME] = ()
    removed: Annotated[tuple[tuple[str, tuple[str, ...]], ...], _ARCH_NAME] = ()
    # _ROCM_UNSUPPORTED_MODELS; None: not read
    rocm_unsupported: Annotated[
        tuple[str, ...] | None, form(r"[A-Za-z_][A-Za-z0-9_]{0,99}", "an architecture name")
    ] = None
    # _ROCM_PARTIALLY_SUPPORTED_MODELS: architecture -> the release's reason
    rocm_partial: Annotated[
        tuple[tuple[str, str], ...],
        form(r"[^\x00-\x1f]{1,600}", "a reason", keys=(r"[A-Za-z_][A-Za-z0-9_]{0,99}", "a name")),
    ] = ()
    # EngineArgs' (CacheConfig's) default, as written ("0.92"); None: not read
    gpu_memory_utilization: Annotated[
        str | None, form(r"0\.[0-9]{1,4}|1\.0", "a fraction in (0, 1]")
    ] = None
    backends: tuple[AttentionTraits, ...] | None = msgspec.field(default=None, name="backend")
    sdist_sha256: Annotated[str | None, SHA256] = None
    provenance: Provenance


class ModelSupport(msgspec.Struct, frozen=True, kw_only=True):
    """One release's model facts, the registry added up (``Matrix.model_support``)."""

    version: Version
    # kind -> architectures; None where the registry was not read
    registry: tuple[tuple[str, frozenset[str]], ...] | None
    rocm_unsupported: dict[str, str] | None  # architecture -> reason ("" where none is given)
    rocm_partial: dict[str, str]
    gpu_memory_utilization: float | None
    backends: tuple[AttentionTraits, ...] | None
    record: ModelRelease

    @property
    def architectures(self) -> frozenset[str] | None:
        if self.registry is None:
            return None
        return frozenset().union(*(names for _, names in self.registry))

    def kinds_of(self, architecture: str) -> tuple[str, ...]:
        """The registry kinds listing ``architecture`` (LlamaForCausalLM is text_generation
        and, where a release maps it for pooling too, embedding)."""
        return tuple(k for k, names in self.registry or () if architecture in names)


class AmdgpuIsa(msgspec.Struct, frozen=True, kw_only=True):
    """An AMDGPU processor as code objects name it: its ELF ``EF_AMDGPU_MACH`` value and, for a
    generic ISA (``gfx11-generic``), the real processors its code runs on."""

    name: Annotated[
        str,
        form(r"gfx[0-9a-f]{3,4}|gfx[0-9]{1,2}(-[0-9])?-generic", "an AMDGPU processor name"),
    ]
    mach: Annotated[int, whole(1, 0xFF)]  # EF_AMDGPU_MACH
    covers: tuple[str, ...] = ()
    provenance: Provenance


class NvidiaMemory(msgspec.Struct, frozen=True, kw_only=True):
    """The memory of the boards with these PCI device ids (one GPU name has 80 GB and 94 GB
    boards): NVIDIA's stated size and, where a published nvidia-smi reading exists, the
    ``memory.total`` the driver reports (what vLLM sees), both in bytes."""

    inherits_provenance: ClassVar[bool] = True

    pci_device_ids: Annotated[tuple[str, ...], form(r"[0-9a-f]{4}", "four lower-case hex digits")]
    marketed: str = ""  # NVIDIA's words, e.g. "80GB HBM3"
    marketed_memory_bytes: Annotated[int | None, whole(1)] = None
    memory_bytes: Annotated[int | None, whole(1)] = None
    memory_source: str = ""
    provenance: Provenance  # where the stated size is said


class NvidiaGpu(msgspec.Struct, frozen=True, kw_only=True):
    """An NVIDIA GPU by PCI device id, with its compute capability (``nvidia-gpus.toml``)."""

    name: str
    compute_capability: Annotated[
        str, form(r"[0-9]{1,2}\.[0-9]", "a compute capability (e.g. 9.0)")
    ]
    pci_device_ids: Annotated[tuple[str, ...], form(r"[0-9a-f]{4}", "four lower-case hex digits")]
    provenance: Provenance
    memory: tuple[NvidiaMemory, ...] = ()


class ExampleNode(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str
    gfx: tuple[str, ...]
    gpus: Annotated[int, whole(1)]
    product: str
    driver: str | None = None
    os: str | None = None
    python: Annotated[str | None, safe("version")] = None
    rocm: str | None = None
    provenance: Provenance


T = TypeVar("T")


class Deferred(Generic[T]):
    """A table held as its checked, encoded records until first read (then kept decoded).

    The compiled matrix carries the tables an AMD check without ``--model`` never reads (CUDA
    releases and driver rules, NVIDIA GPUs, the AMDGPU ISA list, the model registries: a third of
    its bytes at four times today's data) this way, so a check does not pay for building their
    records. Equal and hashed by the records, however held."""

    __slots__ = ("_decode", "_encoded", "_value")

    def __init__(self, value: T) -> None:
        self._value: T | None = value
        self._encoded: memoryview | None = None
        self._decode: Callable[[memoryview], T] | None = None

    @classmethod
    def encoded(cls, encoded: memoryview, decode: Callable[[memoryview], T]) -> "Deferred[T]":
        d: Deferred[T] = cls.__new__(cls)
        d._value, d._encoded, d._decode = None, encoded, decode
        return d

    def get(self) -> T:
        if self._value is None:  # two threads may both decode: the same records, no harm
            assert self._encoded is not None
            assert self._decode is not None
            self._value = self._decode(self._encoded)
        return self._value

    def raw(self) -> memoryview | None:
        """The records as they were read encoded (a view of the file read), if they were
        (re-encoding them is a copy)."""
        return self._encoded

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Deferred) and self.get() == other.get()

    def __hash__(self) -> int:
        return hash(self.get())

    def __repr__(self) -> str:
        return f"Deferred({self.get()!r})"


# The tables ``Matrix`` holds as ``Deferred`` (the field is NAME_table; ``Matrix.NAME`` reads it).
DEFERRED_TABLES: tuple[str, ...] = ("cuda", "nvidia", "nvidia_gpus", "isa", "models")
_NO_RECORDS: Deferred[Any] = Deferred(())  # an absent table (never mutated: safe to share)


class _Decoded(Generic[T]):
    """``Matrix.NAME``: the records of its ``NAME_table`` field, decoded on first read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = f"{name}_table"

    @overload
    def __get__(self, obj: None, owner: type) -> "_Decoded[T]": ...

    @overload
    def __get__(self, obj: object, owner: type) -> T: ...

    def __get__(self, obj: object, owner: type) -> "T | _Decoded[T]":
        if obj is None:
            return self
        table: Deferred[T] = getattr(obj, self.field)
        return table.get()


class Matrix(msgspec.Struct, frozen=True, kw_only=True, dict=True):
    # dict=True: the lookup indexes below are cached properties, kept beside the fields (neither
    # equality nor the compiled matrix carries them).
    rocm: tuple[RocmRelease, ...]
    os: tuple[OsRelease, ...]
    drivers: tuple[DriverSeries, ...]
    gfx: tuple[GfxTarget, ...]
    vllm: tuple[VllmRelease, ...]
    wheels: tuple[WheelVariant, ...]
    images: tuple[ContainerImage, ...]
    examples: tuple[ExampleNode, ...]
    # Each release's capabilities encoded apart, keyed by its version: a check reads its plan's
    # record (``capabilities_of``); only a --quantization or --kv-cache-dtype reads them all.
    capabilities_table: tuple[tuple[Version, Deferred[ReleaseCapabilities]], ...] = ()
    channels: tuple[ImageChannel, ...] = ()
    # DEFERRED_TABLES, read through the properties of the same name below (``Matrix.of`` builds
    # them; ``msgspec.structs.replace(m, cuda=...)`` is refused, not silently ignored).
    cuda_table: Deferred[tuple[CudaRelease, ...]] = _NO_RECORDS
    nvidia_table: Deferred[tuple[CudaDriverRule, ...]] = _NO_RECORDS
    nvidia_gpus_table: Deferred[tuple[NvidiaGpu, ...]] = _NO_RECORDS
    isa_table: Deferred[tuple[AmdgpuIsa, ...]] = _NO_RECORDS
    models_table: Deferred[tuple[ModelRelease, ...]] = _NO_RECORDS
    cuda = _Decoded[tuple[CudaRelease, ...]]()
    nvidia = _Decoded[tuple[CudaDriverRule, ...]]()
    nvidia_gpus = _Decoded[tuple[NvidiaGpu, ...]]()
    isa = _Decoded[tuple[AmdgpuIsa, ...]]()
    models = _Decoded[tuple[ModelRelease, ...]]()

    @classmethod
    def of(cls, tables: Mapping[str, tuple[Any, ...]]) -> "Matrix":
        """The matrix of these tables, named as ``schema.FILES`` names them."""
        fields: dict[str, Any] = {
            (f"{name}_table" if name in DEFERRED_TABLES else name): (
                Deferred(records) if name in DEFERRED_TABLES else records
            )
            for name, records in tables.items()
            if name != "capabilities"
        }
        caps = tables.get("capabilities", ())
        return cls(**fields, capabilities_table=tuple((c.version, Deferred(c)) for c in caps))

    def with_tables(self, **tables: tuple[Any, ...]) -> "Matrix":
        """This matrix with the named tables replaced (``msgspec.structs.replace`` refuses a
        deferred table's name)."""
        names = [f for f in self.__struct_fields__ if not f.endswith("_table")]
        names += [*DEFERRED_TABLES, "capabilities"]
        return Matrix.of({name: tables.get(name, getattr(self, name)) for name in names})

    # Lookups the solver asks several times per candidate: dicts, not scans.
    @cached_property
    def _gfx_index(self) -> dict[str, GfxTarget]:
        return {g.name: g for g in self.gfx}

    @cached_property
    def capabilities(self) -> tuple[ReleaseCapabilities, ...]:
        return tuple(record.get() for _, record in self.capabilities_table)

    @cached_property
    def _caps_index(self) -> dict[Version, Deferred[ReleaseCapabilities]]:
        return dict(self.capabilities_table)

    @cached_property
    def _rocm_index(self) -> dict[Version, RocmRelease]:
        return {r.version: r for r in self.rocm}

    @cached_property
    def _drivers_by_series(self) -> dict[str, tuple[DriverSeries, ...]]:
        by_series: dict[str, list[DriverSeries]] = {}
        for d in self.drivers:
            for name in d.user_space:
                by_series.setdefault(name, []).append(d)
        return {
            s: tuple(sorted(ds, key=lambda d: series_key(d.series), reverse=True))
            for s, ds in by_series.items()
        }

    @cached_property
    def _cmake_accepts(self) -> dict[str, tuple[Version, ...]]:
        accepts: dict[str, list[Version]] = {}
        for r in self.vllm:
            if r.known:
                for name in r.cmake_arch:
                    accepts.setdefault(name, []).append(r.version)
        return {name: tuple(vs) for name, vs in accepts.items()}

    @cached_property
    def _places(self) -> dict[Version, int]:
        named = {r.version for r in self.vllm} | {i.vllm for i in self.images if i.vllm}
        return {v: i for i, v in enumerate(sorted(named, reverse=True))}

    def newest_first(self, version: Version) -> int:
        """A vLLM version's place among every version the releases and images name, newest
        first (KeyError for one the data does not name: no path can carry it)."""
        return self._places[version]

    def cmake_accepts(self, gfx: str) -> tuple[Version, ...]:
        """The releases (build facts known) whose CMake accepts ``gfx`` (HIP_SUPPORTED_ARCHS)."""
        return self._cmake_accepts.get(gfx, ())

    def capabilities_of(self, version: Version) -> ReleaseCapabilities | None:
        record = self._caps_index.get(version)
        return record.get() if record is not None else None

    def gate(
        self, version: Version, gate: str, gfx: str
    ) -> tuple[bool, ReleaseCapabilities] | None:
        """Whether release ``version``'s ``gate`` (a ``ReleaseCapabilities`` field: fp8,
        fp8_fnuz, mx, custom_allreduce) admits ``gfx``, with the record saying so; None where
        that release's gate was not read."""
        caps = self.capabilities_of(version)
        admitted = getattr(caps, gate) if caps is not None else None
        if caps is None or admitted is None:
            return None
        return gfx in admitted, caps

    def channel(self, repo: str) -> ImageChannel | None:
        return next((c for c in self.channels if c.repo == repo), None)

    def cuda_release(self, version: Version) -> CudaRelease | None:
        return next((r for r in self.cuda if r.version == version), None)

    def nvidia_gpu(self, pci_device_id: str | None) -> NvidiaGpu | None:
        want = (pci_device_id or "").lower().removeprefix("0x")[:4]
        return next((g for g in self.nvidia_gpus if want in g.pci_device_ids), None)

    def cuda_driver_rule(self, cuda: Version) -> CudaDriverRule | None:
        return next((r for r in self.nvidia if r.major == cuda.major), None)

    def gfx_target(self, name: str) -> GfxTarget | None:
        return self._gfx_index.get(name)

    @cached_property
    def _vllm_index(self) -> dict[Version, VllmRelease]:
        return {r.version: r for r in self.vllm}

    def vllm_release(self, version: Version) -> VllmRelease | None:
        """The vLLM release record of ``version``, if the data has one."""
        return self._vllm_index.get(version)

    def rocm_release(self, version: Version) -> RocmRelease | None:
        return self._rocm_index.get(version)

    @cached_property
    def _newest_in_series(self) -> dict[tuple[int, int], RocmRelease]:
        newest: dict[tuple[int, int], RocmRelease] = {}
        for r in self.rocm:
            key = (r.version.major, r.version.minor)
            if key not in newest or r.version > newest[key].version:
                newest[key] = r
        return newest

    def rocm_for(self, version: Version) -> RocmRelease | None:
        """The release itself, else the newest known release in the same series (7.0 -> 7.0.2)."""
        exact = self.rocm_release(version)
        if exact is not None:
            return exact
        return self._newest_in_series.get((version.major, version.minor))

    def rocm_label(self, version: Version) -> str:
        """How to name a ROCm version in prose: a nightly (7.14.0a20260623) is not its release."""
        if version.is_prerelease:
            return f"ROCm {version} (TheRock nightly)"
        rel = self.rocm_for(version)
        return rel.label if rel is not None else f"ROCm {version}"

    def driver(self, series: str) -> DriverSeries | None:
        return next((d for d in self.drivers if d.series == series), None)

    def driver_for_module(self, module_version: str) -> DriverSeries | None:
        """The release AMD's data pairs a kernel module version with, if any does."""
        return next((d for d in self.drivers if module_version in d.module_versions), None)

    def drivers_running(self, rocm: Version) -> tuple[DriverSeries, ...]:
        """Driver series whose user-space window holds ``rocm``, newest first."""
        return self._drivers_by_series.get(series(rocm), ())

    def os_release(self, os_id: str) -> OsRelease | None:
        return next((o for o in self.os if o.id == os_id), None)

    def os_listed_as(self, listed: str) -> OsRelease | None:
        """The OS record an OS id means, as a ROCm release lists it or a node reports it:
        ``ubuntu-22.04.5`` is ``ubuntu-22.04``, ``rhel-9.4`` is ``rhel-9`` where only the major
        release has a record."""
        base = ".".join(listed.split(".")[:2]) if listed.count(".") > 1 else listed
        found = next((o for o in self.os if base == o.id or base.startswith(o.id + ".")), None)
        if found is None and "-" in listed:
            family, _, ver = listed.partition("-")
            found = self.os_release(f"{family}-{ver.split('.')[0]}")
        return found

    def example(self, name: str) -> ExampleNode | None:
        return next((e for e in self.examples if e.name == name), None)

    @cached_property
    def _models_index(self) -> dict[Version, ModelSupport]:
        """Each release's registry added up from the deltas, oldest first (built on first use:
        only a --model answer pays for it)."""
        out: dict[Version, ModelSupport] = {}
        have: dict[str, frozenset[str]] = {}
        for rec in sorted(self.models, key=lambda r: r.version):
            if rec.registry_read:
                gone = dict(rec.removed)
                have = {k: v - frozenset(gone.get(k, ())) for k, v in have.items()}
                for kind, names in rec.added:
                    have[kind] = have.get(kind, frozenset()) | frozenset(names)
                have = {k: v for k, v in have.items() if v}
            gmu = rec.gpu_memory_utilization
            out[rec.version] = ModelSupport(
                version=rec.version,
                registry=tuple(sorted(have.items())) if rec.registry_read else None,
                rocm_unsupported=(
                    None
                    if rec.rocm_unsupported is None
                    else dict.fromkeys(rec.rocm_unsupported, "")
                ),
                rocm_partial=dict(rec.rocm_partial),
                gpu_memory_utilization=float(gmu) if gmu is not None else None,
                backends=rec.backends,
                record=rec,
            )
        return out

    def model_support(self, version: Version) -> ModelSupport | None:
        """What release ``version`` offers models; None where models.toml has no record."""
        return self._models_index.get(version)

    def architectures_of(self, version: Version) -> frozenset[str] | None:
        support = self.model_support(version)
        return support.architectures if support is not None else None

    def first_release_with(self, architecture: str) -> Version | None:
        """The oldest release whose registry lists ``architecture`` (the "needs vLLM >= X"
        hint), among the releases models.toml holds."""
        return next(
            (
                v
                for v, s in self._models_index.items()
                if s.architectures is not None and architecture in s.architectures
            ),
            None,
        )
