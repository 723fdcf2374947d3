"""The plan of a source-build Dockerfile: which release and stack (the solver's choice), then
everything the file says, decided from the solver's evaluation of that source build and the data
(``render`` adds nothing). Every repo, ref, tag and gfx is checked against a strict pattern here, at
plan time, even though the loader checked it already: data can be overlaid by a refresh, and
nothing that reaches a RUN line is trusted."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Final

import msgspec
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from resolver.artifacts.dockerfile.layout import layouts, tag_commit
from resolver.artifacts.mirrors import Mirrors, mirror_image, parse_mirror
from resolver.data.model import ComponentPin, GfxTarget, Matrix, RocmStack, VllmRelease
from resolver.data.node import Node
from resolver.explain.words import word
from resolver.solve.advisories import built_moving
from resolver.solve.types import Evaluation, SourceCandidate
from resolver.util.errors import InputError, UnknownGfxError, UnsafeValueError, UsageError
from resolver.util.safety import require_safe
from resolver.util.versions import driver_series, parse_version

DEFAULT_VLLM_REPO: Final = "vllm-project/vllm"
# Where a release's sdist is fetched from: the package index's files host serves every sdist under
# /packages/source/<first letter>/<name>/<file>. A mirror is one --build-arg VLLM_SDIST_URL away;
# the sha256 the data records (the index's own) still has to match.
SDIST_BASE: Final = "https://files.pythonhosted.org/packages/source/v/vllm"
# The BuildKit Dockerfile frontend the file asks for (cache and bind mounts need it).
SYNTAX_IMAGE: Final = "docker/dockerfile:1"
LABEL_PREFIX: Final = "rocm-vllm"


# The file's MAX_JOBS default is decided on the build host (dockerfiles/common/build-base): one
# job per CPU, at most one per 4 GiB of memory, the memory a HIP/C++ compile job of PyTorch,
# FlashAttention or AITER needs in practice (FlashAttention's README asks to limit MAX_JOBS on
# machines with less than 96 GB of RAM).


@dataclass(frozen=True, kw_only=True, slots=True)
class OmittedComponent:
    component: str
    repo: str
    ref: str
    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class DriverCheck:
    version: str | None
    series: str | None
    runs_base_rocm: bool | None  # None: the node gave no driver, or the series is not in the data


@dataclass(frozen=True, kw_only=True, slots=True)
class DockerfilePlan:
    """Everything the rendered file says, decided up front (``render`` adds nothing)."""

    vllm_version: str
    vllm_repo: str
    vllm_ref: str
    stack: str  # the release's ROCm stack variant (rocm72, rocm100, gfx1250, ...)
    layout: str
    upstream_files: str
    base_image: str
    rocm: str
    python: str | None
    gfx: tuple[str, ...]
    pytorch_rocm_arch: tuple[str, ...]
    fa_arch: tuple[str, ...]
    aiter_arch: tuple[str, ...]
    mori_arch: tuple[str, ...]
    pins: tuple[ComponentPin, ...]  # built, in data order
    omitted: tuple[OmittedComponent, ...]
    stages: tuple[str, ...]
    max_jobs: int | None  # None: decided on the build host at build time (nproc, memory)
    driver: DriverCheck
    source: str
    confidence: str
    warnings: tuple[str, ...]
    torch: str | None = None  # TheRock: the PyTorch wheel version installed, not built
    torch_extras: tuple[str, ...] = ()  # TheRock: torchvision==..., torchaudio==... wheels
    wheel_index: str | None = None  # TheRock: where ROCm and PyTorch wheels come from
    moving_refs: tuple[str, ...] = ()  # components pinned to a branch (allowed explicitly)
    stack_note: str | None = None  # which of several stacks, said in the header
    registry_mirror: str | None = None  # host[:port][/prefix] the FROM and syntax images come from
    # vLLM's source as released: (URL, sha256) of its sdist, verified by the build (sha256sum).
    # None: a Git clone (a fork or ref asked for, or a release with no recorded sdist).
    vllm_sdist: tuple[str, str] | None = None
    # The base image's manifest digest (``dockerfile --digest``, asked of the registry): FROM
    # then names the tag and the digest, and the build takes exactly that image.
    base_digest: str | None = None
    rocm_stream: str = ""  # legacy, therock-preview, therock
    # amdgpu driver series whose user-space window holds the base ROCm (AMD's table), newest first:
    # what a host needs to run the image, said in its labels.
    runs_on_drivers: tuple[str, ...] = ()
    guard: bool = False  # ENTRYPOINT checks the visible GPUs against the labels before vLLM starts
    # HSA_OVERRIDE_GFX_VERSION the image sets (unofficial): the node's GPUs run the near target's
    # code, ``runs_as`` (node gfx, near target) says which
    override: str | None = None
    runs_as: tuple[tuple[str, str], ...] = ()
    mirrors: Mirrors = field(default_factory=Mirrors)  # where every fetch goes (--mirror-config)
    # the stack record, for the build steps it says upstream takes (final ENV, kpacks, ...)
    upstream: RocmStack | None = None

    @property
    def base_image_ref(self) -> str:
        """What the FROM line pulls: the base image, through the mirror when there is one, by
        digest when pinned."""
        ref = mirror_image(self.base_image, self.registry_mirror)
        return f"{ref}@{self.base_digest}" if self.base_digest else ref

    @property
    def syntax_image(self) -> str:
        """The BuildKit frontend of the ``# syntax=`` line, through the mirror when there is one."""
        return mirror_image(SYNTAX_IMAGE, self.registry_mirror)

    def pin(self, component: str) -> ComponentPin | None:
        return next((p for p in self.pins if p.component == component), None)

    @property
    def labels(self) -> tuple[tuple[str, str], ...]:
        """OCI labels plus one label per pin and the gfx list, so the image says what it is."""
        out = [
            ("org.opencontainers.image.title", "vllm-rocm"),
            (
                "org.opencontainers.image.description",
                (
                    f"vLLM {self.vllm_version} built from source for {','.join(self.gfx)} on "
                    f"{self.base_image}"
                ),
            ),
            ("org.opencontainers.image.version", self.vllm_version),
            ("org.opencontainers.image.source", f"https://github.com/{self.vllm_repo}"),
            ("org.opencontainers.image.revision", self.vllm_ref),
            ("org.opencontainers.image.base.name", self.base_image),
            ("org.opencontainers.image.licenses", "Apache-2.0"),
            (f"{LABEL_PREFIX}.vllm", self.vllm_source),
            (f"{LABEL_PREFIX}.rocm", self.rocm),
            (f"{LABEL_PREFIX}.rocm-stream", self.rocm_stream),
            (f"{LABEL_PREFIX}.amdgpu-driver-series", ",".join(self.runs_on_drivers)),
            (f"{LABEL_PREFIX}.gfx", ";".join(self.gfx)),
            (f"{LABEL_PREFIX}.pytorch-rocm-arch", ";".join(self.pytorch_rocm_arch)),
        ]
        out += [(f"{LABEL_PREFIX}.pin.{p.component}", f"{p.repo}@{p.ref}") for p in self.pins]
        return tuple(out)

    @property
    def vllm_source(self) -> str:
        """What vLLM is built from: ``vllm-0.33.0.tar.gz sha256:...``, else ``repo@ref``."""
        if self.vllm_sdist is not None:
            url, sha = self.vllm_sdist
            return f"{url.rsplit('/', 1)[-1]} sha256:{sha}"
        return f"{self.vllm_repo}@{self.vllm_ref}"

    @property
    def floating(self) -> tuple[str, ...]:
        """What this file does not pin, and why: said in its header."""
        out = []
        tags = [
            p
            for p in self.pins
            if not p.is_commit and p not in self.moving and not tag_commit(p.repo, p.ref)
        ]
        if tags:
            out.append(
                "tags, which upstream could move (the data records no commit for them): "
                + ", ".join(f"{p.component} {p.ref}" for p in tags)
            )
        if self.vllm_sdist is None:
            out.append(
                f"vLLM at {self.vllm_repo}@{self.vllm_ref}, a Git ref (no sdist hash recorded "
                "for it)"
            )
        if self.base_digest is None:
            out.append(
                f"the base image {self.base_image}, a tag (rocm-vllm dockerfile --digest pins it)"
            )
        out.append(
            "apt and pip packages without a version in the data (the base stage's tools, "
            "build requirements, vLLM's requirements other than the components built here, "
            "which /etc/rocm-vllm/constraints.txt holds to the built wheels): the index and "
            "archive serve today's"
        )
        if self.layout != "single-stage":
            out.append(
                "get-pip.py, as its URL serves it today (upstream's base stage fetches it too)"
            )
        return tuple(out)

    @property
    def moving(self) -> tuple[ComponentPin, ...]:
        return tuple(p for p in self.pins if f"{p.component}@{p.ref}" in self.moving_refs)

    def to_json(self) -> dict[str, Any]:
        return {
            "vllm": {
                "version": self.vllm_version,
                "repo": self.vllm_repo,
                "ref": self.vllm_ref,
                "sdist": (
                    {"url": self.vllm_sdist[0], "sha256": self.vllm_sdist[1]}
                    if self.vllm_sdist is not None
                    else None
                ),
            },
            "stack": self.stack,
            "layout": self.layout,
            "upstream_files": self.upstream_files,
            "base_image": self.base_image,
            "base_digest": self.base_digest,
            "base_rocm": self.rocm,
            "python": self.python,
            "driver": {
                "version": self.driver.version,
                "series": self.driver.series,
                "runs_base_rocm": self.driver.runs_base_rocm,
            },
            "gfx": list(self.gfx),
            "archs": {
                "pytorch_rocm_arch": list(self.pytorch_rocm_arch),
                "flash_attention": list(self.fa_arch),
                "aiter": list(self.aiter_arch),
                "mori": list(self.mori_arch),
            },
            "pins": [{"component": p.component, "repo": p.repo, "ref": p.ref} for p in self.pins],
            "omitted": [
                {"component": o.component, "repo": o.repo, "ref": o.ref, "reason": o.reason}
                for o in self.omitted
            ],
            "stages": list(self.stages),
            "max_jobs": self.max_jobs,
            "registry_mirror": self.registry_mirror,
            "from_images": [self.syntax_image, self.base_image_ref],
            "labels": dict(self.labels),
            "provenance": {"source": self.source, "confidence": self.confidence},
            "warnings": list(self.warnings),
            **(
                {
                    "therock": {
                        "torch": self.torch,
                        "torch_extras": list(self.torch_extras),
                        "wheel_index": self.wheel_index,
                    }
                }
                if self.layout == "therock-wheels"
                else {}
            ),
            "moving_refs": list(self.moving_refs),
            "override": (
                {
                    "hsa_override_gfx_version": self.override,
                    "runs_as": {gfx: near for gfx, near in self.runs_as},
                }
                if self.override
                else None
            ),
        }


