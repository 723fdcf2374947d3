"""probe_live on this machine (no GPU) and against a fixture tree standing in for a GPU node."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from resolver.probe import probe_live
from resolver.probe.host import iommu_mode, os_id
from tests.probe_data import probe_matrix


def test_this_machine_without_gpu_says_why() -> None:
    node = probe_live(env={}, matrix=probe_matrix())
    if Path("/dev/kfd").exists():
        pytest.skip("this machine has /dev/kfd")
    codes = [p.code for p in node.problems]
    assert node.gpus == ()
    assert node.logical_gpu_count == 0
    assert "no-kfd" in codes
    assert codes[-1] == "no-gpu"
    if not Path("/sys/module/amdgpu").exists():
        assert "amdgpu-not-loaded" in codes
    assert node.kernel
    assert node.origin == "probe"


@pytest.fixture
def docker_like_socket(tmp_path: Path) -> Iterator[Path]:
    """A real unix-socket HTTP server answering /_ping like dockerd does."""
    path = tmp_path / "root/var/run/docker.sock"
    path.parent.mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.recv(1024)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path
    stop.set()
    thread.join(timeout=2)
    server.close()


def test_gpu_node_tree(make_root: Callable[[str], Path], docker_like_socket: Path) -> None:
    root = make_root("kfd-gfx942-mi308x-8gpu-cpx-k8sdp")
    # make_root builds under tmp_path/root-<tree>; put the daemon socket there too
    (root / "var/run").mkdir(parents=True, exist_ok=True)
    (root / "var/run/docker.sock").symlink_to(docker_like_socket)
    (root / "sys/module/amdgpu").mkdir(parents=True)
    (root / "sys/module/amdgpu/version").write_text("6.12.12\n")
    (root / "etc").mkdir()
    (root / "etc/os-release").write_text('NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\n')
    (root / "opt/rocm/.info").mkdir(parents=True)
    (root / "opt/rocm/.info/version").write_text("6.4.1-83\n")
    (root / "opt/rocm-7.2.0/.info").mkdir(parents=True)
    (root / "opt/rocm-7.2.0/.info/version").write_text("7.2.0-43\n")
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/numa_balancing").write_text("1\n")
    (root / "proc/sys/kernel/osrelease").write_text("5.15.0-140-generic\n")
    (root / "proc/cmdline").write_text("BOOT_IMAGE=/vmlinuz ro iommu=pt amd_iommu=on\n")
    (root / "dev").mkdir()
    (root / "dev/kfd").write_text("")
    node = probe_live(root=root, env={"HSA_OVERRIDE_GFX_VERSION": "9.4.2"}, matrix=probe_matrix())
    assert node.gfx_targets == ("gfx942",)
    assert (node.logical_gpu_count, node.physical_gpu_count) == (32, 8)
    assert node.host.get("amdgpu_module_version") == "6.12.12"
    assert node.host["driver_kind"] == "dkms"
    assert node.os == "ubuntu-22.04"
    assert node.kernel == "5.15.0-140-generic"
    assert node.rocm_version == "6.4.1"
    assert [i["version"] for i in node.host["rocm_installs"]] == ["6.4.1", "7.2.0"]
    assert node.host["iommu"] == "pt"
    assert node.host["numa_balancing"] == 1
    assert node.host["container_engines"]["docker"] is True
    assert node.host["kfd"]["present"] is True
    assert node.hsa_override_gfx_version == "9.4.2"
    assert all(g.runtime_gfx is None for g in node.gpus)  # 9.4.2 is the physical target: no flag
    codes = [p.code for p in node.problems]
    assert "numa-balancing-on" in codes
    assert "no-kfd" not in codes
    assert "no-container-engine" not in codes


def test_override_env_per_gpu_form(make_root: Callable[[str], Path]) -> None:
    root = make_root("kfd-gfx90a-mi210-8gpu-k8sdp")
    node = probe_live(
        root=root,
        env={"HSA_OVERRIDE_GFX_VERSION_0": "9.4.2"},
        check_access=False,
        matrix=probe_matrix(),
    )
    assert node.gpus[0].gfx == "gfx90a"
    assert node.gpus[0].runtime_gfx == "gfx942"
    assert all(g.runtime_gfx is None for g in node.gpus[1:])
    assert node.gfx_targets == ("gfx90a",)
    assert "gfx-override" in [p.code for p in node.problems]


def test_therock_layout_and_in_tree_driver(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "opt/rocm/core-10.0").mkdir(parents=True)
    (root / "sys/module/amdgpu").mkdir(parents=True)
    node = probe_live(root=root, env={}, check_access=False, matrix=probe_matrix())
    assert node.rocm_version == "10.0"
    assert node.host["driver_kind"] == "in-tree"
    assert node.driver_version is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('ID=ubuntu\nVERSION_ID="24.04"\n', "ubuntu-24.04"),
        ('ID="rhel"\nVERSION_ID="9.4"\n', "rhel-9.4"),
        ('ID=debian\nVERSION_ID="12"\n', "debian-12"),
        ("garbage", None),
    ],
)
def test_os_id(text: str, expected: str | None) -> None:
    assert os_id(text) == expected


def test_iommu_mode() -> None:
    assert iommu_mode("ro quiet")[0] == "default"
    assert iommu_mode("amd_iommu=off")[0] == "off"
    assert iommu_mode("intel_iommu=on iommu=pt") == ("pt", "intel_iommu=on iommu=pt")


def test_wsl_kernel_is_flagged(tmp_path: Path) -> None:
    """A WSL2 kernel release (as `uname -r` prints it there) becomes a problem with the way out."""
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text("5.15.167.4-microsoft-standard-WSL2\n")
    node = probe_live(root=tmp_path, env={}, check_access=False, matrix=probe_matrix())
    assert node.host["wsl"] is True
    wsl = next(p for p in node.problems if p.code == "wsl")
    assert "native Linux" in wsl.hint


def _tool(bin_dir: Path, name: str, output: Path) -> None:
    """A stand-in for a ROCm tool on PATH that prints a saved real output."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / name
    script.write_text(f"#!/bin/sh\nexec '{shutil.which('cat')}' '{output}'\n")
    script.chmod(0o755)


