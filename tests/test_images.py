"""`rocm-vllm image` end to end: choice (offline), digest pinning against the loopback registry,
pull with verification, smoke test, failure paths, and the entrypoint handling under real docker."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version
from typer.testing import CliRunner

from resolver.artifacts import images
from resolver.artifacts.registry import DigestCache
from resolver.artifacts.runcmd import render
from resolver.cli import app
from resolver.data import matrix
from resolver.util.versions import driver_series

MI300X_X8 = ["--gfx", "gfx942", "--gpus", "8"]


def cli(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(
        app, ["image", *args], env={"NO_COLOR": "1", "ROCM_VLLM_REGISTRY": "", **(env or {})}
    )


def cli_json(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    result = cli(*args, "--json", env=env)
    return result.exit_code, json.loads(result.stdout)


# --- offline choice -------------------------------------------------------------------------------


def test_mi300x_on_current_driver_gets_the_official_image() -> None:
    code, out = cli_json(*MI300X_X8, "--driver", "30.30.3")
    assert code == 0
    assert out["image"].startswith("vllm/vllm-openai-rocm:v")
    assert out["official"] is True
    assert out["digest"] is None
    args = out["run_args"]
    assert args[:2] == ["docker", "run"]
    for flag in (
        "/dev/kfd",
        "/dev/dri",
        "video",
        "--ipc=host",
        "--cap-add=SYS_PTRACE",
        "seccomp=unconfined",
        "HF_TOKEN",
    ):
        assert flag in args
    assert "VLLM_ROCM_USE_AITER=1" in args  # matrix/gfx.toml env for gfx942
    assert args[args.index(out["image"]) + 1 :] == ["--tensor-parallel-size", "8"]
    assert out["run_command"].startswith("docker run ")
    assert out["rejected"] and all(r["reasons"] for r in out["rejected"])


def test_old_driver_gets_an_image_whose_rocm_it_can_run() -> None:
    code, out = cli_json(*MI300X_X8, "--driver", "6.1.0")
    assert code == 0
    m = matrix.load()
    series = m.driver(driver_series("6.1.0"))
    assert series is not None
    assert series.runs(Version(out["rocm"]))
    assert out["entrypoint"] == "shell"
    args = out["run_args"]
    i = args.index("--entrypoint")
    assert args[i + 1 : i + 4] == ["vllm", out["image"], "serve"]
    # Every official image whose ROCm is known was turned down for the driver.
    rejected_official = [
        r
        for r in out["rejected"]
        if r["image"].startswith("vllm/vllm-openai-rocm") and r["candidate"]["rocm"] is not None
    ]
    assert rejected_official
    assert all(any(x["code"] == "driver-window" for x in r["reasons"]) for r in rejected_official)


def test_text_output_prints_the_run_command() -> None:
    result = cli(*MI300X_X8, "--driver", "30.30.3", "--model", "Qwen/Qwen3-8B")
    assert result.exit_code == 0
    assert result.stderr.splitlines()[0].startswith("image: vllm/vllm-openai-rocm:v")
    assert result.stdout.count("\n") == 1
    assert result.stdout.rstrip().endswith(" Qwen/Qwen3-8B --tensor-parallel-size 8")
    assert "--model" not in result.stdout  # positional: v0.6.0-v0.11.0 refuse --model


# --- what a user redirects is exactly the artifact (issue 11.11) ---------------------------------


def test_compose_on_stdout_is_valid_yaml_and_nothing_else() -> None:
    import yaml

    result = cli(*MI300X_X8, "--driver", "30.30.3", "--format", "compose", "--model", "org/m")
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(result.stdout)
    service = doc["services"]["vllm"]
    assert service["image"].startswith("vllm/vllm-openai-rocm:v")
    assert service["command"] == ["org/m", "--tensor-parallel-size", "8"]
    assert "/dev/kfd" in service["devices"]
    assert "image: vllm/vllm-openai-rocm" in result.stderr  # the commentary is still there
    assert "then: docker compose -f compose.yaml up -d" in result.stderr


@pytest.mark.parametrize("fmt", ["docker", "podman"])
def test_run_command_on_stdout_is_one_runnable_shell_line(fmt: str) -> None:
    import shlex

    result = cli(*MI300X_X8, "--driver", "30.30.3", "--format", fmt, "--model", "org/m")
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1
    words = shlex.split(result.stdout)
    _, out = cli_json(*MI300X_X8, "--driver", "30.30.3", "--format", fmt, "--model", "org/m")
    home = str(Path.home())
    assert [home + w[1:] if w.startswith("~/") else w for w in words] == out["run_args"]
    assert words[:2] == [fmt, "run"]


@pytest.mark.parametrize(("fmt", "name"), [("compose", "my-compose.yaml"), ("docker", "run.sh")])
def test_output_file_is_written_atomically_and_stdout_stays_empty(
    fmt: str, name: str, tmp_path: Path
) -> None:
    target = tmp_path / name
    target.write_text("old content\n")
    result = cli(*MI300X_X8, "--driver", "30.30.3", "--format", fmt, "-o", str(target))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert (
        f"wrote the {'compose file' if fmt == 'compose' else 'run command'} to {target}"
        in result.stderr
    )
    _, out = cli_json(*MI300X_X8, "--driver", "30.30.3", "--format", fmt, "-o", str(tmp_path / "j"))
    assert out["output"] == str(tmp_path / "j")
    if fmt == "compose":
        import yaml

        assert yaml.safe_load(target.read_text())["services"]["vllm"]
        # the follow-up names the file where -o put it, as given
        assert f"docker compose -f {target} up -d" in result.stderr
    else:
        assert target.read_text() == out["run_command"] + "\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_commentary_fits_the_terminal_and_commands_stay_whole() -> None:
    """Issue 19: image's stderr ignored the terminal width (200-column lines at COLUMNS=60).
    Prose wraps; the image reference and the follow-up command are never split."""
    result = cli(*MI300X_X8, "--driver", "30.30.3", "--format", "compose", env={"COLUMNS": "60"})
    assert result.exit_code == 0
    lines = result.stderr.splitlines()
    long = [line for line in lines if len(line) > 60]
    assert all(line.startswith(("image: ", "then: ")) for line in long), long
    assert any(line.startswith("then: docker compose -f compose.yaml up -d") for line in lines)


def test_compose_redirected_to_a_file_names_that_file(tmp_path: Path) -> None:
    """Issue 19: `image --format compose > vllm.yaml` said `docker compose -f compose.yaml up`;
    the follow-up names the file stdout went to (relative to the working directory)."""
    import subprocess
    import sys

    with (tmp_path / "vllm.yaml").open("w") as stdout:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "resolver",
                "image",
                "--example",
                "mi300x-8",
                "--format",
                "compose",
            ],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]), "NO_COLOR": "1"},
            check=False,
        )
    assert run.returncode == 0, run.stderr
    assert "then: docker compose -f vllm.yaml up -d" in run.stderr
    assert "services" in (tmp_path / "vllm.yaml").read_text()


def test_output_into_a_missing_directory_is_bad_input(tmp_path: Path) -> None:
    result = cli(*MI300X_X8, "--driver", "30.30.3", "-o", str(tmp_path / "no" / "run.sh"))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: cannot write ")


def test_a_bad_lock_leaves_the_output_unwritten(tmp_path: Path) -> None:
    """issue 35: `image -o FILE --lock BAD` exited 2 with FILE written; both are checked first."""
    target, bad = tmp_path / "run.sh", tmp_path / "no" / "bom.json"
    result = cli(*MI300X_X8, "--driver", "30.30.3", "-o", str(target), "--lock", str(bad))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"error: cannot write {bad}")
    assert list(tmp_path.iterdir()) == []
    into_dir = cli(*MI300X_X8, "--driver", "30.30.3", "-o", str(target), "--lock", str(tmp_path))
    assert into_dir.exit_code == 2 and list(tmp_path.iterdir()) == []


def _failed_check_hands_over_nothing(
    args: list[str], tmp_path: Path, env: dict[str, str], problem: str
) -> dict[str, Any]:
    """issue 34: a check that fails (exit 1) prints no run command, writes no -o or --lock (an
    existing file is left as it was), and says why; --json keeps what was found, with nothing
    runnable in it. Returns that JSON document."""
    out_dir, data = tmp_path / "out", tmp_path / "data"
    out_dir.mkdir()
    target, lock = out_dir / "run.sh", out_dir / "bom.json"
    target.write_text("echo the old command\n")
    # Each run with its own data overlay: an audit's record would change the next run's choice.
    env = {**env, "ROCM_VLLM_DATA_DIR": str(data / "1")}
    result = cli(*args, "-o", str(target), "--lock", str(lock), env={**env, "COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert target.read_text() == "echo the old command\n" and not lock.exists()
    assert [p.name for p in out_dir.iterdir()] == ["run.sh"]  # no temp file either
    assert "problem: " in result.stderr and "no run command" in result.stderr
    plain = cli(*args, env={**env, "ROCM_VLLM_DATA_DIR": str(data / "2")})
    assert (plain.exit_code, plain.stdout) == (1, "")
    code, out = cli_json(
        *args, "-o", str(target), env={**env, "ROCM_VLLM_DATA_DIR": str(data / "3")}
    )
    assert code == 1 and out["exit_code"] == 1 and out["verdict"] == "unsupported"
    assert problem in [p["code"] for p in out["problems"]]
    assert out["image"] is not None  # what was found stays
    assert (out["run_command"], out["run_args"], out["compose"], out["output"]) == (None,) * 4
    assert target.read_text() == "echo the old command\n"
    return out


def test_a_failed_audit_hands_over_no_run_command(tmp_path: Path) -> None:
    """`image --audit` that finds the node's gfx missing from the image's GPU code."""
    from . import services
    from .audit.test_audit import tar_bytes
    from .audit.test_audit_drives_check import LIB, bundle_without
    from .audit.test_audit_images import _push
    from .audit.test_bundle import elf_with
    from .conftest import _start

    url, cm = _start(services.registry(storage=tmp_path / "registry"))
    try:
        layer = tar_bytes({LIB: elf_with(bundle_without("gfx1201"))}, compress="gzip")
        media = "application/vnd.oci.image.layer.v1.tar+gzip"
        _push(url, "vllm/vllm-openai-rocm", "v0.24.0", layer, media)
        args = ["--gfx", "gfx1201", "--driver", "30.30.3", "--audit", "--registry", url]
        out = _failed_check_hands_over_nothing(args, tmp_path, {}, "audit-lacks-gfx")
        assert "gfx942" in out["audit"]["arch"] and "gfx1201" not in out["audit"]["arch"]
    finally:
        cm.__exit__(None, None, None)


@pytest.mark.docker
def test_a_failed_smoke_test_hands_over_no_run_command(
    shim_images, docker_url: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """`image --smoke` that finds another vLLM than the data says."""
    args = [*MI300X_X8, "--vllm", "0.23.0", "--registry", shim_images.registry, "--pull", "--smoke"]
    out = _failed_check_hands_over_nothing(
        args, tmp_path, {"DOCKER_HOST": docker_url}, "smoke-vllm-mismatch"
    )
    assert out["smoke"]["found"]["vllm"] is not None


def test_no_image_prints_nothing_on_stdout() -> None:
    result = cli(
        "--gfx", "gfx1030", "--driver", "30.30.3", "--vllm", "<0.28", "--format", "compose"
    )
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("no verified image fits this node")


def test_no_image_for_an_unshipped_gfx() -> None:
    # Bounded below v0.28.0, whose image the frozen data lists without an arch list (that is
    # "unknown").
    code, out = cli_json("--gfx", "gfx1030", "--driver", "30.30.3", "--vllm", "<0.28")
    assert code == 1
    assert out["image"] is None and out["run_command"] is None
    assert out["blockers"]


@pytest.mark.parametrize("fmt", ["podman", "compose"])
def test_formats(fmt: str) -> None:
    code, out = cli_json(*MI300X_X8, "--driver", "30.30.3", "--format", fmt)
    assert code == 0
    if fmt == "podman":
        assert "keep-groups" in out["run_args"]
        assert out["compose"] is None
    else:
        assert out["compose"].startswith("services:\n  vllm:\n")
        assert "docker compose" in out["run_command"]


def test_bad_flags_are_usage_errors() -> None:
    for args in (
        ["--format", "k8s"],
        ["--devices", "0,x"],
        ["--model", "a b"],
        ["--registry", "ftp://m"],
    ):
        result = cli(*MI300X_X8, *args, "--digest")
        assert result.exit_code == 2, args
        assert result.stderr.startswith("error: ")
        assert "hint: " in result.stderr


# --- against the loopback registry and engine -----------------------------------------------------


@pytest.mark.registry
def test_digest_pins_the_tag_to_what_the_registry_serves(shim_images) -> None:  # type: ignore[no-untyped-def]
    code, out = cli_json(
        *MI300X_X8, "--driver", "30.30.3", "--registry", shim_images.registry, "--digest"
    )
    assert code == 0, out
    pushed = shim_images.official
    assert out["image"] == f"{pushed.name}:v0.24.0@{pushed.digest}"
    assert out["digest"] == pushed.digest
    assert out["image"] in out["run_args"]


@pytest.mark.registry
def test_multi_platform_index_is_pinned_to_the_index_digest(shim_images) -> None:  # type: ignore[no-untyped-def]
    code, out = cli_json(
        *MI300X_X8, "--vllm", "0.20.0", "--registry", shim_images.registry, "--digest"
    )
    assert code == 0, out
    assert out["digest"] == shim_images.index.digest
    assert out["digest_source"]["media_type"] == "application/vnd.oci.image.index.v1+json"


@pytest.mark.registry
def test_unknown_tag_is_a_registry_error(shim_images) -> None:  # type: ignore[no-untyped-def]
    result = cli(*MI300X_X8, "--vllm", "0.19.0", "--registry", shim_images.registry, "--digest")
    assert result.exit_code == 4
    assert "v0.19.0 not found" in result.stderr
    assert "hint: " in result.stderr


def test_registry_down_is_a_registry_error() -> None:
    from tests.services import free_port

    result = cli(*MI300X_X8, "--registry", f"http://127.0.0.1:{free_port()}", "--digest")
    assert result.exit_code == 4
    assert "did not answer" in result.stderr


@pytest.mark.docker
def test_pull_and_smoke_verify_the_official_image(shim_images, docker_url: str) -> None:  # type: ignore[no-untyped-def]
    code, out = cli_json(
        *MI300X_X8,
        "--driver",
        "30.30.3",
        "--registry",
        shim_images.registry,
        "--digest",
        "--pull",
        "--smoke",
        env={"DOCKER_HOST": docker_url},
    )
    assert code == 0, out["problems"]
    assert out["pull"]["verified"] is True
    assert (
        f"{shim_images.official.name}@{shim_images.official.digest}" in out["pull"]["repo_digests"]
    )
    assert out["smoke"]["found"]["vllm"] == "0.24.0+rocm723"
    assert (
        out["smoke"]["found"]["hip"] == "7.2.53211"
    )  # no /opt/rocm version file: HIP gives the series
    assert out["problems"] == []


@pytest.mark.docker
def test_text_after_digest_pull_and_smoke_says_what_was_confirmed(
    shim_images, docker_url: str
) -> None:  # type: ignore[no-untyped-def]
    """Issue 19: "pull: verified" names the pinned digest (not the local image id), and once the
    registry pinned the tag and the smoke test matched the data, no note says the image is "not
    confirmed at the registry"."""
    args = [*MI300X_X8, "--driver", "30.30.3", "--registry", shim_images.registry, "--digest"]
    env = {"DOCKER_HOST": docker_url, "COLUMNS": "200"}
    result = cli(*args, "--pull", "--smoke", env=env)
    assert result.exit_code == 0, result.stderr
    digest = shim_images.official.digest
    assert f"pull: verified {shim_images.official.name}:" in result.stderr
    assert f"@{digest}" in result.stderr
    assert "not confirmed at the registry" not in result.stderr
    # Pinned without a smoke test, the note says only what is still unconfirmed.
    pinned = cli(*args, env=env)
    assert "not confirmed at the registry" not in pinned.stderr
    assert "until a smoke test reads it" in pinned.stderr


