"""vLLM releases read from their source distributions on the Python package index.

An sdist (``vllm-X.Y.Z.tar.gz``) holds the ROCm build files exactly as released: every
``docker/Dockerfile.rocm*`` pair (one per ROCm stack), ``CMakeLists.txt`` (HIP_SUPPORTED_ARCHS),
``.buildkite/`` (which stack is the default and which image tags each one publishes) and
``vllm/_version.py`` (the tag commit). The index lists each file with its sha256, so what is read
is what was released, and a mirror (devpi, Artifactory, a proxy) serves the same bytes.

The flow: list releases from the index's JSON simple API (PEP 691), download each release the
data does not know exactly, verify the hash, read only the files above from the archive in memory
(bounded sizes, no extraction, links and odd names refused), and keep what was read in a cache
keyed by the hash, so a release is downloaded once. ``stacks`` turns the files into records.
"""

from __future__ import annotations

import configparser
import contextlib
import io
import json
import os
import re
import tarfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final
from urllib.parse import urljoin

from packaging.version import Version

from resolver.data.model import stack_variant
from resolver.refresh import dockerfile_parse
from resolver.refresh.common import Candidate, Endpoints, Progress, Source, SourceResult
from resolver.refresh.http import HttpClient, IntegrityError
from resolver.refresh.vllm import _ROCM_IN_TAG, build_record
from resolver.util import atomic, bounded
from resolver.util.errors import RegistryError
from resolver.util.safety import is_safe

ENV_INDEX: Final = "ROCM_VLLM_INDEX_URL"
DEFAULT_INDEX: Final = "https://pypi.org/simple"
PROJECT: Final = "vllm"
PEP691: Final = "application/vnd.pypi.simple.v1+json"
IMAGE_REPO: Final = "vllm/vllm-openai-rocm"

MAX_SDIST_BYTES: Final = 512 * 1024**2  # vLLM's are ~50 MB; a listing claiming more is refused
MAX_MEMBER_BYTES: Final = 4 * 1024**2  # the largest file read (CMakeLists.txt) is ~60 KB
MAX_FILES: Final = 200
UNPACK_RATIO: Final = 20  # vLLM's sdists unpack to about 5 times their size
MAX_UNPACKED_BYTES: Final = 2 * 1024**3

# Paths inside the archive (after its top directory) that the reader keeps.
_WANTED: Final = re.compile(
    r"(?:docker/)?Dockerfile\.rocm[A-Za-z0-9_]*"
    r"|CMakeLists\.txt"
    r"|vllm/_version\.py"
    r"|\.buildkite/release-pipeline\.yaml"
    r"|\.buildkite/scripts/(?:publish-release-images|annotate-rocm-release|annotate-release"
    r"|push-release-images-dockerhub)\.sh"
    r"|vllm/(?:scripts|utils)\.py|vllm/utils/(?:__init__|argparse_utils)\.py"
    r"|vllm/entrypoints/(?:cli/serve|[a-z_]+/cli_args)\.py"
)
_SDIST_NAME: Final = re.compile(r"vllm-(?P<version>[0-9][0-9A-Za-z.+!-]*)\.tar\.gz")
# A release's x86_64 wheel as the index lists it (PEP 427 name, optional build tag):
# vllm-0.20.0-cp38-abi3-manylinux_2_35_x86_64.whl
_WHEEL_NAME: Final = re.compile(
    r"vllm-(?P<version>[0-9][0-9A-Za-z.+!]*)(?:-[0-9][0-9A-Za-z]*)?-[a-z0-9]+-[a-z0-9]+-"
    r"(?P<platform>manylinux[0-9a-z_]*x86_64)\.whl"
)
_SHA256: Final = re.compile(r"[0-9a-f]{64}")
_COMMIT_ID: Final = re.compile(r"""commit_id\s*=\s*['"]g?([0-9a-f]{7,40})['"]""")
_PUBLISH_STACK: Final = re.compile(r"^\s*publish_rocm_stack\s+(\S+)\s+([01])\s*$", re.MULTILINE)
_PLAIN_TAG: Final = "vllm/vllm-openai-rocm:v${RELEASE_VERSION}"


@dataclass(frozen=True, slots=True)
class IndexFile:
    """One sdist as the index lists it."""

    version: Version
    filename: str
    url: str
    sha256: str
    size: int | None
    uploaded: str | None  # ISO date of the upload, the release date as the index knows it
    # The platform tags of the release's x86_64 wheels the index lists, with their file names
    # (manylinux_2_35_x86_64 -> vllm-0.20.0-cp38-abi3-manylinux_2_35_x86_64.whl)
    wheels: tuple[tuple[str, str], ...] = ()


