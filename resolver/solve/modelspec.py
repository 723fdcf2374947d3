"""The records issue 37's model check shares: what a request asks of a model (``ModelRequest``:
--model's config and the sizing knobs the user pinned, as vLLM's flags of the same names) and
what a decision answers about it (``ModelAnswer``, with the ``GpuMemory`` it was sized for).
Kept apart from the checks (``resolver.solve.model``) so that ``resolver.solve.types`` can name
them without importing the checks."""

from __future__ import annotations

import msgspec
from packaging.version import Version

from resolver.data.hfmodel import ModelConfig
from resolver.solve.finding import Phrase
from resolver.solve.fit import Fit


class ModelRequest(msgspec.Struct, frozen=True, kw_only=True):
    """``--model`` and the knobs that pin its sizing (vLLM's flags of the same names)."""

    spec: str  # what the user gave: an id, a directory or a config.json path
    # what `vllm serve` is given (hfmodel.served_model): a local model's absolute directory
    served: str | None = None
    config: ModelConfig
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int = 1
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None


PROBE = "the node's probe (each GPU's VRAM as the driver reports it)"


class GpuMemory(msgspec.Struct, frozen=True, kw_only=True):
    """The memory of one GPU (or one partition) the fit is sized for, and where it was read."""

    bytes: int
    source: Phrase  # the probe's VRAM reading, the product's record, a partition's share
    cited: str = PROBE  # where that size is stated: the probe, or the data record's own source
    unified: bool = False  # an APU: system memory through GTT (``ttm.pages_limit`` decides)


class ModelAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """The decision's answer about the model, for the planned release (or the best rejected one
    when nothing is planned)."""

    spec: str
    architecture: str | None  # the first of the config's ``architectures``
    # Whether the release's model registry lists it; None: the registry was not read.
    architecture_supported: bool | None
    first_release: Version | None = None  # the oldest release whose registry lists it
    release: Version | None = None  # the release judged
    quantization: str | None = None  # the method judged (the checkpoint's, or --quantization)
    kv_cache_dtype: str = "auto"
    attention: tuple[Phrase, ...] = ()  # what the model needs of the attention path, and how
    memory: GpuMemory | None = None
    fit: Fit | None = None  # at the chosen (or pinned) tensor-parallel size
    table: tuple[Fit, ...] = ()  # every valid TP on this node x the contexts tried
    min_gpus: int | None = None  # the fewest GPUs of this node's kind the default context needs
    notes: tuple[Phrase, ...] = ()  # assumptions and what could not be known (remote code, ...)
