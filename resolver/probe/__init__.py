"""Node facts from rocminfo, amd-smi, rocm-smi, rocm_agent_enumerator and sysfs (KFD topology, DRM).

``probe_files`` reads saved outputs (and a sysfs copy); ``probe_live`` reads this machine. Both
return a ``data.node.Node``; nothing here raises for bad *content*: garbage yields zero GPUs
and a problem. Only an input that cannot be read at all is a ``ProbeError``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from msgspec.structs import replace

from resolver.data import words
from resolver.data.model import Matrix
from resolver.data.node import MAX_GPUS, VISIBLE_VARS, Node, Origin, Problem
from resolver.probe import driver as driver_mod
from resolver.probe import enumerator, smi, sysfs, tools
from resolver.probe import host as hostmod
from resolver.probe import nvidia as nvidia_mod
from resolver.probe import rocminfo as rocminfo_mod
from resolver.probe.driver import MODULE_PAIRED as MODULE_PAIRED  # cli/probe.py reads it here
from resolver.probe.facts import SourceView
from resolver.probe.gfx import GfxTable
from resolver.probe.merge import merge
from resolver.util import bounded
from resolver.util.errors import ProbeError

__all__ = ["probe_files", "probe_live"]

_MAX_INPUT = 64 * 1024 * 1024


def _read(path: Path, flag: str) -> str:
    try:
        if path.is_dir():
            raise ProbeError(
                f"{flag} {path}: is a directory, not a file",
                hint=f"give {flag} the saved output file",
            )
        data = bounded.read_bytes(path, _MAX_INPUT)
    except bounded.TooLargeError:
        raise ProbeError(
            f"{flag} {path}: larger than 64 MiB, not a tool output",
            hint=f"give {flag} the saved output file",
        ) from None
    except bounded.NotRegularFileError as exc:
        raise ProbeError(
            f"{flag} {path}: {exc.strerror}",
            hint="save the tool's output to a file first (e.g. rocminfo > out.txt) and give "
            f"{flag} that file",
        ) from None
    except FileNotFoundError:
        raise ProbeError(f"{flag} {path}: no such file", hint="check the path") from None
    except PermissionError:
        raise ProbeError(
            f"{flag} {path}: permission denied", hint="make the file readable, or copy it"
        ) from None
    except OSError as exc:
        raise ProbeError(
            f"{flag} {path}: cannot read it ({exc.strerror or exc.__class__.__name__})",
            hint="check the path",
        ) from None
    return data.decode("utf-8", errors="replace")


def _paths(value: Path | Sequence[Path] | None) -> list[Path]:
    if value is None:
        return []
    return [value] if isinstance(value, Path) else list(value)


def probe_files(
    *,
    rocminfo: Path | None = None,
    amd_smi: Path | Sequence[Path] | None = None,
    sysfs: Path | None = None,
    rocm_smi: Path | Sequence[Path] | None = None,
    agent_enumerator: Path | None = None,
    nvidia_smi: Path | Sequence[Path] | None = None,
    matrix: Matrix,
) -> Node:
    """The node described by saved outputs. ``sysfs`` is a root under which
    ``sys/class/kfd/kfd/topology``, ``sys/class/drm`` and ``sys/module/amdgpu`` are read as if it
    were ``/``, or a copy of ``/sys`` itself (``class/``, ``module/`` at its top), or a bare copy of
    ``/sys/class/kfd/kfd``.

    ``matrix`` is the data the caller loaded: its gfx records name the targets of PCI ids and
    products, its driver records pair module versions with releases. The probe (the node layer)
    does not load the data itself."""
    gfx_table = GfxTable.of(matrix.gfx)
    views: list[SourceView] = []
    names: list[str] = []
    if sysfs is not None:
        views.append(_sysfs_view(sysfs, gfx_table))
        names.append(f"sysfs:{sysfs}")
    for path in _paths(amd_smi):
        views.append(smi.parse_amd_smi(_read(path, "--amd-smi"), gfx_table=gfx_table))
        names.append(f"amd-smi:{path}")
    for path in _paths(rocm_smi):
        views.append(smi.parse_rocm_smi(_read(path, "--rocm-smi"), gfx_table=gfx_table))
        names.append(f"rocm-smi:{path}")
    if rocminfo is not None:
        views.append(rocminfo_mod.parse(_read(rocminfo, "--rocminfo"), gfx_table=gfx_table))
        names.append(f"rocminfo:{rocminfo}")
    if agent_enumerator is not None:
        views.append(enumerator.parse(_read(agent_enumerator, "--agent-enumerator")))
        names.append(f"rocm_agent_enumerator:{agent_enumerator}")
    readings = []
    for path in _paths(nvidia_smi):
        reading = nvidia_mod.parse(_read(path, "--nvidia-smi"))
        if reading is None:
            raise ProbeError(
                f"--nvidia-smi {path}: not an nvidia-smi output",
                hint="save `nvidia-smi -q -x`, `nvidia-smi --query-gpu=name,pci.bus_id,"
                "compute_cap,memory.total,driver_version --format=csv` or plain `nvidia-smi`",
            )
        readings.append(reading)
        names.append(f"nvidia-smi:{path}")
    said = nvidia_mod.merge(readings)
    if said is not None:
        nvidia_mod.fill_capabilities(said.gpus, _known_capability(matrix))
        views.append(SourceView(source="host", facts={"other_devices": said.gpus}))
    if not views:
        raise ProbeError(
            "no probe input given",
            hint="give --rocminfo FILE, --amd-smi FILE, --rocm-smi FILE, --agent-enumerator FILE, "
            "--nvidia-smi FILE or --sysfs ROOT",
        )
    views = _combine_same_source(views)
    node, problems = merge(views, origin="file:" + ",".join(names), gfx_table=gfx_table)
    if said is not None:
        node = replace(node, host={**node.host, "nvidia": said.host_facts()})
    if sysfs is not None:
        node = replace(
            node,
            host={
                **node.host,
                "driver_kind": next(
                    (v.facts.get("driver_kind") for v in views if v.source == "sysfs"), None
                ),
            },
        )
    return _finish(node, problems, matrix)


def _sysfs_view(root: Path, gfx_table: GfxTable) -> SourceView:
    if not root.is_dir():
        raise ProbeError(
            f"--sysfs {root}: no such directory",
            hint="give the directory that holds sys/class/kfd (use / for this machine)",
        )
    view = sysfs.parse(root, gfx_table=gfx_table)
    if not _found_anything(view) and _is_sys_copy(root):
        # a copy of /sys itself (ROOT/class/kfd, ROOT/class/drm, ROOT/module): read it as ROOT/sys
        import tempfile

        with tempfile.TemporaryDirectory(prefix="rocm-vllm-sysfs-") as scratch:
            (Path(scratch) / "sys").symlink_to(root.resolve(), target_is_directory=True)
            view = sysfs.parse(Path(scratch), gfx_table=gfx_table)
    copied = _plain_topology_copy(root)
    if not _found_anything(view) and copied is not None:
        # A copy of /sys/class/kfd/kfd (ROOT/topology/nodes) or of its topology/ (ROOT/nodes): read
        # it through a scratch root that puts it where the parser looks.
        import tempfile

        with tempfile.TemporaryDirectory(prefix="rocm-vllm-sysfs-") as scratch:
            kfd = Path(scratch) / "sys/class/kfd/kfd"
            kfd.mkdir(parents=True)
            (kfd / "topology").symlink_to(copied.resolve(), target_is_directory=True)
            view = sysfs.parse(Path(scratch), gfx_table=gfx_table)
    if not _found_anything(view):
        view.said("no-kfd-topology", root=root)
    return view


def _found_anything(view: SourceView) -> bool:
    return bool(view.facts.get("kfd_present") or view.facts.get("drm_present"))


def _is_sys_copy(root: Path) -> bool:
    """ROOT looks like /sys itself: its top holds class/ or module/ and no sys/."""
    return not (root / "sys").is_dir() and any(
        (root / name).is_dir() for name in ("class/kfd", "class/drm", "module/amdgpu", "devices")
    )


def _plain_topology_copy(root: Path) -> Path | None:
    """The directory to read as ``/sys/class/kfd/kfd/topology`` when ROOT is a bare copy of
    ``/sys/class/kfd/kfd`` (ROOT/topology/nodes) or of its ``topology/`` (ROOT/nodes)."""
    if (root / "topology/nodes").is_dir():
        return root / "topology"
    if (root / "nodes").is_dir():
        return root
    return None


def _combine_same_source(views: list[SourceView]) -> list[SourceView]:
    """Two amd-smi files (``static --asic`` and ``static --partition``) describe the same GPUs:
    fold later ones into the first one of the same source by position."""
    out: list[SourceView] = []
    for view in views:
        first = next((v for v in out if v.source == view.source), None)
        if first is None:
            out.append(view)
            continue
        if len(first.gpus) == len(view.gpus) or not first.gpus:
            if not first.gpus:
                first.gpus = view.gpus
            else:
                for mine, theirs in zip(first.gpus, view.gpus, strict=True):
                    for name in mine.__slots__:
                        if getattr(mine, name) is None:
                            setattr(mine, name, getattr(theirs, name))
            first.problems = [p for p in first.problems if not p.code.startswith("no-gpu-")] + [
                p for p in view.problems if not (p.code.startswith("no-gpu-") and first.gpus)
            ]
        else:
            out.append(view)
        first.driver_version = first.driver_version or view.driver_version
        first.rocm_version = first.rocm_version or view.rocm_version
    return out


def probe_live(
    *,
    root: Path = Path("/"),
    env: Mapping[str, str] | None = None,
    check_access: bool = True,
    run_tools: bool = True,
    matrix: Matrix,
) -> Node:
    """This machine (or the tree under ``root``): sysfs (KFD topology, DRM), and the output of
    ``rocm_agent_enumerator`` and ``rocm-smi --json`` when they are on PATH (``run_tools``). Without
    an AMD GPU: a node with no GPUs and problems saying why (no /dev/kfd, amdgpu not loaded, or the
    other vendor's GPU that is there instead). ``matrix`` as for ``probe_files``."""
    gfx_table = GfxTable.of(matrix.gfx)
    environ = dict(os.environ) if env is None else dict(env)
    facts = hostmod.gather(root, env=environ, check_access=check_access)
    view = sysfs.parse(root, gfx_table=gfx_table)
    views = [view]
    if run_tools:
        # The tools list every GPU (rocminfo would list only the visible ones); the report keeps
        # the visibility variables and the solver applies them.
        tool_env = {k: v for k, v in environ.items() if k not in VISIBLE_VARS}
        views.extend(_tool_views(tool_env, gfx_table))
    # NVIDIA's own tool where it is (product, compute capability, CUDA); else the signs the
    # kernel module leaves.
    said = nvidia_mod.read_live(environ) if run_tools else None
    nvidia = said.gpus if said is not None else hostmod.nvidia_devices(root)
    nvidia_mod.fill_capabilities(nvidia, _known_capability(matrix))
    if nvidia:
        views.append(SourceView(source="host", facts={"other_devices": nvidia}))
    node, problems = merge(views, origin="probe", env=environ, gfx_table=gfx_table)
    host = {**facts.host, **node.host}
    if said is not None:
        host["nvidia"] = said.host_facts()
    host["driver_kind"] = view.facts.get("driver_kind") or host.get("driver_kind")
    if view.facts.get("partition_inferred"):
        host["partition_inferred"] = True
    # The AMD GPU Driver release, read where it is (package, module version AMD pairs, tools).
    reading = driver_mod.read(
        root,
        environ,
        run_tools=run_tools,
        module_releases=functools.partial(driver_mod.module_release, matrix),
    )
    host["driver"] = reading.to_json()
    module = reading.module_version or node.driver_version
    if reading.release is not None:
        host["driver_release_source"] = reading.source
        host["driver_release_confidence"] = (
            "exact" if reading.package_version else driver_mod.pairing_confidence(matrix, module)
        )
    node = replace(
        node,
        os=facts.os,
        kernel=facts.kernel,
        glibc=facts.glibc,
        python=facts.python,
        rocm_version=facts.rocm_version,
        driver_version=reading.release or module,
        host=host,
        origin=Origin("probe"),
        visible_devices=facts.visible,
    )
    problems = facts.problems + problems
    if (
        node.gpus
        and host.get("numa_balancing") == 1
        and any(g.gfx in {"gfx942", "gfx950", "gfx90a"} for g in node.gpus)
    ):
        problems.append(Problem.said("numa-balancing-on"))
    if node.gpus and not any((host.get("container_engines") or {}).values()):
        problems.append(Problem.said("no-container-engine"))
    return _finish(node, problems, matrix)


def _known_capability(matrix: Matrix) -> Callable[[str | None, str | None], str | None]:
    """``nvidia-gpus.toml``'s compute capability of an NVIDIA GPU: by PCI device id, else by
    product name (the record's, or it and a variant: "NVIDIA H100 80GB HBM3",
    "NVIDIA A100-SXM4-80GB")."""

    def known(pci: str | None, name: str | None) -> str | None:
        record = matrix.nvidia_gpu(pci) if pci else None
        if record is not None:
            return record.compute_capability
        named = [
            g
            for g in matrix.nvidia_gpus
            if name and (name == g.name or name.startswith((g.name + " ", g.name + "-")))
        ]
        return max(named, key=lambda g: len(g.name)).compute_capability if named else None

    return known


def _tool_views(env: Mapping[str, str], gfx_table: GfxTable) -> list[SourceView]:
    """What the ROCm tools on PATH say (each is optional; a missing one says nothing)."""
    views = []
    listed = tools.run("rocm_agent_enumerator", [], env)
    if listed is not None and listed.strip():
        views.append(enumerator.parse(listed))
    smi_json = tools.run("rocm-smi", ["--showallinfo", "--json"], env)
    if smi_json is not None and smi_json.strip():
        views.append(smi.parse_rocm_smi(smi_json, gfx_table=gfx_table))
    return views


# Problems whose fixes load or install the AMD driver: wrong advice on a machine whose GPU is
# another vendor's.
_AMD_DRIVER_ADVICE = frozenset(
    {"amdgpu-not-loaded", "no-kfd", "kfd-missing", "no-gpu-agent-enumerator"}
)


def _not_amd(node: Node, problems: list[Problem]) -> list[Problem]:
    """No AMD GPU, but another accelerator: say what is there and what this tool resolves,
    instead of advice to load amdgpu."""
    others = _accelerators(node)
    if node.logical_gpu_count or not others:
        return problems
    found = ", ".join(_describe(d) for d in _group(others))
    kept = [
        p for p in problems if p.code not in _AMD_DRIVER_ADVICE and not p.code.startswith("no-gpu")
    ]
    vendors = {d.get("vendor") for d in others}
    if vendors == {"nvidia"}:
        # An NVIDIA node is a node (issue 38): planned from vLLM's CUDA builds, not a problem
        return kept
    w = words.say("not-an-amd-gpu/nvidia" if "nvidia" in vendors else "not-an-amd-gpu", found=found)
    hint = w.hint + (words.text("not-an-amd-gpu/hygon") if "hygon" in vendors else "")
    return [Problem(code="not-an-amd-gpu", message=w.message, hint=hint), *kept]


# Another vendor's compute GPU means the machine is not an AMD GPU node. An Intel display GPU
# does not: an AMD GPU whose driver is not loaded has no DRM card beside it, and the advice to
# load amdgpu stays.
_ACCELERATOR_VENDORS = frozenset({"nvidia", "hygon"})


def _accelerators(node: Node) -> list[dict[str, object]]:
    return [
        d for d in node.host.get("other_devices") or [] if d.get("vendor") in _ACCELERATOR_VENDORS
    ]


def _group(devices: list[dict[str, object]]) -> list[tuple[dict[str, object], int]]:
    groups: list[tuple[dict[str, object], int]] = []
    for device in devices:
        key = (device.get("vendor"), device.get("kind"), device.get("name"), device.get("gfx"))
        for index, (first, count) in enumerate(groups):
            if (first.get("vendor"), first.get("kind"), first.get("name"), first.get("gfx")) == key:
                groups[index] = (first, count + 1)
                break
        else:
            groups.append((device, 1))
    return groups


_VENDOR_NAMES = {"nvidia": "NVIDIA", "hygon": "Hygon", "intel": "Intel", "amd": "AMD"}


def _describe(group: tuple[dict[str, object], int]) -> str:
    device, count = group
    vendor = str(device.get("vendor") or "unknown-vendor")
    parts = [
        f"{count} x" if count > 1 else "an" if vendor in ("intel", "nvidia") else "a",
        _VENDOR_NAMES.get(vendor, vendor),
    ]
    parts.append(str(device.get("kind") or "GPU"))
    details = [str(v) for v in (device.get("name"), device.get("gfx")) if v]
    if device.get("compute_capability"):
        details.append(f"compute capability {device['compute_capability']}")
    if device.get("driver") and vendor == "nvidia":
        details.append(f"driver {device['driver']}")
    return " ".join(parts) + (f" ({', '.join(details)})" if details else "")


def _finish(node: Node, problems: list[Problem], matrix: Matrix) -> Node:
    problems = _not_amd(node, problems)
    nvidia = node.nvidia_gpus
    if nvidia and not node.gfx_targets and not node.logical_gpu_count:
        # An NVIDIA node counts its GPUs like any node (issue 38); they stay listed in
        # host.other_devices, whose entries say the vendor.
        count = min(len(nvidia), MAX_GPUS)
        node = replace(node, physical_gpu_count=count, logical_gpu_count=count)
    if (
        not node.gpus
        and not node.logical_gpu_count
        and not _accelerators(node)
        and not any(p.code == "no-gpu" for p in problems)
    ):
        reasons = [p.code for p in problems]
        problems = [
            *problems,
            Problem(
                code="no-gpu",
                message=words.text("no-gpu/because", codes=", ".join(reasons))
                if reasons
                else words.text("no-gpu"),
                hint=problems[0].hint if problems else words.say("no-gpu").hint,
            ),
        ]
    return driver_mod.release_of_module(replace(node, problems=tuple(problems)), matrix)


def confidence(node: Node) -> dict[str, str]:
    """How sure the probe is of each headline fact (``probe --json`` ``confidence``):
    ``gpu_count`` exact / at_least (a cut or filtered paste) / unknown; ``gfx_targets`` exact /
    disputed (sources name different targets) / unknown; ``driver_version`` exact (the package,
    or given) / inferred (a module version the data pairs only by inference) / unknown."""
    codes = {p.code for p in node.problems}
    count = "unknown" if not node.gpus else "at_least" if "partial-input" in codes else "exact"
    if not node.gfx_targets:
        targets = "unknown"
    else:
        targets = "disputed" if "sources-disagree" in codes else "exact"
    host = node.host or {}
    driver = "unknown"
    if node.driver_version:
        driver = str(host.get("driver_release_confidence") or "exact")
    return {"gpu_count": count, "gfx_targets": targets, "driver_version": driver}