def index_url(env: Mapping[str, str] | None = None) -> str:
    """``ROCM_VLLM_INDEX_URL``, else the index pip is configured with, else PyPI's simple API.

    pip's own configuration is read (``PIP_INDEX_URL``, then its config files, in pip's order,
    the later overriding), so a site that mirrors PyPI needs no extra setting."""
    env = os.environ if env is None else env
    for key in (ENV_INDEX, "PIP_INDEX_URL"):
        value = env.get(key, "").strip()
        if value:
            return value.rstrip("/")
    found: str | None = None
    for path in _pip_config_files(env):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue  # a broken pip.conf is pip's problem; fall back to the default index
        for section in ("global", "install", "download"):
            if parser.has_option(section, "index-url"):
                found = parser.get(section, "index-url").strip() or found
    return (found or DEFAULT_INDEX).rstrip("/")


def _pip_config_files(env: Mapping[str, str]) -> list[Path]:
    if env.get("PIP_CONFIG_FILE"):
        return [Path(env["PIP_CONFIG_FILE"])]
    home = Path(env.get("HOME", "~")).expanduser()
    xdg_dirs = env.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")
    files = [Path(d) / "pip" / "pip.conf" for d in xdg_dirs if d] + [Path("/etc/pip.conf")]
    files += [
        home / ".pip" / "pip.conf",
        Path(env.get("XDG_CONFIG_HOME", home / ".config")) / "pip" / "pip.conf",
    ]
    if env.get("VIRTUAL_ENV"):
        files.append(Path(env["VIRTUAL_ENV"]) / "pip.conf")
    return files


def list_sdists(client: HttpClient, base: str, result: SourceResult) -> list[IndexFile]:
    """Every release sdist of vLLM the index lists (PEP 691 JSON), oldest first."""
    page = f"{base}/{PROJECT}/"
    data, _ = client.get_json(page, headers={"Accept": PEP691})
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        raise RegistryError(
            f"{page}: not a PEP 691 project page (no 'files' list)",
            hint=f"point {ENV_INDEX} at a simple index that speaks JSON (PyPI, devpi, Artifactory)",
        )
    out: dict[Version, IndexFile] = {}
    wheels: dict[Version, list[tuple[str, str]]] = {}
    for item in files[:10_000]:
        if not isinstance(item, dict):
            continue
        name, url, hashes = item.get("filename"), item.get("url"), item.get("hashes")
        if not isinstance(name, str) or not isinstance(url, str):
            continue
        w = _WHEEL_NAME.fullmatch(name)
        if w is not None and not item.get("yanked"):
            with contextlib.suppress(ValueError):
                wheels.setdefault(Version(w.group("version")), []).append(
                    (w.group("platform"), name)
                )
            continue
        m = _SDIST_NAME.fullmatch(name)
        if m is None:
            continue  # not vLLM's
        try:
            version = Version(m.group("version"))
        except ValueError:
            result.refuse(f"sdist {name[:80]!r}", "is not a PEP 440 version")
            continue
        if version.is_prerelease or version.is_devrelease or item.get("yanked"):
            result.skipped.append(name)
            continue
        sha = hashes.get("sha256") if isinstance(hashes, dict) else None
        if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
            result.refuse(
                f"sdist {name}", "the index gives no sha256 for it (nothing to verify against)"
            )
            continue
        full = urljoin(page, url)
        if not full.startswith(("https://", "http://")):
            result.refuse(f"sdist {name}", f"its URL {full[:80]!r} is not http(s)")
            continue
        size = item.get("size")
        uploaded = item.get("upload-time")
        out[version] = IndexFile(
            version=version,
            filename=name,
            url=full,
            sha256=sha,
            size=size if isinstance(size, int) and not isinstance(size, bool) else None,
            uploaded=uploaded[:10]
            if isinstance(uploaded, str) and re.match(r"[0-9]{4}-[0-9][0-9]-[0-9][0-9]", uploaded)
            else None,
        )
    return [replace(out[v], wheels=tuple(sorted(set(wheels.get(v, ()))))) for v in sorted(out)]


class ArchiveError(ValueError):
    """The archive cannot be trusted: a link, an odd name, an oversized member, a broken gzip."""


