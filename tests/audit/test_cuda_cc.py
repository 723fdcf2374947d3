"""`audit --cc` and `audit --node` on CUDA libraries built on a real H200 host with known
-gencode flags (tests/fixtures/nvidia, README.md there): the parser reads back the flags that
built each library, compressed entries included, and the judgement agrees with what CUDA itself
said when each library was launched on that GPU. The live probe, check and audit recorded there
validate against the documented schemas."""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import jsonschema
import pytest
import zstandard

from resolver.artifacts.audit import audit
from resolver.artifacts.audit.bundle import elf_sections
from resolver.artifacts.audit.fatbin import cuda_code, entries
from resolver.data import matrix

from ..helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
NV = ROOT / "tests" / "fixtures" / "nvidia"
DOCS = ROOT / "docs"
M = matrix.load()
NO_IMAGE = "no kernel image is available for execution on the device"


def _libraries() -> dict[str, bytes]:
    with zstandard.ZstdDecompressor().stream_reader((NV / "libs.tar.zst").open("rb")) as raw:
        data = raw.read()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {
            m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }


LIBS = _libraries()


def _gencode() -> dict[str, set[str]]:
    """Each library's targets as its nvcc line asked for them (build.txt, verbatim from the
    host): code=sm_90a is a cubin sm_90a, code=compute_90 PTX compute_90."""
    out: dict[str, set[str]] = {}
    for line in (NV / "build.txt").read_text().splitlines():
        if not line.startswith("nvcc "):
            continue
        name = re.search(r"-o (\S+)\.so ", line)
        assert name is not None
        codes = re.findall(r"code=(\S+)", line)
        out[name.group(1) + ".so"] = set(codes)
    return out


def _launched() -> dict[str, str]:
    """What CUDA said when each library's kernel was launched on the H200 (launch.txt)."""
    lines = (NV / "launch.txt").read_text().splitlines()
    return {name: said for name, said in (line.split(" ", 1) for line in lines)}


def test_every_built_library_is_in_the_fixture() -> None:
    assert set(LIBS) == set(_gencode()) == set(_launched())
    assert "FAILED" not in (NV / "build.txt").read_text()


@pytest.mark.parametrize("name", sorted(_gencode()))
def test_the_parser_reads_the_gencode_flags_that_built_it(name: str) -> None:
    found = cuda_code(LIBS[name])
    assert found is not None and found.kind == "fatbin"
    assert set(found.targets) == _gencode()[name]


def test_cuobjdump_agrees_except_where_it_drops_the_family_suffix() -> None:
    """cuobjdump 13.0 --list-elf --list-ptx, run beside the build: the same architectures, PTX
    named by its sm_ number and a family cubin (sm_100f) listed as plain sm_100: the flags that
    built it, not cuobjdump's listing, are the truth for the variant."""
    listed: dict[str, set[str]] = {}
    current = ""
    for line in (NV / "cuobjdump.txt").read_text().splitlines():
        if line.startswith("## "):
            current = line[3:]
            listed[current] = set()
        elif m := re.match(r"(ELF|PTX) file\s+\d+: \S+?\.\d+\.(sm_\d+a?)\.(cubin|ptx)", line):
            kind, arch = m.group(1), m.group(2)
            listed[current].add(arch if kind == "ELF" else arch.replace("sm_", "compute_"))
    for name, built in _gencode().items():
        if name == "sm100f.so":
            assert listed[name] == {"sm_100"} and built == {"sm_100f"}
        else:
            assert listed[name] == built, name


def test_compressed_entries_are_recognised_and_their_arch_read_from_the_header() -> None:
    """-Xfatbin -compress-all compresses every entry; -compress=false none; CUDA 13's default
    compresses the PTX only. The architecture is read from each entry's header either way."""

    def fatbin(name: str) -> list[tuple[str, bool]]:
        data = LIBS[name]
        sections = elf_sections(data)
        assert sections is not None
        offset, size = sections[".nv_fatbin"]
        return sorted({(e.target, e.compressed) for e in entries(data, offset, offset + size)})

    assert fatbin("compressed.so") == [("compute_90", True), ("sm_80", True), ("sm_90", True)]
    assert fatbin("uncompressed.so") == [
        ("compute_90", False), ("sm_80", False), ("sm_90", False),
    ]  # fmt: skip
    assert fatbin("multi.so") == [("compute_90", True), ("sm_80", False), ("sm_90a", False)]
    assert fatbin("ptx90.so") == [("compute_90", True)]
    assert len(LIBS["compressed.so"]) < len(LIBS["uncompressed.so"])


