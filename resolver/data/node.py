"""The facts about one node that every command decides on.

``rocm-vllm probe --json`` writes this shape and ``--node FILE`` reads it back, so the JSON form is
a contract (schema in docs/probe.schema.json). Nodes also come from flags and ``--example NAME``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NoReturn, cast

import msgspec
from msgspec.structs import replace

from resolver.data.codes import PROBLEM_CODES, ProblemCode
from resolver.util import bounded
from resolver.util.errors import InputError
from resolver.util.versions import check_gfx_name, driver_series, python_minor, split_os

# More logical GPUs than any node has (8 MI300X in CPX mode are 64); guards memory and nonsense.
MAX_GPUS = 1024
MAX_NODE_FILE = 16 * bounded.MiB  # a probe JSON is a few KiB


class Problem(msgspec.Struct, frozen=True, kw_only=True):
    code: ProblemCode
    message: str
    hint: str

    @classmethod
    def said(cls, key: str, /, **values: object) -> Problem:
        """The problem as ``resolver.data.words`` words ``key`` (its code: the key's first part)."""
        from resolver.data import words

        w = words.say(key, **values)
        return cls(code=cast(ProblemCode, key.split("/")[0]), message=w.message, hint=w.hint)


class Partition(msgspec.Struct, frozen=True, kw_only=True):
    compute: str | None = None  # SPX, DPX, QPX, CPX
    memory: str | None = None  # NPS1, NPS2, NPS4


class Gpu(msgspec.Struct, frozen=True, kw_only=True):
    gfx: str
    product: str | None = None
    pci_device_id: str | None = None
    compute_units: int | None = None
    vram_bytes: int | None = None
    unique_id: str | None = None
    partition: Partition | None = None
    integrated: bool = False
    # When HSA_OVERRIDE_GFX_VERSION is set, gfx stays the physical target and this is what
    # the runtime loads code for.
    runtime_gfx: str | None = None
    xnack: bool | None = None
    sramecc: bool | None = None
    # Added by the probe: an APU shares system memory (counted only when no discrete GPU is
    # present; then ``integrated`` is false); the name libdrm printed, which is empty in containers
    # and generic for new cards (``product`` comes from the PCI id); the PCI address.
    apu: bool = False
    marketing_name: str | None = None
    pci_bdf: str | None = None


class Origin(str):
    """Where a node's facts came from, as it is printed and stored: ``flags``, ``probe``,
    ``stdin``, ``kubernetes``, ``srun:HOST``, ``example:NAME``, ``file:PATH`` (a probe JSON) or
    ``file:KIND:PATH,...`` (saved tool outputs). It is a string (JSON and text carry it as one)
    that also says which flags describe the same node to a follow-up command."""

    __slots__ = ()

    @property
    def kind(self) -> str:
        return self.partition(":")[0]

    @property
    def detail(self) -> str:
        return self.partition(":")[2]

    def flags(self) -> list[str] | None:
        """The flags that make a follow-up command read the same facts; None where none can (a
        live probe, saved outputs of several tools, flags alone: the caller spells the facts)."""
        if self.kind == "example":
            return ["--example", self.detail]
        if self.kind != "file":
            return None
        tool, _, path = self.detail.partition(":")
        if tool == "rocminfo" and "," not in path:
            return ["--rocminfo", path]
        if tool not in ("rocminfo", "amd-smi", "rocm-smi", "sysfs"):
            return ["--node", self.detail]
        return None


FLAGS = Origin("flags")  # a node described on the command line alone

# The groups that own /dev/kfd and /dev/dri/renderD* on AMD's packages (AMD's install guide:
# `usermod -a -G render,video`), and the probe problems membership in them cures.
GPU_GROUPS = ("render", "video")
ACCESS_PROBLEMS = frozenset({"not-in-gpu-group", "kfd-permission", "render-permission"})
# The variables that choose the GPUs a ROCm process sees, in the order the runtime applies them
# (HIP numbers what ROCr left visible; CUDA_VISIBLE_DEVICES is HIP's alias).
VISIBLE_VARS = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
_VISIBLE_TOKEN = r"(?:[0-9]{1,4}|GPU-[0-9A-Fa-f][0-9A-Fa-f-]{0,47})"
VISIBLE_FORM = rf"^(?:{_VISIBLE_TOKEN}(?:,{_VISIBLE_TOKEN}){{0,{MAX_GPUS - 1}}})?\Z"


def visible_ok(value: str) -> bool:
    """A visibility variable's value as the runtimes take it: empty (no GPU), or GPU indices and
    ``GPU-<uuid>`` forms separated by commas."""
    import re

    from resolver.util.safety import MAX_TEXT  # the bound of every string a report holds

    return len(value) <= MAX_TEXT and re.match(VISIBLE_FORM, value) is not None


def _select(seen: list[int], mask: str, gpus: tuple[Gpu, ...]) -> list[int] | None:
    """The entries of ``seen`` that ``mask`` names, in its order. As HIP and CUDA read it, the
    list ends at the first entry that names no device; None when a UUID cannot be matched
    because the GPUs carry none."""
    out: list[int] = []
    for token in mask.split(",") if mask else ():
        if token.isdigit():
            pick = seen[int(token)] if int(token) < len(seen) else None
        elif not any(gpus[i].unique_id for i in seen if i < len(gpus)):
            return None
        else:
            want = token[4:].lower()
            pick = next(
                (
                    i
                    for i in seen
                    if i < len(gpus) and (gpus[i].unique_id or "").lower() == want and i not in out
                ),
                None,
            )
        if pick is None or pick in out:
            break
        out.append(pick)
    return out


def _origin_text(value: object) -> str:
    if isinstance(value, Origin):
        return str(value)
    raise TypeError(f"a node holds a {type(value).__name__}")  # a bug: nodes hold JSON values


class Node(msgspec.Struct, frozen=True, kw_only=True):
    gpus: tuple[Gpu, ...] = ()
    gfx_targets: tuple[str, ...] = ()
    physical_gpu_count: int = 0
    logical_gpu_count: int = 0
    hsa_override_gfx_version: str | None = None
    rocm_version: str | None = None
    driver_version: str | None = None
    os: str | None = None  # "ubuntu-22.04"
    kernel: str | None = None
    glibc: str | None = None
    python: str | None = None
    problems: tuple[Problem, ...] = ()
    host: dict[str, Any] = msgspec.field(
        default_factory=dict
    )  # extra live-probe facts (groups, numa, ...)
    origin: Origin = FLAGS
    # Command-line flags laid over a file, example or probe, e.g. (("--gpus", "2"),): follow-up
    # commands repeat them so they decide for the same node.
    overrides: tuple[tuple[str, str], ...] = ()
    # The GPU visibility variables set where the probe ran (VISIBLE_VARS -> value, each checked by
    # ``visible_ok``): they decide which GPUs a vLLM started from that environment sees.
    visible_devices: dict[str, str] = msgspec.field(default_factory=dict)

    @property
    def gpu_vendor(self) -> str | None:
        """Whose GPUs the node's counts are: "amd", "nvidia" (no AMD GPU, NVIDIA ones in
        ``host.other_devices``), or None (no GPU)."""
        if self.gfx_targets or self.gpus:
            return "amd"
        if self.nvidia_gpus:
            return "nvidia"
        return "amd" if self.logical_gpu_count else None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self, enc_hook=_origin_text)
        data["gpu_vendor"] = self.gpu_vendor  # derived: stated so no reader infers it
        overrides = data.pop("overrides")
        if overrides:  # not a probe fact: only a node assembled from flags on top of one has it
            data["overrides"] = dict(overrides)
        if not data["visible_devices"]:  # set only where a variable was: reports stay as they were
            del data["visible_devices"]
        return data

    def with_overrides(self, **changes: Any) -> Node:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def visible_gpus(self) -> tuple[int, ...] | None:
        """The indices (into ``gpus``) of the GPUs a process started in the recorded environment
        sees: ROCR_VISIBLE_DEVICES picks among every GPU agent, then HIP_VISIBLE_DEVICES (or
        CUDA_VISIBLE_DEVICES, HIP's alias, when HIP's is unset) among those. None: no variable
        is set, or one names a GPU UUID the node's GPUs do not say."""
        rocr = self.visible_devices.get("ROCR_VISIBLE_DEVICES")
        hip = self.visible_devices.get(
            "HIP_VISIBLE_DEVICES", self.visible_devices.get("CUDA_VISIBLE_DEVICES")
        )
        if rocr is None and hip is None:
            return None
        seen: list[int] | None = list(range(len(self.gpus) or self.logical_gpu_count))
        for mask in (rocr, hip):
            if mask is not None and seen is not None:
                seen = _select(seen, mask, self.gpus)
        return None if seen is None else tuple(seen)

    @property
    def visible_gpu_count(self) -> int:
        """The GPUs vLLM can use here: the visible ones where a variable hides some, else the
        logical count."""
        visible = self.visible_gpus()
        return self.logical_gpu_count if visible is None else len(visible)

    def with_gpu_groups(self) -> Node:
        """The node with its user in the render and video groups (the what-if search's change):
        the device permission problems that membership cures are gone."""
        host = dict(self.host) if isinstance(self.host, dict) else {}
        groups = host.get("groups")
        listed = [g for g in groups if isinstance(g, str)] if isinstance(groups, list) else []
        host["groups"] = sorted({*listed, *GPU_GROUPS})
        kfd = host.get("kfd")
        if isinstance(kfd, dict) and kfd.get("openable") is False:
            host["kfd"] = {**kfd, "openable": None, "error": None}
        problems = tuple(p for p in self.problems if p.code not in ACCESS_PROBLEMS)
        return replace(self, host=host, problems=problems)

    def on_native_linux(self) -> Node:
        """The node as a native Linux host instead of WSL (the what-if search's change); its
        kernel is then not known."""
        host = dict(self.host) if isinstance(self.host, dict) else {}
        host["wsl"] = False
        problems = tuple(p for p in self.problems if p.code != "wsl")
        return replace(self, host=host, problems=problems, kernel=None)

    def with_gpu_memory(self, size: int) -> Node:
        """The node with each GPU reporting ``size`` bytes (an APU whose GTT limit is raised)."""
        return replace(self, gpus=tuple(replace(g, vram_bytes=size) for g in self.gpus))

    def with_gpu_count(self, count: int) -> Node:
        """The node with ``count`` GPUs of the kind it has (the what-if search's "more GPUs" for
        a model that does not fit): its first GPU repeated, or its first NVIDIA GPU."""
        count = max(1, min(count, MAX_GPUS))
        gpus = tuple(self.gpus[i % len(self.gpus)] for i in range(count)) if self.gpus else ()
        host = self.host
        if not self.gpus and self.nvidia_gpus:
            host = dict(self.host)
            others = [d for d in host.get("other_devices") or [] if d not in self.nvidia_gpus]
            first = self.nvidia_gpus[0]
            host["other_devices"] = [*others, *([first] * count)]
        return replace(
            self, gpus=gpus, host=host, physical_gpu_count=count, logical_gpu_count=count
        )

    @property
    def nvidia_gpus(self) -> list[dict[str, Any]]:
        """The node's NVIDIA GPUs as the probe listed them (``host.other_devices``: product,
        compute capability, PCI ids, memory, MIG mode, driver)."""
        devices = self.host.get("other_devices") if isinstance(self.host, dict) else None
        if not isinstance(devices, list):
            return []
        return [
            d
            for d in devices
            if isinstance(d, dict) and d.get("vendor") == "nvidia" and d.get("kind", "GPU") == "GPU"
        ]

    def with_nvidia_driver(self, branch: str) -> Node:
        """The node with its NVIDIA driver moved to ``branch`` (the what-if search's change)."""
        host = dict(self.host) if isinstance(self.host, dict) else {}
        nv = dict(host.get("nvidia") or {})
        nv["driver"] = f"{branch}.0"
        host["nvidia"] = nv
        devices = host.get("other_devices")
        if isinstance(devices, list):
            host["other_devices"] = [
                {**d, "driver": nv["driver"]}
                if isinstance(d, dict) and d.get("vendor") == "nvidia"
                else d
                for d in devices
            ]
        return replace(self, host=host)

    @property
    def nvidia_driver(self) -> str | None:
        """The NVIDIA driver version the probe read ("580.159.04"), or None."""
        nv = self.host.get("nvidia") if isinstance(self.host, dict) else None
        driver = nv.get("driver") if isinstance(nv, dict) else None
        if not isinstance(driver, str):
            gpus = self.nvidia_gpus
            driver = gpus[0].get("driver") if gpus else None
        return driver if isinstance(driver, str) and driver else None


