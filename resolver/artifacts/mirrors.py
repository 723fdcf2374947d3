"""Where a generated artifact fetches from, set once for a site (an air-gapped one, a proxy).

``--mirror-config FILE`` (or ``ROCM_VLLM_MIRRORS=FILE``) is a TOML file of base URLs, each
optional, each replacing one upstream in every fetch a generated Dockerfile makes::

    git = "https://git.example.internal/github"     # for https://github.com (every clone)
    index = "https://pypi.example.internal/simple"  # pip's index in the build (PIP_INDEX_URL)
    sdist = "https://pypi.example.internal/packages/source/v/vllm"  # vLLM's sdist
    rocm_wheels = "https://rocm.example.internal/whl/"  # TheRock's ROCm and PyTorch wheels
    get_pip = "https://files.example.internal/get-pip.py"
    registry = "harbor.example.internal/dockerhub"  # Docker Hub (FROM, the # syntax= frontend)
    deadsnakes = "http://apt.example.internal/deadsnakes"  # the deadsnakes PPA (and its KEY.gpg)

    [apt]  # the base image's apt sources: upstream base URL -> the mirror's
    "http://archive.ubuntu.com/ubuntu" = "http://apt.example.internal/ubuntu"
    "http://security.ubuntu.com/ubuntu" = "http://apt.example.internal/ubuntu"
    "https://repo.radeon.com" = "http://apt.example.internal/radeon"

The file's header records which mirrors it used. The commands' own calls have their variables
(``ROCM_VLLM_REGISTRY``, ``ROCM_VLLM_WHEELS`` for AMD's wheel index and every printed pip line,
``ROCM_VLLM_INDEX_URL``, ...); ``docs/airgap.md`` lists every network call in one table.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from resolver.util import redact
from resolver.util.errors import InputError, UsageError
from resolver.util.safety import is_safe, shown

ENV_MIRRORS: Final = "ROCM_VLLM_MIRRORS"
# A mirror inside the build image itself (a site's base image that carries its mirrors): what a
# build with --network=none reaches. Plain path characters only.
_FILE_URL: Final = re.compile(r"file:///[A-Za-z0-9._~%/+-]*\Z")
DEFAULT_GIT: Final = "https://github.com"
DEFAULT_GET_PIP: Final = "https://bootstrap.pypa.io/get-pip.py"
KEYS: Final = ("git", "index", "sdist", "rocm_wheels", "get_pip", "registry", "deadsnakes")


@dataclass(frozen=True, kw_only=True, slots=True)
class Mirrors:
    git: str = DEFAULT_GIT
    index: str | None = None
    sdist: str | None = None
    rocm_wheels: str | None = None
    get_pip: str = DEFAULT_GET_PIP
    registry: str | None = None
    deadsnakes: str | None = None
    # The base image's apt sources, rewritten: (upstream base URL, mirror base URL) pairs.
    apt: tuple[tuple[str, str], ...] = ()
    source: str = ""  # the file they came from ("" for none)

    def used(self) -> tuple[tuple[str, str], ...]:
        """The mirrors set (key, URL), as the artifact's header names them."""
        defaults = Mirrors()
        return tuple(
            (k, str(getattr(self, k)))
            for k in KEYS
            if getattr(self, k) is not None and getattr(self, k) != getattr(defaults, k)
        ) + tuple((f"apt {upstream}", mirror) for upstream, mirror in self.apt)