# --- choosing the release ---------------------------------------------------------------------


MAX_JOBS = 4096  # --max-jobs: parallel compile jobs; no build host has more CPUs


def find_release(matrix: Matrix, version: str) -> VllmRelease:
    """The release record for ``--vllm VERSION``; a release without pins is refused with a hint."""
    wanted = parse_version(version, what="--vllm")
    release = next((r for r in matrix.vllm if r.version == wanted), None)
    if release is None:
        known = [str(r.version) for r in matrix.vllm if r.known]
        raise InputError(
            f"vLLM {wanted} is not in the data",
            hint=(
                f"releases with known ROCm build pins: {_some(known)} (rocm-vllm matrix show vllm)"
            ),
        )
    _require_known(release)
    return release


def choose(
    matrix: Matrix,
    node: Node,
    *,
    vllm: str | None = None,
    stack: str | None = None,
    gfx: tuple[str, ...] | list[str] | None = None,
) -> Evaluation:
    """The source build to write for this node, as the solver evaluates it (one solve).

    ``vllm``: that release, else the one the solver would build from source (newest with known
    pins that builds every target and whose base ROCm the driver runs), else the newest known
    release (its plan then fails with the solver's reason). ``stack``: that stack, else the one
    the solver picks for the release (the default unless the host's driver cannot run it).
    ``gfx``: the targets to build for (a fleet's list), else the node's."""
    from resolver.solve import Request, is_nvidia, solve

    source_only = Request(paths=frozenset({"source"}))
    if is_nvidia(node, source_only) and not gfx:
        # No source build here: the solver refuses with where vLLM's own CUDA recipe is.
        solve(matrix, node, source_only)
    targets = _target_names(matrix, node, gfx)
    here = msgspec.structs.replace(node, gfx_targets=targets)
    release = find_release(matrix, vllm) if vllm else None
    rejected: tuple[Evaluation, ...] = ()
    if stack is None and (release is None or len(release.stacks) > 1):
        spec = SpecifierSet(f"=={release.version}") if release is not None else None
        decision = solve(matrix, here, Request(vllm=spec, paths=frozenset({"source"})))
        plan = decision.plan
        if plan is not None and plan.candidate.release is not None and plan.candidate.stack:
            return plan
        rejected = decision.rejected
    if release is None:
        known = [r for r in matrix.vllm if r.known]
        if not known:
            raise UsageError(
                "no vLLM release in the data has known ROCm build pins",
                hint="rocm-vllm matrix refresh --source sdist",
            )
        release = max(known, key=lambda r: r.version)
    _require_known(release)
    st = release.stack_named(stack) if stack else release.stack
    if st is None:
        raise UsageError(
            f"vLLM {release.version} has no {stack!r} stack",
            hint=f"its stacks: {', '.join(s.variant for s in release.stacks)}",
        )
    # The solve above already evaluated it where it ran: its word stands, and is not asked twice.
    done = next(
        (
            e
            for e in rejected
            if e.candidate.from_source
            and e.candidate.release is release
            and e.candidate.stack is st
        ),
        None,
    )
    return done or _evaluate(matrix, node, release, st, targets)


