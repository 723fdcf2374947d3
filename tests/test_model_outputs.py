"""--model in `check --explain` (the fit as a numbered step, the plan's commands sized), in
`rocm-vllm upgrade` (the end state's model section; a "gpus" step printed as "use N GPUs") and
in the rich explanation (the fit table). Issue 37 item 6, H17. Real fixtures
(tests/fixtures/models) solved on the frozen data; asserts are on structure (step codes,
premises' sources, JSON fields, argv words), printed promises read as printed."""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path
from typing import Any

import jsonschema

from resolver.cli._common import model_request
from resolver.data import matrix
from resolver.data.node import from_flags
from resolver.explain import derive, render_rich, rich_console
from resolver.explain.derivation import Derivation
from resolver.solve import Decision, Request, solve
from tests.helpers import REPO, run_cli

MODELS = Path(__file__).parent / "fixtures" / "models"
NODE = ["--gfx", "gfx942", "--driver", "30.30.3", "--os", "ubuntu-22.04"]


def _decide(slug: str, gpus: int) -> Decision:
    node = from_flags(
        gfx="gfx942", gpus=gpus, driver="30.30.3", os="ubuntu-22.04", rocm=None, python=None
    )
    return solve(matrix.load(), node, Request(model=model_request(str(MODELS / slug))))


