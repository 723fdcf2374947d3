"""--model in the CLI and every output (issue 37, D2): the options and their bad input, the
ModelRequest built by ``cli._common.model_request`` (offline, and ``--online`` against a local
HTTP server serving a real fixture config), and the renderers of the decision's answer
(``check --json``'s ``model`` section against its schema, the text fit table, the sizes the
printed commands carry), fed a ModelAnswer built by hand from ``resolver.solve.fit`` on real
fixtures (each renderer tested apart from the solver's choices), and one run end to end.
Asserts are on structure: exit codes, JSON fields, argv words."""

from __future__ import annotations

import json
import math
import shlex
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import jsonschema
import msgspec
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from resolver.artifacts.runcmd import RunSpec, render, serve_args
from resolver.cli._common import model_request
from resolver.data import matrix
from resolver.data.hfmodel import read_model
from resolver.explain.report import decision_json
from resolver.explain.steps import plan_steps, serve_sizing
from resolver.explain.text import render as render_text
from resolver.solve import Decision
from resolver.solve.finding import Phrase
from resolver.solve.fit import GiB, fit, fit_table, smallest_tp, valid_tps
from resolver.solve.model import GpuMemory, ModelAnswer, ModelRequest
from resolver.util.errors import ModelError, UsageError

from .helpers import REPO, decide, local_http, run_cli

MODELS = Path(__file__).parent / "fixtures" / "models"
DOCS = REPO / "docs"
NODE = ["--gfx", "gfx942", "--gpus", "8", "--driver", "30.30.3"]
MI300X = 192 * GiB
REV = "0123456789abcdef0123456789abcdef01234567"


def _answer(req: ModelRequest, *, gpu_bytes: int = MI300X, tp: int | None = None) -> ModelAnswer:
    """What the solver side will say, built from the fit module on the real fixture."""
    cfg = req.config
    table = fit_table(cfg, gpu_bytes=gpu_bytes, tps=(1, 2, 4, 8), contexts=(8192, 32768, 131072))
    best = smallest_tp(cfg, gpu_bytes=gpu_bytes, most=8)
    chosen = (
        fit(cfg, gpu_bytes=gpu_bytes, tp=tp, max_model_len=req.max_model_len)
        if tp is not None
        else best or fit(cfg, gpu_bytes=gpu_bytes, tp=8, max_model_len=req.max_model_len)
    )
    return ModelAnswer(
        spec=req.spec,
        architecture=cfg.architectures[0],
        architecture_supported=True,
        quantization=cfg.quantization.method if cfg.quantization else None,
        memory=GpuMemory(bytes=gpu_bytes, source=Phrase.verbatim("hand-built for the test")),
        fit=chosen,
        table=table,
        min_gpus=best.gpus if best is not None else None,
        notes=(Phrase.verbatim("hand-built note"),),
    )


def _with_model(d: Decision, req: ModelRequest, answer: ModelAnswer) -> Decision:
    return msgspec.structs.replace(
        d, request=msgspec.structs.replace(d.request, model=req), model=answer
    )


def _request(slug: str, **knobs: Any) -> ModelRequest:
    spec = str(MODELS / slug)
    return ModelRequest(spec=spec, config=read_model(spec), **knobs)


def _as_json(doc: dict[str, Any]) -> dict[str, Any]:
    """What --json prints, read back (tuples become arrays)."""
    from resolver.util import jsontext

    back: dict[str, Any] = json.loads(jsontext.dumps(doc))
    return back


def _schema(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DOCS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(doc)
    return doc


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["check"], ["image"], ["upgrade"]])
@pytest.mark.parametrize(
    "bad",
    [
        ["--tensor-parallel-size", "0"],
        ["--tensor-parallel-size", "-2"],
        ["--gpu-memory-utilization", "1.5"],
        ["--gpu-memory-utilization", "0"],
        ["--gpu-memory-utilization", "nan"],
        ["--max-model-len", "0"],
    ],
    ids=lambda b: " ".join(b),
)
def test_bad_sizes_exit_2_with_one_line(command: list[str], bad: list[str]) -> None:
    out = run_cli(*command, *NODE, "--model", str(MODELS / "qwen3-8b"), *bad)
    assert out.exit_code == 2
    lines = out.stderr.strip().splitlines()
    assert [ln.split(":", 1)[0] for ln in lines] == ["error", "hint"], out.stderr
    assert bad[0] in lines[0]  # it names the flag


