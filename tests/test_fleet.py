"""Fleet planning from probe reports: host lists, reading reports, grouping by fingerprint, the
main plan and how other groups join it, the output directory, and the CLI's bad-input answers."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from resolver.data import matrix
from resolver.data.node import Node
from resolver.fleet import hostlist
from resolver.fleet.artifacts import Options, render_all, write_dir
from resolver.fleet.plan import fingerprint, fleet_json, plan_fleet, render_text
from resolver.fleet.reports import NodeReport, read_reports
from resolver.solve import Request
from resolver.util.errors import InputError, UsageError
from tests.helpers import cpx_node, run_cli, run_process
from tests.probe_data import probe_matrix

FIXTURES = Path(__file__).parent / "probe" / "fixtures"
MI300X = FIXTURES / "rocminfo-gfx942-mi300x-4gpu-thamada.txt"
MI50 = FIXTURES / "rocminfo-gfx906-mi50-8gpu-delaunay-regression.txt"


def _probe(path: Path, **extra: object) -> dict[str, object]:
    from resolver.probe import probe_files

    data: dict[str, object] = json.loads(
        json.dumps(probe_files(rocminfo=path, matrix=probe_matrix()).to_json())
    )
    data.update(extra)
    return data


@pytest.fixture
def reports_dir(tmp_path: Path) -> Path:
    d = tmp_path / "reports"
    d.mkdir()
    mi300x, mi50 = _probe(MI300X), _probe(MI50)
    for i in range(1, 5):
        (d / f"gpu{i:03d}.json").write_text(json.dumps(mi300x))
    # Two more MI300X nodes on an old driver: a group of their own that a driver update lets join.
    for i in (5, 6):
        (d / f"gpu{i:03d}.json").write_text(json.dumps({**mi300x, "driver_version": "6.1.3"}))
    (d / "gpu007.json").write_text(json.dumps(mi50))
    return d


# --- host lists -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "text"),
    [
        (["gpu001", "gpu002", "gpu003", "gpu007"], "gpu[001-003,007]"),
        (["n1", "n2", "n3", "n10"], "n[1-3,10]"),
        (["a098", "a099", "a100", "a101"], "a[098-101]"),
        (["login", "gpu1"], "login,gpu1"),
        (["x001", "x7"], "x001,x7"),
        (["r1n1", "r1n2", "r2n1"], "r1n[1-2],r2n1"),
    ],
)
def test_compress(names: list[str], text: str) -> None:
    assert hostlist.compress(names) == text
    assert sorted(hostlist.expand(text)) == sorted(names)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["gpu", "n", "mi300-", "c1r"]),
            st.integers(0, 2000),
            st.sampled_from([0, 3, 4]),
        ),
        max_size=60,
    )
)
def test_compress_expand_round_trip(parts: list[tuple[str, int, int]]) -> None:
    names = list(dict.fromkeys(f"{p}{n:0{w}d}" for p, n, w in parts))
    assert sorted(hostlist.expand(hostlist.compress(names))) == sorted(names)


@pytest.mark.parametrize("bad", ["gpu[3-1]", "gpu[a-b]", "gpu[1-2", "bad name", "gpu[0-2000000]"])
def test_expand_refuses(bad: str) -> None:
    with pytest.raises(InputError):
        hostlist.expand(bad)


# --- reports and grouping -------------------------------------------------------------------


def test_reports_name_nodes_and_list_what_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(_probe(MI300X, hostname="node-a")))
    (tmp_path / "b.json").write_text("{not json")
    (tmp_path / "c.json").write_text(json.dumps({"gpus": "eight"}))
    (tmp_path / "d.json").write_text(
        json.dumps(_probe(MI300X, tool={"name": "rocm-vllm", "version": "0.0.9"}))
    )
    reports = {r.name: r for r in read_reports([str(tmp_path)])}
    assert set(reports) == {"node-a", "b", "c", "d"}
    assert reports["node-a"].status == "ok"
    assert (
        reports["b"].status == "failed"
        and reports["b"].reason == "not valid JSON (line 1, column 2)"
    )
    assert reports["c"].status == "failed" and "'gpus' must be list" in (reports["c"].reason or "")
    assert reports["d"].notes == ("written by rocm-vllm 0.0.9, read by 0.1.0: fields may differ",)


def test_missing_inputs_are_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or directory"):
        read_reports([str(tmp_path / "nope")])
    with pytest.raises(InputError, match="matches no file"):
        read_reports([str(tmp_path / "*.json")])


def test_groups_are_decided_once_and_join_the_main_plan(reports_dir: Path) -> None:
    m = matrix.load()
    fleet = plan_fleet(m, read_reports([str(reports_dir)]), Request())
    by_nodes = {g.hostlist: g for g in fleet.groups}
    assert set(by_nodes) == {"gpu[001-004]", "gpu[005-006]", "gpu007"}
    assert fleet.main_plan is not None and fleet.main_nodes == 4
    assert (
        by_nodes["gpu[001-004]"].join is not None
        and by_nodes["gpu[001-004]"].join.status == "on-plan"
    )
    old = by_nodes["gpu[005-006]"]
    assert old.join is not None and old.join.status == "host-fix"
    assert old.join.fixes and all("driver" in f for f in old.join.fixes)
    mi50 = by_nodes["gpu007"]
    assert mi50.join is not None and mi50.join.status == "blocked"
    assert fleet.exit_code == 1


def test_a_blocked_group_gets_the_route_check_prints(reports_dir: Path) -> None:
    """A group that needs a host change for its own plan carries the what-if search's route,
    the same route `check` prints for its node, and its join route names the same steps."""
    from resolver.solve import solve
    from resolver.solve.routes import search
    from resolver.util.versions import parse_spec

    m = matrix.load()
    request = Request(vllm=parse_spec("==0.24.0"))
    fleet = plan_fleet(m, read_reports([str(reports_dir)]), request)
    old = next(g for g in fleet.groups if g.hostlist == "gpu[005-006]")
    assert old.verdict == "blocked_host_fix" and old.route is not None
    best = search(m, solve(m, old.representative, request)).best
    assert best is not None and best.steps == old.route.steps
    assert [s.change.kind for s in old.route.steps] == ["driver"]
    data = json.loads(json.dumps(fleet_json(fleet, m)))
    group = next(g for g in data["groups"] if g["nodes"] == "gpu[005-006]")
    assert group["route"]["plan"]["label"] == old.route.opens.candidate.label
    assert old.join is not None and old.join.status == "host-fix" and old.join.steps
    assert f"host fix for its own best plan ({old.route.opens.candidate.label})" in (
        render_text(fleet)
    )


def test_fingerprint_ignores_what_does_not_change_the_decision() -> None:

    from resolver.data.node import from_json

    node = from_json(_probe(MI300X), where="x")
    other = msgspec.structs.replace(node, kernel="6.8.0-31-generic", host={"numa_balancing": 1})
    assert fingerprint(node) == fingerprint(other)
    assert fingerprint(node) != fingerprint(msgspec.structs.replace(node, driver_version="6.1.3"))
    assert fingerprint(msgspec.structs.replace(node, driver_version="6.1.3")) == fingerprint(
        msgspec.structs.replace(node, driver_version="6.1.5")
    )


def test_duplicate_names_are_listed_not_planned(tmp_path: Path) -> None:
    for stem in ("x", "y"):
        (tmp_path / f"{stem}.json").write_text(json.dumps(_probe(MI300X, hostname="gpu001")))
    (tmp_path / "z.json").write_text(json.dumps(_probe(MI300X, hostname="gpu002")))
    fleet = plan_fleet(matrix.load(), read_reports([str(tmp_path)]), Request())
    assert [g.hostlist for g in fleet.groups] == ["gpu002"]
    assert sorted(r.source.rsplit("/", 1)[1] for r in fleet.failed) == ["x.json", "y.json"]
    assert all("duplicate node name 'gpu001'" in (r.reason or "") for r in fleet.failed)


# --- output directory -------------------------------------------------------------------------


def test_output_directory_is_all_or_nothing(reports_dir: Path, tmp_path: Path) -> None:
    m = matrix.load()
    fleet = plan_fleet(m, read_reports([str(reports_dir)]), Request())
    files = render_all(m, fleet, Options(model="Qwen/Qwen3-8B"))
    assert set(files) >= {"fleet.json", "fleet.txt", "slurm/g1.sbatch", "kubernetes/g1.yaml"}
    out = tmp_path / "out"
    write_dir(out, files)
    assert (out / "slurm" / "g1.sbatch").stat().st_mode & 0o111
    with pytest.raises(InputError, match="not empty"):
        write_dir(out, files)

    class Boom(dict[str, str]):
        def items(self):  # type: ignore[override]
            yield "fleet.json", "{}"
            raise OSError(28, "No space left on device")

    with pytest.raises(InputError, match="No space left"):
        write_dir(out, Boom(), force=True)
    assert (out / "slurm" / "g1.sbatch").exists()  # the old directory is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "reports"]  # no temporary left
    write_dir(out, {"fleet.json": "{}"}, force=True)
    assert sorted(p.name for p in out.iterdir()) == ["fleet.json"]  # replaced, not merged


def test_sbatch_script_engines(reports_dir: Path) -> None:
    m = matrix.load()
    fleet = plan_fleet(m, read_reports([str(reports_dir)]), Request())
    docker = render_all(m, fleet, Options())["slurm/g1.sbatch"]
    assert "#SBATCH --nodelist=gpu[001-004]" in docker and "#SBATCH --nodes=4" in docker
    assert "#SBATCH --gpus-per-node=4" in docker
    assert (
        '"$CONTAINER" run --rm --name vllm-g1 --device /dev/kfd --device /dev/dri --group-add video'
        in docker
    )
    podman = render_all(m, fleet, Options(engine="podman"))["slurm/g1.sbatch"]
    # Issue 40: with several groups and no node features known (probe files), one --constraint
    # cannot pick each group's nodes: refused, not written into every group's script.
    assert len(fleet.groups) > 1
    with pytest.raises(UsageError, match=r"--constraint mi300x: .* groups"):
        render_all(m, fleet, Options(engine="podman", constraint="mi300x"))
    assert "--group-add keep-groups" in podman and "docker.io/vllm/vllm-openai-rocm" in podman
    apptainer = render_all(m, fleet, Options(engine="apptainer"))["slurm/g1.sbatch"]
    assert (
        '"$CONTAINER" exec --writable-tmpfs --bind "$HOME"/.cache/huggingface:/hf-cache'
        in apptainer
    )
    # Issue 23: the image is pulled once to a SIF in the submit directory (shared storage), not
    # by every node from docker://, and the bind source is made before Apptainer binds it.
    assert (
        '[ -f "$SIF" ] || "$CONTAINER" pull "$SIF" docker://vllm/vllm-openai-rocm:v0.24.0'
        in apptainer
    )
    # named by the image (issue 40), not by the group number
    assert 'SIF="${SIF:-$PWD/vllm+vllm-openai-rocm=v0.24.0.sif}"' in apptainer
    assert '"$SIF" vllm serve' in apptainer
    assert '  mkdir -p "$HOME"/.cache/huggingface' in apptainer
    for script in (docker, podman, apptainer):
        assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0


def _run_script(script: str, tmp: Path) -> list[list[str]]:
    """Run a batch script as written with a stand-in srun (runs its command once, as one node's
    task) and container engine (records each invocation's words): what each node would start."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "srun").write_text(
        '#!/bin/sh\nwhile [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done\n'
        'exec "$@"\n'
    )
    log = tmp / "engine.log"
    (bin_dir / "engine").write_text(
        # Like Apptainer, refuse a --bind whose source does not exist (Docker would create it).
        '#!/bin/sh\nprev=\nfor a in "$@"; do\n'
        '  if [ "$prev" = --bind ] && [ ! -e "${a%%:*}" ]; then\n'
        '    echo "FATAL: mount ${a%%:*}: no such file or directory" >&2; exit 255\n'
        "  fi\n  prev=$a\ndone\n"
        # One write per invocation (O_APPEND keeps it whole): 64 servers start at once.
        f'line=$(printf "%s\\t" "$@")\nprintf "%s\\n" "$line" >> {log}\n'
        '[ "$1" = pull ] && touch "$2"\nexit 0\n'
    )
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    path = tmp / "job.sbatch"
    path.write_text(script)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "CONTAINER": str(bin_dir / "engine"),
        "HOME": str(tmp / "home"),
    }
    run = subprocess.run(
        ["bash", str(path)], env=env, cwd=tmp, capture_output=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr
    assert b"FATAL" not in run.stderr, run.stderr  # a background server's failure
    return [line.rstrip("\t").split("\t") for line in log.read_text().splitlines()]


def test_cpx_group_serves_one_replica_per_partition(tmp_path: Path) -> None:
    """Issue 23: a CPX group's script and manifests ran --tensor-parallel-size 63 across
    partitions (garbage, says the tool's own warning). They now run what `rocm-vllm image` prints
    for one node: one TP=1 server per partition, on its own device and port."""
    cpx = cpx_node()
    m = matrix.load()
    fleet = plan_fleet(m, [NodeReport(name="cpx1", source="t", node=cpx)], Request())
    files = render_all(m, fleet, Options(model="Qwen/Qwen3-8B", port=9000))
    script = files["slurm/g1.sbatch"]
    assert "--tensor-parallel-size" not in script
    runs = _run_script(script, tmp_path)
    assert len(runs) == 64
    # The 64 servers start in the background, in any order.
    runs.sort(key=lambda w: int(w[w.index("--name") + 1].rsplit("-", 1)[1]))
    for n, words in enumerate(runs):
        assert words[words.index("--name") + 1] == f"vllm-g1-{n}"
        assert f"HIP_VISIBLE_DEVICES={n}" in words
        assert words[words.index("-p") + 1] == f"{9000 + n}:{9000 + n}"
        assert words[-2:] == ["--port", str(9000 + n)]
    assert (tmp_path / "home" / ".cache" / "huggingface").is_dir()
    deployment = next(yaml.safe_load_all(files["kubernetes/g1.yaml"]))
    assert deployment["spec"]["replicas"] == 64
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"amd.com/gpu": 1}
    assert "--tensor-parallel-size" not in container["args"]
    assert "podAntiAffinity" not in pod["affinity"]  # 64 pods share the node


