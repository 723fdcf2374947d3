"""No input makes a parser raise; garbage yields zero GPUs and a problem."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver.probe import rocminfo, smi, sysfs

FIXTURES = Path(__file__).parent / "fixtures"
REAL = (FIXTURES / "rocminfo-gfx1201-with-igpu-gfx1036-rocm5861.txt").read_text()

fragments = st.lists(
    st.sampled_from(REAL.splitlines())
    | st.text(max_size=80)
    | st.sampled_from(
        [
            "*******",
            "Agent 3",
            "  Name:                    gfx",
            "  Device Type:             GPU",
            "...",
            "\x1b[37m",
            "GPU: 0",
            "    TARGET_GRAPHICS_VERSION: gfx9008",
            "GPU[0]\t\t: Card Series: x",
            "Concise Info",
            "0  1  0x74a1,",
        ]
    ),
    max_size=60,
).map("\n".join)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(fragments)
def test_parsers_never_raise(text: str) -> None:
    for parse in (rocminfo.parse, smi.parse_amd_smi, smi.parse_rocm_smi):
        view = parse(text)
        assert all(g.gfx is None or g.gfx.startswith("gfx") for g in view.gpus)


@settings(max_examples=200)
@given(st.text(alphabet=st.characters(blacklist_characters="Nn:[]"), max_size=400))
def test_garbage_gives_no_gpu_and_a_problem(text: str) -> None:
    for parse in (rocminfo.parse, smi.parse_amd_smi, smi.parse_rocm_smi):
        view = parse(text)
        assert view.gpus == []
        assert view.problems


@settings(max_examples=100)
@given(st.text(max_size=300))
def test_sysfs_properties_never_raise(text: str) -> None:
    props = sysfs.properties(text)
    assert all(isinstance(v, int) for v in props.values())


@settings(max_examples=100)
@given(st.binary(max_size=2000))
def test_json_like_amd_smi_never_raises(data: bytes) -> None:
    smi.parse_amd_smi("{" + data.decode("latin-1"))
    smi.parse_amd_smi("[" + data.decode("latin-1") + "]")
