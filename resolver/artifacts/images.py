"""The image workflow: choose (through the solver), pin by digest, pull and verify, smoke-test,
and describe the run command. The CLI calls these steps in order and renders what they return.

``choose_image`` is the one place where the choice happens; it asks ``resolver.solve`` with the
candidate kinds restricted to images, so there is no second solver here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from resolver.data.codes import AdvisoryCode
from resolver.data.model import ContainerImage, Entrypoint, Matrix
from resolver.data.node import Node
from resolver.explain import words as wording
from resolver.solve import Advisory, Decision, Evaluation, Request, solve
from resolver.solve.finding import Phrase, finding, phrase
from resolver.util import bounded

if TYPE_CHECKING:
    from resolver.artifacts.engine import DockerEngine, PullEvent
    from resolver.artifacts.parallel import Placement
    from resolver.artifacts.registry import Registry, RegistryClient, ResolvedDigest
    from resolver.artifacts.runcmd import RunSpec
    from resolver.explain.steps import ServeSizing
    from resolver.solve.model import ModelAnswer, ModelRequest

IMAGE_PATHS = frozenset({"image"})

# Printed by the smoke command inside the image: package metadata (no vLLM import side effects),
# the ROCm install's own version file, and the HIP version torch was built with.
SMOKE_SCRIPT = """\
import json, importlib.metadata as md, pathlib
def v(n):
    try: return md.version(n)
    except Exception: return None
try: rocm = pathlib.Path('/opt/rocm/.info/version').read_text().strip()
except OSError: rocm = None
try:
    import torch; hip = torch.version.hip
except Exception: hip = None
out = {'vllm': v('vllm'), 'torch': v('torch'), 'rocm': rocm, 'hip': hip}
try:
    n = torch.cuda.device_count()
    ps = [torch.cuda.get_device_properties(i) for i in range(n)]
    # HIP: the gfx target; CUDA: the compute capability, and the product names
    out['devices'] = [p.gcnArchName if hip else f'{p.major}.{p.minor}' for p in ps]
    if not hip:
        out['cuda'], out['names'] = torch.version.cuda, [p.name for p in ps]
    if n:
        a, b = torch.randn(256, 256), torch.randn(256, 256)
        got = (a.to('cuda') @ b.to('cuda')).cpu()
        want = a @ b
        out['compute'] = {'max_abs_diff': float((got - want).abs().max()),
                          'ok': bool(torch.allclose(got, want, rtol=1e-3, atol=1e-2))}
except Exception as e:
    out['gpu_error'] = (type(e).__name__ + ': ' + str(e))[:300]
