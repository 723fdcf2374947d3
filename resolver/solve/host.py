"""The host against AMD's lists: its OS (per ROCm release and per GPU), its kernel (per GPU with a
documented floor), and APU memory. Node-level advisories; none of them stops a path.
"""

from __future__ import annotations

from packaging.version import Version

from resolver.data.model import GfxTarget, Matrix
from resolver.data.node import Node
from resolver.solve.types import Advisory, HostChange
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
        listed = ", ".join(f"{f.os} (kernel {f.flavour} or newer)" for f in floors)
        source = "; ".join(dict.fromkeys(f.provenance.source for f in floors))
        who = t.products[0].name if t.products else t.name
        if not node.os:
            out.append(
                Advisory(
                    code="kernel-floor-unchecked",
                    severity="info",
                    message=f"AMD supports {t.name} ({who}) on Linux only on {listed}; this node's "
                    "OS is unknown",
                    hint="give --os (e.g. ubuntu-24.04) or run `rocm-vllm probe` on the node",
                    source=source,
                )
            )
            continue
        floor = next((f for f in floors if os_listed(node.os, (f.os,))), None)
        if floor is None:
            out.append(
                Advisory(
                    code="os-unlisted-for-gpu",
                    message=f"AMD supports {t.name} ({who}) on Linux only on {listed}; this host "
                    f"runs {node.os}",
                    hint=f"move the host to {floors[0].os} with kernel {floors[0].flavour} or "
                    "newer",
                    source=source,
                    change=HostChange(kind="os", value=floors[0].os),
                )
            )
            continue
        have = _kernel_version(node.kernel)
        need = _kernel_version(floor.min_kernel)
        if have is None or need is None:
            out.append(
                Advisory(
                    code="kernel-floor-unchecked",
                    severity="info",
                    message=f"AMD supports {t.name} on {floor.os} from kernel {floor.flavour}; "
                    "this node's kernel is unknown",
                    hint=f"check `uname -r` is {floor.min_kernel} or newer",
                    source=floor.provenance.source,
                )
            )
        elif have < need:
            out.append(
                Advisory(
                    code="kernel-too-old",
                    message=f"{t.name} ({who}) needs kernel {floor.flavour} or newer on {floor.os} "
                    "per AMD; "
                    f"this host runs {node.kernel}",
                    hint=f"install the {floor.flavour} kernel (Ubuntu: the linux-oem-24.04 kernel "
                    "series) and reboot"
                    if floor.flavour.startswith("OEM")
                    else f"install kernel {floor.min_kernel} or newer and reboot",
                    source=floor.provenance.source,
                    change=HostChange(kind="kernel", value=floor.min_kernel),
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
            Advisory(
                code="apu-unified-memory",
                severity="info",
                message=f"{t.name} is an APU: its GPU memory is system RAM mapped through GTT, not "
                "a VRAM pool, "
                "so how much vLLM can use for weights and KV cache depends on the GTT limit",
                hint="size the GTT limit (ttm pages_limit) for the model weights plus KV cache, "
                "leaving RAM for the OS, "
                "and keep the BIOS VRAM carve-out small; check what the GPU then reports before "
                "choosing --gpu-memory-utilization",
                source=t.unified_memory_source,
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
            Advisory(
                code="os-not-supported",
                message=f"{node.os} is not among the OS releases AMD supports for {rocm.label}, "
                f"which amdgpu {driver.series}.x was released with",
                hint=f"supported: {', '.join(rocm.os)}",
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
            out.append(
                Advisory(
                    code="os-not-supported-for-gpu",
                    message=f"AMD supports {who} on {rocm.label} only on "
                    f"{', '.join(allowed) or 'no listed OS'}; "
                    f"this host runs {node.os}",
                    hint="move the host to one of those OS releases, or expect an untested "
                    "combination",
                    source="; ".join(
                        dict.fromkeys(
                            r.provenance.source for r in applicable if not os_listed(node.os, r.os)
                        )
                    ),
                )
            )
    return out