class _Capped(io.RawIOBase):
    """The decompressed stream, refused once it passes ``limit`` bytes: a tar stream decompresses
    every member, the skipped ones too, so a small sdist holding a 4 GiB member (a bomb) would
    otherwise cost minutes of CPU outside every deadline."""

    def __init__(self, inner: io.BufferedIOBase, limit: int) -> None:
        self.inner, self.limit, self.seen = inner, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self.inner.read(min(len(buffer), 1024 * 1024))
        self.seen += len(chunk)
        if self.seen > self.limit:
            raise ArchiveError(
                f"unpacks to more than {self.limit // 1024**2} MiB (a real sdist unpacks to at "
                f"most {UNPACK_RATIO} times its size)"
            )
        buffer[: len(chunk)] = chunk
        return len(chunk)


def unpack_limit(size: int) -> int:
    """How many bytes an sdist of ``size`` bytes may unpack to (vLLM's unpack to ~5 times)."""
    return min(MAX_UNPACKED_BYTES, max(64 * 1024**2, UNPACK_RATIO * size))


def read_members(data: bytes, wanted: re.Pattern[str] = _WANTED) -> dict[str, str]:
    """The ``wanted`` files of an sdist, by path below its top directory; nothing touches the
    disk. Decompression is capped (``unpack_limit``), so the read ends in bounded time and
    memory."""
    import gzip

    files: dict[str, str] = {}
    top: str | None = None
    try:
        stream = _Capped(gzip.GzipFile(fileobj=io.BytesIO(data)), unpack_limit(len(data)))
        with tarfile.open(fileobj=io.BufferedReader(stream), mode="r|") as tar:
            for member in tar:
                name = member.name
                first, _, rest = name.partition("/")
                if name.startswith("/") or "\\" in name or any(p == ".." for p in name.split("/")):
                    raise ArchiveError(f"member {name[:80]!r} has an unsafe path")
                top = top or first
                if first != top or not wanted.fullmatch(rest):
                    continue
                if not member.isfile():
                    raise ArchiveError(
                        f"member {name[:80]!r} is a link or special file, not a file"
                    )
                if member.size > MAX_MEMBER_BYTES:
                    raise ArchiveError(
                        f"member {name[:80]!r} claims {member.size} bytes (limit "
                        f"{MAX_MEMBER_BYTES})"
                    )
                fh = tar.extractfile(member)
                raw = fh.read(MAX_MEMBER_BYTES + 1) if fh is not None else b""
                if len(files) >= MAX_FILES:
                    raise ArchiveError("too many ROCm build files")
                files[rest] = raw.decode("utf-8", errors="replace")
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        if isinstance(exc, ArchiveError):
            raise
        raise ArchiveError(f"not a readable tar.gz ({type(exc).__name__})") from None
    return files


# --- turning files into records ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _StackFiles:
    base: str | None  # the base Dockerfile (None for the single-file layout)
    app: str
    layout: str


def _stack_files(files: Mapping[str, str]) -> list[_StackFiles]:
    bases = sorted(
        p
        for p in files
        if re.fullmatch(r"docker/Dockerfile\.rocm[A-Za-z0-9_]*_base[A-Za-z0-9_]*", p)
    )
    if bases:
        # upstream's rule (.buildkite/scripts/rocm/stack.sh): the app file is the base name
        # without "_base" (Dockerfile.rocm_72_base -> Dockerfile.rocm_72).
        return [_StackFiles(b, b.replace("_base", "", 1), "two-stage-docker") for b in bases]
    if "Dockerfile.rocm_base" in files:
        return [_StackFiles("Dockerfile.rocm_base", "Dockerfile.rocm", "two-stage-root")]
    for single in ("docker/Dockerfile.rocm", "Dockerfile.rocm"):
        if single in files:
            return [_StackFiles(None, single, "single-stage")]
    return []


def _variant(stack: _StackFiles, rocm: Version | None) -> str:
    """rocm{major}{minor}, as stack.sh names a stack; a suffixed file (``_gfx1250``) by its
    suffix."""
    if stack.base:
        suffix = stack.base.rsplit("_base", 1)[1].lstrip("_")
        if suffix and not suffix.isdigit():
            return suffix
    return stack_variant(rocm)


