"""Real services for the image tests: a private ``dockerd`` and a ``docker-registry`` on loopback.

Both come from Debian packages (``docker.io``, ``docker-registry``; scripts/install-services.sh
installs them). Each runs from a private temporary directory with its own socket, data root and
port, so parallel test runs and other engines on the machine do not interfere. A token server
(anonymous pull tokens signed with a throw-away key, as Docker Hub's auth service issues them)
lets the registry run with bearer-token auth.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self
from urllib.parse import parse_qs, urlsplit

import requests

SKIP_ENV = "ROCM_VLLM_SKIP_SERVICES"


class ServiceError(RuntimeError):
    """A service could not start; the message says what to do."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _need(binary: str) -> str:
    path = shutil.which(binary) or next(
        (p for p in (f"/usr/sbin/{binary}", f"/usr/bin/{binary}") if Path(p).exists()), None
    )
    if path is None:
        raise ServiceError(
            f"{binary} is not installed: run scripts/install-services.sh "
            f"(or set {SKIP_ENV}=1 to skip the service tests explicitly)"
        )
    return path


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def dockerd() -> Iterator[str]:
    """A private Docker Engine; yields its ``unix://`` base URL."""
    binary = _need("dockerd")
    # Short path: a unix socket path must stay under 108 bytes.
    root = Path(tempfile.mkdtemp(prefix="rvd-", dir="/tmp"))
    sock = root / "docker.sock"
    log = root / "dockerd.log"
    args = [
        binary,
        "--iptables=false",
        "--bridge=none",
        "--storage-driver=vfs",
        f"--host=unix://{sock}",
        f"--data-root={root / 'data'}",
        f"--exec-root={root / 'exec'}",
        f"--pidfile={root / 'docker.pid'}",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"unix://{sock}"
    try:
        _wait_engine(url, sock, proc, log)
        yield url
    finally:
        _stop(proc)
        shutil.rmtree(root, ignore_errors=True)


def _wait_engine(
    url: str, sock: Path, proc: subprocess.Popen[bytes], log: Path, timeout: float = 90
) -> None:
    import docker
    import docker.errors

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServiceError(f"dockerd exited with {proc.returncode}:\n{_log_tail(log)}")
        if not sock.exists():
            # The SDK leaks its socket when connect() fails; wait for the file first.
            time.sleep(0.2)
            continue
        # A fixed API version: the default asks the engine for its version while constructing.
        client = docker.DockerClient(base_url=url, timeout=5, version="1.41")
        try:
            client.ping()
            return
        except docker.errors.DockerException:
            time.sleep(0.3)
        finally:
            client.close()
    raise ServiceError(f"dockerd did not answer within {timeout:.0f}s:\n{_log_tail(log)}")


@contextlib.contextmanager
def registry(
    *,
    storage: Path | None = None,
    token_auth: TokenServer | None = None,
    htpasswd: Path | None = None,
) -> Iterator[str]:
    """A CNCF distribution registry on 127.0.0.1; yields ``http://127.0.0.1:PORT``.

    Two registries may share one ``storage`` directory: one open for pushes, one behind token auth
    (``token_auth``) or basic auth (``htpasswd``: a bcrypt htpasswd file, see
    ``write_htpasswd``)."""
    binary = _need("docker-registry")
    root = Path(tempfile.mkdtemp(prefix="rvr-", dir="/tmp"))
    storage = storage or root / "data"
    port = free_port()
    config = [
        "version: 0.1",
        "log:",
        "  level: warn",
        "storage:",
        "  filesystem:",
        f"    rootdirectory: {storage}",
        "  delete:",
        "    enabled: true",
        "http:",
        f"  addr: 127.0.0.1:{port}",
    ]
    if token_auth is not None:
        config += [
            "auth:",
            "  token:",
            f"    realm: {token_auth.url}/token",
            f"    service: {token_auth.service}",
            f"    issuer: {token_auth.issuer}",
            f"    rootcertbundle: {token_auth.cert}",
        ]
    if htpasswd is not None:
        config += [
            "auth:",
            "  htpasswd:",
            "    realm: rocm-vllm-test-basic",
            f"    path: {htpasswd}",
        ]
    (root / "config.yml").write_text("\n".join(config) + "\n")
    log = root / "registry.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [binary, "serve", str(root / "config.yml")],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise ServiceError(
                    f"docker-registry exited with {proc.returncode}:\n{_log_tail(log)}"
                )
            try:
                if requests.get(f"{url}/v2/", timeout=2).status_code in (200, 401):
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise ServiceError(f"docker-registry did not answer:\n{_log_tail(log)}")
            time.sleep(0.2)
        yield url
    finally:
        _stop(proc)
        shutil.rmtree(root, ignore_errors=True)