def _schema(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((REPO / "docs" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(doc)
    return doc


def _model_step(d: Derivation) -> Any:
    [step] = [s for s in d.steps if "model-fit" in s.codes]
    return step


def test_the_explanation_carries_the_fit_as_a_step_the_conclusion_cites() -> None:
    d = _decide("llama-3.1-70b", 8)
    assert d.plan is not None and d.model is not None and d.model.fit is not None
    derivation = derive(d, matrix.load())
    step = _model_step(derivation)
    assert step.subjects == (d.model.spec,)
    assert f"({step.number})" in derivation.conclusion
    sources = {s for p in step.premises for s in p.sources}
    assert d.request.model is not None and d.request.model.config.source in sources
    # The release's gpu_memory_utilization is sourced from its models.toml record.
    support = matrix.load().model_support(d.model.release)  # type: ignore[arg-type]
    assert support is not None and support.record.provenance.source in sources
    # The GPU's memory is assumed (the smallest gfx942 product): said as inferred, and cited
    # where that product's memory is stated, not as a list of every place memory could come from.
    assert "inferred" in {p.confidence for p in step.premises}
    assert d.model.memory is not None and d.model.memory.cited in sources
    assert not any("nvidia-gpus.toml" in s for s in sources)
    # It survives --json's round trip unchanged.
    assert Derivation.from_json(json.loads(json.dumps(derivation.to_json()))) == derivation


def test_the_plans_commands_carry_the_model_and_its_sizes() -> None:
    """A printed promise: the `rocm-vllm image` follow-up names the model (and the pinned TP)."""
    node = from_flags(
        gfx="gfx942", gpus=8, driver="30.30.3", os="ubuntu-22.04", rocm=None, python=None
    )
    spec = str(MODELS / "llama-3.1-70b")
    request = Request(model=model_request(spec, tensor_parallel_size=2))
    d = solve(matrix.load(), node, request)
    derivation = derive(d, matrix.load())
    assert derivation.plan is not None
    [image] = [c for c in derivation.plan.commands if c.startswith("rocm-vllm image")]
    words = shlex.split(image.split("   #", 1)[0])
    assert words[words.index("--model") + 1] == spec
    assert words[words.index("--tensor-parallel-size") + 1] == "2"


def test_a_model_that_does_not_fit_is_a_step_too() -> None:
    d = _decide("llama-3.1-405b", 1)
    assert d.verdict == "blocked_host_fix"
    step = _model_step(derive(d, matrix.load()))
    assert step.subjects == (str(MODELS / "llama-3.1-405b"),)
    assert len(step.premises) == 5


def test_check_explain_through_the_cli_numbers_the_fit_step() -> None:
    out = run_cli("check", *NODE, "--gpus", "8", "--model", str(MODELS / "llama-3.1-70b"), "--json")
    assert out.exit_code == 0
    derivation = json.loads(out.stdout)["derivation"]
    fitted = [s for s in derivation["steps"] if "model-fit" in s["codes"]]
    assert len(fitted) == 1 and fitted[0]["number"] == len(derivation["steps"])


def test_upgrade_carries_the_end_states_model_and_says_use_n_gpus() -> None:
    spec = str(MODELS / "llama-3.1-405b")
    out = run_cli("upgrade", *NODE, "--gpus", "1", "--model", spec, "--json")
    assert out.exit_code == 0, out.stderr
    data = json.loads(out.stdout)
    jsonschema.validate(data, _schema("upgrade"))
    [step] = data["steps"]
    assert (step["change"], step["from"], step["to"]) == ("gpus", "1", "8")
    model = data["model"]
    assert model["spec"] == spec and model["min_gpus"] == 8
    assert model["fit"]["fits"] and model["fit"]["tensor_parallel_size"] == 8
    text = run_cli("upgrade", *NODE, "--gpus", "1", "--model", spec)
    # A printed promise: the step reads as what to do.
    assert "  1. use 8 GPUs (this node has 1)" in text.stdout.splitlines()
    check = shlex.split(data["check"])
    assert check[check.index("--gpus") + 1] == "8"


def test_upgrade_without_a_route_needed_keeps_the_model() -> None:
    out = run_cli(
        "upgrade", *NODE, "--gpus", "8", "--model", str(MODELS / "llama-3.1-8b"), "--json"
    )
    assert out.exit_code == 0
    data = json.loads(out.stdout)
    jsonschema.validate(data, _schema("upgrade"))
    assert data["steps"] == [] and data["model"]["fit"]["fits"]


def test_upgrade_without_model_has_a_null_model() -> None:
    out = run_cli("upgrade", *NODE, "--gpus", "8", "--json")
    data = json.loads(out.stdout)
    jsonschema.validate(data, _schema("upgrade"))
    assert data["model"] is None


def test_rich_explanation_prints_the_fit_table() -> None:
    d = _decide("llama-3.1-70b", 8)
    assert d.model is not None
    console = rich_console(width=100, force_terminal=False)
    buffer = io.StringIO()
    console.file = buffer
    render_rich(derive(d, matrix.load()), console, model=d.model)
    lines = buffer.getvalue().splitlines()
    header = next(ln for ln in lines if ln.split()[:2] == ["TP", "weights"])
    assert header.split()[-1] == "largest"
    rows = [ln.split() for ln in lines if ln.split()[:1] in (["1"], ["2"], ["4"], ["8"])]
    assert [r[0] for r in rows] == ["1", "2", "4", "8"]
    assert all(cell.startswith(("ok:", "no:")) for r in rows for cell in r[2:-1])


def test_plain_explain_prints_the_fit_table_as_the_rich_form_does() -> None:
    """--explain without a terminal (the plain form) carries the --model answer and its fit
    table after the plan, as `check`'s text and the rich form do; without --model, none."""
    spec = str(MODELS / "llama-3.1-70b")
    out = run_cli("check", *NODE, "--gpus", "8", "--model", spec, "--explain")
    assert out.exit_code == 0, out.stderr
    lines = out.stdout.splitlines()
    assert f"model: {spec}" in lines
    assert lines.index(f"model: {spec}") > lines.index("  run:")
    [head] = [i for i, ln in enumerate(lines) if ln.split()[:2] == ["TP", "weights"]]
    rows = lines[head + 2 : lines.index("", head)]  # after the header and its dashes
    table = [ln.split() for ln in rows]
    assert [row[0] for row in table] == ["1", "2", "4", "8"]
    assert all(cell.startswith(("ok:", "no:")) for row in table for cell in row[2:-1])
    plain = run_cli("check", *NODE, "--gpus", "8", "--explain")
    assert not any(ln.startswith("model:") for ln in plain.stdout.splitlines())
