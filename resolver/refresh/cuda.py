"""What each vLLM release's CUDA builds need from an NVIDIA host, read from its sdist.

The same sdists ``resolver.refresh.sdist`` reads for ROCm hold the CUDA build exactly as
released: ``docker/versions.json`` (or the ``ARG`` lines of ``docker/Dockerfile`` before it
existed: the image's default CUDA, Python and ``torch_cuda_arch_list``), the release pipeline
(``.buildkite/release-pipeline.yaml``: the arch lists the release images are built with), the
publish script (``.buildkite/scripts/publish-release-images.sh``: the ``vllm/vllm-openai`` tags
each image family gets, e.g. ``v0.32.0`` and ``v0.32.0-cu129``; before it, 0.9.1 to 0.20.1, the
release annotation ``.buildkite/scripts/annotate-release.sh``: the commands a release manager
runs to copy the pipeline's image to Docker Hub), the CUDA install page (the CUDA
the PyPI wheels are compiled with) and ``pyproject.toml`` (the Pythons the wheels take). One
record per release goes to ``cuda.toml``; a release whose files say nothing about CUDA images is
refused with the reason, never guessed.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from resolver.refresh.sdist import IndexFile, ReleaseFactsSource

IMAGE_REPO: Final = "vllm/vllm-openai"
WANTED: Final = re.compile(
    r"docker/Dockerfile"
    r"|Dockerfile"  # where it sat before 0.8.3 (0.6.2 to 0.8.2 sdists; 0.6.0-0.6.1 hold none)
    r"|docker/versions\.json"
    r"|pyproject\.toml"
    r"|\.buildkite/release-pipeline\.yaml"
    r"|\.buildkite/scripts/publish-release-images\.sh"
    r"|\.buildkite/scripts/annotate-release\.sh"  # 0.9.1-0.20.1: the tags, pushed by hand
    r"|docs/getting_started/installation/gpu\.cuda\.inc\.md"
    r"|vllm/envs\.py"
    r"|CMakeLists\.txt"
    # each quantization method's config: get_name() and get_min_capability() (issue 38 b)
    r"|vllm/model_executor/layers/quantization/(?:compressed_tensors/)?[a-z0-9_]+\.py"
)
_QUANT_DIR: Final = "vllm/model_executor/layers/quantization/"
_ARG = re.compile(
    r"^ARG\s+(CUDA_VERSION|PYTHON_VERSION|torch_cuda_arch_list)=(\S.*)$", re.MULTILINE
)
_PIPELINE_ARCH = re.compile(
    r'^\s*CUDA_ARCH_(X86|AARCH64)(_CU129)?:\s*"([0-9. +A-Za-z]+)"\s*$', re.MULTILINE
)
_TAG = re.compile(
    r"vllm/vllm-openai:v\$\{RELEASE_VERSION\}(-[a-z0-9]+(?:-[a-z0-9]+)*)?(?=[\s\"'$]|\Z)"
)
# The release annotation's push lines (0.9.1-0.20.1): "docker push vllm/vllm-openai:v${...}" to
# 0.10.2, then per-arch parts joined by "docker manifest push"; the repository must match exactly
# (vllm/vllm-openai-rocm and -cpu are other images) and the tag must end the line.
_ANNOTATE: Final = ".buildkite/scripts/annotate-release.sh"
_PUSHED = re.compile(
    r"^docker (?:manifest )?push vllm/vllm-openai:v\$\{RELEASE_VERSION\}"
    r"(-[a-z0-9]+(?:-[a-z0-9]+)*)?[ \t]*$",
    re.MULTILINE,
)
_FAMILY_CALL = re.compile(r'^\s*publish_(?:image|optional)_family\s+"(-?[a-z0-9-]*)"', re.MULTILINE)
# The release image's own CUDA where the pipeline builds it with another than the Dockerfile's
# default (0.7.3: CUDA_VERSION=12.1.0 on a Dockerfile that says 12.4.1).
_RELEASE_STEP = re.compile(r'-\s*label:\s*"Build release image"\s*$', re.MULTILINE)
_STEP = re.compile(r"^\s*-\s*(?:label|block|group|wait)\b", re.MULTILINE)
_BUILD_CUDA = re.compile(r"--build-arg\s+CUDA_VERSION=(\d+\.\d+(?:\.\d+)?)\b")
_WHEEL_CUDA = re.compile(r"vLLM's binaries are compiled with CUDA (\d+\.\d+)")
_WHEEL_MORE = re.compile(r"We also provide vLLM binaries compiled with CUDA ([0-9., and]+)")
# The PyTorch index the install page says to add for the PyPI wheel (its CUDA's torch build).
_TORCH_INDEX = re.compile(r"https://download\.pytorch\.org/whl/cu\d+")
# ... and its pattern for a wheel of another CUDA ("--extra-index-url .../cu${CUDA_VERSION}").
_TORCH_INDEX_OF = re.compile(r"https://download\.pytorch\.org/whl/cu\$\{CUDA_VERSION\}")
# The CUDA of the default build, the one the PyPI upload keeps (files without "+cuXYZ"): the
# code's own, where the install page has gone stale (0.20+: "12.9" there, 13.0 in the wheel).
_MAIN_CUDA = re.compile(r'^\s*VLLM_MAIN_CUDA_VERSION:\s*str\s*=\s*"(\d+\.\d+)"', re.MULTILINE)
# The x86_64 CUDA wheels the release pipeline builds ("Build wheel - x86_64 - CUDA 12.9").
_PIPELINE_WHEEL = re.compile(r'label:\s*"Build wheel - x86_64 - CUDA (\d+\.\d+)"')
# CMakeLists.txt: from this nvcc on, Blackwell and later are built as family targets (10.0f
# runs on 10.3), "to support the whole generation".
_FAMILY_FROM = re.compile(
    r"VERSION_GREATER_EQUAL\s+(\d+\.\d+)\)\s*\n\s*#\s*starting from CUDA [0-9.]+ and "
    r"Blackwell \(10\.0\), we use family-specific targets"
)
_FAMILY_MAJOR: Final = 10  # Blackwell: the first generation with family targets
_REQUIRES_PYTHON = re.compile(r'^requires-python\s*=\s*"([^"]+)"', re.MULTILINE)
_CU_SUFFIX = re.compile(r"-cu(\d{2})(\d)\b")
_SAFE_SUFFIX = re.compile(r"(-[a-z0-9]{1,20}){0,3}")
_CUDA = re.compile(r"\d+\.\d+(\.\d+)?")
_ARCH = re.compile(r"\d+\.\d+(\+PTX)?")


def _family_floor(files: dict[str, str]) -> str | None:
    """The nvcc from which the release builds family targets (CMakeLists.txt), or None."""
    found = _FAMILY_FROM.search(files.get("CMakeLists.txt", ""))
    return found.group(1) if found else None


def _as_built(arch: list[str], cuda: str, floor: str | None) -> list[str]:
    """The arch list as CMake builds it with this CUDA: X.0 of Blackwell and later as the
    family target X.0f where the release does so from ``floor`` on."""
    if floor is None or _version_key(cuda) < _version_key(floor):
        return arch
    return [
        f"{a}f" if a.endswith(".0") and int(a.split(".")[0]) >= _FAMILY_MAJOR else a for a in arch
    ]


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def _defaults(files: dict[str, str]) -> tuple[dict[str, str], str]:
    """The image's default CUDA, Python and arch list, and the file they were read from."""
    raw = files.get("docker/versions.json")
    if raw:
        try:
            variables = json.loads(raw).get("variable", {})
        except (ValueError, AttributeError):
            variables = {}
        out = {
            key: str(v.get("default"))
            for key, v in variables.items()
            if isinstance(v, dict) and isinstance(v.get("default"), str)
        }
        if "CUDA_VERSION" in out:
            return {
                "cuda": out["CUDA_VERSION"],
                "python": out.get("PYTHON_VERSION", ""),
                "arch": out.get("TORCH_CUDA_ARCH_LIST", ""),
            }, "docker/versions.json"
    where = "docker/Dockerfile" if "docker/Dockerfile" in files else "Dockerfile"
    args = {k: v.strip().strip("'\"") for k, v in _ARG.findall(files.get(where, ""))}
    if "CUDA_VERSION" not in args:
        return {}, ""
    return {
        "cuda": args["CUDA_VERSION"],
        "python": args.get("PYTHON_VERSION", ""),
        "arch": args.get("torch_cuda_arch_list", ""),
    }, where


