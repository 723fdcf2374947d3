"""The srun fan-out at a scale no test cluster reaches (issue 23): 5,000 nodes, some down, some
allocated, a few that sinfo calls idle but whose step Slurm refuses (taken in between), behind a
stand-in sinfo and srun that answer as Slurm does. The gather must finish in bounded time with a
bounded number of steps, whatever the node states, and say of each node what happened."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from resolver.data.model import Matrix
from resolver.fleet import slurm
from resolver.fleet.plan import FleetPlan

NODES = [f"g{i:04d}" for i in range(1, 5001)]
DOWN = {"g0007", "g2500"}
ALLOCATED = {f"g{i:04d}" for i in range(100, 140)}  # another job holds 40 nodes
TAKEN = {"g0321", "g3333", "g4999"}  # idle in sinfo, refused when the step asks for them
REPORT = {
    "schema_version": 1,
    "gpus": [{"gfx": "gfx942", "product": "Instinct MI300X"}] * 8,
    "gfx_targets": ["gfx942"],
    "physical_gpu_count": 8,
    "logical_gpu_count": 8,
    "driver_version": "30.30.3",
    "problems": [],
}

SRUN = """#!{python}
import json, os, sys, time
sys.path.insert(0, {root!r})
from resolver.fleet import hostlist
args = sys.argv[1:]
nodes = hostlist.expand(next(a for a in args if a.startswith("--nodelist="))[11:])
count = int(next(a for a in args if a.startswith("--nodes="))[8:])
with open({log!r}, "a") as log:
    log.write(json.dumps(nodes) + "\\n")
assert count == len(nodes) <= 64, (count, len(nodes))  # never above the partition's MaxNodes
taken = set(json.loads(os.environ["TAKEN"]))
if taken & set(nodes):
    print("srun: error: Unable to allocate resources: Requested nodes are busy", file=sys.stderr)
    sys.exit(1)
report = os.environ["REPORT"]
out = []
for i, n in enumerate(nodes):
    out.append(f"{{i}}: @rocm-vllm-node {{n}}")
    out.append(f"{{i}}: {{report}}")
