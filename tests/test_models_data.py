"""models.toml (issue 37): the shipped per-release model facts hold together, and the Matrix
answers per release from the registry deltas (data read from the vLLM sdists on PyPI)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from resolver.data import matrix, resources
from resolver.data.model import Matrix

REPO_MATRIX = Path(resources.__file__).resolve().parents[2] / "matrix"


@pytest.fixture(scope="module")
def m() -> Matrix:
    return matrix.load_dir(REPO_MATRIX)


def test_every_record_is_a_known_release_and_the_range_is_covered(m: Matrix) -> None:
    known = {r.version for r in m.vllm}
    have = {r.version for r in m.models}
    assert have <= known
    wanted = {v for v in known if Version("0.10.0") <= v <= Version("0.33.0")}
    # 0.15.0 and 0.15.1 have no sdist on PyPI (wheels only): not read
    assert wanted - have == {Version("0.15.0"), Version("0.15.1")}


def test_the_deltas_add_up(m: Matrix) -> None:
    """Nothing is removed that was not there, nothing added twice under one kind, and every
    architecture's first release is a release of the data."""
    have: dict[str, set[str]] = {}
    for rec in sorted(m.models, key=lambda r: r.version):
        assert rec.registry_read and rec.provenance.source and rec.sdist_sha256
        for kind, names in rec.removed:
            assert set(names) <= have.get(kind, set()), (rec.version, kind)
            have[kind] -= set(names)
        for kind, names in rec.added:
            assert not set(names) & have.get(kind, set()), (rec.version, kind)
            have.setdefault(kind, set()).update(names)
        support = m.model_support(rec.version)
        assert support is not None and support.architectures == frozenset().union(*have.values())
    for name in ("LlamaForCausalLM", "DeepseekV3ForCausalLM", "GptOssForCausalLM"):
        first = m.first_release_with(name)
        assert first is not None and m.model_support(first) is not None


def test_gpu_memory_utilization_is_a_fraction(m: Matrix) -> None:
    for rec in m.models:
        support = m.model_support(rec.version)
        assert support is not None and support.gpu_memory_utilization is not None
        assert 0 < support.gpu_memory_utilization <= 1


def test_what_a_release_offers(m: Matrix) -> None:
    s33 = m.model_support(Version("0.33.0"))
    assert s33 is not None and s33.architectures is not None
    assert s33.gpu_memory_utilization == 0.92
    assert {"Qwen3NextForCausalLM", "GptOssForCausalLM", "DeepseekV3ForCausalLM"} <= (
        s33.architectures
    )
    assert "text_generation" in s33.kinds_of("LlamaForCausalLM")
    assert s33.rocm_unsupported == {} and s33.rocm_partial == {}
    # Qwen3-Next (hybrid linear attention) arrived in 0.10.2: "needs vLLM >= 0.10.2"
    assert m.first_release_with("Qwen3NextForCausalLM") == Version("0.10.2")
    assert m.architectures_of(Version("0.10.1.1")) is not None
    assert "Qwen3NextForCausalLM" not in (m.architectures_of(Version("0.10.1.1")) or ())
    s10 = m.model_support(Version("0.10.0"))
    assert s10 is not None and "Qwen2ForCausalLM" in s10.rocm_partial
    assert m.model_support(Version("0.15.0")) is None  # no sdist: unknown, not empty


def test_backend_traits_answer_head_sizes(m: Matrix) -> None:
    s33 = m.model_support(Version("0.33.0"))
    assert s33 is not None and s33.backends is not None
    by_name = {b.name: b for b in s33.backends}
    assert by_name["rocm_aiter_fa"].takes_head_size(128) is True
    assert by_name["rocm_aiter_fa"].takes_head_size(80) is False
    assert by_name["triton_attn"].takes_head_size(16) is False  # head_size >= 32
    assert by_name["triton_mla"].mla is True
    s10 = m.model_support(Version("0.10.0"))
    assert s10 is not None and s10.backends is None  # before 0.18.0's validated selection


def test_every_backend_table_names_the_file_and_class_it_was_read_from(m: Matrix) -> None:
    """Every fact names its upstream source: each [[release.backend]] table its own sdist, file
    and class, not only the release it sits in."""
    for rec in m.models:
        sha = (rec.sdist_sha256 or "")[:12]
        for b in rec.backends or ():
            source = b.provenance.source
            assert source != rec.provenance.source, (rec.version, b.name)
            assert f"vllm {rec.version} sdist sha256:{sha}" in source, (rec.version, b.name)
            assert ".py (" in source, (rec.version, b.name)
