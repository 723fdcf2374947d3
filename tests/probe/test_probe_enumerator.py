"""rocm_agent_enumerator output: one gfx name per agent, gfx000 for CPUs."""

from __future__ import annotations

from pathlib import Path

from resolver.probe import enumerator, probe_files
from tests.probe_data import probe_matrix


def test_cpus_are_skipped_and_gpus_counted() -> None:
    view = enumerator.parse("gfx000\ngfx000\ngfx90a\ngfx90a\ngfx90a\ngfx90a\n")
    assert [g.gfx for g in view.gpus] == ["gfx90a"] * 4
    assert view.facts["cpu_agents"] == 2
    assert view.problems == []


def test_feature_suffixes_and_misprints() -> None:
    view = enumerator.parse("gfx000\ngfx942:sramecc+:xnack-\ngfx9010\n")
    assert [(g.gfx, g.sramecc, g.xnack) for g in view.gpus] == [
        ("gfx942", True, False),
        ("gfx90a", None, None),
    ]


def test_only_the_cpu_is_no_gpu_with_a_hint() -> None:
    view = enumerator.parse("gfx000\n")
    assert view.gpus == []
    assert [p.code for p in view.problems] == ["no-gpu-agent-enumerator"]


def test_file_probe_counts_and_names(tmp_path: Path) -> None:
    path = tmp_path / "agents.txt"
    path.write_text("gfx000\ngfx000\ngfx1100\ngfx1036\n")
    node = probe_files(agent_enumerator=path, matrix=probe_matrix())
    # gfx1036 is an iGPU beside the discrete gfx1100: listed, not counted
    assert node.gfx_targets == ("gfx1100",)
    assert node.logical_gpu_count == 1
    assert [g.integrated for g in node.gpus] == [False, True]


def test_beside_rocminfo_it_agrees(tmp_path: Path) -> None:
    fixtures = Path(__file__).parent / "fixtures"
    path = tmp_path / "agents.txt"
    path.write_text("gfx000\ngfx000\n" + "gfx942\n" * 4)
    node = probe_files(
        rocminfo=fixtures / "rocminfo-gfx942-mi300x-4gpu-thamada.txt",
        agent_enumerator=path,
        matrix=probe_matrix(),
    )
    assert (node.gfx_targets, node.logical_gpu_count) == (("gfx942",), 4)
    assert not [p for p in node.problems if p.code in ("sources-disagree", "gpu-count-differs")]
