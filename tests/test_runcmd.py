"""The run command in docker, podman and compose forms, against golden files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from resolver.artifacts.runcmd import FORMATS, RunSpec, render
from resolver.util.errors import ResolverError

GOLDEN = Path(__file__).parent / "golden" / "runcmd"
HOME = "/home/user"
DIGEST = "sha256:" + "0123456789abcdef" * 4

CASES = {
    # gfx942 x8 on the official image, pinned: vllm serve is the entrypoint.
    "official-mi300x-x8": RunSpec(
        image=f"vllm/vllm-openai-rocm:v0.24.0@{DIGEST}",
        entrypoint="vllm-serve",
        model="meta-llama/Llama-3.1-8B-Instruct",
        env=(("VLLM_ROCM_USE_AITER", "1"),),
        tensor_parallel=8,
    ),
    # AMD's image starts a shell: --entrypoint vllm, then `serve ...` after the image.
    "amd-shell-entrypoint": RunSpec(
        image="rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909",
        entrypoint="shell",
        model="Qwen/Qwen3-8B",
        env=(("VLLM_ROCM_USE_AITER", "1"),),
    ),
    # Chosen GPUs, a non-default port, a render group, a mirror, and no model.
    "mirror-devices-render": RunSpec(
        image=f"127.0.0.1:5000/vllm/vllm-openai-rocm:v0.24.0@{DIGEST}",
        entrypoint="vllm-serve",
        port=9000,
        devices=(2, 3),
        tensor_parallel=2,
        render_gid=109,
        hf_cache="/data/hf",
        # Never emitted: device selection is HIP_VISIBLE_DEVICES only.
        env=(("ROCR_VISIBLE_DEVICES", "0"), ("CUDA_VISIBLE_DEVICES", "1")),
    ),
}


def _text(case: str, fmt: str) -> str:
    r = render(CASES[case], fmt, home=HOME)  # type: ignore[arg-type]
    if r.file_text is not None:
        return r.file_text + f"# then: {r.command}\n"
    return r.command + "\n\n" + "\n".join(r.args) + "\n"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str, fmt: str) -> None:
    path = GOLDEN / f"{case}.{fmt}.txt"
    got = _text(case, fmt)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(got)
    assert got == path.read_text(), (
        f"regenerate with UPDATE_GOLDEN=1 after checking the diff ({path.name})"
    )


def test_official_image_gets_model_after_image() -> None:
    args = render(CASES["official-mi300x-x8"], "docker", home=HOME).args
    image_at = args.index(CASES["official-mi300x-x8"].image)
    # positional, the first word the image's `vllm serve` entrypoint reads
    assert args[image_at + 1] == "meta-llama/Llama-3.1-8B-Instruct"
    assert "--model" not in args
    assert "--entrypoint" not in args


def test_shell_image_overrides_entrypoint_and_runs_serve() -> None:
    args = render(CASES["amd-shell-entrypoint"], "docker", home=HOME).args
    i = args.index("--entrypoint")
    assert args[i + 1 : i + 6] == (
        "vllm",
        "rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909",
        "serve",
        "Qwen/Qwen3-8B",
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_model_is_positional_in_every_form(fmt: str) -> None:
    """vLLM v0.6.0-v0.11.0 refuse `vllm serve --model X` at argument parsing (vLLM #7347), and
    every release takes `vllm serve X`: no form passes --model."""
    for spec in CASES.values():
        r = render(spec, fmt, home=HOME)  # type: ignore[arg-type]
        assert "--model" not in r.args
        assert "--model" not in (r.file_text or "")
    compose = render(CASES["amd-shell-entrypoint"], "compose", home=HOME).file_text or ""
    assert 'command: ["serve", "Qwen/Qwen3-8B"]' in compose


def test_nvidia_image_runs_vllm_serve_itself() -> None:
    """vllm/vllm-openai up to v0.11.0 starts the API server module, which parses a positional
    model and serves its default one: the run names `vllm serve` for every NVIDIA image."""
    spec = RunSpec(
        image="vllm/vllm-openai:v0.10.1",
        entrypoint="vllm-serve",
        model="Qwen/Qwen3-8B",
        vendor="nvidia",
    )
    args = render(spec, "docker", home=HOME).args
    i = args.index("--entrypoint")
    assert args[i + 1 : i + 5] == ("vllm", "vllm/vllm-openai:v0.10.1", "serve", "Qwen/Qwen3-8B")
    compose = render(spec, "compose", home=HOME).file_text or ""
    assert 'entrypoint: ["vllm"]' in compose
    assert 'command: ["serve", "Qwen/Qwen3-8B"]' in compose


def test_hip_visible_devices_only() -> None:
    args = render(CASES["mirror-devices-render"], "docker", home=HOME).args
    assert "HIP_VISIBLE_DEVICES=2,3" in args
    assert not any(a.startswith(("ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")) for a in args)


def test_podman_keep_groups_alone_and_qualified_name() -> None:
    r = render(CASES["mirror-devices-render"], "podman", home=HOME)
    groups = [r.args[i + 1] for i, a in enumerate(r.args) if a == "--group-add"]
    assert groups == ["keep-groups"]
    official = render(CASES["official-mi300x-x8"], "podman", home=HOME).args
    assert f"docker.io/vllm/vllm-openai-rocm:v0.24.0@{DIGEST}" in official


def test_home_expanded_in_args_but_not_in_shell_line() -> None:
    r = render(CASES["official-mi300x-x8"], "docker", home=HOME)
    assert f"{HOME}/.cache/huggingface:/root/.cache/huggingface" in r.args
    assert " ~/.cache/huggingface:/root/.cache/huggingface " in r.command


@pytest.mark.parametrize(
    "bad",
    [
        {"model": "x; rm -rf /"},
        {"model": "$(id)"},
        {"port": 0},
        {"port": 70000},
        {"hf_cache": "relative/path"},
        {"hf_cache": "~/a b"},
        {"env": (("lower", "1"),)},
        {"env": (("VLLM_X", "a b"),)},
    ],
)
def test_unsafe_values_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ResolverError):
        RunSpec(image="vllm/vllm-openai-rocm:v0.24.0", entrypoint="vllm-serve", **bad)  # type: ignore[arg-type]


def test_unknown_format() -> None:
    with pytest.raises(ResolverError):
        render(CASES["official-mi300x-x8"], "k8s")  # type: ignore[arg-type]


def test_no_image_of_the_data_gets_model_as_an_option() -> None:
    """Issue 40: for every image the shipped data can plan, what `vllm serve` receives in every
    form starts with the model, positionally, and never has --model; the releases that refuse
    --model (read from their sdists) are among them, and every release read takes the model
    positionally, which is what makes one form safe for all."""
    from resolver.artifacts import apptainer
    from resolver.artifacts.runcmd import names_serve
    from resolver.data import matrix

    from .conftest import LIVE_MATRIX

    m = matrix.load_dir(LIVE_MATRIX)  # the shipped data: the frozen copy predates the fields
    read = [r for r in m.vllm if r.serve_model_tag is not None]
    assert read and all(r.serve_source.startswith(f"vllm {r.version} sdist sha256:") for r in read)
    refusing = {r.version for r in m.vllm if r.serve_model_option == "refused"}
    assert {str(v) for v in refusing} >= {"0.6.4", "0.10.1", "0.10.2", "0.11.0"}
    images = list(m.images)
    assert any(i.vllm in refusing for i in images)  # AMD's rocm/vllm images of 0.6.4-0.10.2
    model = "Qwen/Qwen3-8B"
    for image in images:
        spec = RunSpec(
            image=image.ref, entrypoint=image.entrypoint, model=model, vendor=image.vendor
        )
        for fmt in ("docker", "podman"):
            args = list(render(spec, fmt, home=HOME).args)  # type: ignore[arg-type]
            at = next(i for i, a in enumerate(args) if a.endswith(image.ref))
            # what the container's `vllm serve` gets: named by the run, or the image's own
            argv = args[at + 1 :] if names_serve(spec) else ["serve", *args[at + 1 :]]
            assert argv[:2] == ["serve", model] and "--model" not in argv, (image.ref, fmt)
        words = apptainer.words(spec)
        at = words.index("vllm")
        assert words[at + 1 : at + 3] == ["serve", model] and "--model" not in words


def test_image_without_model_says_when_the_release_requires_one() -> None:
    """Up to v0.8.2 `vllm serve` requires its positional model (serve_model_tag): without
    --model, `image` says the printed command needs one instead of promising a default model."""
    from .conftest import LIVE_MATRIX
    from .helpers import run_cli

    env = {"ROCM_VLLM_MATRIX_DIR": str(LIVE_MATRIX)}
    node = ("image", "--gfx", "gfx942", "--gpus", "8", "--driver", "6.3.6")
    old = run_cli(*node, "--vllm", "<0.8", env=env)
    assert old.exit_code == 0, old.stderr
    assert "vllm0.7.3" in old.stdout
    assert "`vllm serve` requires the model" in old.stderr
    given = run_cli(*node, "--vllm", "<0.8", "--model", "org/m", env=env)
    assert "no --model given" not in given.stderr
    assert given.stdout.split(" serve ", 1)[1].startswith("org/m")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_local_model_is_mounted_read_only_where_it_is_served(fmt: str) -> None:
    """An absolute model path (a local model: hfmodel.served_model) is mounted at that path in
    every form; a Hugging Face id is read from the mounted cache and mounts nothing else."""
    local = RunSpec(image="vllm/vllm-openai-rocm:v0.33.0", entrypoint="vllm-serve", model="/m/x")
    text = " ".join(render(local, fmt, home=HOME).args) + (
        render(local, fmt, home=HOME).file_text or ""
    )
    assert "/m/x:/m/x:ro" in text
    hub = RunSpec(image="vllm/vllm-openai-rocm:v0.33.0", entrypoint="vllm-serve", model="org/x")
    assert ":ro" not in " ".join(render(hub, fmt, home=HOME).args)
