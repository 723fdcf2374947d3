"""Which GPUs a served model runs on, and how it is split across them.

``place`` decides the run command's ``HIP_VISIBLE_DEVICES`` and ``--tensor-parallel-size`` from the
node and the model; it never prints, and it refuses (``UsageError``) what cannot run correctly:

- an integrated GPU beside discrete ones is hidden (HIP device indices follow the KFD node order
  the probe lists GPUs in), so ranks map to the discrete GPUs only;
- in CPX compute-partition mode every partition is one XCD, and tensor parallelism across CPX
  partitions has produced garbage output (vllm-project/vllm#20125): the command is one TP=1
  replica per partition, and several partitions for one replica are refused;
- in DPX, TPX and QPX modes a physical GPU is 2, 3 or 4 logical GPUs, each meant for its own
  workload (AMD's partitioning guide): the command is one TP=1 replica per partition, never tensor
  parallelism across all of them. ``--devices`` naming two partitions of one physical GPU (TP
  within a GPU, #20125's setting) is refused; one partition on each of several GPUs (TP across
  GPUs) is served, with a warning that no source shows it working;
- the tensor-parallel size must divide the model's attention heads (vLLM's
  ``ModelConfig.verify_with_parallel_config``), and divide its KV heads or be a multiple of them
  (``ModelConfig.get_num_kv_heads`` replicates KV heads only that way); both are read from the
  model's ``config.json`` when it is on this machine (a model path, or the Hugging Face cache),
  else the size is the largest power of two that fits (nearly every model's head counts are).

``partition_problems`` finds a GPU that shows fewer compute partitions than its peers in the same
mode (63 of 64 CPX partitions): one partition is missing from what ROCm sees.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from resolver.data.node import Node
from resolver.data.partitions import _compute_mode, _device_key
from resolver.solve import Advisory
from resolver.solve.finding import finding, phrase
from resolver.util.errors import UsageError

VLLM_HEADS_CHECK = (
    "vllm-project/vllm vllm/config: ModelConfig.verify_with_parallel_config raises 'Total number "
    "of attention heads (N) must be divisible by tensor parallel size (M)'"
)
CPX_SOURCE = "vllm-project/vllm#20125"
# Logical GPUs per physical GPU in each mode that splits a GPU into shares of it (AMD: "DPX ...
# divided into 2 logical GPUs", "QPX ... 4"; TPX, MI300A's, 3 as the probe reads KFD nodes).
PER_GPU = {"DPX": 2, "TPX": 3, "QPX": 4}
PARTITION_SOURCE = (
    "AMD, GPU partitioning modes (aac.amd.com/help/bare-metal/gpu-partitioning: DPX 2, QPX 4 "
    "logical GPUs per physical GPU, each for an independent workload); vllm-project/vllm#20125 "
    "(TP across partitions gave garbage output)"
)


@dataclass(frozen=True, slots=True)
class Placement:
    devices: tuple[int, ...] | None  # HIP_VISIBLE_DEVICES, None: every GPU the container sees
    tensor_parallel: int | None
    gpus: int  # GPUs (or partitions) the node offers the model
    replicas: int  # how many such commands the node holds (CPX: one per partition)
    heads: int | None  # the model's attention heads, when read
    heads_source: str | None  # the config.json they were read from
    warnings: tuple[Advisory, ...] = ()
    kv_heads: int | None = None  # its key/value heads (GQA), when the config says


def model_heads(model: str | None, hf_cache: str) -> tuple[int, int | None, str] | None:
    """The model's attention heads and KV heads (None when the config has no GQA entry) from its
    ``config.json`` on this machine: ``model`` as a path, or its newest snapshot in the Hugging
    Face cache (``HF_CACHE/hub`` or ``HF_CACHE`` itself)."""
    if not model:
        return None
    candidates: list[Path] = []
    if model.startswith(("/", "~")):
        candidates.append(Path(model).expanduser() / "config.json")
    elif "/" in model:
        org, _, name = model.partition("/")
        root = Path(hf_cache).expanduser()
        for hub in (root / "hub", root):
            snapshots = hub / f"models--{org}--{name.replace('/', '--')}" / "snapshots"
            try:
                found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime)
            except OSError:
                found = []
            candidates += reversed(found)
    for path in candidates:
        counts = _heads_in(path)
        if counts:
            return counts[0], counts[1], str(path)
    return None


def _count(section: dict[str, object], key: str) -> int | None:
    value = section.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


_MAX_MODEL_CONFIG = 4 * 1024 * 1024  # a model's config.json is a few KB


def _heads_in(path: Path) -> tuple[int, int | None] | None:
    from resolver.util import bounded

    try:
        # Bounded like every JSON read: a FIFO, a huge file or deep nesting is no config.
        config = bounded.loads_json(bounded.read_text(path, _MAX_MODEL_CONFIG))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    for section in (config, config.get("text_config"), config.get("llm_config")):
        if isinstance(section, dict):
            heads = _count(section, "num_attention_heads")
            if heads:
                return heads, _count(section, "num_key_value_heads")
    return None


def fits(tp: int, heads: int, kv_heads: int | None = None) -> bool:
    """vLLM accepts ``tp`` for the model: it divides the attention heads, and the KV heads divide
    by it or it is a multiple of them (KV heads are replicated only that way)."""
    if heads % tp:
        return False
    if kv_heads:
        return kv_heads % tp == 0 if kv_heads >= tp else tp % kv_heads == 0
    return True


def tensor_parallel_size(gpus: int, heads: int | None, kv_heads: int | None = None) -> int:
    """The largest size <= gpus vLLM accepts for the heads; heads unknown: the largest power of
    two."""
    if gpus < 1:
        return 1
    if heads:
        return max(t for t in range(1, gpus + 1) if fits(t, heads, kv_heads))
    return 1 << (gpus.bit_length() - 1)


def place(
    node: Node, *, devices: tuple[int, ...] | None, model: str | None, hf_cache: str
) -> Placement:
    """GPUs and tensor-parallel size for the run command (see the module docstring)."""
    warnings: list[Advisory] = []
    listed = node.gpus
    discrete = [i for i, g in enumerate(listed) if not g.integrated]
    igpus = [i for i, g in enumerate(listed) if g.integrated]
    # An NVIDIA node lists no AMD GPUs: its GPUs are the ones nvidia-smi reported.
    offered = node.logical_gpu_count or len(discrete) or len(listed) or len(node.nvidia_gpus)
    if devices is None and (visible := node.visible_gpus()):
        devices = visible  # what the node's HIP/ROCR/CUDA_VISIBLE_DEVICES leave visible
    if devices is not None and listed:
        chosen_igpus = [i for i in devices if i in igpus]
        if chosen_igpus:
            w = finding(
                "integrated-gpu-chosen",
                chosen=", ".join(map(str, chosen_igpus)),
                gfx=listed[chosen_igpus[0]].gfx,
                discrete=",".join(map(str, discrete)),
            )
            warnings.append(
                Advisory(
                    code="integrated-gpu-chosen", message=w.message, hint=w.hint, source=w.source
                )
            )
    elif igpus and discrete:
        devices = tuple(discrete[: offered or len(discrete)])
        w = finding(
            "integrated-gpu-hidden",
            devices=",".join(map(str, devices)),
            gfx=", ".join(sorted({listed[i].gfx for i in igpus})),
            igpus=", ".join(map(str, igpus)),
        )
        warnings.append(
            Advisory(
                code="integrated-gpu-hidden",
                message=w.message,
                hint=w.hint,
                severity="info",
                source=w.source,
            )
        )
    counted = [listed[i] for i in (devices if devices is not None else discrete) if i < len(listed)]
    heads_found = model_heads(model, hf_cache)
    heads, kv_heads, heads_source = heads_found if heads_found else (None, None, None)

    partitioned = (_compute_mode(g) for g in counted or listed)
    mode = next((m for m in partitioned if m == "CPX" or m in PER_GPU), None)
    if mode is not None:
        if devices is None or len(devices) < 2:
            return _per_partition(mode, devices, discrete, offered, warnings, heads_found)
        if mode == "CPX":
            raise UsageError(
                f"--devices {','.join(map(str, devices))} would split one vLLM across "
                f"{len(devices)} CPX partitions; tensor parallelism across CPX partitions has "
                "produced garbage output",
                hint="run one TP=1 replica per partition (--devices 0 --port 8000, --devices 1 "
                "--port 8001, ...), or switch the GPUs to SPX (amd-smi set --compute-partition "
                "SPX) for tensor parallelism",
            )
        _refuse_within_one_gpu(node, mode, devices)
        warnings.append(
            Advisory.said(
                "tp-across-partitions",
                mode=mode,
                devices=",".join(map(str, devices)),
                gpus=len(devices),
                source=PARTITION_SOURCE,
            )
        )

    gpus = len(devices) if devices is not None else offered
    if gpus < 1:
        return Placement(devices, None, 0, 1, heads, heads_source, tuple(warnings), kv_heads)
    tp = tensor_parallel_size(gpus, heads, kv_heads)
    if tp < gpus:
        if heads:
            kv = phrase("tensor-parallel-size/kv", kv_heads=kv_heads) if kv_heads else ""
            why = phrase(
                "tensor-parallel-size/heads",
                heads=heads,
                kv=kv,
                source=heads_source,
                tp=tp,
                gpus=gpus,
            )
        else:
            why = phrase("tensor-parallel-size/power-of-two", tp=tp, gpus=gpus)
        warnings.append(
            Advisory.said(
                "tensor-parallel-size" if heads else "tensor-parallel-size/no-heads",
                tp=tp,
                gpus=gpus,
                why=why,
                source=VLLM_HEADS_CHECK,
            )
        )
    return Placement(devices, tp, gpus, 1, heads, heads_source, tuple(warnings), kv_heads)


def _per_partition(
    mode: str,
    devices: tuple[int, ...] | None,
    discrete: list[int],
    offered: int,
    warnings: list[Advisory],
    heads_found: tuple[int, int | None, str] | None,
) -> Placement:
    """One TP=1 replica on one partition; the node holds one per partition."""
    heads, kv_heads, heads_source = heads_found if heads_found else (None, None, None)
    replica = devices if devices is not None else ((discrete or [0])[0],)
    if mode == "CPX":
        said = Advisory.said(
            "cpx-one-replica-per-partition",
            partition=replica[0],
            offered=offered,
            severity="info",
            source=CPX_SOURCE,
        )
    else:
        said = Advisory.said(
            "one-replica-per-partition",
            mode=mode,
            per_gpu=PER_GPU[mode],
            partition=replica[0],
            offered=offered,
            severity="info",
            source=PARTITION_SOURCE,
        )
    return Placement(replica, 1, offered, offered, heads, heads_source, (*warnings, said), kv_heads)


def physical_gpus(node: Node, mode: str) -> list[str]:
    """The physical GPU each listed GPU is a partition of: its unique id or PCI bus:device, else
    its place in the KFD order, which lists one GPU's partitions together (the recorded CPX
    topologies of ROCm/k8s-device-plugin: a GPU's 8 partitions are KFD nodes in a row)."""
    per = PER_GPU.get(mode) or (
        node.logical_gpu_count // node.physical_gpu_count if node.physical_gpu_count else 0
    )
    keys: list[str] = []
    for i, gpu in enumerate(node.gpus):
        key = _device_key(gpu, i)
        keys.append(f"gpu:{i // per}" if key.startswith("idx:") and per else key)
    return keys


def _refuse_within_one_gpu(node: Node, mode: str, devices: tuple[int, ...]) -> None:
    """Two of ``devices`` on one physical GPU: tensor parallelism inside a GPU, refused."""
    keys = physical_gpus(node, mode)
    seen: dict[str, int] = {}
    for d in devices:
        if d >= len(keys):
            continue
        if keys[d] in seen:
            # One partition of each GPU, as many as asked: what TP across GPUs would name.
            firsts = list(dict.fromkeys(keys))[: len(devices)]
            across = ",".join(str(keys.index(k)) for k in firsts)
            raise UsageError(
                f"--devices {','.join(map(str, devices))} would split one vLLM across "
                f"{mode} partitions of one GPU (devices {seen[keys[d]]} and {d}); tensor "
                "parallelism across the partitions of a GPU has produced garbage output "
                f"({CPX_SOURCE})",
                hint="run one TP=1 replica per partition (--devices 0 --port 8000, --devices 1 "
                f"--port 8001, ...), name one partition of each GPU (--devices {across}) for "
                "tensor parallelism across GPUs, or switch the GPUs to SPX (amd-smi set "
                "--compute-partition SPX)",
            )
        seen[keys[d]] = d