@dataclass(frozen=True, slots=True)
class _Publishing:
    """What the release scripts publish: the default stack and which base files get images."""

    default: str | None  # the default stack's base file
    owners: dict[str, bool]  # base file -> owns the plain v<version> tag
    per_stack: bool  # v0.33+: every published stack also gets v<version>-<variant>

    def tags(self, version: Version, base: str | None, variant: str) -> list[str]:
        if base not in self.owners and not (base is None and self.owners):
            return []
        plain = [f"v{version}"] if self.owners.get(base or "", True) else []
        return plain + ([f"v{version}-{variant}"] if self.per_stack else [])


def _published(files: Mapping[str, str], bases: list[str]) -> _Publishing:
    """The default stack and the image tags of each stack, from the release scripts.

    v0.33 publishes one image family per stack (``publish_rocm_stack FILE DEFAULT``); before, one
    ROCm image tagged ``v<version>`` was built from docker/Dockerfile.rocm_base, if any."""
    scripts = "\n".join(
        files.get(f".buildkite/scripts/{n}.sh", "")
        for n in (
            "publish-release-images",
            "annotate-rocm-release",
            "annotate-release",
            "push-release-images-dockerhub",
        )
    )
    calls = {path: flag == "1" for path, flag in _PUBLISH_STACK.findall(scripts) if path in bases}
    if calls:
        return _Publishing(next((p for p, d in calls.items() if d), None), calls, per_stack=True)
    main = (
        "docker/Dockerfile.rocm_base"
        if "docker/Dockerfile.rocm_base" in bases
        else (bases[0] if bases else None)
    )
    if _PLAIN_TAG in scripts and main is not None:
        return _Publishing(main, {main: True}, per_stack=False)
    return _Publishing(main, {}, per_stack=False)


def read_release(
    sdist: IndexFile, files: Mapping[str, str]
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], str]:
    """(vllm.toml record or None, images.toml records, why None) for one release's files."""
    ver = sdist.version
    tag = f"sha256:{sdist.sha256[:12]}"
    where = f"vllm {ver} sdist {tag}"
    layouts = _stack_files(files)
    if not layouts:
        return None, [], "no ROCm Dockerfile in the sdist (looked in docker/ and the root)"
    bases = [s.base for s in layouts if s.base]
    publishing = _published(files, bases)
    default_base = publishing.default
    cmake = files.get("CMakeLists.txt")
    cmake_arch = dockerfile_parse.cmake_hip_archs(cmake) if cmake else None
    stacks: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for sf in layouts:
        rec, rocm_text, stack = _stack_facts(ver, sf, files)
        rocm = _version_or_none(rocm_text)
        if missing := _missing_fact(rocm, rec):
            if sf.base == default_base or len(layouts) == 1:
                return (
                    None,
                    [],
                    f"{sf.base or sf.app}: no {missing} (file truncated or layout changed?)",
                )
            continue  # a side stack upstream is still shaping; the release stands without it
        assert rocm is not None  # _missing_fact
        variant = _variant(sf, rocm)
        is_default = sf.base == default_base if default_base else sf is layouts[0]
        stack = {
            "variant": variant,
            "dockerfile": sf.base or sf.app,
            "default": is_default,
            **stack,
            "base_image": rec["base_image"],
            "rocm": rocm_text,
        }
        for key in ("python", "arch", "aiter_arch", "fa_arch", "pins"):
            if rec.get(key):
                stack[key] = rec[key]
        if "mori_arch" in rec:
            stack["mori_arch"] = rec["mori_arch"]  # [] says the stack sets none
        stack.update(_build_steps(sf, files))
        tags = publishing.tags(ver, sf.base, variant)
        if tags:
            stack["images"] = tags
        stack["source"] = f"{where} " + ", ".join(p for p in (sf.base, sf.app) if p and p in files)
        stacks.append(stack)
        for t in tags:
            images.append(_image_record(ver, t, stack, where, files))
    if not any(s["default"] for s in stacks):
        stacks[0]["default"] = True
    stacks.sort(key=lambda s: not s["default"])
    return _release_record(sdist, files, where, cmake_arch, stacks), images, ""