def _target_names(
    matrix: Matrix, node: Node, gfx: tuple[str, ...] | list[str] | None
) -> tuple[str, ...]:
    """The gfx targets to build for: the node's, or a fleet's list given explicitly; each one a
    target the data knows."""
    raw_targets = tuple(gfx) if gfx else node.gfx_targets
    if not raw_targets:
        raise InputError(
            "the node has no gfx target to build for",
            hint="describe it with --gfx gfx942 (or gfx942,gfx950 for a fleet), --node FILE or "
            "--example NAME",
        )
    targets = tuple(
        sorted({require_safe("gfx", t.strip().lower(), where="--gfx") for t in raw_targets})
    )
    for t in targets:
        if matrix.gfx_target(t) is None:
            raise UnknownGfxError(
                f"{t} is not a gfx target the data knows",
                hint="see rocm-vllm matrix show gfx for the known targets",
            )
    return targets


def _require_known(release: VllmRelease) -> None:
    if (
        not release.known
        or not release.pins
        or release.layout is None
        or release.base_image is None
    ):
        raise UsageError(
            f"vLLM {release.version}: its ROCm build pins are not recorded "
            f"(confidence: {release.provenance.confidence})",
            hint=f"rocm-vllm matrix refresh --source sdist --tag {release.version} reads them "
            "from its sdist; or pick a release with known pins (rocm-vllm matrix show vllm)",
        )