print(json.dumps(out))
"""
# --smoke=serve: vLLM started on the model (from the mounted Hugging Face cache, offline), asked
# for /v1/models and one completion, then stopped; one JSON line says how far it got.
SERVE_SCRIPT = """\
import json, subprocess, sys, time, urllib.request
model, base = sys.argv[1], 'http://127.0.0.1:8765'
p = subprocess.Popen(['vllm', 'serve', model, '--port', '8765', '--max-model-len', '512'],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
out, models = {'started': False}, None
deadline = time.time() + 900
while time.time() < deadline and p.poll() is None:
    try:
        models = json.load(urllib.request.urlopen(base + '/v1/models', timeout=5)); break
    except Exception: time.sleep(2)
if models is not None:
    out = {'started': True, 'models': [m.get('id') for m in models.get('data', [])]}
    body = json.dumps({'model': model, 'prompt': 'Hello', 'max_tokens': 4}).encode()
    req = urllib.request.Request(base + '/v1/completions', data=body,
                                 headers={'Content-Type': 'application/json'})
    try:
        answer = json.load(urllib.request.urlopen(req, timeout=300))
        out['completion'] = answer['choices'][0]['text']
    except Exception as e:
        out['completion_error'] = (type(e).__name__ + ': ' + str(e))[:300]
else:
    out['exit_code'] = p.poll()
p.terminate()
try: err = p.communicate(timeout=30)[1] or ''
except Exception: err = ''
if not out['started']: out['stderr_tail'] = err.strip().splitlines()[-1:]
print(json.dumps(out))
"""
SMOKE_ENTRYPOINT = ["python3", "-c"]


# --- choice ----------------------------------------------------------------------------------


def choose_image(
    matrix: Matrix,
    node: Node,
    vllm: SpecifierSet | None,
    *,
    model: ModelRequest | None = None,
    quantization: str | None = None,
    kv_cache_dtype: str | None = None,
) -> Decision:
    """The verified image for ``node``: the solver with candidates restricted to images (and
    ``--model`` with its sizing knobs, issue 37)."""
    return solve(
        matrix,
        node,
        Request(
            vllm=vllm,
            paths=IMAGE_PATHS,
            model=model,
            quantization=quantization,
            kv_cache_dtype=kv_cache_dtype,
        ),
    )


def chosen(decision: Decision) -> ContainerImage | None:
    plan = decision.plan
    return plan.candidate.image if plan is not None else None


# --- digest pinning ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pinned:
    image: ContainerImage  # with .digest set
    resolved: ResolvedDigest
    warnings: tuple[Advisory, ...] = ()


def pin(image: ContainerImage, client: RegistryClient) -> Pinned:
    """Ask the registry for the tag's manifest digest and put it on the image."""
    resolved = client.resolve(image.repo, image.tag)
    warnings: list[Advisory] = []
    if image.digest and image.digest != resolved.digest:
        warnings.append(
            Advisory.said(
                "digest-changed",
                image=f"{image.repo}:{image.tag}",
                digest=resolved.digest,
                recorded=image.digest,
                source=f"{resolved.registry} (manifest HEAD)",
            )
        )
    if resolved.from_cache:
        w = finding(
            "digest-from-cache",
            image=f"{image.repo}:{image.tag}",
            digest=resolved.digest,
            age=format_age(resolved.age_seconds() or 0),
            why=resolved.unreachable,
        )
        warnings.append(
            Advisory(
                code="digest-from-cache",
                message=w.message,
                hint=w.hint,
                source=Phrase.verbatim(f"{resolved.registry} (cached answer)"),
            )
        )
    from msgspec.structs import replace

    return Pinned(replace(image, digest=resolved.digest), resolved, tuple(warnings))


def format_age(seconds: float) -> str:
    """3m, 5h 12m, 2d 4h: how old a cached answer is, for people."""
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{max(minutes, 0)}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def image_ref(image: ContainerImage, registry: Registry) -> str:
    """The reference docker/podman use: mirror host when not Docker Hub, ``@digest`` when pinned."""
    base = f"{registry.image_name(image.repo)}:{image.tag}"
    return f"{base}@{image.digest}" if image.digest else base


# --- pull and verify --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PullReport:
    ref: str
    image_id: str
    repo_digests: tuple[str, ...]
    expected: str | None
    problems: tuple[Advisory, ...]
    labelled_gfx: tuple[str, ...] | None = None  # the image's rocm-vllm.gfx label, if any

    def to_json(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "image_id": self.image_id,
            "repo_digests": list(self.repo_digests),
            "expected_digest": self.expected,
            "verified": self.expected is not None and not self.problems,
            "labelled_gfx": list(self.labelled_gfx) if self.labelled_gfx is not None else None,
        }


def pull_verified(
    engine: DockerEngine,
    name: str,
    tag: str,
    expected: str | None,
    on_progress: Callable[[PullEvent], None] | None = None,
    *,
    auth: dict[str, str] | None = None,
) -> PullReport:
    """Pull ``name:tag`` (the tag, so a moved tag is noticed) and check its RepoDigests.
    ``auth``: the engine's auth_config for a private registry (``Credentials.engine_auth()``)."""
    info = engine.pull(f"{name}:{tag}", on_progress, auth=auth)
    local = {d.rsplit("@", 1)[1] for d in info.repo_digests if d.rsplit("@", 1)[0] == name}
    problems: list[Advisory] = []
    if expected is not None and expected not in local:
        w = finding(
            "digest-mismatch",
            image=f"{name}:{tag}",
            local=", ".join(sorted(local)) or phrase("digest-mismatch/none"),
            expected=expected,
            name=name,
        )
        problems.append(
            Advisory(code="digest-mismatch", message=w.message, hint=w.hint, source=w.source)
        )
    return PullReport(
        f"{name}:{tag}",
        info.id,
        info.repo_digests,
        expected,
        tuple(problems),
        labelled_gfx=_labelled_gfx(info.labels),
    )


def _labelled_gfx(labels: tuple[tuple[str, str], ...]) -> tuple[str, ...] | None:
    """The targets an image's ``rocm-vllm.gfx`` label states (``rocm-vllm dockerfile`` images)."""
    said = dict(labels).get("rocm-vllm.gfx")
    if said is None:
        return None
    return tuple(g for g in said.replace(",", ";").split(";") if g)


def label_problems(report: PullReport, node: Node) -> list[Advisory]:
    """``image-label-gfx``: the pulled image says (its ``rocm-vllm.gfx`` label) that it carries
    code for other targets than the node's: it would fail with "invalid device function"."""
    said = report.labelled_gfx
    missing = [g for g in node.gfx_targets if said is not None and g not in said]
    if not missing:
        return []
    from resolver.artifacts.audit import shown

    w = finding(
        "image-label-gfx",
        ref=report.ref,
        said=shown(";".join(said or ())),
        missing=", ".join(missing),
    )
    return [Advisory(code="image-label-gfx", message=w.message, hint=w.hint, source=w.source)]


# --- smoke test -------------------------------------------------------------------------------


SMOKE_STAGES: tuple[str, ...] = ("versions", "devices", "compute", "serve")


@dataclass(frozen=True, slots=True)
class SmokeReport:
    ref: str
    found: dict[str, str | None]
    claimed: dict[str, str | None]
    exit_code: int
    gpu: bool
    problems: tuple[Advisory, ...] = field(default_factory=tuple)
    # Per stage (SMOKE_STAGES): {"status": passed | failed | skipped, ...what it saw}.
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "found": self.found,
            "claimed": self.claimed,
            "exit_code": self.exit_code,
            "gpu_devices": self.gpu,
            "stages": {s: self.stages.get(s, {"status": "skipped"}) for s in SMOKE_STAGES},
            "problems": [
                {"code": p.code, "message": p.message, "hint": p.hint} for p in self.problems
            ],
        }


