"""Every finding's words, in one place: why a path is rejected, and what a decision advises.

A check in ``resolver.solve`` decides (which code, which of its wordings, with which values) and
hands back ``resolver.solve.finding.Phrase``s; this module says them (``word``): the message,
the facts it rests on, the hint and the fix, as templates with named values, with the source an
advice cites where the wording itself carries one, and how a derivation step words a rejected
group under the code (``PREDICATES``, ``PREMISES``, read by ``resolver.explain.chain``). Text,
``--explain``, JSON, hints, Dockerfile headers and fleet reports all word a finding here, so one
finding reads one way everywhere. ``tests/test_words.py`` proves every ``ReasonCode`` and
``AdvisoryCode`` has its words here and every wording is used. (The probe's own problems are
worded by the probe, ``resolver.data.words``: a node file carries them.)

A key is the code, or ``code/variant`` where one code is said several ways (the driver window
of a preview ROCm is not a row of AMD's table). Values are plain data (names, versions, tuples
of names, joined here with ", ", and phrases for clauses that depend on the data).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import msgspec

from resolver.data.codes import ReasonCode
from resolver.data.words import GROUP_HINT as _GROUP_HINT
from resolver.data.words import Said, filled, resolved
from resolver.solve.finding import Phrase, arch_phrase, phrase
from resolver.util.errors import ResolverError

_HIP = "HIP error: invalid device function"

_WSL_DOCS = (
    "https://rocm.docs.amd.com/projects/radeon-ryzen/en/latest/docs/install/installrad/wsl/"
    "howto_wsl.html"
)
_GPU_GROUPS_FACT = (
    "ROCm needs the user in the render and video groups to open /dev/kfd and /dev/dri/renderD*"
)
_RAY_AMD = (
    "ray-project/ray python/ray/_private/accelerators/amd_gpu.py@"
    "2efec5ba91d40a403e554ce1636687618e4e5ecf"
)

# Words several wordings share, written once.
_MX_SLOWER_HINT = (
    "expect less speed than on gfx950 (MI350X/MI355X); the checkpoint itself runs unchanged"
)
_MX_EMULATED = Said(
    message="{quant} on {gfx} runs emulated: {gfx} has no MX compute, so vLLM {vllm} falls "
    "back to {kernel} (dequantized to BF16)",
    hint=_MX_SLOWER_HINT,
)
_NONE = Said(message="none")
_SMOKE_NO_VERSION = Said(
    message="{ref}: the smoke test found no {part} version (the data says {claimed})",
    hint="the image may not be what the data describes; inspect it by hand",
    source="smoke test",
)
_SMOKE_VERSION_MISMATCH = Said(
    message="{ref}: {part} is {got} inside the image, the data says {claimed}",
    hint="the data is wrong or the tag moved; fix matrix/images.toml or run "
    "`rocm-vllm matrix refresh --source images`",
    source="smoke test",
)
_MX_UNSUPPORTED_HINT = "use a BF16/FP16 or AWQ/GPTQ checkpoint"
_PYTHON_MISMATCH_HINT = "use Python {fit} for the venv: `uv venv --python {fit}`"
_NEWER_RELEASE_HINT = "pick vLLM {first} or newer"
_DRIVER_UNCHECKED_HINT = (
    "give it with --driver (the amdgpu-install version, e.g. 30.30.3); inbox distro "
    "drivers are not in AMD's driver/user-space table"
)
_SMOKE_NO_GPU_HINT = (
    "check the device flags (--device /dev/kfd --device /dev/dri, the video and render "
    "groups) and that the host's amdgpu driver runs the image's ROCm"
)

_ARCH_UNSUPPORTED = "model-architecture-unsupported"
_ATTENTION_MLA = "model-attention-unsupported/mla"
_FIT_FACT = "each GPU offers {gib} GiB; the weights take {weights} GiB of it"
WORDS: Final[dict[str, Said]] = {
    # --- the model (--model: resolver.solve.model)
    "model-architecture-unchecked": Said(
        message="whether vLLM {vllm} has a model class for {arch} is not in the data (its model "
        "registry was not read)",
        hint="run `rocm-vllm matrix refresh --source models` to read it (--strict makes this "
        "unknown)",
    ),
    "model-architecture-fallback": Said(
        message="vLLM {vllm}'s model registry does not list {arch}: it would run through the "
        "Transformers backend (--model-impl transformers), if transformers knows the model, more "
        "slowly than a native implementation",
        hint="pick a release whose registry lists {arch}, or check that transformers runs it",
        source="vllm/model_executor/models/registry.py (the release's Transformers backend "
        "classes)",
    ),
    _ARCH_UNSUPPORTED: Said(
        message="vLLM {vllm} has no model class for {arch} (\"Model architectures ['{arch}'] "
        'are not supported for now"), and no release in the data lists it',
        facts=("vLLM {vllm}'s model registry does not list {arch}",),
        hint="the model needs a newer vLLM than the data knows, remote code, or another server",
    ),
    "model-architecture-unsupported/later": Said(
        base=_ARCH_UNSUPPORTED,
        message="vLLM {vllm} has no model class for {arch} (\"Model architectures ['{arch}'] "
        'are not supported for now"); vLLM {first} is the first release that lists it',
        hint=_NEWER_RELEASE_HINT,
        fix="vLLM {first} or newer",
    ),
    "model-rocm-unsupported": Said(
        message="vLLM {vllm} lists {arch} among the models that do not run on ROCm "
        "(_ROCM_UNSUPPORTED_MODELS)",
        facts=("vLLM {vllm}'s registry excludes {arch} on ROCm",),
        hint="pick a release that runs it on ROCm, or another model",
    ),
    "model-rocm-partial": Said(
        message="vLLM {vllm} runs {arch} on ROCm only partly: {why}",
        hint="expect the limits the release states; a newer release may lift them",
    ),
    "model-attention/mla": Said(message="MLA (a compressed KV latent of rank {rank})"),
    "model-attention/sliding": Said(message="sliding-window layers (window {window})"),
    "model-attention/encoder-decoder": Said(message="cross attention (encoder-decoder)"),
    "model-attention-unchecked": Said(
        message="whether a ROCm attention backend of vLLM {vllm} takes {needs} is not in the data",
        hint="vLLM picks a backend at start-up and fails if none takes the model (--strict makes "
        "this unknown)",
    ),
    _ATTENTION_MLA: Said(
        message="the model uses MLA, and none of vLLM {vllm}'s ROCm attention backends "
        "({backends}) is an MLA backend",
        facts=("vLLM {vllm}'s ROCm attention backends: {backends}",),
        hint="pick a release with a ROCm MLA backend",
    ),
    "model-attention-unsupported/not-mla": Said(
        base=_ATTENTION_MLA,
        message="none of vLLM {vllm}'s ROCm attention backends ({backends}) takes a model "
        "without MLA",
    ),
    "model-attention-unsupported/head-size": Said(
        base=_ATTENTION_MLA,
        message="no ROCm attention backend of vLLM {vllm} ({backends}) takes head size {head}",
        hint="pick a release whose ROCm backends take head size {head}, or another model",
    ),
    "model-attention-unsupported/sliding-window": Said(
        base=_ATTENTION_MLA,
        message="the model has sliding-window layers, and no ROCm attention backend of vLLM "
        "{vllm} that takes it supports a sliding window ({backends})",
        hint="pick a release whose ROCm backends support sliding windows",
    ),
    "model-attention-unsupported/encoder-decoder": Said(
        base=_ATTENTION_MLA,
        message="the model is an encoder-decoder, and no ROCm attention backend of vLLM {vllm} "
        "takes cross attention ({backends})",
        hint="pick a release whose ROCm backends take encoder-decoder attention",
    ),
    "model-fit-unchecked": Said(
        message="the memory of this node's GPUs is not known, so whether the model fits was not "
        "checked",
        hint="give the node as the probe sees it (--node from `rocm-vllm probe --json`, which "
        "reads each GPU's VRAM), or an --example whose products the data sizes",
    ),
    "model-context-capped": Said(
        message="the model's context ({context} tokens) does not fit one sequence's KV cache on "
        "{gpus} GPU(s); {largest} tokens do at tensor parallel size {tp}, and the plan's command "
        "sets --max-model-len {largest}",
        hint="for the full context use {min_gpus} GPUs, or --kv-cache-dtype fp8 where the GPU "
        "takes it",
    ),
    "model-context-too-long": Said(
        message="--max-model-len {context} does not fit one sequence's KV cache on {gpus} GPU(s) "
        "of {gib} GiB; at most {largest} tokens do",
        facts=(_FIT_FACT,),
        hint="use --max-model-len {largest} or less, or {min_gpus} GPUs",
        fix="{min_gpus} GPUs",
    ),
    "model-does-not-fit": Said(
        message="the model does not fit {gpus} GPU(s) of {gib} GiB: its weights take {weights} "
        "GiB per GPU at the largest tensor parallel size this node allows, leaving no room for "
        'the KV cache (vLLM: out of memory, or "No available memory for the cache blocks")',
        facts=(_FIT_FACT,),
        hint="use {min_gpus} GPUs, a quantized checkpoint, or a smaller model",
        fix="{min_gpus} GPUs",
    ),
    "model-does-not-fit/gtt": Said(
        message="raise the APU's GTT limit to at least {gib} GiB of system RAM: "
        "ttm.pages_limit={pages} (4 KiB pages) on the kernel command line, then reboot"
    ),
    "model-does-not-fit/gtt-fix": Said(message="a GTT limit of {gib} GiB"),
    "model-note/remote-code": Said(
        message="the model asks for remote code (auto_map): it was read as JSON only, and what "
        "its code does (custom layers, another cache layout) is not known"
    ),
    "model-note/unified": Said(
        message="an APU: its GPU memory is system RAM through GTT ({have} GiB as the probe read "
        "it); this fit needs {gib} GiB of it, a GTT limit of at least ttm.pages_limit={pages} "
        "(4 KiB pages) on the kernel command line"
    ),
    # --- how the fit's GPU memory was found
    "fit/memory-probe": Said(message="the probe's reading of each GPU's memory"),
    "fit/memory-product": Said(message="the {product}'s memory as the data records it"),
    "fit/memory-partition": Said(message="one {mode} partition of the {product}"),
    "fit/memory-assumed-partition": Said(
        message="assumed: the smallest partition of a {gfx} product in this mode the data sizes; "
        "give --node for this node's own"
    ),
    "fit/memory-assumed": Said(
        message="assumed: the smallest {gfx} product the data sizes ({product}); give --node for "
        "this node's own"
    ),
    # --- the fit as a step of --explain's derivation (resolver.explain.derive)
    "fit/step-config": Said(
        message="{spec}'s config: {arch}, {layers} layers, {heads} attention heads, {kv_heads} "
        "KV heads of head_dim {head_dim}, dtype {dtype}"
    ),
    "fit/step-weights": Said(
        message="its weights take {weights} GiB per GPU at tensor-parallel size {tp} ({how})"
    ),
    "fit/step-memory": Said(message="each GPU offers {gib} GiB ({how})"),
    "fit/step-gmu": Said(
        message="vLLM {vllm} uses gpu_memory_utilization {gmu} of it, less {allowance} GiB for "
        "activations, graphs and the runtime"
    ),
    "fit/step-kv": Said(
        message="its KV cache takes {kv} bytes per token per GPU (KV cache dtype {kv_dtype})"
    ),
    "fit/step-fits": Said(
        message="the model fits at tensor-parallel size {tp}: one sequence of {context} tokens "
        "needs {need} GiB per GPU of {usable} GiB usable, the longest context that fits is "
        "{largest} tokens, and {min_gpus} GPU(s) of this kind are the fewest it needs"
    ),
    "fit/step-capped": Said(
        message="the model fits at tensor-parallel size {tp} only with a shorter context: "
        "{context} tokens need {need} GiB per GPU of {usable} GiB usable, so --max-model-len "
        "{largest} (the longest that fits)"
    ),
    "fit/step-does-not-fit": Said(
        message="the model does not fit this node's {gpus} GPU(s): {context} tokens need "
        "{need} GiB per GPU of {usable} GiB usable at tensor-parallel size {tp}; it needs "
        "{min_gpus} GPU(s) of this kind"
    ),
    "request/quantization-contradicts": Said(
        message="--quantization {asked} contradicts the checkpoint's quantization_config ({method})"
    ),
    "request/quantization-contradicts-hint": Said(
        message="drop --quantization: vLLM reads {method} from the checkpoint"
    ),
    "request/tp-invalid": Said(
        message="--tensor-parallel-size {tp} does not divide the model's {heads} attention heads "
        "and {kv} KV heads as vLLM requires"
    ),
    "request/tp-invalid-hint": Said(message="valid sizes: {valid}"),
    # --- bad input the solver finds (RequestError: exit 2)
    "request/quantization-unknown": Said(
        message="--quantization {quant!r} is not a method any vLLM release's ROCm platform lists"
    ),
    "request/quantization-unknown-hint": Said(
        message="did you mean {near}? `rocm-vllm matrix show capabilities` lists each release's "
        "methods"
    ),
    "request/quantization-unknown-hint-none": Said(
        message="`rocm-vllm matrix show capabilities` lists each release's methods"
    ),
    "request/kv-unknown": Said(
        message="--kv-cache-dtype {kv!r} is not a KV cache dtype any vLLM release lists"
    ),
    "request/kv-unknown-hint": Said(
        message="did you mean {near}? `rocm-vllm matrix show capabilities` lists each release's "
        "KV cache dtypes"
    ),
    "request/kv-unknown-hint-none": Said(
        message="`rocm-vllm matrix show capabilities` lists each release's KV cache dtypes"
    ),
    "request/no-amd-gpu": Said(message="the node has no AMD GPU to decide for"),
    "request/no-amd-gpu-because": Said(message="the node has no AMD GPU to decide for: {cause}"),
    "request/no-amd-gpu-hint": Said(
        message="describe the node with --gfx (e.g. --gfx gfx942), --example NAME, or --node FILE "
        "from `rocm-vllm probe --json`"
    ),
    "request/no-amd-gpu-hint-because": Said(
        message="{cause}; or describe the node with --gfx (e.g. --gfx gfx942), --example NAME, or "
        "--node FILE from `rocm-vllm probe --json`"
    ),
    "request/no-release": Said(message="no vLLM release in the data matches --vllm {spec!r}"),
    "request/no-release-hint": Said(message="known releases: {first} to {last}"),
    "request/no-release-hint-none": Said(message="the data has no vLLM releases"),
    "request/no-path-of-kind": Said(
        message="no {kind} in the data matches --vllm {spec!r}, though the release does"
    ),
    "request/no-path-of-kind-hint": Said(
        message="releases with a {kind} in the data: {first} to {last}; or build the release "
        "from source (`rocm-vllm dockerfile` with the same node flags and --vllm)"
    ),
    "request/no-path-of-kind-hint-none": Said(
        message="the data has no {kind} of any release; build from source (`rocm-vllm "
        "dockerfile` with the same node flags)"
    ),
    "request/kind/image": Said(message="container image"),
    "request/kind/wheel": Said(message="wheel"),
    "request/kind/source": Said(message="source build"),
    "request/gfx-unknown": Said(message="gfx target {gfx!r} is not in the compatibility data"),
    "request/gfx-unknown-hint": Said(message="known targets: {known}"),
    "request/cuda-image-unknown": Said(message="{label} is not an image the CUDA data knows"),
    "request/cuda-image-unknown-hint": Said(message="rocm-vllm matrix validate"),
    "request/no-nvidia-gpu": Said(message="the node has no NVIDIA GPU to decide for"),
    "request/no-nvidia-gpu-hint": Said(
        message="run `rocm-vllm probe` on an NVIDIA node (nvidia-smi), or drop --vendor nvidia"
    ),
    "request/cuda-no-source": Said(
        message="no source-build Dockerfile for NVIDIA GPUs: vLLM publishes its CUDA build recipe "
        "as docker/Dockerfile in each release"
    ),
    "request/cuda-no-release": Said(
        message="no vLLM release with CUDA images in the data matches --vllm {spec!r}"
    ),
    "request/cuda-no-release-hint": Said(
        message="releases with images read from their sdists: {first} to {last}"
    ),
    "request/cuda-no-release-hint-none": Said(message="run rocm-vllm matrix refresh --source cuda"),
    # --- what an unknown answer lacks (MissingFact.detail), and facts the solver states
    "missing/gfx": Said(
        message="{gfx} is not a gfx target the compatibility data knows (known: {known})"
    ),
    "missing/driver": Said(
        message="amdgpu driver {driver} matches no driver series in AMD's driver/user-space "
        "table (known: {known}); which ROCm it runs is unknown"
    ),
    "missing/release-newer": Said(
        message="vLLM {vllm} is newer than every release in the data (newest: {newest}); its "
        "ROCm build files were never read"
    ),
    "missing/release-arch": Said(
        message="vLLM {vllm}: which GPUs its artifacts are built for are not in the data"
    ),
    "missing/release-build": Said(
        message="vLLM {vllm}: its ROCm build files (base ROCm, arch list, pins) are not in the data"
    ),
    "missing/cuda-none": Said(message="the data has no CUDA facts for any vLLM release"),
    "missing/cuda-unread": Said(
        message="the data holds no CUDA facts for vLLM {vllm} (its sdist was never read)"
    ),
    "missing/cuda-no-tags": Said(
        message="vLLM {vllm} builds for compute capability {arch}, but the data holds no image "
        "tags for it (its sdist has no publish script)"
    ),
    "missing/cuda-no-artifacts": Said(
        message="vLLM {vllm} builds for compute capability {arch}, but the data holds neither "
        "its image tags (its sdist has no publish script) nor its PyPI wheel's CUDA"
    ),
    # a GPU vLLM does not support, as its own record says it (gfx.toml vllm_note)
    "gfx-unsupported/record": Said(message="{note}"),
    "os-ships-glibc": Said(message="{os} ships glibc {glibc}"),
    "cuda-recipe/hint": Said(message="build it with BuildKit from the release's tag: {command}"),
    "cuda-recipe/hint-none": Said(
        message="see vLLM's CUDA installation guide (building the image from source)"
    ),
    # --- how a model's weights were sized (resolver.solve.fit Weights.note)
    "fit/weights-index": Said(message="as stored (the safetensors index's total_size)"),
    "fit/weights-f32-index": Said(
        message="float32 checkpoint served in 16 bits (dtype=auto): half its total_size"
    ),
    "fit/weights-params": Said(message="{params} parameters x {served} bytes"),
    "fit/weights-quantized": Said(
        message="{quantized} quantized parameters x {bits} bits, {rest} x {served} bytes"
    ),
    # --- values several wordings take
    "arch-list": Said(message="{arch}"),
    "arch-list/unknown": Said(message="an unknown arch list"),
    # --- unknown facts
    "release-facts-unknown": Said(
        message="vLLM {vllm}: its ROCm base, arch list and component pins are not in the data",
        facts=("vLLM {vllm} exists but its ROCm build files were never read",),
        hint="run `rocm-vllm matrix refresh --source sdist --tag {vllm} --write` to read them "
        "from its sdist",
        fix="refresh the data (`rocm-vllm matrix refresh --source sdist --tag {vllm} --write`)",
    ),
    "artifact-facts-unknown": Said(
        message="{label}: which GPUs it is built for is not in the data",
        facts=("{label} exists; its arch list was never read",),
        hint="run `rocm-vllm matrix refresh` to read it, or check it yourself with `rocm-vllm "
        "image --smoke`",
        fix="refresh the data (`rocm-vllm matrix refresh --write`)",
    ),
    # --- the GPU
    "gfx-unsupported": Said(
        message="{label} ships code for {arch}, not {gfx}; vLLM does not support {gfx}",
        facts=("{label} is built for {arch}", "{gfx}: {note}"),
    ),
    "gfx-unsupported/by-vllm": Said(
        message="vLLM does not support {gfx}",
        facts=("{gfx}: {note}",),
    ),
    "gfx-unsupported/hint-override": Said(
        message="unofficial: HSA_OVERRIDE_GFX_VERSION={override} makes the runtime load "
        "{override_target} code; it can crash or compute wrong results",
    ),
    "gfx-unsupported/hint-none": Said(
        message="no vLLM path exists for this GPU; consider llama.cpp (ROCm or Vulkan) instead",
    ),
    "gfx-not-shipped": Said(
        message="{label} ships code for {arch}, not {gfx} (expect '" + _HIP + "')",
        facts=("{label} is built for {arch}",),
        hint="choose an artifact built for {gfx}, or build from source: "
        "`rocm-vllm dockerfile --gfx {gfx}`",
        fix="an artifact built for {gfx}",
    ),
    "gfx-not-shipped/contradicted": Said(
        base="gfx-not-shipped",
        message="{label} is listed for {gfx} by a docs page, but its own libraries carry no {gfx} "
        "code (expect '" + _HIP + "')",
        facts=("{label} carries no {gfx} code",),
    ),
    "gfx-not-shipped/not-buildable": Said(
        message="vLLM {vllm} cannot be built for {gfx}: its CMake does not accept it "
        "(HIP_SUPPORTED_ARCHS)",
        facts=("vLLM {vllm}'s CMake accepts {arch}",),
        hint="releases whose build accepts {gfx}: {releases}",
        fix="a release whose build accepts {gfx}",
    ),
    "gfx-not-shipped/not-buildable-anywhere": Said(
        base="gfx-not-shipped/not-buildable",
        hint="no vLLM release in the data builds for {gfx}",
    ),
    # --- feature gates
    "fp8-unsupported": Said(
        message="{quant} quantization needs hardware FP8, which {gfx} ({arch}) does not have",
        hint="use a BF16/FP16 checkpoint or an AWQ/GPTQ int4 one on this GPU",
        fix="a BF16/FP16 or AWQ/GPTQ checkpoint",
    ),
    "fp8-unsupported/no-kernel": Said(
        message="; vLLM {vllm} admits FP8 there (supports_fp8) but gates its FP8 GEMM to {gemm} "
        "and has no weight-only FP8 kernel for ROCm, so FP8 runs neither emulated nor weight-only "
        "on {gfx}",
    ),
    "fp8-unsupported/gemm-gated": Said(
        message="; vLLM {vllm} admits FP8 there (supports_fp8) but gates its FP8 GEMM to {gemm}",
    ),
    "fp8-unsupported/admitted": Said(
        message="; vLLM {vllm} admits FP8 there (supports_fp8) all the same",
    ),
    "fp8-unsupported/admitted-fact": Said(message="vLLM {vllm} supports_fp8 admits {gfx}"),
    "fp8-unsupported/admitted-fact-gemm": Said(
        message="vLLM {vllm} supports_fp8 admits {gfx}; FP8 GEMM on {gemm}"
    ),
    "fp8-unsupported/gates-fact": Said(message="{gfx}: FP8 {fp8}, MX formats {mx}"),
    "mx-unsupported": Said(
        message="{quant} needs MX (microscaling) compute, which only gfx950-class GPUs have; "
        "{gfx} does not",
        hint=_MX_UNSUPPORTED_HINT,
        fix="a non-MX checkpoint",
    ),
    "mx-unsupported/mxfp4": Said(
        message="{quant} needs MX (microscaling) compute, which only gfx950-class GPUs have, and "
        "no source says vLLM runs it weight-only on {gfx}",
        hint=_MX_UNSUPPORTED_HINT,
        fix="a non-MX checkpoint",
    ),
    "mx-unsupported/hint-fp8": Said(message="use an FP8 or BF16 checkpoint of the model"),
    "kv-fp8-unsupported": Said(
        message="--kv-cache-dtype {kv} needs hardware FP8, which {gfx} does not have",
        hint="use --kv-cache-dtype auto",
        fix="--kv-cache-dtype auto",
    ),
    # --- the driver
    "driver-predates-gpu": Said(
        message="amdgpu {driver} shipped with ROCm {paired}, before ROCm {first}, the first to "
        "support {product} ({gfx})",
        facts=(
            "amdgpu {driver} shipped with ROCm {paired}",
            "{product} ({gfx}) is supported from ROCm {first}",
        ),
        hint="{driver_hint} (the first driver released with ROCm {first_series} or later)",
    ),
    "driver-predates-gpu/no-driver": Said(
        message="no amdgpu driver in AMD's table supports {product} and runs ROCm {series}",
    ),
    "driver-window": Said(
        message="{label} ships ROCm {rocm}, but amdgpu {driver}.x runs ROCm user space {window} "
        "only",
        facts=("{label} ships ROCm {rocm}", "amdgpu {driver}.x supports ROCm user space {window}"),
    ),
    "driver-window/preview": Said(
        message="{label} ships {rocm}; {known}, not {driver}.x",
        facts=("{label} ships {rocm}", "{rocm}: {known}"),
        hint="prefer an artifact on a production ROCm release, whose driver support AMD tabulates",
    ),
    "driver-window/preview-listed": Said(message="its release notes list amdgpu {drivers}"),
    "driver-window/preview-unlisted": Said(message="AMD states no driver support for it here"),
    "driver-window/hint": Said(message="{direction} the host's amdgpu driver to {best}"),
    "driver-window/hint-others": Said(
        message="{direction} the host's amdgpu driver to {best} (also running ROCm {series}: "
        "{others})"
    ),
    "driver-window/hint-none": Said(message="no amdgpu driver in AMD's table runs ROCm {series}"),
    "driver-window/fix": Said(message="amdgpu driver {best}"),
    "driver-window/fix-os-first": Said(
        message="amdgpu driver {best} (not supported on {os}: move the host to {step} first)"
    ),
    # --- wheels
    "python-mismatch": Said(
        message="{wheel} wheels are built for CPython {wanted}; on Python {python} pip silently "
        "installs the CUDA wheel from PyPI",
        facts=(
            "{wheel} wheels exist for CPython {wanted} only",
            "other Pythons fall back to the CUDA wheel",
        ),
        hint=_PYTHON_MISMATCH_HINT,
        fix="Python {fit}",
    ),
    "python-mismatch/cuda": Said(
        base="python-mismatch",
        message="{label} takes Python {requires}; this host has Python {python}",
        facts=("vLLM {vllm} requires-python {requires}",),
    ),
    "python-mismatch/cuda-none": Said(
        base="python-mismatch/cuda", hint="use a Python the release takes"
    ),
    "glibc-too-old": Said(
        message="{wheel} wheels need glibc >= {glibc_min}; this host has {glibc}",
        facts=("{wheel} wheels need glibc >= {glibc_min}", "{os} ships glibc {glibc}"),
        hint="use the container image instead, or a host OS with glibc >= {glibc_min} "
        "(Ubuntu 22.04 has 2.35)",
        fix="a host OS with glibc >= {glibc_min}",
    ),
    "glibc-too-old/cuda": Said(
        base="glibc-too-old",
        message="{label} is a {platform} wheel (glibc >= {glibc_min}); this host has {glibc}",
        facts=("vLLM {vllm}'s x86_64 wheel on the package index is {platform}",),
        hint="use the container image instead, or a host OS with glibc >= {glibc_min}",
    ),
    "host-rocm-mismatch": Said(
        message="the {wheel} wheel uses the host's ROCm installation, which must be ROCm {want}; "
        "the host has ROCm {host}",
        facts=("the {wheel} wheel uses the host's ROCm installation (ROCm {want})",),
        hint="install ROCm {want} on the host, or take a wheel or image that brings its own ROCm",
        fix="ROCm {want} on the host",
    ),
    # --- what the release lists
    "quantization-not-listed": Said(
        message="vLLM {vllm}'s ROCm platform does not list {method}: {why}",
        facts=("vLLM {vllm} supported_quantization: {listed}",),
    ),
    "quantization-not-listed/removed": Said(
        message="vLLM {after} removed {method} from ROCm ({last} lists it)",
        hint="pick vLLM {last} (--vllm '=={last}'), the newest that lists it",
        fix="vLLM {last}",
    ),
    "quantization-not-listed/later": Said(
        message="{method} arrived in vLLM {first} on ROCm",
        hint=_NEWER_RELEASE_HINT,
        fix="vLLM {first} or newer",
    ),
    "quantization-not-listed/never": Said(
        message="no release in the data lists {method} on ROCm",
        hint="pick another quantization method",
    ),
    "kv-cache-dtype-not-listed": Said(
        message="vLLM {vllm} has no KV cache dtype {dtype}",
        facts=("vLLM {vllm} CacheDType: {listed}",),
        hint="pick another KV cache dtype",
    ),
    "kv-cache-dtype-not-listed/later": Said(
        base="kv-cache-dtype-not-listed",
        message="vLLM {vllm} has no KV cache dtype {dtype} (it arrived in {first})",
        hint=_NEWER_RELEASE_HINT,
        fix="vLLM {first} or newer",
    ),
    "kv-cache-dtype-not-listed/older": Said(
        message="vLLM {vllm} predates the KV cache dtype {dtype}: the oldest release whose "
        "dtypes were read, {oldest}, does not have it yet",
        facts=("vLLM {oldest} CacheDType: {listed}",),
        hint=_NEWER_RELEASE_HINT,
        fix="vLLM {first} or newer",
    ),
    "kv-cache-dtype-no-backend": Said(
        message="no ROCm attention backend of vLLM {vllm} accepts the KV cache dtype {dtype} "
        "(vLLM stops with 'No valid attention backend found')",
        facts=("none of vLLM {vllm}'s {count} ROCm attention backends takes {dtype}",),
        hint="pick a KV cache dtype a ROCm backend accepts ({accepted})",
    ),
    "fp8-not-admitted": Said(
        message="vLLM {vllm} does not enable FP8 on {refused} (RocmPlatform.supports_fp8)",
        facts=("vLLM {vllm} supports_fp8 admits {admitted}",),
        hint="use a BF16/FP16 or AWQ/GPTQ checkpoint on this GPU",
    ),
    "fp8-not-admitted/later": Said(
        base="fp8-not-admitted",
        hint="pick vLLM {release} or newer, which enables FP8 there",
        fix="vLLM {release} or newer",
    ),
    "fp8-not-admitted/earlier": Said(
        base="fp8-not-admitted",
        hint="pick vLLM {release}, the newest that enables FP8 there",
        fix="vLLM {release}",
    ),
    # --- NVIDIA
    "cuda-arch-missing": Said(
        message="{label} carries code for compute capability {listed}; {product} is {missing}",
        facts=(
            "{label} is built for compute capability {listed}",
            "{product} has compute capability {missing}",
        ),
        hint="pick a release whose image carries it, or build vLLM from source with "
        "TORCH_CUDA_ARCH_LIST={first_missing}",
    ),
    "cuda-quant-capability": Said(
        message="vLLM {vllm}'s {method} needs compute capability {floor} or newer; {product} is "
        "{caps}",
        facts=(
            "vLLM {vllm} {method} get_min_capability: {floor}",
            "{product} has compute capability {caps}",
        ),
        hint="pick a quantization method this GPU's compute capability admits, or a GPU of "
        "compute capability {floor} or newer",
    ),
    "cuda-driver-too-old": Said(
        message="{label} is built with CUDA {cuda}, which needs NVIDIA driver branch {min_driver} "
        "or newer; this host runs {driver}",
        facts=(
            "{label} is built with CUDA {cuda}",
            "CUDA {major}.x needs driver {min_driver} or newer",
        ),
        hint="upgrade the host's NVIDIA driver to the {min_driver} branch or newer",
        fix="NVIDIA driver {min_driver} or newer",
    ),
    "cuda-driver-too-old/compat": Said(
        message="upgrade the host's NVIDIA driver to the {min_driver} branch or newer (on a data "
        "center GPU with an R535 or R570 driver, vLLM's image can also run with "
        "VLLM_ENABLE_CUDA_COMPATIBILITY=1: it ships CUDA's forward compatibility libraries)",
    ),
    "cuda-driver-too-old/variant": Said(
        message="upgrade the host's NVIDIA driver to the {min_driver} branch or newer, or install "
        "vLLM {vllm}'s CUDA {variants} build: its release pipeline builds that wheel too, but only "
        "the default (CUDA {cuda}) one is on PyPI (the others are release assets)",
    ),
    # --- advisories about checks that could not be made (resolver.solve.checks, .cuda)
    "driver-unchecked": Said(
        message="the host's AMD GPU Driver release is unknown, so nobody checked that it runs "
        "ROCm {rocm}",
        hint=_DRIVER_UNCHECKED_HINT,
    ),
    "driver-unchecked/needs": Said(
        message="the host's AMD GPU Driver release is unknown, so nobody checked that it runs "
        "ROCm {rocm} (it needs amdgpu {needs})",
        hint=_DRIVER_UNCHECKED_HINT,
    ),
    "arch-from-docs": Said(
        message="that {label} carries code for {gfx} rests on a docs page alone (read neither "
        "from the release's build files nor from the image)",
        hint="read it from the image: `rocm-vllm audit docker://{ref} --gfx {gfx}` (or `rocm-vllm "
        "image ... --audit`, which records what it finds)",
    ),
    "driver-release-unchecked": Said(
        message="amdgpu {driver} may predate {product} ({gfx}): AMD added it in ROCm {first}, and "
        "the node's release within {series}.x is not known",
        hint="give the full driver release (--driver, e.g. the amdgpu-install version) so it "
        "can be checked",
    ),
    "driver-release-unchecked/needs": Said(
        message="amdgpu {driver} may predate {product} ({gfx}): AMD added it in ROCm {first}, "
        "which amdgpu {needed} shipped with, and the node's release within {series}.x is not "
        "known",
        hint="check that the host runs amdgpu {needed} or later (`apt policy amdgpu-dkms`, "
        "`dnf info amdgpu-dkms`), or give it with --driver {needed}",
    ),
    "unknown-driver": Said(
        message="amdgpu driver {driver} is not in AMD's driver/user-space table; cannot check "
        "that it runs ROCm {rocm}",
        hint="give the AMD GPU driver release (e.g. 30.30.3); inbox distro drivers are not in "
        "AMD's table",
    ),
    "python-unknown": Said(
        message="the node's Python is unknown; {wheel} wheels exist for CPython {wanted} only",
        hint="create the venv with that Python: `uv venv --python {fit}`",
    ),
    "glibc-unknown": Said(
        message="the host's glibc is unknown; {wheel} wheels need glibc >= {glibc_min}",
        hint="give --os (e.g. ubuntu-22.04) or check `ldd --version`",
    ),
    "host-rocm-unknown": Said(
        message="the {wheel} wheel uses the host's ROCm, which must be ROCm {want}; the host's "
        "ROCm is not known",
        hint="give it with --rocm (cat /opt/rocm/.info/version); install ROCm {want} on the host "
        "for this wheel",
    ),
    "host-rocm-shadowing": Said(
        message="the host has ROCm {host}; the {wheel} wheel's torch brings ROCm {rocm} libraries",
        hint="keep /opt/rocm*/lib off LD_LIBRARY_PATH in the venv (ROCm/rocm-libraries#4547)",
        source="ROCm/rocm-libraries#4547",
    ),
    "cuda-arch-ptx-jit": Said(
        message="{label} has no compiled code for compute capability {caps}: the driver "
        "JIT-compiles its PTX ({ptx}) at the first start (slower, cached afterwards), and kernels "
        "built only for arch-specific targets are not there",
        hint="expect a slow first start; a build for this GPU (torch_cuda_arch_list={caps}) "
        "avoids it",
    ),
    "kv-cache-dtype-unchecked": Said(
        message="vLLM {vllm} lists --kv-cache-dtype {dtype}; whether its CUDA attention "
        "backends take it on compute capability {caps} is not in the data",
        hint="vLLM refuses at start-up a KV cache dtype no backend takes; try it, or drop "
        "--kv-cache-dtype (--strict makes this unknown)",
    ),
    "cuda-arch-unchecked": Said(
        message="the compute capability of {product} is unknown (nvidia-smi did not say it and "
        "the data does not list its PCI id); {label} carries code for {arch}",
        hint="run `rocm-vllm probe` on the node with nvidia-smi on PATH (its compute_cap), or "
        "give it with --cc",
    ),
    "nvidia-driver-unchecked/no-rule": Said(
        message="the data has no NVIDIA driver floor for CUDA {major}.x",
        hint="add it to matrix/nvidia.toml with its source",
        source="matrix/nvidia.toml",
    ),
    "nvidia-driver-unchecked": Said(
        message="the NVIDIA driver is unknown, so whether it runs CUDA {cuda} ({label}) was not "
        "checked: CUDA {major}.x needs branch {min_driver} or newer",
        hint="run `rocm-vllm probe` on the node, or check `nvidia-smi`",
    ),
    "cuda-image-needs-driver": Said(
        message="{label} needs {fix}; the PyPI wheel of vLLM {vllm} runs on this driver",
        hint="upgrade the driver for the container image (`rocm-vllm upgrade` plans it), or "
        "install the wheel as below",
    ),
    "cuda-image-needs-driver/unknown": Said(message="a newer NVIDIA driver"),
    # --- advisories about the host OS and kernel (resolver.solve.host)
    "kernel-floor-unchecked/os": Said(
        message="AMD supports {gfx} ({who}) on Linux only on {listed}; this node's OS is unknown",
        hint="give --os (e.g. ubuntu-24.04) or run `rocm-vllm probe` on the node",
    ),
    "kernel-floor-unchecked": Said(
        message="AMD supports {gfx} on {os} from kernel {flavour}; this node's kernel is unknown",
        hint="check `uname -r` is {min_kernel} or newer",
    ),
    "kernel-floor-unchecked/floor": Said(message="{os} (kernel {flavour} or newer)"),
    "os-unlisted-for-gpu": Said(
        message="AMD supports {gfx} ({who}) on Linux only on {listed}; this host runs {host_os}",
        hint="move the host to {os} with kernel {flavour} or newer",
    ),
    "kernel-too-old": Said(
        message="{gfx} ({who}) needs kernel {flavour} or newer on {os} per AMD; this host runs "
        "{kernel}",
        hint="install kernel {min_kernel} or newer and reboot",
    ),
    "kernel-too-old/oem": Said(
        base="kernel-too-old",
        hint="install the {flavour} kernel (Ubuntu: the linux-oem-24.04 kernel series) and reboot",
    ),
    "apu-unified-memory": Said(
        message="{gfx} is an APU: its GPU memory is system RAM mapped through GTT, not a VRAM "
        "pool, so how much vLLM can use for weights and KV cache depends on the GTT limit",
        hint="size the GTT limit (ttm pages_limit) for the model weights plus KV cache, leaving "
        "RAM for the OS, and keep the BIOS VRAM carve-out small; check what the GPU then reports "
        "before choosing --gpu-memory-utilization",
    ),
    "os-not-supported": Said(
        message="{host_os} is not among the OS releases AMD supports for {rocm}, which amdgpu "
        "{driver}.x was released with",
        hint="supported: {listed}",
    ),
    "os-not-supported-for-gpu": Said(
        message="AMD supports {who} on {rocm} only on {allowed}; this host runs {host_os}",
        hint="move the host to one of those OS releases, or expect an untested combination",
    ),
    "os-not-supported-for-gpu/none": Said(message="no listed OS"),
    # --- what stops every path on the host (resolver.solve.host)
    "gpu-access-denied": Said(
        message="user {user} cannot open the GPUs: not in the {groups} group(s), which own "
        "/dev/kfd and /dev/dri/renderD*",
        facts=(
            "user {user} is in: {have}",
            _GPU_GROUPS_FACT,
        ),
        hint=_GROUP_HINT,
        fix="add {user} to the render and video groups (sudo usermod -aG render,video $USER)",
    ),
    "gpu-access-denied/denied": Said(
        base="gpu-access-denied",
        message="user {user} cannot open the GPUs: /dev/kfd refuses it with {error}",
        facts=(
            "opening /dev/kfd as {user} failed: {error}",
            _GPU_GROUPS_FACT,
        ),
    ),
    "driver-os-unsupported": Said(
        message="AMD does not support amdgpu {driver}.x on {host_os}, only where {rocm}, its "
        "release, runs ({listed}); its DKMS module may not build on this OS's kernel",
        facts=(
            "amdgpu {driver}.x was released with {rocm}",
            "AMD supports {rocm} on {listed}",
        ),
        hint="move the host to {step}, or install an amdgpu driver AMD supports on {host_os}: "
        "{drivers}",
        fix="move the host to {step}",
    ),
    "driver-os-unsupported/move": Said(
        base="driver-os-unsupported",
        message="AMD does not support amdgpu {driver}.x, the driver this path needs, on "
        "{host_os}, only where {rocm}, its release, runs ({listed})",
        hint="move the host to {step} before installing amdgpu {driver}.x",
    ),
    "driver-os-unsupported/none": Said(
        base="driver-os-unsupported",
        hint="move the host to {step} (no amdgpu driver in AMD's table lists {host_os})",
    ),
    "wsl-host": Said(
        message="this host is WSL{kernel}: vLLM's ROCm paths need /dev/kfd (the images are run "
        "with --device /dev/kfd) and amdsmi to find the GPU, and WSL has neither (ROCm reaches "
        "the GPU there through /dev/dxg)",
        facts=(
            "the node is WSL{kernel}",
            (
                "ROCm on WSL is a separate, Radeon- and Ryzen-only path (librocdxg over /dev/dxg, "
                "no /dev/kfd) for the GPUs AMD lists for it"
            ),
            "vLLM's ROCm platform detection (amdsmi) fails on WSL",
        ),
        hint="run vLLM on native Linux (a Linux install on the same machine, or another Linux "
        "host); what AMD supports on WSL is listed at " + _WSL_DOCS,
        fix="native Linux instead of WSL",
    ),
    # --- the environment the node records (resolver.solve.host)
    "visible-devices-ray": Said(
        message="ROCR_VISIBLE_DEVICES={rocr} is set without HIP_VISIBLE_DEVICES: Ray refuses to "
        "start ('Please use HIP_VISIBLE_DEVICES instead of ROCR_VISIBLE_DEVICES'), so vLLM's "
        "Ray backend (multi-node, --distributed-executor-backend ray) fails",
        hint="select the GPUs with HIP_VISIBLE_DEVICES alone: export "
        "HIP_VISIBLE_DEVICES={rocr}; unset ROCR_VISIBLE_DEVICES",
        source=_RAY_AMD,
    ),
    "visible-devices-ray/both": Said(
        message="ROCR_VISIBLE_DEVICES={rocr} and HIP_VISIBLE_DEVICES={hip} are both set: HIP "
        "numbers the GPUs ROCR left visible, so the two masks compound (1 under 1 leaves no "
        "GPU), and Ray releases before ray-project/ray#53757 refuse to start",
        hint="select the GPUs with one variable, HIP_VISIBLE_DEVICES (a scheduler that sets "
        "ROCR_VISIBLE_DEVICES: copy it to HIP_VISIBLE_DEVICES and unset it)",
        source=_RAY_AMD + "; ray-project/ray#53737",
    ),
    "visible-devices-ray/hip-cuda": Said(
        message="HIP_VISIBLE_DEVICES={hip} and CUDA_VISIBLE_DEVICES={cuda} disagree: Ray "
        "refuses to start ('Inconsistent values found') and HIP takes HIP_VISIBLE_DEVICES",
        hint="unset CUDA_VISIBLE_DEVICES, or give it the same value",
        source=_RAY_AMD,
    ),
    "visible-devices-hide-gfx": Said(
        message="{vars} hide every {gfx} GPU: a vLLM started in this environment does not see "
        "the GPUs the plan is for",
        hint="unset them, or list the {gfx} GPUs ({indices}) in HIP_VISIBLE_DEVICES",
    ),
    "visible-devices-hide-gfx/all": Said(
        message="{vars} hide every GPU: a vLLM started in this environment sees none",
        hint="unset them, or list the GPUs to use (0 to {last}) in HIP_VISIBLE_DEVICES",
    ),
    "visible-devices-count": Said(
        message="{vars} leave {seen} of the node's {total} GPUs visible ({indices}): the plan "
        "uses those {seen}",
        hint="unset them to use every GPU",
    ),
    # --- advisories about a candidate (resolver.solve.advisories)
    "rocm-lacks-gfx": Said(
        message="AMD's matrix for {rocm} does not list {gfx}; {label} ships code for it anyway",
        hint="expect less testing on {gfx}; AMD lists it from {first}",
    ),
    "rocm-lacks-gfx/first": Said(message="ROCm {version}"),
    "rocm-lacks-gfx/never": Said(message="no ROCm release in the data"),
    "deprecated-channel": Said(
        message="{repo} is deprecated in vLLM's docs; {ref} is used only because nothing newer "
        "fits",
        hint="prefer vllm/vllm-openai-rocm when the node allows it",
    ),
    "amd-image": Said(
        message="{repo} is AMD's channel (vLLM's docs call it deprecated since v0.19); its "
        "entrypoint is a shell",
        hint="run `vllm serve` explicitly in it (`rocm-vllm image` writes the command)",
    ),
    "preview-rocm": Said(
        message="{label} builds on {stack}, a ROCm nightly or preview, not a release",
        hint="prefer a stack on a released ROCm; use this one only to try the GPU it exists for",
    ),
    "preview-rocm/runs-on": Said(
        message="{label} runs on {rocm}, a technology preview with no upgrade path from 7.2.x",
        hint="prefer an artifact on a production ROCm (7.2.x legacy or 7.14+/10.x TheRock)",
    ),
    "unpinned-ref": Said(
        message="{label}: upstream pins {refs} to a moving branch, so the build is not "
        "reproducible",
        hint="pin a commit yourself (rocm-vllm dockerfile refuses this stack unless "
        "--allow-moving-refs)",
    ),
    "low-confidence/pinned": Said(
        message="{image}: the tag is at the registry (pinned to its digest), but what it holds "
        "(vLLM, ROCm, torch) is as the data infers until a smoke test reads it",
        hint="add --smoke to read the versions inside the image",
    ),
    "low-confidence/image": Said(
        message="{label}: the tag and its contents are {confidence} (from the release's pipeline "
        "or a docs page), not confirmed at the registry",
        hint="pin and verify it: `rocm-vllm image` with the same node flags, plus --digest --smoke",
    ),
    "low-confidence": Said(
        message="{label}: facts are {confidence}, not read at the release itself",
        hint="read them exactly from the sdist: `rocm-vllm matrix refresh --source sdist --tag "
        "{vllm}`",
    ),
    # --- advisories about the node
    "aiter-off-by-default": Said(
        message="AITER kernels are off by default in vLLM; on {gfx} they are much faster",
        hint="set VLLM_ROCM_USE_AITER=1 where vLLM runs",
        source="vllm-project/vllm vllm/envs.py (VLLM_ROCM_USE_AITER default False); "
        "vllm-project/vllm#56945",
    ),
    "aiter-off-by-default/image": Said(
        message="", hint="set VLLM_ROCM_USE_AITER=1 (the run command from `rocm-vllm image` does)"
    ),
    "aiter-off-by-default/wheel": Said(
        message="",
        hint="export VLLM_ROCM_USE_AITER=1 before `vllm serve`: nothing sets it for a wheel "
        "install",
    ),
    "aiter-off-by-default/source": Said(
        message="",
        hint="pass -e VLLM_ROCM_USE_AITER=1 to `docker run` of the built image: the Dockerfile "
        "does not set it",
    ),
    "aiter-partial": Said(
        message="on {gfx} only AITER's Triton kernels apply; the AITER package itself fails there",
        hint="leave VLLM_ROCM_USE_AITER unset unless you test it (ROCm/aiter#3294)",
    ),
    "mxfp4-emulated/kernel": _MX_EMULATED,
    "mxfp4-emulated": Said(
        message="{quant} on {gfx} runs weight-only: vLLM dequantizes the MXFP4 weights, since "
        "{gfx} has no MX compute",
        hint=_MX_SLOWER_HINT,
    ),
    "mxfp8-emulated": _MX_EMULATED,
    "mxfp4-native": Said(
        message="{quant} on {gfx} runs on native MX (microscaling) compute",
        hint="nothing to do; MXFP4 checkpoints run at full speed here",
    ),
    "fp8-format": Said(
        message="FP8 on {gfx} uses e4m3fn (OCP)",
        hint="checkpoints in OCP e4m3fn run natively",
    ),
    "fp8-format/fnuz": Said(
        message="FP8 on {gfx} uses e4m3fnuz (FNUZ)",
        hint="OCP-format checkpoints are rescaled to FNUZ at load on gfx942; do not hard-code "
        "fnuz for gfx950",
    ),
    "mixed-fp8-formats": Said(
        message="this node mixes FNUZ (gfx942) and OCP FP8 targets; vLLM reads the arch of device "
        "0 only",
        hint="run one vLLM instance per GPU type (HIP_VISIBLE_DEVICES), never one across both",
        source="ROCm/aiter#3807; vllm-project/vllm vllm/platforms/rocm.py@001eda31",
    ),
    "mixed-gfx": Said(
        message="this node has several GPU types ({gfx}); vLLM assumes one",
        hint="pin each vLLM instance to one GPU type with HIP_VISIBLE_DEVICES",
        source="vllm-project/vllm vllm/platforms/rocm.py@001eda31 (arch read from device 0)",
    ),
    "rdna-multi-gpu": Said(
        message="multi-GPU Radeon setups have hung in RCCL peer-to-peer collectives",
        hint="if tensor-parallel start-up hangs: NCCL_P2P_DISABLE=1 and "
        "--disable-custom-all-reduce",
        source="ROCm/vllm#390; ROCm/rocm-systems#11348",
    ),
    "custom-allreduce-off": Said(
        message="vLLM's custom all-reduce is off on {gfx} (vLLM enables it on MI300-class GPUs "
        "only), so tensor parallelism all-reduces through RCCL",
        hint="nothing to set: vLLM chooses RCCL itself; where TP throughput matters, compare it "
        "with one replica per GPU",
    ),
    "cpx-partition": Said(
        message="GPUs are in CPX partition mode; tensor parallelism across CPX partitions has "
        "produced garbage output",
        hint="use SPX/NPS1 for TP, or one TP=1 replica per partition (vllm-project/vllm#20125)",
        source="vllm-project/vllm#20125",
    ),
    "override-not-needed": Said(
        message="HSA_OVERRIDE_GFX_VERSION={override} is set, but the GPU is supported as it is",
        hint="unset HSA_OVERRIDE_GFX_VERSION; vLLM's feature gates follow the real gfx anyway",
        source="vllm-project/vllm vllm/platforms/rocm.py@001eda31 (arch from amdsmi)",
    ),
    "unofficial-override": Said(
        message="this path relies on HSA_OVERRIDE_GFX_VERSION={override}; the runtime loads "
        "another GPU's code",
        hint="unofficial: it can crash or compute wrong results; test outputs before serving",
        source="ROCm/ROCm#2500; ROCm/rocm-systems PR #5686",
    ),
    # --- advisories about the image a plan pulls (resolver.artifacts.images)
    "digest-changed": Said(
        message="{image} now resolves to {digest}, not the {recorded} in the data",
        hint="the tag was re-pushed; `rocm-vllm matrix refresh --source images` records the new "
        "digest",
    ),
    "digest-from-cache": Said(
        message="{image}: digest {digest} is from the local cache, {age} old; the registry was "
        "not reachable ({why})",
        hint="the tag may have moved since; pin again with --digest once the registry answers",
    ),
    "digest-mismatch": Said(
        message="pulled {image} has digest {local}, not the pinned {expected}",
        hint="the tag moved or the mirror serves other content; pull by digest ({name}@{expected}) "
        "or re-pin with --digest after checking why",
        source="docker image inspect (RepoDigests)",
    ),
    "digest-mismatch/none": _NONE,
    "image-label-gfx": Said(
        message="{ref} says (label rocm-vllm.gfx) it carries GPU code for {said} only, not "
        "{missing}",
        hint="run an image built for this node's targets (rocm-vllm dockerfile builds one)",
        source="docker image inspect (Config.Labels)",
    ),
    "smoke-failed": Said(
        message="the smoke command in {ref} exited {status}: {tail}",
        hint="run it by hand: docker run --rm --entrypoint python3 IMAGE -c 'import vllm, torch'",
        source="smoke test",
    ),
    "smoke-failed/no-output": Said(message="no output"),
    "smoke-no-gpu": Said(
        message="{ref}: torch in the image sees no GPU",
        hint=_SMOKE_NO_GPU_HINT,
        source="smoke test (torch.cuda.device_count)",
    ),
    "smoke-no-gpu/error": Said(
        base="smoke-no-gpu", message="{ref}: torch in the image sees no GPU ({error})"
    ),
    "smoke-gfx-mismatch": Said(
        message="{ref}: the image sees {seen}, not what the node reports ({node}) or the image "
        "carries code for ({arch})",
        hint="an HSA_OVERRIDE_GFX_VERSION in the environment, or a GPU the data does not expect: "
        "vLLM would load code for another GPU",
        source="smoke test (gcnArchName)",
    ),
    "smoke-gfx-mismatch/cuda": Said(
        base="smoke-gfx-mismatch",
        message="{ref}: the image sees compute capability {seen}, not what the node reports "
        "({node}) or the image carries code for ({arch})",
    ),
    "smoke-gfx-mismatch/none": _NONE,
    "smoke-gfx-mismatch/unknown": Said(message="unknown"),
    "smoke-compute-wrong": Said(
        message="{ref}: a 256x256 matrix product on the GPU differs from the CPU's (largest "
        "difference {diff})",
        hint="the image loads but computes garbage here: a ROCm/driver mismatch or code for "
        "another GPU; do not serve from it",
        source="smoke test (torch matmul, GPU against CPU)",
    ),
    "smoke-compute-wrong/not-run": Said(
        base="smoke-compute-wrong",
        message="{ref}: the GPU matrix product did not run ({why})",
        hint="run it by hand: python3 -c 'import torch; print(torch.ones(2).cuda() @ "
        "torch.ones(2).cuda())' in the image",
    ),
    "smoke-compute-wrong/no-result": Said(message="no result"),
    "smoke-serve-failed": Said(
        message="{ref}: serving {model} failed ({why})",
        hint="the model must be in the mounted Hugging Face cache (--hf-cache), small enough for "
        "the GPU; run the printed command by hand to see vLLM's log",
        source="smoke test (vllm serve, /v1/models, /v1/completions)",
    ),
    "smoke-serve-failed/no-answer": Said(message="no answer from the serve script"),
    "smoke-serve-failed/not-started": Said(message="vLLM did not start"),
    "smoke-serve-failed/not-started-tail": Said(message="vLLM did not start: {tail}"),
    "smoke-serve-failed/no-completion": Said(message="no completion: {error}"),
    "smoke-no-vllm": _SMOKE_NO_VERSION,
    "smoke-no-torch": _SMOKE_NO_VERSION,
    "smoke-no-rocm": _SMOKE_NO_VERSION,
    "smoke-vllm-mismatch": _SMOKE_VERSION_MISMATCH,
    "smoke-torch-mismatch": _SMOKE_VERSION_MISMATCH,
    "smoke-rocm-mismatch": _SMOKE_VERSION_MISMATCH,
    "env-not-common": Said(
        message="{name} is recommended for some of this node's GPU types only; left out of the run "
        "command",
        hint="run one instance per GPU type with --devices and set it where it applies",
        source="matrix/gfx.toml",
    ),
    "audit-lacks-gfx": Said(
        message="{ref}: the audit found no {missing} code in {lacking} (expect '" + _HIP + "')",
        hint="pick another image (`rocm-vllm check` now plans around this one) or build from "
        "source for this GPU (`rocm-vllm dockerfile`)",
    ),
    "audit-lacks-gfx/more": Said(message="{lacking} and {more} more"),
    "audit-lacks-gfx/libraries": Said(message="its GPU libraries"),
    # --- advisories about the run command's GPUs (resolver.artifacts.parallel)
    "integrated-gpu-chosen": Said(
        message="--devices includes {chosen}: the integrated GPU ({gfx}), not a discrete one",
        hint="choose the discrete GPUs: --devices {discrete}",
        source="probe (KFD node order)",
    ),
    "integrated-gpu-hidden": Said(
        message="the run command sets HIP_VISIBLE_DEVICES={devices}: the integrated GPU ({gfx}, "
        "device {igpus}) is hidden from vLLM",
        hint="give --devices to choose other GPUs",
        source="probe (KFD node order = HIP device order)",
    ),
    "cpx-one-replica-per-partition": Said(
        message="CPX mode: the run command serves one TP=1 replica on partition {partition} of "
        "{offered}",
        # $((8000 + N)): "800N" is no TCP port from N = 10 on (80062 for partition 62).
        hint="start one per partition: the same command with --devices N --port $((8000 + N)) "
        "for each N (the container is named vllm-N); for tensor parallelism switch the GPUs to "
        "SPX",
    ),
    "one-replica-per-partition": Said(
        message="{mode} mode ({per_gpu} partitions per GPU): the run command serves one TP=1 "
        "replica on partition {partition} of {offered}, not tensor parallelism across them",
        hint="start one per partition: the same command with --devices N --port $((8000 + N)) "
        "for each N (the container is named vllm-N); for a model that needs several, name one "
        "partition of each GPU (--devices 0,{per_gpu},...) or switch the GPUs to SPX",
    ),
    "tp-across-partitions": Said(
        message="--devices {devices}: tensor parallelism across {gpus} {mode} partitions, one on "
        "each GPU; no vLLM or AMD source shows tensor parallelism across partitions working (TP "
        "across CPX partitions gave garbage output)",
        hint="check the server's answers before serving them, or switch the GPUs to SPX for "
        "tensor parallelism",
    ),
    "tensor-parallel-size": Said(
        message="--tensor-parallel-size {tp} uses {tp} of {gpus} GPUs: {why}",
        hint="serve another replica on the other GPUs with --devices, or use pipeline parallelism",
    ),
    "tensor-parallel-over-fit": Said(
        message="--model fits on {fits} GPU(s) (TP {fits}); this command serves one server across "
        "{served} GPUs (TP {served})",
        hint="for {replicas} servers of TP {fits} instead, run each with --tensor-parallel-size "
        "{fits} on its own GPUs and port (`rocm-vllm image --devices ... --port ...` writes each), "
        "or let `rocm-vllm fleet plan --model` write them",
    ),
    "tensor-parallel-size/no-heads": Said(
        base="tensor-parallel-size",
        hint="serve another replica on the other GPUs with --devices, or use pipeline "
        "parallelism; give --model with its config.json on this machine (a path or in "
        "--hf-cache) to size it exactly",
    ),
    "tensor-parallel-size/heads": Said(
        message="the model has {heads} attention heads{kv} ({source}); {tp} is the largest size "
        "up to {gpus} that vLLM accepts for them"
    ),
    "tensor-parallel-size/kv": Said(message=" and {kv_heads} KV heads"),
    "tensor-parallel-size/power-of-two": Said(
        message="{tp} is the largest power of two up to {gpus} (the model's head count is not "
        "known here; nearly every model's is a power of two)"
    ),
    # --- advisories about the decision
    "prefer-not-met": Said(
        message="--prefer {want}: the plan is {plan}, because {why}",
        hint="drop --prefer {want}, or change what stops it",
    ),
    "prefer-not-met/none": Said(message="no {want} path exists for this request"),
    "prefer-not-met/why": Said(message="{label}: {message}"),
    "stack-not-default": Said(
        message="vLLM {vllm} is planned on its {variant} stack (ROCm {rocm}): its default "
        "{default} stack (ROCm {default_rocm}) does not fit here: {why}",
    ),
    "stack-not-default/driver-unknown": Said(
        message="vLLM {vllm} is planned on its {variant} stack (ROCm {rocm}), which the oldest "
        "drivers run: the host's driver release is unknown, and its default {default} stack (ROCm "
        "{default_rocm}) needs a newer one",
        hint="give the driver (--driver) to plan the stack it runs",
    ),
    "newer-releases-unknown": Said(
        message="{count} newer vLLM release(s) ({first} to {last}) have no ROCm facts in the "
        "data; some may fit this node too",
        hint="run `rocm-vllm matrix refresh` to read newer releases",
        source="PyPI (the vllm project's releases); matrix/vllm.toml",
    ),
}


def _resolved(key: str) -> Said:
    return resolved(WORDS, key)


def _filled(value: object) -> object:
    if isinstance(value, Phrase):
        return word(value)
    if isinstance(value, tuple):
        return ", ".join(str(_filled(v)) for v in value)
    return value


_SAID: dict[Phrase, str] = {}  # the same finding recurs across paths (a driver's row, a source)


def word(phrase: Phrase) -> str:
    """What ``phrase`` says: its part of its wording, filled with its values, then its clauses
    (a missing value or key is a bug: KeyError). Said once per process for each finding."""
    try:
        return _SAID[phrase]
    except KeyError:
        if len(_SAID) > 65536:  # a bound for a long-lived process (a fleet of many kinds)
            _SAID.clear()
        said = _SAID[phrase] = _word(phrase)
        return said
    except TypeError:  # a value that does not hash (a caller's list): worded, not kept
        return _word(phrase)


def _word(phrase: Phrase) -> str:
    values = {name: _filled(v) for name, v in phrase.values}
    if not phrase.key:
        said = str(values["text"])
    else:
        w = _resolved(phrase.key)
        template = {
            "message": w.message,
            "hint": w.hint,
            "fix": w.fix,
            "source": w.source,
        }.get(phrase.part)
        if template is None:
            template = w.facts[phrase.index]
        said = template.format(**values)
    return said + "".join(word(t) for t in phrase.then)


def error_words(exc: ResolverError) -> ResolverError:
    """The error as it is said: a ``RequestError`` (the solver's bad input, as data) gets its
    message and hint worded here; any other error already carries its words."""
    from resolver.solve.types import RequestError

    if isinstance(exc, RequestError):
        exc.message = word(exc.said)
        exc.args = (exc.message,)
        exc.hint = word(exc.said_hint) if exc.said_hint is not None else None
    return exc


def say(key: str, /, **values: object) -> Said:
    """Every part of wording ``key`` filled with ``values`` (a derivation's own steps)."""
    return filled(_resolved(key), values)


def text(key: str, /, **values: object) -> str:
    """What the message of wording ``key`` says with ``values``."""
    return word(phrase(key, **values))


def arch_text(arch: Iterable[str]) -> str:
    """How an arch list reads in a sentence."""
    return word(arch_phrase(arch))


# --- how a derivation words a rejected group under a code (resolver.explain.chain) -----------


class Predicate(msgspec.Struct, frozen=True):
    """What a reason code says of its subject, in each form a conclusion needs; the values are
    ``drv`` (the host's driver), ``gfx``, ``py``, ``glibc`` and ``rocm`` (the host's)."""

    positive: str  # "runs on amdgpu 6.1.x", for "none of them ..."
    negative: str  # "does not run on amdgpu 6.1.x", for "it ..." or a named singular subject
    # "do not run on amdgpu 6.1.x", for a named plural subject; "" where it is the singular's
    negative_plural: str = ""
    tail: str = ""  # said after any form


PREDICATES: Final[dict[ReasonCode | str, Predicate]] = {
    "driver-window": Predicate("runs on {drv}", "does not run on {drv}", "do not run on {drv}"),
    "driver-predates-gpu": Predicate(
        "runs {gfx} on {drv}",
        "does not run {gfx} on {drv}",
        "do not run {gfx} on {drv}",
        " (the driver predates the GPU)",
    ),
    "gfx-not-shipped": Predicate(
        "carries code for {gfx}", "carries no code for {gfx}", "carry no code for {gfx}"
    ),
    "gfx-unsupported": Predicate("can run on {gfx}", "cannot run on {gfx}"),
    "python-mismatch": Predicate(
        "installs on {py}",
        "does not install on {py}",
        "do not install on {py}",
        " (pip would silently take the CUDA wheel from PyPI)",
    ),
    "glibc-too-old": Predicate(
        "loads on {glibc}", "does not load on {glibc}", "do not load on {glibc}"
    ),
    "host-rocm-mismatch": Predicate(
        "runs on {rocm}", "does not run on {rocm}", "do not run on {rocm}"
    ),
    "gpu-access-denied": Predicate(
        "can open the GPUs as this user",
        "cannot open the GPUs as this user",
        tail=" (the render and video groups grant /dev/kfd and the render nodes)",
    ),
    "driver-os-unsupported": Predicate(
        "runs on {drv} on this OS",
        "does not run on {drv} on this OS",
        "do not run on {drv} on this OS",
        " (AMD does not support the driver there)",
    ),
    "wsl-host": Predicate("runs on WSL", "does not run on WSL", "do not run on WSL"),
    "kv-cache-dtype-no-backend": Predicate(
        "has a ROCm attention backend for this KV cache dtype",
        "has no ROCm attention backend for this KV cache dtype",
        "have no ROCm attention backend for this KV cache dtype",
    ),
    # every code of UNKNOWN_CODES
    "unknown": Predicate("can be checked for this node", "cannot be checked for this node"),
    # any other code
    "other": Predicate("can be used here", "cannot be used here"),
}
# The symptom users search for, said once per explanation after a gfx-not-shipped conclusion.
HIP_SYMPTOM: Final = " (it would fail with '" + _HIP + "')"
DRIVER_UNKNOWN: Final = "this host's amdgpu driver"
CMAKE_UNREAD: Final = "no known arch list"  # a release whose CMake list was not read
ROCM_UNKNOWN: Final = "the host's ROCm"

# What each feature gate needs, as the premise of a derivation's gate step.
GATE_NEEDS: Final[dict[str, str]] = {
    "fp8-unsupported": "FP8 quantization needs hardware FP8",
    "mx-unsupported/mxfp4": "MXFP4 needs MX compute (a gfx950-class GPU) or a source saying "
    "vLLM runs it weight-only on the GPU",
    "mx-unsupported": "MX (microscaling) formats need a gfx950-class GPU",
    "kv-fp8-unsupported": "an FP8 KV cache needs hardware FP8",
}

# What a group's members have in common under a code, as a premise: (singular, plural) forms of
# "{subject} <verb> ...".
PREMISES: Final[dict[str, tuple[str, str]]] = {
    "driver-window/build": ("{subject} builds on {rocms}", "{subject} build on {rocms}"),
    "driver-window": ("{subject} ships {rocms}", "{subject} ship {rocms}"),
    "gfx/cmake": (
        "{subject} accepts {listed} only (CMake HIP_SUPPORTED_ARCHS)",
        "{subject} accept {listed} only (CMake HIP_SUPPORTED_ARCHS)",
    ),
    "gfx": ("{subject} is built for {built} only", "{subject} are built for {built} only"),
    "artifact-facts-unknown": (
        "{subject} exists, but its arch list was never read",
        "{subject} exist, but their arch lists were never read",
    ),
    "release-facts-unknown": (
        "{subject} exists, but its ROCm build files were never read",
        "{subject} exist, but their ROCm build files were never read",
    ),
}
