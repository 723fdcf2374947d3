"""Apptainer / Singularity: the run command and a ``.def`` file for a chosen image.

HPC sites rarely allow Docker; Apptainer (and SingularityCE, which reads the same syntax) runs
OCI images from a registry with the ``docker://`` transport. Following Apptainer's user guide:

* ``apptainer exec [options] docker://IMAGE vllm serve ...`` runs vLLM. Without ``--contain``
  Apptainer mounts the host's ``/dev``, so ``/dev/kfd`` and ``/dev/dri`` are there, and the
  process keeps the user's own groups (video/render): no device or group flags are needed. The
  host network is shared (``--port`` is the host port); ``--ipc`` does not exist because the IPC
  namespace is the host's.
* ``--rocm`` is not used: it binds the host's ROCm libraries into the container, which would
  override the ROCm the image was built with.
* ``--env KEY=VALUE`` sets the serving env; ``--bind SRC:DST`` mounts the model cache;
  ``--writable-tmpfs`` lets vLLM and Triton write their caches inside the image.
* A definition file starts with a header (``Bootstrap: docker`` and ``From: IMAGE``), then
  ``%labels``, ``%environment``, ``%runscript`` and ``%help`` sections; ``apptainer build
  vllm.sif vllm.def`` builds it and ``apptainer run vllm.sif [MODEL] ...`` serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from resolver.artifacts.runcmd import (
    REPLICA_DEVICE,
    REPLICA_PORT,
    RunSpec,
    model_args,
    visible_devices_var,
)
from resolver.util import shell

CONTAINER_HF_CACHE = "/hf-cache"


@dataclass(frozen=True, slots=True)
class ApptainerRun:
    args: tuple[str, ...]
    command: str

    def to_json(self) -> dict[str, object]:
        return {
            "format": "apptainer",
            "run_command": self.command,
            "run_args": list(self.args),
            "compose": None,
        }


def oci_ref(image: str) -> str:
    """``repo:tag@sha256:...`` -> ``repo@sha256:...``: Apptainer's docker:// transport takes a
    tag or a digest, not both."""
    if "@" in image:
        name, digest = image.split("@", 1)
        last = name.rsplit("/", 1)[-1]
        if ":" in last:
            name = name[: len(name) - len(last)] + last.split(":", 1)[0]
        return f"{name}@{digest}"
    return image


def sif_name(image: str) -> str:
    """The file a batch script pulls ``image`` into, named by its whole reference (registry,
    repository, tag and digest), so that a SIF is reused only for the image it holds: a later
    plan from the same directory pulls its own image, and two groups of one image share one
    file. ``/`` becomes ``+`` and ``:`` ``=`` (neither is a reference character, so two
    references never share a name); the rest of a checked reference is already a safe word."""
    return image.replace("/", "+").replace(":", "=") + ".sif"


def _env(spec: RunSpec) -> list[str]:
    env = [f"HF_HOME={CONTAINER_HF_CACHE}"]
    visible = visible_devices_var(spec)
    if spec.per_replica:
        env.append(shell.Expansion(f"{visible}={REPLICA_DEVICE}"))
    elif spec.devices:
        env.append(f"{visible}=" + ",".join(str(d) for d in spec.devices))
    env += [
        f"{k}={v}"
        for k, v in spec.env
        if k not in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
    ]
    return env


def _serve(spec: RunSpec) -> list[str]:
    args = ["vllm", "serve", *model_args(spec)]
    args += ["--port", shell.Expansion(REPLICA_PORT) if spec.per_replica else str(spec.port)]
    return args + list(spec.extra_args)


def words(spec: RunSpec, *, binary: str = "apptainer", image: str | None = None) -> list[str]:
    """``apptainer exec`` for the spec, ``~`` left for the shell (HF_TOKEN passes through from
    the caller's environment: Apptainer keeps the host environment unless --cleanenv).
    ``image`` replaces ``docker://IMAGE`` (a batch script's SIF, pulled once)."""
    out = [binary, "exec", "--writable-tmpfs", "--bind", f"{spec.hf_cache}:{CONTAINER_HF_CACHE}"]
    if spec.model_mount is not None:  # a local model, at the path `vllm serve` is given
        out += ["--bind", f"{spec.model_mount}:{spec.model_mount}:ro"]
    if spec.vendor == "nvidia":  # the host's NVIDIA driver libraries and devices
        out.insert(2, "--nv")
    for item in _env(spec):
        out += ["--env", item]
    out.append(image if image is not None else f"docker://{oci_ref(spec.image)}")
    return out + _serve(spec)


def run_command(
    spec: RunSpec, *, binary: str = "apptainer", home: str | None = None
) -> ApptainerRun:
    """The command as one shell line (``~`` for the shell) and as argv (``~`` expanded)."""
    raw = words(spec, binary=binary)
    home_dir = home if home is not None else str(Path.home())
    args = tuple(home_dir + w[1:] if w.startswith("~/") else w for w in raw)
    text = " ".join(
        w if w.startswith("~/") and shell.quote(w[1:]) == w[1:] else shell.quote(w) for w in raw
    )
    return ApptainerRun(args, text)


_VENDOR_NAME = {"amd": "AMD", "nvidia": "NVIDIA"}


def definition(spec: RunSpec, *, labels: dict[str, str] | None = None) -> str:
    """A definition file that builds a SIF from the image and serves vLLM by default."""
    lines = ["Bootstrap: docker", f"From: {oci_ref(spec.image)}", ""]
    lines.append("%labels")
    for key, value in (labels or {}).items():
        lines.append(f"    {key} {value}")
    lines.append(f"    org.opencontainers.image.ref.name {spec.image}")
    lines += ["", "%environment"]
    for item in _env(spec):
        key, _, value = item.partition("=")
        lines.append(f"    export {key}={shell.quote(value)}")
    lines += ["", "%runscript"]
    serve = _serve(spec)
    lines.append("    exec " + " ".join(shell.quote(w) for w in serve) + ' "$@"')
    lines += [
        "",
        "%help",
        f"    vLLM for {_VENDOR_NAME.get(spec.vendor, 'AMD')} GPUs, written by rocm-vllm.",
        *(f"    {line}" for line in follow_up(spec)),
        "",
    ]
    return "\n".join(lines)


def follow_up(spec: RunSpec, def_file: str = "vllm.def") -> list[str]:
    """How to build and serve the .def file (one wording for its %help and the CLI's note): the
    run needs the flags the image was written for (a writable /tmp, the model cache bound where
    HF_HOME points)."""
    build = shell.join(["apptainer", "build", "vllm.sif", def_file])
    bind = shell.home_word(f"{spec.hf_cache}:{CONTAINER_HF_CACHE}")
    nv = "--nv " if spec.vendor == "nvidia" else ""
    if spec.model_mount is not None:
        bind += f" --bind {shell.quote(f'{spec.model_mount}:{spec.model_mount}:ro')}"
    serve = f"apptainer run {nv}--writable-tmpfs --bind {bind} vllm.sif"
    return [f"Build: {build}", f"Serve: {serve}"]
