"""Version, driver, OS and spec parsing: good values parse, anything else is an InputError."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resolver.util.errors import InputError
from resolver.util.versions import (
    check_gfx_name,
    driver_series,
    gfx_base_name,
    parse_spec,
    parse_version,
    python_minor,
    smi_misprint,
    split_os,
)


@pytest.mark.parametrize(
    ("text", "series"),
    [
        ("30.30.3", "30.30"),
        ("6.1.3", "6.1"),
        ("6.4", "6.4"),
        ("6.10.5-2119913.22.04", "6.10"),
        ("31.40.1", "31.40"),
    ],
)
def test_driver_series(text: str, series: str) -> None:
    assert driver_series(text) == series


@pytest.mark.parametrize("text", ["", "thirty", "30", "30.30.3; rm -rf /", "v30.30", "30..30"])
def test_bad_driver_is_input_error(text: str) -> None:
    with pytest.raises(InputError, match="not an amdgpu driver version"):
        driver_series(text)


def test_spec_forms() -> None:
    assert str(parse_spec("0.24.0")) == "==0.24.0"
    assert str(parse_spec("v0.24.0")) == "==0.24.0"
    assert parse_spec(">=0.20").contains("0.24.0")
    assert not parse_spec(">=0.20,<0.23").contains("0.23.0")


def test_os_and_python_and_gfx() -> None:
    assert split_os("Ubuntu-22.04") == ("ubuntu", "22.04")
    assert split_os("rhel-9.4") == ("rhel", "9.4")
    assert python_minor("3.12.4") == "3.12"
    assert check_gfx_name(" GFX942 ") == "gfx942"


@given(st.text(max_size=40))
def test_parsers_raise_only_input_errors(text: str) -> None:
    for parse in (
        driver_series,
        parse_spec,
        split_os,
        python_minor,
        check_gfx_name,
        lambda t: parse_version(t, what="--rocm"),
    ):
        try:
            parse(text)
        except InputError as exc:
            assert exc.hint and "\n" not in exc.message


def test_vllm_spec_hints_speak_of_vllm() -> None:
    assert str(parse_spec("0.24.*")) == "==0.24.*"
    with pytest.raises(InputError, match="not a version") as info:
        parse_spec("latest")
    assert "leave --vllm out" in (info.value.hint or "")
    with pytest.raises(InputError) as info:
        parse_spec("0.24.x")
    assert "0.24.0" in (info.value.hint or "") and "7.2.3" not in (info.value.hint or "")


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("gfx942:sramecc+:xnack-", "gfx942"),  # as rocminfo prints the ISA (issue 11, item 7)
        ("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", "gfx90a"),
        ("gfx1100", "gfx1100"),
        ("gfx9010", "gfx90a"),  # rocm-smi before ROCm 6.4 (issue 12)
        ("gfx9008", "gfx908"),  # amd-smi before ROCm 6.4 (ROCm/amdsmi CHANGELOG)
        ("gfx11001", "gfx1101"),  # gpustack's ROCm 6.2.4 rocm-smi JSON
        ("gfx9012", "gfx90c"),
        ("gfx1010", "gfx1010"),  # a real 4-digit name is never "corrected"
        ("gfx1030", "gfx1030"),
        ("gfx9016", "gfx9016"),  # no single hex digit for 16: left as printed (unknown to the data)
        ("gfx942:", None),
        ("nvidia", None),
    ],
)
def test_gfx_names_as_tools_print_them(text: str, name: str | None) -> None:
    assert gfx_base_name(text) == name
    if name:
        assert check_gfx_name(text) == name


def test_smi_misprint_leaves_real_names_alone() -> None:
    assert smi_misprint("gfx942") is None
    assert smi_misprint("gfx1151") is None
    assert smi_misprint("gfx12001") == "gfx1201"


@given(st.from_regex(r"gfx[0-9a-f]{3}", fullmatch=True), st.sampled_from(["", " ", "\n"]))
def test_a_bare_name_reads_as_the_same_name_with_a_target_id_suffix(name: str, pad: str) -> None:
    """A bare 3-digit name takes a short path (no pattern compiled for it): it must read as the
    full target-id reading of the same name does."""
    assert gfx_base_name(pad + name.upper() + pad) == name
    assert gfx_base_name(f"{name}:sramecc+:xnack-") == name


@given(st.lists(st.text("0123456789٣", min_size=0, max_size=7), min_size=1, max_size=4))
def test_a_plain_driver_release_reads_as_the_pattern_reads_it(parts: list[str]) -> None:
    """``driver_series`` reads a plain ``X.Y[.Z]`` without its pattern: the same answer, or the
    same refusal, as the pattern gives (non-ASCII digits and over-long parts included)."""
    import re

    from resolver.util import versions

    text = ".".join(parts)
    match = re.match(versions._DRIVER_RE, text)
    expected = f"{int(match.group(1))}.{int(match.group(2))}" if match else None
    try:
        got: str | None = driver_series(text)
    except InputError:
        got = None
    assert got == expected
