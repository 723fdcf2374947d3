"""resolver.artifacts.engine against a real dockerd (private socket) and the loopback registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from resolver.artifacts.engine import DockerEngine, PullEvent, split_ref
from resolver.util.errors import DockerEngineError

pytestmark = pytest.mark.docker


def test_split_ref() -> None:
    assert split_ref("127.0.0.1:5000/vllm/vllm-openai-rocm:v0.24.0@sha256:ab") == (
        "127.0.0.1:5000/vllm/vllm-openai-rocm",
        "v0.24.0",
        "sha256:ab",
    )
    assert split_ref("127.0.0.1:5000/rocm/vllm") == ("127.0.0.1:5000/rocm/vllm", None, None)


def test_pull_reports_progress_and_records_the_digest(engine: DockerEngine, shim_images) -> None:  # type: ignore[no-untyped-def]
    import contextlib

    # Another test may have pulled it already ("Image is up to date": no layer events).
    with contextlib.suppress(Exception):
        engine.client.images.remove(shim_images.amd.ref, force=True)
    events: list[PullEvent] = []
    info = engine.pull(shim_images.amd.ref, events.append)
    statuses = {e.status for e in events}
    assert "Pull complete" in statuses or "Already exists" in statuses
    assert any(e.total for e in events if e.status == "Downloading") or "Already exists" in statuses
    assert f"{shim_images.amd.name}@{shim_images.amd.digest}" in info.repo_digests
    assert any(d.endswith("@" + shim_images.amd.digest) for d in info.repo_digests)


def test_pull_by_digest(engine: DockerEngine, shim_images) -> None:  # type: ignore[no-untyped-def]
    info = engine.pull(f"{shim_images.official.name}@{shim_images.official.digest}")
    assert any(d.endswith("@" + shim_images.official.digest) for d in info.repo_digests)


def test_pull_unknown_tag_fails_with_hint(engine: DockerEngine, shim_images) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DockerEngineError) as err:
        engine.pull(f"{shim_images.official.name}:v0.0.0-missing")
    assert "pull" in err.value.message
    assert err.value.hint
    assert err.value.exit_code == 5


def test_inspect_missing_image(engine: DockerEngine) -> None:
    with pytest.raises(DockerEngineError, match="not found"):
        engine.inspect_image("127.0.0.1:1/none/such:tag")


def test_run_collects_output_and_exit_code(engine: DockerEngine, shim_images) -> None:  # type: ignore[no-untyped-def]
    engine.pull(shim_images.official.ref)
    out = engine.run(shim_images.official.ref, ["--model", "m/x"])  # image entrypoint: vllm serve
    assert (out.exit_code, out.stdout.strip()) == (0, "vllm-shim serve --model m/x")
    failed = engine.run(
        shim_images.official.ref, ["-c", "echo oops >&2; exit 3"], entrypoint=["/bin/sh"]
    )
    assert (failed.exit_code, failed.stderr.strip()) == (3, "oops")


def test_run_with_gpu_flags_is_accepted_by_the_engine(engine: DockerEngine, shim_images) -> None:  # type: ignore[no-untyped-def]
    # No AMD GPU here: map /dev/null where /dev/kfd would be, to check the flags the smoke test
    # passes on a GPU node (devices, numeric groups, ipc=host, SYS_PTRACE, seccomp) really work.
    engine.pull(shim_images.official.ref)
    out = engine.run(
        shim_images.official.ref,
        ["-c", "test -c /dev/kfd && id -G"],
        entrypoint=["/bin/sh"],
        devices=["/dev/null:/dev/kfd:rwm"],
        group_add=["44", "109"],
        gpu_flags=True,
    )
    assert out.exit_code == 0, out.stderr
    assert {"44", "109"} <= set(out.stdout.split())


def test_build_with_build_args_and_run_step(engine: DockerEngine, tmp_path: Path) -> None:
    from tests import shims

    ctx = shims.context(tmp_path / "ctx")
    lines: list[str] = []
    dockerfile = (
        'FROM scratch\nCOPY busybox /bin/sh\nARG GREETING\nRUN echo "$GREETING" > /greeting\n'
        'ENTRYPOINT ["/bin/sh", "-c", "read line < /greeting; echo $line"]\n'
    )
    image_id = engine.build(
        dockerfile_text=dockerfile,
        context_dir=ctx,
        tag="rocm-vllm-test/build:1",
        buildargs={"GREETING": "hello"},
        on_progress=lines.append,
    )
    assert image_id.startswith("sha256:")
    assert '[2/2] RUN echo "hello" > /greeting' in lines, (
        lines
    )  # BuildKit's step names, args expanded
    assert not (ctx / "Dockerfile").exists()  # the generated Dockerfile stays out of the context
    out = engine.run("rocm-vllm-test/build:1", [])
    assert out.stdout.strip() == "hello"
    engine.remove_image("rocm-vllm-test/build:1")


def test_build_failure_is_an_engine_error(engine: DockerEngine, tmp_path: Path) -> None:
    from tests import shims

    ctx = shims.context(tmp_path / "ctx")
    with pytest.raises(
        DockerEngineError, match=r"build rocm-vllm-test/fail:1: .*RUN exit 7.*exit code: 7"
    ):
        engine.build(
            dockerfile_text="FROM scratch\nCOPY busybox /bin/sh\nRUN exit 7\n",
            context_dir=ctx,
            tag="rocm-vllm-test/fail:1",
            buildargs={},
            on_progress=lambda _line: None,
        )


def test_unreachable_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    with pytest.raises(DockerEngineError) as err:
        DockerEngine()
    assert "DOCKER_HOST" in (err.value.hint or "")
    assert err.value.exit_code == 5


def test_docker_host_is_honoured(docker_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_url)
    with DockerEngine() as eng:
        assert eng.client.ping()


def test_engine_that_never_answers_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from tests import services

    with services.silent_port() as port:
        monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{port}")
        start = time.monotonic()
        with pytest.raises(DockerEngineError, match="cannot reach the Docker Engine") as err:
            DockerEngine()
        assert time.monotonic() - start < 30 and err.value.exit_code == 5
