"""Apptainer / Singularity output checked against Apptainer's documented syntax (Apptainer itself
is not installable here): the definition-file grammar of the user guide ("Definition Files":
a header of ``Keyword: value`` lines starting with ``Bootstrap``, then ``%section`` blocks) and the
``apptainer exec [exec options...] <container> <command>`` usage with the options' arities."""

from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest

from resolver.artifacts.apptainer import definition, oci_ref, run_command
from resolver.artifacts.runcmd import RunSpec
from tests.helpers import run_cli, said

# Header keywords and bootstrap agents from the user guide; the agents that pull OCI images need
# From.
BOOTSTRAP_AGENTS = {
    "library",
    "docker",
    "shub",
    "oras",
    "localimage",
    "yum",
    "dnf",
    "zypper",
    "debootstrap",
    "arch",
    "busybox",
    "scratch",
    "docker-daemon",
    "docker-archive",
    "oci",
    "oci-archive",
}
HEADER_KEYWORDS = {
    "Bootstrap",
    "From",
    "Stage",
    "Registry",
    "Namespace",
    "Include",
    "MirrorURL",
    "OSVersion",
    "Fingerprints",
}
SECTIONS = {
    "setup",
    "files",
    "environment",
    "post",
    "runscript",
    "startscript",
    "test",
    "labels",
    "help",
    "arguments",
}
# `apptainer exec` options used here and their number of values (apptainer exec --help).
EXEC_OPTIONS = {
    "--bind": 1,
    "-B": 1,
    "--env": 1,
    "--env-file": 1,
    "--writable-tmpfs": 0,
    "--cleanenv": 0,
    "-e": 0,
    "--contain": 0,
    "--rocm": 0,
    "--home": 1,
    "--pwd": 1,
}
# The distribution reference grammar (distribution/reference): name[:tag][@digest].
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
REFERENCE = re.compile(
    rf"^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?(?:@sha256:[0-9a-f]{{64}})?$"
)


def parse_definition(text: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    header: dict[str, str] = {}
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("%"):
            name = line[1:].split()[0]
            assert name in SECTIONS, f"line {number}: unknown section %{name}"
            assert name not in sections, f"line {number}: %{name} twice"
            current = name
            sections[name] = []
        elif current is not None:
            sections[current].append(line)
        elif line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition(":")
            assert sep and key in HEADER_KEYWORDS, f"line {number}: not a header keyword: {line!r}"
            assert value.strip(), f"line {number}: {key} without a value"
            if not header:
                assert key == "Bootstrap", "the header must start with Bootstrap"
            header[key] = value.strip()
    assert header.get("Bootstrap") in BOOTSTRAP_AGENTS
    if header["Bootstrap"] in ("docker", "oras", "library", "shub"):
        assert "From" in header
    return header, sections


def parse_exec(words: list[str]) -> tuple[dict[str, list[str]], str, list[str]]:
    assert words[0] in ("apptainer", "singularity")
    assert words[1] == "exec"
    options: dict[str, list[str]] = {}
    i = 2
    while words[i].startswith("-"):
        name = words[i]
        assert name in EXEC_OPTIONS, f"unknown exec option {name}"
        arity = EXEC_OPTIONS[name]
        options.setdefault(name, []).extend(words[i + 1 : i + 1 + arity])
        i += 1 + arity
    return options, words[i], words[i + 1 :]


def _spec(**changes: object) -> RunSpec:
    base: dict[str, object] = {
        "image": "vllm/vllm-openai-rocm:v0.24.0@sha256:" + "ab" * 32,
        "entrypoint": "vllm-serve",
        "model": "Qwen/Qwen3-8B",
        "env": (("VLLM_ROCM_USE_AITER", "1"),),
        "tensor_parallel": 8,
    }
    base.update(changes)
    return RunSpec(**base)  # type: ignore[arg-type]


def test_definition_follows_the_grammar() -> None:
    text = definition(_spec(), labels={"org.rocm-vllm.vllm": "0.24.0"})
    header, sections = parse_definition(text)
    assert header == {"Bootstrap": "docker", "From": "vllm/vllm-openai-rocm@sha256:" + "ab" * 32}
    assert REFERENCE.match(header["From"])
    assert set(sections) == {"labels", "environment", "runscript", "help"}
    for line in sections["labels"]:
        if line.strip():
            key, value = line.split(None, 1)
            assert key and value
    env = "\n".join(sections["environment"])
    assert "export VLLM_ROCM_USE_AITER=1" in env and "export HF_HOME=/hf-cache" in env
    for section in ("environment", "runscript"):
        assert (
            subprocess.run(
                ["sh", "-n"], input="\n".join(sections[section]), text=True, check=False
            ).returncode
            == 0
        )
    assert (
        sections["runscript"][0].strip()
        == 'exec vllm serve Qwen/Qwen3-8B --tensor-parallel-size 8 --port 8000 "$@"'
    )


def test_exec_command_follows_the_usage() -> None:
    run = run_command(_spec(devices=(0, 1)), home="/home/u")
    assert shlex.split(run.command.replace("~/", "/home/u/")) == list(run.args)
    options, container, command = parse_exec(list(run.args))
    assert options["--bind"] == ["/home/u/.cache/huggingface:/hf-cache"]
    assert options["--env"] == [
        "HF_HOME=/hf-cache",
        "HIP_VISIBLE_DEVICES=0,1",
        "VLLM_ROCM_USE_AITER=1",
    ]
    assert (
        "--writable-tmpfs" in options and "--rocm" not in options
    )  # the image's own ROCm, not the host's
    assert container.startswith("docker://") and REFERENCE.match(
        container.removeprefix("docker://")
    )
    assert command[:2] == ["vllm", "serve"]


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("vllm/vllm-openai-rocm:v0.24.0", "vllm/vllm-openai-rocm:v0.24.0"),
        (
            "rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909@sha256:" + "cd" * 32,
            "rocm/vllm@sha256:" + "cd" * 32,
        ),
        (
            "127.0.0.1:5000/vllm/vllm-openai-rocm:v1@sha256:" + "ef" * 32,
            "127.0.0.1:5000/vllm/vllm-openai-rocm@sha256:" + "ef" * 32,
        ),
    ],
)
def test_oci_ref_keeps_one_of_tag_and_digest(ref: str, expected: str) -> None:
    assert oci_ref(ref) == expected
    assert REFERENCE.match(expected)


