"""The probe's words: each problem code's message and hint, in one place.

The probe reports what it found in a node file (``probe --json``, the fleet's reports), and that
file carries its problems worded (the contract of ``docs/probe.schema.json``): so the probe words
them where it writes them, from here. Everything the solver finds is worded at the explanation
edge instead (``resolver.explain.words``). ``tests/test_words.py`` proves every ``ProblemCode``
has its words here and every wording is used.

A key is the code, or ``code/variant`` where one code is said several ways.
"""

from __future__ import annotations

from typing import Final

import msgspec


class Said(msgspec.Struct, frozen=True):
    """One wording of a code: its message, the text of each fact it rests on (in order), its
    hint and the text of its fix."""

    message: str = ""
    hint: str = ""
    facts: tuple[str, ...] = ()
    fix: str = ""
    source: str = ""  # where the advice comes from, where the wording itself cites it
    # A variant says only what differs from the wording it names here; the rest is that one's.
    base: str = ""


GROUP_HINT = (
    "sudo usermod -aG render,video $USER, then log out and back in (in a container: --group-add "
    "video --group-add render)"
)

_NO_GPU_AGENT_ENUMERATOR_HINT = (
    "run `rocm_agent_enumerator` on the GPU node and save its whole output; if it prints "
    "only gfx000 the runtime sees no GPU (check /dev/kfd and your groups)"
)
_AMD_SMI_BAD_TARGET_HINT = (
    "amd-smi before ROCm 6.4 misprints gfx targets (gfx9008 for gfx908); use a newer "
    "amd-smi or --sysfs"
)
_DRIVER_RELEASE_UNKNOWN_HINT = (
    "pass the release you installed to check/image/dockerfile, e.g. --driver 30.30.3 "
    "(the amdgpu-install version)"
)