# --- the plan ---------------------------------------------------------------------------------


def plan_dockerfile(
    matrix: Matrix,
    node: Node,
    chosen: Evaluation | VllmRelease,
    *,
    gfx_override: tuple[str, ...] | list[str] | None = None,
    vllm_repo: str | None = None,
    vllm_ref: str | None = None,
    max_jobs: int | None = None,
    stack: RocmStack | None = None,
    allow_preview: bool = False,
    allow_moving_refs: bool = False,
    registry_mirror: str | None = None,
    allow_any_base: bool = False,
    guard: bool = False,
    mirrors: Mirrors | None = None,
) -> DockerfilePlan:
    """Decide the whole file from the solver's evaluation of the source build (``choose``): refuse
    in the solver's words what it refused, narrow every arch list to the targets, leave out
    components whose gates exclude them (with a warning), say what the driver check found.

    ``chosen`` is that evaluation; a release instead (a library caller's shorthand) is evaluated
    here on ``stack`` (default: its default stack). A stack on a ROCm nightly is refused unless
    ``allow_preview``; one whose upstream pins name a moving branch is refused unless
    ``allow_moving_refs`` (then the file says so loudly)."""
    asked = _target_names(matrix, node, gfx_override)
    if isinstance(chosen, VllmRelease):
        chosen = _evaluate(matrix, node, chosen, stack, asked)
    # What is built: the targets, each one the solver runs under an HSA override as its near
    # target (gfx1031 -> gfx1030, which the image then sets HSA_OVERRIDE_GFX_VERSION for).
    targets = tuple(sorted(set(chosen.built_for(asked))))
    runs_as = tuple((g, near) for g, near in chosen.runs_as if g in asked)
    release, st = chosen.candidate.release, chosen.candidate.stack
    assert release is not None
    assert st is not None
    _require_known(release)
    where = f"vllm.toml: release {release.version} stack {st.variant}"
    warnings: list[str] = []
    _check_preview(chosen, release, st, allow_preview, warnings)
    for t in targets:
        _check_target(release, st, t, warnings)

    # Base image: pinned by the release; its ROCm must be one the host driver runs.
    base_image = _safe_image(st.base_image or "", where=f"{where}: base_image")
    if not allow_any_base:
        check_base_allowed(base_image, where=f"{where}: base_image")
    rocm = st.rocm
    assert rocm is not None  # _require_known
    _refuse_as_the_solver_did(chosen)
    driver = _check_driver(matrix, node, rocm, warnings)
    override = chosen.override if runs_as else None
    for gfx, near in runs_as:
        warnings.append(
            f"unofficial: {gfx} is no target of vLLM's build; the image carries {near} code and "
            f"sets HSA_OVERRIDE_GFX_VERSION={override} so the runtime loads it on {gfx}; it can "
            "crash or compute wrong results: test outputs before serving"
        )

    # Components: every pin is checked; gates decide which ones are built.
    pins = _safe_pins(st, where)
    omitted: list[OmittedComponent] = []
    gated: list[str] = []
    fa_arch, aiter_arch, mori_arch = _gate_components(
        matrix, st, targets, _Dropper(pins, omitted, gated)
    )
    # Only what is built can make the build irreproducible: a moving ref of a component left out
    # is neither demanded (--allow-moving-refs) nor flagged.
    records = tuple(r for t in targets if (r := matrix.gfx_target(t)) is not None)
    moving = _check_moving(release, st, pins, records, allow_moving_refs, warnings)
    warnings += gated
    _stack_warnings(release, st, warnings)
    repo, ref = _vllm_source(release, vllm_repo, vllm_ref, warnings)

    # No default baked in from the machine that writes the file: the build host decides.
    jobs = max_jobs
    if jobs is not None and not 1 <= jobs <= MAX_JOBS:
        raise InputError(
            f"--max-jobs {str(jobs)[:24]} must be 1 to {MAX_JOBS}",
            hint="give the number of parallel compile jobs (at most the build host's CPUs)",
        )
    mirrors = mirrors or Mirrors()
    mirror = parse_mirror(registry_mirror) if registry_mirror else mirrors.registry

    spec = layouts().layouts[st.layout or "two-stage-docker"]
    built = {layouts().components[p.component].stage for p in pins} | {"amdsmi"}
    stages = tuple(s for s in spec.stages if s in built)

    return DockerfilePlan(
        vllm_version=str(release.version),
        vllm_repo=repo,
        vllm_ref=ref,
        stack=st.variant,
        layout=st.layout or "",
        upstream_files=spec.upstream_files,
        base_image=base_image,
        rocm=str(rocm),
        python=_safe_python(st.python),
        gfx=targets,
        pytorch_rocm_arch=targets,
        fa_arch=fa_arch if st.pin("flash_attention") else (),
        aiter_arch=aiter_arch if any(p.component == "aiter" for p in pins) else (),
        mori_arch=mori_arch if any(p.component == "mori" for p in pins) else (),
        pins=tuple(pins),
        omitted=tuple(omitted),
        stages=stages,
        max_jobs=jobs,
        driver=driver,
        source=st.provenance.source,
        confidence=st.provenance.confidence,
        warnings=tuple(warnings),
        torch=_safe_python(st.torch) if st.torch else None,
        torch_extras=_torch_extras(st, where),
        wheel_index=(
            mirrors.rocm_wheels
            or require_safe("url", st.wheel_index, where=f"{where}: wheel_index")
        )
        if st.wheel_index
        else None,
        moving_refs=tuple(f"{p.component}@{p.ref}" for p in moving),
        stack_note=_stack_note(release, st),
        registry_mirror=mirror,
        vllm_sdist=_vllm_sdist(release, mirrors.sdist) if not (vllm_repo or vllm_ref) else None,
        rocm_stream=st.stream,
        runs_on_drivers=tuple(d.series for d in matrix.drivers_running(rocm)),
        guard=guard,
        mirrors=mirrors,
        override=override,
        runs_as=runs_as,
        upstream=st,
    )