def test_fleet_plan_refuses_bad_sizes(tmp_path: Path) -> None:
    out = run_cli(
        "fleet", "plan", str(tmp_path), "--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "0"
    )
    assert out.exit_code == 2 and "--tensor-parallel-size" in out.stderr.splitlines()[0]


@pytest.mark.parametrize(
    "flag", [["--tensor-parallel-size", "2"], ["--max-model-len", "4096"], ["--online"]]
)
def test_sizing_without_a_model_is_usage(flag: list[str]) -> None:
    out = run_cli("check", *NODE, *flag)
    assert out.exit_code == 2 and flag[0] in out.stderr.splitlines()[0]


@pytest.mark.parametrize(
    "spec", ["../../etc/passwd-not-here", "a/b/c", "org/../name", "org--x/name", "/no/such/dir"]
)
def test_model_with_path_characters_exits_2(spec: str, tmp_path: Path) -> None:
    out = run_cli("check", *NODE, "--model", spec, env={"HF_HUB_CACHE": str(tmp_path)})
    assert out.exit_code == 2
    assert len(out.stderr.strip().splitlines()) == 2, out.stderr


def test_model_errors_under_json_are_the_error_object(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("[1, 2]")
    out = run_cli("check", *NODE, "--model", str(bad), "--json")
    assert out.exit_code == 2
    doc = json.loads(out.stdout)
    jsonschema.validate(doc, _schema("check"))
    assert doc["error"]["code"] == "bad-model" and doc["error"]["exit_code"] == 2


# --- model_request ----------------------------------------------------------------------------


def test_model_request_reads_the_fixture_with_its_knobs() -> None:
    spec = str(MODELS / "llama-3.1-70b")
    req = model_request(
        spec, tensor_parallel_size=4, max_model_len=8192, gpu_memory_utilization=0.8
    )
    assert isinstance(req, ModelRequest)
    assert req.spec == spec and req.config.architectures == ("LlamaForCausalLM",)
    assert (req.tensor_parallel_size, req.max_model_len, req.gpu_memory_utilization) == (
        4,
        8192,
        0.8,
    )
    assert model_request(None) is None


def test_model_request_offline_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelError, match="not in the Hugging Face cache"):
        model_request("Qwen/Qwen3-8B")
    # image and fleet plan: an id not here stays a name to serve, unsized
    assert model_request("Qwen/Qwen3-8B", serving=True) is None
    assert model_request("/models/in/the/container", serving=True) is None
    with pytest.raises(UsageError):
        model_request("Qwen/Qwen3-8B", tensor_parallel_size=0, serving=True)


class _Hub(BaseHTTPRequestHandler):
    """Serves tests/fixtures/models/qwen3-8b as Qwen/Qwen3-8B/resolve/main/<file>."""

    seen: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(self.path)
        name = self.path.rsplit("/", 1)[-1]
        path = MODELS / "qwen3-8b" / name
        ok = self.path.startswith("/Qwen/Qwen3-8B/resolve/main/") and path.is_file()
        body = path.read_bytes() if ok else b""
        self.send_response(200 if ok else 404)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Repo-Commit", REV)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def hub() -> Iterator[str]:
    _Hub.seen = []
    with local_http(_Hub) as url:
        yield url