def nvidia_host() -> bool:
    """Whether this machine's NVIDIA driver is loaded (its control device exists): the GPUs are
    then passed the NVIDIA way (``--gpus all``, the container toolkit), not as device nodes."""
    return Path("/dev/nvidiactl").exists()


def gpu_devices() -> tuple[list[str], list[str]]:
    """Device nodes and their groups (numeric) when this machine has AMD GPUs, else empty."""
    kfd = Path("/dev/kfd")
    if not kfd.exists():
        return [], []
    dri = Path("/dev/dri")
    nodes = [kfd, *sorted(dri.glob("renderD*")), *sorted(dri.glob("card*"))]
    groups = sorted({str(p.stat().st_gid) for p in nodes})
    return [f"{p}:{p}:rwm" for p in nodes], groups


def smoke(
    engine: DockerEngine,
    ref: str,
    image: ContainerImage,
    *,
    command: list[str] | None = None,
    devices: tuple[list[str], list[str]] | None = None,
    node_gfx: tuple[str, ...] = (),
    node_caps: tuple[str, ...] = (),
    nvidia: bool | None = None,
) -> SmokeReport:
    """Run the version probe inside ``ref`` and compare with what the matrix claims for it. An
    NVIDIA image gets the host's NVIDIA GPUs (``--gpus all``) where its driver is loaded; its
    devices are judged by compute capability (``node_caps``, the image's arch list)."""
    cuda = image.vendor == "nvidia"
    dev, groups = ([], []) if cuda else devices if devices is not None else gpu_devices()
    gpus = cuda and (nvidia if nvidia is not None else nvidia_host())
    if command is None:
        entrypoint: list[str] | None = SMOKE_ENTRYPOINT
        args = [SMOKE_SCRIPT]
    else:
        entrypoint, args = command[:1], command[1:]
    result = engine.run(
        ref,
        args,
        entrypoint=entrypoint,
        devices=dev,
        group_add=groups,
        gpu_flags=bool(dev) or gpus,
        nvidia_gpus=gpus,
    )
    claimed = {
        "vllm": str(image.vllm) if image.vllm else None,
        "torch": image.torch,
        "rocm": str(image.rocm) if image.rocm else None,
    }
    found: dict[str, str | None] = {"vllm": None, "torch": None, "rocm": None, "hip": None}
    problems: list[Advisory] = []
    parsed = _last_json(result.stdout)
    if result.exit_code != 0 or parsed is None:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [
            wording.text("smoke-failed/no-output")
        ]
        problems.append(
            Advisory.said("smoke-failed", ref=ref, status=result.exit_code, tail=tail[0][:200])
        )
    else:
        from resolver.artifacts.audit import shown

        # The image's own words: escaped and bounded before they reach a terminal or the JSON.
        found.update(
            {k: (shown(str(parsed[k]))[:100] if parsed.get(k) is not None else None) for k in found}
        )
        problems += _compare(ref, claimed, found)
    stages: dict[str, dict[str, Any]] = {
        "versions": {"status": "failed" if problems else "passed"},
    }
    if parsed is not None:
        gpu_stages, gpu_problems = judge_gpu(
            ref, parsed, image, node_gfx, gpu=bool(dev) or gpus, node_caps=node_caps
        )
        stages.update(gpu_stages)
        problems += gpu_problems
    return SmokeReport(
        ref, found, claimed, result.exit_code, bool(dev) or gpus, tuple(problems), stages=stages
    )