def test_apptainer_script_pulls_once_and_runs_the_sif(reports_dir: Path, tmp_path: Path) -> None:
    m = matrix.load()
    fleet = plan_fleet(m, read_reports([str(reports_dir)]), Request())
    script = render_all(m, fleet, Options(engine="apptainer"))["slurm/g1.sbatch"]
    runs = _run_script(script, tmp_path)
    sif = _sif_of(script)
    assert runs[0][:2] == ["pull", str(tmp_path / sif)]
    assert runs[1][0] == "exec" and str(tmp_path / sif) in runs[1]
    assert not any("docker://" in w for w in runs[1])
    # Run again (the SIF is there): no second pull.
    (tmp_path / "engine.log").unlink()
    assert [r[0] for r in _run_script(script, tmp_path)] == ["exec"] * 4  # one per node


def _sif_of(script: str) -> str:
    """The SIF file name a batch script pulls to and runs (its `SIF=` default)."""
    line = next(ln for ln in script.splitlines() if ln.startswith('SIF="${SIF:-$PWD/'))
    return line.removeprefix('SIF="${SIF:-$PWD/').removesuffix('}"')


def test_apptainer_sif_is_named_by_the_image_not_the_group(
    reports_dir: Path, tmp_path: Path
) -> None:
    """Issue 40: SIFs were vllm-gN.sif and an existing one was used as is, so a later plan whose
    g1 is another image ran the earlier plan's image, and two groups of one image pulled it
    twice. A SIF is named by the image's reference and digest: the same file for the same
    image, another file (and a pull) for another image."""
    import shlex

    m = matrix.load()
    fleet = plan_fleet(m, read_reports([str(reports_dir)]), Request())
    files = render_all(m, fleet, Options(engine="apptainer"))
    scripts = {p: t for p, t in files.items() if p.startswith("slurm/") and p.endswith(".sbatch")}
    pulled = {}
    for path, text in scripts.items():
        pull = next(ln for ln in text.splitlines() if '"$CONTAINER" pull "$SIF" ' in ln)
        ref = next(w for w in shlex.split(pull) if w.startswith("docker://"))
        pulled[path] = (_sif_of(text), ref)
        assert "-g" not in _sif_of(text).split("=")[0]  # no group number in the name
    for a, (sif_a, ref_a) in pulled.items():
        for b, (sif_b, ref_b) in pulled.items():
            assert (sif_a == sif_b) == (ref_a == ref_b), (a, b)
    # Two plans of different images from one submit directory: the second pulls its own image.
    distinct = {ref: path for path, (_sif, ref) in pulled.items()}
    assert len(distinct) >= 2, pulled
    first, second = list(distinct.values())[:2]
    _run_script(scripts[first], tmp_path)
    (tmp_path / "engine.log").unlink()
    runs = _run_script(scripts[second], tmp_path)
    assert runs[0][:2] == ["pull", str(tmp_path / pulled[second][0])]
    assert pulled[second][0] != pulled[first][0]