@pytest.mark.docker
def test_pull_verifies_an_index_digest(shim_images, docker_url: str) -> None:  # type: ignore[no-untyped-def]
    code, out = cli_json(
        *MI300X_X8,
        "--vllm",
        "0.20.0",
        "--registry",
        shim_images.registry,
        "--digest",
        "--pull",
        env={"DOCKER_HOST": docker_url},
    )
    assert code == 0, out["problems"]
    assert out["pull"]["verified"] is True


@pytest.mark.docker
def test_smoke_reports_what_differs_from_the_data(shim_images, docker_url: str) -> None:  # type: ignore[no-untyped-def]
    code, out = cli_json(
        *MI300X_X8,
        "--vllm",
        "0.23.0",
        "--registry",
        shim_images.registry,
        "--pull",
        "--smoke",
        env={"DOCKER_HOST": docker_url},
    )
    assert code == 1
    codes = {p["code"] for p in out["problems"]}
    assert {"smoke-vllm-mismatch", "smoke-torch-mismatch", "smoke-rocm-mismatch"} <= codes
    # issue 19: the verdict says it too, not only the exit status.
    assert out["verdict"] == "unsupported" and out["exit_code"] == 1
    assert out["verdict_before_checks"] in ("supported", "supported_with_warnings")


@pytest.mark.docker
def test_moved_tag_is_a_digest_mismatch(shim_images, engine) -> None:  # type: ignore[no-untyped-def]
    """Pinned to one digest, the tag now pulls another: a problem, not a silent success."""
    name = f"{shim_images.host}/vllm/vllm-openai-rocm"
    report = images.pull_verified(engine, name, "v0.24.0", shim_images.mismatched.digest)
    assert [p.code for p in report.problems] == ["digest-mismatch"]
    assert report.to_json()["verified"] is False