def from_flags(
    *,
    gfx: str | None,
    gpus: int | None,
    driver: str | None,
    os: str | None,
    rocm: str | None,
    python: str | None,
) -> Node:
    """A node described on the command line: checks each value and fails with a hint."""
    targets: tuple[str, ...] = ()
    if gfx:
        targets = tuple(sorted({check_gfx_name(t) for t in gfx.split(",") if t.strip()}))
    if gpus is not None and gpus < 1:
        raise InputError(
            f"--gpus {gpus} must be at least 1", hint="give the number of GPUs vLLM may use"
        )
    if gpus is not None and gpus > MAX_GPUS:
        raise InputError(
            f"--gpus {gpus} is more GPUs than one node holds",
            hint=f"give the GPUs of one node (at most {MAX_GPUS}); vLLM is decided per node",
        )
    count = gpus if gpus is not None else (len(targets) if targets else 0)
    if driver is not None:
        driver_series(driver)
    if os is not None:
        family, version = split_os(os)
        os = f"{family}-{version}"
    if rocm is not None:
        from resolver.util.versions import parse_version

        parse_version(rocm, what="--rocm")
    if python is not None:
        python = python_minor(python)
    gpu_list = tuple(Gpu(gfx=targets[i % len(targets)]) for i in range(count)) if targets else ()
    return Node(
        gpus=gpu_list,
        gfx_targets=targets,
        physical_gpu_count=count,
        logical_gpu_count=count,
        rocm_version=rocm,
        driver_version=driver,
        os=os,
        python=python,
        origin=FLAGS,
    )