@pytest.fixture(scope="module")
def libdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("nvlibs")
    for name, data in LIBS.items():
        (out / name).write_bytes(data)
    return out


@pytest.mark.parametrize("name", sorted(_launched()))
def test_the_h200_judgement_agrees_with_what_cuda_said_there(name: str, libdir: Path) -> None:
    """Each library was launched on the H200 (compute capability 9.0): "no error" where the
    audit says covered, CUDA's "no kernel image" where it says not (exit 1)."""
    out = run_cli("audit", str(libdir / name), "--cc", "9.0", "--json")
    data = json.loads(out.stdout)
    judged = data["cuda_covers"]["9.0"]
    ran = _launched()[name]
    assert ran in ("no error", NO_IMAGE)
    assert judged["covered"] == (ran == "no error")
    assert out.exit_code == (0 if ran == "no error" else 1)
    if ran == NO_IMAGE:
        assert judged["reason"] == "lacking" and judged["lacking"] == [name]


@pytest.mark.parametrize(
    ("name", "cc", "reason"),
    [
        ("sm80.so", "8.0", "cubin"),
        ("sm80.so", "8.6", "cubin"),  # a cubin runs on later minors of its major
        ("sm80.so", "9.0", "lacking"),
        ("sm90a.so", "9.0", "cubin"),
        ("sm90a.so", "10.0", "lacking"),  # arch-specific: 9.0 only
        ("ptx90.so", "9.0", "ptx-jit"),
        ("ptx90.so", "12.0", "ptx-jit"),  # PTX JIT-compiles forward
        ("ptx90.so", "8.9", "lacking"),
        ("sm100f.so", "10.3", "cubin"),  # a family target runs on its family
        ("sm100f.so", "12.0", "lacking"),
        ("multi.so", "8.6", "cubin"),
        ("multi.so", "9.0", "cubin"),
        ("multi.so", "10.0", "ptx-jit"),
        ("compressed.so", "9.0", "cubin"),
        ("compressed.so", "7.5", "lacking"),
    ],
)
def test_cc_judgement(name: str, cc: str, reason: str, libdir: Path) -> None:
    out = run_cli("audit", str(libdir / name), "--cc", cc, "--json")
    data = json.loads(out.stdout)
    judged = data["cuda_covers"][cc]
    assert judged["reason"] == reason
    assert out.exit_code == (1 if reason == "lacking" else 0)
    assert judged["how"] == {"cubin": "cubin", "ptx-jit": "ptx", "lacking": None}[reason]
    assert judged["ptx_only"] == ([name] if reason == "ptx-jit" else [])


def test_ptx_only_warns_of_the_first_start_and_of_the_arch_specific_kernels(libdir: Path) -> None:
    # multi.so on 10.0: compute_90 JIT-compiles, its sm_90a kernels do not exist there.
    out = run_cli("audit", str(libdir / "multi.so"), "--cc", "10.0", "--json")
    judged = json.loads(out.stdout)["cuda_covers"]["10.0"]
    assert judged["specific_not_jit"] == ["sm_90a"]
    # The warning is a printed promise: the text says both consequences.
    text = run_cli("audit", str(libdir / "multi.so"), "--cc", "10.0").stdout
    assert "covered only through a PTX JIT compile in multi.so" in text
    assert "slower first start" in " ".join(text.split())
    assert "(here: sm_90a)" in " ".join(text.split())


def test_not_covered_names_the_libraries_and_cudas_error(libdir: Path) -> None:
    out = run_cli("audit", str(libdir), "--cc", "9.0,7.5", "--json")
    assert out.exit_code == 1
    data = json.loads(out.stdout)
    assert data["cuda_judged"] == "all"
    assert data["cuda_covers"]["9.0"]["lacking"] == ["sm100f.so", "sm80.so"]
    assert data["cuda_covers"]["7.5"]["lacking"] == sorted(LIBS)
    # A printed promise: the text names CUDA's own error, which users search for.
    text = " ".join(run_cli("audit", str(libdir), "--cc", "9.0").stdout.split())
    assert f"'{NO_IMAGE}'" in text and "sm100f.so, sm80.so" in text


def test_no_cuda_code_is_not_coverage() -> None:
    amd = ROOT / "tests" / "audit" / "fixtures" / "jax_rocm7_plugin-0.12.0-_prng.so"
    out = run_cli("audit", str(amd), "--cc", "9.0", "--json")
    assert out.exit_code == 1
    assert json.loads(out.stdout)["cuda_covers"]["9.0"]["reason"] == "no-cuda-code"


