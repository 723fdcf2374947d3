"""GPU selection and tensor-parallel size for the run command (issue 11.2, 11.3): CPX nodes get one
TP=1 replica per partition, an iGPU beside discrete GPUs is hidden, the size divides the model's
heads, and a GPU missing a partition is a problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace
from typer.testing import CliRunner

from resolver.artifacts.parallel import model_heads, place, tensor_parallel_size
from resolver.cli import app
from resolver.data.node import Gpu, Node, Partition, from_flags
from resolver.data.partitions import partition_problems
from resolver.probe import probe_files
from resolver.util.errors import UsageError
from tests.probe_data import probe_matrix

FIXTURES = Path(__file__).parent / "probe" / "fixtures"
CPX_TREE = FIXTURES / "sysfs" / "kfd-gfx942-mi300x-8gpu-cpx-k8sdp"
IGPU_ROCMINFO = FIXTURES / "rocminfo-gfx1201-with-igpu-gfx1036-rocm5861.txt"


def image_json(*args: str) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(
        app, ["image", *args, "--json"], env={"NO_COLOR": "1", "ROCM_VLLM_REGISTRY": ""}
    )
    return result.exit_code, json.loads(result.stdout), result.stderr


def serve_args(out: dict[str, Any]) -> list[str]:
    args: list[str] = out["run_args"]
    return args[args.index(out["image"]) + 1 :]


@pytest.fixture(scope="module")
def cpx_node_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `rocm-vllm probe --json` writes on the 8 x MI300X CPX node (63 of 64 partitions)."""
    result = CliRunner().invoke(app, ["probe", "--sysfs", str(CPX_TREE), "--json"])
    assert result.exit_code == 0, result.output
    path = tmp_path_factory.mktemp("cpx") / "node.json"
    path.write_text(result.stdout)
    return path


# --- CPX ------------------------------------------------------------------------------------------


def test_cpx_node_gets_one_tp1_replica_not_tp63(cpx_node_file: Path) -> None:
    code, out, _ = image_json(
        "--node", str(cpx_node_file), "--driver", "30.30.3", "--model", "org/m"
    )
    assert code == 0, out
    assert "--tensor-parallel-size" not in out["run_args"]
    assert serve_args(out) == ["org/m"]  # positional (vLLM #7347)
    assert "HIP_VISIBLE_DEVICES=0" in out["run_args"]
    assert out["parallel"] == {
        "devices": [0],
        "tensor_parallel_size": 1,
        "gpus": 63,
        "replicas": 63,
        "attention_heads": None,
        "kv_heads": None,
        "attention_heads_source": None,
    }
    codes = [w["code"] for w in out["warnings"]]
    assert "cpx-one-replica-per-partition" in codes
    assert "partition-missing" in codes  # 63 of 64 is said, not only counted


def test_cpx_replica_on_a_chosen_partition(cpx_node_file: Path) -> None:
    code, out, _ = image_json(
        "--node", str(cpx_node_file), "--driver", "30.30.3", "--devices", "5", "--port", "8005"
    )
    assert code == 0
    assert (
        "HIP_VISIBLE_DEVICES=5" in out["run_args"]
        and "--tensor-parallel-size" not in out["run_args"]
    )
    assert (
        out["run_args"][out["run_args"].index("--name") + 1] == "vllm-5"
    )  # replicas do not collide
    assert "-p" in out["run_args"] and "8005:8005" in out["run_args"]


def test_cpx_refuses_one_replica_across_partitions(cpx_node_file: Path) -> None:
    result = CliRunner().invoke(
        app, ["image", "--node", str(cpx_node_file), "--driver", "30.30.3", "--devices", "0,1,2,3"]
    )
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and "CPX" in lines[0] and "garbage" in lines[0]
    assert lines[1].startswith("hint: ") and "TP=1 replica per partition" in lines[1]
    assert result.stdout == ""
    node = from_flags(gfx="gfx942", gpus=None, driver=None, os=None, rocm=None, python=None)
    cpx = replace(
        node,
        gpus=tuple(Gpu(gfx="gfx942", partition=Partition(compute="CPX")) for _ in range(8)),
        logical_gpu_count=8,
    )
    with pytest.raises(UsageError):
        place(cpx, devices=(0, 1), model=None, hf_cache="/nonexistent")


def test_missing_partition_is_a_problem_in_the_probe() -> None:
    node = probe_files(sysfs=CPX_TREE, matrix=probe_matrix())
    [problem] = [p for p in node.problems if p.code == "partition-missing"]
    assert "0000:e5:00" in problem.message and "7 of its 8 CPX partitions" in problem.message
    assert problem.hint


