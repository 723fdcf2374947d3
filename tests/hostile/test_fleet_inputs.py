"""Channels: fleet probe reports, Kubernetes node lists, Slurm's sinfo/srun output and `-o` paths
(issue 24). Every value a report, node list or scheduler carries is hostile here. Each run keeps
the promises of docs/exit-codes.md, and:

- no generated batch script runs a command the tool did not write: every script is run with a
  stand-in ``srun`` and container engine, and a payload that would create a canary file never
  does;
- every manifest parses to exactly the Deployment and Service the tool meant;
- nothing is written outside ``-o``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .conftest import HOSTILE, assert_clean, cli

ROOT = Path(__file__).resolve().parents[1]
MI300X = ROOT / "probe" / "fixtures" / "rocminfo-gfx942-mi300x-4gpu-thamada.txt"
KUBE = ROOT / "fleet_kube" / "nodes-mi300x-gpuop266.json"
DOCUMENTED = frozenset({0, 1, 2, 4, 6})

# What an attacker writes into a fact: each would run ``touch CANARY`` or add an object if it
# reached a script or manifest unescaped. {canary} is filled in per run.
PAYLOADS = [
    "x\ntouch {canary}",
    "x\rtouch {canary}",
    "x\u2028touch {canary}",
    "x\u0085---\napiVersion: v1\nkind: Pod",
    "$(touch {canary})",
    "`touch {canary}`",
    "'; touch {canary}; '",
    '"; touch {canary}; "',
    "\x1b]0;owned\x07",
    "../../escaped",
    "/tmp/absolute",
    "n1\n#SBATCH --uid=0",
    "\ud800",
    "a" * 5000,
    "ubuntu-22.04\n",
]
REPORT_FIELDS = [
    ("hostname",),
    ("os",),
    ("rocm_version",),
    ("python",),
    ("kernel",),
    ("glibc",),
    ("driver_version",),
    ("hsa_override_gfx_version",),
    ("host", "amdgpu_module_version"),
    ("gpus", 0, "product"),
    ("gpus", 0, "marketing_name"),
    ("gpus", 0, "runtime_gfx"),
    ("gpus", 0, "unique_id"),
    ("gpus", 0, "partition"),
    ("problems",),
]


def _base_report() -> dict[str, Any]:
    from resolver.probe import probe_files
    from tests.probe_data import probe_matrix

    data: dict[str, Any] = json.loads(
        json.dumps(probe_files(rocminfo=MI300X, matrix=probe_matrix()).to_json())
    )
    data["driver_version"] = "30.30.3"
    data["os"] = "ubuntu-22.04"
    return data


BASE = _base_report()


def _set(data: dict[str, Any], path: tuple[Any, ...], value: str) -> None:
    target: Any = data
    for part in path[:-1]:
        target = target[part]
    last = path[-1]
    if last == "partition":
        target[last] = {"compute": value, "memory": "NPS1"}
    elif last == "problems":
        target[last] = [{"code": value, "message": value, "hint": value}]
    else:
        target[last] = value


def _stand_ins(tmp: Path) -> dict[str, str]:
    """A PATH whose srun runs its command (options dropped) and a container engine that records
    its arguments: the batch scripts run as written, without Slurm or Docker."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    srun = bin_dir / "srun"
    srun.write_text(
        '#!/bin/sh\nwhile [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done\n'
        'exec "$@"\n'
    )
    engine = bin_dir / "engine"
    engine.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {tmp / "engine.log"}\n')
    for f in (srun, engine):
        f.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "CONTAINER": str(engine)}


# The lines a batch script is made of: comments and #SBATCH, then what the tool writes itself.
SCRIPT_LINES = (
    "#",
    "set -euo",
    "CONTAINER=",
    'SIF="${SIF:-',
    '[ -f "$SIF" ] || "$CONTAINER" pull "$SIF" ',
    "export ",
    "serve() {",
    "  mkdir -p ",
    '  "$CONTAINER" ',
    "  local n port",
    "  for ((n = 0; n < ",
    "    port=$((",
    '    "$CONTAINER" ',
    "  done",
    "  wait",
    # each node's server its own job step, waited for; the nodes whose server stopped are named
    "run_on() {",
    "  local rc=0",
    '  srun --nodes=1 --ntasks=1 --kill-on-bad-exit=0 ${1:+"--nodelist=$1"} bash -c ',
    "  if ((rc != 0)); then",
    '    echo "rocm-vllm: the server on ${1:-this node} stopped',
    "  fi",
    '  return "$rc"',
    "declare -A on=()",
    "for node in ",
    '  run_on "$node" &',
    '  on[$!]="$node"',
    "done",
    "failed=()",
    'for pid in "${!on[@]}"; do',
    '  wait "$pid" || failed+=(',
    "if ((${#failed[@]})); then",
    '  echo "rocm-vllm: servers that stopped with an error: ${failed[*]}" >&2',
    "  exit 1",
    "fi",
)