def _stack_facts(
    ver: Version, sf: _StackFiles, files: Mapping[str, str]
) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """One stack's Dockerfiles -> (the record build_record makes of them, the stack's ROCm as
    written, the layout-specific part of its stack record)."""
    texts = [files[p] for p in (sf.base, sf.app) if p and p in files]
    facts = [dockerfile_parse.parse(t) for t in texts]
    rec = build_record(ver, "", sf.layout, facts, None)
    args: dict[str, str] = {}
    for f in facts:
        for k, v in f.args.items():
            args.setdefault(k, v)
    sdk = args.get("ROCM_SDK_VERSION", "").strip()
    if sdk:
        # TheRock: ROCm and PyTorch come as wheels; the SDK version is the stack's ROCm.
        return rec, sdk, _therock_stack(args)
    rocm_text = str(rec.get("rocm") or "")
    if not rocm_text and rec.get("base_image"):
        m = _ROCM_IN_TAG.search(str(rec["base_image"]).partition(":")[2])
        rocm_text = m.group(1) if m else ""
    return rec, rocm_text, {"layout": sf.layout}


def _therock_stack(args: Mapping[str, str]) -> dict[str, Any]:
    """A TheRock stack's PyTorch versions and wheel index, from its Dockerfile ARGs."""
    stack: dict[str, Any] = {"layout": "therock-wheels"}
    for arg, key in (
        ("TORCH_VERSION", "torch"),
        ("TORCHVISION_VERSION", "torchvision"),
        ("TORCHAUDIO_VERSION", "torchaudio"),
    ):
        if args.get(arg):
            stack[key] = args[arg]
    index = args.get("ROCM_RELEASE_WHEELS_MULTIARCH_URL", "").strip()
    if index and is_safe("url", index):
        stack["wheel_index"] = index
    return stack


# ENV of upstream's base stage that a source build keeps; the rest of that stage's ENV is paths
# and arch lists the generator sets for its own layout and targets.
_BASE_ENV_KEPT: Final = ("HSA_NO_SCRATCH_RECLAIM",)
_DEVICE_EXTRA: Final = re.compile(r"\b([a-z][a-z0-9_-]*)\[device-\$\{arch\}\]")
_KPACK: Final = re.compile(r"\$\{?SITE_PACKAGES\}?/([A-Za-z0-9_./:+-]+\.kpack)")


def _build_steps(sf: _StackFiles, files: Mapping[str, str]) -> dict[str, Any]:
    """What else a stack's Dockerfiles do besides their pins (issue 39): the final image's ENV,
    the base's kept ENV, AITER's system-Triton switch, the triton_kernels, ROCr/CLR and
    rocprofiler-sdk commits, and TheRock's nightly index, device extras, kpack removals and
    rocm_sdk patch. Only what the files say; nothing is filled in."""
    base = dockerfile_parse.parse(files[sf.base]) if sf.base and sf.base in files else None
    app = dockerfile_parse.parse(files[sf.app]) if sf.app in files else None
    out: dict[str, Any] = {}
    final: dict[str, str] = {}
    if base is not None:
        final.update(base.stage_env.get("final", {}))
        kept = {k: v for k, v in base.stage_env.get("base", {}).items() if k in _BASE_ENV_KEPT}
        if kept:
            out["base_env"] = kept
    if app is not None:
        name = "final_common" if "final_common" in app.stages else "final"
        final.update(app.stage_env.get(name, {}))
    final = {
        k: v for k, v in final.items() if v and is_safe("env_name", k) and is_safe("env_value", v)
    }
    if final:
        out["final_env"] = final
    runs = [run for f in (base, app) if f is not None for _, run in f.runs]
    if any("AITER_USE_SYSTEM_TRITON=1" in r for r in runs if "setup.py" in r):
        out["aiter_system_triton"] = True
    args: dict[str, str] = {}
    for f in (base, app):
        for k, v in (f.args if f else {}).items():
            args.setdefault(k, v)
    for arg, key, kind in (
        ("ROCM_TRITON_KERNELS_COMMIT", "triton_kernels_commit", "ref"),
        ("ROCM_RUNTIME_COMMIT", "rocm_runtime_commit", "ref"),
        ("ROCPROFILER_SDK_COMMIT", "rocprofiler_sdk_commit", "ref"),
        ("ROCM_NIGHTLY_WHEELS_MULTIARCH_URL", "nightly_index", "url"),
    ):
        value = args.get(arg, "").strip()
        if value and is_safe(kind, value):
            out[key] = value
    base_runs = [run for _, run in base.runs] if base is not None else []
    extras = list(dict.fromkeys(m for r in base_runs for m in _DEVICE_EXTRA.findall(r)))
    if extras and all(is_safe("ref", e) for e in extras):
        out["device_packages"] = extras
    kpacks = [
        m
        for r in base_runs
        if r.lstrip().startswith("rm ")
        for m in _KPACK.findall(r)
        if ".." not in m and is_safe("env_value", m)
    ]
    if kpacks:
        out["drop_kpacks"] = kpacks
    if any("rtld_global: bool = False" in r for r in base_runs):
        out["rocm_sdk_rtld_local"] = True
    return out