def _release_image_cuda(pipeline: str) -> str | None:
    """The CUDA_VERSION the pipeline's "Build release image" step passes (None where the step
    or the argument is absent, or where it passes several)."""
    step = _RELEASE_STEP.search(pipeline)
    if step is None:
        return None
    end = _STEP.search(pipeline, step.end())
    found = set(_BUILD_CUDA.findall(pipeline[step.end() : end.start() if end else None]))
    return found.pop() if len(found) == 1 else None


def _arch_list(text: str) -> list[str] | None:
    parts = text.replace(";", " ").split()
    return parts if parts and all(_ARCH.fullmatch(p) for p in parts) else None


def _major_minor(text: str) -> str:
    return ".".join(text.split(".")[:2])


def _tags(files: dict[str, str]) -> tuple[list[str], str]:
    """The suffixes of the versioned ``vllm/vllm-openai:v<version>`` tags the release pushes
    ("" for the default family), in the script's order, and the file they were read from: the
    publish script, else the release annotation (the push lines a release manager ran); none
    and "" where neither says."""
    script = files.get(".buildkite/scripts/publish-release-images.sh", "")
    where = ".buildkite/scripts/publish-release-images.sh"
    found = [m.group(1) or "" for m in _TAG.finditer(script)]
    if "${suffix}" in script or "publish_image_family" in script:
        found += [s for s in _FAMILY_CALL.findall(script)]
    if not found:
        found = [m.group(1) or "" for m in _PUSHED.finditer(files.get(_ANNOTATE, ""))]
        where = _ANNOTATE
    # Per-arch tags (-x86_64, -aarch64) are the parts a manifest is made of, not families;
    # "-rocm" (0.14.0's annotation) is the ROCm build under the same repository, not CUDA.
    out = []
    for suffix in found:
        if re.match(r"-(x86_64|aarch64|rocm)\b", suffix) or "_" in suffix:
            continue
        if suffix not in out and _SAFE_SUFFIX.fullmatch(suffix):
            out.append(suffix)
    return out, where if out else ""