def test_full_cpx_node_and_one_partition_alone_are_not_problems() -> None:
    full = [
        Gpu(gfx="gfx942", unique_id=f"u{d}", partition=Partition(compute="CPX"))
        for d in range(2)
        for _ in range(8)
    ]
    assert partition_problems(full) == []
    # A container given one partition on purpose sees only that one: no peers, no problem.
    assert partition_problems(full[:1]) == []
    assert [p.code for p in partition_problems(full[:-1])] == ["partition-missing"]


# --- iGPU beside a discrete GPU -------------------------------------------------------------------


def test_igpu_is_hidden_in_the_run_command() -> None:
    code, out, _ = image_json("--rocminfo", str(IGPU_ROCMINFO), "--driver", "30.30.3")
    assert code == 0, out
    assert (
        "HIP_VISIBLE_DEVICES=0" in out["run_args"]
    )  # gfx1201 is device 0, the gfx1036 iGPU device 1
    assert out["parallel"]["devices"] == [0]
    assert "integrated-gpu-hidden" in [w["code"] for w in out["warnings"]]


def test_igpu_listed_first_is_skipped_by_index() -> None:
    node = Node(
        gpus=(Gpu(gfx="gfx1036", integrated=True), Gpu(gfx="gfx1201"), Gpu(gfx="gfx1201")),
        gfx_targets=("gfx1201",),
        physical_gpu_count=2,
        logical_gpu_count=2,
    )
    placed = place(node, devices=None, model=None, hf_cache="/nonexistent")
    assert (placed.devices, placed.tensor_parallel) == ((1, 2), 2)
    chosen = place(node, devices=(0,), model=None, hf_cache="/nonexistent")
    assert [w.code for w in chosen.warnings] == ["integrated-gpu-chosen"]


# --- tensor-parallel size and heads ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpus", "heads", "kv", "tp"),
    [
        (8, None, None, 8),
        (6, None, None, 4),
        (3, None, None, 2),
        (1, None, None, 1),
        (8, 40, None, 8),
        (8, 28, None, 7),
        (6, 48, None, 6),
        (8, 25, None, 5),
        (8, 28, 4, 4),  # Qwen2.5-7B: 7 divides 28 heads, but not 4 KV heads, nor does 4 divide 7
        (8, 64, 8, 8),
        (8, 32, 2, 8),
        (6, 48, 8, 4),
        (8, 14, 2, 2),
    ],
)
def test_tensor_parallel_size_is_one_vllm_accepts(
    gpus: int, heads: int | None, kv: int | None, tp: int
) -> None:
    assert tensor_parallel_size(gpus, heads, kv) == tp
    if heads:
        assert heads % tp == 0
    if kv:
        assert kv % tp == 0 if kv >= tp else tp % kv == 0


def _hf_cache_with(root: Path, model: str, config: dict[str, Any]) -> Path:
    org, name = model.split("/")
    snap = root / "hub" / f"models--{org}--{name}" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    return root


def test_heads_are_read_from_the_hf_cache_and_size_tp(tmp_path: Path) -> None:
    cache = _hf_cache_with(
        tmp_path / "hf", "org/m28", {"num_attention_heads": 28, "num_key_value_heads": 4}
    )
    config = str(cache / "hub/models--org--m28/snapshots/abc123/config.json")
    assert model_heads("org/m28", str(cache)) == (28, 4, config)
    code, out, _ = image_json(
        "--gfx",
        "gfx942",
        "--gpus",
        "8",
        "--driver",
        "30.30.3",
        "--model",
        "org/m28",
        "--hf-cache",
        str(cache),
    )
    assert code == 0
    assert serve_args(out) == ["org/m28", "--tensor-parallel-size", "4"]
    assert (out["parallel"]["attention_heads"], out["parallel"]["kv_heads"]) == (28, 4)
    [w] = [w for w in out["warnings"] if w["code"] == "tensor-parallel-size"]
    assert "28 attention heads and 4 KV heads" in w["message"] and "4 of 8 GPUs" in w["message"]


def test_heads_from_a_model_path_and_a_multimodal_text_config(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"text_config": {"num_attention_heads": 32}}))
    assert model_heads(str(model), "/nonexistent") == (32, None, str(model / "config.json"))
    assert model_heads("org/absent", str(tmp_path)) is None
    assert model_heads(None, str(tmp_path)) is None


def test_unknown_heads_with_six_gpus_uses_four_and_says_why() -> None:
    code, out, _ = image_json("--gfx", "gfx942", "--gpus", "6", "--driver", "30.30.3")
    assert code == 0
    assert serve_args(out) == ["--tensor-parallel-size", "4"]
    [w] = [w for w in out["warnings"] if w["code"] == "tensor-parallel-size"]
    assert "4 of 6 GPUs" in w["message"]