def smoke_serve(
    engine: DockerEngine,
    ref: str,
    model: str | None,
    hf_cache: str,
    *,
    devices: tuple[list[str], list[str]] | None = None,
    cuda: bool = False,
    nvidia: bool | None = None,
) -> tuple[dict[str, Any], list[Advisory]]:
    """``--smoke=serve``: vLLM in the image serves ``model`` from the host's Hugging Face cache
    (mounted, offline), answers /v1/models and one completion, and is stopped. An NVIDIA image
    (``cuda``) gets the GPUs with ``--gpus all`` where the NVIDIA driver is loaded."""
    dev, groups = ([], []) if cuda else devices if devices is not None else gpu_devices()
    gpus = cuda and (nvidia if nvidia is not None else nvidia_host())
    if model is None:
        return {"status": "skipped", "why": "no --model to serve"}, []
    if cuda and not gpus:
        why = "this machine has no NVIDIA driver (/dev/nvidiactl): no GPU to serve on"
        return {"status": "skipped", "why": why}, []
    if not dev and not gpus:
        return {"status": "skipped", "why": "this machine has no /dev/kfd: no GPU to serve on"}, []
    from resolver.artifacts.runcmd import model_mount

    cache = str(Path(hf_cache).expanduser())
    result = engine.run(
        ref,
        [SERVE_SCRIPT, model],
        entrypoint=SMOKE_ENTRYPOINT,
        devices=dev,
        group_add=groups,
        gpu_flags=True,
        nvidia_gpus=gpus,
        environment={"HF_HUB_OFFLINE": "1"},
        volumes={
            cache: {"bind": "/root/.cache/huggingface", "mode": "ro"},
            # a local model, where vLLM is told to look
            **({mount: {"bind": mount, "mode": "ro"}} if (mount := model_mount(model)) else {}),
        },
        timeout=1200,
    )
    return judge_serve(ref, _last_json(result.stdout), model)