def _check_preview(
    chosen: Evaluation,
    release: VllmRelease,
    st: RocmStack,
    allow_preview: bool,
    warnings: list[str],
) -> None:
    """A stack the solver found on a ROCm nightly (its ``preview-rocm`` advisory) is refused
    unless asked for, and flagged when it is."""
    preview = any(w.code == "preview-rocm" for w in chosen.warnings)
    if preview and not allow_preview:
        raise UsageError(
            f"vLLM {release.version}'s {st.variant} stack builds on ROCm {st.rocm}, "
            "a nightly/preview, not a release",
            hint="pass --allow-preview to build it anyway (for trying the GPU it exists for), "
            "or pick another stack: "
            f"{', '.join(s.variant for s in release.stacks if not s.preview) or 'none'}",
        )
    if preview:
        warnings.append(
            f"ROCm {st.rocm} is a nightly/preview build: for trying the GPU, not for production"
        )


def _check_target(release: VllmRelease, st: RocmStack, t: str, warnings: list[str]) -> None:
    """Warn when the build accepts a target but upstream does not ship for it (one it cannot
    build is the solver's refusal, ``_refuse_as_the_solver_did``)."""
    if t not in st.arch:
        warnings.append(
            f"{t} is not in vLLM {release.version}'s shipped PYTORCH_ROCM_ARCH "
            f"({';'.join(st.arch)}): its CMake accepts it, but the build is unofficial and "
            "untested upstream"
        )


