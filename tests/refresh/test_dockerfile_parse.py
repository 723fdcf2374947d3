"""The Dockerfile reader: declarations only, first default wins, never fails on damaged text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from resolver.refresh.dockerfile_parse import cmake_hip_archs, github_repo, logical_lines, parse

SAMPLE = """\
# comment
ARG BASE_IMAGE="rocm/dev-ubuntu-22.04:${ROCM}-complete"
ARG ROCM=6.3.1
ARG TRITON_BRANCH="e5be006"
FROM ${BASE_IMAGE} AS base
ARG TRITON_BRANCH="later-default-is-ignored"
ARG PYTORCH_ROCM_ARCH=gfx90a;gfx942
RUN git clone --depth 1 \\
    # a comment inside a continued RUN
    https://github.com/ROCm/hipBLASLt \\
 && git clone ${TRITON_REPO}
"""


def test_first_default_wins_and_continuations_join() -> None:
    facts = parse(SAMPLE)
    assert facts.args["TRITON_BRANCH"] == "e5be006"
    assert facts.args["PYTORCH_ROCM_ARCH"] == "gfx90a;gfx942"
    assert facts.clones == ["https://github.com/ROCm/hipBLASLt"]  # the ${VAR} clone is the ARG's


def test_args_expand_only_from_earlier_defaults() -> None:
    # ROCM is declared after BASE_IMAGE, so it is not known when BASE_IMAGE is read.
    assert parse(SAMPLE).args["BASE_IMAGE"] == "rocm/dev-ubuntu-22.04:-complete"
    assert parse('ARG A=7.0\nARG B="x:${A}-y"\nFROM $B\n').froms == ["x:7.0-y"]


def test_github_urls_and_cmake_lists() -> None:
    assert github_repo("https://github.com/ROCm/triton.git") == "ROCm/triton"
    assert github_repo("https://github.com/pytorch/vision") == "pytorch/vision"
    assert github_repo("https://example.com/ROCm/triton.git") is None
    assert cmake_hip_archs('set(HIP_SUPPORTED_ARCHS "gfx906;gfx942")') == ["gfx906", "gfx942"]
    assert cmake_hip_archs("project(vllm)") is None


@given(st.text())
def test_any_text_parses_without_error(text: str) -> None:
    facts = parse(text)
    assert all(isinstance(v, str) for v in facts.args.values())
    assert all(line == line.strip() and line for line in logical_lines(text))


@given(
    st.lists(
        st.sampled_from(
            [
                "ARG X=1",
                "ARG X=2",
                "ARG",
                "ARG =",
                'ARG Y="unterminated',
                "FROM",
                "RUN git clone",
                "\\",
                "# c",
            ]
        )
    )
)
def test_damaged_instruction_sequences_parse(lines: list[str]) -> None:
    facts = parse("\n".join(lines))
    firsts = [line for line in lines if line in ("ARG X=1", "ARG X=2")]
    # A continuation ("\\") may glue an ARG onto the line before it; otherwise the first wins.
    if firsts and "\\" not in lines:
        assert facts.args["X"] == firsts[0][-1]


def test_flash_attentions_build_line_is_evaluated_as_sed_would() -> None:
    """Upstream's sed drops every ";gfx1xxx", so a gfx1xxx first in the list stays (the
    gfx1250 stack's FA_GPU_ARCHS is gfx942;gfx950;gfx1250: FlashAttention gets gfx942;gfx950)."""
    text = (
        'ARG PYTORCH_ROCM_ARCH="gfx90a;gfx942;gfx1100;gfx1201"\n'
        "ARG FA_BRANCH=main\n"
        "RUN git clone ${FA_REPO}\n"
        "RUN cd flash-attention \\\n"
        "    && GPU_ARCHS=$(echo ${PYTORCH_ROCM_ARCH} | sed -e 's/;gfx1[0-9]\\{3\\}//g') "
        "python3 setup.py bdist_wheel --dist-dir=dist\n"
    )
    assert parse(text).fa_build_archs == "gfx90a;gfx942"
    first = text.replace('"gfx90a;gfx942;gfx1100;gfx1201"', '"gfx1250;gfx942"')
    assert parse(first).fa_build_archs == "gfx1250;gfx942"
    # An ARG the file never set gives nothing, never an empty list taken as "built for none".
    unset = text.replace('ARG PYTORCH_ROCM_ARCH="gfx90a;gfx942;gfx1100;gfx1201"\n', "")
    assert parse(unset).fa_build_archs is None
