"""The host against AMD's lists: its OS (per ROCm release and per GPU), its kernel (per GPU with a
documented floor), and APU memory, as node-level advisories; the environment it records (the GPU
visibility variables); and what stops every path on it whatever the path (``host_blockers``: WSL,
a user who cannot open the GPUs, a driver AMD does not support on the host's OS), as reasons
whose fix is a host change.
"""

from __future__ import annotations

from typing import Any

from packaging.version import InvalidVersion, Version

from resolver.data.model import DriverSeries, GfxTarget, Matrix
from resolver.data.node import GPU_GROUPS, VISIBLE_VARS, Node
from resolver.solve.finding import Phrase, finding, phrase
from resolver.solve.types import Advisory, Fact, Fix, HostChange, Reason, Severity
from resolver.util.versions import driver_series, series_key


def _kernel_version(text: str | None) -> tuple[int, int] | None:
    """ "6.8.0-45-generic" -> (6, 8); None when it is not a kernel release."""
    parts = (text or "").split("-")[0].split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return int(parts[0]), int(parts[1])


def kernel_floor_warnings(node: Node, targets: list[GfxTarget]) -> list[Advisory]:
    """AMD's documented Linux releases and kernel floors for GPUs that have them (Ryzen AI Max:
    the inbox driver, so the kernel is the driver), checked against the node's OS and kernel."""
    out: list[Advisory] = []
    for t in targets:
        floors = t.kernel_floors
        if not floors:
            continue
        listed = tuple(
            phrase("kernel-floor-unchecked/floor", os=f.os, flavour=f.flavour) for f in floors
        )
        source = "; ".join(dict.fromkeys(f.provenance.source for f in floors))
        who = t.products[0].name if t.products else t.name
        if not node.os:
            out.append(
                Advisory.said(
                    "kernel-floor-unchecked/os",
                    gfx=t.name,
                    who=who,
                    listed=listed,
                    severity="warning" if t.inbox_driver_source else "info",
                    source=source,
                )
            )
            continue
        floor = next((f for f in floors if os_listed(node.os, (f.os,))), None)
        if floor is None:
            out.append(
                Advisory.said(
                    "os-unlisted-for-gpu",
                    gfx=t.name,
                    who=who,
                    listed=listed,
                    host_os=node.os,
                    os=floors[0].os,
                    flavour=floors[0].flavour,
                    source=source,
                    change=HostChange(kind="os", value=floors[0].os),
                )
            )
            continue
        have = _kernel_version(node.kernel)
        need = _kernel_version(floor.min_kernel)
        severity: Severity
        change: HostChange | None
        if have is None or need is None:
            # On the kernel's own amdgpu the kernel is the driver: unchecked, it is a warning.
            unchecked: Severity = "warning" if t.inbox_driver_source else "info"
            key, severity, change = "kernel-floor-unchecked", unchecked, None
        elif have < need:
            key = "kernel-too-old/oem" if floor.flavour.startswith("OEM") else "kernel-too-old"
            severity, change = "warning", HostChange(kind="kernel", value=floor.min_kernel)
        else:
            continue
        out.append(
            Advisory.said(
                key,
                gfx=t.name,
                who=who,
                os=floor.os,
                flavour=floor.flavour,
                min_kernel=floor.min_kernel,
                kernel=node.kernel,
                severity=severity,
                source=floor.provenance.source,
                change=change,
            )
        )
    return out


def unified_memory_warnings(node: Node, targets: list[GfxTarget]) -> list[Advisory]:
    """APUs take GPU memory from system RAM through GTT; vLLM sizes its KV cache from what that
    allows."""
    out: list[Advisory] = []
    for t in targets:
        if not t.unified_memory_source:
            continue
        out.append(
            Advisory.said(
                "apu-unified-memory", gfx=t.name, severity="info", source=t.unified_memory_source
            )
        )
    return out


def host_glibc(m: Matrix, node: Node) -> tuple[Version | None, str]:
    """The host's glibc and where it was read: the node's own (the probe's), else its OS
    release's as the data records it; (None, "") where neither says (or the probe's text is not a
    version). One reading for every wheel check, either vendor's."""
    if node.glibc:
        try:
            return Version(node.glibc), "the node's glibc"
        except InvalidVersion:
            return None, ""
    if node.os:
        os_rel = m.os_listed_as(node.os)
        if os_rel is not None and os_rel.glibc is not None:
            return os_rel.glibc, os_rel.provenance.source
    return None, ""