def _safe_pins(st: RocmStack, where: str) -> list[ComponentPin]:
    """Every component pin of the stack, its repo and ref checked against injection."""
    return [
        ComponentPin(
            component=p.component,
            repo=require_safe("repo", p.repo, where=f"{where}: pins.{p.component}.repo"),
            ref=require_safe("ref", p.ref, where=f"{where}: pins.{p.component}.ref"),
        )
        for p in st.pins
    ]


def _check_moving(
    release: VllmRelease,
    st: RocmStack,
    built: list[ComponentPin],
    targets: tuple[GfxTarget, ...],
    allow_moving_refs: bool,
    warnings: list[str],
) -> tuple[ComponentPin, ...]:
    """Pins on a moving branch among those ``built``: refused unless allowed, then flagged
    loudly. Called after ``_safe_pins``, so only refs that passed the safety check are judged (a
    hostile one is refused as such)."""
    kept = {p.component for p in built}
    # The solver's rule (what the check's unpinned-ref names), within what this file builds.
    moving = [p for p in built_moving(st, targets) if p.component in kept]
    if moving and not allow_moving_refs:
        refs = ", ".join(f"{p.component} {p.repo}@{p.ref}" for p in moving)
        raise UsageError(
            f"vLLM {release.version}'s {st.variant} stack pins {refs} to a moving branch: "
            "the build would not be reproducible",
            hint="pass --allow-moving-refs to build what the branch holds today (the file says "
            "so), or pick another stack",
        )
    if moving:
        warnings.append(
            "NOT REPRODUCIBLE: upstream pins "
            + ", ".join(f"{p.component} to branch {p.ref}" for p in moving)
            + "; the build takes whatever the branch holds today"
        )
    return tuple(moving)


@dataclass
class _Dropper:
    """Leaves a component out of the build: off the pin list, onto the omitted list, with a
    warning saying why."""

    pins: list[ComponentPin]
    omitted: list[OmittedComponent]
    warnings: list[str]

    def leave_out(self, component: str, reason: str) -> None:
        pin = next((p for p in self.pins if p.component == component), None)
        if pin is None:
            return
        self.pins.remove(pin)
        self.omitted.append(
            OmittedComponent(component=component, repo=pin.repo, ref=pin.ref, reason=reason)
        )
        self.warnings.append(f"{component} is left out: {reason}")