# strings, not compiled: the check path rarely meets them (re caches them on first use)
_CC = r"[0-9]{1,2}\.[0-9]"
_NVIDIA_DRIVER = r"[0-9]{3,4}(\.[0-9]{1,3}){0,2}"


def from_nvidia_flags(
    *, name: str | None, cc: str | None, gpus: int | None, driver: str | None
) -> Node:
    """An NVIDIA node described on the command line (issue 38): ``gpus`` GPUs (default 1) named
    ``name`` with compute capability ``cc`` (None: unknown, so no arch list is checked and the
    answer is unknown) on NVIDIA driver ``driver``; the same shape the probe gives
    (``host.other_devices`` and ``host.nvidia``). Each value is checked and fails with a hint."""
    if cc is not None and not re.fullmatch(_CC, cc):
        raise InputError(
            f"--cc {cc!r} is not a CUDA compute capability",
            hint="give it as MAJOR.MINOR, e.g. --cc 9.0 (nvidia-smi --query-gpu=compute_cap "
            "--format=csv prints it)",
        )
    if driver is not None and not re.fullmatch(_NVIDIA_DRIVER, driver):
        raise InputError(
            f"--nvidia-driver {driver!r} is not an NVIDIA driver version",
            hint="give it as nvidia-smi prints it, e.g. --nvidia-driver 580.159.04 (or its "
            "branch, 580)",
        )
    count = 1 if gpus is None else gpus
    if not 1 <= count <= MAX_GPUS:
        raise InputError(
            f"--gpus {count} is not a GPU count of one node",
            hint=f"give the GPUs of one node (1 to {MAX_GPUS})",
        )
    gpu = {
        "vendor": "nvidia",
        "kind": "GPU",
        "gfx": None,
        "name": name or "NVIDIA GPU",
        "pci_device_id": None,
        "compute_capability": cc,
        "compute_capability_source": "flags" if cc else None,
        "driver": driver,
    }
    host = {
        "other_devices": [dict(gpu) for _ in range(count)],
        "nvidia": {"driver": driver, "cuda": None, "sources": ["flags"]},
    }
    return Node(host=host, origin=FLAGS, physical_gpu_count=count, logical_gpu_count=count)


