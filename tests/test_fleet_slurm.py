"""Fleets through a real Slurm cluster: eight slurmd on this machine (tests/services.py), each
node's probe reading a different recorded rocminfo or KFD sysfs tree (chosen by
$SLURMD_NODENAME), gathered through real srun fan-out, planned into groups, and the generated
batch script run by real sbatch with a stand-in container command."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FROZEN_MATRIX
from tests.services import RESERVATION, RESERVED_NODE, WIDE_PARTITION, SlurmCluster

pytestmark = pytest.mark.slurm

FIXTURES = Path(__file__).parent / "probe" / "fixtures"
MI300X = FIXTURES / "rocminfo-gfx942-mi300x-4gpu-thamada.txt"
MI210 = FIXTURES / "sysfs" / "kfd-gfx90a-mi210-8gpu-k8sdp"


def _probe_script(
    tmp: Path, *, broken: str | None = None, hung: str | None = None, stubborn: str | None = None
) -> Path:
    """What srun runs on each node: the real probe on that node's recorded inputs (n3: an MI210
    with 8 GPUs, every other node an MI300X with 4)."""
    probe = f"{sys.executable} -m resolver probe --json"
    lines = [
        "#!/bin/sh",
        'case "$SLURMD_NODENAME" in',
        f"  n1|n2|n4|n5|n6|n7|n8) exec {probe} --rocminfo {MI300X} ;;",
        f"  n3) exec {probe} --sysfs {MI210} ;;",
        "esac",
        'echo "no recorded inputs for $SLURMD_NODENAME" >&2; exit 3',
    ]
    if broken:
        lines.insert(
            2, f'  {broken}) echo "{{not json"; echo "amdgpu: probe crashed" >&2; exit 1 ;;'
        )
    if hung:
        lines.insert(2, f"  {hung}) exec sleep 120 ;;")
    if stubborn:  # ignores SIGTERM: only a KILL stops it
        lines.insert(2, f"  {stubborn}) trap '' TERM INT; sleep 120 ;;")
    path = tmp / ("probe-broken.sh" if broken else "probe-hung.sh" if hung else "probe.sh")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return path


def _submit_with_standin(cluster: SlurmCluster, script: Path, tmp: Path) -> str:
    """Submit a generated batch script as written, with a container engine that only says
    where it ran and with what arguments; the job id (its output is vllm-GROUP-JOB.out)."""
    standin = tmp / "docker-standin"
    standin.write_text('#!/bin/sh\necho "ran on $SLURMD_NODENAME args: $*"\n')
    standin.chmod(0o755)
    submit = subprocess.run(
        ["sbatch", "--wait", "--parsable", str(script)],
        env={**cluster.env, "CONTAINER": str(standin)},
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert submit.returncode == 0, submit.stderr
    return submit.stdout.strip().split(";")[0]


def _wait_idle(cluster: SlurmCluster, timeout: float = 60) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %t"],
            env=cluster.env,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.splitlines()
        # The reserved node reads "resv" (tests/services.py), not idle.
        states = [line.split()[1] for line in lines if line.split()[:1] != [RESERVED_NODE]]
        if states and set(states) == {"idle"}:
            return
        time.sleep(0.5)
    raise AssertionError(f"Slurm nodes not idle within {timeout:.0f}s")


def _fleet(
    cluster: SlurmCluster, command: str, target: str, probe: Path, *args: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """`rocm-vllm fleet COMMAND --slurm TARGET --probe-command PROBE ARGS...`."""
    return _cli(
        cluster, "fleet", command, "--slurm", target, "--probe-command", str(probe), *args, cwd=cwd
    )


def _tool(cluster: SlurmCluster, *args: str, check: bool = False) -> str:
    """A Slurm client tool (sinfo, squeue, scontrol, scancel) against the test cluster; its
    stdout."""
    return subprocess.run(
        list(args), env=cluster.env, capture_output=True, text=True, timeout=30, check=check
    ).stdout


def _cli(
    cluster: SlurmCluster, *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**cluster.env, "ROCM_VLLM_MATRIX_DIR": str(FROZEN_MATRIX), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "resolver", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_gather_and_plan_a_partition(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    probe = _probe_script(tmp_path)
    out = tmp_path / "plan"
    run = _fleet(
        slurm_cluster,
        "plan",
        slurm_cluster.partition,
        probe,
        "--timeout",
        "60",
        "--time",
        "00:05:00",
        "--model",
        "Qwen/Qwen3-8B",
        "-o",
        str(out),
        "--json",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr + run.stdout
    data = json.loads(run.stdout)
    assert data["nodes"] == {"total": 3, "planned": 3, "unknown": 0, "failed": 0}
    groups = {g["nodes"]: g for g in data["groups"]}
    assert set(groups) == {"n[1-2]", "n3"}
    assert groups["n[1-2]"]["fingerprint"]["gfx_targets"] == ["gfx942"]
    assert groups["n[1-2]"]["fingerprint"]["logical_gpu_count"] == 4
    assert groups["n3"]["fingerprint"]["gfx_targets"] == ["gfx90a"]
    assert groups["n3"]["fingerprint"]["logical_gpu_count"] == 8
    assert data["main_plan"]["node_count"] == 3
    assert {g["join"]["status"] for g in data["groups"]} == {"on-plan"}
    assert sorted(p.name for p in (out / "slurm").iterdir()) == ["g1.sbatch", "g2.sbatch"]


def test_nodes_that_fail_are_listed_with_why(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    probe = _probe_script(tmp_path, broken="n2")
    run = _fleet(
        slurm_cluster,
        "plan",
        "n[1-3]",
        probe,
        "--timeout",
        "60",
        "--json",
        cwd=tmp_path,
    )
    assert run.returncode == 1, run.stderr
    data = json.loads(run.stdout)
    failed = {f["name"]: f for f in data["failed"]}
    assert set(failed) == {"n2"}
    assert "not valid JSON" in failed["n2"]["reason"] and "probe crashed" in failed["n2"]["reason"]
    assert sorted(g["nodes"] for g in data["groups"]) == ["n1", "n3"]


def test_a_hung_probe_is_stopped_and_listed(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """A probe that hangs, and one that ignores SIGTERM too (KILLed 5 s after its limit, issue
    40): both did not answer within the limit, neither "printed nothing"."""
    import time

    probe = _probe_script(tmp_path, hung="n3", stubborn="n2")
    start = time.monotonic()
    run = _fleet(
        slurm_cluster,
        "plan",
        "gpu",
        probe,
        "--timeout",
        "8",
        "--json",
        cwd=tmp_path,
    )
    assert time.monotonic() - start < 30
    assert run.returncode == 1, run.stderr
    data = json.loads(run.stdout)
    assert [(f["name"], f["reason"]) for f in data["failed"]] == [
        ("n2", "the probe did not answer within 3s; it was stopped"),
        ("n3", "the probe did not answer within 3s; it was stopped"),
    ]
    assert [g["nodes"] for g in data["groups"]] == ["n1"]


def test_gather_writes_one_report_per_node(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    probe = _probe_script(tmp_path)
    out = tmp_path / "reports"
    run = _fleet(
        slurm_cluster,
        "gather",
        "n[1-3]",
        probe,
        "-o",
        str(out),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "_gather.json",
        "n1.json",
        "n2.json",
        "n3.json",
    ]
    # The saved reports plan like the live fan-out: the directory as written (the summary beside
    # the reports is no node) and a glob of the reports.
    for given in (out, out / "n*.json"):
        plan = _cli(slurm_cluster, "fleet", "plan", str(given), "--json", cwd=tmp_path)
        assert plan.returncode == 0, plan.stderr
        data = json.loads(plan.stdout)
        assert sorted(g["nodes"] for g in data["groups"]) == ["n3", "n[1-2]"]
        assert data["nodes"]["total"] == 3 and data["failed"] == []


def test_unknown_target_and_dead_controller(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    run = _cli(slurm_cluster, "fleet", "plan", "--slurm", "gpu[001-004]", cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.startswith(
        "error: --slurm gpu[001-004]: neither a partition nor nodes Slurm knows"
    )
    assert "hint: partitions: gpu, resv, small, tiny, wide; nodes: n[1-8]" in run.stderr


def test_generated_sbatch_runs_under_slurm(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """The group's script, submitted as written; the container engine is a stand-in that records
    the node it ran on, the GPUs Slurm gave it and its arguments (docker cannot run the image
    here)."""
    probe = _probe_script(tmp_path)
    out = tmp_path / "plan"
    run = _fleet(
        slurm_cluster,
        "plan",
        "n[1-2]",
        probe,
        "--time",
        "00:05:00",
        "--model",
        "Qwen/Qwen3-8B",
        "-o",
        str(out),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    script = out / "slurm" / "g1.sbatch"
    text = script.read_text()
    assert "#SBATCH --nodelist=n[1-2]" in text and "#SBATCH --gpus-per-node=4" in text
    standin = tmp_path / "docker-standin"
    standin.write_text(
        '#!/bin/sh\necho "ran on $SLURMD_NODENAME gpus=${SLURM_GPUS_ON_NODE:-?} args: $*"\n'
    )
    standin.chmod(0o755)
    env = {**slurm_cluster.env, "CONTAINER": str(standin)}
    submit = subprocess.run(
        ["sbatch", "--wait", "--parsable", str(script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert submit.returncode == 0, submit.stderr
    job = submit.stdout.strip().split(";")[0]
    output = (tmp_path / f"vllm-g1-{job}.out").read_text()
    lines = sorted(line for line in output.splitlines() if line.startswith("ran on"))
    assert [line.split(" args:")[0] for line in lines] == ["ran on n1 gpus=4", "ran on n2 gpus=4"]
    args = lines[0].split(" args: ", 1)[1].split()
    assert args[:2] == ["run", "--rm"]
    assert args[args.index("--device") : args.index("--device") + 2] == ["--device", "/dev/kfd"]
    assert "vllm/vllm-openai-rocm:v0.24.0" in args
    assert args[-3:] == ["Qwen/Qwen3-8B", "--tensor-parallel-size", "4"]  # positional model


def test_sbatch_test_only_accepts_every_group_script(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    probe = _probe_script(tmp_path)
    out = tmp_path / "plan"
    run = _fleet(
        slurm_cluster,
        "plan",
        "gpu",
        probe,
        "--time",
        "00:05:00",
        "-o",
        str(out),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    for script in sorted((out / "slurm").iterdir()):
        check = subprocess.run(
            ["sbatch", "--test-only", str(script)],
            env=slurm_cluster.env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        # n3 (MI210) has 8 GPUs and its gres says 8; the MI300X nodes 4 (issue 40: Slurm's own
        # count, so that it is never more than Slurm has).
        assert check.returncode == 0, check.stderr
        assert "to start at" in check.stderr


def test_scontrol_agrees_with_our_hostlists(slurm_cluster: SlurmCluster) -> None:
    from resolver.fleet import hostlist

    for text in ("n[1-3]", "gpu[001-003,007],login1", "a[098-101]"):
        names = _tool(slurm_cluster, "scontrol", "show", "hostnames", text, check=True).split()
        assert hostlist.expand(text) == names
        back = _tool(
            slurm_cluster, "scontrol", "show", "hostlist", ",".join(names), check=True
        ).strip()
        assert hostlist.expand(hostlist.compress(names)) == hostlist.expand(back)
    # Names with a suffix after the number (issue 23: n[1-2]a): what we write, Slurm reads back
    # as the same names.
    for names in (["n1a", "n2a"], ["gpu01-ib", "gpu02-ib", "gpu03-ib"], ["r1n1", "r1n2", "r2n1"]):
        written = hostlist.compress(names)
        read = _tool(slurm_cluster, "scontrol", "show", "hostnames", written, check=True).split()
        assert read == names, (written, read)


def test_drained_node_is_listed_not_asked(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    probe = _probe_script(tmp_path)
    scontrol = ["scontrol", "update", "nodename=n3"]
    subprocess.run(
        # An admin's free text, with an escape sequence: shown, escaped (issue 40).
        [*scontrol, "state=drain", "reason=bad HBM \x1b[31m"],
        env=slurm_cluster.env,
        check=True,
        timeout=10,
    )
    try:
        run = _fleet(
            slurm_cluster,
            "plan",
            "gpu",
            probe,
            "--json",
            cwd=tmp_path,
        )
    finally:
        subprocess.run([*scontrol, "state=resume"], env=slurm_cluster.env, check=True, timeout=10)
        _wait_idle(slurm_cluster)  # a resumed node answers again only after its next ping
    assert run.returncode == 1, run.stderr
    data = json.loads(run.stdout)
    assert [(f["name"], f["reason"].split(" (")[0]) for f in data["failed"]] == [
        ("n3", "Slurm state drain")
    ]
    # The drain reason is shown (it was not), escaped: no raw escape reaches a terminal.
    assert "bad HBM" in data["failed"][0]["reason"]
    assert "\x1b" not in data["failed"][0]["reason"]
    assert [g["nodes"] for g in data["groups"]] == ["n[1-2]"]


def test_a_report_on_one_line_is_read_whole(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """srun --label cuts output lines at 1024 bytes; a probe that prints its JSON on one line (a
    few KiB) is glued back without the cuts becoming line breaks."""
    probe = _probe_script(tmp_path)
    one_line = tmp_path / "probe-one-line.sh"
    flatten = "import json, sys; print(json.dumps(json.load(sys.stdin)))"
    one_line.write_text(f"#!/bin/sh\n{probe} | {sys.executable} -c '{flatten}'\n")
    one_line.chmod(0o755)
    run = _cli(
        slurm_cluster,
        "fleet",
        "plan",
        "--slurm",
        "n[1-3]",
        "--probe-command",
        str(one_line),
        "--timeout",
        "60",
        "--json",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr + run.stdout
    data = json.loads(run.stdout)
    assert data["failed"] == [] and data["nodes"]["planned"] == 3


def test_hostile_probe_output_never_reaches_a_script(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """A node whose probe names another node, or writes an OS with a line break and a command,
    is refused at the door: no batch script or manifest carries it, the other nodes plan."""
    probe = _probe_script(tmp_path)
    hostile = tmp_path / "probe-hostile.sh"
    inject = (
        "import json, sys; d = json.load(sys.stdin); "
        "d['os'] = 'ubuntu-22.04\\ntouch /tmp/pwned-by-os'; print(json.dumps(d))"
    )
    hostile.write_text(
        "#!/bin/sh\n"
        'case "$SLURMD_NODENAME" in\n'
        f'  n2) {probe} | {sys.executable} -c "{inject}" ;;\n'
        "  n3) echo '@rocm-vllm-node ../../etc/evil'; echo '{}' ;;\n"
        f"  *) exec {probe} ;;\n"
        "esac\n"
    )
    hostile.chmod(0o755)
    out = tmp_path / "plan"
    run = _cli(
        slurm_cluster,
        "fleet",
        "plan",
        "--slurm",
        "n[1-3]",
        "--probe-command",
        str(hostile),
        "--timeout",
        "60",
        "-o",
        str(out),
        "--json",
        cwd=tmp_path,
    )
    assert run.returncode == 1, run.stderr
    data = json.loads(run.stdout)
    failed = {f["name"]: f["reason"] for f in data["failed"]}
    assert set(failed) == {"n2", "n3"}
    assert "'os' is" in failed["n2"] and "not a value a probe writes" in failed["n2"]
    assert [g["nodes"] for g in data["groups"]] == ["n1"]
    scripts = [*(out / "slurm").iterdir(), *(out / "kubernetes").iterdir()]
    written = "".join(p.read_text() for p in scripts)
    assert "pwned" not in written and "evil" not in written and "n2" not in written
    assert not (tmp_path / "etc").exists()


def _sbatch_hold(cluster: SlurmCluster, node: str, seconds: int, tmp: Path) -> str:
    """Another user's job on ``node`` (CPUs=1: it takes the whole node); its id."""
    run = subprocess.run(
        ["sbatch", "--parsable", "-w", node, "-p", cluster.partition, f"--wrap=sleep {seconds}"],
        env=cluster.env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    job = run.stdout.strip().split(";")[0]
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # wait until it runs: the node is then allocated
        state = subprocess.run(
            ["squeue", "-h", "-j", job, "-o", "%T"],
            env=cluster.env,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
        if state == "RUNNING":
            return job
        time.sleep(0.3)
    raise AssertionError(f"job {job} did not start")


def test_a_busy_node_is_reported_busy_and_the_rest_answer(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """Issue 23: one allocated node sank every node of the gather ("no answer" after the whole
    timeout). Now it is busy, said at once, and the other nodes are probed and planned."""
    import time

    probe = _probe_script(tmp_path)
    job = _sbatch_hold(slurm_cluster, "n2", 300, tmp_path)
    try:
        start = time.monotonic()
        run = _fleet(
            slurm_cluster,
            "plan",
            "gpu",
            probe,
            "--timeout",
            "60",
            "--json",
            cwd=tmp_path,
        )
        took = time.monotonic() - start
    finally:
        subprocess.run(["scancel", job], env=slurm_cluster.env, timeout=10, check=False)
        _wait_idle(slurm_cluster)
    assert run.returncode == 1, run.stderr
    assert took < 30, took  # not the whole 60 s timeout
    data = json.loads(run.stdout)
    (failed,) = data["failed"]
    assert failed["name"] == "n2" and failed["reason"].startswith("busy: ")
    assert sorted(g["nodes"] for g in data["groups"]) == ["n1", "n3"]


def test_a_busy_node_is_waited_for_when_asked(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """--wait-busy: the busy node's own step waits for it (its job ends in a few seconds)."""
    probe = _probe_script(tmp_path)
    job = _sbatch_hold(slurm_cluster, "n2", 6, tmp_path)
    try:
        run = _fleet(
            slurm_cluster,
            "gather",
            "n[1-2]",
            probe,
            "--wait-busy",
            "--timeout",
            "60",
            "-o",
            str(tmp_path / "reports"),
            "--json",
            cwd=tmp_path,
        )
    finally:
        subprocess.run(["scancel", job], env=slurm_cluster.env, timeout=10, check=False)
        _wait_idle(slurm_cluster)
    assert run.returncode == 0, run.stderr + run.stdout
    data = json.loads(run.stdout)
    assert [(n["name"], n["status"]) for n in data["nodes"]] == [("n1", "ok"), ("n2", "ok")]


def test_a_partition_below_the_node_count_is_probed_in_steps(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """Issue 23: a partition whose MaxNodes is below the node count refused the one allocation
    for every node. `small` allows one node per job: each node gets its own step. The scripts
    run in that partition (not the default one) within its MaxTime (5 minutes), and sbatch
    accepts them as written."""
    from tests.services import SMALL_PARTITION

    probe = _probe_script(tmp_path)
    out = tmp_path / "plan"
    run = _fleet(
        slurm_cluster,
        "plan",
        SMALL_PARTITION,
        probe,
        "-o",
        str(out),
        "--json",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr + run.stdout
    data = json.loads(run.stdout)
    assert data["nodes"] == {"total": 2, "planned": 2, "unknown": 0, "failed": 0}
    scripts = sorted((out / "slurm").iterdir())
    assert len(scripts) == 2  # n2 (MI300X, 4 GPUs) and n3 (MI210, 8 GPUs) are two groups
    for script in scripts:
        text = script.read_text()
        assert f"#SBATCH --partition={SMALL_PARTITION}" in text
        assert "#SBATCH --time=00:05:00" in text
        test_only = subprocess.run(
            ["sbatch", "--test-only", str(script)],
            env=slurm_cluster.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert test_only.returncode == 0, test_only.stderr
    # A --time past the partition's MaxTime would pend forever: refused before any srun.
    too_long = _fleet(
        slurm_cluster,
        "plan",
        SMALL_PARTITION,
        probe,
        "--time",
        "01:00:00",
        cwd=tmp_path,
    )
    assert too_long.returncode == 2
    assert "longer than partition small's MaxTime (00:05:00)" in too_long.stderr


def test_gather_then_plan_keeps_the_partition(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """`fleet gather -o DIR` then `fleet plan DIR -o OUT` (the documented workflow): the scripts
    still name the partition the nodes were gathered from, and keep within its MaxTime."""
    from tests.services import SMALL_PARTITION

    probe = _probe_script(tmp_path)
    reports = tmp_path / "reports"
    gathered = _fleet(
        slurm_cluster,
        "gather",
        f"partition={SMALL_PARTITION}",
        probe,
        "-o",
        str(reports),
        cwd=tmp_path,
    )
    assert gathered.returncode == 0, gathered.stderr
    out = tmp_path / "plan"
    plan = _cli(slurm_cluster, "fleet", "plan", str(reports), "-o", str(out), cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    text = next((out / "slurm").iterdir()).read_text()
    assert f"#SBATCH --partition={SMALL_PARTITION}" in text
    assert "#SBATCH --time=00:05:00" in text


def test_a_cpx_group_serves_one_replica_per_partition_under_slurm(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """Issue 23 on the real cluster: nodes whose probe reports one MI308X in CPX/NPS4 (four
    20-CU partitions, as in amd-smi's changelog) are gathered, planned, and the group's script,
    submitted as written, starts one TP=1 server per partition on each node, each on its own
    device and port (the container engine is a stand-in that records its arguments)."""
    from resolver.data.node import Gpu, Node, Partition

    cpx = Node(
        gpus=tuple(
            Gpu(
                gfx="gfx942",
                product="Instinct MI308X",
                compute_units=20,
                partition=Partition(compute="CPX", memory="NPS4"),
            )
            for _ in range(4)
        ),
        gfx_targets=("gfx942",),
        physical_gpu_count=1,
        logical_gpu_count=4,
        driver_version="30.30.3",
    )
    report = tmp_path / "cpx.json"
    report.write_text(json.dumps({"schema_version": 1, **cpx.to_json()}))
    probe = tmp_path / "probe-cpx.sh"
    probe.write_text(f"#!/bin/sh\nexec cat {report}\n")
    probe.chmod(0o755)
    out = tmp_path / "plan"
    run = _fleet(
        slurm_cluster, "plan", "n[1-2]", probe, "--time", "00:05:00", "-o", str(out), cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr + run.stdout
    script = out / "slurm" / "g1.sbatch"
    assert "--tensor-parallel-size" not in script.read_text()
    job = _submit_with_standin(slurm_cluster, script, tmp_path)
    lines = [
        line
        for line in (tmp_path / f"vllm-g1-{job}.out").read_text().splitlines()
        if line.startswith("ran on")
    ]
    started = sorted(
        (line.split()[2], line.split(" -e HIP_VISIBLE_DEVICES=")[1].split()[0], line.split()[-1])
        for line in lines
    )
    assert started == [(node, str(n), str(8000 + n)) for node in ("n1", "n2") for n in range(4)], (
        lines
    )


def test_a_mixed_fleet_under_slurm_gets_one_group_and_script_per_vendor(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """issue 26: n1 and n2 report MI300X GPUs, n3 the lent H200's nvidia-smi output (recorded
    there); the plan has an AMD and an NVIDIA group, and the NVIDIA script, submitted, runs the
    CUDA image with the GPUs the NVIDIA way on n3."""
    probe = f"{sys.executable} -m resolver probe --json"
    smi = FIXTURES / "nvidia" / "nvidia-smi-q-x-h200.xml"
    script_path = tmp_path / "probe-mixed.sh"
    script_path.write_text(
        "\n".join(
            [
                "#!/bin/sh",
                'case "$SLURMD_NODENAME" in',
                f"  n1|n2) exec {probe} --rocminfo {MI300X} ;;",
                f"  n3) exec {probe} --nvidia-smi {smi} ;;",
                "esac",
                "exit 3",
            ]
        )
        + "\n"
    )
    script_path.chmod(0o755)
    out = tmp_path / "plan"
    run = _fleet(
        slurm_cluster,
        "plan",
        "n[1-3]",
        script_path,
        "--time",
        "00:05:00",
        "-o",
        str(out),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    data = json.loads((out / "fleet.json").read_text())
    vendors = {g["nodes"]: g["fingerprint"]["vendor"] for g in data["groups"]}
    assert vendors == {"n[1-2]": "amd", "n3": "nvidia"}
    assert set(data["main_plans"]) == {"amd", "nvidia"}
    nvidia = next(g for g in data["groups"] if g["nodes"] == "n3")
    script = out / "slurm" / f"{nvidia['id']}.sbatch"
    job = _submit_with_standin(slurm_cluster, script, tmp_path)
    output = (tmp_path / f"vllm-{nvidia['id']}-{job}.out").read_text()
    (line,) = [x for x in output.splitlines() if x.startswith("ran on")]
    assert line.startswith("ran on n3 args: run --rm")
    assert "--gpus all" in line and "/dev/kfd" not in line
    assert "vllm/vllm-openai:v0.33.0" in line


def _test_only(cluster: SlurmCluster, script: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sbatch", "--test-only", str(script)],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _sbatch(script: Path) -> dict[str, str]:
    """A script's #SBATCH options: name -> value."""
    options = {}
    for line in script.read_text().splitlines():
        if line.startswith("#SBATCH --"):
            key, _, value = line.removeprefix("#SBATCH --").partition("=")
            options[key] = value
    return options


def test_a_group_past_maxnodes_is_split_into_jobs_that_start(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """Issue 40: a group larger than its partition's MaxNodes was one job that pends forever
    (PartitionNodeLimit). `wide` lets a job hold 2 of its 4 nodes, and n4 declares no gpu gres:
    the one MI300X group becomes jobs of at most 2 nodes, each of one gres count, and sbatch
    accepts every one as written."""
    probe = _probe_script(tmp_path)
    out = tmp_path / "plan"
    run = _fleet(slurm_cluster, "plan", WIDE_PARTITION, probe, "-o", str(out), cwd=tmp_path)
    assert run.returncode == 0, run.stderr + run.stdout
    data = json.loads((out / "fleet.json").read_text())
    assert [g["nodes"] for g in data["groups"]] == ["n[4-7]"]
    scripts = sorted((out / "slurm").iterdir())
    assert [p.name for p in scripts] == ["g1-1.sbatch", "g1-2.sbatch", "g1-3.sbatch"]
    jobs = {_sbatch(p)["nodelist"]: _sbatch(p) for p in scripts}
    assert set(jobs) == {"n4", "n[5-6]", "n7"}
    for options in jobs.values():
        assert options["partition"] == WIDE_PARTITION and int(options["nodes"]) <= 2
    # n4 has no gpu gres: no --gpus-per-node (Slurm would refuse it), the job takes it whole.
    assert "gpus-per-node" not in jobs["n4"] and "exclusive" in jobs["n4"]
    assert jobs["n[5-6]"]["gpus-per-node"] == "4"
    for script in scripts:
        check = _test_only(slurm_cluster, script)
        assert check.returncode == 0, (script.name, check.stderr)
    # gather, then plan the directory: the summary carries the partitions and gres, the same jobs.
    reports = tmp_path / "reports"
    gathered = _fleet(
        slurm_cluster, "gather", WIDE_PARTITION, probe, "-o", str(reports), cwd=tmp_path
    )
    assert gathered.returncode == 0, gathered.stderr
    again = tmp_path / "again"
    plan = _cli(slurm_cluster, "fleet", "plan", str(reports), "-o", str(again), cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert {p.name: _sbatch(p) for p in (again / "slurm").iterdir()} == {
        p.name: _sbatch(p) for p in scripts
    }


def test_a_group_spanning_partitions_names_the_ones_holding_its_nodes(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """Issue 40: a node list no one partition holds got no --partition (the jobs pended in the
    default partition with PartitionConfig). n[1-2] are in gpu (n2 in small too), n[5-6] in wide:
    one job in each, within its MaxTime (gpu: 10 minutes, wide: 30), and sbatch accepts them."""
    probe = _probe_script(tmp_path)
    out = tmp_path / "plan"
    run = _fleet(slurm_cluster, "plan", "n[1-2,5-6]", probe, "-o", str(out), cwd=tmp_path)
    assert run.returncode == 0, run.stderr + run.stdout
    scripts = sorted((out / "slurm").iterdir())
    jobs = {_sbatch(p)["nodelist"]: _sbatch(p) for p in scripts}
    assert {k: (v["partition"], v["time"]) for k, v in jobs.items()} == {
        "n[1-2]": ("gpu", "00:10:00"),
        "n[5-6]": (WIDE_PARTITION, "00:30:00"),
    }
    for script in scripts:
        check = _test_only(slurm_cluster, script)
        assert check.returncode == 0, (script.name, check.stderr)


def test_gpus_per_node_is_what_slurm_declares(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """Issue 40: --gpus-per-node came from the probe; a node whose gres differs got a script Slurm
    refuses. n3 declares gpu:mi210:8; here its probe says 4 MI300X, as n1 and n2 (gpu:mi300x:4):
    one group, two jobs, each asking for what Slurm declares, and the script says why."""
    probe = tmp_path / "probe-all-mi300x.sh"
    probe.write_text(
        f"#!/bin/sh\nexec {sys.executable} -m resolver probe --json --rocminfo {MI300X}\n"
    )
    probe.chmod(0o755)
    out = tmp_path / "plan"
    run = _fleet(slurm_cluster, "plan", "gpu", probe, "-o", str(out), cwd=tmp_path)
    assert run.returncode == 0, run.stderr + run.stdout
    scripts = sorted((out / "slurm").iterdir())
    jobs = {_sbatch(p)["nodelist"]: (p, _sbatch(p)) for p in scripts}
    assert {k: v[1]["gpus-per-node"] for k, v in jobs.items()} == {"n[1-2]": "4", "n3": "8"}
    assert "# Slurm's gres declares 8 GPUs on these nodes, the probe saw 4" in (
        jobs["n3"][0].read_text()
    )
    for script in scripts:
        check = _test_only(slurm_cluster, script)
        assert check.returncode == 0, (script.name, check.stderr)


def test_one_failing_server_stops_only_itself(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """Issue 40: one `srun --kill-on-bad-exit=1` over the group's nodes meant one failing node
    killed every other server. Each node's server is now its own step: the container stand-in
    fails at once on n1 and serves for 3 s on n2, which still finishes; the job fails and its
    output names n1."""
    probe = _probe_script(tmp_path)
    out = tmp_path / "plan"
    run = _fleet(
        slurm_cluster, "plan", "n[1-2]", probe, "--time", "00:05:00", "-o", str(out), cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    standin = tmp_path / "docker-standin"
    standin.write_text(
        "#!/bin/sh\n"
        '[ "$SLURMD_NODENAME" = n1 ] && { echo "failed on n1" >&2; exit 7; }\n'
        'sleep 3; echo "served on $SLURMD_NODENAME to the end"\n'
    )
    standin.chmod(0o755)
    submit = subprocess.run(
        ["sbatch", "--wait", "--parsable", str(out / "slurm" / "g1.sbatch")],
        env={**slurm_cluster.env, "CONTAINER": str(standin)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert submit.returncode != 0  # the job says some server failed
    job = submit.stdout.strip().split(";")[0]
    output = (tmp_path / f"vllm-g1-{job}.out").read_text()
    assert "served on n2 to the end" in output, output
    assert "rocm-vllm: the server on n1 stopped (exit 7)" in output, output
    assert "rocm-vllm: servers that stopped with an error: n1" in output, output
    _wait_idle(slurm_cluster)


def test_a_maxtime_one_partition_is_probed(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """Issue 40: with the default --timeout on a MaxTime=1 partition the probe step asked for 3
    minutes, was refused, and every idle node read as busy."""
    from tests.services import TINY_PARTITION

    run = _fleet(
        slurm_cluster,
        "gather",
        TINY_PARTITION,
        _probe_script(tmp_path),
        "-o",
        str(tmp_path / "reports"),
        "--json",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr + run.stdout
    assert [(n["name"], n["status"]) for n in json.loads(run.stdout)["nodes"]] == [("n7", "ok")]


def _logging_probe(tmp: Path) -> tuple[Path, Path]:
    """The recorded probe, behind a wrapper that logs each node it ran on: what was asked."""
    inner = _probe_script(tmp)
    log = tmp / "asked.log"
    wrapper = tmp / "probe-logged.sh"
    wrapper.write_text(f'#!/bin/sh\necho "$SLURMD_NODENAME" >> {log}\nexec {inner} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


def test_a_node_in_a_reservation_is_listed_reserved_not_asked(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """Issue 40: a node in a reservation the gather does not name was asked, refused, split
    and reported busy (76 s at 256 nodes); it is now listed as reserved, never asked."""
    probe, log = _logging_probe(tmp_path)
    run = _fleet(slurm_cluster, "plan", "n[7-8]", probe, "--json", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    data = json.loads(run.stdout)
    assert [(f["name"], f["busy"]) for f in data["failed"]] == [(RESERVED_NODE, False)]
    assert data["failed"][0]["reason"].startswith("reserved:")
    assert RESERVATION in data["failed"][0]["reason"]  # the name to give --reservation
    assert [g["nodes"] for g in data["groups"]] == ["n7"]
    assert log.read_text().split() == ["n7"]


def test_reservation_probes_its_nodes_and_the_scripts_carry_it(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """`--reservation NAME` (default $SLURM_RESERVATION): the reserved node is probed in it,
    its batch script names it, and Slurm would start that script now."""
    probe = _probe_script(tmp_path)
    out = tmp_path / "plan"
    run = _fleet(
        slurm_cluster,
        "plan",
        "n[7-8]",
        probe,
        "--reservation",
        RESERVATION,
        "--time",
        "00:01:00",
        "-o",
        str(out),
        "--json",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr + run.stdout
    data = json.loads(run.stdout)
    assert data["nodes"]["planned"] == 2
    scripts = {p.name: p.read_text() for p in (out / "slurm").iterdir()}
    reserved = [t for t in scripts.values() if f"--nodelist={RESERVED_NODE}\n" in t]
    others = [t for t in scripts.values() if f"--nodelist={RESERVED_NODE}\n" not in t]
    assert len(reserved) == 1 and others
    assert f"#SBATCH --reservation={RESERVATION}\n" in reserved[0]
    assert all("--reservation" not in t for t in others)  # n7 is in no reservation
    check = subprocess.run(
        [
            "sbatch",
            "--test-only",
            str(out / "slurm" / next(n for n, t in scripts.items() if t is reserved[0])),
        ],
        env=slurm_cluster.env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert check.returncode == 0 and "to start at" in check.stderr, check.stderr
    # The environment's reservation is the default, as srun's own.
    gathered = _cli(
        slurm_cluster,
        "fleet",
        "gather",
        "--slurm",
        RESERVED_NODE,
        "--probe-command",
        str(probe),
        "-o",
        str(tmp_path / "reports"),
        "--json",
        cwd=tmp_path,
        env={"SLURM_RESERVATION": RESERVATION},
    )
    assert gathered.returncode == 0, gathered.stderr + gathered.stdout
    assert [n["status"] for n in json.loads(gathered.stdout)["nodes"]] == ["ok"]


def test_a_down_partition_is_said_not_read_as_busy(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """Issue 40: srun's "Requested nodes are busy" made a down partition read as every node
    busy. Asked for, it is a Slurm error (exit 4) naming it; a node it alone holds is listed
    with it, and a node another partition holds too is asked there."""
    probe = _probe_script(tmp_path)
    update = ["scontrol", "update", f"partitionname={WIDE_PARTITION}"]
    subprocess.run([*update, "state=down"], env=slurm_cluster.env, check=True, timeout=10)
    try:
        whole = _fleet(slurm_cluster, "plan", WIDE_PARTITION, probe, cwd=tmp_path)
        some = _fleet(slurm_cluster, "plan", "n[6-7]", probe, "--json", cwd=tmp_path)
    finally:
        subprocess.run([*update, "state=up"], env=slurm_cluster.env, check=True, timeout=10)
    assert whole.returncode == 4, whole.stderr
    assert f"partition {WIDE_PARTITION} is down" in whole.stderr
    assert "busy" not in whole.stderr + whole.stdout
    data = json.loads(some.stdout)
    assert [(f["name"], f["busy"]) for f in data["failed"]] == [("n6", False)]
    assert data["failed"][0]["reason"] == f"partition {WIDE_PARTITION} is down: not asked"
    assert [g["nodes"] for g in data["groups"]] == ["n7"]  # through partition tiny


def test_constraint_is_used_only_by_groups_whose_nodes_all_have_it(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """Issue 40: one --constraint went into every group's script, with --nodes=1. Now a
    group gets it where all of its nodes have the feature (sinfo %f), for all of its nodes;
    another keeps its node list, and the script says why."""
    out = tmp_path / "plan"
    run = _fleet(
        slurm_cluster,
        "plan",
        "gpu",
        _probe_script(tmp_path),
        "--constraint",
        "mi300x",
        "--time",
        "00:05:00",
        "-o",
        str(out),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    scripts = {p.name: p.read_text() for p in sorted((out / "slurm").iterdir())}
    headers = {
        name: [
            ln
            for ln in text.splitlines()
            if ln.startswith(("#SBATCH --nodes", "#SBATCH --nodelist", "#SBATCH --c"))
        ]
        for name, text in scripts.items()
    }
    assert sorted(headers.values()) == sorted(
        [
            ["#SBATCH --constraint=mi300x", "#SBATCH --nodes=2"],
            ["#SBATCH --nodelist=n3", "#SBATCH --nodes=1"],
        ]
    )
    mi210 = next(t for t in scripts.values() if "--nodelist=n3" in t)
    assert "# --constraint mi300x: n3 lacks it" in mi210
    for script in scripts:
        check = subprocess.run(
            ["sbatch", "--test-only", str(out / "slurm" / script)],
            env=slurm_cluster.env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert check.returncode == 0, check.stderr


def test_a_reservation_not_yet_started_is_said(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """Issue 40 (left): `--reservation` naming a reservation whose StartTime is ahead. The probes
    cannot run in it: the gather refuses, naming its start, with a hint (exit 4). Scripts
    written for it from a saved gather say that Slurm holds the job until it starts, and real
    sbatch agrees (it would start then, not now)."""
    later = "rvtest-later"
    create = [
        "scontrol",
        "create",
        "reservation",
        f"ReservationName={later}",
        "Users=root",
        "Nodes=n6",
        "StartTime=now+1hour",  # past every partition's MaxTime (30 min): no other test waits
        "Duration=60",
    ]
    subprocess.run(create, env=slurm_cluster.env, check=True, timeout=30, capture_output=True)
    try:
        probe = _probe_script(tmp_path)
        refused = _fleet(
            slurm_cluster,
            "gather",
            "n[6-7]",
            probe,
            "--reservation",
            later,
            "-o",
            str(tmp_path / "no"),
            cwd=tmp_path,
        )
        reports = tmp_path / "reports"
        gathered = _fleet(
            slurm_cluster, "gather", "n[6-7]", probe, "-o", str(reports), cwd=tmp_path
        )
        out = tmp_path / "plan"
        plan = _cli(
            slurm_cluster,
            "fleet",
            "plan",
            str(reports),
            "--reservation",
            later,
            "--time",
            "00:01:00",
            "-o",
            str(out),
            cwd=tmp_path,
        )
        assert gathered.returncode == 0, gathered.stderr
        assert plan.returncode == 0, plan.stderr + plan.stdout
        scripts = {p.name: p.read_text() for p in (out / "slurm").iterdir()}
        [name] = [n for n, t in scripts.items() if "--nodelist=n6\n" in t]
        # Submitted for real (sbatch --test-only refuses a reservation not usable now): the job
        # pends, and Slurm's reason is the reservation.
        job = _tool(
            slurm_cluster,
            "sbatch",
            "--parsable",
            "--chdir",
            str(tmp_path),
            str(out / "slurm" / name),
        ).strip()
        pending = ""
        try:
            for _ in range(40):
                pending = _tool(slurm_cluster, "squeue", "-h", "-j", job, "-o", "%T %r").strip()
                if pending.endswith(" Reservation"):
                    break
                time.sleep(0.25)
        finally:
            _tool(slurm_cluster, "scancel", job)
        shown = _tool(slurm_cluster, "scontrol", "show", "reservation", later, "--oneliner")
    finally:
        subprocess.run(
            ["scontrol", "delete", f"ReservationName={later}"],
            env=slurm_cluster.env,
            timeout=30,
            check=False,
            capture_output=True,
        )
    assert refused.returncode == 4, refused.stderr
    first, hint = refused.stderr.splitlines()
    start = shown.split("StartTime=")[1].split()[0]
    assert first == (
        f"error: reservation {later} has not started: it starts at {start} (scontrol show "
        "reservation), and no step runs in it before then, so no node was asked"
    )
    assert hint.startswith("hint: gather again once it has started, or leave out --reservation")
    assert not (tmp_path / "no").exists()
    assert gathered.returncode == 0, gathered.stderr
    assert plan.returncode == 0, plan.stderr
    text = scripts[name]
    assert f"#SBATCH --reservation={later}\n" in text
    assert (
        f"# reservation {later} had not started when Slurm was asked: it starts at {start}" in text
    )
    assert job.isdigit() and pending == "PENDING Reservation", (job, pending)