def test_sif_names_are_distinct_words() -> None:
    from resolver.artifacts.apptainer import sif_name

    digest = "sha256:" + "0123456789abcdef" * 4
    names = {
        sif_name(ref)
        for ref in (
            "rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909",
            "rocm/vllm_rocm6.4.1:vllm_0.10.1_20250909",
            f"rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909@{digest}",
            f"127.0.0.1:5000/rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909@{digest}",
        )
    }
    assert len(names) == 4
    assert all("/" not in n and n.endswith(".sif") for n in names)


# --- the command line ---------------------------------------------------------------------------


def test_cli_plan_json_schema(reports_dir: Path) -> None:
    import jsonschema

    result = run_cli("fleet", "plan", str(reports_dir), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    schema = json.loads((Path(__file__).parents[1] / "docs" / "fleet.schema.json").read_text())
    jsonschema.validate(data, schema)
    assert data["schema_version"] == 1
    assert [g["nodes"] for g in data["groups"]] == ["gpu[001-004]", "gpu[005-006]", "gpu007"]


def test_cli_text_table(reports_dir: Path) -> None:
    result = run_cli("fleet", "plan", str(reports_dir))
    assert result.exit_code == 1
    assert "g2     gpu[005-006]  2" in result.stdout
    assert (
        "main plan: vllm/vllm-openai-rocm:v0.24.0  (4 of 7 nodes run it as they are)"
        in result.stdout
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fleet", "plan"], "error: no nodes given"),
        (["fleet", "plan", "nope.json"], "error: nope.json: no such file or directory"),
        (["fleet", "plan", "x", "--engine", "lxc"], "error: --engine 'lxc' is not one of"),
        (["fleet", "plan", "x", "--shm-size", "lots"], "error: --shm-size 'lots' is not a size"),
        (
            ["fleet", "plan", "x", "--probe-command", "probe"],
            "error: --probe-command is for --slurm",
        ),
    ],
)
def test_cli_bad_input_is_one_error_and_a_hint(
    args: list[str], message: str, tmp_path: Path
) -> None:
    result = run_cli(*args)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith(message), result.stderr
    assert lines[1].startswith("hint: ") and len(lines) == 2


def test_cli_output_dir_not_written_on_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli("fleet", "plan", str(tmp_path / "missing"), "-o", str(out))
    assert result.exit_code == 2 and not out.exists()