def test_online_fetches_through_hf_endpoint(
    hub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    req = model_request("Qwen/Qwen3-8B", online=True)
    assert req is not None and req.config.num_hidden_layers == 36
    assert all(
        "/resolve/main/" in p and "safetensors" not in p.rsplit(".", 1)[-1] for p in _Hub.seen
    )
    assert (tmp_path / "hub" / "models--Qwen--Qwen3-8B" / "refs" / "main").read_text() == REV
    # now cached: the offline read finds it
    assert model_request("Qwen/Qwen3-8B") is not None
    with pytest.raises(ModelError):
        model_request(str(MODELS / "qwen3-8b"), online=True)  # --online takes an id only


def test_online_cli_then_check(hub: str, tmp_path: Path) -> None:
    env = {"HF_ENDPOINT": hub, "HF_HUB_CACHE": str(tmp_path)}
    out = run_cli("check", *NODE, "--model", "Qwen/Qwen3-8B", "--online", "--json", env=env)
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["request"]["model"] == "Qwen/Qwen3-8B"
    jsonschema.validate(doc, _schema("check"))


# --- renderers, fed a hand-built answer -------------------------------------------------------


@pytest.fixture(scope="module")
def base() -> Decision:
    return decide("gfx942", gpus=8, driver="30.30.3")


def test_model_json_carries_the_contract(base: Decision) -> None:
    req = _request("llama-3.1-70b")
    answer = _answer(req)
    d = _with_model(base, req, answer)
    doc = _as_json(decision_json(d, matrix.load()))
    jsonschema.validate(doc, _schema("check"))
    model = doc["model"]
    assert model["quantization"] == answer.quantization
    assert model["table"][0]["tensor_parallel_size"] == answer.table[0].tensor_parallel_size
    assert model["architecture"] == "LlamaForCausalLM" and model["architecture_supported"] is True
    f = answer.fit
    assert f is not None
    assert model["fit"]["tensor_parallel_size"] == f.tensor_parallel_size
    assert model["fit"]["kv_cache_bytes_per_token"] == f.kv_cache_bytes_per_token
    assert model["fit"]["weights_bytes_per_gpu"] == f.weights_bytes_per_gpu
    assert model["fit"]["max_model_len"] == f.largest_max_model_len
    assert model["fit"]["fits"] is f.fits
    assert model["fit"]["min_gpus"] == answer.min_gpus
    assert len(model["table"]) == len(answer.table) == 4 * 3
    assert model["notes"] == ["hand-built note"] and model["memory"]["bytes"] == MI300X
    # the plan's commands carry the model
    image_cmd = next(c for c in doc["plan"]["commands"] if c.startswith("rocm-vllm image"))
    assert "--model" in image_cmd.split()


def test_without_a_model_the_section_is_null(base: Decision) -> None:
    doc = _as_json(decision_json(base, matrix.load()))
    assert doc["model"] is None and doc["request"]["model"] is None
    jsonschema.validate(doc, _schema("check"))


def test_text_shows_the_fit_table(base: Decision) -> None:
    req = _request("llama-3.1-70b")
    answer = _answer(req)
    text = render_text(_with_model(base, req, answer), matrix.load(), width=100)
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["TP"])
    rows = [ln.split() for ln in lines[head + 2 : head + 6]]
    assert [r[0] for r in rows] == ["1", "2", "4", "8"]
    # every cell: fits or not, and the GiB per GPU it needs
    for row, tp in zip(rows, (1, 2, 4, 8), strict=True):
        cells = [f for f in answer.table if f.tensor_parallel_size == tp]
        words = [w for cell in row[2:-1] for w in cell.split(":")]
        assert words[0::2] == ["ok" if f.fits else "no" for f in cells]
        need = [(f.weights_bytes_per_gpu + f.allowance_bytes + f.seq_bytes) / GiB for f in cells]
        assert [float(w) for w in words[1::2]] == pytest.approx(need, abs=0.06)
    assert all(len(ln) <= 100 for ln in lines[head : head + 6])


def test_narrow_terminal_keeps_the_table_within_width(base: Decision) -> None:
    req = _request("qwen3-8b")
    text = render_text(_with_model(base, req, _answer(req)), matrix.load(), width=60)
    table = text.split("fit table")[1].split("note:")[0]
    assert all(len(ln) <= 60 for ln in table.splitlines())


# --- the sizes the printed commands carry -----------------------------------------------------


