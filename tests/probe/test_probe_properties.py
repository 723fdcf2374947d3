"""No input makes a parser raise; garbage yields zero GPUs and a problem."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver.probe import enumerator, gfx, rocminfo, smi, sysfs
from tests.probe_data import probe_gfx, probe_matrix

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
        view = parse(text, gfx_table=probe_gfx())
        assert all(g.gfx is None or g.gfx.startswith("gfx") for g in view.gpus)


@settings(max_examples=200)
@given(st.text(alphabet=st.characters(blacklist_characters="Nn:[]"), max_size=400))
def test_garbage_gives_no_gpu_and_a_problem(text: str) -> None:
    for parse in (rocminfo.parse, smi.parse_amd_smi, smi.parse_rocm_smi):
        view = parse(text, gfx_table=probe_gfx())
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
    smi.parse_amd_smi("{" + data.decode("latin-1"), gfx_table=probe_gfx())
    smi.parse_amd_smi("[" + data.decode("latin-1") + "]", gfx_table=probe_gfx())


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
rocm_smi_keys = st.sampled_from(
    [
        "GPU ID",
        "Device ID",
        "Device Rev",
        "Unique ID",
        "Card series",
        "Card Series",
        "Card model",
        "Card Vendor",
        "VRAM Total Memory (B)",
        "vram Total Memory (MiB)",
        "GFX Version",
        "PCI Bus",
        "Compute Partition",
        "Memory Partition",
        "",
    ]
) | st.text(max_size=20)
rocm_smi_values = st.sampled_from(
    [
        "0x74a1",
        "N/A",
        "gfx9010",
        "gfx11001",
        "0x",
        "34342961152",
        "CPX",
        "0000:1E:00.0",
        "Chengdu Haiguang",
    ]
) | st.text(max_size=20)
rocm_smi_docs = st.dictionaries(
    st.sampled_from(["card0", "card1", "card12", "system", "cardX"]) | st.text(max_size=8),
    st.dictionaries(rocm_smi_keys, rocm_smi_values | json_values, max_size=8) | json_values,
    max_size=4,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(rocm_smi_docs)
def test_rocm_smi_json_never_raises(doc: dict[str, object]) -> None:
    import json

    view = smi.parse_rocm_smi(json.dumps(doc), gfx_table=probe_gfx())
    assert all(g.gfx is None or gfx.is_gfx_name(g.gfx) for g in view.gpus)
    assert all(g.unique_id is None or len(g.unique_id) == 16 for g in view.gpus)


@settings(max_examples=200)
@given(
    st.lists(
        st.sampled_from(
            ["gfx000", "gfx90a", "gfx942:sramecc+:xnack-", "gfx9010", "gfx11-generic", ""]
        )
        | st.text(max_size=30),
        max_size=20,
    ).map("\n".join)
)
def test_agent_enumerator_never_raises(text: str) -> None:
    view = enumerator.parse(text)
    assert all(gfx.is_gfx_name(g.gfx) for g in view.gpus)
    assert view.gpus or view.problems


drm_attrs = st.dictionaries(
    st.sampled_from(
        [
            "vendor",
            "device",
            "revision",
            "unique_id",
            "mem_info_vram_total",
            "mem_info_vram_vendor",
            "mem_info_gtt_total",
            "board_info",
            "current_compute_partition",
            "uevent",
            "product_name",
        ]
    ),
    st.sampled_from(
        [
            "0x1002",
            "0x10de",
            "0x74a1",
            "17163091968",
            "CPX",
            "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:03:00.0",
            "",
        ]
    )
    | st.text(max_size=40),
    max_size=11,
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(drm_attrs, max_size=3))
def test_drm_sysfs_never_raises(cards: list[dict[str, str]]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for index, attrs in enumerate(cards):
            device = root / f"sys/class/drm/card{index}/device"
            device.mkdir(parents=True)
            for name, value in attrs.items():
                (device / name).write_text(value, encoding="utf-8", errors="surrogateescape")
        view = sysfs.parse(root, gfx_table=probe_gfx())
        assert all(g.gfx is None or gfx.is_gfx_name(g.gfx) for g in view.gpus)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.binary(max_size=3000),
    st.sampled_from(["rocminfo", "amd_smi", "rocm_smi", "agent_enumerator"]),
)
def test_file_probe_raises_only_project_errors(data: bytes, flag: str) -> None:
    import tempfile

    from resolver.probe import probe_files
    from resolver.util.errors import ResolverError

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "input"
        path.write_bytes(data)
        try:
            node = probe_files(**{flag: path}, matrix=probe_matrix())  # type: ignore[arg-type]
        except ResolverError as exc:
            assert exc.hint
        else:
            assert node.problems or node.gpus
