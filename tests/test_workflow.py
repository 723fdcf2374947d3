"""artifacts.workflow: `rocm-vllm image` as a library call. It returns the answer (the JSON
document, the artifact, the exit code) and prints nothing; the CLI only shows it."""

from __future__ import annotations

import pytest

from resolver.artifacts import workflow
from resolver.data import matrix
from resolver.data.node import from_flags
from resolver.util.errors import UsageError


def test_run_returns_the_image_and_its_run_command(capsys: pytest.CaptureFixture[str]) -> None:
    node = from_flags(gfx="gfx942", gpus=8, driver="30.30.3", os=None, rocm=None, python=None)
    answer = workflow.run(matrix.load(), node, workflow.ImageOptions(model="org/model"))
    assert answer.exit_code == 0
    assert answer.out["image"].startswith("vllm/vllm-openai-rocm:v")
    assert answer.artifact is not None and answer.artifact.startswith("docker run")
    assert "org/model" in answer.artifact
    assert answer.out["exit_code"] == 0 and answer.out["parallel"]["tensor_parallel_size"] == 8
    assert capsys.readouterr() == ("", "")  # library code never prints


def test_no_image_is_an_answer_without_an_artifact() -> None:
    node = from_flags(gfx="gfx906", gpus=1, driver="30.30.3", os=None, rocm=None, python=None)
    answer = workflow.run(matrix.load(), node, workflow.ImageOptions())
    assert answer.artifact is None and answer.exit_code == 1
    assert answer.out["image"] is None and answer.out["blockers"]


def test_bad_run_inputs_are_refused_before_anything_slow() -> None:
    with pytest.raises(UsageError, match="--format 'kubectl'"):
        workflow.check_options(workflow.ImageOptions(fmt="kubectl"))