def os_listed(os_id: str, listed: tuple[str, ...]) -> bool:
    """``ubuntu-22.04`` is listed by ``ubuntu-22.04.5``; ``rhel-9.4`` by ``rhel-9.4``."""
    return any(
        entry == os_id or entry.startswith(os_id + ".") or os_id.startswith(entry + ".")
        for entry in listed
    )


def host_os_warnings(m: Matrix, node: Node, targets: list[GfxTarget]) -> list[Advisory]:
    """Is the host OS one AMD supports for these GPUs at the ROCm its driver was released with?

    The container or wheel brings its own user space, but the host's amdgpu driver and AMD's
    support both depend on the host OS; per-GPU footnotes narrow the list (MI325X, RDNA, ...)."""
    if not node.os or not node.driver_version:
        return []
    driver = m.driver(driver_series(node.driver_version))
    if driver is None or driver.paired_rocm is None:
        return []
    rocm = m.rocm_release(Version(driver.paired_rocm))
    if rocm is None or not rocm.os:
        return []
    products = {g.product for g in node.gpus if g.product}
    out: list[Advisory] = []
    if not os_listed(node.os, rocm.os):
        if not _module_loaded(node):
            return out  # the reason driver-os-unsupported says it (host_blockers)
        out.append(
            Advisory.said(
                "os-not-supported",
                host_os=node.os,
                rocm=rocm.label,
                driver=driver.series,
                listed=", ".join(rocm.os),
                source=rocm.provenance.source,
            )
        )
        return out
    for t in targets:
        # Several footnotes can apply to one GPU; together they allow only what each allows.
        applicable = [
            r
            for r in rocm.os_restrictions
            if t.name in r.gfx and (not r.products or bool(products & set(r.products)))
        ]
        if not applicable:
            continue
        allowed = [entry for entry in rocm.os if all(os_listed(entry, r.os) for r in applicable)]
        if not os_listed(node.os, tuple(allowed)):
            who = ", ".join(sorted({p for r in applicable for p in r.products})) or t.name
            w = finding(
                "os-not-supported-for-gpu",
                who=who,
                rocm=rocm.label,
                allowed=", ".join(allowed) or phrase("os-not-supported-for-gpu/none"),
                host_os=node.os,
            )
            out.append(
                Advisory(
                    code="os-not-supported-for-gpu",
                    message=w.message,
                    hint=w.hint,
                    source=Phrase.verbatim(
                        "; ".join(
                            dict.fromkeys(
                                r.provenance.source
                                for r in applicable
                                if not os_listed(node.os, r.os)
                            )
                        )
                    ),
                )
            )
    return out


# --- what stops every path on the host --------------------------------------------------------


class Blockers:
    """``every``: the reasons that stop every AMD path on the node; ``as_user``: the ones that stop
    a path run as the user (a wheel), not one a Docker daemon runs as root."""

    __slots__ = ("as_user", "every")

    def __init__(self, every: tuple[Reason, ...], as_user: tuple[Reason, ...]) -> None:
        self.every = every
        self.as_user = as_user


def host_blockers(m: Matrix, node: Node) -> Blockers:
    """WSL and a user the GPUs refuse stop vLLM at start, each with the host change that removes
    it. Only where the fact is known: a node whose groups nobody read is not blocked for them.
    (A driver AMD does not support on the host's OS depends on the path's driver move:
    ``driver_os``.)"""
    every = [r for r in (wsl_host(node),) if r is not None]
    access = gpu_access(node)
    as_user: list[Reason] = []
    if access is not None:
        # A container the Docker daemon starts runs as root and opens /dev/kfd whatever the user's
        # groups (ROCm/ROCm-docker#90); rootless engines and Apptainer run as the user.
        engines = node.host.get("container_engines")
        docker = isinstance(engines, dict) and engines.get("docker") is True
        (as_user if docker else every).append(access)
    return Blockers(tuple(every), tuple(as_user))


def _is_wsl(node: Node) -> bool:
    kernel = (node.kernel or "").lower()
    return (
        node.host.get("wsl") is True
        or any(p.code == "wsl" for p in node.problems)
        or "microsoft" in kernel
        or "wsl" in kernel
    )