def _returned(fn: Any) -> object:
    """The constant a one-statement ``return <literal>`` method gives, else None."""
    import ast

    body = [b for b in fn.body if not isinstance(b, ast.Expr)]  # a docstring is no statement
    if len(body) == 1 and isinstance(body[0], ast.Return):
        value = body[0].value
        if isinstance(value, ast.Constant):
            return value.value
    return None


def quant_floors(files: dict[str, str]) -> list[tuple[str, str]]:
    """Each quantization method's compute-capability floor on CUDA, as its config class states
    it: ``get_name()`` returning a string literal and ``get_min_capability()`` an int literal
    (80 -> "8.0"), parsed, never run. A method said twice with different floors, or a class
    whose methods compute their answer, is left out (not guessed)."""
    import ast

    found: dict[str, set[str]] = {}
    for path, text in sorted(files.items()):
        if not path.startswith(_QUANT_DIR):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            methods = {
                f.name: f
                for f in cls.body
                if isinstance(f, ast.FunctionDef) and f.name in ("get_name", "get_min_capability")
            }
            if len(methods) != 2:
                continue
            name, floor = _returned(methods["get_name"]), _returned(methods["get_min_capability"])
            if (
                isinstance(name, str)
                and re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", name)
                and isinstance(floor, int)
                and not isinstance(floor, bool)
                and 10 <= floor <= 199
            ):
                found.setdefault(name, set()).add(f"{floor // 10}.{floor % 10}")
    return sorted((k, v.pop()) for k, v in found.items() if len(v) == 1)