@pytest.mark.parametrize("bad", ["9", "9.0a", "sm_90", "nine", "9.10", "", ","])
def test_a_bad_cc_is_bad_input(bad: str, libdir: Path) -> None:
    out = run_cli("audit", str(libdir / "sm80.so"), "--cc", bad)
    assert out.exit_code == 2
    assert out.stderr.count("\n") == 2 and "hint:" in out.stderr  # one line, one hint


def test_node_nvidia_gives_its_compute_capability(libdir: Path) -> None:
    out = run_cli("audit", str(libdir / "sm80.so"), "--node", str(NV / "probe.json"), "--json")
    data = json.loads(out.stdout)
    assert list(data["cuda_covers"]) == ["9.0"] and data["covers"] == {}
    assert out.exit_code == 1


def test_node_amd_gives_its_gfx_targets(libdir: Path) -> None:
    node = ROOT / "tests" / "data" / "nodes" / "mi300x-visible-devices.json"
    gfx = json.loads(node.read_text())["gfx_targets"]
    out = run_cli("audit", str(libdir / "sm80.so"), "--node", str(node), "--json")
    data = json.loads(out.stdout)
    assert list(data["covers"]) == gfx and data["cuda_covers"] == {}
    assert out.exit_code == 1  # CUDA code covers no gfx


def test_a_node_without_gpus_is_bad_input(tmp_path: Path, libdir: Path) -> None:
    probe = json.loads((NV / "probe.json").read_text())
    probe["host"]["other_devices"] = []
    probe["physical_gpu_count"] = probe["logical_gpu_count"] = 0
    node = tmp_path / "none.json"
    node.write_text(json.dumps(probe))
    out = run_cli("audit", str(libdir / "sm80.so"), "--node", str(node))
    assert out.exit_code == 2


# -- the live run's outputs ---------------------------------------------------------------------


def _schema(name: str) -> object:
    return json.loads((DOCS / name).read_text())


def test_recorded_live_outputs_validate_against_the_schemas() -> None:
    jsonschema.validate(json.loads((NV / "probe.json").read_text()), _schema("probe.schema.json"))
    jsonschema.validate(json.loads((NV / "check.json").read_text()), _schema("check.schema.json"))
    audits = sorted(NV.glob("audit-*.json"))
    assert len(audits) == 5
    for path in audits:
        jsonschema.validate(json.loads(path.read_text()), _schema("audit.schema.json"))


def test_the_recorded_audits_are_what_audit_says_here(libdir: Path) -> None:
    """The audit run on the host equals the same audit of the same bytes here (the artifact's
    path aside), and its exit codes are the ones recorded (rc.txt)."""
    rcs = dict(re.findall(r"audit (\S+) rc=(\d)", (NV / "rc.txt").read_text()))
    for path in sorted(NV.glob("audit-*.json")):
        name = path.stem.removeprefix("audit-")
        recorded = json.loads(path.read_text())
        out = run_cli(
            "audit", str(libdir / f"{name}.so"), "--node", str(NV / "probe.json"), "--json"
        )
        here = json.loads(out.stdout)
        here["artifact"] = recorded["artifact"]
        for lib in here["libraries"]:
            lib["path"] = Path(lib["path"]).name
        for judged in here["cuda_covers"].values():
            judged["lacking"] = [Path(p).name for p in judged["lacking"]]
            judged["ptx_only"] = [Path(p).name for p in judged["ptx_only"]]
        assert here == recorded, name
        assert str(out.exit_code) == rcs[name] == str(recorded["exit_code"])


def test_the_live_probe_and_check_saw_the_h200() -> None:
    probe = json.loads((NV / "probe.json").read_text())
    gpu = probe["host"]["other_devices"][0]
    assert (gpu["name"], gpu["compute_capability"]) == ("NVIDIA H200", "9.0")
    assert probe["gpu_vendor"] == "nvidia" and probe["physical_gpu_count"] == 1
    check = json.loads((NV / "check.json").read_text())
    assert check["verdict"] == "supported"
    csv = (NV / "nvidia-smi-query.csv").read_text()
    assert "NVIDIA H200" in csv and ", 9.0, 580.159.04," in csv


def test_the_whole_archive_is_audited_as_one_artifact() -> None:
    result = audit(M, str(NV / "libs.tar.zst"))
    assert len(result.libraries) == len(LIBS)
    assert {lib.kind for lib in result.libraries} == {"fatbin"}