def test_live_reads_rocm_smi_json_and_the_agent_enumerator_on_path(tmp_path: Path) -> None:
    fixtures = Path(__file__).parent / "fixtures"
    bin_dir = tmp_path / "bin"
    _tool(bin_dir, "rocm-smi", fixtures / "peers/gpustack/amd-gpu-6.2.4-rocm-smi.json")
    agents = tmp_path / "agents.txt"
    agents.write_text("gfx000\ngfx1101\n")
    _tool(bin_dir, "rocm_agent_enumerator", agents)
    root = tmp_path / "root"
    root.mkdir()
    node = probe_live(
        root=root, env={"PATH": str(bin_dir)}, check_access=False, matrix=probe_matrix()
    )
    assert node.gfx_targets == ("gfx1101",)
    assert node.logical_gpu_count == 1
    assert node.gpus[0].vram_bytes == 17163091968
    assert node.host["gpu_sources"][0]["vram_bytes"] == "rocm-smi"
    assert "no-gpu" not in [p.code for p in node.problems]
    # without the tools on PATH the same root has no GPU
    assert (
        probe_live(
            root=root,
            env={"PATH": str(tmp_path / "empty")},
            check_access=False,
            matrix=probe_matrix(),
        ).gpus
        == ()
    )


def _nvidia_root(tmp_path: Path) -> Path:
    root = tmp_path / "h200"
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
        "(dvs-builder@U22-I3-AE18-23-3)  Tue Sep 23 09:55:41 UTC 2025\n"
        "GCC version:  gcc version 12.3.0\n"
    )
    (root / "dev").mkdir()
    for index in range(8):
        (root / f"dev/nvidia{index}").write_text("")
    (root / "dev/nvidiactl").write_text("")
    (root / "sys/module/nvidia").mkdir(parents=True)
    return root


def test_nvidia_host_says_what_it_found_and_suggests_no_amdgpu(tmp_path: Path) -> None:
    """issue 11, item 8: an H200 host (driver 580, /dev/nvidia0, no /dev/kfd)."""
    node = probe_live(
        root=_nvidia_root(tmp_path), env={}, check_access=False, matrix=probe_matrix()
    )
    # issue 38: eight NVIDIA GPUs are an 8-GPU node of vendor nvidia, not a problem
    assert node.gpus == () and (node.logical_gpu_count, node.physical_gpu_count) == (8, 8)
    assert node.gpu_vendor == "nvidia"
    assert "not-an-amd-gpu" not in [p.code for p in node.problems]
    assert all("modprobe" not in p.hint and "amdgpu-install" not in p.hint for p in node.problems)
    assert [d["device_node"] for d in node.host["other_devices"]] == [
        f"/dev/nvidia{i}" for i in range(8)
    ]
    assert "no-gpu" not in [p.code for p in node.problems]


