"""The `image` workflow: the verified image for a node, pinned, audited, pulled and smoke-tested
on request, and its run command (docker, podman, compose or an Apptainer definition).

``run`` is what ``rocm-vllm image`` does, as a library call: it decides, asks the registry and the
engine, and returns the answer (the JSON document ``--json`` prints, the artifact, the exit code).
It never prints; the caller shows pull progress through ``on_pull``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from resolver.artifacts.runcmd import DEFAULT_HF_CACHE
from resolver.data.model import ContainerImage, Matrix
from resolver.data.node import Node

if TYPE_CHECKING:
    from resolver.solve.model import ModelRequest


@dataclass(frozen=True, kw_only=True, slots=True)
class ImageOptions:
    """What the user asked for besides the node (``rocm-vllm image``'s flags)."""

    vllm: str | None = None
    registry: str | None = None
    digest: bool = False
    pull: bool = False
    audit: bool = False
    smoke: str | None = None  # None, "gpu" (versions, devices, compute) or "serve" (and vLLM)
    fmt: str = "docker"
    port: int = 8000
    model: str | None = None
    devices: tuple[int, ...] | None = None
    hf_cache: str = DEFAULT_HF_CACHE
    # Where the artifact lands, for the follow-up commands that name it (-o, a redirect of
    # stdout, else the default name).
    compose_file: str = "compose.yaml"
    definition_file: str = "vllm.def"
    # --model's config and sizing knobs, and the request flags that go with them (issue 37)
    model_request: ModelRequest | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None


# The --json fields that carry something to run: null when the answer is not a yes.
RUNNABLE_KEYS = ("run_command", "run_args", "compose", "definition", "follow_up")


@dataclass(frozen=True, slots=True)
class ImageAnswer:
    out: dict[str, Any]  # the --json document
    # What stdout (or -o) carries; None when no image fits, or when the chosen one (``image``)
    # failed a check (exit_code != 0).
    artifact: str | None
    file_text: str | None  # the compose file or .def, where the format has one
    exit_code: int
    image: ContainerImage | None = None  # the chosen image (with its digest when pinned)
    ref: str | None = None  # what the run command pulls


def check_options(opts: ImageOptions) -> None:
    """Refuse bad run-command inputs before anything slow (registry, engine) happens."""
    from resolver.artifacts.runcmd import FORMATS, check_run_inputs
    from resolver.util.errors import UsageError

    if opts.fmt not in (*FORMATS, "apptainer"):
        raise UsageError(
            f"--format {opts.fmt!r} is not one of {', '.join(FORMATS)}, apptainer",
            hint="use --format docker, podman, compose or apptainer",
        )
    check_run_inputs(model=opts.model, port=opts.port, hf_cache=opts.hf_cache)


def run(
    m: Matrix,
    node: Node,
    opts: ImageOptions,
    *,
    on_pull: Callable[[Any], None] | None = None,
) -> ImageAnswer:
    """Decide the image, then pin, audit, pull and smoke-test it as ``opts`` asks."""
    from resolver.artifacts import images
    from resolver.artifacts.runcmd import render
    from resolver.explain.steps import serve_sizing
    from resolver.util.versions import parse_spec

    check_options(opts)
    decision = images.choose_image(
        m,
        node,
        parse_spec(opts.vllm) if opts.vllm else None,
        model=opts.model_request,
        quantization=opts.quantization,
        kv_cache_dtype=opts.kv_cache_dtype,
    )
    chosen = images.chosen(decision)
    out: dict[str, Any] = _base_json(decision)
    if chosen is None:
        # "unknown" keeps its own exit code: the data cannot tell, which is not a no.
        code = decision.exit_code if decision.verdict == "unknown" else 1
        out["exit_code"] = code
        if decision.verdict != "unknown":
            out["source_plan"] = _source_plan(m, node, decision)
        return ImageAnswer(out, None, None, code)

    from resolver.artifacts.registry import parse_registry

    reg = parse_registry(opts.registry)
    warnings = list(decision.warnings)
    if opts.digest or opts.audit:
        from resolver.artifacts.registry import DigestCache, RegistryClient

        client = RegistryClient(reg, cache=DigestCache())
        try:
            pinned = images.pin(chosen, client)
        finally:
            client.close()
        chosen = pinned.image
        warnings += pinned.warnings
        resolved = pinned.resolved
        age = resolved.age_seconds()
        out["digest_source"] = {
            "registry": resolved.registry,
            "media_type": resolved.media_type,
            "cached": resolved.from_cache,
            # Set only when the registry was unreachable and the cache answered instead.
            "cached_at": _iso(resolved.cached_at),
            "cache_age_seconds": round(age) if age is not None else None,
            "registry_unreachable": resolved.unreachable,
        }
    ref = images.image_ref(chosen, reg)
    override = decision.plan.override if decision.plan is not None else None
    env, env_warnings = images.serving_env(m, node, override)
    warnings += env_warnings
    placed = images.placement(node, devices=opts.devices, model=opts.model, hf_cache=opts.hf_cache)
    warnings += placed.warnings
    spec = images.run_spec(
        ref=ref,
        entrypoint=chosen.entrypoint,
        vendor=chosen.vendor,
        env=env,
        node=node,
        model=opts.model,
        port=opts.port,
        devices=opts.devices,
        hf_cache=opts.hf_cache,
        placed=placed,
        sizing=serve_sizing(
            decision.model, opts.model_request, tensor_parallel=placed.tensor_parallel
        ),
    )
    warnings += images.over_fit(decision.model, opts.model_request, spec.tensor_parallel)
    out.update(_image_json(chosen, ref, reg.url))
    artifact: str
    file_text: str | None
    if opts.fmt == "apptainer":
        from resolver.artifacts import apptainer

        run_cmd = apptainer.run_command(spec)
        # The artifact is the .def file (what `> vllm.def` should hold); the exec command goes to
        # stderr.
        file_text = apptainer.definition(spec, labels={"org.rocm-vllm.vllm": str(chosen.vllm)})
        artifact = file_text
        out.update(run_cmd.to_json())
        out["definition"] = file_text
        out["follow_up"] = apptainer.follow_up(spec, opts.definition_file)
    else:
        rendered = render(spec, opts.fmt, compose_file=opts.compose_file)  # type: ignore[arg-type]
        file_text, artifact = rendered.file_text, rendered.artifact
        out.update(rendered.to_json())
    out["parallel"] = {
        "devices": list(placed.devices) if placed.devices is not None else None,
        "tensor_parallel_size": placed.tensor_parallel,
        "gpus": placed.gpus,
        "replicas": placed.replicas,
        "attention_heads": placed.heads,
        "kv_heads": placed.kv_heads,
        "attention_heads_source": placed.heads_source,
    }
    problems: list[Any] = []
    if opts.audit and chosen.vendor == "amd":
        from resolver.data import overlay
        from resolver.util.timestamps import now

        record, audit_problems, audited = images.audit_image(m, chosen, reg.url, node)
        problems += audit_problems
        out["audit"] = {
            "libraries": len(audited.libraries),
            "judged": len(audited.judged()),
            "arch": record["arch"] if record else [],
            "written": None,
        }
        if record is not None:
            out["audit"]["written"] = str(
                overlay.write({"images.toml": [record]}, written_at=now())
            )

    if opts.pull or opts.smoke:
        from resolver.artifacts.engine import DockerEngine

        engine = DockerEngine()
        try:
            problems += _engine_steps(engine, reg, chosen, ref, out, opts, on_pull, node)
        finally:
            engine.close()

    from resolver.explain import warning_json
    from resolver.solve.advisories import after_registry_checks

    warnings = after_registry_checks(
        warnings,
        image=f"{chosen.repo}:{chosen.tag}",
        pinned=out["digest"] is not None and "digest_source" in out,
        contents_checked=bool(out.get("smoke")) and not any(p.code for p in problems),
    )
    out["warnings"] = [warning_json(w) for w in dict.fromkeys(warnings)]
    out["problems"] = [warning_json(p) for p in problems]
    if problems:
        # The pulled image failed its checks (digest, smoke): this image does not run the plan
        # here, whatever the data said; the verdict says so, not only the exit status.
        out["verdict"] = "unsupported"
        out["verdict_before_checks"] = decision.verdict
    # Same exit as `check` for the same verdict.
    out["exit_code"] = 1 if problems else decision.exit_code
    if out["exit_code"] != 0:
        # issue 34: a failed check (audit, pull, smoke) hands over nothing runnable: no run
        # command, compose file or definition, here or in the JSON; what was found stays.
        for key in RUNNABLE_KEYS:
            if key in out:
                out[key] = None
        return ImageAnswer(out, None, None, out["exit_code"], image=chosen, ref=ref)
    return ImageAnswer(out, artifact, file_text, out["exit_code"], image=chosen, ref=ref)


def _engine_steps(
    engine: Any,
    reg: Any,
    chosen: Any,
    ref: str,
    out: dict[str, Any],
    opts: ImageOptions,
    on_pull: Callable[[Any], None] | None,
    node: Node,
) -> list[Any]:
    from resolver.artifacts import images

    problems: list[Any] = []
    if opts.pull:
        from resolver.artifacts.credentials import lookup

        name, tag = reg.image_name(chosen.repo), chosen.tag
        creds = lookup(reg.host)  # the same Docker config credentials --digest used; never printed
        auth = creds.engine_auth() if creds is not None else None

        def relay(event: Any) -> None:
            # The engine reports the tag itself as a "layer" ("Pulling from ..."): not a layer.
            if on_pull is not None and event.layer != tag:
                on_pull(event)

        report = images.pull_verified(
            engine, name, tag, chosen.digest, relay if on_pull else None, auth=auth
        )
        out["pull"] = report.to_json()
        problems += report.problems
        problems += images.label_problems(report, node)
    if opts.smoke:
        caps = tuple(
            sorted(
                {
                    str(g["compute_capability"])
                    for g in node.nvidia_gpus
                    if g.get("compute_capability")
                }
            )
        )
        smoke_report = images.smoke(engine, ref, chosen, node_gfx=node.gfx_targets, node_caps=caps)
        out["smoke"] = smoke_report.to_json()
        problems += smoke_report.problems
        if opts.smoke == "serve":
            stage, serve_problems = images.smoke_serve(
                engine, ref, opts.model, opts.hf_cache, cuda=chosen.vendor == "nvidia"
            )
            out["smoke"]["stages"]["serve"] = stage
            problems += serve_problems
    return problems


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def _source_plan(m: Matrix, node: Node, images_only: Any) -> dict[str, Any] | None:
    """What `check` plans where no image fits: a source build (gfx1030; gfx1031 built as gfx1030
    under HSA_OVERRIDE_GFX_VERSION), with check's verdict, so `image` names the same answer."""
    from resolver.explain import candidate_json
    from resolver.explain.steps import plan_steps
    from resolver.solve import Request, solve

    full = solve(m, node, Request(vllm=images_only.request.vllm))
    plan = full.plan
    if plan is None or not plan.candidate.from_source:
        return None
    return {
        "verdict": full.verdict,
        "plan": candidate_json(plan.candidate),
        "unofficial": plan.unofficial,
        "override": plan.override,
        "built_for": list(plan.built_for(node.gfx_targets)),
        "commands": [cmd for cmd, _why in plan_steps(plan, node)],
    }


def _base_json(decision: Any) -> dict[str, Any]:
    from resolver.explain import candidate_json, missing_json, reason_json, warning_json
    from resolver.explain.report import model_json

    return {
        "schema_version": 1,
        "verdict": decision.verdict,
        "exit_code": decision.exit_code,
        "node": {
            "gfx_targets": list(decision.node.gfx_targets),
            "gpus": decision.node.logical_gpu_count,
            "gpu_vendor": decision.node.gpu_vendor,  # whose GPUs "gpus" counts
            "driver_version": decision.node.driver_version,
        },
        "request": {
            "vllm": str(decision.request.vllm) if decision.request.vllm is not None else None
        },
        # --model: the decision's answer about it, as check --json carries it (issue 37)
        "model": model_json(decision.model) if decision.model is not None else None,
        "image": None,
        "digest": None,
        "run_command": None,
        "run_args": None,
        "warnings": [warning_json(w) for w in decision.warnings],
        "blockers": [reason_json(r) for r in decision.blockers],
        "missing": [missing_json(f) for f in decision.missing],
        "rejected": [
            {
                "image": e.candidate.label,
                "candidate": candidate_json(e.candidate),
                "reasons": [reason_json(r) for r in e.reasons],
            }
            for e in decision.rejected
        ],
        "pull": None,
        "smoke": None,
        "problems": [],
    }


def _image_json(chosen: Any, ref: str, registry_url: str) -> dict[str, Any]:
    return {
        "image": ref,
        "digest": chosen.digest,
        "repo": chosen.repo,
        "tag": chosen.tag,
        "registry": registry_url,
        "official": chosen.official,
        "deprecated": chosen.deprecated,
        "entrypoint": chosen.entrypoint,
        "vllm": str(chosen.vllm) if chosen.vllm else None,
        "rocm": str(chosen.rocm) if chosen.rocm else None,
        "vendor": chosen.vendor,
        "cuda": str(chosen.cuda) if chosen.cuda else None,
        "torch": chosen.torch,
        "python": chosen.python,
        "arch": list(chosen.arch),
        "confidence": chosen.provenance.confidence,
        "source": chosen.provenance.source,
    }