def cuda_record(sdist: IndexFile, files: dict[str, str]) -> tuple[dict[str, Any] | None, str]:
    """The ``cuda.toml`` record of one release, or None and why it cannot be made."""
    version = str(sdist.version)
    defaults, where = _defaults(files)
    if not defaults or not _CUDA.fullmatch(defaults["cuda"]):
        return None, "neither docker/versions.json nor docker/Dockerfile names a CUDA_VERSION"
    pipeline = files.get(".buildkite/release-pipeline.yaml", "")
    built_with = _release_image_cuda(pipeline)
    if built_with is not None and _major_minor(built_with) != _major_minor(defaults["cuda"]):
        cuda = _major_minor(built_with)
        step = f"Build release image: CUDA_VERSION {built_with}; {where} default {defaults['cuda']}"
        read_from = [f".buildkite/release-pipeline.yaml ({step})"]
    else:
        cuda = _major_minor(defaults["cuda"])
        read_from = [f"{where} (CUDA_VERSION {defaults['cuda']})"]
    arch_by: dict[tuple[str, bool], list[str]] = {}
    for machine, cu129, text in _PIPELINE_ARCH.findall(pipeline):
        parsed = _arch_list(text)
        if parsed is not None:
            arch_by[(machine, bool(cu129))] = parsed
    default_arch = _arch_list(defaults.get("arch", "")) or []
    if arch_by:
        read_from.append(".buildkite/release-pipeline.yaml (CUDA_ARCH_X86, CUDA_ARCH_AARCH64)")
    else:
        read_from.append(f"{where} (torch_cuda_arch_list)")
    suffixes, tags_from = _tags(files)
    by_hand = tags_from == _ANNOTATE
    family = _family_floor(files)
    if family is not None:
        read_from.append(f"CMakeLists.txt (family targets from CUDA {family})")
    images, skipped = _images(
        f"vllm {version} sdist sha256:{sdist.sha256[:12]}",
        version,
        cuda,
        (suffixes, tags_from),
        arch_by,
        (default_arch, where),
        family,
    )
    if images:
        read_from.append(f"{tags_from} (tags)")
    record: dict[str, Any] = {
        "version": version,
        "cuda": cuda,
        "python": defaults.get("python") or None,
        "arch": _as_built(arch_by.get(("X86", False)) or default_arch, cuda, family),
        "image": images,
    }
    _wheel_facts(sdist, files, record, read_from)
    requires = _REQUIRES_PYTHON.search(files.get("pyproject.toml", ""))
    if requires:
        record["requires_python"] = requires.group(1)
        read_from.append("pyproject.toml (requires-python)")
    floors = quant_floors(files)
    if floors:
        record["quant_min_capability"] = dict(floors)
        read_from.append(f"{_QUANT_DIR}*.py (get_min_capability)")
    record = {k: v for k, v in record.items() if v not in (None, [], "")}
    record["image"] = images
    record["sdist_sha256"] = sdist.sha256
    record["source"] = f"vllm {version} sdist sha256:{sdist.sha256[:12]} " + ", ".join(read_from)
    record["confidence"] = "exact" if arch_by and images and not by_hand else "inferred"
    if not images:
        record["note"] = _why_no_tags(files)
    elif skipped:
        record["note"] = (
            f"{', '.join(skipped)}: pushed, but the pipeline states no arch list for its CUDA "
            "(not recorded)"
        )
    return record, ""