def _base_gfx(arch_name: str) -> str:
    """``gfx942:sramecc+:xnack-`` (hipDeviceProp_t.gcnArchName) -> ``gfx942``."""
    return arch_name.split(":", 1)[0].strip().lower()


def judge_gpu(
    ref: str,
    parsed: dict[str, Any],
    image: ContainerImage,
    node_gfx: tuple[str, ...],
    *,
    gpu: bool,
    node_caps: tuple[str, ...] = (),
) -> tuple[dict[str, dict[str, Any]], list[Advisory]]:
    """The devices and compute stages from the smoke script's answer: the HIP devices the image
    sees (each gcnArchName against the node's targets and the image's arch list), and a matrix
    product on the GPU against the CPU's. Skipped where the host passed no GPU (no /dev/kfd)."""
    if not gpu:
        why = (
            "this machine has no NVIDIA driver (/dev/nvidiactl): no GPU was passed to the container"
            if image.vendor == "nvidia"
            else "this machine has no /dev/kfd: no GPU was passed to the container"
        )
        return {"devices": {"status": "skipped", "why": why}, "compute": {"status": "skipped"}}, []
    from resolver.artifacts.audit import shown

    problems: list[Advisory] = []
    raw = parsed.get("devices")
    seen = [shown(str(d))[:80] for d in raw] if isinstance(raw, list) else []
    error = shown(str(parsed.get("gpu_error") or ""))[:300]
    devices: dict[str, Any] = {"status": "passed", "seen": seen}
    if not seen:
        devices["status"] = "failed"
        problems.append(
            Advisory.said("smoke-no-gpu/error" if error else "smoke-no-gpu", ref=ref, error=error)
        )
    if image.vendor == "nvidia":
        from resolver.solve.cuda import _covers

        # A capability the node did not report, or one the image's arch list does not cover
        # (CUDA's rules: family targets, PTX), is code for another GPU.
        wrong = sorted(
            {
                d
                for d in seen
                if (node_caps and d not in node_caps) or (image.arch and not _covers(image.arch, d))
            }
        )
        if wrong:
            devices["status"] = "failed"
            problems.append(
                Advisory.said(
                    "smoke-gfx-mismatch/cuda",
                    ref=ref,
                    seen=", ".join(wrong),
                    node=", ".join(node_caps) or phrase("smoke-gfx-mismatch/none"),
                    arch=", ".join(image.arch) or phrase("smoke-gfx-mismatch/unknown"),
                )
            )
        wrong = []
    else:
        wrong = sorted(
            {
                _base_gfx(d)
                for d in seen
                if _base_gfx(d) not in node_gfx or (image.arch and _base_gfx(d) not in image.arch)
            }
        )
    if wrong:
        devices["status"] = "failed"
        problems.append(
            Advisory.said(
                "smoke-gfx-mismatch",
                ref=ref,
                seen=", ".join(wrong),
                node=", ".join(node_gfx) or phrase("smoke-gfx-mismatch/none"),
                arch=", ".join(image.arch) or phrase("smoke-gfx-mismatch/unknown"),
            )
        )
    compute: dict[str, Any] = {"status": "skipped"}
    result = parsed.get("compute")
    if isinstance(result, dict):
        diff = result.get("max_abs_diff")
        ok = result.get("ok") is True
        compute = {
            "status": "passed" if ok else "failed",
            "max_abs_diff": diff if isinstance(diff, int | float) else None,
        }
        if not ok:
            problems.append(
                Advisory.said("smoke-compute-wrong", ref=ref, diff=compute["max_abs_diff"])
            )
    elif seen:
        why = error or wording.text("smoke-compute-wrong/no-result")
        compute = {"status": "failed", "why": why}
        problems.append(Advisory.said("smoke-compute-wrong/not-run", ref=ref, why=why))
    return {"devices": devices, "compute": compute}, problems


