"""The host against AMD's lists: its OS (per ROCm release and per GPU), its kernel (per GPU with a
documented floor), and APU memory. Node-level advisories; none of them stops a path.
"""

from __future__ import annotations

from packaging.version import Version

from resolver.data import words
from resolver.data.model import GfxTarget, Matrix
from resolver.data.node import Node
from resolver.solve.types import Advisory, HostChange, Severity
from resolver.util.versions import driver_series


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
        listed = ", ".join(
            words.text("kernel-floor-unchecked/floor", os=f.os, flavour=f.flavour) for f in floors
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
                    severity="info",
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
            key, severity, change = "kernel-floor-unchecked", "info", None
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
            w = words.say(
                "os-not-supported-for-gpu",
                who=who,
                rocm=rocm.label,
                allowed=", ".join(allowed) or words.text("os-not-supported-for-gpu/none"),
                host_os=node.os,
            )
            out.append(
                Advisory(
                    code="os-not-supported-for-gpu",
                    message=w.message,
                    hint=w.hint,
                    source="; ".join(
                        dict.fromkeys(
                            r.provenance.source for r in applicable if not os_listed(node.os, r.os)
                        )
                    ),
                )
            )
    return out
