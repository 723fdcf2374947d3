"""A small layer over the Docker SDK: pull with progress, inspect, run a short command, build.

It honours ``DOCKER_HOST`` (through ``docker.from_env``) or an explicit ``base_url``, and turns
every SDK or API failure into a ``DockerEngineError`` with a hint.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from resolver.util.errors import DockerEngineError


@dataclass(frozen=True, slots=True)
class PullEvent:
    """One line of the engine's pull stream, per layer."""

    layer: str | None
    status: str
    current: int | None = None
    total: int | None = None


@dataclass(frozen=True, slots=True)
class ImageInfo:
    id: str
    repo_tags: tuple[str, ...]
    repo_digests: tuple[str, ...]
    architecture: str | None
    os: str | None
    labels: tuple[tuple[str, str], ...] = ()  # the image config's labels, as the engine has them


@dataclass(frozen=True, slots=True)
class RunResult:
    exit_code: int
    stdout: str
    stderr: str


def split_ref(ref: str) -> tuple[str, str | None, str | None]:
    """``host:5000/a/b:tag@sha256:..`` -> ``("host:5000/a/b", "tag", "sha256:..")``."""
    name, _, digest = ref.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = None
    if ":" in last:
        name, tag = name.rsplit(":", 1)
    return name, tag, digest or None


CONNECT_TIMEOUT = 5  # seconds