def _check_artifacts(out: Path, tmp: Path, canary: Path) -> None:
    """Run every batch script; parse every manifest; nothing outside ``out`` and ``tmp``."""
    env = {**os.environ, **_stand_ins(tmp)}
    for script in sorted((out / "slurm").glob("*.sbatch")):
        syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, check=False)
        assert syntax.returncode == 0, script.read_text()
        subprocess.run(
            ["bash", str(script)], env=env, cwd=tmp, capture_output=True, timeout=30, check=False
        )
        assert not canary.exists(), script.read_text()
        lines = script.read_text().splitlines()
        # Every line is a comment, an #SBATCH line, or one the tool writes itself.
        assert all(line.startswith(SCRIPT_LINES) or line == "}" for line in lines), lines
    for manifest in sorted((out / "kubernetes").glob("*.yaml")):
        docs = list(yaml.safe_load_all(manifest.read_text()))
        assert [d["kind"] for d in docs] == ["Deployment", "Service"], manifest.read_text()
        group = manifest.stem
        assert {d["metadata"]["name"] for d in docs} == {f"vllm-{group}"}
        first = manifest.read_text().splitlines()[0]
        assert first.startswith("# rocm-vllm fleet plan")
        assert first.isascii() and first.isprintable()


def _outside(tmp: Path, allowed: set[str]) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name not in allowed)