def test_sizing_serves_every_gpu_unless_pinned() -> None:
    """One server takes the GPUs it is given (the fit's smallest TP is no reason to leave the
    rest idle); the user's TP wins; the TP the fit chose is not a pin a follow-up passes on."""
    req = _request("llama-3.1-70b")
    answer = _answer(req, tp=2)
    assert answer.fit is not None and answer.fit.fits
    s = serve_sizing(answer, req)  # nothing placed: every GPU the table tried
    assert s is not None and s.tensor_parallel_size == 8
    assert s.max_model_len is None and s.kv_cache_dtype is None and s.quantization is None
    assert "--tensor-parallel-size" in s.flags() and s.flags(pins_only=True) == []
    placed = serve_sizing(answer, req, tensor_parallel=4)  # a run command's placement
    assert placed is not None and placed.tensor_parallel_size == 4
    pinned = _request("llama-3.1-70b", tensor_parallel_size=2)
    own = serve_sizing(_answer(pinned, tp=2), pinned, tensor_parallel=8)
    assert own is not None and own.tensor_parallel_size == 2
    assert own.flags(pins_only=True) == ["--tensor-parallel-size", "2"]


def test_sizing_caps_the_context_at_the_tp_served() -> None:
    req = _request("llama-3.1-70b")
    answer = _answer(req, gpu_bytes=80 * GiB, tp=2)  # 131072 tokens do not fit on 2 x 80 GiB
    f = answer.fit
    assert f is not None and not f.fits and f.largest_max_model_len > 0
    s = serve_sizing(answer, req, tensor_parallel=2)
    assert s is not None and s.max_model_len == f.largest_max_model_len
    flags = s.flags()
    assert flags[flags.index("--max-model-len") + 1] == str(f.largest_max_model_len)
    assert s.flags(pins_only=True) == []  # the cap is the fit's, not the user's
    # On all 8 GPUs the model's own context fits: TP 2's cap is not carried to a TP 8 server.
    every = serve_sizing(answer, req)
    assert every is not None and every.tensor_parallel_size == 8 and every.max_model_len is None


def test_sizing_pins_win_and_quantization_only_when_not_the_checkpoints() -> None:
    req = _request("qwen3-32b-fp8", max_model_len=4096, gpu_memory_utilization=0.85)
    own = req.config.quantization
    assert own is not None
    answer = msgspec.structs.replace(_answer(req, tp=1), kv_cache_dtype="fp8")
    s = serve_sizing(answer, req)
    assert s is not None
    assert (s.max_model_len, s.gpu_memory_utilization, s.kv_cache_dtype) == (4096, 0.85, "fp8")
    assert s.quantization is None  # vLLM reads the checkpoint's own method from its config
    plain = _request("qwen3-8b")
    s2 = serve_sizing(msgspec.structs.replace(_answer(plain), quantization="fp8"), plain)
    assert s2 is not None and s2.quantization == "fp8"
    # pinned TP 1 is said, unpinned TP 1 is vLLM's default
    one = serve_sizing(_answer(plain, tp=1), plain, tensor_parallel=1)
    assert one is not None and one.tensor_parallel_size is None
    pinned = _request("qwen3-8b", tensor_parallel_size=1)
    assert serve_sizing(_answer(pinned, tp=1), pinned).tensor_parallel_size == 1  # type: ignore[union-attr]
    assert serve_sizing(None, None) is None