def _opt(data: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise InputError(
            f"{where}: '{key}' must be {kind.__name__}, not {type(value).__name__}",
            hint="write the file with `rocm-vllm probe --json > node.json` on the target node",
        )
    return value


# Each string fact of a report and the pattern it must match (resolver.util.safety), or the parser
# that normalises it: a report is a file anyone can write, and these values reach printed
# commands, batch scripts, manifests and file names.
_PARTITION_COMPUTE = ("SPX", "DPX", "TPX", "QPX", "CPX")
_PARTITION_MEMORY = ("NPS1", "NPS2", "NPS4", "NPS8")


def _fact(data: dict[str, Any], key: str, kind: str, where: str) -> str | None:
    """A string fact checked against its pattern (``os`` and ``python`` are also normalised)."""
    from resolver.util.safety import is_safe, unsafe_char

    value: str | None = _opt(data, key, str, where)
    if value is None:
        return None
    ok = True
    try:
        if kind == "os":
            family, version = split_os(value)
            ok, value = value == value.strip(), f"{family}-{version}"
        elif kind == "python":
            ok, value = value == value.strip(), python_minor(value)
        elif kind == "gfx":
            ok, value = is_safe("gfx", value.lower()), check_gfx_name(value)
        elif kind in ("compute", "memory"):
            ok = value in (_PARTITION_COMPUTE if kind == "compute" else _PARTITION_MEMORY)
        elif kind == "text":
            ok = len(value) <= 256 and unsafe_char(value) is None
        else:
            ok = is_safe(kind, value)
    except InputError:
        ok = False
    if not ok:
        _refuse(key, data[key], where)
    return value


def _refuse(key: str, value: str, where: str) -> NoReturn:
    from resolver.util.safety import shown

    raise InputError(
        f"{where}: '{key}' is {shown(value, limit=80)}, not a value a probe writes",
        hint="write the file with `rocm-vllm probe --json > node.json` on the target node",
    )


def from_json(data: Any, *, where: str, origin: str | None = None) -> Node:
    """Read the JSON that ``probe --json`` writes; any shape error, and any value that does not
    match its pattern, is an ``InputError`` (``origin`` defaults to ``file:WHERE``)."""
    if not isinstance(data, dict):
        raise InputError(
            f"{where}: not a probe JSON object", hint="write it with `rocm-vllm probe --json`"
        )
    from resolver.util.safety import check_tree

    check_tree(data, where=where)
    gpus = []
    for i, g in enumerate(_opt(data, "gpus", list, where) or []):
        if not isinstance(g, dict) or not isinstance(g.get("gfx"), str):
            raise InputError(
                f"{where}: gpus[{i}] has no 'gfx'", hint="write it with `rocm-vllm probe --json`"
            )
        part = g.get("partition")
        at = f"{where}: gpus[{i}]"
        gpus.append(
            Gpu(
                gfx=check_gfx_name(g["gfx"]),
                product=_fact(g, "product", "text", at),
                pci_device_id=_fact(g, "pci_device_id", "pci_id", at),
                compute_units=_count(g, "compute_units", at),
                vram_bytes=_opt(g, "vram_bytes", int, at),
                unique_id=_fact(g, "unique_id", "unique_id", at),
                partition=Partition(
                    compute=_fact(part, "compute", "compute", at),
                    memory=_fact(part, "memory", "memory", at),
                )
                if isinstance(part, dict)
                else None,
                integrated=bool(g.get("integrated", False)),
                runtime_gfx=_fact(g, "runtime_gfx", "gfx", at),
                xnack=_opt(g, "xnack", bool, at),
                sramecc=_opt(g, "sramecc", bool, at),
                apu=bool(g.get("apu", False)),
                marketing_name=_fact(g, "marketing_name", "text", at),
                pci_bdf=_fact(g, "pci_bdf", "pci_bdf", at),
            )
        )
    targets = _opt(data, "gfx_targets", list, where)
    if targets is None:
        targets = sorted({g.gfx for g in gpus if not g.integrated})
    problems = []
    for p in _opt(data, "problems", list, where) or []:
        if isinstance(p, dict) and all(
            isinstance(p.get(k), str) for k in ("code", "message", "hint")
        ):
            code, message = p["code"], p["message"]
            if code not in PROBLEM_CODES:  # a newer tool's code: kept in words, typed here
                code, message = "probe-reported", f"{message} (reported as {code})"
            problems.append(Problem(code=cast(ProblemCode, code), message=message, hint=p["hint"]))
    os_id = _fact(data, "os", "os", where)
    gfx_targets = tuple(check_gfx_name(t) for t in targets if isinstance(t, str))
    listed = {g.gfx for g in gpus}
    if gpus and not set(gfx_targets) <= listed:
        raise InputError(
            f"{where}: gfx_targets {', '.join(gfx_targets)} disagree with the GPUs listed "
            f"({', '.join(sorted(listed))})",
            hint="write the file with `rocm-vllm probe --json > node.json`, or fix gfx_targets by "
            "hand",
        )
    counts = {
        k: _opt(data, k, int, where) or 0 for k in ("physical_gpu_count", "logical_gpu_count")
    }
    for key, value in counts.items():
        if not 0 <= value <= MAX_GPUS:
            raise InputError(
                f"{where}: '{key}' is {value}", hint=f"a node has 0 to {MAX_GPUS} GPUs"
            )
    host = _opt(data, "host", dict, where) or {}
    visible = _visible(data, where)
    if not gpus and not any(counts.values()):
        # A report written before issue 38 counts an NVIDIA node's GPUs as 0: count them.
        nvidia = [
            d
            for d in host.get("other_devices") or []
            if isinstance(d, dict) and d.get("vendor") == "nvidia" and d.get("kind", "GPU") == "GPU"
        ]
        counts = dict.fromkeys(counts, min(len(nvidia), MAX_GPUS))
        hygon = any(
            isinstance(d, dict) and d.get("vendor") == "hygon"
            for d in host.get("other_devices") or []
        )
        if nvidia and not hygon:  # nor calls it a problem: check plans it (a DCU's stays)
            problems = [p for p in problems if p.code != "not-an-amd-gpu"]
    if host.get("amdgpu_module_version") is not None:
        _fact(host, "amdgpu_module_version", "version", f"{where}: host")
    return Node(
        gpus=tuple(gpus),
        gfx_targets=gfx_targets,
        physical_gpu_count=counts["physical_gpu_count"],
        logical_gpu_count=counts["logical_gpu_count"],
        hsa_override_gfx_version=_fact(data, "hsa_override_gfx_version", "gfx_override", where),
        rocm_version=_fact(data, "rocm_version", "version", where),
        driver_version=_fact(data, "driver_version", "version", where),
        os=os_id,
        kernel=_fact(data, "kernel", "kernel", where),
        glibc=_fact(data, "glibc", "version", where),
        python=_fact(data, "python", "python", where),
        problems=tuple(problems),
        host=host,
        origin=Origin(origin or f"file:{where}"),
        visible_devices=visible,
    )


def _visible(data: dict[str, Any], where: str) -> dict[str, str]:
    """``visible_devices``: only the visibility variables, each value in a form the runtimes
    take (a report is a file anyone can write, and these values reach run commands)."""
    given = _opt(data, "visible_devices", dict, where) or {}
    out: dict[str, str] = {}
    for key, value in given.items():
        if key not in VISIBLE_VARS:
            _refuse("visible_devices", str(key), where)
        if not isinstance(value, str) or not visible_ok(value):
            _refuse(key, str(value), where)
        out[key] = value
    return out


def _count(data: dict[str, Any], key: str, where: str) -> int | None:
    value = _opt(data, key, int, where)
    if value is not None and not 0 <= value <= 1_000_000:
        raise InputError(
            f"{where}: '{key}' is {value}", hint="write it with `rocm-vllm probe --json`"
        )
    return None if value is None else int(value)


def read_node_file(path: Path) -> Node:
    """``--node FILE``; ``-`` reads the report from standard input (``probe --json | check
    --node -``), with the same size cap."""
    if str(path) == "-":
        try:
            text = bounded.read_stdin(MAX_NODE_FILE).decode("utf-8")
        except bounded.TooLargeError:
            raise InputError(
                "--node -: more than 16 MiB on standard input",
                hint="pipe the output of `rocm-vllm probe --json`",
            ) from None
        except UnicodeDecodeError:
            raise InputError(
                "--node -: standard input is not UTF-8 text",
                hint="pipe the output of `rocm-vllm probe --json`",
            ) from None
        return _parse_node_text(text, "-", where="stdin")
    try:
        text = bounded.read_text(path, MAX_NODE_FILE)
    except FileNotFoundError:
        raise InputError(
            f"--node {path}: no such file",
            hint="write it with `rocm-vllm probe --json > node.json`",
        ) from None
    except UnicodeDecodeError:
        raise InputError(
            f"--node {path}: not UTF-8 text",
            hint="write it with `rocm-vllm probe --json > node.json`",
        ) from None
    except OSError as exc:
        raise InputError(
            f"--node {path}: cannot read it ({exc.strerror or exc.__class__.__name__})",
            hint="check the path and its permissions",
        ) from None
    return _parse_node_text(text, str(path), where=str(path))


def _parse_node_text(text: str, shown: str, *, where: str) -> Node:
    try:
        data = bounded.loads_json(text)
    except ValueError as exc:
        raise InputError(
            f"--node {shown}: {bounded.json_failure(exc, 'a probe JSON file')}",
            hint="write it with `rocm-vllm probe --json > node.json`",
        ) from None
    # A report read from stdin has no file a follow-up command could name: it is described by
    # its facts (origin "stdin").
    return from_json(data, where=where, origin="stdin" if shown == "-" else None)


def merge_flags(base: Node, flag_node: Node, flags: dict[str, Any]) -> Node:
    """Flags given on the command line win over what a file, example or probe said."""
    changes: dict[str, Any] = {
        "driver_version": flag_node.driver_version,
        "os": flag_node.os,
        "rocm_version": flag_node.rocm_version,
        "python": flag_node.python,
    }
    if flags.get("gfx"):
        # Another GPU type on the same node: keep its GPU count unless --gpus says otherwise.
        count = flags.get("gpus") or base.logical_gpu_count or len(flag_node.gfx_targets)
        targets = flag_node.gfx_targets
        changes.update(
            gpus=tuple(Gpu(gfx=targets[i % len(targets)]) for i in range(count)),
            gfx_targets=targets,
        )
        changes.update(
            physical_gpu_count=flags.get("gpus") or base.physical_gpu_count or count,
            logical_gpu_count=count,
        )
    elif flags.get("gpus") is not None:
        changes.update(logical_gpu_count=flags["gpus"])
    names = {
        "gfx": "--gfx",
        "gpus": "--gpus",
        "driver": "--driver",
        "os": "--os",
        "rocm": "--rocm",
        "python": "--python",
    }
    given = tuple((names[k], str(v)) for k, v in flags.items() if v is not None and k in names)
    merged = base.with_overrides(**changes)
    if (
        flag_node.driver_version
    ):  # --driver answers what the probe could not read: no "pass --driver" left
        merged = replace(
            merged, problems=tuple(p for p in merged.problems if p.code != "driver-release-unknown")
        )
    return replace(merged, overrides=given)
