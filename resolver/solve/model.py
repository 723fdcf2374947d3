"""What a request asks of a model, and what the decision answers about it (issue 37).

``ModelRequest`` is the model the user will serve (``--model``: its config read by
``resolver.data.hfmodel``) with vLLM's own sizing knobs as the user pinned them (``None``: the
tool chooses, as vLLM's flags of the same names default). ``ModelAnswer`` is the decision's
``model`` section: the architecture and whether the planned release's registry lists it, the
quantization judged, the attention path, and the memory fit (``resolver.solve.fit``) at the
planned release's own ``gpu_memory_utilization`` default, with the table of tensor-parallel
sizes x contexts it was chosen from. The checks are in ``resolver.solve.checks`` (model
family); nothing here words anything.
"""

from __future__ import annotations

import msgspec
from packaging.version import Version

from resolver.data.hfmodel import ModelConfig
from resolver.solve.finding import Phrase
from resolver.solve.fit import Fit


class ModelRequest(msgspec.Struct, frozen=True, kw_only=True):
    """``--model`` and the knobs that pin its sizing (vLLM's flags of the same names)."""

    spec: str  # what the user gave: an id, a directory or a config.json path
    config: ModelConfig
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int = 1
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None


class GpuMemory(msgspec.Struct, frozen=True, kw_only=True):
    """The memory of one GPU (or one partition) the fit is sized for, and where it was read."""

    bytes: int
    source: Phrase  # the probe's VRAM reading, the product's record, a partition's share
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