def test_plan_steps_carry_the_pins_and_serve_every_gpu(base: Decision) -> None:
    """`check`'s image step passes the user's pins only: `image` sizes its own run command (its
    placement's TP), so the step never pins the fit's TP 4 on 8 GPUs with 4 idle. The wheel's
    `vllm serve` is the run itself: one server on every GPU."""
    req = _request("llama-3.1-70b", max_model_len=32768)
    sizing = serve_sizing(_answer(req, tp=4), req)
    assert base.plan is not None
    words = shlex.split(plan_steps(base.plan, base.node, sizing)[1][0])
    assert words[:2] == ["rocm-vllm", "image"]
    at = words.index("--model")
    assert words[at + 1] == req.spec
    assert "--tensor-parallel-size" not in words
    assert words[words.index("--max-model-len") + 1] == "32768"
    # the image command takes every flag it is given (a follow-up that parses), and serves the
    # model across the node's 8 GPUs
    out = run_cli(*[w for w in words[1:] if w != "--digest"], "--json")  # offline
    assert out.exit_code in (0, 1), out.stderr
    doc = json.loads(out.stdout)
    jsonschema.validate(doc, _schema("image"))
    assert doc["run_args"][doc["run_args"].index("--tensor-parallel-size") + 1] == "8"
    pinned = _request("llama-3.1-70b", tensor_parallel_size=4)
    words = shlex.split(
        plan_steps(base.plan, base.node, serve_sizing(_answer(pinned, tp=4), pinned))[1][0]
    )
    assert words[words.index("--tensor-parallel-size") + 1] == "4"


def test_wheel_plan_serves_sized(base: Decision) -> None:
    wheel = next((e for e in base.alternatives if e.candidate.wheel is not None), None)
    assert wheel is not None
    req = _request("qwen3-8b")
    sizing = serve_sizing(_answer(req, tp=2), req)
    last = plan_steps(wheel, base.node, sizing)[-1][0].split()
    assert last[:3] == ["vllm", "serve", req.spec]
    assert last[last.index("--tensor-parallel-size") + 1] == "8"


def test_run_command_carries_the_sizes() -> None:
    spec = RunSpec(
        image="vllm/vllm-openai-rocm:v0.33.0",
        entrypoint="vllm-serve",
        model="Qwen/Qwen3-8B",
        tensor_parallel=2,
        max_model_len=16384,
        gpu_memory_utilization=0.85,
        kv_cache_dtype="fp8",
        quantization="fp8",
    )
    args = serve_args(spec)
    assert args[0] == "Qwen/Qwen3-8B"  # positional, as every release takes it
    pairs = dict(zip(args[1::2], args[2::2], strict=True))
    assert pairs == {
        "--tensor-parallel-size": "2",
        "--max-model-len": "16384",
        "--gpu-memory-utilization": "0.85",
        "--kv-cache-dtype": "fp8",
        "--quantization": "fp8",
    }
    compose = render(spec, "compose").file_text
    assert compose is not None and '"--max-model-len", "16384"' in compose