WORDS: Final[dict[str, Said]] = {
    # --- what the probe found wrong on the node (resolver.probe, resolver.data.partitions)
    "visible-devices-invalid": Said(
        message="{var}={value} is not a GPU list (indices or GPU-<uuid>, comma-separated): "
        "left out of the report",
        hint="fix or unset {var}; the GPUs it would select are not counted",
    ),
    "wsl": Said(
        message="this is WSL (kernel {kernel}): ROCm there exposes only RDNA3/RDNA4 GPUs, and "
        "vLLM's amdsmi-based device detection is not supported on it",
        hint="run vLLM on native Linux; on WSL treat any result as experimental (ROCm/vllm#339)",
    ),
    "amdgpu-not-loaded": Said(
        message="the amdgpu kernel module is not loaded (no /sys/module/amdgpu)",
        hint="on a GPU node: `sudo modprobe amdgpu`, or install the driver with `sudo "
        "amdgpu-install --usecase=dkms`; in a container this is the host's job",
    ),
    "amdgpu-not-loaded/rocminfo": Said(
        message="rocminfo: the amdgpu kernel module is not loaded (ROCk module is NOT loaded)",
        hint="load it with `sudo modprobe amdgpu` (check `sudo dmesg | grep -i amdgpu`); if it is "
        "not installed, install the AMD GPU driver: `sudo amdgpu-install --usecase=dkms`",
    ),
    "amdgpu-not-live": Said(
        message="rocminfo: the amdgpu module is loaded but not live (no GPU initialised)",
        hint="check `sudo dmesg | grep -i -e amdgpu -e kfd` for the reason the GPU failed to "
        "initialise",
    ),
    "no-kfd": Said(
        message="/dev/kfd does not exist: no AMD GPU compute device on this machine",
        hint="on a GPU node load amdgpu (`sudo modprobe amdgpu`); in a container pass `--device "
        "/dev/kfd --device /dev/dri`",
    ),
    "kfd-permission": Said(message="cannot open /dev/kfd: {error}", hint=GROUP_HINT),
    "kfd-permission/rocminfo": Said(
        message="rocminfo: cannot open /dev/kfd: {error}", hint=GROUP_HINT
    ),
    "kfd-missing": Said(
        message="rocminfo: /dev/kfd does not exist ({error})",
        hint="load the driver with `sudo modprobe amdgpu`; in a container pass `--device "
        "/dev/kfd --device /dev/dri`",
    ),
    "kfd-enomem": Said(
        message="rocminfo: opening /dev/kfd failed: {error}",
        hint="the kernel driver has no KFD support for this GPU: check `sudo dmesg | grep -i kfd` "
        "(e.g. 'not supported in kfd', 'DID ... is missing'); install an amdgpu driver that "
        "supports it",
    ),
    "kfd-open-failed": Said(
        base="kfd-permission/rocminfo",
        hint="check `ls -l /dev/kfd`, your groups (`id`) and `sudo dmesg | grep -i kfd`",
    ),
    "render-permission": Said(
        message="cannot open {paths}: the runtime silently drops those GPUs", hint=GROUP_HINT
    ),
    "not-in-gpu-group": Said(
        message="user {user} is not in the {groups} group(s)", hint=GROUP_HINT
    ),
    "not-in-gpu-group/rocminfo": Said(
        message="rocminfo: user {user} is not in the {group} group", hint=GROUP_HINT
    ),
    "hsa-runtime-error": Said(
        message="rocminfo: the HSA runtime failed to start (hsa api call failure)",
        hint="fix the /dev/kfd problem reported with it; else run with HSAKMT_DEBUG_LEVEL=7 and "
        "check `sudo dmesg`",
    ),
    "no-gpu-agents": Said(
        message="the rocminfo output lists no GPU agent",
        hint="run `rocminfo` on the node and save its whole output (rocminfo > rocminfo.txt 2>&1)",
    ),
    "no-gpu-agent-enumerator": Said(
        message="the rocm_agent_enumerator output names no GPU target",
        hint=_NO_GPU_AGENT_ENUMERATOR_HINT,
    ),
    "no-gpu-agent-enumerator/cpu-only": Said(
        message="the rocm_agent_enumerator output names no GPU target (only gfx000, the CPU)",
        hint=_NO_GPU_AGENT_ENUMERATOR_HINT,
    ),
    "no-gpu-amd-smi": Said(
        message="the amd-smi output lists no GPU",
        hint="save the whole output of `amd-smi static` (or `amd-smi --showproductname`) run on "
        "the node",
    ),
    "no-gpu-rocm-smi": Said(
        message="the rocm-smi output lists no GPU",
        hint="save the whole output of `rocm-smi --showproductname` run on the node",
    ),
    "no-kfd-topology": Said(
        message="--sysfs {root}: no KFD topology or DRM device under {root} (looked for "
        "sys/class/kfd/kfd/topology/nodes, class/kfd/kfd/topology/nodes, sys/class/drm)",
        hint="copy /sys/class/kfd/kfd/topology from the node (cp -rL), keeping the "
        "sys/class/kfd/kfd path, or give --sysfs a copy of /sys itself",
    ),
    "gpu-target-unknown/rocminfo": Said(
        message="rocminfo: a GPU agent ({name}) has no gfx target",
        hint="save the whole rocminfo output, or use --sysfs with a copy of /sys/class/kfd",
    ),
    "gpu-target-unknown/no-name": Said(message="no name"),
    "gpu-target-unknown/sysfs": Said(
        message="sysfs: KFD node {node} (PCI id {pci}) has no gfx_target_version and the PCI id "
        "is not in the data",
        hint="give --rocminfo FILE as well, or pass --gfx",
    ),
    "gpu-target-unknown": Said(
        message="{count} GPU(s) listed without a gfx target or a known PCI id",
        hint="add an output that names the target: `rocminfo`, `amd-smi static --asic`, or "
        "--sysfs ROOT",
    ),
    "gfx-override/rocminfo": Said(
        message="rocminfo reports {runtime} for a {physical} device (PCI id {pci}): "
        "HSA_OVERRIDE_GFX_VERSION={override} is in effect",
        hint="this runs {physical} hardware with code built for {runtime} (unsupported, may "
        "crash); prefer a build for {physical}, or keep the override explicitly: "
        "HSA_OVERRIDE_GFX_VERSION={override}",
    ),
    "gfx-override/sources": Said(
        message="the runtime (rocminfo) reports {runtime} for a device that {source} says is "
        "{physical}: HSA_OVERRIDE_GFX_VERSION={override} is in effect",
        hint="this runs {physical} hardware with code built for {runtime} (unsupported); prefer a "
        "build for {physical} and unset HSA_OVERRIDE_GFX_VERSION",
    ),
    "gfx-override": Said(
        message="HSA_OVERRIDE_GFX_VERSION={override} makes the runtime treat this {physical} as "
        "{runtime}",
        hint="unsupported unless the two are binary compatible; prefer a build for {physical} and "
        "`unset HSA_OVERRIDE_GFX_VERSION`",
    ),
    "gfx-override-invalid": Said(
        message="HSA_OVERRIDE_GFX_VERSION={override!r} is not major.minor.stepping; the runtime "
        "ignores it",
        hint="unset it, or write it as three decimal numbers, e.g. 11.0.0 for gfx1100",
    ),
    "amd-smi-bad-target": Said(
        message="amd-smi printed TARGET_GRAPHICS_VERSION {target!r}, not a gfx target",
        hint=_AMD_SMI_BAD_TARGET_HINT,
    ),
    "amd-smi-bad-target/pci": Said(
        message="amd-smi printed TARGET_GRAPHICS_VERSION {target!r}, not a gfx target; the PCI id "
        "{pci} says {physical}",
        hint=_AMD_SMI_BAD_TARGET_HINT,
    ),
    "smi-misprinted-target": Said(
        message="{source} printed the target as {name!r}, a known misprint of {fixed} "
        "(rocm_smi_lib before ROCm 6.4 writes the stepping in decimal and pads the major); read as "
        "{fixed}",
        hint="nothing to do; a newer rocm-smi/amd-smi (ROCm >= 6.4) prints the name right",
    ),
    "partial-input": Said(
        message="the {source} input is a filtered or flattened paste: it names the gfx targets "
        "but may not list every GPU",
        hint="save the whole output (rocminfo > rocminfo.txt) or run `rocm-vllm probe --json` on "
        "the node",
    ),
    "sources-disagree": Said(
        message="{source} says {mine} but {other} says {theirs}",
        hint="the inputs may come from different machines; probe each node on its own",
    ),
    "sources-disagree/no-gpu": Said(message="no GPU"),
    "gpu-count-differs": Said(
        message="{source} lists {count} GPU agent(s), {other} lists {other_count}",
        hint="the inputs may come from different machines or times; probe each node on its own",
    ),
    "gpu-count-differs/hidden": Said(
        base="gpu-count-differs",
        hint="the runtime drops GPUs whose /dev/dri/renderD* it cannot open: check the "
        "container's --device list, cgroups and ROCR_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES",
    ),
    "integrated-gpu-present": Said(
        message="an integrated GPU ({gfx}) sits beside the discrete GPU(s); it is not counted",
        hint="hide it from ROCm so ranks map to the discrete GPUs: set ROCR_VISIBLE_DEVICES / "
        "HIP_VISIBLE_DEVICES to the discrete GPUs, or disable the iGPU in the BIOS",
    ),
    "numa-balancing-on": Said(
        message="kernel.numa_balancing is 1 (AMD's Instinct tuning guides ask for it off)",
        hint="sudo sysctl kernel.numa_balancing=0 (persist it in /etc/sysctl.d/)",
    ),
    "no-container-engine": Said(
        message="no Docker or Podman daemon answers on this machine: the image path cannot run "
        "here",
        hint="install Docker Engine and start it (`sudo systemctl enable --now docker`), or use "
        "the source build",
    ),
    "not-an-amd-gpu/nvidia": Said(
        message="no AMD GPU here; found {found}: the plan is for NVIDIA (vLLM's CUDA images)",
        hint="run `rocm-vllm check` here, or `rocm-vllm check --node` with this report",
    ),
    "not-an-amd-gpu": Said(
        message="no AMD GPU here; found {found}, which rocm-vllm does not resolve",
        hint="rocm-vllm decides only for AMD GPUs (ROCm) and NVIDIA GPUs: run it on such a node",
    ),
    "not-an-amd-gpu/hygon": Said(message="; for Hygon DCUs use Hygon's DTK builds of vLLM"),
    "no-gpu": Said(
        message="no AMD GPU found",
        hint="run the probe on the GPU node, or describe it with --gfx/--gpus",
    ),
    "no-gpu/because": Said(message="no AMD GPU found ({codes})"),
    "driver-release-unknown": Said(
        message="the amdgpu kernel module reports version {module}, which no AMD data pairs with "
        "an AMD GPU Driver release, so which ROCm user space it runs cannot be read from it",
        hint=_DRIVER_RELEASE_UNKNOWN_HINT,
    ),
    "driver-release-unknown/not-a-version": Said(
        message="{path}: {value} is not a module version; ignored",
        hint="copy /sys/module/amdgpu/version from the node as it is",
    ),
    "driver-release-unknown/asked": Said(
        message="the amdgpu kernel module reports version {module}, which no AMD data pairs with "
        "an AMD GPU Driver release, so which ROCm user space it runs cannot be read from it "
        "(asked: {tried})",
        hint=_DRIVER_RELEASE_UNKNOWN_HINT,
    ),
    "partition-missing": Said(
        message="GPU {where} ({what}) shows {shown} of its {expected} {mode} partitions: "
        "{missing} missing from what ROCm sees",
        hint="check `amd-smi partition` and `dmesg | grep amdgpu` on the node: 64 or more "
        "partitions can exceed the kernel's limit of 64 DRM device nodes (8 GPUs in CPX lose one; "
        "use DPX/QPX), or a partition is hidden by ROCR_VISIBLE_DEVICES, a container's device "
        "list or a failed XCD",
    ),
}


def resolved(registry: dict[str, Said], key: str) -> Said:
    """Wording ``key`` of ``registry`` with what a variant leaves out taken from its ``base``."""
    said = registry[key]
    if not said.base:
        return said
    under = registry[said.base]
    return Said(
        message=said.message or under.message,
        hint=said.hint or under.hint,
        facts=said.facts or under.facts,
        fix=said.fix or under.fix,
        source=said.source or under.source,
    )


def filled(said: Said, values: dict[str, object]) -> Said:
    """Every part of ``said`` with ``values`` filled in (a missing value is a bug: KeyError)."""
    return msgspec.structs.replace(
        said,
        message=said.message.format(**values),
        hint=said.hint.format(**values),
        facts=tuple(f.format(**values) for f in said.facts),
        fix=said.fix.format(**values),
    )


def say(key: str, /, **values: object) -> Said:
    """The probe's wording ``key`` with ``values`` filled in."""
    return filled(resolved(WORDS, key), values)


def text(key: str, /, **values: object) -> str:
    """The message of wording ``key``: a fragment another wording takes as a value."""
    return WORDS[key].message.format(**values)