@pytest.mark.parametrize("command", ["plan", "gather"])
def test_cli_output_dir_refused_before_any_work(
    command: str, reports_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40: an -o whose parent does not exist (or a non-empty one without --force) is
    refused before the gather and the planning, not after them (a run spent 7.6 s planning, then
    exit 2)."""
    from resolver.fleet import plan, slurm

    def never(*_a: object, **_k: object) -> None:
        raise AssertionError("ran before the -o check")

    monkeypatch.setattr(plan, "plan_fleet", never)
    monkeypatch.setattr(slurm, "gather", never)
    source = [str(reports_dir)] if command == "plan" else ["--slurm", "gpu"]
    out = tmp_path / "no" / "such" / "dir"
    result = run_cli("fleet", command, *source, "-o", str(out))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: -o {out}: {out.parent} does not exist")
    full = tmp_path / "full"
    (full / "keep").mkdir(parents=True)
    result = run_cli("fleet", command, *source, "-o", str(full))
    assert result.exit_code == 2 and "not empty" in result.stderr
    assert (full / "keep").is_dir()


def test_repeated_node_option_is_refused() -> None:
    run = run_process("check", "--node", "a.json", "--node=b.json")
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        "error: --node given 2 times (a.json, b.json); a command decides for one value",
        "hint: for many nodes: rocm-vllm fleet plan FILE... (see `rocm-vllm fleet plan --help`)",
    ]


@pytest.mark.registry
@pytest.mark.docker
def test_digest_pins_each_group_image_once(shim_images, reports_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--digest asks the (loopback) registry for the image's manifest digest; the scripts and
    manifests then pull it by digest from that registry."""
    out = tmp_path / "out"
    result = run_cli(
        "fleet",
        "plan",
        str(reports_dir),
        "--digest",
        "--registry",
        shim_images.registry,
        "-o",
        str(out),
        "--json",
    )
    assert result.exit_code == 1, result.stderr
    pushed = shim_images.official
    expected = f"{pushed.name}:v0.24.0@{pushed.digest}"
    g1 = json.loads(result.stdout)["groups"][0]
    assert g1["image"] == {"ref": expected, "digest": pushed.digest}
    assert expected in (out / "slurm" / "g1.sbatch").read_text()
    deployment = next(yaml.safe_load_all((out / "kubernetes" / "g1.yaml").read_text()))
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == expected


def test_ten_thousand_nodes_are_decided_once_per_fingerprint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scale property bench/fleet.py measures: 10,000 reports of 50 kinds cost at most two
    solver runs per kind (the plan, and the image path when the plan is not an image)."""
    import itertools

    from resolver.data.node import from_flags
    from resolver.fleet import plan as plan_mod
    from resolver.fleet.reports import NodeReport

    calls = 0
    real = plan_mod.solve

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(plan_mod, "solve", counting)
    kinds = [
        from_flags(gfx=g, gpus=n, driver=d, os="ubuntu-22.04", rocm=None, python="3.12")
        for g, n, d in itertools.product(
            ("gfx942", "gfx90a", "gfx950", "gfx1100", "gfx1201"),
            (1, 8),
            ("30.30.3", "30.10.1", "6.4.3", "6.2.4", "6.1.3"),
        )
    ]
    reports = [
        NodeReport(name=f"gpu{i + 1:05d}", source="bench", node=kinds[i % 50])
        for i in range(10_000)
    ]
    fleet = plan_fleet(matrix.load(), reports, Request())
    assert len(fleet.groups) == 50 and all(len(g.reports) == 200 for g in fleet.groups)
    assert calls <= 100
    assert all(len(hostlist.expand(g.hostlist)) == 200 for g in fleet.groups)


def test_rich_table_says_what_the_text_says(reports_dir: Path) -> None:
    from rich.console import Console

    from resolver.fleet.plan import render_rich, render_text

    fleet = plan_fleet(matrix.load(), read_reports([str(reports_dir)]), Request())
    console = Console(width=200, record=True, color_system=None)
    render_rich(fleet, console)
    text = console.export_text()
    assert "main plan: vllm/vllm-openai-rocm:v0.24.0  (4 of 7 nodes run it as they are)" in text
    for g in fleet.groups:
        assert g.hostlist in text and g.verdict in text
    assert render_text(fleet).split("\n\n", 2)[2].strip() in text


def test_slurm_tools_missing_is_exit_4(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "PATH": str(tmp_path)}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "resolver",
            "fleet",
            "gather",
            "--slurm",
            "gpu",
            "-o",
            str(tmp_path / "out"),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 4
    assert run.stderr.splitlines()[0] == "error: sinfo is not on PATH"
    assert not (tmp_path / "out").exists()


def test_group_without_an_image_says_how_to_build(tmp_path: Path) -> None:
    from resolver.data.node import from_flags
    from resolver.fleet.plan import render_text
    from resolver.fleet.reports import NodeReport

    node = from_flags(
        gfx="gfx908", gpus=4, driver="30.30.3", os="ubuntu-22.04", rocm=None, python=None
    )
    m = matrix.load()
    fleet = plan_fleet(
        m, [NodeReport(name=f"mi100-{i}", source="x", node=node) for i in (1, 2)], Request()
    )
    (g,) = fleet.groups
    assert g.verdict == "unofficial_only" and g.image is None
    text = render_text(fleet)
    assert "  no prebuilt image fits: no batch script or manifest; the plan is vLLM" in text
    assert "rocm-vllm dockerfile --gfx gfx908 --gpus 4 --driver 30.30.3" in text
    assert not [
        k for k in render_all(m, fleet, Options()) if k.startswith(("slurm/", "kubernetes/"))
    ]


def test_driver_for_nodes_without_one(reports_dir: Path) -> None:
    result = run_cli("fleet", "plan", str(reports_dir), "--driver", "30.30.3", "--json")
    data = json.loads(result.stdout)
    drivers = {g["nodes"]: g["fingerprint"]["driver_series"] for g in data["groups"]}
    assert drivers == {"gpu[001-004]": "30.30", "gpu[005-006]": "6.1", "gpu007": "30.30"}
    bad = run_cli("fleet", "plan", str(reports_dir), "--driver", "latest")
    assert bad.exit_code == 2 and bad.stderr.startswith(
        "error: --driver 'latest' is not an amdgpu driver version"
    )


def test_reports_that_differ_only_by_hostname_read_alike(tmp_path: Path) -> None:

    from resolver.fleet.reports import report_from_json

    data = _probe(MI300X)
    for name in ("gpu001", "gpu002", "gpu003"):
        (tmp_path / f"{name}.json").write_text(json.dumps({**data, "hostname": name}, indent=2))
    (tmp_path / "gpu004.json").write_text(
        json.dumps({**data, "hostname": "gpu004", "gpus": "x"}, indent=2)
    )
    reports = read_reports([str(tmp_path)])
    assert [r.name for r in reports] == ["gpu001", "gpu002", "gpu003", "gpu004"]
    for r in reports[:3]:
        parsed = report_from_json(
            json.loads(Path(r.source).read_text()), name=r.name, source=r.source
        )
        assert r == parsed
        assert r.node is not None and r.node.origin == f"file:{r.source}"
    assert reports[3].status == "failed"  # same length, other content: parsed, not reused
    assert (
        msgspec.structs.replace(
            reports[1], name="gpu001", source=reports[0].source, node=reports[0].node
        )
        == reports[0]
    )


def _counting_full_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the reports read in full (parsed and checked by ``node.from_json``)."""
    from resolver.fleet import reports as reports_mod

    parsed: list[str] = []
    real = reports_mod.report_from_json

    def counting(*args: Any, **kwargs: Any) -> Any:
        parsed.append(kwargs["name"])
        return real(*args, **kwargs)

    monkeypatch.setattr(reports_mod, "report_from_json", counting)
    return parsed


def _write(where: Path, name: str, data: dict[str, Any]) -> None:
    (where / f"{name}.json").write_text(json.dumps({**data, "hostname": name}, indent=2))


def test_reports_that_differ_beyond_what_is_planned_are_read_in_full_once_per_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40: in a rolling kernel update every report differs (its kernel, its GPUs' ids), and
    reading each one in full cost 20-40 times one check at 10,000 nodes. A report's cost is now
    what decides its plan: the first report of a kind is read in full; a later one with the same
    fingerprint facts is that node with its own name and origin, and what else it says is
    neither read nor kept: a hostile value there reaches nothing."""
    data = _probe(MI300X, driver_version="30.30.3", os="ubuntu-22.04")
    for i, name in enumerate(("gpu001", "gpu002", "gpu003")):
        gpus = [
            {**g, "unique_id": f"{i:02d}{j:014x}", "pci_bdf": f"0000:{i + 1:02x}:{j:02x}.0"}
            for j, g in enumerate(data["gpus"])
        ]
        _write(tmp_path, name, {**data, "gpus": gpus, "kernel": f"6.8.0-{40 + i}-generic"})
    hostile = [{**g, "unique_id": "1\u202e2", "product": "\x1b]0;owned\x07"} for g in data["gpus"]]
    _write(tmp_path, "gpu004", {**data, "gpus": hostile, "kernel": "6.8\ntouch /tmp/x"})
    parsed = _counting_full_reads(monkeypatch)
    got = read_reports([str(tmp_path)])
    assert parsed == ["gpu001"]
    assert [r.name for r in got] == ["gpu001", "gpu002", "gpu003", "gpu004"]
    assert all(r.status == "ok" and r.node is not None for r in got)
    first = got[0].node
    assert first is not None and first.kernel == "6.8.0-40-generic"
    for r in got[1:]:
        assert r.node == msgspec.structs.replace(first, origin=f"file:{r.source}")
    fleet = plan_fleet(matrix.load(), got, Request())
    assert [g.hostlist for g in fleet.groups] == ["gpu[001-004]"]
    files = render_all(matrix.load(), fleet, Options())
    text = (
        render_text(fleet) + json.dumps(fleet_json(fleet, matrix.load())) + "".join(files.values())
    )
    assert "\u202e" not in text and "\x1b" not in text and "touch /tmp/x" not in text


@pytest.mark.parametrize(
    ("path", "value", "apart"),
    [
        (("driver_version",), "6.1.3", True),
        (("driver_version",), "30.30.1", False),  # the same series: another key all the same
        (("os",), "rhel-9.4", True),
        (("python",), "3.10", True),
        (("rocm_version",), "6.2.0", True),
        (("hsa_override_gfx_version",), "9.4.2", True),
        (("logical_gpu_count",), 2, True),
        (("physical_gpu_count",), 2, True),
        (("gpus", 0, "partition"), {"compute": "CPX", "memory": "NPS4"}, True),
        (("gpus", 0, "pci_device_id"), "74b5", False),  # a manifest selects on the ids
        (("gpus", 0, "runtime_gfx"), "gfx90a", False),
        (("host", "amdgpu_module_version"), "6.8.5", False),
        (("host", "kubernetes_resource"), "amd.com/cpx_nps4", True),
        (("visible_devices",), {"HIP_VISIBLE_DEVICES": "0,1"}, False),
        (("tool",), {"name": "rocm-vllm", "version": "0.0.9"}, False),  # its own note
        # A value of the wrong type where the plan reads: read in full, which says why.
        (("driver_version",), 30, None),
        (("gpus",), "eight", None),
        (("gfx_targets",), ["gfx90a"], None),
        (("host",), [], None),
        (("gpus", 0, "integrated"), "yes", False),  # from_json takes any truthy value
        # A `fleet gather` summary's member: read in full (and skipped when it is one).
        (("target",), "gpu", False),
    ],
)
def test_a_report_that_differs_in_what_is_planned_is_read_in_full(
    path: tuple[Any, ...],
    value: object,
    apart: bool | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every fact the fingerprint, the driver fill-in, a manifest's selector, the visible GPUs or
    a note reads is part of a report's key: a report that differs there is read and checked on
    its own, and grouped by what it says (``apart``; None: refused)."""
    from resolver.fleet.plan import fingerprint

    base = _probe(MI300X, driver_version="30.30.3", os="ubuntu-22.04")
    _write(tmp_path, "gpu001", base)
    changed = json.loads(json.dumps(base))
    target: Any = changed
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    _write(tmp_path, "gpu002", changed)
    parsed = _counting_full_reads(monkeypatch)
    first, second = read_reports([str(tmp_path)])
    assert parsed == ["gpu001", "gpu002"]
    assert first.node is not None
    if apart is None:
        assert second.status == "failed"
    else:
        assert second.node is not None
        assert (fingerprint(second.node) != fingerprint(first.node)) == apart


# Every member a probe report can carry, with another value a probe could write.
EVERY_MEMBER: list[tuple[tuple[Any, ...], object]] = [
    (("kernel",), "6.8.0-99-generic"),
    (("glibc",), "2.39"),
    (("problems",), [{"code": "numa-balancing", "message": "on", "hint": "turn it off"}]),
    (("host", "groups"), ["render"]),
    (("host", "wsl"), True),
    (("host", "amdgpu_module_version"), "6.8.5"),
    (("host", "kubernetes_resource"), "amd.com/cpx_nps4"),
    (("host", "nvidia"), {"driver": "580.65.06"}),
    (("gpus", 0, "unique_id"), "0123456789abcdef"),
    (("gpus", 0, "pci_bdf"), "0000:c1:00.0"),
    (("gpus", 0, "product"), "Instinct MI300X VF"),
    (("gpus", 0, "marketing_name"), "AMD Instinct MI300X VF"),
    (("gpus", 0, "compute_units"), 228),
    (("gpus", 0, "vram_bytes"), 1),
    (("gpus", 0, "xnack"), True),
    (("gpus", 0, "sramecc"), False),
    (("gpus", 0, "apu"), True),
    (("gpus", 0, "integrated"), True),
    (("gpus", 0, "runtime_gfx"), "gfx90a"),
    (("gpus", 0, "pci_device_id"), "74b5"),
    (("gpus", 0, "partition"), {"compute": "CPX", "memory": "NPS4"}),
    (("gpus", 0, "gfx"), "gfx90a"),
    (("gfx_targets",), []),
    (("logical_gpu_count",), 1),
    (("physical_gpu_count",), 1),
    (("driver_version",), "30.30.1"),
    (("rocm_version",), "6.2.0"),
    (("os",), "ubuntu-24.04"),
    (("python",), "3.11"),
    (("hsa_override_gfx_version",), "9.4.2"),
    (("visible_devices",), {"ROCR_VISIBLE_DEVICES": "0"}),
    (("tool",), {"name": "rocm-vllm", "version": "0.0.9"}),
]


@pytest.mark.parametrize(("path", "value"), EVERY_MEMBER)
def test_a_node_taken_from_an_earlier_report_is_planned_as_its_own_would_be(
    path: tuple[Any, ...], value: object, tmp_path: Path
) -> None:
    """The guard on the key: whatever member differs, the node a report is read as (taken from
    an earlier report of its kind, or read in full) has the fingerprint, driver, device ids,
    visible GPUs and notes its own full reading gives. A fact the plan starts reading must join
    ``_ReportView``, or this fails."""
    from resolver.fleet.plan import fingerprint
    from resolver.fleet.reports import report_from_json

    base = _probe(MI300X, driver_version="30.30.3", os="ubuntu-22.04")
    _write(tmp_path, "gpu001", base)
    changed = json.loads(json.dumps(base))
    target: Any = changed
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    _write(tmp_path, "gpu002", changed)
    _, got = read_reports([str(tmp_path)])
    own = report_from_json(
        json.loads((tmp_path / "gpu002.json").read_text()), name="gpu002", source=got.source
    )
    assert got.node is not None and own.node is not None, own.reason
    assert fingerprint(got.node) == fingerprint(own.node)
    assert got.node.driver_version == own.node.driver_version
    assert [g.pci_device_id for g in got.node.gpus] == [g.pci_device_id for g in own.node.gpus]
    assert got.node.visible_gpus() == own.node.visible_gpus()
    assert got.notes == own.notes and got.name == own.name


def test_the_first_report_of_a_kind_is_checked_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group is decided on a report read in full: when the first of a kind is refused (a
    hostile kernel), the next one is read in full and stands for the group; when the first names
    a node another file names too (both are refused as duplicates), the next one with a name of
    its own is read in full again."""
    data = _probe(MI300X, driver_version="30.30.3", os="ubuntu-22.04")
    _write(tmp_path, "gpu001", {**data, "kernel": "6.8\u001b[2J"})
    _write(tmp_path, "gpu002", {**data, "kernel": "6.8.0-41-generic"})
    _write(tmp_path, "gpu003", {**data, "kernel": "6.8.0-42-generic"})
    parsed = _counting_full_reads(monkeypatch)
    got = read_reports([str(tmp_path)])
    assert parsed == ["gpu001", "gpu002"]
    assert [r.status for r in got] == ["failed", "ok", "ok"]
    fleet = plan_fleet(matrix.load(), got, Request())
    assert fleet.groups[0].representative.kernel == "6.8.0-41-generic"

    dup = tmp_path / "dup"
    dup.mkdir()
    for name, host, kernel in (
        ("a", "gpu001", "6.8.0-40-generic"),
        ("b", "GPU001", "6.8.0-8"),  # the same node as a's, by another name: both refused
        ("c", "gpu002", "6.8.0-9"),
        ("d", "gpu003", "6.8.0-7"),
    ):
        (dup / f"{name}.json").write_text(json.dumps({**data, "hostname": host, "kernel": kernel}))
    parsed.clear()
    got = read_reports([str(dup)])
    assert parsed == ["gpu001", "gpu002"]  # c is read again, in full: it stands for the group
    fleet = plan_fleet(matrix.load(), got, Request())
    (group,) = fleet.groups
    assert group.names == ["gpu002", "gpu003"] and group.representative.kernel == "6.8.0-9"
    assert len(fleet.failed) == 2


def test_srun_output_is_read_per_task() -> None:
    """srun --label output as the test cluster prints it (task ids, not node names, label lines)."""
    from resolver.fleet.slurm import MARKER, parse_output

    report = json.dumps(_probe(MI300X))
    stdout = "\n".join(
        [
            f"1: {MARKER}n2",
            *(f"1: {line}" for line in report.splitlines()),
            f"0: {MARKER}n1",
            "0: {not json",
            f"2: {MARKER}n3",
        ]
    )
    stderr = (
        "0: Traceback: boom\nsrun: error: n1: task 0: Exited with exit code 1\n"
        "srun: error: n3: task 2: Exited with exit code 124\n"
    )
    reports = {
        r.name: r for r in parse_output(stdout, stderr, ["n1", "n2", "n3", "n4"], timeout=60)
    }
    assert reports["n2"].status == "ok"
    assert reports["n1"].reason == (
        "the probe's output is not valid JSON (line 1, column 2): Traceback: boom"
    )
    assert reports["n3"].reason == "the probe did not answer within 55s; it was stopped"
    assert reports["n4"].reason == "no answer from its task"


def test_hostile_reports_are_listed_without_hanging(tmp_path: Path) -> None:
    """A FIFO among the reports, a report nested 100,000 deep, a huge number: each is a node
    without a usable report (exit 1), never a hang or a traceback."""
    import os

    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "deep.json").write_text("[" * 100_000)
    (tmp_path / "huge.json").write_text('{"gpus": [], "x": ' + "9" * 5000 + "}")
    reports = {r.name: r for r in read_reports([str(tmp_path)])}
    assert "regular file" in (reports["fifo"].reason or "")
    assert "deeper than" in (reports["deep"].reason or "")
    assert reports["huge"].node is None and reports["huge"].reason
    result = run_cli("fleet", "plan", str(tmp_path))
    assert result.exit_code == 1 and "Traceback" not in result.output


def test_hostile_kube_inputs_are_bad_input(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "nodes.json")
    for path in (str(tmp_path / "nodes.json"), "/dev/zero"):
        result = run_cli("fleet", "plan", "--kube", path)
        assert result.exit_code == 2 and "not a regular file" in result.stderr
    deep = tmp_path / "deep.json"
    deep.write_text("{" + '"a":{' * 10_000 + "}" * 10_001)
    result = run_cli("fleet", "plan", "--kube", str(deep))
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_a_node_gathered_through_srun_is_described_by_flags_not_a_file() -> None:
    """issue 24: a follow-up command for an srun-gathered node said `--node srun:ws1`, a file
    that does not exist; the node is described by its facts instead."""
    from resolver.explain.steps import node_flags
    from resolver.fleet.slurm import MARKER, parse_output

    report = {**_probe(MI300X), "driver_version": "30.30.3"}
    lines = json.dumps(report, indent=1).splitlines()
    out = f"0: {MARKER}ws1\n" + "\n".join(f"0: {line}" for line in lines)
    (r,) = parse_output(out, "", ["ws1"])
    assert r.node is not None and r.node.origin == "srun:ws1"
    flags = node_flags(r.node)
    assert "--node" not in flags
    assert flags[:2] == ["--gfx", "gfx942"] and "30.30.3" in flags


def test_a_group_that_runs_the_main_plan_as_it_is_is_said_so_and_counted() -> None:
    """Issue 23: a gfx942 group on a new driver was told "cannot: v0.16.0 is not a candidate for
    gfx942" (its own request never reached that release), though `check --vllm ==0.16.0` on the
    same node says supported, and the main plan's count left it out. The group is now solved
    pinned to the main plan."""
    from resolver.data.node import from_flags

    def node(driver: str, gfx: str = "gfx942") -> Node:
        return from_flags(gfx=gfx, gpus=8, driver=driver, os=None, rocm=None, python=None)

    reports = [NodeReport(name=f"old{i}", source="t", node=node("6.2.4")) for i in range(3)]
    reports.append(NodeReport(name="new1", source="t", node=node("30.30.3")))
    reports.append(NodeReport(name="mi50", source="t", node=node("30.30.3", "gfx906")))
    fleet = plan_fleet(matrix.load(), reports, Request())
    assert fleet.main_plan == "vllm/vllm-openai-rocm:v0.16.0"
    joins = {g.hostlist: g.join for g in fleet.groups}
    assert joins["old[0-2]"] is not None and joins["old[0-2]"].status == "on-plan"
    assert joins["new1"] is not None and joins["new1"].status == "as-is"
    assert fleet.main_nodes == 4  # the group that runs it as it is counts
    mi50 = joins["mi50"]
    assert mi50 is not None and mi50.status == "blocked"
    assert not any("is not a candidate" in r for r in mi50.reasons), mi50.reasons
    assert "main plan: vllm/vllm-openai-rocm:v0.16.0  (4 of 5 nodes run it as they are)" in (
        render_text(fleet)
    )


def test_a_group_that_needs_host_changes_gets_them_as_ordered_steps() -> None:
    """Issue 22: the fleet's route of a group to the main plan is the upgrade planner's: the
    changes as steps, the OS release first where the driver needs it, verified."""
    from resolver.data.node import from_flags
    from tests.conftest import LIVE_MATRIX

    def node(driver: str, os_id: str) -> Node:
        return from_flags(gfx="gfx942", gpus=8, driver=driver, os=os_id, rocm=None, python=None)

    reports = [
        NodeReport(name=f"a{i}", source="t", node=node("6.4.3", "ubuntu-22.04")) for i in range(3)
    ]
    reports.append(NodeReport(name="old1", source="t", node=node("6.1.3", "ubuntu-20.04")))
    fleet = plan_fleet(matrix.load_dir(LIVE_MATRIX), reports, Request())
    old = next(g for g in fleet.groups if g.hostlist == "old1")
    assert old.join is not None and old.join.status == "host-fix", old.join
    assert old.join.steps == (("os", "ubuntu-20.04", "ubuntu-22.04"), ("driver", "6.1.3", "6.4"))
    assert old.join.to_json()["steps"][0] == {
        "change": "os",
        "from": "ubuntu-20.04",
        "to": "ubuntu-22.04",
    }


# --- mixed fleets (issue 26) -------------------------------------------------------------------

NVIDIA = Path(__file__).parent / "probe" / "fixtures" / "nvidia" / "probe-live-h200.json"


@pytest.fixture
def mixed_dir(tmp_path: Path) -> Path:
    """Four MI300X nodes (as above), two H200 nodes on driver 580 (the live report) and one on
    570: reports as `rocm-vllm probe --json` writes them."""
    d = tmp_path / "mixed"
    d.mkdir()
    mi300x = _probe(MI300X)
    for i in range(1, 5):
        (d / f"gpu{i:03d}.json").write_text(json.dumps(mi300x))
    live = json.loads(NVIDIA.read_text())
    for i, driver in ((1, None), (2, None), (3, "570.195.03")):
        report = json.loads(json.dumps(live))
        report["hostname"] = f"h200-{i:02d}"
        if driver:
            report["host"]["nvidia"]["driver"] = driver
            report["host"]["nvidia"]["cuda"] = None
            for gpu in report["host"]["other_devices"]:
                gpu["driver"] = driver
        (d / f"h200-{i:02d}.json").write_text(json.dumps(report))
    return d


def test_a_mixed_fleet_has_groups_and_a_main_plan_per_vendor(mixed_dir: Path) -> None:
    m = matrix.load()
    fleet = plan_fleet(m, read_reports([str(mixed_dir)]), Request())
    by_nodes = {g.hostlist: g for g in fleet.groups}
    assert set(by_nodes) == {"gpu[001-004]", "h200-[01-02]", "h200-03"}
    assert {g.fingerprint.vendor for g in fleet.groups} == {"amd", "nvidia"}
    assert by_nodes["h200-03"].fingerprint.driver == "570"  # its own group: another plan
    plans = fleet.main_plans
    assert plans["amd"][0].startswith("vllm/vllm-openai-rocm:") and plans["amd"][1] == 4
    assert plans["nvidia"] == ("vllm/vllm-openai:v0.33.0", 2)
    # Each group joins its own vendor's plan, never another vendor's image: the 570 node by the
    # driver step the what-if search found (CUDA 13 needs branch 580).
    old = by_nodes["h200-03"].join
    assert old is not None and old.status == "host-fix"
    assert old.steps == (("nvidia_driver", "570.195.03", "580"),)
    assert "main plan for NVIDIA GPUs" in render_text(fleet)
    data = json.loads(json.dumps(fleet_json(fleet, m)))
    assert data["main_plans"]["nvidia"]["node_count"] == 2
    import jsonschema

    schema = json.loads((Path(__file__).parent.parent / "docs" / "fleet.schema.json").read_text())
    jsonschema.validate(data, schema)


def test_nvidia_groups_get_nvidia_artifacts(mixed_dir: Path) -> None:
    import kubernetes_validate

    from .test_fleet_kube import K8S_VERSIONS

    m = matrix.load()
    fleet = plan_fleet(m, read_reports([str(mixed_dir)]), Request())
    files = render_all(m, fleet, Options(model="Qwen/Qwen3-8B"))
    h200 = next(g for g in fleet.groups if g.hostlist == "h200-[01-02]")
    script = files[f"slurm/{h200.id}.sbatch"]
    assert "--gpus all" in script and "/dev/kfd" not in script and "CUDA" in script
    docs = [d for d in yaml.safe_load_all(files[f"kubernetes/{h200.id}.yaml"]) if d]
    for doc in docs:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)
    pod = docs[0]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H200"}
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    floor = terms["nodeSelectorTerms"][0]["matchExpressions"][1]
    # The plan is CUDA 13: drivers of branch 580 and newer, so a driver upgrade keeps it placed.
    assert floor == {"key": "nvidia.com/cuda.driver.major", "operator": "Gt", "values": ["579"]}
    container = pod["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert "securityContext" not in container
    amd = next(g for g in fleet.groups if g.hostlist == "gpu[001-004]")
    assert "amd.com/gpu" in files[f"kubernetes/{amd.id}.yaml"]


def test_a_hostile_nvidia_product_name_reaches_no_artifact(mixed_dir: Path) -> None:
    """A report's GPU name is a fact from the node: escaped in comments, reduced to a valid label
    value in selectors, never a live line of a script."""
    path = mixed_dir / "h200-01.json"
    report = json.loads(path.read_text())
    for gpu in report["host"]["other_devices"]:
        gpu["name"] = "-H200\n$(reboot)`id`;rm -rf /-"
    path.write_text(json.dumps(report))
    m = matrix.load()
    fleet = plan_fleet(m, read_reports([str(mixed_dir)]), Request())
    files = render_all(m, fleet, Options())
    group = next(g for g in fleet.groups if g.hostlist == "h200-01")
    script = files[f"slurm/{group.id}.sbatch"]
    # Every line of the script is a comment, a directive or the tool's own code: the name's line
    # break is escaped inside its comment.
    assert all(not line.startswith("$(reboot)") for line in script.splitlines())
    assert all(line.startswith("#") for line in script.splitlines() if "reboot" in line)
    text = files[f"kubernetes/{group.id}.yaml"]
    assert all(line.startswith("#") for line in text.split("---")[0].splitlines() if line)
    docs = [d for d in yaml.safe_load_all(text) if d]
    assert [d["kind"] for d in docs] == ["Deployment", "Service"]
    value = docs[0]["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"]
    import re

    assert re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", value) and len(value) <= 63


@pytest.mark.parametrize("spelled", ["{d}", "{d}/", "{d}//", "./{rel}"])
def test_report_files_are_named_as_their_paths_are(
    spelled: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory's reports are named (in sources, `fleet.json`) as ``Path(dir) / name``
    spells them, however the directory was typed; every ``*.json`` entry, by name."""
    from resolver.fleet.reports import _files

    d = tmp_path / "reports"
    d.mkdir()
    for name in ("b.json", "a.json", ".hidden.json", "notes.txt"):
        (d / name).write_text("{}")
    monkeypatch.chdir(tmp_path)
    text = spelled.format(d=d, rel="reports")
    assert _files([text]) == [str(p) for p in sorted(Path(text).glob("*.json"))]


# --- what an API server refuses that the schemas let through (issue 40) -------------------------


@functools.cache
def _fleet_manifests() -> dict[str, list[dict[str, Any]]]:
    """Every manifest file the fleet writes for the fleets the tests know: MI300X and MI50
    report files, a CPX node (one pod per partition), and the recorded Kubernetes clusters (AMD
    and NVIDIA labels), with and without a namespace and a model."""
    from resolver.data.node import from_json
    from resolver.fleet.kube import read_nodes
    from tests.test_fleet_kube import FILES, NVIDIA_FILES

    m = matrix.load()
    reports = [
        NodeReport(name=name, source="t", node=from_json(_probe(path), where=name))
        for name, path in (("gpu001", MI300X), ("gpu002", MI300X), ("gpu007", MI50))
    ]
    reports.append(NodeReport(name="cpx1", source="t", node=cpx_node()))
    fleets = [plan_fleet(m, reports, Request())]
    for path in [*FILES, *NVIDIA_FILES]:
        nodes = read_nodes(path.read_text(), where=path.name, matrix=m)
        fleets.append(plan_fleet(m, nodes, Request()))
    out: dict[str, list[dict[str, Any]]] = {}
    for i, fleet in enumerate(fleets):
        for opts in (
            Options(),
            Options(model="Qwen/Qwen3-8B", namespace="llm-serving", port=9000, shm_size="32Gi"),
        ):
            for name, text in render_all(m, fleet, opts).items():
                if name.startswith("kubernetes/"):
                    out[f"{i}:{opts.namespace}:{name}"] = [d for d in yaml.safe_load_all(text) if d]
    return out


def test_manifests_pass_what_an_api_server_checks() -> None:
    """Names, labels, annotations, quantities, ports and the references between fields, as a
    Kubernetes API server validates them (tests/kube_semantics.py): no schema checks these."""
    from tests.kube_semantics import problems

    manifests = _fleet_manifests()
    assert len(manifests) >= 6
    served = 0
    for name, docs in manifests.items():
        assert problems(docs) == [], name
        assert sorted(d["kind"] for d in docs) == ["Deployment", "Service"], name
        deployment = next(d for d in docs if d["kind"] == "Deployment")
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        args = container["args"]
        # vllm serve's model is positional (v0.6.0-v0.11.0 refuse --model)
        assert "--model" not in args
        if "Qwen/Qwen3-8B" in args:
            serve = args[1:] if container.get("command") == ["vllm"] else args
            assert serve[0] == "Qwen/Qwen3-8B", name
            served += 1
    assert served


def _break(docs: list[dict[str, Any]], where: str, bad: Any) -> None:
    """Break one field of a Deployment + Service pair, as named by ``where``."""
    dep = next(d for d in docs if d["kind"] == "Deployment")
    svc = next(d for d in docs if d["kind"] == "Service")
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    (resource,) = c["resources"]["limits"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    edits: dict[str, tuple[dict[str, Any], str]] = {
        "service-name": (svc["metadata"], "name"),
        "deployment-name": (dep["metadata"], "name"),
        "namespace": (dep["metadata"], "namespace"),
        "label-value": (dep["metadata"]["labels"], "app.kubernetes.io/name"),
        "gpu-limit": (c["resources"]["limits"], resource),
        "container-port": (c["ports"][0], "containerPort"),
        "service-port": (svc["spec"]["ports"][0], "port"),
        "port-name": (c["ports"][0], "name"),
        "target-port": (svc["spec"]["ports"][0], "targetPort"),
        "probe-port": (c["readinessProbe"]["httpGet"], "port"),
        "selector": (dep["spec"]["selector"], "matchLabels"),
        "strategy": (dep["spec"]["strategy"], "rollingUpdate"),
        "env-name": (c["env"][0], "name"),
        "mount": (c["volumeMounts"][0], "name"),
        "shm": (next(v for v in pod["volumes"] if "emptyDir" in v)["emptyDir"], "sizeLimit"),
        "node-affinity": (terms["nodeSelectorTerms"][0]["matchExpressions"][0], "values"),
        "label-key": (pod, "nodeSelector"),
        "annotation-key": (dep["metadata"], "annotations"),
        "gpu-request": (c["resources"]["requests"], resource),
    }
    target, key = edits[where]
    if where == "label-key":
        bad = {bad: "1"}
    elif where == "annotation-key":
        bad = {**target[key], bad: "x"}
    elif where == "gpu-request":
        bad = c["resources"]["limits"][resource] + 1
    target[key] = bad


@pytest.mark.parametrize(
    ("where", "bad"),
    [
        ("service-name", "x" * 64),  # a Service name is a DNS-1035 label, 63 at most
        ("service-name", "1vllm"),  # ... starting with a letter
        ("deployment-name", "vLLM-g1"),
        ("namespace", "LLM"),
        ("label-value", "a" * 64),
        ("label-value", "mi300x node"),
        ("label-key", "amd.com/gpu/x/y"),
        ("annotation-key", "-bad/key"),
        ("gpu-limit", "4 GPUs"),
        ("gpu-limit", "1.5"),
        ("gpu-request", None),  # limit + 1: an extended resource is never overcommitted
        ("container-port", 70000),
        ("service-port", 0),
        ("port-name", "http-server-port"),  # 16 characters; an IANA service name has 15
        ("target-port", "grpc"),
        ("probe-port", "metrics"),
        ("selector", {"app.kubernetes.io/instance": "other"}),
        ("strategy", {"maxSurge": 0, "maxUnavailable": 0}),
        ("env-name", "HF TOKEN"),
        ("mount", "nowhere"),
        ("shm", "lots"),
        ("node-affinity", []),
    ],
)
def test_api_server_checks_catch_broken_copies(where: str, bad: Any) -> None:
    """Each rule of tests/kube_semantics.py, on a copy of a generated manifest broken in one
    place: the check must say so."""
    import copy

    from tests.kube_semantics import problems

    # a deep copy: the planned manifests are cached for every case
    good = next(
        d for d in _fleet_manifests().values() if any("namespace" in x["metadata"] for x in d)
    )
    assert problems(good) == []
    docs = copy.deepcopy(good)
    _break(docs, where, bad)
    assert problems(docs), (where, bad)


def test_scripts_without_model_say_when_the_release_requires_one(reports_dir: Path) -> None:
    """Issue 40: up to v0.8.2 `vllm serve` requires its positional model (serve_model_tag); a
    script or manifest written without --model for such a release says so, with the fix."""
    m = matrix.load()
    fleet = plan_fleet(m, read_reports([str(reports_dir)]), Request())
    g1 = fleet.groups[0]
    assert g1.image is not None and g1.image.plan is not None
    version = g1.image.plan.candidate.image.vllm
    required = msgspec.structs.replace(
        m,
        vllm=tuple(
            msgspec.structs.replace(r, serve_model_tag="required") if r.version == version else r
            for r in m.vllm
        ),
    )
    for data, model, noted in (
        (required, None, True),
        (required, "org/m", False),
        (m, None, False),
    ):
        files = render_all(data, fleet, Options(model=model))
        for path in ("slurm/g1.sbatch", "kubernetes/g1.yaml"):
            assert ("requires the model" in files[path]) is noted, (path, model)


def test_a_plan_of_no_group_says_why_not_an_empty_table() -> None:
    """Issue 40: with no usable report the plan printed the table's header over nothing."""
    m = matrix.load()
    failed = [NodeReport(name="n1", source="srun:n1", reason="Slurm state down: not asked")]
    for fleet in (plan_fleet(m, failed, Request()), plan_fleet(m, [], Request())):
        text = render_text(fleet)
        assert not fleet.groups and "nothing to plan: no node" in text
        assert not any(line.startswith("group ") for line in text.splitlines())