def write_htpasswd(path: Path, users: dict[str, str]) -> Path:
    """An htpasswd file with bcrypt hashes (the only kind the distribution registry accepts),
    made with Python's ``bcrypt`` (apache2-utils' htpasswd -B writes the same)."""
    import bcrypt

    lines = [
        f"{user}:{bcrypt.hashpw(pw.encode(), bcrypt.gensalt(rounds=5)).decode()}"
        for user, pw in users.items()
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def credential_helper(directory: Path, name: str, answers: dict[str, tuple[str, str]]) -> Path:
    """A ``docker-credential-NAME`` executable speaking the docker-credential-helpers protocol
    (``get``: server on stdin, JSON ``{ServerURL, Username, Secret}`` on stdout; unknown server:
    "credentials not found in native keychain" and exit 1). Every server it was asked for is
    appended to ``asked.log`` next to it."""
    import sys

    script = directory / f"docker-credential-{name}"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, pathlib, sys\n"
        f"answers = {json.dumps({k: list(v) for k, v in answers.items()})}\n"
        "server = sys.stdin.read().strip()\n"
        "log = pathlib.Path(__file__).with_name('asked.log')\n"
        "log.write_text((log.read_text() if log.exists() else '') "
        "+ sys.argv[1] + ' ' + server + '\\n')\n"
        "if sys.argv[1:] != ['get'] or server not in answers:\n"
        "    print('credentials not found in native keychain'); sys.exit(1)\n"
        "user, secret = answers[server]\n"
        "print(json.dumps({'ServerURL': server, 'Username': user, 'Secret': secret}))\n"
    )
    script.chmod(0o755)
    return script


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenServer:
    """Issues anonymous pull tokens (RS256 JWTs with an ``x5c`` chain) like Docker Hub's auth
    service; signing goes through the ``openssl`` CLI. Records every request it served."""

    service = "rocm-vllm-test-registry"
    issuer = "rocm-vllm-test-token-issuer"

    def __init__(self, root: Path) -> None:
        openssl = _need("openssl")
        self.key = root / "token.key"
        self.cert = root / "token.pem"
        subprocess.run(
            [
                *(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"),
                *(
                    "-subj",
                    "/CN=rocm-vllm-test-token",
                    "-keyout",
                    str(self.key),
                    "-out",
                    str(self.cert),
                ),
            ],
            check=True,
            capture_output=True,
        )
        der = subprocess.run(
            [openssl, "x509", "-in", str(self.cert), "-outform", "DER"],
            check=True,
            capture_output=True,
        ).stdout
        self._x5c = base64.b64encode(der).decode()
        self._openssl = openssl
        self.requests: list[dict[str, list[str]]] = []
        self.users: list[
            str | None
        ] = []  # the Basic-auth user of each token request (None: anonymous)
        self.refresh_token = "refresh-" + uuid.uuid4().hex  # the identity token it accepts
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                server.requests.append(query)
                auth = self.headers.get("Authorization", "")
                user = None
                if auth.startswith("Basic "):
                    user = base64.b64decode(auth[6:]).decode().partition(":")[0]
                server.users.append(user)
                token = server.issue(query.get("scope", [""])[0], query.get("service", [""])[0])
                body = json.dumps({"token": token, "expires_in": 300}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                """The OAuth2 refresh-token grant (what `docker login` with a token leaves: an
                identity token); access_token in the answer, as the distribution token spec has
                it."""
                length = int(self.headers.get("Content-Length", "0"))
                form = parse_qs(self.rfile.read(length).decode())
                server.requests.append(form)
                server.users.append(
                    "<refresh-token>" if form.get("grant_type") == ["refresh_token"] else None
                )
                if form.get("refresh_token") != [server.refresh_token]:
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                token = server.issue(form.get("scope", [""])[0], form.get("service", [""])[0])
                body = json.dumps({"access_token": token, "expires_in": 300}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def issue(self, scope: str, service: str) -> str:
        access = []
        if scope.startswith("repository:"):
            _, name, actions = scope.split(":", 2)
            # Anonymous callers get pull only, whatever they ask for.
            access.append(
                {
                    "type": "repository",
                    "name": name,
                    "actions": [a for a in actions.split(",") if a == "pull"],
                }
            )
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self._x5c]}
        claims = {
            "iss": self.issuer,
            "sub": "",
            "aud": service,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": uuid.uuid4().hex,
            "access": access,
        }
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = subprocess.run(
            [self._openssl, "dgst", "-sha256", "-sign", str(self.key)],
            input=signing_input.encode(),
            check=True,
            capture_output=True,
        ).stdout
        return f"{signing_input}.{_b64(signature)}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@contextlib.contextmanager
def silent_port() -> Iterator[int]:
    """A TCP port that accepts connections and never answers: the timeout path."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield int(s.getsockname()[1])


def services_skipped() -> bool:
    return os.environ.get(SKIP_ENV) == "1"


@dataclass(frozen=True)
class SlurmCluster:
    """A running test cluster: ``env`` carries SLURM_CONF for srun/sbatch/sinfo."""

    conf: Path
    partition: str
    nodes: tuple[str, ...]
    root: Path

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}


SLURM_NODES = ("n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8")
# Each node's typed gpu gres (type, count), as a site's gres.conf declares it; n4 declares none.
SLURM_GRES: dict[str, tuple[str, int] | None] = {
    "n1": ("mi300x", 4),
    "n2": ("mi300x", 4),
    "n3": ("mi210", 8),
    "n4": None,
    "n5": ("mi300x", 4),
    "n6": ("mi300x", 4),
    "n7": ("mi300x", 4),
    "n8": ("mi300x", 4),
}
SMALL_PARTITION = "small"
WIDE_PARTITION = "wide"
TINY_PARTITION = "tiny"
RESERVATION = "rvtest-resv"
# The partitions, as production clusters have them: a default GPU partition; a non-default one
# over some of its nodes where one job may hold one node (MaxNodes=1) for 5 minutes; one whose
# jobs hold at most two of its four nodes (n4 without gres among them); one with MaxTime=1; and
# one whose node is in a reservation (RESERVATION, for root).
SLURM_PARTITIONS = (
    ("gpu", "n[1-3]", "Default=YES MaxTime=10"),
    (SMALL_PARTITION, "n[2-3]", "MaxNodes=1 MaxTime=5"),
    (WIDE_PARTITION, "n[4-7]", "MaxNodes=2 MaxTime=30"),
    (TINY_PARTITION, "n7", "MaxTime=1"),
    ("resv", "n8", "MaxTime=10"),
)
RESERVED_NODE = "n8"


def _loopback_host() -> str:
    """This machine's short host name, which must resolve to a loopback address: the daemons
    bind to what it resolves to (NoInAddrAny), and nothing may listen beyond this machine."""
    host = socket.gethostname().split(".")[0]
    try:
        address = socket.gethostbyname(host)
    except OSError as exc:
        raise ServiceError(
            f"the host name {host!r} does not resolve ({exc}): add `127.0.0.1 {host}` to "
            "/etc/hosts for the Slurm test cluster"
        ) from None
    if not address.startswith("127."):
        raise ServiceError(
            f"the host name {host!r} resolves to {address}, not a loopback address: the Slurm "
            f"test cluster would listen there; add `127.0.0.1 {host}` to /etc/hosts"
        )
    return host


@contextlib.contextmanager
def slurm(nodes: tuple[str, ...] = SLURM_NODES) -> Iterator[SlurmCluster]:
    """A real Slurm cluster on this machine (Debian's slurm-wlm and munge, run as root): one
    ``munged`` with its own key and socket, one ``slurmctld`` and one ``slurmd -N NAME`` per node,
    all bound to loopback on private ports with state, spool, pid and log files under a temporary
    directory. Nodes declare typed ``gpu`` gres (stand-in device files; SLURM_GRES) so that
    ``--gpus-per-node`` is checked as on a real GPU partition; the partitions are
    SLURM_PARTITIONS, and RESERVED_NODE is in RESERVATION. Stops what it started, by pid."""
    munged, slurmctld, slurmd = _need("munged"), _need("slurmctld"), _need("slurmd")
    _need("srun")
    if os.geteuid() != 0:
        raise ServiceError("the Slurm test cluster runs as root (slurmd forks jobs as any user)")
    host = _loopback_host()
    root = Path(tempfile.mkdtemp(prefix="rvs-", dir="/tmp"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        key = root / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        msock = root / "munge.sock"
        mlog = root / "munged.log"
        procs.append(
            subprocess.Popen(
                [
                    munged,
                    "--foreground",
                    f"--key-file={key}",
                    f"--socket={msock}",
                    f"--pid-file={root / 'munged.pid'}",
                    f"--log-file={mlog}",
                    f"--seed-file={root / 'munge.seed'}",
                    "--force",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        _wait_path(msock, procs[-1], mlog, "munged")
        ctld_port = free_port()
        ports = [free_port() for _ in nodes]
        partition = "gpu"
        lines = [
            "ClusterName=rvtest",
            # Loopback only: the controller at 127.0.0.1, every daemon bound to that address
            # rather than to all of the machine's.
            f"SlurmctldHost={host}(127.0.0.1)",
            "CommunicationParameters=NoCtldInAddrAny,NoInAddrAny",
            f"SlurmctldPort={ctld_port}",
            "AuthType=auth/munge",
            f"AuthInfo=socket={msock}",
            "CryptoType=crypto/munge",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}/%n",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={root / 'slurmctld.log'}",
            f"SlurmdLogFile={root / 'slurmd-%n.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "SchedulerType=sched/backfill",
            "GresTypes=gpu",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "KillWait=5",
        ]
        gres_conf = ["AutoDetect=off"]
        for name, port in zip(nodes, ports, strict=True):
            gres = SLURM_GRES.get(name)
            lines.append(
                f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} CPUs=1 "
                + (f"Gres=gpu:{gres[0]}:{gres[1]} " if gres else "")
                # Its GPU model as a node feature too (sinfo %f), as sites tag them: what a
                # --constraint picks nodes by.
                + (f"Features={gres[0]} " if gres else "")
                + "State=UNKNOWN"
            )
            if gres:
                # Stand-in device files (a node's /dev/dri/renderD*): Slurm counts a gpu gres by
                # its files; with task/none nothing confines a job to them.
                gres_conf.append(
                    f"NodeName={name} Name=gpu Type={gres[0]} File=/dev/tty[0-{gres[1] - 1}]"
                )
        for part, members, limits in SLURM_PARTITIONS:
            lines.append(f"PartitionName={part} Nodes={members} {limits} State=UP")
        (root / "state").mkdir()
        for name in nodes:
            (root / "spool" / name).mkdir(parents=True)
        conf = root / "slurm.conf"
        conf.write_text("\n".join(lines) + "\n")
        (root / "gres.conf").write_text("\n".join(gres_conf) + "\n")
        env = {**os.environ, "SLURM_CONF": str(conf)}
        clog = root / "slurmctld.log"
        procs.append(
            subprocess.Popen(
                [slurmctld, "-D", "-i"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        for name in nodes:
            procs.append(
                subprocess.Popen(
                    [slurmd, "-D", "-N", name],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        cluster = SlurmCluster(conf=conf, partition=partition, nodes=nodes, root=root)
        _wait_idle(cluster, procs, clog)
        if RESERVED_NODE in nodes:
            subprocess.run(
                [
                    _need("scontrol"),
                    "create",
                    "reservation",
                    f"ReservationName={RESERVATION}",
                    "Users=root",
                    f"Nodes={RESERVED_NODE}",
                    "StartTime=now",
                    "Duration=infinite",
                ],
                env=env,
                capture_output=True,
                timeout=30,
                check=True,
            )
        yield cluster
    finally:
        for proc in reversed(procs):
            _stop(proc)
        shutil.rmtree(root, ignore_errors=True)


def _wait_path(
    path: Path, proc: subprocess.Popen[bytes], log: Path, what: str, timeout: float = 20
) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise ServiceError(f"{what} exited with {proc.returncode}:\n{_log_tail(log)}")
        if time.monotonic() > deadline:
            raise ServiceError(f"{what} did not start within {timeout:.0f}s:\n{_log_tail(log)}")
        time.sleep(0.1)


def _wait_idle(
    cluster: SlurmCluster, procs: list[subprocess.Popen[bytes]], log: Path, timeout: float = 60
) -> None:
    sinfo = _need("sinfo")
    deadline = time.monotonic() + timeout
    states = ""
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                args = [str(a) for a in proc.args]  # type: ignore[union-attr]
                name = args[args.index("-N") + 1] if "-N" in args else None
                where = cluster.root / f"slurmd-{name}.log" if name else log
                raise ServiceError(
                    f"{' '.join(args)} exited with {proc.returncode}:\n{_log_tail(where)}"
                )
        run = subprocess.run(
            [sinfo, "-h", "-N", "-o", "%N %t"],
            env=cluster.env,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        states = run.stdout.strip()
        idle = {line.split()[0] for line in states.splitlines() if line.split()[1:] == ["idle"]}
        if idle >= set(cluster.nodes):
            return
        time.sleep(0.3)
    raise ServiceError(
        f"Slurm nodes not idle within {timeout:.0f}s ({states!r}):\n{_log_tail(log)}"
    )
