"""Live host facts: OS, kernel, glibc, amdgpu driver, installed ROCm, device access, groups,
NUMA balancing, IOMMU mode and container engines. Every path is read under ``root`` so tests run
this against a fixture tree; nothing here needs a GPU.

``Node.host`` keys written here (documented in docs/probe.schema.json): ``user``, ``groups``,
``amdgpu_module`` (loaded|absent), ``driver_kind`` (dkms|in-tree), ``rocm_installs``,
``kfd`` ({present, openable, error}), ``render_nodes`` ([{path, openable, error}]),
``numa_balancing``, ``iommu`` (pt|on|off|default), ``kernel_cmdline_iommu``, ``container_engines``
({docker, podman}).
"""

from __future__ import annotations

import errno
import grp
import os
import platform
import pwd
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resolver.data.node import VISIBLE_VARS, Problem, visible_ok
from resolver.probe.sysfs import read_text
from resolver.util import bounded


@dataclass(slots=True)
class HostFacts:
    os: str | None = None
    kernel: str | None = None
    glibc: str | None = None
    python: str | None = None
    rocm_version: str | None = None
    host: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    visible: dict[str, str] = field(default_factory=dict)  # Node.visible_devices


def gather(
    root: Path, *, env: Mapping[str, str], check_access: bool = True, sockets: bool = True
) -> HostFacts:
    facts = HostFacts()
    facts.os = os_id(read_text(root / "etc/os-release") or read_text(root / "usr/lib/os-release"))
    facts.kernel = _kernel(root)
    if facts.kernel and ("microsoft" in facts.kernel.lower() or "wsl" in facts.kernel.lower()):
        facts.host["wsl"] = True
        facts.problems.append(Problem.said("wsl", kernel=facts.kernel))
    facts.glibc = _glibc()
    facts.python = f"{platform.python_version_tuple()[0]}.{platform.python_version_tuple()[1]}"
    installs = rocm_installs(root)
    facts.host["rocm_installs"] = installs
    if installs:
        facts.rocm_version = installs[0]["version"]
        if len({i["version"] for i in installs}) > 1:
            facts.host["rocm_side_by_side"] = True
    _identity(facts, env)
    facts.visible = visible_devices(env, facts.problems)
    _devices(root, facts, check_access)
    numa = read_text(root / "proc/sys/kernel/numa_balancing")
    facts.host["numa_balancing"] = bounded.ascii_int(numa)
    cmdline = read_text(root / "proc/cmdline") or ""
    facts.host["iommu"], facts.host["kernel_cmdline_iommu"] = iommu_mode(cmdline)
    if sockets:
        facts.host["container_engines"] = container_engines(root, env)
    return facts


def os_id(text: str | None) -> str | None:
    """os-release ID + VERSION_ID (major.minor) -> ``ubuntu-22.04``."""
    if not text:
        return None
    values = {}
    for line in text.splitlines():
        if "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip().strip("\"'")
    ident, version = values.get("ID", "").lower(), values.get("VERSION_ID", "")
    match = re.match(r"^[0-9]+(?:\.[0-9]+)?", version)
    if not ident or not re.fullmatch(r"[a-z][a-z0-9-]*", ident) or not match:
        return None
    return f"{ident}-{match.group(0)}"


def _kernel(root: Path) -> str | None:
    text = read_text(root / "proc/sys/kernel/osrelease")
    if text and text.strip():
        return text.strip()
    version = read_text(root / "proc/version")
    parts = (version or "").split()
    return parts[2] if len(parts) > 2 else None


def _glibc() -> str | None:
    name, version = platform.libc_ver()
    return version if name == "glibc" and version else None


def rocm_installs(root: Path) -> list[dict[str, str]]:
    """Every ROCm under /opt: legacy ``/opt/rocm`` and ``/opt/rocm-X.Y.Z`` (``.info/version``),
    and TheRock's ``/opt/rocm/core`` / ``/opt/rocm/core-X.Y``. ``/opt/rocm`` first: it is what
    unversioned tools use."""
    opt = root / "opt"
    candidates: list[Path] = []
    for pattern in ("rocm", "rocm-*", "rocm/core", "rocm/core-*"):
        candidates.extend(sorted(opt.glob(pattern)))
    seen: set[str] = set()
    found = []
    for path in candidates:
        if not path.is_dir():
            continue
        key = os.path.realpath(path)
        version = _version_file(path) or _version_from_name(path.name)
        if version is None or key in seen:
            continue
        seen.add(key)
        found.append({"path": "/" + str(path.relative_to(root)), "version": version})
    return found


def _version_file(path: Path) -> str | None:
    for name in (".info/version", ".info/version-rocm", ".info/version-dev"):
        text = read_text(path / name)
        if text and (match := re.match(r"^\s*([0-9]+\.[0-9]+(?:\.[0-9]+)?)", text)):
            return match.group(1)
    return None


def _version_from_name(name: str) -> str | None:
    match = re.fullmatch(r"(?:rocm|core)-([0-9]+\.[0-9]+(?:\.[0-9]+)?)", name)
    return match.group(1) if match else None


def _identity(facts: HostFacts, env: Mapping[str, str]) -> None:
    user: str | None
    try:
        user = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        user = env.get("USER")
    groups = []
    for gid in os.getgroups():
        try:
            groups.append(grp.getgrgid(gid).gr_name)
        except KeyError:
            groups.append(str(gid))
    facts.host["user"] = user
    facts.host["groups"] = sorted(set(groups))


