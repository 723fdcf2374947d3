"""The command that serves vLLM from a chosen image: ``docker run``, ``podman run`` or a compose
service.

Flags follow vLLM's ROCm docs (v0.15+ official image: ``--device /dev/kfd --device /dev/dri
--group-add=video --ipc=host --cap-add=SYS_PTRACE --security-opt seccomp=unconfined``, the HF
cache volume, ``HF_TOKEN``, ``-p 8000:8000``; shared/reference/vllm-rocm.md §5).

Entrypoints differ: ``vllm/vllm-openai-rocm`` runs ``vllm serve`` (arguments after the image go
to it); AMD's ``rocm/vllm`` and ``rocm/vllm-dev`` start a shell, and NVIDIA's ``vllm/vllm-openai``
up to v0.11.0 starts ``python3 -m vllm.entrypoints.openai.api_server``. For those the command sets
``--entrypoint vllm`` and passes ``serve ...``, which works whatever ENTRYPOINT/CMD the image has.

The model is passed positionally (``vllm serve MODEL``): every release in the data takes it so,
while v0.6.0-v0.11.0 refuse ``--model`` at argument parsing (``serve_model_option`` in
matrix/vllm.toml, read from each sdist).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from resolver.data.model import Entrypoint
from resolver.util import shell
from resolver.util.errors import UsageError
from resolver.util.safety import require_safe

Format = Literal["docker", "podman", "compose"]
FORMATS: tuple[Format, ...] = ("docker", "podman", "compose")

CONTAINER_HF_CACHE = "/root/.cache/huggingface"
# The shell variables a per-replica command is written with (RunSpec.per_replica).
REPLICA_DEVICE = "$n"
REPLICA_PORT = "$port"
# Device selection belongs to HIP_VISIBLE_DEVICES only: vLLM raises on conflicting values and
# deprecates CUDA_VISIBLE_DEVICES on ROCm (vllm-rocm.md §6), so the others are never emitted.
_VISIBILITY_VARS = frozenset(
    {"ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"}
)
# An id, or a path (absolute, as the hint says: a directory --model was read from).
_MODEL_RE = re.compile(r"^[A-Za-z0-9/][A-Za-z0-9._/:@+-]{0,255}\Z")
_PATH_RE = re.compile(r"^(~|/)[A-Za-z0-9._/+-]*\Z")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")  # a quantization or KV dtype


# The host's Hugging Face cache a run command mounts unless told another (--hf-cache).
DEFAULT_HF_CACHE = "~/.cache/huggingface"


def model_mount(model: str | None) -> str | None:
    """The host directory a model is served from, mounted read-only at the same path (a local
    model: ``hfmodel.served_model`` makes it absolute); None for a Hugging Face id, which vLLM
    reads from the mounted cache."""
    return model if model is not None and model.startswith("/") else None


def check_run_inputs(*, model: str | None, port: int, hf_cache: str) -> None:
    """Refuse a bad --model, --port or --hf-cache before anything slow happens (RunSpec's own
    checks, on a stand-in image)."""
    RunSpec(image="check", entrypoint="vllm-serve", model=model, port=port, hf_cache=hf_cache)


@dataclass(frozen=True, kw_only=True, slots=True)
class RunSpec:
    image: str  # full reference, e.g. vllm/vllm-openai-rocm:v0.24.0@sha256:...
    entrypoint: Entrypoint
    model: str | None = None
    port: int = 8000
    hf_cache: str = DEFAULT_HF_CACHE  # host path
    env: tuple[tuple[str, str], ...] = ()  # per-gfx serving env from matrix/gfx.toml
    devices: tuple[int, ...] | None = None  # GPU indices -> HIP_VISIBLE_DEVICES
    tensor_parallel: int | None = None
    # --model's sizes (issue 37: explain.steps.serve_sizing): vLLM's flags of the same names.
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    render_gid: int | None = None  # group of /dev/dri/renderD* when it is not `video`
    name: str = "vllm"
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    # One replica per GPU partition (CPX), for a script's loop: the device is the shell
    # variable $n, the port $port and the container's name NAME-$n (shell.Expansion words).
    per_replica: bool = False
    # "nvidia": the GPUs by the NVIDIA Container Toolkit (docker --gpus, podman CDI, compose
    # device reservations), CUDA_VISIBLE_DEVICES; "amd": /dev/kfd and /dev/dri.
    vendor: str = "amd"

    @property
    def model_mount(self) -> str | None:
        return model_mount(self.model)

    def __post_init__(self) -> None:
        if not 1 <= self.port <= 65535:
            raise UsageError(
                f"--port {self.port} is not a TCP port", hint="give a port between 1 and 65535"
            )
        if self.model is not None and not _MODEL_RE.fullmatch(self.model):
            raise UsageError(
                f"--model {self.model!r} is not a model id or path",
                hint="give a Hugging Face id (org/name) or an absolute path without spaces or "
                "shell characters",
            )
        if self.model_mount is not None and not _PATH_RE.fullmatch(self.model_mount):
            # A mount is SRC:DST[:ro]: a ':' in the path would split it elsewhere.
            raise UsageError(
                f"--model {self.model!r} cannot be mounted into the container",
                hint="move or link the model to a path of letters, digits and . _ / + -",
            )
        if (
            self.hf_cache.startswith("~")
            and not self.hf_cache.startswith("~/")
            and self.hf_cache != "~"
        ):
            # ~user/x: the shell would expand it, but a quoted word is not; expand it here.
            try:
                expanded = str(Path(self.hf_cache).expanduser())
            except RuntimeError:  # no such user
                expanded = self.hf_cache
            if expanded == self.hf_cache or not expanded.startswith("/"):
                raise UsageError(
                    f"Hugging Face cache path {self.hf_cache!r} names an unknown user",
                    hint="give an absolute path, or one under ~/ or ~USER/ for a user of this "
                    "machine",
                )
            object.__setattr__(self, "hf_cache", expanded)
        if not _PATH_RE.fullmatch(self.hf_cache):
            raise UsageError(
                f"Hugging Face cache path {self.hf_cache!r} is not usable",
                hint="give an absolute path or one under ~/ without spaces or shell characters",
            )
        for key, value in self.env:
            require_safe("env_name", key, where="run env")
            require_safe("env_value", value, where=f"run env {key}")
        if self.tensor_parallel is not None and self.tensor_parallel < 1:
            raise UsageError(
                "tensor parallel size must be at least 1", hint="give --gpus N with N >= 1"
            )
        if self.max_model_len is not None and self.max_model_len < 1:
            raise UsageError(
                "max model len must be at least 1", hint="give --max-model-len N with N >= 1"
            )
        if self.gpu_memory_utilization is not None and not 0 < self.gpu_memory_utilization <= 1:
            raise UsageError(
                "GPU memory utilization must be in (0, 1]",
                hint="give --gpu-memory-utilization F with 0 < F <= 1",
            )
        for flag, name in (
            ("--kv-cache-dtype", self.kv_cache_dtype),
            ("--quantization", self.quantization),
        ):
            if name is not None and not _NAME_RE.fullmatch(name):
                raise UsageError(
                    f"{flag} {name!r} is not a name vLLM takes",
                    hint="give a name such as fp8 (letters, digits, '_', '-', '.')",
                )


@dataclass(frozen=True, slots=True)
class Rendered:
    format: Format
    args: tuple[str, ...]  # argv for the engine CLI (no shell): ``~`` already expanded
    command: str  # one shell line; ``~`` left for the shell to expand
    file_text: str | None = None  # compose.yaml for the compose format

    @property
    def artifact(self) -> str:
        """What a user redirects to a file: the compose file, or the run command as one line."""
        return self.file_text if self.file_text is not None else self.command + "\n"

    def to_json(self) -> dict[str, object]:
        return {
            "format": self.format,
            "run_command": self.command,
            "run_args": list(self.args),
            "compose": self.file_text,
        }


def render(
    spec: RunSpec,
    fmt: Format = "docker",
    *,
    home: str | None = None,
    compose_file: str = "compose.yaml",
) -> Rendered:
    if fmt not in FORMATS:
        raise UsageError(
            f"--format {fmt!r} is not one of {', '.join(FORMATS)}",
            hint="use docker, podman or compose",
        )
    home_dir = home if home is not None else str(Path.home())
    if fmt == "compose":
        text = _compose(spec)
        compose_args: tuple[str, ...] = ("docker", "compose", "-f", compose_file, "up", "-d")
        return Rendered(fmt, compose_args, shell.join(compose_args), text)
    words = _run_words(spec, fmt)
    args = tuple(_expand_home(w, home_dir) for w in words)
    return Rendered(fmt, args, " ".join(_quote(w) for w in words))


def _env(spec: RunSpec) -> list[tuple[str, str | None]]:
    """Environment in order: HF_TOKEN passed through (value from the caller's environment),
    HIP_VISIBLE_DEVICES when GPUs are chosen, then the per-gfx recommendations."""
    env: list[tuple[str, str | None]] = [("HF_TOKEN", None)]
    visible = visible_devices_var(spec)
    if spec.per_replica:
        env.append((visible, REPLICA_DEVICE))
    elif spec.devices:
        env.append((visible, ",".join(str(d) for d in spec.devices)))
    env.extend((k, v) for k, v in spec.env if k not in _VISIBILITY_VARS)
    return env


def visible_devices_var(spec: RunSpec) -> str:
    """The variable that picks GPUs inside the container (HIP's on AMD, CUDA's on NVIDIA)."""
    return "CUDA_VISIBLE_DEVICES" if spec.vendor == "nvidia" else "HIP_VISIBLE_DEVICES"


def names_serve(spec: RunSpec) -> bool:
    """Whether the run names ``vllm serve`` itself (``--entrypoint vllm``, then ``serve``) rather
    than relying on the image's ENTRYPOINT: AMD's images start a shell, and NVIDIA's start the API
    server module up to v0.11.0 (docker/Dockerfile of each sdist; ``vllm serve`` from v0.11.1),
    which parses a positional model and then serves its default one instead."""
    return spec.entrypoint == "shell" or spec.vendor == "nvidia"


def model_args(spec: RunSpec, tensor_parallel: int | None = None) -> list[str]:
    """The model and its sizes after ``vllm serve`` (every form of the run command, scripts and
    manifests take these): the model first and positional, as every release takes it
    (v0.6.0-v0.11.0 refuse ``--model``), then vLLM's sizing flags where set. ``tensor_parallel``:
    a replica's own TP where it differs from the spec's (a fleet's placement)."""
    from resolver.explain.steps import ServeSizing

    tp = tensor_parallel if tensor_parallel is not None else spec.tensor_parallel
    sizes = ServeSizing(
        model=spec.model or "",
        tensor_parallel_size=tp if tp and tp > 1 else None,  # TP 1 is vLLM's default
        max_model_len=spec.max_model_len,
        gpu_memory_utilization=spec.gpu_memory_utilization,
        kv_cache_dtype=spec.kv_cache_dtype,
        quantization=spec.quantization,
    )
    return [spec.model, *sizes.flags()] if spec.model else sizes.flags()


def serve_args(spec: RunSpec) -> list[str]:
    """The arguments after ``vllm serve``: the model and its sizes, then the port."""
    args = model_args(spec)
    if spec.per_replica:
        args += ["--port", shell.Expansion(REPLICA_PORT)]
    elif spec.port != 8000:
        args += ["--port", str(spec.port)]
    return args + list(spec.extra_args)


def _groups(spec: RunSpec, fmt: Format) -> list[str]:
    if fmt == "podman":
        # Rootless podman cannot map host groups by name; keep-groups keeps the caller's
        # supplementary groups (video/render) and must stand alone.
        return ["keep-groups"]
    groups = ["video"]
    if spec.render_gid is not None:
        # Numeric: a name like `render` fails when the image's /etc/group lacks it.
        groups.append(str(spec.render_gid))
    return groups


def _run_words(spec: RunSpec, fmt: Format) -> list[str]:
    name = shell.Expansion(f"{spec.name}-{REPLICA_DEVICE}") if spec.per_replica else spec.name
    words = [fmt, "run", "--rm", "--name", name]
    if spec.vendor == "nvidia":
        # vLLM's CUDA docs: docker run --runtime nvidia --gpus all ... --ipc=host; podman takes
        # the GPUs through the CDI spec the NVIDIA Container Toolkit generates.
        words += ["--gpus", "all"] if fmt == "docker" else ["--device", "nvidia.com/gpu=all"]
        words += ["--ipc=host"]
    else:
        words += ["--device", "/dev/kfd", "--device", "/dev/dri"]
        for group in _groups(spec, fmt):
            words += ["--group-add", group]
        words += ["--ipc=host", "--cap-add=SYS_PTRACE", "--security-opt", "seccomp=unconfined"]
    if spec.per_replica:
        words += ["-p", shell.Expansion(f"{REPLICA_PORT}:{REPLICA_PORT}")]
    else:
        words += ["-p", f"{spec.port}:{spec.port}"]
    words += ["-v", f"{spec.hf_cache}:{CONTAINER_HF_CACHE}"]
    if spec.model_mount is not None:
        words += ["-v", f"{spec.model_mount}:{spec.model_mount}:ro"]
    for key, value in _env(spec):
        word = key if value is None else f"{key}={value}"
        words += ["-e", shell.Expansion(word) if value == REPLICA_DEVICE else word]
    image = spec.image
    if (
        fmt == "podman"
        and "/" in image
        and "." not in image.split("/", 1)[0]
        and ":" not in image.split("/", 1)[0]
    ):
        # Podman refuses or prompts for short names; Docker's default registry is docker.io.
        image = f"docker.io/{image}"
    if names_serve(spec):
        words += ["--entrypoint", "vllm", image, "serve"]
    else:
        words.append(image)
    return words + serve_args(spec)


def _compose(spec: RunSpec) -> str:
    q = json.dumps  # a JSON string is a valid YAML double-quoted scalar
    lines = ["services:", f"  {spec.name}:", f"    image: {q(spec.image)}"]
    command = serve_args(spec)
    if names_serve(spec):
        lines.append(f"    entrypoint: [{q('vllm')}]")
        command = ["serve", *command]
    if command:
        lines.append("    command: [" + ", ".join(q(c) for c in command) + "]")
    if spec.vendor == "nvidia":  # Compose's GPU device reservation (NVIDIA Container Toolkit)
        lines += [
            "    deploy:",
            "      resources:",
            "        reservations:",
            "          devices:",
            f"            - driver: {q('nvidia')}",
            f"              count: {q('all')}",
            f"              capabilities: [{q('gpu')}]",
            "    ipc: host",
        ]
    else:
        lines += [
            "    devices:",
            f"      - {q('/dev/kfd')}",
            f"      - {q('/dev/dri')}",
            "    group_add:",
        ]
        lines += [f"      - {q(g)}" for g in _groups(spec, "compose")]
        lines += [
            "    ipc: host",
            "    cap_add:",
            "      - SYS_PTRACE",
            "    security_opt:",
            f"      - {q('seccomp=unconfined')}",
        ]
    lines += ["    ports:", f"      - {q(f'{spec.port}:{spec.port}')}"]
    lines += ["    volumes:", f"      - {q(f'{spec.hf_cache}:{CONTAINER_HF_CACHE}')}"]
    if spec.model_mount is not None:
        lines.append(f"      - {q(f'{spec.model_mount}:{spec.model_mount}:ro')}")
    lines.append("    environment:")
    lines += [f"      - {q(k if v is None else f'{k}={v}')}" for k, v in _env(spec)]
    return "\n".join(lines) + "\n"


def _quote(word: str) -> str:
    # Leave a leading ~/ unquoted so the shell expands it; the rest is already safe characters.
    if word.startswith("~/") and shell.quote(word[1:]) == word[1:]:
        return word
    return shell.quote(word)


def _expand_home(word: str, home: str) -> str:
    return home + word[1:] if word.startswith("~/") else word


def run_words(spec: RunSpec, fmt: Literal["docker", "podman"]) -> list[str]:
    """The ``docker run`` / ``podman run`` words with ``~`` left for the shell (batch scripts)."""
    return _run_words(spec, fmt)
