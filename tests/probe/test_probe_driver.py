"""issue 11, item 6: the AMD GPU Driver release is read where it is, and the probe says which source
answered."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from resolver.cli import app
from resolver.probe import driver, probe_live
from tests.probe_data import probe_matrix

FIXTURES = Path(__file__).parent / "fixtures"


def _tool(bin_dir: Path, name: str, text: str) -> None:
    """A stand-in on PATH for a system tool, printing ``text``."""
    bin_dir.mkdir(exist_ok=True)
    out = bin_dir / f"{name}.out"
    out.write_text(text)
    script = bin_dir / name
    script.write_text(f"#!/bin/sh\nexec '{shutil.which('cat')}' '{out}'\n")
    script.chmod(0o755)


def _gpu_root(tmp_path: Path, module_version: str | None) -> Path:
    """A fixture tree with one MI300X in KFD sysfs and, optionally, a DKMS module version file."""
    root = tmp_path / "root"
    node = root / "sys/class/kfd/kfd/topology/nodes/1"
    node.mkdir(parents=True)
    (node / "properties").write_text(
        "simd_count 1216\ngfx_target_version 90402\nvendor_id 4098\ndevice_id 29857\n"
        "location_id 256\ndomain 0\nunique_id 1\nnum_xcc 8\narray_count 32\nsimd_per_cu 4\n"
    )
    (node / "gpu_id").write_text("1\n")
    (node / "name").write_text("gfx942\n")
    module = root / "sys/module/amdgpu"
    module.mkdir(parents=True)
    if module_version:
        (module / "version").write_text(module_version + "\n")
    return root


def test_package_versions_carry_the_release() -> None:
    # ROCm/ROCm#6023 (with ROCm 7.0.1) and AMD's 6.4 repository file name
    assert driver.parse_package_version("1:6.14.14.30100100-2212064.24.04") == (
        "6.14.14",
        "30.10.1",
    )
    assert driver.parse_package_version("6.12.12.60400-2147987.24.04") == ("6.12.12", "6.4.0")
    assert driver.parse_package_version("6.14.14.30100100") == ("6.14.14", "30.10.1")
    # amdgpu-install 5.4.50403: the ROCm-numbered releases up to 6.4
    assert driver.parse_package_version("1:5.18.13.50403-1538762.22.04") == ("5.18.13", "5.4.3")
    assert driver.parse_package_version("1:6.8.5.60400-2124779.22.04") == ("6.8.5", "6.4.0")
    assert driver.parse_package_version("") == (None, None)
    assert driver.parse_package_version("package 'amdgpu-dkms' is not installed") == (None, None)


def test_tool_outputs() -> None:
    line = (
        "AMDSMI Tool: 25.5.1+5b3f5a3 | AMDSMI Library version: 25.5.1 | ROCm version: 6.4.2 | "
        "amdgpu version: 6.12.12 |"
    )
    assert driver.parse_amd_smi_version(line) == "6.12.12"
    # the in-tree driver: amd-smi prints a word, not a version (ROCm/ROCm#5902)
    assert (
        driver.parse_amd_smi_version(
            (FIXTURES / "amd-smi-default-gfx1151-strixhalo-rocm5902.txt").read_text()
        )
        is None
    )
    modinfo = (
        "filename:       /lib/modules/6.8.0-60-generic/updates/dkms/amdgpu.ko.zst\n"
        "version:        6.16.6\nlicense:        GPL and additional rights\n"
    )
    assert driver.parse_modinfo(modinfo) == "6.16.6"
    assert (
        driver.parse_modinfo(
            "filename: /lib/modules/6.17.0/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst\n"
        )
        is None
    )


def test_live_probe_reads_the_release_from_the_dkms_package(tmp_path: Path) -> None:
    root = _gpu_root(tmp_path, "6.16.13")
    bin_dir = tmp_path / "bin"
    _tool(bin_dir, "dpkg-query", "1:6.16.13.30300300-2327507.24.04")
    node = probe_live(
        root=root,
        env={"PATH": str(bin_dir)},
        check_access=False,
        matrix=probe_matrix(),
    )
    assert node.driver_version == "30.30.3"
    assert node.host["driver_release_source"] == "amdgpu-dkms package (dpkg-query)"
    assert node.host["driver_release_confidence"] == "exact"
    assert node.host["driver"]["module_version"] == "6.16.13"
    assert "driver-release-unknown" not in [p.code for p in node.problems]
    assert node.to_json()["host"]["driver"]["source"] == "amdgpu-dkms package (dpkg-query)"


def test_live_probe_maps_a_module_version_only_where_amd_pairs_it(tmp_path: Path) -> None:
    # ROCm/gpu-operator PR #610: module 6.19.14 is packaged release 31.40.
    node = probe_live(
        root=_gpu_root(tmp_path / "a", "6.19.14"), env={}, check_access=False, matrix=probe_matrix()
    )
    assert node.driver_version == "31.40"
    assert node.host["driver_release_source"] == "/sys/module/amdgpu/version"
    assert node.host["driver"]["module_version"] == "6.19.14"
    # 6.12.12 is paired with no release in AMD's data: kept as the module version, and said so.
    node = probe_live(
        root=_gpu_root(tmp_path / "b", "6.12.12"), env={}, check_access=False, matrix=probe_matrix()
    )
    assert node.driver_version is None and node.host["amdgpu_module_version"] == "6.12.12"
    problem = next(p for p in node.problems if p.code == "driver-release-unknown")
    assert "/sys/module/amdgpu/version" in problem.message


def test_modinfo_answers_when_sysfs_has_no_version(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _tool(
        bin_dir,
        "modinfo",
        "filename: /lib/modules/x/updates/dkms/amdgpu.ko\nversion:        6.19.14\n",
    )
    node = probe_live(
        root=_gpu_root(tmp_path, None),
        env={"PATH": str(bin_dir)},
        check_access=False,
        matrix=probe_matrix(),
    )
    assert node.driver_version == "31.40" and node.host["driver"]["source"] == "modinfo amdgpu"


def test_check_with_rocminfo_and_driver_does_not_ask_for_driver() -> None:
    fixture = FIXTURES / "rocminfo-gfx1151-strixhalo-dkms-rocm5817.txt"
    without = CliRunner().invoke(app, ["check", "--rocminfo", str(fixture)], env={"NO_COLOR": "1"})
    assert "--driver 30.30.3" in without.stdout
    given = CliRunner().invoke(
        app, ["check", "--rocminfo", str(fixture), "--driver", "30.30.3"], env={"NO_COLOR": "1"}
    )
    assert (
        "driver-release-unknown" not in given.stdout
        and "pass the release you installed" not in given.stdout
    )
    assert "the amdgpu kernel module reports version" not in given.stdout


def test_probe_json_with_driver_facts_validates(tmp_path: Path) -> None:
    import json

    import jsonschema

    bin_dir = tmp_path / "bin"
    _tool(bin_dir, "dpkg-query", "1:6.16.13.30300300-2327507.24.04")
    node = probe_live(
        root=_gpu_root(tmp_path, "6.16.13"),
        env={"PATH": str(bin_dir)},
        check_access=False,
        matrix=probe_matrix(),
    )
    schema = json.loads((Path(__file__).parents[2] / "docs/probe.schema.json").read_text())
    jsonschema.validate(json.loads(json.dumps(node.to_json())), schema)


def test_probe_text_says_which_source_named_the_release(tmp_path: Path) -> None:
    from resolver.cli.probe import render

    bin_dir = tmp_path / "bin"
    _tool(bin_dir, "dpkg-query", "1:6.16.13.30300300-2327507.24.04")
    node = probe_live(
        root=_gpu_root(tmp_path, "6.16.13"),
        env={"PATH": str(bin_dir)},
        check_access=False,
        matrix=probe_matrix(),
    )
    assert "30.30.3 (from amdgpu-dkms package (dpkg-query))" in render(node)
