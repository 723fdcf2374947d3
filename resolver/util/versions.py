"""Version parsing shared by the data loader, the CLI and the probe.

ROCm numbering jumps (7.2.4 -> 7.9..7.13 previews -> 7.14 -> 10.0), so a ROCm version is always
compared as a parsed ``Version`` and paired with its stream from ``matrix/rocm.toml``, never as
text.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from packaging.version import Version

if TYPE_CHECKING:  # parse_spec imports it: a check without --vllm never needs it
    from packaging.specifiers import SpecifierSet

from resolver.util.errors import InputError

MAX_VERSION_TEXT = 64
# Compiled on first use: a plain release (30.30.3) is read without it (``driver_series``).
_DRIVER_RE = r"^\s*([0-9]{1,3})\.([0-9]{1,3})(?:\.([0-9]{1,6}))?(?:[-.+~][0-9A-Za-z.+~-]*)?\s*\Z"
_GFX_RE = re.compile(r"^gfx[0-9a-f]{3,4}\Z")
# Patterns a `check` from flags never meets stay text: re compiles (and caches) them on first use.
_OS_RE = r"^([a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*)-([0-9]+(?:\.[0-9]+){0,2})\Z"
_PY_RE = r"^3\.([0-9]{1,2})(?:\.[0-9]+)?\Z"


def parse_version(text: str, *, what: str) -> Version:
    """Parse a PEP 440 version given by a user; a bad one is an ``InputError``.

    Bounded: a version of more than 64 characters, or with non-ASCII digits, is refused (packaging
    reads "٣" as 3, and a 5,000-digit release segment raises past Python's int-string limit)."""
    try:
        if not isinstance(text, str) or len(text) > MAX_VERSION_TEXT or not text.isascii():
            raise ValueError(text)
        return Version(text.strip().lstrip("v"))
    except (ValueError, AttributeError):
        raise InputError(
            f"{what} {text!r} is not a version",
            hint=f"write {what} as numbers separated by dots, for example 7.2.3",
        ) from None


def parse_spec(text: str) -> SpecifierSet:
    """Parse ``--vllm``: a PEP 440 specifier, or a bare version meaning ``==version``."""
    raw = text.strip()
    if len(raw) > 4 * MAX_VERSION_TEXT or not raw.isascii():
        raise InputError(
            f"--vllm {text[:80]!r} is not a version or PEP 440 specifier",
            hint="use a version (0.24.0) or a specifier such as '>=0.20' or '==0.10.*' (ASCII, "
            "short)",
        )
    if raw.lower() in ("latest", "newest", "stable"):
        raise InputError(
            f"--vllm {text!r} is not a version",
            hint="leave --vllm out to get the newest release that fits",
        )
    if (raw and raw[0].isdigit()) or (raw.startswith("v") and raw[1:2].isdigit()):
        bare = raw.lstrip("v")
        if not bare.endswith(".*"):  # 0.24.* means ==0.24.*
            try:
                Version(bare)
            except ValueError:
                raise InputError(
                    f"--vllm {text!r} is not a version or PEP 440 specifier",
                    hint="use a vLLM version (0.24.0), a wildcard (0.24.*) or a specifier such as "
                    "'>=0.20'",
                ) from None
        raw = f"=={bare}"
    from packaging.specifiers import SpecifierSet

    try:
        spec = SpecifierSet(raw)
        for item in spec:  # parse every version now: packaging defers it to the first comparison
            if len(item.version) > MAX_VERSION_TEXT:
                raise ValueError(item.version)
            if not item.version.endswith(".*"):
                Version(item.version)
        return spec
    except ValueError:
        raise InputError(
            f"--vllm {text!r} is not a version or PEP 440 specifier",
            hint="use a version (0.24.0) or a specifier such as '>=0.20' or '==0.10.*'",
        ) from None


@functools.cache  # a solve asks it of every candidate's ROCm (a few dozen releases)
def series(version: Version) -> str:
    """``7.2.3`` -> ``"7.2"``: the unit the driver/user-space table speaks in."""
    return f"{version.major}.{version.minor}"


@functools.cache  # sorting drivers asks it for the same few series hundreds of times
def series_key(text: str) -> tuple[int, ...]:
    """A MAJOR.MINOR series as numbers, for ordering: "6.4" before "30.10", "7.11" before
    "10.0" (the data's series are checked MAJOR.MINOR at load)."""
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def driver_label(value: str) -> str:
    """How a driver move names its target: a series as ``6.4.x``, a release that a GPU needs
    within its series as ``6.4.1 or later``."""
    return f"{value}.x" if value.count(".") == 1 else f"{value} or later"


def driver_series(text: str) -> str:
    """The amdgpu release series a driver version belongs to: ``30.30.3`` -> ``"30.30"``.

    Accepts the AMD release names (6.1.3, 30.30.3) and the dkms module form with a build
    suffix (``6.10.5-2119913``); anything else is an ``InputError``.
    """
    parts = (text or "").split(".")
    if 2 <= len(parts) <= 3 and all(
        p.isascii() and p.isdigit() and len(p) <= most
        for p, most in zip(parts, (3, 3, 6), strict=False)
    ):
        return f"{int(parts[0])}.{int(parts[1])}"  # the plain form, as _DRIVER_RE reads it
    match = re.match(_DRIVER_RE, text or "")
    if not match:
        raise InputError(
            f"--driver {text!r} is not an amdgpu driver version",
            hint="give the AMD GPU driver release, e.g. 30.30.3 or 6.4.1 "
            "(the amdgpu-install version; /sys/module/amdgpu/version is the kernel module's own "
            "number)",
        )
    return f"{int(match.group(1))}.{int(match.group(2))}"


# How rocminfo and the compilers print a target: ``amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-``.
_TARGET_ID_RE = r"^(?:amdgcn-amd-amdhsa--)?(gfx[0-9a-f]{3,5})((?::[a-z0-9_]+[+-])*)\Z"
# rocm_smi_lib / amd-smi before ROCm 6.4 built the name in decimal and, when the minor digit is 0,
# multiplied the major by another 10: gfx908 -> "gfx9008", gfx90a -> "gfx9010", gfx1101 ->
# "gfx11001"
# (ROCm/amdsmi CHANGELOG, amd_smi_lib for ROCm 6.4.0, resolved issues). No real target has a
# 4-digit name starting with 6-9 or a 5-digit name, so those are read back as major, 0, stepping.
_SMI_MISPRINT_RE = r"^gfx(?:([6-9])|(1[0-2]))0([0-9][0-9])\Z"


def smi_misprint(name: str) -> str | None:
    """The target a misprinted rocm-smi/amd-smi name stands for (``gfx9010`` -> ``gfx90a``), or
    None when ``name`` is not such a misprint."""
    match = re.match(_SMI_MISPRINT_RE, name.strip().lower())
    if not match:
        return None
    major = match.group(1) or match.group(2)
    if match.group(2) and len(name.strip()) != 8:  # gfx1030 etc. are real 2-digit-major names
        return None
    step = int(match.group(3))
    return f"gfx{major}0{step:x}" if step <= 0xF else None


def gfx_base_name(text: str) -> str | None:
    """A target as tools print it -> the bare name: ``gfx942:sramecc+:xnack-``,
    ``amdgcn-amd-amdhsa--gfx90a:xnack-`` and the misprint ``gfx9010`` all give a plain
    ``gfx...`` name; None when ``text`` names no target."""
    plain = text.strip().lower()
    if len(plain) <= 6 and _GFX_RE.match(plain):
        # A bare 3-digit name (gfx942, gfx90a), as flags give it: no target-id suffix to strip,
        # and misprints are longer (gfx9010): neither pattern is compiled for it.
        return plain
    match = re.match(_TARGET_ID_RE, plain)
    if not match:
        return None
    name = match.group(1)
    fixed = smi_misprint(name)
    if fixed:
        return fixed
    return name if _GFX_RE.match(name) else None


def check_gfx_name(text: str) -> str:
    """A gfx name from the user or a file: feature suffixes (``:sramecc+:xnack-``, as rocminfo
    prints the ISA) and the ``amdgcn-amd-amdhsa--`` prefix are dropped, and rocm-smi's misprints
    (``gfx9010``) are read as the target they stand for."""
    name = gfx_base_name(text) or text.strip().lower()
    if not _GFX_RE.match(name):
        raise InputError(
            f"{text!r} is not a gfx target name",
            hint="gfx targets look like gfx942 or gfx1100 (rocminfo | grep gfx)",
        )
    return name


def split_os(text: str) -> tuple[str, str]:
    """``ubuntu-22.04`` -> ``("ubuntu", "22.04")``."""
    match = re.match(_OS_RE, text.strip().lower())
    if not match:
        raise InputError(
            f"--os {text!r} is not an OS id",
            hint="write the os-release ID and VERSION_ID joined by '-', e.g. ubuntu-22.04 or "
            "rhel-9.4",
        )
    return match.group(1), match.group(2)


def python_minor(text: str) -> str:
    match = re.match(_PY_RE, text.strip())
    if not match:
        raise InputError(
            f"--python {text!r} is not a CPython 3 version",
            hint="give the interpreter's version, e.g. 3.12",
        )
    return f"3.{int(match.group(1))}"