def _version_or_none(text: str) -> Version | None:
    try:
        return Version(text) if text else None
    except ValueError:
        return None


def _missing_fact(rocm: Version | None, rec: Mapping[str, Any]) -> str | None:
    """The first fact a stack cannot do without that its Dockerfiles did not give, if any."""
    if rocm is None:
        return "ROCm version"
    if not rec.get("arch"):
        return "arch list"
    if not rec.get("base_image"):
        return "base image"
    return None


def _release_record(
    sdist: IndexFile,
    files: Mapping[str, str],
    where: str,
    cmake_arch: list[str] | None,
    stacks: list[dict[str, Any]],
) -> dict[str, Any]:
    """The vllm.toml record around the stacks: date, tag commit, sdist hash, CMake arch list and
    the files read."""
    record: dict[str, Any] = {"version": str(sdist.version)}
    if sdist.uploaded:
        record["date"] = sdist.uploaded
    commit = _COMMIT_ID.search(files.get("vllm/_version.py", ""))
    if commit:
        record["tag_commit"] = commit.group(1)[:10]
    record["sdist_sha256"] = sdist.sha256
    if cmake_arch:
        record["cmake_arch"] = cmake_arch
    read = [
        p
        for p in ("CMakeLists.txt", "vllm/_version.py", ".buildkite/release-pipeline.yaml")
        if p in files
    ]
    record["source"] = f"{where} " + ", ".join(read)
    record.update(serve_cli(files, where))
    record["stack"] = stacks
    return record


def _image_record(
    ver: Version, tag: str, stack: Mapping[str, Any], where: str, files: Mapping[str, str]
) -> dict[str, Any]:
    script = next(
        (
            f".buildkite/scripts/{n}.sh"
            for n in ("publish-release-images", "annotate-rocm-release")
            if "vllm/vllm-openai-rocm:" in files.get(f".buildkite/scripts/{n}.sh", "")
        ),
        ".buildkite/scripts",
    )
    rec: dict[str, Any] = {
        "repo": IMAGE_REPO,
        "tag": tag,
        "rocm": stack["rocm"],
        "vllm": str(ver),
    }
    rocm = Version(str(stack["rocm"]))
    if rocm.is_prerelease:
        rec["stream"] = "therock-preview"
    elif stack.get("layout") == "therock-wheels":
        rec["stream"] = "therock"
    if stack.get("python"):
        rec["python"] = stack["python"]
    if stack.get("torch"):
        rec["torch"] = stack["torch"]
    rec["arch"] = list(stack.get("arch", []))
    if rec["arch"]:
        rec["arch_from"] = "recipe"  # the release's own Dockerfile, read at its tag
    rec["entrypoint"] = "vllm-serve"
    rec["stack"] = stack["variant"]
    rec["source"] = f"{where} {script} (tag), {stack['dockerfile']} (ROCm, arch)"
    rec["confidence"] = "inferred"
    rec["note"] = (
        "Tag published by the release's own pipeline script; not confirmed at the registry. "
        "Digest unknown until pinned (rocm-vllm image --digest)."
    )
    return rec


# How `vllm serve` takes the model, by release: where the positional `model_tag` is declared
# (vllm/scripts.py to v0.7.2, entrypoints/cli/serve.py to v0.9.2, then the make_arg_parser that
# cli/serve.py imports: entrypoints/openai/, launchers/ (v0.29) or common/ (v0.33) cli_args.py),
# and where `--model` given to `vllm serve` is caught (scripts.py or cli/serve.py, then
# FlexibleArgumentParser.parse_args in vllm/utils[.py|/__init__.py|/argparse_utils.py]).
_SERVE_PARSERS: Final = ("vllm/entrypoints/cli/serve.py", "vllm/scripts.py")
_ARG_PARSER_IMPORT: Final = re.compile(r"from vllm\.entrypoints\.([a-z_]+)\.cli_args import")
_MODEL_CHECKS: Final = (
    "vllm/scripts.py",
    "vllm/entrypoints/cli/serve.py",
    "vllm/utils/argparse_utils.py",
    "vllm/utils/__init__.py",
    "vllm/utils.py",
)
_MODEL_TAG: Final = re.compile(r"""add_argument\(\s*["']model_tag["']""")
_OPTIONAL: Final = re.compile(r"""nargs\s*=\s*["']\?["']""")
# vLLM #7347's message; what precedes it says whether it is raised or logged (#25967)
_MODEL_MESSAGE: Final = "you should provide the model as a"
_RAISED_OR_LOGGED: Final = re.compile(r"raise ValueError\(|logger\.warning\(")


