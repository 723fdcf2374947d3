"""Which AMD GPU Driver release is installed on this machine, read where it is.

Sources, in the order they are asked (the first that gives a release answers):

- the ``amdgpu-dkms`` package (``dpkg-query`` or ``rpm -q``): its version carries the kernel
  module version and, after it, the release the package was built for, e.g.
  ``1:6.14.14.30100100-2212064.24.04`` -> module 6.14.14, release 30.10.1, or
  ``1:5.18.13.50403-1538762.22.04`` -> module 5.18.13, release 5.4.3 (``amdgpu-install 5.4.50403``);
- ``/sys/module/amdgpu/version``, ``amd-smi version`` (``amdgpu version:``) and ``modinfo amdgpu``
  (``version:``): the loaded module's own version (6.14.14). That is a release only where AMD's
  data pairs the two (``matrix/drivers.toml`` ``module_versions``); otherwise the module version
  is kept and the release stays unknown, and the probe says so.

Every tool runs with a timeout; a missing or hung tool says nothing. Pure parsing lives in
``parse_package_version``, ``parse_amd_smi_version`` and ``parse_modinfo`` for tests.

``release_of_module`` is the one reading of a module version as a release, for every input path:
the live probe, saved tool outputs (rocminfo's "ROCk module version") and Kubernetes nodes
(``amd.com/gpu.driver-version``, the labeller's copy of the loaded module's version).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec.structs import replace

from resolver.data import words
from resolver.data.node import Node, Problem
from resolver.probe import tools
from resolver.probe.sysfs import read_text

if TYPE_CHECKING:
    from resolver.data.model import Matrix

TIMEOUT = 10.0

# "1:6.14.14.30100100-2212064.24.04" (deb) or "6.14.14.30100100" (rpm): module, release code.
_PACKAGE = re.compile(r"^(?:\d+:)?(?P<module>\d+\.\d+\.\d+)\.(?P<code>\d{5}|\d{8})(?:[-+~].*)?$")
_MODULE = re.compile(r"^\d+\.\d+(?:\.\d+)*$")


@dataclass(slots=True)
class DriverReading:
    """What the sources said. ``source`` names the one that gave ``release`` (or, without a
    release, the module version); ``tried`` lists every source asked, in order."""

    release: str | None = None
    module_version: str | None = None
    source: str | None = None
    package_version: str | None = None
    tried: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "release": self.release,
            "module_version": self.module_version,
            "source": self.source,
            "package_version": self.package_version,
            "tried": list(self.tried),
        }


def release_from_code(code: str) -> str | None:
    """The release a package version's code names: 5 digits (ROCm-numbered drivers up to 6.4,
    ``60400`` -> 6.4.0) or 8 digits (AMD GPU Driver 30.x and later, ``30100100`` -> 30.10.1)."""
    if len(code) == 5:
        return f"{int(code[0])}.{int(code[1:3])}.{int(code[3:5])}"
    if len(code) == 8:
        return f"{int(code[0:2])}.{int(code[2:4])}.{int(code[4:6])}"
    return None


def parse_package_version(text: str) -> tuple[str | None, str | None]:
    """(module version, release) from an amdgpu-dkms package version; Nones when it is not one."""
    match = _PACKAGE.match(text.strip())
    if match is None:
        return None, None
    return match.group("module"), release_from_code(match.group("code"))


def parse_amd_smi_version(text: str) -> str | None:
    """``amd-smi version``: "... | amdgpu version: 6.14.14 | ..." (older: "Driver version")."""
    match = re.search(r"(?:amdgpu|driver) version:\s*([0-9][0-9.]*)", text, re.IGNORECASE)
    return match.group(1).rstrip(".") if match else None


def parse_modinfo(text: str) -> str | None:
    """``modinfo amdgpu``: the ``version:`` line a DKMS build has (the in-tree module has none)."""
    match = re.search(r"^version:\s*(\S+)\s*$", text, re.MULTILINE)
    return match.group(1) if match and _MODULE.match(match.group(1)) else None


def read(
    root: Path,
    env: Mapping[str, str],
    *,
    run_tools: bool = True,
    module_releases: Callable[[str], str | None] | None = None,
) -> DriverReading:
    """Ask each source in turn. ``module_releases`` maps a module version to the release AMD's
    data pairs it with (``None``: unknown)."""
    reading = DriverReading()
    lookup = module_releases or (lambda _v: None)
    if run_tools:
        for label, tool, args in (
            (
                "amdgpu-dkms package (dpkg-query)",
                "dpkg-query",
                ["-W", "-f=${Version}", "amdgpu-dkms"],
            ),
            ("amdgpu-dkms package (rpm)", "rpm", ["-q", "--qf", "%{VERSION}", "amdgpu-dkms"]),
        ):
            out = tools.run(tool, args, env, timeout=TIMEOUT)
            if out is None:
                continue
            reading.tried.append(label)
            module, release = parse_package_version(out)
            if module is None:
                continue
            reading.package_version = out.strip()
            reading.module_version = reading.module_version or module
            if release is not None:
                reading.release, reading.source = release, label
                return reading
    candidates: list[tuple[str, Callable[[], str | None]]] = [
        (
            "/sys/module/amdgpu/version",
            lambda: _clean(read_text(root / "sys/module/amdgpu/version")),
        ),
    ]
    if run_tools:
        candidates += [
            (
                "amd-smi version",
                lambda: parse_amd_smi_version(
                    tools.run("amd-smi", ["version"], env, timeout=TIMEOUT) or ""
                ),
            ),
            (
                "modinfo amdgpu",
                lambda: parse_modinfo(tools.run("modinfo", ["amdgpu"], env, timeout=TIMEOUT) or ""),
            ),
        ]
    for label, ask in candidates:
        reading.tried.append(label)
        module = ask()
        if module is None:
            continue
        release = lookup(module)
        if release is not None:
            reading.module_version, reading.release, reading.source = module, release, label
            return reading
        if reading.module_version is None:
            reading.module_version, reading.source = module, label
    return reading


def _clean(text: str | None) -> str | None:
    value = (text or "").strip()
    return value if _MODULE.match(value) else None


# driver_release_source for a module version the data pairs with a series (docs/probe.schema.json).
MODULE_PAIRED = "amdgpu module version (matrix/drivers.toml pairs it with a series)"


def module_release(matrix: Matrix, module_version: str) -> str | None:
    """The AMD GPU Driver release AMD's data pairs a kernel module version with (drivers.toml
    ``module_versions``), as a series ("31.40"); None when no AMD source pairs them."""
    found = matrix.driver_for_module(module_version.split("-")[0])
    return found.series if found is not None else None


def pairing_confidence(matrix: Matrix, module_version: str | None) -> str:
    """How sure the data is of the series a module version pairs with (drivers.toml)."""
    found = matrix.driver_for_module((module_version or "").split("-")[0])
    return found.module_versions_confidence if found is not None else "unknown"


def release_of_module(node: Node, matrix: Matrix) -> Node:
    """Tools report the amdgpu kernel module's own version (``/sys/module/amdgpu/version``,
    rocminfo's "ROCk module version", amd-smi's driver version, the Kubernetes labeller's
    ``amd.com/gpu.driver-version``), e.g. 6.16.6, in ``node.driver_version``. AMD's
    driver/user-space table speaks of AMD GPU Driver releases (30.30.3, 6.4.x). A module version
    becomes a release only where AMD's data pairs the two (``module_release``), or when the live
    probe read the release itself (the amdgpu-dkms package: ``host.driver_release_source``);
    otherwise the module version is kept as a host fact, ``driver_version`` stays unknown and a
    problem says which sources were asked."""
    if node.host.get("driver_release_source"):
        return node
    module = node.driver_version
    if module is None:  # nothing reported a version; check/image say the release is unknown
        return node
    host = {**node.host, "amdgpu_module_version": module}
    paired = module_release(matrix, module)
    if paired is not None:
        host["driver_release_source"] = MODULE_PAIRED
        host["driver_release_confidence"] = pairing_confidence(matrix, module)
        return replace(node, driver_version=paired, host=host)
    problems = list(node.problems)
    if node.gpus:
        problems.append(_release_unknown(node, module))
    return replace(node, driver_version=None, host=host, problems=tuple(problems))


def _release_unknown(node: Node, module: str) -> Problem:
    tried = (node.host.get("driver") or {}).get("tried") or []
    w = words.say(
        "driver-release-unknown/asked" if tried else "driver-release-unknown",
        module=module,
        tried=", ".join(tried),
    )
    return Problem(code="driver-release-unknown", message=w.message, hint=w.hint)
