"""Source-build Dockerfiles for vLLM on ROCm: the solver's choice, a typed plan, then a render
from template files.

``choose`` asks the solver which release and stack to build for the node and returns its
evaluation of that source build; ``plan`` (``plan.py``) takes that evaluation and decides
everything the file says (base image, pins, arch lists, which components to build, warnings),
refusing in the solver's words what the solver refused; ``render`` (``rendering.py``) only fills
the fragment files in ``dockerfiles/`` with the plan's values, in the stages ``layout.py`` reads
from ``dockerfiles/layouts.toml``; ``guard.py`` is ``--guard``'s entrypoint.

The build mirrors vLLM's own ROCm build of the release (../shared/reference/vllm-rocm.md §1-4):
one ``rocm/pytorch`` stage up to v0.6.x; from v0.7.0 the base stages of ``Dockerfile.rocm_base``
(hipBLASLt, RCCL, Triton, amdsmi, PyTorch, FlashAttention, AITER, MORI) followed by the vLLM
wheel build of ``Dockerfile.rocm``, here in one file.
"""

from __future__ import annotations

from resolver.artifacts.dockerfile.guard import GUARD_EXIT, GUARD_PATH
from resolver.artifacts.dockerfile.layout import Layouts, layouts
from resolver.artifacts.dockerfile.plan import (
    ALLOWED_BASE_REPOS,
    DEFAULT_VLLM_REPO,
    LABEL_PREFIX,
    SDIST_BASE,
    DockerfilePlan,
    DriverCheck,
    OmittedComponent,
    check_base_allowed,
    choose,
    find_release,
    pin_base,
    plan_dockerfile,
)
from resolver.artifacts.dockerfile.rendering import (
    build_args,
    image_tag,
    render,
    render_template,
    template_values,
)

__all__ = [
    "ALLOWED_BASE_REPOS",
    "DEFAULT_VLLM_REPO",
    "GUARD_EXIT",
    "GUARD_PATH",
    "LABEL_PREFIX",
    "SDIST_BASE",
    "DockerfilePlan",
    "DriverCheck",
    "Layouts",
    "OmittedComponent",
    "build_args",
    "check_base_allowed",
    "choose",
    "find_release",
    "image_tag",
    "layouts",
    "pin_base",
    "plan_dockerfile",
    "render",
    "render_template",
    "template_values",
]