def _gate_components(
    matrix: Matrix, st: RocmStack, targets: tuple[str, ...], drop: _Dropper
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The targets flash_attention, AITER and MORI are built for; a component no target passes
    the gate of is left out."""
    # A stack read before its record said (fa_arch, mori_arch): dockerfiles/layouts.toml's lists.
    parts = layouts().components
    fa_known = (
        frozenset(st.fa_arch)
        if st.fa_arch is not None
        else parts["flash_attention"].unrecorded_archs
    )
    fa_arch = tuple(t for t in targets if t in fa_known)
    # matrix/vllm.toml aiter_arch: AITER_ROCM_ARCH, or the literal GPU_ARCHS of v0.8.2-v0.10.x.
    aiter_arch = tuple(
        t for t in targets if t in st.aiter_arch and _aiter_gate(matrix, t) == "full"
    )
    # () : the stack sets no MORI_GPU_ARCHS (from v0.27 MORI picks its targets itself), so
    # MORI is built as upstream builds it, with no list of ours.
    mori_known = (
        frozenset(st.mori_arch) if st.mori_arch is not None else parts["mori"].unrecorded_archs
    )
    mori_arch = tuple(t for t in targets if t in mori_known)
    _gate_flash_attention(st, targets, fa_arch, fa_known, drop)
    if st.pin("aiter") is not None:
        _gate_aiter(matrix, st, targets, aiter_arch, drop)
    if st.pin("mori") is not None and mori_known and not mori_arch:
        drop.leave_out(
            "mori", f"upstream builds it for {';'.join(sorted(mori_known))} only (MORI_GPU_ARCHS)"
        )
    return fa_arch, aiter_arch, mori_arch


def _gate_flash_attention(
    st: RocmStack,
    targets: tuple[str, ...],
    fa_arch: tuple[str, ...],
    fa_known: frozenset[str],
    drop: _Dropper,
) -> None:
    if not fa_arch:
        drop.leave_out(
            "flash_attention",
            f"its CK kernels build only for {', '.join(sorted(fa_known))} and upstream strips "
            f"other targets from its GPU_ARCHS; none of {', '.join(targets)} is one",
        )
    elif st.pin("flash_attention") and len(fa_arch) < len(targets):
        drop.warnings.append(
            f"flash_attention is built for {';'.join(fa_arch)} only (CK kernels); "
            f"{', '.join(t for t in targets if t not in fa_arch)} use vLLM's Triton attention "
            "backends"
        )


def _gate_aiter(
    matrix: Matrix,
    st: RocmStack,
    targets: tuple[str, ...],
    aiter_arch: tuple[str, ...],
    drop: _Dropper,
) -> None:
    for t in targets:
        if t in aiter_arch:
            continue
        gate = _aiter_gate(matrix, t)
        if gate == "full":
            why = f"not in this release's AITER arch list ({';'.join(st.aiter_arch)})"
        elif gate == "triton-only":
            why = "only a Triton subset of AITER runs on it (vLLM gates the CK/ASM paths to CDNA3+)"
        else:
            why = "vLLM's AITER gate excludes it (CDNA3 and newer only)"
        if aiter_arch:
            drop.warnings.append(f"AITER is built for {';'.join(aiter_arch)} only; {t}: {why}")
    if not aiter_arch:
        gates = "; ".join(f"{t}: {_aiter_gate(matrix, t)}" for t in targets)
        drop.leave_out("aiter", f"no target passes its gate ({gates})")


def _stack_warnings(release: VllmRelease, st: RocmStack, warnings: list[str]) -> None:
    """What the file cannot reproduce of upstream's build, and pins not read from the tag."""
    if st.layout == "single-stage":
        warnings.append(
            "v0.6-era build: upstream also pip-installed a PyTorch nightly on top of the "
            "base image "
            "(see the release note in matrix/vllm.toml); this file keeps the base image's PyTorch"
        )
    if st.provenance.confidence != "exact":
        warnings.append(
            f"the pins of vLLM {release.version} have confidence '{st.provenance.confidence}' "
            f"({st.provenance.source})"
        )


def _vllm_source(
    release: VllmRelease, vllm_repo: str | None, vllm_ref: str | None, warnings: list[str]
) -> tuple[str, str]:
    """vLLM itself: the release tag of the official repo, or a fork and ref (flagged)."""
    repo = require_safe("repo", vllm_repo or DEFAULT_VLLM_REPO, where="--vllm-repo")
    ref = require_safe("ref", vllm_ref or f"v{release.version}", where="--vllm-ref")
    if vllm_repo or vllm_ref:
        warnings.append(
            f"vLLM is built from {repo}@{ref}, not the v{release.version} tag; "
            f"the component pins are those of v{release.version}"
        )
    return repo, ref


def _vllm_sdist(release: VllmRelease, base: str | None = None) -> tuple[str, str] | None:
    """The release's sdist (URL, sha256) where the data records its hash: what was released,
    hashed by the index, served by every mirror."""
    if release.sdist_sha256 is None:
        return None
    sha = require_safe(
        "digest", f"sha256:{release.sdist_sha256}", where=f"vllm.toml {release.version}"
    ).removeprefix("sha256:")
    version = require_safe("version", str(release.version), where="vllm.toml")
    return f"{base or SDIST_BASE}/vllm-{version}.tar.gz", sha


def _torch_extras(st: RocmStack, where: str) -> tuple[str, ...]:
    """torchvision/torchaudio pinned to the stack's versions, where it names them."""
    return tuple(
        f"{name}=={require_safe('version', v, where=f'{where}: {name}')}"
        for name, v in (("torchvision", st.torchvision), ("torchaudio", st.torchaudio))
        if v
    )


def _stack_note(release: VllmRelease, st: RocmStack) -> str | None:
    """Which stack this is when the release has more than one, and what the others are."""
    if len(release.stacks) <= 1:
        return None
    return (
        f"{st.variant} (ROCm {st.rocm}{', the default' if st.default else ''}); "
        "the release also has "
        + ", ".join(f"{o.variant} (ROCm {o.rocm})" for o in release.stacks if o is not st)
    )


def _some(versions: list[str]) -> str:
    """A list of release versions, shortened to its first and last ones when long."""
    return (
        ", ".join(versions)
        if len(versions) <= 6
        else f"{versions[0]}, {versions[1]}, ..., {versions[-1]}"
    )


def _aiter_gate(matrix: Matrix, gfx: str) -> str:
    target = matrix.gfx_target(gfx)
    return target.features.aiter if target is not None else "none"


def _evaluate(
    matrix: Matrix,
    node: Node,
    release: VllmRelease,
    stack: RocmStack | None,
    targets: tuple[str, ...],
) -> Evaluation:
    """The solver's evaluation of a source build of ``release`` on ``stack`` for these targets."""
    from resolver.solve import Request, evaluate_pinned

    _require_known(release)
    st = stack or release.stack
    assert st is not None  # _require_known
    path = SourceCandidate(vllm=release.version, rocm=st.rocm, release=release, stack=st)
    return evaluate_pinned(
        matrix, msgspec.structs.replace(node, gfx_targets=targets), Request(), path
    )


def _refuse_as_the_solver_did(chosen: Evaluation) -> None:
    """The file is never written for a build the solver refuses, and the refusal is in its
    words. Its gfx reasons (``gfx-unsupported``, ``gfx-not-shipped``: a target the release's
    CMake does not accept) come first, then its driver reasons (``driver-window``: the base
    ROCm's user space; ``driver-predates-gpu``: a driver older than the GPU)."""
    for codes in (
        ("gfx-unsupported", "gfx-not-shipped"),
        ("driver-window", "driver-predates-gpu"),
    ):
        found = [r for r in chosen.reasons if r.code in codes]
        if found:
            raise UsageError(word(found[0].message), hint=word(found[0].hint))


def _check_driver(matrix: Matrix, node: Node, rocm: Version, warnings: list[str]) -> DriverCheck:
    """What the header says of the driver (the solver has refused a driver that cannot run the
    build): checked, or why not."""
    if not node.driver_version:
        warnings.append(
            "the node gave no amdgpu driver version: cannot check that its driver runs ROCm "
            f"{rocm} user space (give --driver, e.g. 30.30.3)"
        )
        return DriverCheck(version=None, series=None, runs_base_rocm=None)
    drv_series = driver_series(node.driver_version)
    if matrix.driver(drv_series) is None:
        warnings.append(
            f"amdgpu driver series {drv_series} is not in the data: cannot check it runs "
            f"ROCm {rocm}"
        )
        return DriverCheck(version=node.driver_version, series=drv_series, runs_base_rocm=None)
    return DriverCheck(version=node.driver_version, series=drv_series, runs_base_rocm=True)


# Where a generated FROM may point: Docker Hub's ROCm and vLLM namespaces and the distribution
# images TheRock builds start from. The data (and a refresh's raw host) is not trusted to pick
# another registry; --allow-any-base-image lifts this for a user who mirrors base images.
ALLOWED_BASE_REPOS: Final[tuple[str, ...]] = (
    "rocm/*",
    "vllm/*",
    "ubuntu",
    "debian",
    "almalinux",
    "rockylinux",
)


def check_base_allowed(image: str, *, where: str) -> None:
    repo = image.partition(":")[0].removeprefix("docker.io/").removeprefix("library/")
    first = repo.split("/", 1)[0]
    if "/" in repo and ("." in first or ":" in first or first == "localhost"):
        allowed = False  # another registry host
    else:
        allowed = any(
            repo == pattern or (pattern.endswith("/*") and repo.startswith(pattern[:-1]))
            for pattern in ALLOWED_BASE_REPOS
        )
    if not allowed:
        raise UnsafeValueError(
            (
                f"{where}: {image!r} is not an allowed base image (allowed: "
                f"{', '.join(ALLOWED_BASE_REPOS)} on Docker Hub)"
            ),
            hint="fix the data (rocm-vllm matrix refresh reads it from upstream), or pass "
            "--allow-any-base-image if you mean to build from this image",
        )


def _safe_image(image: str, *, where: str) -> str:
    repo, sep, tag = image.partition(":")
    require_safe("image_repo", repo, where=where)
    require_safe("image_tag", tag if sep else "", where=where)
    return image


def _safe_python(python: str | None) -> str | None:
    if python is None:
        return None
    return require_safe("version", python, where="vllm.toml: python")


def pin_base(plan: DockerfilePlan, client: Any) -> tuple[DockerfilePlan, list[str]]:
    """The plan with its base image pinned to the manifest digest the registry (``client``, a
    ``RegistryClient`` for Docker Hub or the mirror) resolves its tag to, and what to warn about
    (a digest answered from the local cache)."""

    repo, _, tag = plan.base_image.partition(":")
    if "/" not in repo:
        repo = f"library/{repo}"  # Docker Hub's official images
    resolved = client.resolve(repo, tag or "latest")
    digest = require_safe("digest", resolved.digest, where=f"{resolved.registry} digest")
    warnings = []
    if resolved.from_cache:
        warnings.append(
            f"the base image's digest {digest} is from the local cache; the registry was not "
            f"reachable ({resolved.unreachable})"
        )
    return replace(plan, base_digest=digest), warnings