def wsl_host(node: Node) -> Reason | None:
    """``wsl-host``: vLLM's ROCm paths need /dev/kfd and amdsmi, which WSL does not give."""
    if not _is_wsl(node):
        return None
    w = finding("wsl-host", kernel=f" (kernel {node.kernel})" if node.kernel else "")
    return Reason(
        code="wsl-host",
        message=w.message,
        facts=(
            Fact(text=w.facts[0], source="probe"),
            Fact(
                text=w.facts[1],
                source="https://rocm.docs.amd.com/projects/radeon-ryzen/en/latest/docs/install/"
                "installrad/wsl/howto_wsl.html; ROCm/librocdxg",
                confidence="inferred",  # the page's support table was not read here
            ),
            Fact(text=w.facts[2], source="ROCm/vllm#339", confidence="inferred"),
        ),
        hint=w.hint,
        fix=Fix(
            kind="host",
            text=w.fix,
            host=True,
            change=HostChange(kind="platform", value="linux"),
        ),
    )


_PERMISSION_ERRORS = ("EACCES", "EPERM")


def gpu_access(node: Node) -> Reason | None:
    """``gpu-access-denied``: the user is known not to be in the render and video groups (and
    the probe did not open /dev/kfd anyway), or /dev/kfd refused it. Root needs neither."""
    host = node.host
    user = host.get("user") if isinstance(host.get("user"), str) else None
    if user == "root":
        return None
    found = host.get("kfd")
    kfd: dict[str, Any] = found if isinstance(found, dict) else {}
    opened = kfd.get("openable")
    said = kfd.get("error")
    error: str = said if isinstance(said, str) else ""
    groups = host.get("groups")
    listed = [g for g in groups if isinstance(g, str)] if isinstance(groups, list) else None
    missing = [g for g in GPU_GROUPS if listed is not None and g not in listed]
    said_missing = any(p.code == "not-in-gpu-group" for p in node.problems)
    denied = (opened is False and error.startswith(_PERMISSION_ERRORS)) or any(
        p.code == "kfd-permission" for p in node.problems
    )
    if not denied and (opened is True or not (missing or said_missing)):
        return None
    who = user or "the user"
    key = "gpu-access-denied/denied" if denied and error else "gpu-access-denied"
    w = finding(
        key,
        user=who,
        groups=" and ".join(missing or GPU_GROUPS),
        have=", ".join(listed) if listed else "no group the probe listed",
        error=error,
    )
    return Reason(
        code="gpu-access-denied",
        message=w.message,
        facts=(
            Fact(text=w.facts[0], source="probe"),
            Fact(
                text=w.facts[1],
                source="https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/"
                "prerequisites.html (configuring permissions for GPU access); "
                "ROCm/ROCT-Thunk-Interface README.md (the video group; render on Ubuntu 20.04+)",
            ),
        ),
        hint=w.hint,
        fix=Fix(
            kind="host",
            text=w.fix,
            host=True,
            change=HostChange(kind="groups", value=",".join(GPU_GROUPS)),
        ),
    )


def _module_loaded(node: Node) -> bool:
    """The probe saw the amdgpu module loaded: whatever AMD lists, it built on this kernel."""
    return node.host.get("amdgpu_module") == "loaded"


def driver_os(m: Matrix, node: Node, move: Fix | None = None) -> Reason | None:
    """``driver-os-unsupported``: the host's OS is not among those AMD supports for the ROCm
    release the path's amdgpu driver was released with, and no probe saw that driver loaded here
    (an amdgpu-dkms built for other kernels need not build on this one: Ubuntu 26.04 with an
    older amdgpu). The fix: the nearest OS release AMD lists for it. A path that needs a driver
    ``move`` is about the driver it moves to: where AMD does not support that one on the host's
    OS, the OS release the move names first (``os_first``), so that the path's changes, taken
    together, give a host AMD supports."""
    if not node.os or not node.driver_version:
        return None
    if move is not None:
        if move.change is None or not move.os_first:
            return None
        driver = m.driver(driver_series(move.change.value))
    elif _module_loaded(node):
        return None
    else:
        driver = m.driver(driver_series(node.driver_version))
    if driver is None or driver.paired_rocm is None:
        return None
    rocm = m.rocm_release(Version(driver.paired_rocm))
    if rocm is None or not rocm.os or os_listed(node.os, rocm.os):
        return None
    if move is not None and move.os_first:
        found = m.os_listed_as(move.os_first)
        step = found.id if found is not None else move.os_first
    else:
        step = _nearest_os(m, node.os, rocm.os)
    drivers = ", ".join(f"{d.series}.x" for d in _drivers_on(m, node.os))
    key = "driver-os-unsupported" if drivers else "driver-os-unsupported/none"
    w = finding(
        "driver-os-unsupported/move" if move is not None else key,
        driver=driver.series,
        host_os=node.os,
        rocm=rocm.label,
        listed=", ".join(rocm.os),
        step=step,
        drivers=drivers,
    )
    return Reason(
        code="driver-os-unsupported",
        message=w.message,
        facts=(
            Fact(text=w.facts[0], source=driver.provenance.source),
            Fact(text=w.facts[1], source=rocm.provenance.source),
        ),
        hint=w.hint,
        # The OS step of a driver move belongs to that move (its hint ranks as the driver's).
        fix=Fix(
            kind="driver" if move is not None else "os",
            text=w.fix,
            host=True,
            change=HostChange(kind="os", value=step),
        ),
    )