def serve_cli(files: Mapping[str, str], where: str) -> dict[str, str]:
    """How the release's ``vllm serve`` takes the model: ``serve_model_tag`` (the positional
    model, "required" or "optional"), ``serve_model_option`` (``--model`` "refused" at argument
    parsing or "deprecated", a warning) and ``serve_source``; a fact not found is left out."""
    out: dict[str, str] = {}
    read: list[str] = []
    imported = _ARG_PARSER_IMPORT.search(files.get(_SERVE_PARSERS[0], ""))
    parsers = [_SERVE_PARSERS[0]]
    if imported is not None:
        parsers.append(f"vllm/entrypoints/{imported.group(1)}/cli_args.py")
    for path in [*parsers, *_SERVE_PARSERS[1:]]:
        text = files.get(path, "")
        m = _MODEL_TAG.search(text)
        if m is not None:
            # the call's own keywords: up to the next add_argument (help text may hold parens)
            call = text[m.end() : m.end() + 400].split("add_argument(", 1)[0]
            out["serve_model_tag"] = "optional" if _OPTIONAL.search(call) else "required"
            read.append(f"{path} (model_tag)")
            break
    for path in _MODEL_CHECKS:
        text = files.get(path, "")
        at = text.find(_MODEL_MESSAGE)
        if at < 0 or "--model" not in text[at : at + 300]:
            continue
        # the nearest raise or warning before the message (a few lines up)
        calls = list(_RAISED_OR_LOGGED.finditer(text, max(0, at - 400), at))
        if calls:
            raised = calls[-1].group(0).startswith("raise")
            out["serve_model_option"] = "refused" if raised else "deprecated"
            read.append(f"{path} (--model)")
        break
    if out:
        out["serve_source"] = f"{where} " + ", ".join(read)
    return out


def _loader_problem(record: dict[str, Any]) -> str | None:
    """What the data loader would say against this record (unsafe refs, bad versions), if
    anything."""
    from resolver.data import build
    from resolver.util.errors import MatrixError

    try:
        build.build_record("vllm.toml", record, str(record.get("version")))
    except MatrixError as exc:
        return exc.message
    return None


# --- the source -------------------------------------------------------------------------------


