"""Node facts from rocminfo, amd-smi, rocm-smi and the KFD sysfs topology.

``probe_files`` reads saved outputs (and a sysfs copy); ``probe_live`` reads this machine. Both
return a ``resolver.node.Node``; nothing here raises for bad *content*: garbage yields zero GPUs
and a problem. Only an input that cannot be read at all is a ``ProbeError``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from resolver.errors import ProbeError
from resolver.node import Node, Problem
from resolver.probe import host as hostmod
from resolver.probe import rocminfo as rocminfo_mod
from resolver.probe import smi, sysfs
from resolver.probe.facts import SourceView
from resolver.probe.merge import merge

__all__ = ["probe_files", "probe_live"]

_MAX_INPUT = 64 * 1024 * 1024


def _read(path: Path, flag: str) -> str:
    try:
        if path.is_dir():
            raise ProbeError(
                f"{flag} {path}: is a directory, not a file",
                hint=f"give {flag} the saved output file",
            )
        with path.open("rb") as handle:
            data = handle.read(_MAX_INPUT + 1)
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
    if len(data) > _MAX_INPUT:
        raise ProbeError(
            f"{flag} {path}: larger than 64 MiB, not a tool output",
            hint=f"give {flag} the saved output file",
        )
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
) -> Node:
    """The node described by saved outputs. ``sysfs`` is a root under which
    ``sys/class/kfd/kfd/topology`` and ``sys/module/amdgpu`` are read as if it were ``/``."""
    views: list[SourceView] = []
    names: list[str] = []
    if sysfs is not None:
        views.append(_sysfs_view(sysfs))
        names.append(f"sysfs:{sysfs}")
    for path in _paths(amd_smi):
        views.append(smi.parse_amd_smi(_read(path, "--amd-smi")))
        names.append(f"amd-smi:{path}")
    for path in _paths(rocm_smi):
        views.append(smi.parse_rocm_smi(_read(path, "--rocm-smi")))
        names.append(f"rocm-smi:{path}")
    if rocminfo is not None:
        views.append(rocminfo_mod.parse(_read(rocminfo, "--rocminfo")))
        names.append(f"rocminfo:{rocminfo}")
    if not views:
        raise ProbeError(
            "no probe input given",
            hint="give --rocminfo FILE, --amd-smi FILE, --rocm-smi FILE or --sysfs ROOT",
        )
    views = _combine_same_source(views)
    node, problems = merge(views, origin="file:" + ",".join(names))
    if sysfs is not None:
        node = replace(
            node,
            host={
                "driver_kind": next(
                    (v.facts.get("driver_kind") for v in views if v.source == "sysfs"), None
                )
            },
        )
    return _finish(node, problems)


def _sysfs_view(root: Path) -> SourceView:
    if not root.is_dir():
        raise ProbeError(
            f"--sysfs {root}: no such directory",
            hint="give the directory that holds sys/class/kfd (use / for this machine)",
        )
    view = sysfs.parse(root)
    copied = _plain_topology_copy(root)
    if not view.facts.get("kfd_present") and copied is not None:
        # A copy of /sys/class/kfd/kfd (ROOT/topology/nodes) or of its topology/ (ROOT/nodes): read
        # it through a scratch root that puts it where the parser looks.
        import tempfile

        with tempfile.TemporaryDirectory(prefix="rocm-vllm-sysfs-") as scratch:
            kfd = Path(scratch) / "sys/class/kfd/kfd"
            kfd.mkdir(parents=True)
            (kfd / "topology").symlink_to(copied.resolve(), target_is_directory=True)
            view = sysfs.parse(Path(scratch))
    if not view.facts.get("kfd_present"):
        view.problem(
            "no-kfd-topology",
            f"--sysfs {root}: no KFD topology under {root}/sys/class/kfd/kfd/topology/nodes",
            "copy /sys/class/kfd/kfd/topology from the node (cp -rL), keeping the sys/class/kfd/kfd path",
        )
    return view


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
    *, root: Path = Path("/"), env: Mapping[str, str] | None = None, check_access: bool = True
) -> Node:
    """This machine (or the tree under ``root``). Without an AMD GPU: a node with no GPUs and
    problems saying why (no /dev/kfd, amdgpu not loaded)."""
    environ = dict(os.environ) if env is None else dict(env)
    facts = hostmod.gather(root, env=environ, check_access=check_access)
    view = sysfs.parse(root)
    node, problems = merge([view], origin="probe", env=environ)
    host = dict(facts.host)
    host["driver_kind"] = view.facts.get("driver_kind") or host.get("driver_kind")
    if view.facts.get("partition_inferred"):
        host["partition_inferred"] = True
    node = replace(
        node,
        os=facts.os,
        kernel=facts.kernel,
        glibc=facts.glibc,
        python=facts.python,
        rocm_version=facts.rocm_version,
        driver_version=node.driver_version,
        host=host,
        origin="probe",
    )
    problems = facts.problems + problems
    if (
        node.gpus
        and host.get("numa_balancing") == 1
        and any(g.gfx in {"gfx942", "gfx950", "gfx90a"} for g in node.gpus)
    ):
        problems.append(
            Problem(
                code="numa-balancing-on",
                message="kernel.numa_balancing is 1 (AMD's Instinct tuning guides ask for it off)",
                hint="sudo sysctl kernel.numa_balancing=0 (persist it in /etc/sysctl.d/)",
            )
        )
    if node.gpus and not any((host.get("container_engines") or {}).values()):
        problems.append(
            Problem(
                code="no-container-engine",
                message="no Docker or Podman daemon answers on this machine: the image path cannot run here",
                hint="install Docker Engine and start it (`sudo systemctl enable --now docker`), or use the source build",
            )
        )
    return _finish(node, problems)


def _finish(node: Node, problems: list[Problem]) -> Node:
    if not node.gpus and not any(p.code == "no-gpu" for p in problems):
        reasons = [p.code for p in problems]
        problems = [
            *problems,
            Problem(
                code="no-gpu",
                message="no AMD GPU found" + (f" ({', '.join(reasons)})" if reasons else ""),
                hint=problems[0].hint
                if problems
                else "run the probe on the GPU node, or describe it with --gfx/--gpus",
            ),
        ]
    return _module_version_is_not_a_release(replace(node, problems=tuple(problems)))


def _module_version_is_not_a_release(node: Node) -> Node:
    """Tools report the amdgpu kernel module's own version (``/sys/module/amdgpu/version``,
    rocminfo's "ROCk module version", amd-smi's driver version), e.g. 6.16.6. AMD's
    driver/user-space table speaks of AMD GPU Driver releases (30.30.3, 6.4.x), and no AMD table
    maps one to the other, so the module version is kept as a host fact and ``driver_version``
    (the release every decision uses) stays unknown until the user gives ``--driver``."""
    module = node.driver_version
    if module is None:
        return node
    host = {**node.host, "amdgpu_module_version": module}
    problems = list(node.problems)
    if node.gpus:
        problems.append(
            Problem(
                code="driver-release-unknown",
                message=f"the amdgpu kernel module reports version {module}, which is not an AMD GPU Driver "
                "release number; which ROCm user space it runs cannot be read from it",
                hint="pass the release you installed to check/image/dockerfile, e.g. --driver 30.30.3 "
                "(the amdgpu-install version)",
            )
        )
    return replace(node, driver_version=None, host=host, problems=tuple(problems))