class DockerEngine:
    def __init__(self, base_url: str | None = None, *, timeout: int = 120) -> None:
        import docker

        url = base_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        self._where = url
        hint = (
            "start dockerd (or podman's docker-compatible socket), set DOCKER_HOST, "
            "or add your user to the docker group"
        )
        if url.startswith("unix://") and not Path(url[len("unix://") :]).exists():
            # Checked first: the SDK leaks a socket when connect() fails on a missing path.
            raise DockerEngineError(
                f"no Docker Engine socket at {url[len('unix://') :]}", hint=hint
            )
        # A short timeout to connect and ping: an endpoint that accepts but never answers should
        # fail in seconds, not after a build-sized timeout; long operations get ``timeout``.
        connect_timeout = min(timeout, CONNECT_TIMEOUT)
        try:
            if base_url:
                self.client = docker.DockerClient(base_url=base_url, timeout=connect_timeout)
            else:
                self.client = docker.from_env(timeout=connect_timeout)
            self.client.ping()
            self.client.api.timeout = timeout
        except _engine_errors() as exc:
            with suppress(Exception):
                self.client.close()
            raise DockerEngineError(
                f"cannot reach the Docker Engine at {self._where}: {_short(exc)}", hint=hint
            ) from None

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _errors(self, what: str, hint: str) -> Iterator[None]:
        import docker.errors

        try:
            yield
        except DockerEngineError:
            raise
        except docker.errors.ImageNotFound:
            raise DockerEngineError(f"{what}: image not found", hint=hint) from None
        except _engine_errors() as exc:
            raise DockerEngineError(f"{what}: {_short(exc)}", hint=hint) from None

    def pull(
        self,
        ref: str,
        on_progress: Callable[[PullEvent], None] | None = None,
        *,
        auth: dict[str, str] | None = None,
    ) -> ImageInfo:
        """Pull ``ref`` (by digest when it has one, else by tag), reporting each stream event.
        ``auth`` is the engine's ``auth_config`` (user/password or identitytoken) for a private
        registry."""
        name, tag, digest = split_ref(ref)
        hint = (
            "check the name and the registry; a loopback or plain-HTTP registry must be an "
            "insecure-registry of dockerd"
        )
        with self._errors(f"pull {ref}", hint):
            for event in self.client.api.pull(
                name, tag=digest or tag or "latest", stream=True, decode=True, auth_config=auth
            ):
                if "error" in event:
                    raise DockerEngineError(f"pull {ref}: {event['error']}", hint=hint)
                detail = event.get("progressDetail") or {}
                if on_progress is not None:
                    on_progress(
                        PullEvent(
                            layer=event.get("id"),
                            status=str(event.get("status", "")),
                            current=detail.get("current"),
                            total=detail.get("total"),
                        )
                    )
        return self.inspect_image(f"{name}@{digest}" if digest else f"{name}:{tag or 'latest'}")

    def inspect_image(self, ref: str) -> ImageInfo:
        with self._errors(f"inspect {ref}", "pull the image first (rocm-vllm image --pull)"):
            attrs: dict[str, Any] = self.client.api.inspect_image(ref)
        return ImageInfo(
            id=str(attrs.get("Id", "")),
            repo_tags=tuple(attrs.get("RepoTags") or ()),
            repo_digests=tuple(attrs.get("RepoDigests") or ()),
            architecture=attrs.get("Architecture"),
            os=attrs.get("Os"),
            labels=tuple(
                (str(k), str(v))
                for k, v in ((attrs.get("Config") or {}).get("Labels") or {}).items()
            ),
        )

    def run(
        self,
        ref: str,
        command: list[str],
        *,
        entrypoint: list[str] | None = None,
        devices: list[str] | None = None,
        group_add: list[str] | None = None,
        environment: dict[str, str] | None = None,
        gpu_flags: bool = False,
        nvidia_gpus: bool = False,
        network: str = "none",
        timeout: int = 300,
        volumes: dict[str, dict[str, str]] | None = None,
    ) -> RunResult:
        """Run ``command`` to completion in a throw-away container and collect its output."""
        extra: dict[str, Any] = {}
        if gpu_flags:
            # The same isolation relaxations the run command uses, so the smoke test sees the GPUs.
            extra.update(
                ipc_mode="host", cap_add=["SYS_PTRACE"], security_opt=["seccomp=unconfined"]
            )
        if nvidia_gpus:  # docker run --gpus all: the NVIDIA container toolkit passes them in
            from docker.types import DeviceRequest

            extra["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
        hint = (
            "check that the image runs on this engine (docker run --rm IMAGE) and that "
            "/dev/kfd, /dev/dri exist for GPU runs"
        )
        with self._errors(f"run {ref}", hint):
            container = self.client.containers.create(
                ref,
                command=command,
                entrypoint=entrypoint,
                devices=devices or [],
                group_add=group_add or None,
                environment=environment or {},
                network_mode=network,
                volumes=volumes or None,
                **extra,
            )
            try:
                container.start()
                status = container.wait(timeout=timeout)
                stdout = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
                stderr = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
            finally:
                container.remove(force=True)
        return RunResult(int(status.get("StatusCode", -1)), stdout, stderr)

    def build(
        self,
        *,
        dockerfile_text: str,
        context_dir: Path,
        tag: str,
        buildargs: dict[str, str],
        on_progress: Callable[[str], None],
        network: str | None = None,
    ) -> str:
        """Build ``dockerfile_text`` with BuildKit, ``context_dir`` as context; return the image id.

        BuildKit because generated Dockerfiles use ``RUN --mount`` (cache and bind mounts), which
        the classic builder refuses. docker-py speaks only the classic protocol, so this posts the
        same tar context to ``/build?version=2`` itself and decodes BuildKit's progress
        (``artifacts.buildkit``). The Dockerfile goes into the context archive under a private name,
        so a generated file never lands in the user's tree."""
        from resolver.artifacts.buildkit import Progress

        hint = (
            "read the build output above; `DOCKER_BUILDKIT=1 docker build` with the same "
            "Dockerfile shows the same error"
        )
        image_id: str | None = None
        progress = Progress()
        api = self.client.api
        with self._errors(f"build {tag}", hint):
            name = f".dockerfile.{secrets.token_hex(10)}"
            context = _context_tar(context_dir, name, dockerfile_text)
            params: dict[str, Any] = {
                "t": tag,
                "dockerfile": name,
                "buildargs": json.dumps(buildargs),
                "version": "2",
                "rm": True,
                "forcerm": True,
            }
            if network is not None:
                params["networkmode"] = network  # "none": RUN steps reach no network at all
            elif _no_bridge(self.client):
                params["networkmode"] = "none"
            # docker-py has no public call that speaks BuildKit; its private helpers do the HTTP.
            response = api._post(
                api._url("/build"),
                params=params,
                data=context,
                headers={"Content-Type": "application/tar"},
                stream=True,
                timeout=None,
            )
            api._raise_for_status(response)
            for event in api._stream_helper(response, decode=True):
                if event.get("id") == "moby.buildkit.trace" and isinstance(event.get("aux"), str):
                    for line in progress.feed(event["aux"]):
                        on_progress(line)
                    continue
                if "error" in event:
                    detail = progress.errors[-1] if progress.errors else str(event["error"]).strip()
                    raise DockerEngineError(f"build {tag}: {detail}", hint=hint)
                if "stream" in event and str(event["stream"]).strip():
                    on_progress(str(event["stream"]).rstrip("\n"))
                aux = event.get("aux")
                if (
                    event.get("id") == "moby.image.id"
                    and isinstance(aux, dict)
                    and isinstance(aux.get("ID"), str)
                ):
                    image_id = aux["ID"]
        if image_id is None:
            image_id = self.inspect_image(tag).id
        return image_id

    def remove_image(self, ref: str) -> None:
        with self._errors(f"remove {ref}", "remove it by hand: docker rmi IMAGE"):
            self.client.api.remove_image(ref, force=True)


def _context_tar(context_dir: Path, dockerfile_name: str, dockerfile_text: str) -> bytes:
    """The build context as an uncompressed tar, plus the Dockerfile under ``dockerfile_name``.

    GNU format on purpose: BuildKit's upload path did not take the PAX headers Python writes
    for fractional mtimes and read the archive as a Dockerfile."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for path in sorted(context_dir.rglob("*")):
            info = archive.gettarinfo(str(path), arcname=str(path.relative_to(context_dir)))
            info.mtime = int(info.mtime)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isfile():
                with path.open("rb") as fh:
                    archive.addfile(info, fh)
            else:
                archive.addfile(info)
        data = dockerfile_text.encode("utf-8")
        info = tarfile.TarInfo(dockerfile_name)
        info.size = len(data)
        info.mode = 0o644
        archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _no_bridge(client: Any) -> bool:
    """An engine started with ``--bridge=none`` has no default network; builds must use none."""
    try:
        return not client.api.networks(names=["bridge"])
    except _engine_errors():
        return False


def _engine_errors() -> tuple[type[Exception], ...]:
    """What the SDK raises: its own errors, requests' transport errors, and OS socket errors."""
    import docker.errors
    import requests

    # ValueError/TypeError: a malformed DOCKER_HOST (``tcp://[::1``, ``tcp://h:port``) fails in
    # the SDK's URL parsing, before any connection.
    return (
        docker.errors.DockerException,
        requests.RequestException,
        OSError,
        ValueError,
        TypeError,
    )


def _short(exc: Exception) -> str:
    explanation = getattr(exc, "explanation", None)
    text = str(explanation or exc).strip() or exc.__class__.__name__
    return text.splitlines()[0][:300]