time.sleep(0.05)
print("\\n".join(out))
"""


def test_five_thousand_nodes_in_bounded_steps_and_time(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    lines = []
    for n in NODES:
        state = "down*" if n in DOWN else "alloc" if n in ALLOCATED else "idle"
        lines.append(f"{n}|gpu*|{state}|1-64|4:00:00")
    (tmp_path / "sinfo.txt").write_text("\n".join(lines) + "\n")
    sinfo = bin_dir / "sinfo"
    sinfo.write_text(f"#!/bin/sh\ncat {tmp_path / 'sinfo.txt'}\n")
    log = tmp_path / "steps.log"
    srun = bin_dir / "srun"
    root = str(Path(__file__).parents[1])
    srun.write_text(SRUN.format(python=sys.executable, root=root, log=str(log)))
    for tool in (sinfo, srun):
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")  # the tools are found on PATH
    env = {
        **os.environ,
        "TAKEN": json.dumps(sorted(TAKEN)),
        "REPORT": json.dumps(REPORT),
    }
    start = time.monotonic()
    found = slurm.gather("gpu", timeout=300, env=env)
    took = time.monotonic() - start
    by_name = {r.name: r for r in found.reports}
    assert list(by_name) == NODES  # every node, in sinfo's order, once
    assert all(
        by_name[n].status == "failed" and "state down" in str(by_name[n].reason) for n in DOWN
    )
    assert all(by_name[n].busy and "state alloc" in str(by_name[n].reason) for n in ALLOCATED)
    for n in TAKEN:
        assert by_name[n].busy and "Requested nodes are busy" in str(by_name[n].reason), by_name[n]
    ok = [r for r in found.reports if r.status == "ok"]
    assert len(ok) == len(NODES) - len(DOWN) - len(ALLOCATED) - len(TAKEN)
    # 79 chunks of at most 64 (MaxNodes), plus two halves per level for each refused chunk.
    steps = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(steps) == found.steps
    assert found.steps <= 79 + 3 * 2 * 6
    assert not any(set(s) & (DOWN | ALLOCATED) for s in steps)  # never asked
    assert found.partition == "gpu" and found.max_minutes == 240
    assert took < 120, took


def test_a_character_cut_at_srun_line_limit_is_whole_again() -> None:
    """Issue 40: srun --label cuts a task's line at 1,024 bytes, maybe inside a UTF-8 character;
    a one-line report whose site field has a 2-byte character across the cut was read as two
    lines (not valid JSON). The output is kept as bytes until the pieces are joined."""
    base = json.dumps({**REPORT, "hostname": "g0001", "site_rack": ""}, ensure_ascii=False)
    pad = slurm.SRUN_LINE - 1 - len(base[: base.index('"site_rack": "') + 14].encode())
    line = base.replace('"site_rack": ""', '"site_rack": "' + "x" * pad + "é Zürich" + '"')
    raw = line.encode()
    assert raw[slurm.SRUN_LINE - 1 : slurm.SRUN_LINE + 1] == "é".encode()  # across the cut
    pieces = [raw[i : i + slurm.SRUN_LINE] for i in range(0, len(raw), slurm.SRUN_LINE)]
    out = b"0: @rocm-vllm-node g0001\n" + b"".join(b"0: " + p + b"\n" for p in pieces)
    (report,) = slurm.parse_output(out.decode("utf-8", "surrogateescape"), "", ["g0001"])
    assert report.status == "ok", report.reason


def test_gres_as_sinfo_writes_it() -> None:
    """sinfo %G: the GPUs a node's gres declares (typed, with socket lists, beside other gres);
    0 for none; None for what is not read."""
    gres = slurm._gres_gpus
    assert gres("gpu:4") == 4
    assert gres("gpu:mi300x:8(S:0-1)") == 8
    assert gres("gpu:mi300x:4(S:0,2),gpu:mi210:2(S:1),nic:2") == 6
    assert gres("(null)") == 0 and gres("nic:2") == 0
    assert gres("gpu:lots") is None


def _planned(names: list[str]) -> tuple[Matrix, FleetPlan]:
    from resolver.data import matrix
    from resolver.fleet.plan import plan_fleet
    from resolver.fleet.reports import report_from_json
    from resolver.solve import Request

    m = matrix.load()
    reports = [report_from_json(REPORT, name=n, source=f"srun:{n}") for n in names]
    return m, plan_fleet(m, reports, Request())


def test_jobs_follow_what_slurm_said_of_the_nodes() -> None:
    """Issue 40, without a cluster: one group of 7 MI300X nodes; g[1-4] in `gpu` (MaxNodes=2,
    gres 8), g5 in `gpu` without gres, g[6-7] only in `other` (MaxTime 1 hour). Jobs: gpu's
    nodes in twos, g5 alone without --gpus-per-node, g[6-7] in `other` within its MaxTime; the
    servers are per-node steps, never one all-or-nothing step."""
    from resolver.fleet.artifacts import Options, render_all
    from resolver.fleet.layout import PartitionLimits, SlurmLayout

    names = [f"g{i}" for i in range(1, 8)]
    layout = SlurmLayout(
        member_of={n: ("gpu",) for n in names[:5]} | {n: ("other",) for n in names[5:]},
        limits={"gpu": PartitionLimits(2, None), "other": PartitionLimits(None, 60)},
        gpus={n: 8 for n in names[:4]} | {"g5": 0} | {n: 8 for n in names[5:]},
    )
    m, fleet = _planned(names)
    files = render_all(m, fleet, Options(slurm=layout))
    scripts = {k: v for k, v in files.items() if k.startswith("slurm/")}

    def option(text: str, key: str) -> str | None:
        found = [
            ln.split("=", 1)[1] for ln in text.splitlines() if ln.startswith(f"#SBATCH --{key}=")
        ]
        return found[0] if found else None

    jobs = {
        option(t, "nodelist"): (
            option(t, "partition"),
            option(t, "gpus-per-node"),
            option(t, "time"),
        )
        for t in scripts.values()
    }
    assert jobs == {
        "g[1-2]": ("gpu", "8", "04:00:00"),
        "g[3-4]": ("gpu", "8", "04:00:00"),
        "g5": ("gpu", None, "04:00:00"),
        "g[6-7]": ("other", "8", "01:00:00"),
    }
    assert sorted(scripts) == [f"slurm/g1-{i}.sbatch" for i in range(1, 5)]
    for text in scripts.values():
        assert "--kill-on-bad-exit=1" not in text and "#SBATCH --no-kill" in text
    # Without what Slurm said (a plan from report files): one job, as before.
    plain = render_all(m, fleet, Options())
    assert [k for k in plain if k.startswith("slurm/")] == ["slurm/g1.sbatch"]


def test_a_saved_layout_is_checked_as_sinfo_was() -> None:
    """The `slurm` of a `fleet gather` summary is a file anyone may have edited: a name that is
    not a partition or host name refuses the whole layout; a number that is not a count is
    unknown."""
    from resolver.fleet.layout import SlurmLayout, layout_from_json, layout_json

    good = {
        "partitions": {"gpu": {"max_nodes": 2, "max_minutes": 60}},
        "nodes": {"n1": {"partitions": ["gpu"], "gpus": 8}},
    }
    layout = layout_from_json(good, max_minutes=10_000)
    assert isinstance(layout, SlurmLayout) and layout.gpus == {"n1": 8}
    assert layout_json(layout) == good
    bad: object
    for bad in (
        {**good, "partitions": {"gpu\n#SBATCH --wrap=x": {}}},
        {**good, "nodes": {"../n1": {"partitions": ["gpu"]}}},
        {**good, "nodes": {"n1": {"partitions": ["elsewhere"]}}},
        {**good, "nodes": {"n1": {"partitions": "gpu"}}},
        [],
    ):
        assert layout_from_json(bad, max_minutes=10_000) is None, bad
    odd = layout_from_json(
        {
            "partitions": {"gpu": {"max_nodes": True, "max_minutes": 10**12}},
            "nodes": {"n1": {"partitions": ["gpu"], "gpus": "8; rm -rf /"}},
        },
        max_minutes=10_000,
    )
    assert odd is not None and odd.gpus == {} and odd.limits["gpu"].max_nodes is None
    assert odd.limits["gpu"].max_minutes is None


def test_sinfo_states_features_reasons_and_reservations_are_read() -> None:
    """Issue 40: sinfo's partition availability (%a), features (%f) and down/drain reason (%E,
    last: an admin's free text may hold "|"), bounded and escaped; scontrol's active
    reservations by node."""
    text = "\n".join(
        [
            "n1|gpu*|idle|1-infinite|10:00|gpu:mi300x:8|up|mi300x,ib|none",
            "n2|gpu*|drain|1-infinite|10:00|gpu:mi300x:8|up|(null)|bad HBM | x\x1b[31m",
            "n3|wide|idle|1-2|30:00|(null)|down|mi210,bad feat|none",
            "n4|wide|down*|1-2|30:00|(null)|down|(null)|" + "y" * 500,
        ]
    )
    got = slurm._read_sinfo(text)
    assert got.down == {"wide": "down"}
    assert got.features == {"n1": ("mi300x", "ib"), "n2": (), "n3": ("mi210",), "n4": ()}
    assert got.reasons["n2"].startswith("'bad HBM | x\\x1b") and "\x1b" not in got.reasons["n2"]
    assert len(got.reasons["n4"]) <= slurm.REASON_LIMIT + 3 and "n1" not in got.reasons
    resv = (
        "ReservationName=teamx StartTime=now Nodes=n[1-2] NodeCnt=2 Users=alice State=ACTIVE\n"
        "ReservationName=later Nodes=n3 State=INACTIVE\n"
        "ReservationName=bad;name Nodes=n4 State=ACTIVE\n"
    )
    assert slurm.read_reservations(resv) == {"n1": "teamx", "n2": "teamx"}


def test_a_group_gets_the_constraint_only_where_its_nodes_have_it() -> None:
    """Issue 40: --constraint replaces a group's node list only where every node of the group
    has the features (sinfo %f); else the node list, with a comment saying why; a reserved
    node's job names its reservation."""
    from resolver.fleet.artifacts import Options, render_all
    from resolver.fleet.layout import PartitionLimits, SlurmLayout, layout_from_json, layout_json

    names = ["g1", "g2", "g3"]
    m, fleet = _planned(names)

    def layout(features: dict[str, tuple[str, ...]], reserved: dict[str, str]) -> SlurmLayout:
        return SlurmLayout(
            member_of=dict.fromkeys(names, ("gpu",)),
            limits={"gpu": PartitionLimits()},
            gpus=dict.fromkeys(names, 8),
            features=features,
            reserved=reserved,
        )

    every = layout(dict.fromkeys(names, ("mi300x", "ib")), {})
    (script,) = [
        v
        for k, v in render_all(m, fleet, Options(constraint="mi300x&ib", slurm=every)).items()
        if k.startswith("slurm/")
    ]
    assert "#SBATCH --constraint=mi300x&ib\n#SBATCH --nodes=3\n" in script
    assert "#SBATCH --nodelist" not in script
    some = layout({"g1": ("mi300x",), "g2": ("mi300x",), "g3": ()}, {"g3": "teamx"})
    scripts = [
        v
        for k, v in render_all(m, fleet, Options(constraint="mi300x", slurm=some)).items()
        if k.startswith("slurm/")
    ]
    assert all("#SBATCH --constraint" not in s for s in scripts)
    assert all("# --constraint mi300x: g3 lacks it" in s for s in scripts)
    reserved = [s for s in scripts if "#SBATCH --nodelist=g3\n" in s]
    assert len(reserved) == 1 and "#SBATCH --reservation=teamx\n" in reserved[0]
    assert sum("--reservation" in s for s in scripts) == 1
    # What a `fleet gather` summary saves is read back the same; a feature not plain refuses it.
    saved = layout_json(some)
    assert layout_from_json(saved, max_minutes=10_000) == some
    saved["nodes"]["g1"]["features"] = ["mi300x\n#SBATCH --wrap=x"]
    assert layout_from_json(saved, max_minutes=10_000) is None