def visible_devices(env: Mapping[str, str], problems: list[Problem]) -> dict[str, str]:
    """The GPU visibility variables set here, each in a form the runtimes take; any other value
    is a problem and is left out (it would reach a run command)."""
    from resolver.util.safety import shown

    out: dict[str, str] = {}
    for var in VISIBLE_VARS:
        value = env.get(var)
        if value is None:
            continue
        if visible_ok(value):
            out[var] = value
        else:
            problems.append(
                Problem.said("visible-devices-invalid", var=var, value=shown(value, limit=64))
            )
    return out


def _devices(root: Path, facts: HostFacts, check_access: bool) -> None:
    module = root / "sys/module/amdgpu"
    loaded = module.is_dir()
    facts.host["amdgpu_module"] = "loaded" if loaded else "absent"
    if loaded:
        facts.host["driver_kind"] = "dkms" if (module / "version").is_file() else "in-tree"
    kfd = root / "dev/kfd"
    kfd_info: dict[str, Any] = {"present": kfd.exists(), "openable": None, "error": None}
    if kfd_info["present"] and check_access:
        kfd_info["openable"], kfd_info["error"] = _openable(kfd)
    facts.host["kfd"] = kfd_info
    renders = []
    for path in sorted((root / "dev/dri").glob("renderD*")):
        info: dict[str, Any] = {
            "path": "/" + str(path.relative_to(root)),
            "openable": None,
            "error": None,
        }
        if check_access:
            info["openable"], info["error"] = _openable(path)
        renders.append(info)
    facts.host["render_nodes"] = renders
    if not loaded:
        facts.problems.append(Problem.said("amdgpu-not-loaded"))
    if not kfd_info["present"]:
        facts.problems.append(Problem.said("no-kfd"))
    elif kfd_info["openable"] is False:
        facts.problems.append(Problem.said("kfd-permission", error=kfd_info["error"]))
    blocked = [r["path"] for r in renders if r["openable"] is False]
    if blocked:
        facts.problems.append(Problem.said("render-permission", paths=", ".join(blocked)))
    missing = {"render", "video"} - set(facts.host.get("groups", []))
    if kfd_info["present"] and missing and os.getuid() != 0:
        facts.problems.append(
            Problem.said(
                "not-in-gpu-group",
                user=facts.host.get("user"),
                groups=" and ".join(sorted(missing)),
            )
        )


_NVRM_RE = re.compile(r"Kernel Module\s+(?:for\s+\S+\s+)?([0-9]+\.[0-9]+(?:\.[0-9]+)?)")


def nvidia_devices(root: Path) -> list[dict[str, Any]]:
    """An NVIDIA GPU seen without any NVIDIA tool: the kernel module's version file
    (``/proc/driver/nvidia/version``), its device nodes (``/dev/nvidia0``...) or the loaded module
    (``/sys/module/nvidia``). One entry per ``/dev/nvidiaN`` (at least one when any sign is
    there)."""
    version_text = read_text(root / "proc/driver/nvidia/version") or ""
    match = _NVRM_RE.search(version_text)
    nodes = sorted(
        (
            p.name
            for p in (root / "dev").glob("nvidia[0-9]*")
            if bounded.ascii_int(p.name[6:]) is not None
        ),
        key=lambda n: bounded.ascii_int(n[6:]) or 0,
    )
    if not (match or nodes or (root / "sys/module/nvidia").is_dir()):
        return []
    driver = match.group(1) if match else None
    return [
        {
            "vendor": "nvidia",
            "kind": "GPU",
            "gfx": None,
            "name": None,
            "pci_device_id": None,
            "unique_id": None,
            "vram_bytes": None,
            "compute_units": None,
            "driver": driver,
            "device_node": f"/dev/{name}" if name != "?" else None,
            "source": "host",
        }
        for name in (nodes or ["?"])
    ]


def _openable(path: Path) -> tuple[bool, str | None]:
    try:
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    except OSError as exc:
        return False, errno.errorcode.get(exc.errno or 0, str(exc.errno)) + f" ({exc.strerror})"
    os.close(fd)
    return True, None


def iommu_mode(cmdline: str) -> tuple[str, str | None]:
    """``iommu=pt`` (what AMD recommends for Instinct), ``amd_iommu=off`` / ``iommu=off`` ->
    off, ``amd_iommu=on`` / ``intel_iommu=on`` -> on; else the kernel default."""
    options = [w for w in cmdline.split() if re.match(r"^(?:iommu|amd_iommu|intel_iommu)=", w)]
    joined = " ".join(options) or None
    if any(w == "iommu=pt" or w.endswith("=pt") for w in options):
        return "pt", joined
    if any(w.endswith("=off") for w in options):
        return "off", joined
    if any(w.endswith("=on") for w in options):
        return "on", joined
    return "default", joined


def container_engines(root: Path, env: Mapping[str, str]) -> dict[str, bool]:
    """Whether a Docker or Podman daemon answers ``GET /_ping`` on its socket."""
    docker_host = env.get("DOCKER_HOST", "")
    docker = [Path(docker_host[7:])] if docker_host.startswith("unix://") else []
    docker += [root / "var/run/docker.sock", root / "run/docker.sock"]
    runtime_dir = env.get("XDG_RUNTIME_DIR")
    podman = [root / "run/podman/podman.sock"]
    if runtime_dir:
        podman.append(Path(runtime_dir) / "podman/podman.sock")
    return {"docker": any(ping(p) for p in docker), "podman": any(ping(p) for p in podman)}


def ping(sock_path: Path, timeout: float = 1.0) -> bool:
    if not sock_path.exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            # Connect to the resolved path: AF_UNIX paths are limited to 107 bytes, and a socket
            # reached through a long symlinked root (e.g. --sysfs-style test trees) would not fit.
            sock.connect(str(sock_path.resolve()))
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: localhost\r\n\r\n")
            reply = sock.recv(64)
    except OSError:
        return False
    return reply.startswith(b"HTTP/") and b" 200 " in reply[:16]