def _os_key(os_id: str) -> Version:
    try:
        return Version(os_id.partition("-")[2])
    except InvalidVersion:
        return Version("0")


def _nearest_os(m: Matrix, host_os: str, listed: tuple[str, ...]) -> str:
    """The listed release of the host's OS family nearest to it (the next newer one, else the
    newest older one), else the first listed; as an OS id a flag takes (``ubuntu-24.04``)."""
    family = host_os.partition("-")[0]
    same = sorted((o for o in listed if o.partition("-")[0] == family), key=_os_key)
    newer = [o for o in same if _os_key(o) > _os_key(host_os)]
    pick = newer[0] if newer else same[-1] if same else listed[0]
    found = m.os_listed_as(pick)
    return found.id if found is not None else pick


def _drivers_on(m: Matrix, host_os: str) -> list[DriverSeries]:
    """The driver series whose ROCm AMD supports on ``host_os``, newest first."""
    out = []
    for d in m.drivers:
        rocm = m.rocm_release(Version(d.paired_rocm)) if d.paired_rocm else None
        if rocm is not None and rocm.os and os_listed(host_os, rocm.os):
            out.append(d)
    return sorted(out, key=lambda d: series_key(d.series), reverse=True)


# --- the environment the node records ---------------------------------------------------------


EMPTY = '""'  # how an empty variable (no GPU) is shown


def visible_device_warnings(node: Node, targets: list[GfxTarget]) -> list[Advisory]:
    """The GPU visibility variables the probe recorded: Ray's rules about them, a set that hides
    the GPUs the plan is for, and how many GPUs the plan then uses."""
    env = node.visible_devices
    if not env:
        return []
    out: list[Advisory] = []
    rocr, hip, cuda = (env.get(k) for k in VISIBLE_VARS)
    if rocr is not None and hip is None:
        out.append(Advisory.said("visible-devices-ray", rocr=rocr or EMPTY))
    elif rocr is not None and hip is not None:
        out.append(Advisory.said("visible-devices-ray/both", rocr=rocr or EMPTY, hip=hip or EMPTY))
    if hip is not None and cuda is not None and hip != cuda:
        out.append(
            Advisory.said("visible-devices-ray/hip-cuda", hip=hip or EMPTY, cuda=cuda or EMPTY)
        )
    visible = node.visible_gpus()
    if visible is None:
        return out
    names = " and ".join(f"{k}={env[k] or EMPTY}" for k in VISIBLE_VARS if k in env)
    total = len(node.gpus) or node.logical_gpu_count
    if not visible:
        out.append(
            Advisory.said("visible-devices-hide-gfx/all", vars=names, last=max(total - 1, 0))
        )
        return out
    seen_gfx = {node.gpus[i].gfx for i in visible if i < len(node.gpus)}
    for t in targets:
        if node.gpus and t.name not in seen_gfx:
            indices = ",".join(str(i) for i, g in enumerate(node.gpus) if g.gfx == t.name)
            out.append(
                Advisory.said("visible-devices-hide-gfx", vars=names, gfx=t.name, indices=indices)
            )
    if len(visible) < total:
        out.append(
            Advisory.said(
                "visible-devices-count",
                vars=names,
                seen=len(visible),
                total=total,
                indices=",".join(map(str, visible)),
                severity="info",
            )
        )
    return out