class SdistSource(Source):
    name = "sdist"
    wanted: re.Pattern[str] = _WANTED  # the files of the archive this source reads
    cache_tag = ""  # a source reading other files keeps them in its own cache entries
    verify = False  # re-read the releases the data already holds exactly (refresh --verify)

    def __init__(
        self,
        client: HttpClient,
        endpoints: Endpoints,
        current: dict[str, list[dict[str, Any]]],
        *,
        cache: Path | None = None,
        versions: list[str] | None = None,
        progress: Progress | None = None,
    ) -> None:
        super().__init__(client, endpoints, current, progress=progress)
        self.cache = cache
        self.forced = {v.lstrip("v") for v in versions or []}
        # pip's index may carry user:token@ (a private mirror): sent as auth, never shown.
        self.base = endpoints.index or client.adopt(index_url())

    def _wanted(self, listed: list[IndexFile]) -> list[IndexFile]:
        known = self.known_releases()
        oldest = min(known) if known else None
        out = []
        for f in listed:
            if str(f.version) in self.forced or (self.verify and f.version in known):
                out.append(f)
                continue
            if oldest is not None and f.version < oldest:
                continue  # the data starts at its oldest release on purpose
            have = known.get(f.version)
            if have is not None and have.get("confidence", "exact") == "exact":
                continue  # read exactly already (at the tag, or from this very sdist)
            out.append(f)
        return out

    def files_of(self, sdist: IndexFile, result: SourceResult) -> dict[str, str] | None:
        cached = self._cache_read(sdist.sha256)
        if cached is not None:
            return cached
        if sdist.size is not None and sdist.size > MAX_SDIST_BYTES:
            result.refuse(
                f"vllm {sdist.version}",
                f"the index lists {sdist.size} bytes (limit {MAX_SDIST_BYTES})",
            )
            return None

        def bytes_progress(done: int, total: int) -> None:
            if self.progress:
                self.progress(f"vllm {sdist.version} sdist", done, total or sdist.size or 0)

        try:
            data = self.client.download(
                sdist.url, sha256=sdist.sha256, max_bytes=MAX_SDIST_BYTES, progress=bytes_progress
            )
        except IntegrityError as exc:
            result.refuse(f"vllm {sdist.version} sdist", exc.message)
            return None
        try:
            files = read_members(data, self.wanted)
        except ArchiveError as exc:
            result.refuse(f"vllm {sdist.version} sdist", str(exc))
            return None
        self._cache_write(sdist.sha256, files)
        return files

    def _cache_path(self, sha: str) -> Path | None:
        name = f"{sha}-{self.cache_tag}.json" if self.cache_tag else f"{sha}.json"
        return self.cache / name if self.cache is not None else None

    def _cache_read(self, sha: str) -> dict[str, str] | None:
        path = self._cache_path(sha)
        if path is None:
            return None
        try:
            doc = bounded.loads_json(bounded.read_bytes(path, MAX_FILES * MAX_MEMBER_BYTES))
        except (OSError, ValueError):
            return None
        # An entry written for another set of files (an older reader) is a miss: it would lack
        # files this reader reads, and the facts from them would silently go missing.
        files = (
            doc.get("files")
            if isinstance(doc, dict)
            and doc.get("sha256") == sha
            and doc.get("wanted") == self.wanted.pattern
            else None
        )
        if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in files.items()
        ):
            return None  # damaged: read the sdist again
        return files

    def _cache_write(self, sha: str, files: dict[str, str]) -> None:
        path = self._cache_path(sha)
        if path is None:
            return
        # A read-only cache costs a download next time, nothing else.
        with contextlib.suppress(OSError):
            doc = {"sha256": sha, "wanted": self.wanted.pattern, "files": files}
            atomic.write_atomic(path, json.dumps(doc).encode())

    def releases(self, result: SourceResult) -> Iterator[tuple[IndexFile, dict[str, str]]]:
        """Each wanted release's sdist with the files this source reads from it (an sdist that
        could not be read is refused in ``result`` and skipped)."""
        wanted = self._wanted(list_sdists(self.client, self.base, result))
        for i, sdist in enumerate(wanted):
            if self.progress:
                self.progress(f"vllm {sdist.version}", i, len(wanted))
            files = self.files_of(sdist, result)
            if files is not None:
                yield sdist, files

    def read(self) -> SourceResult:
        result = SourceResult(self.name)
        for sdist, files in self.releases(result):
            record, images, why = read_release(sdist, files)
            if record is None:
                result.refuse(f"vllm {sdist.version} sdist", why)
                continue
            problem = _loader_problem(record)
            if problem:  # refused whole: its image records must not slip in without it
                result.refuse(f"vllm.toml {sdist.version}", problem)
                continue
            result.candidates.append(Candidate("vllm.toml", str(sdist.version), record))
            for img in images:
                result.candidates.append(
                    Candidate("images.toml", f"{img['repo']}:{img['tag']}", img)
                )
        return result


class ReleaseFactsSource(SdistSource):
    """A source that reads one record per release the data knows from other files of the same
    sdists (``cuda.toml``, ``capabilities.toml``): ``table`` is its data file, ``record`` turns
    one release's files into its record (or None and why). A release is read again only when its
    sdist hash differs from the one its record names (or when asked for with ``--tag``)."""

    table = ""

    def record(self, sdist: IndexFile, files: dict[str, str]) -> tuple[dict[str, Any] | None, str]:
        raise NotImplementedError

    def _wanted(self, listed: list[IndexFile]) -> list[IndexFile]:
        releases = self.known_releases()
        have: dict[Version, str] = {}
        for rec in self.current.get(self.table, []):
            with contextlib.suppress(ValueError):
                have[Version(str(rec.get("version")))] = str(rec.get("sdist_sha256"))
        return [
            f
            for f in listed
            if str(f.version) in self.forced
            or (f.version in releases and (self.verify or have.get(f.version) != f.sha256))
        ]

    def read(self) -> SourceResult:
        result = SourceResult(self.name)
        for sdist, files in self.releases(result):
            record, why = self.record(sdist, files)
            if record is None:
                result.refuse(f"vllm {sdist.version} sdist", why)
                continue
            result.candidates.append(Candidate(self.table, str(sdist.version), record))
        return result