def _images(
    sdist: str,
    version: str,
    cuda: str,
    tags: tuple[list[str], str],
    arch_by: dict[tuple[str, bool], list[str]],
    default: tuple[list[str], str],
    family: str | None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The release's ``[[release.image]]`` records, one per tag family, and the tags left out
    (a family of another CUDA whose arch list the pipeline does not state)."""
    suffixes, tags_from = tags
    by_hand = tags_from == _ANNOTATE
    default_arch, where = default
    images: list[dict[str, Any]] = []
    skipped: list[str] = []
    for suffix in suffixes:
        cu = _CU_SUFFIX.search(suffix)
        family_cuda = f"{int(cu.group(1))}.{cu.group(2)}" if cu else cuda
        is_cu129 = bool(cu) and family_cuda == "12.9"
        if family_cuda != cuda and ("X86", is_cu129) not in arch_by:
            # Another CUDA's build with no arch list of its own in the pipeline (0.16-0.19's
            # -cu130): the Dockerfile's list is the default CUDA's, so it is not taken for it.
            skipped.append(f"v{version}{suffix}")
            continue
        arch = arch_by.get(("X86", is_cu129)) or arch_by.get(("X86", False)) or default_arch
        arm = arch_by.get(("AARCH64", is_cu129)) or arch_by.get(("AARCH64", False))
        arch = _as_built(arch, family_cuda, family)
        arm = _as_built(arm, family_cuda, family) if arm else arm
        image: dict[str, Any] = {"tag": f"v{version}{suffix}", "cuda": family_cuda, "arch": arch}
        # Each image names where its tag and arch list were read (the release's own sdist).
        image["source"] = f"{sdist} {tags_from} (tag), " + (
            ".buildkite/release-pipeline.yaml (arch)"
            if arch_by
            else f"{where} (torch_cuda_arch_list)"
        )
        if arm and arm != arch:
            image["arch_aarch64"] = arm
        if "efa" in suffix:
            image["note"] = "AWS EFA networking variant"
        if by_hand:
            # The annotation lists the commands; a person ran them, so the tag is inferred.
            image["confidence"] = "inferred"
            image["note"] = (
                "tagged by hand from the pipeline's vllm-release-repo image, as the release "
                "annotation says (digest unknown)"
            )
        images.append(image)
    return images, skipped


# The release image step of 0.6.5-0.9.0.1 builds the vllm-openai target into ECR only.
_ECR_RELEASE = re.compile(
    r"--tag public\.ecr\.aws/[a-z0-9]+/vllm-release-repo:\$BUILDKITE_COMMIT\b"
)


def _why_no_tags(files: dict[str, str]) -> str:
    """Why a release has no image records: what its files say of its image, and what they lack."""
    pipeline = files.get(".buildkite/release-pipeline.yaml", "")
    if _RELEASE_STEP.search(pipeline) and _ECR_RELEASE.search(pipeline):
        return (
            "the release pipeline builds the vllm-openai image into ECR (vllm-release-repo:"
            "<commit>) only, and the sdist has neither the publish script nor the release "
            "annotation: its Docker Hub tags are not read (the wheel is the path)"
        )
    return (
        "the sdist has neither the publish script nor the release annotation, and its release "
        "pipeline builds no vllm-openai image: the image tags are not read (the wheel is the path)"
    )


def _wheel_facts(
    sdist: IndexFile, files: dict[str, str], record: dict[str, Any], read_from: list[str]
) -> None:
    """The PyPI wheel's CUDA (``VLLM_MAIN_CUDA_VERSION`` in ``vllm/envs.py``: the default build,
    the only one uploaded to PyPI; else the install page), its PyTorch index (the install page's,
    for that CUDA), the other CUDA wheels the release pipeline builds (release assets), and its
    glibc floor (its file name on the package index)."""
    docs = files.get("docs/getting_started/installation/gpu.cuda.inc.md", "")
    wheel = _WHEEL_CUDA.search(docs)
    more = _WHEEL_MORE.search(docs)
    main = _MAIN_CUDA.search(files.get("vllm/envs.py", ""))
    said = wheel.group(1) if wheel else None
    cuda = main.group(1) if main else said
    if cuda is not None:
        record["wheel_cuda"] = cuda
        if main:
            read_from.append("vllm/envs.py (VLLM_MAIN_CUDA_VERSION: the PyPI wheel's CUDA)")
        if wheel:
            read_from.append("docs/getting_started/installation/gpu.cuda.inc.md (wheels)")
        index = sorted(set(_TORCH_INDEX.findall(docs)))
        if cuda == said and len(index) == 1:  # one stated index; none or several: not guessed
            record["wheel_index"] = index[0]
        elif cuda != said and _TORCH_INDEX_OF.search(docs):
            # the page's own rule for a wheel of another CUDA: PyTorch's index of that CUDA
            record["wheel_index"] = "https://download.pytorch.org/whl/cu" + cuda.replace(".", "")
        built = list(
            dict.fromkeys(
                _PIPELINE_WHEEL.findall(files.get(".buildkite/release-pipeline.yaml", ""))
            )
        )
        if built:
            record["wheel_variants"] = [v for v in built if v != cuda]
            read_from.append(".buildkite/release-pipeline.yaml (wheel builds)")
        elif more:
            record["wheel_variants"] = re.findall(r"\d+\.\d+", more.group(1))
    floor = wheel_floor(sdist.wheels)
    if floor is not None:
        glibc, record["wheel_platform"], name = floor
        if glibc is not None:
            record["wheel_glibc"] = glibc
        read_from.append(f"the package index's wheel file names ({name})")


# A PEP 600 tag names the glibc it needs (manylinux_2_35_x86_64: 2.35). The legacy aliases
# (manylinux1, manylinux2014) are not read as a floor: vLLM's wheels were built on newer systems
# than the alias claims (its install page names manylinux_2_28 assets for releases PyPI lists as
# manylinux1), so what such a wheel needs is recorded as unknown.
_PEP600: Final = re.compile(r"manylinux_(\d+)_(\d+)_x86_64")


def wheel_floor(wheels: tuple[tuple[str, str], ...]) -> tuple[str | None, str, str] | None:
    """The glibc the release's x86_64 wheel needs as its PEP 600 platform tag says (None for a
    legacy tag), the tag and the file name: of the wheel with the lowest floor (pip installs that
    one on any host that meets it); None where the index lists no x86_64 wheel."""
    found: list[tuple[tuple[int, ...], str | None, str, str]] = []
    for platform, name in wheels:
        m = _PEP600.fullmatch(platform)
        glibc = f"{m.group(1)}.{m.group(2)}" if m else None
        key = tuple(int(p) for p in glibc.split(".")) if glibc else (999,)
        found.append((key, glibc, platform, name))
    if not found:
        return None
    _, glibc, platform, name = min(found)
    return glibc, platform, name


class CudaSource(ReleaseFactsSource):
    """``matrix refresh --source cuda``: one ``cuda.toml`` record per release the data knows,
    from its sdist (downloaded once per sha256, like the ROCm facts, in a cache of its own)."""

    name = "cuda"
    table = "cuda.toml"
    wanted = WANTED
    # "-2": entries cached before the release annotation was read lack it (issue 38, H13)
    cache_tag = "cuda-2"

    def record(self, sdist: IndexFile, files: dict[str, str]) -> tuple[dict[str, Any] | None, str]:
        return cuda_record(sdist, files)


# --- the CUDA a built wheel needs, read from the wheel itself (issue 38): its METADATA's
# Requires-Dist (vLLM's CUDA 13 wheels require nvidia-cutlass-dsl[cu13]; setup.py strips the
# [cu13] extra on CUDA 12 builds) and the CUDA runtime sonames its libraries link
# (libcudart.so.13, libnvrtc.so.13). Both are majors: the minor is the release's (envs.py).
# "nvidia-cutlass-dsl[cu13]==4.8.0" (an extra) or "nvidia-cuda-runtime-cu12" (a name)
_REQUIRES_CU = re.compile(r"[A-Za-z0-9._-]+(?:\[(?:[^]]*,\s*)?cu(\d{2})\b|-cu(\d{2})\b)")
_CUDA_SONAME = re.compile(r"lib(?:cudart|nvrtc|cublas|cublasLt|cusparse|cufft)\.so\.(\d{2})")


def metadata_cuda_major(metadata: str) -> str | None:
    """The CUDA major a wheel's METADATA requires, from its unconditional ``Requires-Dist``
    lines (one behind ``extra == ...`` is an option, not the default install); None when they
    name none or several."""
    found = set()
    for line in metadata.splitlines():
        key, _, value = line.partition(":")
        requirement, _, marker = value.partition(";")
        if key != "Requires-Dist" or "extra" in marker:
            continue
        m = _REQUIRES_CU.match(requirement.strip())
        if m:
            found.add(m.group(1) or m.group(2))
    return found.pop() if len(found) == 1 else None


def elf_needed(data: bytes, limit: int = 64) -> list[str]:
    """The DT_NEEDED sonames of a little-endian ELF64 shared library (at most ``limit``); [] for
    anything else or a damaged file (bounds are checked, nothing is trusted)."""
    import struct

    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff, _, _, _, _, shentsize, shnum = struct.unpack_from("<QIHHHHH", data, 0x28)[0:7]
    if shentsize != 64 or shnum > 4096 or shoff + shnum * 64 > len(data):
        return []
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * 64) for i in range(shnum)]
    out: list[str] = []
    for sh in sections:
        if sh[1] != 6:  # SHT_DYNAMIC
            continue
        offset, size, link = sh[4], sh[5], sh[6]
        if link >= shnum or offset + size > len(data):
            return []
        strtab = sections[link]
        str_off, str_size = strtab[4], strtab[5]
        if str_off + str_size > len(data):
            return []
        for i in range(0, size - 15, 16):
            tag, value = struct.unpack_from("<qQ", data, offset + i)
            if tag == 0:
                break
            if tag == 1 and value < str_size:  # DT_NEEDED
                end = data.find(b"\0", str_off + value, str_off + str_size)
                name = data[str_off + value : end if end >= 0 else str_off + str_size]
                out.append(name.decode("ascii", "replace"))
                if len(out) >= limit:
                    return out
    return out


def needed_cuda_major(sonames: list[str]) -> str | None:
    """The CUDA major of the runtime libraries a wheel's code links, or None (none, or several)."""
    found = {m.group(1) for s in sonames if (m := _CUDA_SONAME.fullmatch(s))}
    return found.pop() if len(found) == 1 else None