@pytest.mark.registry
def test_digest_asks_the_registry_before_a_stale_cache(shim_images, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cache_dir = tmp_path / "cache"
    key = f"{shim_images.registry}/vllm/vllm-openai-rocm:v0.24.0"
    DigestCache(cache_dir / "digests.json").put(key, shim_images.mismatched.digest, None)
    code, out = cli_json(
        *MI300X_X8,
        "--driver",
        "30.30.3",
        "--registry",
        shim_images.registry,
        "--digest",
        env={"ROCM_VLLM_CACHE_DIR": str(cache_dir)},
    )
    assert code == 0
    assert out["digest"] == shim_images.official.digest
    assert (
        out["digest_source"]["cached"] is False
        and out["digest_source"]["cache_age_seconds"] is None
    )


@pytest.mark.registry
def test_digest_of_a_tag_the_registry_denies_is_an_error_not_the_cache(
    shim_images, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    cache_dir = tmp_path / "cache"
    key = f"{shim_images.registry}/vllm/vllm-openai-rocm:v0.19.0"  # v0.19.0 is not pushed
    DigestCache(cache_dir / "digests.json").put(key, "sha256:" + "e" * 64, None)
    result = cli(
        *MI300X_X8,
        "--vllm",
        "0.19.0",
        "--registry",
        shim_images.registry,
        "--digest",
        env={"ROCM_VLLM_CACHE_DIR": str(cache_dir)},
    )
    assert result.exit_code == 4
    assert "v0.19.0 not found" in result.stderr
    assert "e" * 64 not in result.output and result.stdout == ""


def test_unreachable_registry_pins_from_the_cache_and_says_so(tmp_path: Path) -> None:
    import time

    from tests.services import free_port

    url = f"http://127.0.0.1:{free_port()}"
    cache_dir = tmp_path / "cache"
    cache = DigestCache(cache_dir / "digests.json")
    cache.put(f"{url}/vllm/vllm-openai-rocm:v0.24.0", "sha256:" + "f" * 64, None)
    data = json.loads(cache.path.read_text())
    data[f"{url}/vllm/vllm-openai-rocm:v0.24.0"]["at"] = time.time() - (2 * 3600 + 5 * 60)
    cache.path.write_text(json.dumps(data))
    env = {"ROCM_VLLM_CACHE_DIR": str(cache_dir)}
    args = (*MI300X_X8, "--driver", "30.30.3", "--registry", url, "--digest")
    code, out = cli_json(*args, env=env)
    assert code == 0
    assert out["digest"] == "sha256:" + "f" * 64
    source = out["digest_source"]
    assert source["cached"] is True and 2 * 3600 <= source["cache_age_seconds"] < 2 * 3600 + 600
    assert (
        source["cached_at"].endswith("+00:00")
        and "did not answer" in source["registry_unreachable"]
    )
    assert "digest-from-cache" in [w["code"] for w in out["warnings"]]
    text = cli(*args, env=env)
    assert text.exit_code == 0
    said = " ".join(text.stderr.split())  # prose wraps at the terminal's width (100 in a pipe)
    assert "from the local cache, 2h 5m old; the registry was not reachable" in said
    assert text.stdout.count("\n") == 1 and "@sha256:" + "f" * 64 in text.stdout


def test_engine_down_is_an_engine_error(tmp_path: Path) -> None:
    result = cli(
        *MI300X_X8,
        "--driver",
        "30.30.3",
        "--pull",
        env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"},
    )
    assert result.exit_code == 5
    assert result.stderr.startswith("error: no Docker Engine socket")


@pytest.mark.docker
@pytest.mark.parametrize(("driver", "which"), [("30.30.3", "official"), ("6.1.0", "amd")])
def test_model_reaches_vllm_serve_with_either_entrypoint(
    shim_images, engine, driver: str, which: str
) -> None:  # type: ignore[no-untyped-def]
    """Run what the rendered command runs (entrypoint + arguments after the image) in the real
    stand-in image: the vllm shim must receive `serve M` (positional) both ways."""
    m = matrix.load()
    from resolver.data.node import from_flags

    node = from_flags(gfx="gfx942", gpus=2, driver=driver, os=None, rocm=None, python=None)
    chosen = images.chosen(images.choose_image(m, node, None))
    assert chosen is not None
    pushed = getattr(shim_images, which)
    assert chosen.tag == pushed.tag
    spec = images.run_spec(
        ref=pushed.ref,
        entrypoint=chosen.entrypoint,
        vendor=chosen.vendor,
        env=(),
        node=node,
        model="org/model",
        port=8000,
        devices=None,
        hf_cache="/tmp/hf",
    )
    args = list(render(spec, "docker").args)
    at = args.index(pushed.ref)
    entrypoint = [args[args.index("--entrypoint") + 1]] if "--entrypoint" in args else None
    engine.pull(pushed.ref)
    out = engine.run(pushed.ref, args[at + 1 :], entrypoint=entrypoint)
    assert out.stdout.strip() == "vllm-shim serve org/model --tensor-parallel-size 2"


@pytest.mark.docker
def test_a_built_images_run_command_reaches_vllm_serve(shim_images, engine) -> None:  # type: ignore[no-untyped-def]
    """`rocm-vllm dockerfile`'s run command for the image it builds (ENTRYPOINT vllm serve, as
    the stand-in official image's): run in the real engine, the shim receives `serve M`."""
    from resolver.artifacts.dockerfile import choose
    from resolver.data.node import from_flags

    m = matrix.load()
    node = from_flags(gfx="gfx942", gpus=2, driver="30.30.3", os=None, rocm=None, python=None)
    pushed = shim_images.official
    spec = images.built_image_run(m, node, choose(m, node), pushed.ref, model="org/model")
    args = list(render(spec, "docker").args)
    assert "--entrypoint" not in args
    engine.pull(pushed.ref)
    out = engine.run(pushed.ref, args[args.index(pushed.ref) + 1 :], entrypoint=None)
    assert out.stdout.strip() == "vllm-shim serve org/model --tensor-parallel-size 2"


# --- the smoke stages (issue 25): devices, compute, serve -------------------------------------

# What the smoke script prints on an 8x MI300X node: torch's gcnArchName for each device is the
# HIP deviceQuery's "gfx942:sramecc+:xnack-" (tests/probe/fixtures/hip-devicequery-gfx942-*).
RECORDED_MI300X = {
    "vllm": "0.24.0+rocm723",
    "torch": "2.10.0+git8514f05",
    "rocm": None,
    "hip": "7.2.53211",
    "devices": ["gfx942:sramecc+:xnack-"] * 8,
    "compute": {"max_abs_diff": 6.103515625e-05, "ok": True},
}


def _official() -> Any:
    return next(i for i in matrix.load().images if i.official and "gfx942" in i.arch)


def test_devices_and_compute_pass_on_the_gpus_the_node_and_image_name() -> None:
    stages, problems = images.judge_gpu("ref", RECORDED_MI300X, _official(), ("gfx942",), gpu=True)
    assert problems == []
    assert stages["devices"]["status"] == "passed" and len(stages["devices"]["seen"]) == 8
    assert stages["compute"] == {"status": "passed", "max_abs_diff": 6.103515625e-05}


def test_a_device_of_another_gpu_or_garbage_results_fail_their_stage() -> None:
    other = {**RECORDED_MI300X, "devices": ["gfx90a:sramecc+:xnack-"]}
    stages, problems = images.judge_gpu("ref", other, _official(), ("gfx942",), gpu=True)
    assert stages["devices"]["status"] == "failed"
    assert [p.code for p in problems] == ["smoke-gfx-mismatch"]
    assert problems[0].message.value("seen") == "gfx90a"
    garbage = {**RECORDED_MI300X, "compute": {"max_abs_diff": 1.7e38, "ok": False}}
    stages, problems = images.judge_gpu("ref", garbage, _official(), ("gfx942",), gpu=True)
    assert stages["compute"]["status"] == "failed"
    assert [p.code for p in problems] == ["smoke-compute-wrong"]
    blind = {**RECORDED_MI300X, "devices": [], "gpu_error": "RuntimeError: No HIP GPUs"}
    stages, problems = images.judge_gpu("ref", blind, _official(), ("gfx942",), gpu=True)
    assert [p.code for p in problems] == ["smoke-no-gpu"]
    assert problems[0].message.key == "smoke-no-gpu/error"
    assert "No HIP GPUs" in str(problems[0].message.value("error"))  # the image's own error
    # Without /dev/kfd on this machine nothing was passed in: skipped, not failed.
    stages, problems = images.judge_gpu("ref", blind, _official(), ("gfx942",), gpu=False)
    assert problems == [] and stages["devices"]["status"] == "skipped"


def test_the_serve_stage_says_how_far_vllm_got() -> None:
    ok = {"started": True, "models": ["Qwen/Qwen3-0.6B"], "completion": " world"}
    stage, problems = images.judge_serve("ref", ok, "Qwen/Qwen3-0.6B")
    assert (stage["status"], problems) == ("passed", [])
    dead = {"started": False, "exit_code": 1, "stderr_tail": ["ValueError: no model\x1b[2J"]}
    stage, problems = images.judge_serve("ref", dead, "Qwen/Qwen3-0.6B")
    assert stage["status"] == "failed" and "\x1b" not in stage["why"]
    assert [p.code for p in problems] == ["smoke-serve-failed"]
    assert images.smoke_serve(None, "ref", None, "~")[0]["status"] == "skipped"  # type: ignore[arg-type]


@pytest.mark.docker
def test_smoke_json_says_which_stage_passed(shim_images, docker_url: str) -> None:  # type: ignore[no-untyped-def]
    code, out = cli_json(
        *MI300X_X8,
        "--driver",
        "30.30.3",
        "--registry",
        shim_images.registry,
        "--pull",
        "--smoke-serve",
        "--model",
        "Qwen/Qwen3-0.6B",
        env={"DOCKER_HOST": docker_url},
    )
    assert code == 0, out["problems"]
    stages = out["smoke"]["stages"]
    assert stages["versions"] == {"status": "passed"}
    # This machine has no AMD GPU: the GPU stages are skipped, and say why.
    assert stages["devices"]["status"] == "skipped" and "/dev/kfd" in stages["devices"]["why"]
    assert stages["serve"]["status"] == "skipped"


def test_smoke_equals_serve_is_the_serve_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """`image --smoke=serve` (the spelling the docs use) reaches the command as --smoke-serve."""
    import sys

    from resolver import cli as cli_module

    seen: list[list[str]] = []

    def fake_app(args: list[str]) -> Any:
        seen.append(list(sys.argv))
        return lambda **_kw: 0

    monkeypatch.setattr(cli_module, "_app_for", fake_app)
    monkeypatch.setattr(sys, "argv", ["rocm-vllm", "image", "--gfx", "gfx942", "--smoke=serve"])
    with pytest.raises(SystemExit):
        cli_module.main()
    assert seen[0][2:] == ["--gfx", "gfx942", "--smoke-serve"]


def test_versions_an_image_prints_are_escaped() -> None:
    """What the smoke script prints comes from the image: a control sequence in a version stays
    text, never reaching the terminal."""

    class Engine:
        def run(self, *_args: Any, **_kw: Any) -> Any:
            from resolver.artifacts.engine import RunResult

            return RunResult(0, json.dumps({"vllm": "0.24.0\x1b[2J\nRUN evil", "torch": None}), "")

    report = images.smoke(Engine(), "ref", _official(), devices=([], []))  # type: ignore[arg-type]
    assert report.found["vllm"] is not None and "\x1b" not in report.found["vllm"]
    assert "\n" not in report.found["vllm"]


def test_no_image_says_what_check_plans_instead() -> None:
    """issue 34: `image --gfx gfx1031` said only "unsupported" while `check` plans the gfx1030
    build under HSA_OVERRIDE_GFX_VERSION: with no image, the answer carries check's verdict and
    plan (a source build, unofficial, with the override) and the commands that write it."""
    code, out = cli_json("--gfx", "gfx1031", "--driver", "30.30.3")
    assert code == 1 and out["image"] is None
    src = out["source_plan"]
    assert src["verdict"] == "unofficial_only" and src["unofficial"]
    assert src["plan"]["kind"] == "source" and src["override"] == "10.3.0"
    assert src["built_for"] == ["gfx1030"]
    assert src["commands"][0].startswith("rocm-vllm dockerfile --gfx gfx1031 ")
    text = cli("--gfx", "gfx1031", "--driver", "30.30.3")
    assert text.stdout == "" and "unofficial_only" in text.stderr
    # Where nothing fits at all, nothing is promised.
    _, none = cli_json("--gfx", "gfx906", "--driver", "30.30.3")
    assert none["source_plan"] is None


# --- smoke on an NVIDIA host (issue 38 c): --gpus all, devices judged by compute capability ---

# The smoke script (SMOKE_SCRIPT, as committed) run with python3 on a lent H200 machine, outside
# any container (torch 2.11.0+cu130 there, no vLLM; nvidia-smi: "NVIDIA H200, 9.0", and
# /dev/nvidiactl present), its one line recorded as printed.
RECORDED_H200 = json.loads(
    '{"vllm": null, "torch": "2.11.0", "rocm": null, "hip": null, "devices": ["9.0"], '
    '"cuda": "13.0", "names": ["NVIDIA H200"], '
    '"compute": {"max_abs_diff": 4.57763671875e-05, "ok": true}}'
)
# ... and as the image would answer: the same devices, with the vLLM the data says it holds.
SHAPED_H200 = {**RECORDED_H200, "vllm": "0.33.0", "torch": None}


def _cuda_image(version: str = "0.33.0") -> Any:
    from packaging.version import Version

    from resolver.solve.cuda import _image

    m = matrix.load()
    release = m.cuda_release(Version(version))
    assert release is not None and release.images
    return _image(m, release, release.images[0])


def test_nvidia_devices_are_judged_by_compute_capability() -> None:
    image = _cuda_image()
    stages, problems = images.judge_gpu(
        "ref", RECORDED_H200, image, (), gpu=True, node_caps=("9.0",)
    )
    assert problems == [] and stages["devices"]["status"] == "passed"
    assert stages["compute"]["status"] == "passed"
    # A capability the node did not report (or the image does not carry) fails the stage.
    other = {**RECORDED_H200, "devices": ["7.0"]}
    stages, problems = images.judge_gpu("ref", other, image, (), gpu=True, node_caps=("9.0",))
    assert stages["devices"]["status"] == "failed"
    assert [p.code for p in problems] == ["smoke-gfx-mismatch"]
    # No NVIDIA driver on this machine: skipped, and said so the NVIDIA way.
    stages, problems = images.judge_gpu("ref", RECORDED_H200, image, (), gpu=False)
    assert problems == [] and "nvidia" in stages["devices"]["why"].lower()


class _Recorder:
    """A stand-in engine that records how the container was asked for and answers SHAPED_H200."""

    def __init__(self) -> None:
        self.kwargs: dict[str, Any] = {}

    def run(self, ref: str, command: list[str], **kwargs: Any) -> Any:
        from resolver.artifacts.engine import RunResult

        self.kwargs = kwargs
        return RunResult(0, json.dumps(SHAPED_H200) + "\n", "")


def test_smoke_passes_nvidia_gpus_with_gpus_all_not_dev_kfd() -> None:
    engine = _Recorder()
    report = images.smoke(engine, "ref", _cuda_image(), node_caps=("9.0",), nvidia=True)  # type: ignore[arg-type]
    assert engine.kwargs["nvidia_gpus"] is True and engine.kwargs["devices"] == []
    assert report.gpu and report.stages["devices"]["status"] == "passed"
    assert report.stages["compute"]["status"] == "passed"
    report = images.smoke(engine, "ref", _cuda_image(), node_caps=("9.0",), nvidia=False)  # type: ignore[arg-type]
    assert engine.kwargs["nvidia_gpus"] is False and report.stages["devices"]["status"] == "skipped"


def test_smoke_serve_passes_nvidia_gpus_too() -> None:
    engine = _Recorder()
    images.smoke_serve(engine, "ref", "Qwen/Qwen3-0.6B", "~", cuda=True, nvidia=True)  # type: ignore[arg-type]
    assert engine.kwargs["nvidia_gpus"] is True and engine.kwargs["devices"] == []
    stage, problems = images.smoke_serve(engine, "ref", "m", "~", cuda=True, nvidia=False)  # type: ignore[arg-type]
    assert stage["status"] == "skipped" and problems == [] and "nvidia" in stage["why"].lower()
