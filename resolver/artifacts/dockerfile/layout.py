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
class Layouts:
    layouts: dict[str, LayoutSpec]
    components: dict[str, ComponentSpec]
    common: frozenset[str]  # stages whose fragment is in common/
    debs: frozenset[str]  # stages that produce .deb packages


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
        return Layouts(specs, components, frozenset(stages["common"]), frozenset(stages["debs"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(
            f"Dockerfile layouts {path} cannot be read ({type(exc).__name__}: {exc})",
            hint="reinstall rocm-vllm-resolver",
        ) from None


def arg_prefix(component: str) -> str:
    """The ARG prefix of a component (TRITON for TRITON_REPO, TRITON_BRANCH)."""
    return layouts().components[component].arg