@settings(HOSTILE, max_examples=40)
@given(
    field=st.sampled_from(REPORT_FIELDS),
    payload=st.one_of(st.sampled_from(PAYLOADS), st.text(max_size=40)),
)
@example(field=("hostname",), payload="n1\ntouch {canary}")
@example(field=("os",), payload="ubuntu-22.04\ntouch {canary}")
@example(field=("host", "amdgpu_module_version"), payload="6.8.5\u2028---\nkind: Pod")
def test_report_files(
    field: tuple[Any, ...], payload: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("fleet")
    canary = tmp / "CANARY"
    reports = tmp / "reports"
    reports.mkdir()
    good = {**json.loads(json.dumps(BASE)), "hostname": "gpu001"}
    (reports / "gpu001.json").write_text(json.dumps(good))
    bad = {**json.loads(json.dumps(BASE)), "hostname": "gpu002"}
    _set(bad, field, payload.replace("{canary}", str(canary)))
    (reports / "gpu002.json").write_text(json.dumps(bad))
    out = tmp / "out"
    o = cli(["fleet", "plan", str(reports), "-o", str(out), "--json"])
    assert_clean(o, DOCUMENTED)
    assert _outside(tmp, {"reports", "out"}) == []
    if o.code in (0, 1):
        _check_artifacts(out, tmp, canary)
        # The good node is always planned; the bad one is planned only with clean facts.
        data = json.loads(o.out)
        assert data["nodes"]["planned"] >= 1
        assert all(f["name"] != "gpu001" for f in data["failed"])
    assert not canary.exists()


@settings(HOSTILE, max_examples=25)
@given(
    where=st.sampled_from(["name", "driver-version", "product-name", "cu-count", "capacity"]),
    payload=st.one_of(
        st.sampled_from([*PAYLOADS, "²", "9" * 5000, "99999999999999999999", "-1"]),
        st.text(max_size=30),
    ),
)
@example(where="name", payload="node-a\ntouch {canary}")
@example(where="capacity", payload="99999999999999999999")
def test_kubernetes_node_lists(
    where: str, payload: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("kube")
    canary = tmp / "CANARY"
    nodes = json.loads(KUBE.read_text())
    item = nodes["items"][0]
    value = payload.replace("{canary}", str(canary))
    if where == "name":
        item["metadata"]["name"] = value
    elif where == "capacity":
        item["status"]["capacity"]["amd.com/gpu"] = value
    else:
        item["metadata"]["labels"][f"amd.com/gpu.{where}"] = value
    listing = tmp / "nodes.json"
    listing.write_text(json.dumps(nodes))
    out = tmp / "out"
    o = cli(["fleet", "plan", "--kube", str(listing), "-o", str(out), "--json"])
    assert_clean(o, DOCUMENTED)
    assert _outside(tmp, {"nodes.json", "out"}) == []
    if o.code in (0, 1, 6):
        _check_artifacts(out, tmp, canary)
    assert not canary.exists()


def _slurm_stand_ins(tmp: Path, sinfo: str, srun: str) -> dict[str, str]:
    """sinfo and srun that print what a test says (a site wrapper or a compromised node)."""
    bin_dir = tmp / "slurm-bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("sinfo", sinfo), ("srun", srun)):
        path = bin_dir / name
        path.write_bytes(b"#!/bin/sh\ncat <<'EOF'\n" + text.encode("utf-8", "surrogateescape"))
        path.write_bytes(path.read_bytes() + b"\nEOF\n")
        path.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


MARKER = "@rocm-vllm-node "


@settings(HOSTILE, max_examples=20)
@given(
    node=st.one_of(
        st.sampled_from(["../../escaped", "/tmp/abs", "n1\nn9", "_gather", ".hidden", "n" * 300]),
        st.text(min_size=1, max_size=20).filter(lambda t: "\n" not in t and "EOF" not in t),
    ),
    payload=st.sampled_from(PAYLOADS[:9]),
)
@example(node="../../escaped", payload="x")
def test_sinfo_and_srun_output(
    node: str, payload: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("gather")
    canary = tmp / "CANARY"
    report = json.dumps({**BASE, "os": payload.replace("{canary}", str(canary))})
    sinfo = f"n1|gpu*|idle\n{node}|gpu*|idle"
    srun = f"0: {MARKER}n1\n0: {json.dumps(BASE)}\n1: {MARKER}{node}\n1: {report}"
    env = _slurm_stand_ins(tmp, sinfo, srun)
    out = tmp / "reports"
    o = cli(["fleet", "gather", "--slurm", "gpu", "-o", str(out), "--json"], env=env)
    assert_clean(o, DOCUMENTED)
    assert _outside(tmp, {"slurm-bin", "reports"}) == []
    if out.exists():
        for written in out.iterdir():
            assert written.parent == out and not written.name.startswith(".")
            assert written.name in {"_gather.json", "n1.json"} or written.name.endswith(".json")
        # n1 answered for itself; a task claiming n1 too makes neither answer trusted.
        assert (out / "n1.json").exists() or node.split("\n")[0] == "n1"
    assert not canary.exists()


def test_srun_that_fails_as_a_whole_is_exit_4(tmp_path: Path) -> None:
    env = _slurm_stand_ins(tmp_path, "n1|gpu*|idle\nn2|gpu*|idle", "")
    srun = tmp_path / "slurm-bin" / "srun"
    srun.write_text(
        "#!/bin/sh\necho 'srun: error: Unable to allocate resources: Requested node "
        "configuration is not available' >&2\nexit 1\n"
    )
    o = cli(["fleet", "plan", "--slurm", "gpu"], env=env)
    assert_clean(o)
    assert o.code == 4
    assert "srun failed before any node answered (exit 1)" in o.err  # named once, with its exit
    assert "Unable to allocate resources" in o.err


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e308"])
def test_timeout_that_is_not_a_number_of_seconds(value: str, tmp_path: Path) -> None:
    env = _slurm_stand_ins(tmp_path, "n1|gpu*|idle", "")
    o = cli(["fleet", "gather", "--slurm", "gpu", "-o", str(tmp_path / "o"), "--timeout", value])
    assert_clean(o)
    assert o.code == 2 and "--timeout" in o.err
    o = cli(["fleet", "plan", "--slurm", "gpu", f"--timeout={value}"], env=env)
    assert o.code == 2


@pytest.mark.parametrize("target", [",", " , ", "[]"])
def test_slurm_target_that_names_no_node(target: str, tmp_path: Path) -> None:
    env = _slurm_stand_ins(tmp_path, "n1|gpu*|idle", "")
    o = cli(["fleet", "plan", "--slurm", target], env=env)
    assert_clean(o)
    assert o.code == 2


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--constraint", "mi300x\n"),
        ("--partition", "gpu\n"),
        ("--time", "04:00:00\n"),
        ("--shm-size", "16Gi\n"),
        ("--namespace", "vllm\n"),
        ("--port", "٨٠"),
        ("--port", "８０"),
        ("--gpus", "²"),
    ],
)
def test_flags_with_a_trailing_newline_or_other_digits(
    flag: str, value: str, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "gpu001.json").write_text(json.dumps({**BASE, "hostname": "gpu001"}))
    o = cli(["fleet", "plan", str(reports), flag, value, "-o", str(tmp_path / "out")])
    assert_clean(o)
    assert o.code == 2, str(o)
    assert not (tmp_path / "out").exists()


def test_duplicates_that_differ_in_case_or_domain(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    for i, name in enumerate(["gpu001", "GPU001", "gpu001.cluster.local"]):
        (reports / f"r{i}.json").write_text(json.dumps({**BASE, "hostname": name}))
    o = cli(["fleet", "plan", str(reports), "--json"])
    assert o.code == 1
    data = json.loads(o.out)
    assert data["groups"] == [] and len(data["failed"]) == 3
    assert all("duplicate node name" in f["reason"] for f in data["failed"])


# --- -o DIR -------------------------------------------------------------------------------------


def _one_report(tmp: Path) -> Path:
    reports = tmp / "reports"
    reports.mkdir()
    (reports / "gpu001.json").write_text(json.dumps({**BASE, "hostname": "gpu001"}))
    return reports


@pytest.mark.parametrize("kind", ["long-name", "read-only-parent", "parent-is-a-file"])
def test_output_directory_that_cannot_be_made(kind: str, tmp_path: Path) -> None:
    reports = _one_report(tmp_path)
    if kind == "long-name":
        out = tmp_path / ("o" * 250)
    elif kind == "read-only-parent":
        if os.geteuid() == 0:
            # root writes anywhere: a read-only bind is not available; a full name is the
            # same failure path (mkdtemp's OSError).
            out = tmp_path / ("p" * 255)
        else:
            parent = tmp_path / "ro"
            parent.mkdir(mode=0o555)
            out = parent / "out"
    else:
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "out"
    o = cli(["fleet", "plan", str(reports), "-o", str(out)])
    assert_clean(o)
    assert o.code in (0, 1, 2), str(o)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_concurrent_writers_exactly_one_wins(tmp_path: Path) -> None:
    """Six `fleet plan -o DIR` at once without --force: one plan is written, five say the
    directory is not empty, none replaces another's plan, no temporary directory is left."""
    reports = _one_report(tmp_path)
    out = tmp_path / "out"
    env = {**os.environ}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "resolver", "fleet", "plan", str(reports), "-o", str(out)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    results = []
    for p in procs:
        out_text, err_text = p.communicate(timeout=60)
        results.append((p.returncode, out_text, err_text))
    wrote = [r for r in results if "wrote" in r[1]]
    refused = [r for r in results if r[0] == 2 and "the directory is not empty" in r[2]]
    assert len(wrote) == 1 and len(refused) == 5, results
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "reports"]


def test_what_a_killed_writer_left_is_swept(tmp_path: Path) -> None:
    """kill -9 between mkdtemp and rename leaves .out.tmp-PID-XXXX; the next write removes it
    (its writer is gone), and a replaced directory left by --force too."""
    reports = _one_report(tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    for kind in ("tmp", "old"):
        left = tmp_path / f".out.{kind}-{dead.pid}-abcd1234"
        left.mkdir()
        (left / "fleet.json").write_text("{}")
    o = cli(["fleet", "plan", str(reports), "-o", str(tmp_path / "out")])
    assert o.code in (0, 1), str(o)
    o = cli(["fleet", "plan", str(reports), "-o", str(tmp_path / "out"), "--force"])
    assert o.code in (0, 1), str(o)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "reports"]


# --- Docker config and credential helpers -------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "deep", "not-utf8", "huge"])
def test_docker_config_that_is_not_a_config(kind: str, tmp_path: Path) -> None:
    from resolver.artifacts import credentials
    from resolver.util.errors import InputError

    config = tmp_path / "config.json"
    if kind == "fifo":
        os.mkfifo(config)
    elif kind == "deep":
        config.write_text("[" * 100_000)
    elif kind == "not-utf8":
        config.write_bytes(b"\xff\xfe{")
    else:
        config.write_bytes(b" " * (credentials.MAX_CONFIG + 1))
    with pytest.raises(InputError):
        credentials.lookup("127.0.0.1:5000", env={"DOCKER_CONFIG": str(tmp_path)})


@pytest.mark.parametrize("answer", ["deep", "huge", "not-utf8", "hangs"])
def test_credential_helper_answers(
    answer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from resolver.artifacts import credentials
    from resolver.util.errors import RegistryError

    body = {
        "deep": "printf '%s' \"$(head -c 200000 /dev/zero | tr '\\0' '[')\"",
        "huge": "head -c 5000000 /dev/zero",
        "not-utf8": "printf '\\377\\376'",
        "hangs": "sleep 30",
    }[answer]
    helper = tmp_path / "docker-credential-odd"
    helper.write_text(f"#!/bin/sh\n{body}\n")
    helper.chmod(0o755)
    (tmp_path / "config.json").write_text(json.dumps({"credsStore": "odd"}))
    monkeypatch.setattr(credentials, "HELPER_TIMEOUT", 1.0)
    import time

    start = time.monotonic()
    env = {"DOCKER_CONFIG": str(tmp_path), "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    with pytest.raises(RegistryError):
        credentials.lookup("127.0.0.1:5000", env=env)
    assert time.monotonic() - start < 15


# --- bounded waits and one URL shape ------------------------------------------------------------


def test_a_tool_whose_child_holds_the_pipe_ends_at_its_deadline() -> None:
    """issue 24: srun's fan-out outlived --timeout when a site wrapper's child (in a session of
    its own) kept the pipe open; capture.run stops waiting at the deadline plus a short grace."""
    import time

    from resolver.util import capture

    start = time.monotonic()
    run = capture.run(["sh", "-c", "setsid sleep 60 & echo started; sleep 60"], timeout=1)
    assert run.timed_out and run.returncode is None and "started" in run.stdout
    assert time.monotonic() - start < 8


def test_tool_output_is_capped_not_read_whole() -> None:
    from resolver.util import capture

    run = capture.run(["sh", "-c", "head -c 3000000 /dev/zero"], timeout=30, limit=1024)
    assert run.truncated and len(run.stdout) == 1024


@pytest.mark.parametrize("url", ["tcp://[::1", "tcp://h:port", "http://a b", "::::"])
def test_a_malformed_docker_host_is_an_engine_error(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from resolver.artifacts.engine import DockerEngine
    from resolver.util.errors import DockerEngineError

    monkeypatch.setenv("DOCKER_HOST", url)
    with pytest.raises(DockerEngineError):
        DockerEngine()


def test_one_registry_prefix_one_url_shape() -> None:
    """issue 24: ROCM_VLLM_REGISTRY=https://harbor.example/dockerhub meant /dockerhub/v2/<repo>
    to `matrix refresh --source images` and /v2/dockerhub/<repo> to `image --digest`."""
    from resolver.artifacts.registry import parse_registry
    from resolver.refresh.common import Endpoints
    from resolver.refresh.http import HttpClient
    from resolver.refresh.images import ImagesSource

    base = "https://harbor.example/dockerhub"
    source = ImagesSource(HttpClient(), Endpoints(registry=base), {})
    seen: list[str] = []

    def fake_get(repo: str, url: str, **_kw: object) -> Any:
        seen.append(url)
        raise RuntimeError("stop")

    source._get = fake_get  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        source.digest("vllm/vllm-openai-rocm", "v0.33.0")
    reg = parse_registry(base)
    expected = f"{reg.url}/v2/{reg.repository('vllm/vllm-openai-rocm')}/manifests/v0.33.0"
    assert (
        seen
        == [expected]
        == ["https://harbor.example/v2/dockerhub/vllm/vllm-openai-rocm/manifests/v0.33.0"]
    )


def test_a_nodes_stderr_is_escaped_in_its_reason() -> None:
    from resolver.fleet.slurm import MARKER, parse_output

    out = f"0: {MARKER}n1\n"
    err = "0: \x1b]0;owned\x07 probe crashed\u202e\n"
    (r,) = parse_output(out, err, ["n1"])
    assert r.reason is not None and "probe crashed" in r.reason
    assert r.reason.isascii() and "\x1b" not in r.reason and "\u202e" not in r.reason