@pytest.mark.parametrize(
    "bad",
    [
        {"max_model_len": 0},
        {"gpu_memory_utilization": 1.5},
        {"gpu_memory_utilization": math.nan},
        {"kv_cache_dtype": "fp8; reboot"},
        {"quantization": "--x"},
    ],
)
def test_run_spec_refuses_bad_sizes(bad: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        RunSpec(image="x", entrypoint="vllm-serve", **bad)


def test_image_with_an_uncached_model_still_prints_its_run_command(tmp_path: Path) -> None:
    out = run_cli("image", *NODE, "--model", "org/m", "--json", env={"HF_HUB_CACHE": str(tmp_path)})
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["model"] is None and "org/m" in doc["run_args"]
    jsonschema.validate(doc, _schema("image"))


def test_upgrade_takes_the_model_into_its_check() -> None:
    # 405B on one MI300X needs more GPUs: the route has a step and its check names the model.
    spec = str(MODELS / "llama-3.1-405b")
    out = run_cli(
        "upgrade", "--gfx", "gfx942", "--gpus", "1", "--driver", "6.1.3", "--model", spec, "--json"
    )
    assert out.exit_code in (0, 1), out.stderr
    doc = json.loads(out.stdout)
    jsonschema.validate(doc, _schema("upgrade"))
    assert doc["model"]["spec"] == spec and doc["steps"]
    words = doc["check"].split()
    assert words[words.index("--model") + 1] == spec and words[words.index("--gpus") + 1] != "1"


# --- speed: a check without --model loads no model code ---------------------------------------


def test_check_without_model_imports_no_model_code() -> None:
    code = (
        "import sys\n"
        "from resolver.__main__ import run\n"
        "sys.argv = ['rocm-vllm', 'check', '--gfx', 'gfx942', '--driver', '30.30.3', '-q']\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in sys.modules if m in ('resolver.data.hfmodel', 'resolver.solve.fit',"
        " 'resolver.refresh.hf', 'resolver.solve.model')]\n"
        "print(bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"


# --- end to end: the solver fills Decision.model (5edabb0) ------------------------------------


def test_check_model_end_to_end() -> None:
    spec = str(MODELS / "llama-3.1-70b")
    out = run_cli("check", *NODE, "--model", spec, "--json")
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    jsonschema.validate(doc, _schema("check"))
    model = doc["model"]
    assert model is not None and model["architecture"] == "LlamaForCausalLM"
    assert model["fit"]["fits"] is True and model["fit"]["min_gpus"] >= 1
    text = run_cli("check", *NODE, "--model", spec)
    assert any(ln.split()[:1] == ["TP"] for ln in text.stdout.splitlines())


# --- a local model in the run commands ---------------------------------------------------------


def test_image_serves_a_local_model_from_its_absolute_directory_mounted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model directory named relative to the shell's directory means nothing inside the
    container (nothing mounted it, and the container's directory is another): `image` serves the
    directory's absolute path and mounts it there, read-only. `check` hands `image` that path."""
    monkeypatch.chdir(MODELS)
    where = str((MODELS / "llama-3.1-8b").resolve())
    out = run_cli("image", *NODE, "--model", "llama-3.1-8b")
    assert out.exit_code == 0, out.stderr
    words = shlex.split(out.stdout.strip().splitlines()[-1])
    assert words[:2] == ["docker", "run"]
    assert words[words.index("-v", words.index("-v") + 1) + 1] == f"{where}:{where}:ro"
    image = next(w for w in words if w.startswith("vllm/vllm-openai-rocm:"))
    assert words[words.index(image) + 1] == where  # vllm serve's positional model
    check = run_cli("check", *NODE, "--model", "llama-3.1-8b")
    assert f"--model {where}" in check.stdout


def test_a_local_model_path_a_mount_cannot_carry_is_refused(tmp_path: Path) -> None:
    """`-v SRC:DST:ro` splits at ':': a model directory whose path has one is refused (exit 2),
    not mounted somewhere else."""
    odd = tmp_path / "a:b"
    odd.mkdir()
    (odd / "config.json").write_text((MODELS / "llama-3.1-8b" / "config.json").read_text())
    out = run_cli("image", *NODE, "--model", str(odd))
    assert out.exit_code == 2
    assert "cannot be mounted" in out.stderr and "hint:" in out.stderr


@pytest.mark.parametrize(
    ("release", "pin", "fits"),
    [(None, None, 1), (None, "8", None), ("==0.10.0", None, 2)],
)
def test_image_says_when_it_serves_across_more_gpus_than_the_model_needs(
    release: str | None, pin: str | None, fits: int | None
) -> None:
    """Llama-3.1-70B fits one 192 GiB MI300X (the fit's TP 1; two at vLLM 0.10.0's memory
    default) and `image` serves it across the node's 8 GPUs, never at the fit's TP with the rest
    idle: the answer says so, with how to run servers of the fit's TP instead; a pinned TP is
    the user's choice and is not remarked on."""
    spec = str(MODELS / "llama-3.1-70b")
    pinned = ["--tensor-parallel-size", pin] if pin else []
    vllm = ["--vllm", release] if release else []
    out = run_cli("image", *NODE, *vllm, "--model", spec, *pinned, "--json")
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    jsonschema.validate(doc, _schema("image"))
    over = [w for w in doc["warnings"] if w["code"] == "tensor-parallel-over-fit"]
    assert doc["parallel"]["tensor_parallel_size"] == 8
    assert doc["run_args"][doc["run_args"].index("--tensor-parallel-size") + 1] == "8"
    if fits is not None:
        assert doc["model"]["fit"]["tensor_parallel_size"] == fits
        [w] = over
        assert w["severity"] == "info"
        assert f"--tensor-parallel-size {fits}" in w["hint"]
    else:
        assert over == []


def test_a_source_plan_hands_the_model_to_the_dockerfile_which_prints_it_sized(
    tmp_path: Path,
) -> None:
    """A node only a source build serves (gfx1030): `check --model` names the model and its
    pinned size on the `rocm-vllm dockerfile` step, and that step, run as printed, writes the
    file and prints the image's run command serving the model at that size."""
    spec = str(MODELS / "qwen3-8b")
    out = run_cli(
        "check", "--gfx", "gfx1030", "--gpus", "2", "--driver", "30.30.3", "--model", spec,
        "--tensor-parallel-size", "2", "--json",
    )  # fmt: skip
    assert out.exit_code in (0, 1), out.stderr
    doc = json.loads(out.stdout)
    assert doc["plan"] is not None and doc["plan"]["kind"] == "source"
    step = next(c for c in doc["plan"]["commands"] if c.startswith("rocm-vllm dockerfile"))
    words = shlex.split(step)
    assert words[words.index("--model") + 1] == spec
    assert words[words.index("--tensor-parallel-size") + 1] == "2"
    tag = words[words.index("--tag") + 1]
    target = tmp_path / "Dockerfile.vllm-rocm"
    words[words.index("-o") + 1] = str(target)
    built = run_cli(*words[1:])
    assert built.exit_code == 0, built.stderr
    assert target.exists()
    run = shlex.split(next(x for x in built.stderr.splitlines() if x.startswith("run: "))[5:])
    assert run[run.index(tag) + 1] == spec  # the image, then the model, positional
    assert run[run.index("--tensor-parallel-size") + 1] == "2"


_SIZED = ("llama-3.1-70b", "llama-3.1-405b", "qwen3-8b", "qwen2.5-7b-instruct", "mixtral-8x7b-v0.1")


@settings(max_examples=40, deadline=None)
@given(
    slug=st.sampled_from(_SIZED),
    gfx=st.sampled_from(["gfx942", "gfx90a"]),  # 192 GiB MI300X, 64 GiB MI250X partitions
    gpus=st.integers(1, 8),
    pick=st.integers(0, 63),
    pin=st.booleans(),
    placed=st.booleans(),
)
def test_the_sizes_served_are_the_rule_on_any_node(
    slug: str, gfx: str, gpus: int, pick: int, pin: bool, placed: bool
) -> None:
    """Property of `serve_sizing` on the solver's own answer: one server runs at the user's TP,
    else the TP it is placed at, else every GPU vLLM accepts for the model; a context the tool
    caps fits at that TP (never a cap computed for another TP), and an uncapped unpinned context
    is the model's own where it fits at that TP; a follow-up's flags are the user's pins only."""
    spec = str(MODELS / slug)
    cfg = read_model(spec)
    valid = valid_tps(cfg, gpus)
    pinned = valid[pick % len(valid)] if pin else None
    where = valid[(pick // 2) % len(valid)] if placed else None
    req = ModelRequest(spec=spec, config=cfg, tensor_parallel_size=pinned)
    d = decide(gfx, gpus=gpus, driver="30.30.3", model=req)
    answer = d.model
    assume(answer is not None and answer.fit is not None)
    assert answer is not None and answer.fit is not None
    s = serve_sizing(answer, req, tensor_parallel=where)
    assert s is not None
    served = pinned or where or valid[-1]
    assert s.tensor_parallel_size == (served if served > 1 or pinned else None)
    at = fit(
        cfg,
        gpu_bytes=answer.fit.gpu_bytes,
        tp=served,
        max_model_len=s.max_model_len or answer.fit.max_model_len,
        gpu_memory_utilization=answer.fit.gpu_memory_utilization,
        kv_dtype=answer.fit.kv_cache_dtype,
    )
    if s.max_model_len is not None:
        assert "--max-model-len" in s.chosen and at.fits  # the cap fits where it is served
    else:
        assert at.fits or at.largest_max_model_len == 0
    pins = s.flags(pins_only=True)
    assert ("--tensor-parallel-size" in pins) == (pinned is not None)
    assert "--max-model-len" not in pins  # nothing pinned it here