def test_check_json_on_an_nvidia_host_is_a_cuda_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 26: without nvidia-smi (the driver's /proc version and /dev/nvidia* only) the node
    is still planned as an NVIDIA node; issue 38: the compute capability it could not read (no
    PCI id either) makes it unknown, never supported for an arch list, naming what would tell."""
    import json

    from typer.testing import CliRunner

    import resolver.probe
    from resolver.cli import app

    root = _nvidia_root(tmp_path)
    real = resolver.probe.probe_live
    monkeypatch.setattr(
        resolver.probe,
        "probe_live",
        lambda **kw: real(root=root, env={}, check_access=False, matrix=kw["matrix"]),
    )
    result = CliRunner().invoke(app, ["check", "--json"])
    assert result.exit_code == 6, result.stdout
    decision = json.loads(result.stdout)
    assert decision["verdict"] == "unknown" and decision["plan"] is None
    assert "cuda-arch-unchecked" in [m["subject"] for m in decision["missing"]]
    assert "modprobe" not in result.stdout
    probe = CliRunner().invoke(app, ["probe"])
    assert "NVIDIA" in probe.stdout and "modprobe" not in probe.stdout
    import jsonschema

    schema = json.loads((Path(__file__).parents[2] / "docs/probe.schema.json").read_text())
    data = json.loads(CliRunner().invoke(app, ["probe", "--json"]).stdout)
    jsonschema.validate(data, schema)
    assert data["host"]["other_devices"][0]["driver"] == "580.95.05"


def test_an_intel_display_gpu_does_not_hide_the_amdgpu_advice(tmp_path: Path) -> None:
    """No AMD DRM card but an Intel one: the AMD GPU may be there without its driver, so the
    advice to load amdgpu stays and the node is GPU-less as before."""
    root = tmp_path / "r"
    device = root / "sys/class/drm/card0/device"
    device.mkdir(parents=True)
    (device / "uevent").write_text("DRIVER=i915\nPCI_ID=8086:5917\nPCI_SLOT_NAME=0000:00:02.0\n")
    node = probe_live(root=root, env={}, check_access=False, matrix=probe_matrix())
    codes = [p.code for p in node.problems]
    assert "amdgpu-not-loaded" in codes and codes[-1] == "no-gpu"
    assert "not-an-amd-gpu" not in codes
    assert node.host["other_devices"][0]["vendor"] == "intel"


def test_visibility_variables_are_recorded_checked_and_kept_from_the_tools(tmp_path: Path) -> None:
    """The report keeps HIP/ROCR/CUDA_VISIBLE_DEVICES (the solver applies them); the tools run
    without them, so rocminfo would list every GPU; a value no runtime takes is a problem and is
    left out."""
    bin_dir = tmp_path / "bin"
    env_out = tmp_path / "env.txt"
    bin_dir.mkdir()
    script = bin_dir / "rocm_agent_enumerator"
    script.write_text(f"#!/bin/sh\n'{shutil.which('env')}' > '{env_out}'\necho gfx942\n")
    script.chmod(0o755)
    root = tmp_path / "root"
    root.mkdir()
    env = {
        "PATH": str(bin_dir),
        "ROCR_VISIBLE_DEVICES": "0,GPU-5b0f1c2e3d4a5b6c",
        "HIP_VISIBLE_DEVICES": "1",
        "CUDA_VISIBLE_DEVICES": "0;reboot",
    }
    node = probe_live(root=root, env=env, check_access=False, matrix=probe_matrix())
    assert node.visible_devices == {
        "ROCR_VISIBLE_DEVICES": "0,GPU-5b0f1c2e3d4a5b6c",
        "HIP_VISIBLE_DEVICES": "1",
    }
    bad = [p for p in node.problems if p.code == "visible-devices-invalid"]
    assert len(bad) == 1 and "CUDA_VISIBLE_DEVICES" in bad[0].message
    assert "VISIBLE_DEVICES" not in env_out.read_text()