def judge_serve(
    ref: str, parsed: dict[str, Any] | None, model: str
) -> tuple[dict[str, Any], list[Advisory]]:
    """The serve stage from ``SERVE_SCRIPT``'s answer: vLLM started, listed the model, answered
    one completion."""
    from resolver.artifacts.audit import shown

    if parsed is not None and parsed.get("started") and "completion" in parsed:
        models = [shown(str(m))[:200] for m in parsed.get("models") or []]
        return {"status": "passed", "models": models, "model": model}, []
    if parsed is None:
        why = phrase("smoke-serve-failed/no-answer")
    elif not parsed.get("started"):
        tail = parsed.get("stderr_tail") or []
        why = (
            phrase("smoke-serve-failed/not-started-tail", tail=shown(str(tail[-1]))[:200])
            if tail
            else phrase("smoke-serve-failed/not-started")
        )
    else:
        error = shown(str(parsed.get("completion_error")))[:200]
        why = phrase("smoke-serve-failed/no-completion", error=error)
    w = finding("smoke-serve-failed", ref=ref, model=model, why=why)
    return {"status": "failed", "why": wording.word(why), "model": model}, [
        Advisory(code="smoke-serve-failed", message=w.message, hint=w.hint, source=w.source)
    ]


def _last_json(text: str) -> dict[str, Any] | None:
    for line in reversed(text.strip().splitlines()):
        try:
            data = bounded.loads_json(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None


_LEADING_VERSION = re.compile(r"^[0-9]+(?:\.[0-9]+)*")


def _release(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    match = _LEADING_VERSION.match(text.strip().lstrip("v"))
    if not match:
        return None
    try:
        return Version(match.group(0)).release
    except ValueError:
        return None


def _compare(
    ref: str, claimed: dict[str, str | None], found: dict[str, str | None]
) -> list[Advisory]:
    """A claim matches when the found version starts with every component the claim gives
    (claim 2.10 matches 2.10.0+git..., claim 7.2.3 matches 7.2.3-82)."""
    out: list[Advisory] = []
    keys: tuple[tuple[str, AdvisoryCode, AdvisoryCode], ...] = (
        ("vllm", "smoke-no-vllm", "smoke-vllm-mismatch"),
        ("torch", "smoke-no-torch", "smoke-torch-mismatch"),
        ("rocm", "smoke-no-rocm", "smoke-rocm-mismatch"),
    )
    for key, none_code, mismatch_code in keys:
        want = _release(claimed[key])
        if want is None:
            continue
        got_text = found[key]
        got = _release(got_text)
        if got is None and key == "rocm":
            # No /opt/rocm/.info/version (TheRock layouts): torch's HIP version gives the series.
            got, want = _release(found["hip"]), want[:2]
            got = got[:2] if got else None
            got_text = found["hip"]
        if got is None:
            w = finding(none_code, ref=ref, part=key, claimed=claimed[key])
            out.append(Advisory(code=none_code, message=w.message, hint=w.hint, source=w.source))
        elif got[: len(want)] != want:
            w = finding(mismatch_code, ref=ref, part=key, got=got_text, claimed=claimed[key])
            out.append(
                Advisory(code=mismatch_code, message=w.message, hint=w.hint, source=w.source)
            )
    return out


# --- the run command --------------------------------------------------------------------------


def serving_env(
    matrix: Matrix, node: Node, override: str | None
) -> tuple[tuple[tuple[str, str], ...], list[Advisory]]:
    """Per-gfx env from matrix/gfx.toml; a variable the node's targets disagree on is left out;
    ``override``: the HSA_OVERRIDE_GFX_VERSION the path relies on (``Evaluation.override``)."""
    values: dict[str, set[str]] = {}
    for name in node.gfx_targets:
        target = matrix.gfx_target(name)
        for key, value in target.env if target else ():
            values.setdefault(key, set()).add(value)
    warnings: list[Advisory] = []
    env: list[tuple[str, str]] = []
    for key, vals in values.items():
        recommended_by_all = all(
            key in dict(t.env)
            for t in (matrix.gfx_target(n) for n in node.gfx_targets)
            if t is not None
        )
        if len(vals) == 1 and recommended_by_all:
            env.append((key, next(iter(vals))))
        else:
            warnings.append(Advisory.said("env-not-common", name=key))
    if override:
        env.append(("HSA_OVERRIDE_GFX_VERSION", override))
    return tuple(env), warnings


def host_render_gid(node: Node) -> int | None:
    """The group of the render nodes, when this (live) node's differs from `video`."""
    if node.origin != "probe":
        return None
    try:
        import grp

        video = grp.getgrnam("video").gr_gid
    except (KeyError, ImportError):
        video = None
    gids = {p.stat().st_gid for p in Path("/dev/dri").glob("renderD*")}
    others = sorted(g for g in gids if g != video and g != 0)
    return others[0] if others else None


def placement(
    node: Node, *, devices: tuple[int, ...] | None, model: str | None, hf_cache: str
) -> Placement:
    """GPUs and tensor-parallel size for the run command (``resolver.artifacts.parallel.place``)."""
    from resolver.artifacts.parallel import place

    return place(node, devices=devices, model=model, hf_cache=hf_cache)


def run_spec(
    *,
    ref: str,
    entrypoint: Entrypoint,
    vendor: str,
    env: tuple[tuple[str, str], ...],
    node: Node,
    model: str | None,
    port: int,
    devices: tuple[int, ...] | None,
    hf_cache: str,
    placed: Placement | None = None,
    sizing: ServeSizing | None = None,
) -> RunSpec:
    from resolver.artifacts.runcmd import RunSpec

    placed = placed or placement(node, devices=devices, model=model, hf_cache=hf_cache)
    # --model's sizes (explain.steps.serve_sizing, at this placement's TP unless the user pinned
    # one) set vLLM's sizing flags.
    tp = sizing.tensor_parallel_size if sizing is not None else None
    return RunSpec(
        image=ref,
        entrypoint=entrypoint,
        model=model,
        port=port,
        hf_cache=hf_cache,
        env=env,
        devices=placed.devices,
        tensor_parallel=tp or placed.tensor_parallel,
        max_model_len=sizing.max_model_len if sizing is not None else None,
        gpu_memory_utilization=sizing.gpu_memory_utilization if sizing is not None else None,
        kv_cache_dtype=sizing.kv_cache_dtype if sizing is not None else None,
        quantization=sizing.quantization if sizing is not None else None,
        render_gid=host_render_gid(node) if vendor == "amd" else None,
        vendor=vendor,
        # One replica per CPX partition: each container needs a name of its own.
        name=f"vllm-{placed.devices[0]}" if placed.replicas > 1 and placed.devices else "vllm",
    )


def over_fit(
    answer: ModelAnswer | None, request: ModelRequest | None, served: int | None
) -> list[Advisory]:
    """``tensor-parallel-over-fit``: a run command serves one server across more GPUs than the
    model needs (the fit's smallest TP, the user's TP not pinned), said so the choice is seen."""
    fit = answer.fit if answer is not None else None
    pinned = request is not None and request.tensor_parallel_size
    if fit is None or not fit.fits or pinned or served is None:
        return []
    fits = fit.tensor_parallel_size
    if served <= fits:
        return []
    return [
        Advisory.said(
            "tensor-parallel-over-fit",
            fits=fits,
            served=served,
            replicas=served // fits,
            severity="info",
        )
    ]


def built_image_run(
    m: Matrix,
    node: Node,
    built: Evaluation,
    ref: str,
    *,
    model: str | None,
    answer: ModelAnswer | None = None,
    wanted: ModelRequest | None = None,
) -> RunSpec:
    """How to run the image a `rocm-vllm dockerfile` build makes (``ref``, its tag): its
    entrypoint is `vllm serve`, as vllm/vllm-openai-rocm's is; the node's devices, the gfx
    env and the override the source build relies on, and ``--model``'s sizes (``answer``, the
    solver's fit of the built release; ``wanted``, the request) at the GPUs it is placed on, as
    `rocm-vllm image` runs a published one."""
    from resolver.artifacts.runcmd import DEFAULT_HF_CACHE
    from resolver.explain.steps import serve_sizing

    env, _warnings = serving_env(m, node, built.override)  # said by `check`, not again here
    placed = placement(node, devices=None, model=model, hf_cache=DEFAULT_HF_CACHE)
    return run_spec(
        ref=ref,
        entrypoint="vllm-serve",
        vendor="amd",
        env=env,
        node=node,
        model=model,
        port=8000,
        devices=None,
        hf_cache=DEFAULT_HF_CACHE,
        placed=placed,
        sizing=serve_sizing(answer, wanted, tensor_parallel=placed.tensor_parallel),
    )


def audit_image(
    m: Matrix, image: ContainerImage, registry_url: str, node: Node
) -> tuple[dict[str, Any] | None, list[Advisory], Any]:
    """Audit the pinned image straight from the registry (``artifacts.audit``): the images.toml
    record it makes (its arch list what every library that decides "invalid device function"
    carries, confidence exact, the audit as its source), the problems (a node gfx no such library
    has code for), and the audit itself."""
    from resolver.artifacts.audit import audit, common_arch
    from resolver.data import overlay

    assert image.digest is not None
    result = audit(m, f"docker://{image.repo}@{image.digest}", registry=registry_url)
    arch = common_arch(m, result)
    problems: list[Advisory] = []
    missing = [g for g in node.gfx_targets if g not in arch]
    if missing:
        lacking = sorted(
            {lib.path.rsplit("!", 1)[-1] for g in missing for lib in result.lacking(m, g)}
        )
        libraries = ", ".join(lacking[:3]) or phrase("audit-lacks-gfx/libraries")
        if len(lacking) > 3:
            libraries = phrase("audit-lacks-gfx/more", lacking=libraries, more=len(lacking) - 3)
        problems.append(
            Advisory.said(
                "audit-lacks-gfx",
                ref=image.ref,
                missing=", ".join(missing),
                lacking=libraries,
                source=f"rocm-vllm audit docker://{image.repo}@{image.digest}",
            )
        )
    raw = next(
        (
            dict(r)
            for r in overlay.current_raw().get("images.toml", [])
            if r.get("repo") == image.repo and r.get("tag") == image.tag
        ),
        None,
    )
    if raw is None:
        return None, problems, result
    return audited_record(m, raw, image.digest, result), problems, result


def audited_record(
    m: Matrix, raw: dict[str, Any], digest: str, result: Any
) -> dict[str, Any] | None:
    """The images.toml record ``raw`` with what an audit of its image at ``digest`` read: the
    arch list every judged library carries (confidence exact, the audit as its source); None
    when the audit found none of the libraries that decide "invalid device function" (then it
    says nothing about the arch list). ``image --audit`` and ``refresh --source images
    --audit`` both write this."""
    from resolver.artifacts.audit import common_arch

    judged = result.judged()
    # A read that left archives unread (nested too deep) says nothing exact of the arch list.
    if not judged or result.unread:
        return None
    arch = common_arch(m, result)
    repo = str(raw.get("repo"))
    libs = ", ".join(sorted({lib.path.rsplit("!", 1)[-1].rsplit("/", 1)[-1] for lib in judged})[:4])
    was = ", ".join(str(a) for a in raw.get("arch") or ()) or "unknown"
    out = dict(raw)
    out.update(
        {
            "digest": digest,
            "arch": list(arch),
            "confidence": "exact",
            "arch_from": "audit",
            "source": f"rocm-vllm audit docker://{repo}@{digest}: the GPU code of "
            f"{len(judged)} librar{'y' if len(judged) == 1 else 'ies'} ({libs})",
            "note": "audited: the arch list is what every library that decides 'invalid device "
            f"function' carries, read from its code (was: {was})",
        }
    )
    out.pop("read_at", None)
    # The audit read every library: what an issue said the image lacks is now in ``arch``.
    out.pop("lacks", None)
    out.pop("lacks_source", None)
    return out