def test_image_format_apptainer() -> None:
    result = run_cli(
        "image",
        "--example",
        "mi300x-8",
        "--format",
        "apptainer",
        "--model",
        "Qwen/Qwen3-8B",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["format"] == "apptainer"
    _options, container, command = parse_exec(data["run_args"])
    assert container == "docker://" + data["image"]
    assert command[:3] == ["vllm", "serve", "Qwen/Qwen3-8B"]  # positional (vLLM #7347)
    assert "--model" not in command
    header, _sections = parse_definition(data["definition"])
    assert header["From"] == data["image"]
    text = run_cli("image", "--example", "mi300x-8", "--format", "apptainer")
    # stdout is exactly the .def file (`> vllm.def` works); the exec command is commentary on
    # stderr.
    assert (
        text.stdout.startswith("Bootstrap: docker\n")
        and parse_definition(text.stdout)[0]["From"] == data["image"]
    )
    assert "or straight from the registry: apptainer exec" in text.stderr


def test_image_format_unknown() -> None:
    result = run_cli("image", "--example", "mi300x-8", "--format", "lxc")
    assert result.exit_code == 2
    assert (
        result.stderr.splitlines()[1] == "hint: use --format docker, podman, compose or apptainer"
    )


def test_the_follow_up_carries_the_flags_the_definition_needs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """issue 19: "then: apptainer build vllm.sif vllm.def && apptainer run vllm.sif" dropped
    --writable-tmpfs and the cache bind that HF_HOME in the image points at, and named vllm.def
    whatever -o said."""
    out = tmp_path / "serve.def"
    run = run_cli("image", "--example", "mi300x-8", "--format", "apptainer", "-o", str(out))
    assert run.exit_code == 0, run.stderr
    then = [line for line in run.stderr.splitlines() if line.startswith("then: ")]
    assert then[0] == f"then: Build: apptainer build vllm.sif {out}"
    assert "--writable-tmpfs" in then[1] and '"$HOME"/.cache/huggingface:/hf-cache' in then[1]
    assert then[1].removeprefix("then: Serve: ") in out.read_text()  # the %help says the same
    words = shlex.split(then[1].removeprefix("then: Serve: "), posix=True)
    assert words[:3] == ["apptainer", "run", "--writable-tmpfs"]


def test_cpx_hint_gives_ports_that_exist() -> None:
    from resolver.artifacts.parallel import place
    from resolver.data.node import Gpu, Node, Partition

    gpus = tuple(
        Gpu(gfx="gfx942", partition=Partition(compute="CPX", memory="NPS4")) for _ in range(64)
    )
    node = Node(gpus=gpus, gfx_targets=("gfx942",), physical_gpu_count=8, logical_gpu_count=64)
    placed = place(node, devices=None, model=None, hf_cache="~/.cache/huggingface")
    (w,) = [w for w in placed.warnings if w.code == "cpx-one-replica-per-partition"]
    # A shell line the user copies: the printed promise itself, so checked through its words.
    assert "800N" not in said(w.hint) and "$((8000 + N))" in said(w.hint)


def test_a_local_model_is_bound_where_it_is_served() -> None:
    """Apptainer binds a local model's directory at the path `vllm serve` is given."""
    from resolver.artifacts.apptainer import follow_up, words

    spec = RunSpec(image="vllm/vllm-openai-rocm:v0.33.0", entrypoint="vllm-serve", model="/m/x")
    w = words(spec)
    assert w[w.index("/m/x:/m/x:ro") - 1] == "--bind"
    assert "--bind /m/x:/m/x:ro" in follow_up(spec)[1]