def load(path: Path | None = None) -> Mirrors:
    """``path`` (``--mirror-config``), else the file ``ROCM_VLLM_MIRRORS`` names, else none."""
    if path is None:
        named = os.environ.get(ENV_MIRRORS)
        if not named:
            return Mirrors()
        path = Path(named)
    hint = (
        "a TOML file of base URLs: git, index, sdist, rocm_wheels, get_pip, registry, "
        "deadsnakes, and an [apt] table of upstream -> mirror"
    )
    try:
        from resolver.util import bounded

        data = bounded.loads_toml(bounded.read_text(path, 64 * 1024))
    except OSError as exc:
        raise InputError(
            f"mirror config {shown(str(path))}: cannot read it "
            f"({exc.strerror or type(exc).__name__})",
            hint=hint,
        ) from None
    except ValueError as exc:  # TOMLDecodeError, UnicodeDecodeError: they quote no value
        raise InputError(
            f"mirror config {shown(str(path))}: {redact.text(str(exc))}", hint=hint
        ) from None
    path_shown = shown(str(path))
    apt = data.pop("apt", {})
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise InputError(
            f"mirror config {path_shown}: unknown keys {shown(', '.join(unknown))}", hint=hint
        )
    values: dict[str, str | None] = {}
    for key, value in data.items():
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"mirror config {path_shown}: {key} is not a URL", hint=hint)
        value = value.strip().rstrip("/") if key != "rocm_wheels" else value.strip()
        if key == "registry":
            values[key] = parse_mirror(value, flag=f"mirror config {path_shown}: registry")
            continue
        _refuse_credentials(value, f"mirror config {path_shown}: {key}")
        if not (is_safe("url", value) or _FILE_URL.match(value)):
            raise InputError(
                f"mirror config {path_shown}: {key} {redact.url(value)} is not an http(s) or "
                "file:/// URL",
                hint="give a plain http://, https:// or file:/// URL (file:///: a mirror the "
                "build image carries), without quotes, spaces or shell syntax",
            )
        values[key] = value
    if not isinstance(apt, dict):
        raise InputError(f"mirror config {path_shown}: [apt] is not a table", hint=hint)
    pairs: list[tuple[str, str]] = []
    for upstream, mirror in apt.items():
        where = f"mirror config {path_shown}: [apt] {redact.url(upstream)}"
        _refuse_credentials(upstream, where)
        if isinstance(mirror, str):
            _refuse_credentials(mirror, where)
        if not (
            isinstance(mirror, str)
            and is_safe("url", upstream.rstrip("/"))
            and (is_safe("url", mirror.rstrip("/")) or _FILE_URL.match(mirror))
        ):
            shown_mirror = redact.url(mirror) if isinstance(mirror, str) else "(not text)"
            raise InputError(
                f"{where} = {shown_mirror} is not an http(s) URL and its mirror", hint=hint
            )
        pairs.append((upstream.rstrip("/"), mirror.rstrip("/")))
    return Mirrors(**cast(dict[str, Any], values), apt=tuple(pairs), source=str(path))


def _refuse_credentials(value: str, where: str) -> None:
    """A mirror URL goes into a generated file (a Dockerfile, its build's layers): one with a
    user, password or token in it, or a control character, is refused, shown with them hidden."""
    if redact.has_control(value):
        raise InputError(
            f"{where}: {redact.url(value)} carries a control character",
            hint="give one URL on one line",
        )
    if redact.has_credentials(value):
        raise InputError(
            f"{where}: {redact.url(value)} carries a user, password, token or query",
            hint="a generated file never carries credentials: give the mirror's URL without them "
            "(pip and git read a login from ~/.netrc, which a build can mount as a secret)",
        )


def parse_mirror(text: str | None, *, flag: str = "--registry-mirror") -> str | None:
    """``--registry-mirror HOST[:PORT][/PREFIX]`` (or a URL): the registry the FROM lines pull
    Docker Hub images through. Empty or Docker Hub itself means none."""
    if not text or not text.strip():
        return None
    from resolver.artifacts.registry import parse_registry

    if redact.has_control(text) or redact.has_credentials(text):
        _refuse_credentials(text, flag)
    try:
        registry = parse_registry(text)
    except (InputError, UsageError):  # a bad URL, or one with shell syntax: say which flag
        raise UsageError(
            f"{flag} {redact.url(text)} is not a registry host",
            hint=(
                "give HOST[:PORT] or HOST/PREFIX of a Docker Hub mirror, e.g. "
                "harbor.example.com/dockerhub"
            ),
        ) from None
    if registry.is_docker_hub:
        return None
    mirror = f"{registry.host}/{registry.prefix}" if registry.prefix else registry.host
    if not is_safe("image_repo", f"{mirror}/x"):
        raise UsageError(
            f"{flag} {redact.url(text)} is not a registry host",
            hint="give HOST[:PORT] or HOST/PREFIX of a Docker Hub mirror in lower case",
        )
    return mirror


def mirror_image(image: str, mirror: str | None) -> str:
    """A Docker Hub image name as the mirror serves it: ``ubuntu:24.04`` ->
    ``MIRROR/library/ubuntu:24.04``, ``rocm/dev-ubuntu-22.04:7.2`` ->
    ``MIRROR/rocm/dev-ubuntu-22.04:7.2``. A name that already names a registry (``ghcr.io/...``)
    is left as it is."""
    if not mirror:
        return image
    repo, sep, tag = image.partition(":")
    first = repo.split("/", 1)[0]
    if "/" in repo and ("." in first or ":" in first or first == "localhost"):
        return image
    if "/" not in repo:
        repo = f"library/{repo}"
    return f"{mirror}/{repo}{sep}{tag}"
