"""How each upstream layout is assembled: ``dockerfiles/layouts.toml`` (data, beside the fragment
files it names), read once."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from resolver.data import resources
from resolver.util.errors import UsageError


@dataclass(frozen=True, slots=True)
class LayoutSpec:
    """One upstream layout as ``dockerfiles/layouts.toml`` describes it."""

    family: str  # the fragment directory of its stages
    base: str  # the base-stage fragment
    stages: tuple[str, ...]  # build order
    override: tuple[tuple[str, str], ...]  # stage -> the fragment this layout uses instead
    upstream_files: str


@dataclass(frozen=True, slots=True)
class ComponentSpec:
    arg: str  # ARG prefix: TRITON_REPO, TRITON_BRANCH (upstream's names)
    stage: str  # the stage that builds it
    checkout: str  # the directory its fragment clones it into
    # the targets it is built for where a stack's record does not say, and who says so
    unrecorded_archs: frozenset[str] = frozenset()
    unrecorded_archs_source: str = ""


@dataclass(frozen=True, slots=True)
class UpstreamStep:
    """A step of upstream's Dockerfiles the generated file leaves out or does differently."""

    how: str  # "left out" or "differs"
    what: str  # may name the stack field it needs as {value}
    reason: str
    names: tuple[str, ...]  # upstream's ARG, ENV and stage names it covers
    layouts: frozenset[str]  # the layouts it is said for
    when: str = ""  # a stack field that must be set (non-empty) for it to be said
    variants: frozenset[str] = frozenset()  # the stack variants it is said for (empty: all)
    # the vLLM releases it is said for: since <= version < until (empty: unbounded), as the
    # step's names occur in each release's upstream files
    since: str = ""
    until: str = ""


@dataclass(frozen=True, slots=True)
class Layouts:
    layouts: dict[str, LayoutSpec]
    components: dict[str, ComponentSpec]
    common: frozenset[str]  # stages whose fragment is in common/
    debs: frozenset[str]  # stages that produce .deb packages
    # repo -> tag -> the commit it pointed to when read (checked after checkout)
    tag_commits: dict[str, dict[str, str]]
    steps: tuple[UpstreamStep, ...]  # upstream's steps not reproduced as upstream does them


@functools.cache
def layouts() -> Layouts:
    """``dockerfiles/layouts.toml``: how each upstream layout is assembled, read once."""
    from resolver.util import bounded

    path = resources.dockerfiles_dir() / "layouts.toml"
    try:
        doc = bounded.load_toml(path, 1024 * 1024)
        specs = {
            name: LayoutSpec(
                family=str(v["family"]),
                base=str(v["base"]),
                stages=tuple(str(s) for s in v["stages"]),
                override=tuple((str(k), str(f)) for k, f in (v.get("override") or {}).items()),
                upstream_files=str(v["upstream_files"]),
            )
            for name, v in doc["layout"].items()
        }
        components = {
            name: ComponentSpec(
                arg=str(v["arg"]),
                stage=str(v["stage"]),
                checkout=str(v["checkout"]),
                unrecorded_archs=frozenset(str(a) for a in v.get("unrecorded_archs", ())),
                unrecorded_archs_source=str(v.get("unrecorded_archs_source", "")),
            )
            for name, v in doc["component"].items()
        }
        stages = doc["stages"]
        tag_commits = {
            str(repo): {str(t): str(c) for t, c in v["tags"].items()}
            for repo, v in doc.get("tag_commit", {}).items()
        }
        steps = tuple(
            UpstreamStep(
                how=str(v["how"]),
                what=str(v["what"]),
                reason=str(v["reason"]),
                names=tuple(str(n) for n in v.get("names", ())),
                layouts=frozenset(str(x) for x in v["layouts"]),
                when=str(v.get("when", "")),
                variants=frozenset(str(x) for x in v.get("variants", ())),
                since=str(v.get("since", "")),
                until=str(v.get("until", "")),
            )
            for v in doc.get("upstream_step", [])
        )
        return Layouts(
            specs,
            components,
            frozenset(stages["common"]),
            frozenset(stages["debs"]),
            tag_commits,
            steps,
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(
            f"Dockerfile layouts {path} cannot be read ({type(exc).__name__}: {exc})",
            hint="reinstall rocm-vllm-resolver",
        ) from None


def arg_prefix(component: str) -> str:
    """The ARG prefix of a component (TRITON for TRITON_REPO, TRITON_BRANCH)."""
    return layouts().components[component].arg


def tag_commit(repo: str, ref: str) -> str | None:
    """The commit a pinned tag pointed to when it was read (``[tag_commit]``), else None."""
    return layouts().tag_commits.get(repo, {}).get(ref)
