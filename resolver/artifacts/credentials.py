"""Registry credentials from the user's Docker configuration, as ``docker login`` left them.

Read for ``image --digest`` and ``image --pull``, the same places ``docker`` reads:
``$DOCKER_CONFIG/config.json`` (else ``~/.docker/config.json``) with

- ``credHelpers``: ``{"registry.example": "NAME"}``: run ``docker-credential-NAME get`` with the
  server on stdin; it prints ``{"ServerURL", "Username", "Secret"}`` (the docker-credential-helpers
  protocol). A username of ``<token>`` means the secret is an identity (refresh) token;
- ``credsStore``: the same helper protocol for every registry without a ``credHelpers`` entry;
- ``auths``: ``{"registry.example": {"auth": base64("user:password")}}`` (or ``identitytoken``).

A secret is never part of a message, a ``repr`` or JSON: errors name where credentials came
from, never what they are.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from resolver.util import bounded, capture, redact, shell
from resolver.util.errors import InputError, RegistryError
from resolver.util.safety import shown

# Docker Hub is stored under its v1 index URL (what `docker login` writes), whatever host is asked.
DOCKER_HUB_KEYS = (
    "https://index.docker.io/v1/",
    "index.docker.io",
    "docker.io",
    "registry-1.docker.io",
)
_HELPER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
IDENTITY_TOKEN_USER = "<token>"


@dataclass(frozen=True, slots=True)
class Credentials:
    username: str
    secret: str = field(repr=False)
    source: str  # where they came from, for messages: "credHelpers (docker-credential-x)", ...

    @property
    def identity_token(self) -> bool:
        """The secret is an OAuth2 refresh token (``docker login`` with a token), not a password."""
        return self.username == IDENTITY_TOKEN_USER

    def basic(self) -> str:
        return base64.b64encode(f"{self.username}:{self.secret}".encode()).decode()

    def engine_auth(self) -> dict[str, str]:
        """The ``auth_config`` the Docker Engine API takes for a pull."""
        if self.identity_token:
            return {"identitytoken": self.secret}
        return {"username": self.username, "password": self.secret}

    def __str__(self) -> str:
        return f"credentials for {self.username} from {self.source}"


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("DOCKER_CONFIG")
    return Path(base) / "config.json" if base else Path.home() / ".docker" / "config.json"


def _host_of(key: str) -> str:
    """``https://Registry.example:5000/v1/`` -> ``registry.example:5000``."""
    text = key.strip().lower()
    text = text.split("://", 1)[1] if "://" in text else text
    return text.split("/", 1)[0]


def _keys_for(host: str) -> set[str]:
    host = _host_of(host)
    if host in {_host_of(k) for k in DOCKER_HUB_KEYS}:
        return {_host_of(k) for k in DOCKER_HUB_KEYS}
    return {host}


MAX_CONFIG = 4 * bounded.MiB  # a config.json with many logins is a few KiB
MAX_HELPER_ANSWER = 1 * bounded.MiB
HELPER_TIMEOUT = 30.0


def _read_config(path: Path) -> dict[str, object]:
    try:
        # Bounded: a FIFO or device as config.json is refused, not waited on.
        text = bounded.read_text(path, MAX_CONFIG)
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read the Docker config {shown(str(path))} "
            f"({getattr(exc, 'strerror', None) or exc.__class__.__name__})",
            hint="fix its permissions, or point DOCKER_CONFIG at a directory with a readable "
            "config.json",
        ) from None
    try:
        data = bounded.loads_json(text)
    except ValueError:
        raise InputError(
            f"the Docker config {shown(str(path))} is not valid JSON (or nested too deep)",
            hint="fix or remove it (`docker login` rewrites it), or point DOCKER_CONFIG elsewhere",
        ) from None
    return data if isinstance(data, dict) else {}


def lookup(host: str, *, env: Mapping[str, str] | None = None) -> Credentials | None:
    """Credentials for registry ``host`` (``127.0.0.1:5000``, ``registry-1.docker.io``), or None."""
    env = os.environ if env is None else env
    path = config_path(env)
    config = _read_config(path)
    if not config:
        return None
    where = shown(str(path))  # DOCKER_CONFIG is the user's text: shown escaped in messages
    keys = _keys_for(host)
    helpers = config.get("credHelpers")
    if isinstance(helpers, dict):
        for key, name in helpers.items():
            if isinstance(key, str) and _host_of(key) in keys and isinstance(name, str):
                return _from_helper(name, key, env, f"credHelpers in {where}")
    store = config.get("credsStore")
    if isinstance(store, str) and store:
        found = _store_lookup(store, keys, config, env, where)
        if found is not None:
            return found
    auths = config.get("auths")
    if isinstance(auths, dict):
        for key, entry in auths.items():
            if isinstance(key, str) and _host_of(key) in keys and isinstance(entry, dict):
                found = _from_auth_entry(entry, f"auths[{redact.url(key)!r}] in {where}")
                if found is not None:
                    return found
    return None


def _store_lookup(
    store: str, keys: set[str], config: dict[str, object], env: Mapping[str, str], where: str
) -> Credentials | None:
    # docker asks the store with the server key it logged in with: the auths key, else the host.
    auths = config.get("auths")
    servers = (
        [k for k in auths if isinstance(k, str) and _host_of(k) in keys]
        if isinstance(auths, dict)
        else []
    )
    for server in servers or sorted(keys):
        found = _from_helper(store, server, env, f"credsStore in {where}", missing_ok=True)
        if found is not None:
            return found
    return None


def _from_auth_entry(entry: dict[str, object], source: str) -> Credentials | None:
    token = entry.get("identitytoken")
    if isinstance(token, str) and token:
        return Credentials(IDENTITY_TOKEN_USER, token, source)
    auth = entry.get("auth")
    if isinstance(auth, str) and auth:
        try:
            decoded = base64.b64decode(auth, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise InputError(
                f"the 'auth' value of {source} is not base64 of user:password",
                hint="log in again with `docker login` (it rewrites the entry)",
            ) from None
        user, sep, secret = decoded.partition(":")
        if not sep or not user:
            raise InputError(
                f"the 'auth' value of {source} is not base64 of user:password",
                hint="log in again with `docker login` (it rewrites the entry)",
            )
        return Credentials(user, secret, source)
    name, password = entry.get("username"), entry.get("password")
    if isinstance(name, str) and isinstance(password, str) and name:
        return Credentials(name, password, source)
    return None


def _from_helper(
    name: str, server: str, env: Mapping[str, str], source: str, *, missing_ok: bool = False
) -> Credentials | None:
    """``docker-credential-NAME get`` with ``server`` on stdin (docker-credential-helpers
    protocol)."""
    if not _HELPER_NAME.fullmatch(name):
        raise InputError(
            f"credential helper name {name!r} in {source} is not a plain name",
            hint="fix credHelpers/credsStore in the Docker config",
        )
    binary = f"docker-credential-{name}"
    # A config key, shown with any login in it hidden and quoted for the hint's command line.
    server_shown = shell.quote(redact.url(server))
    found = shutil.which(binary, path=env.get("PATH"))
    if found is None:
        if missing_ok:
            return None
        raise RegistryError(
            f"{source} names the credential helper {binary}, which is not installed",
            hint=f"install {binary}, or remove it from the Docker config and `docker login` again",
        )
    try:
        result = capture.run(
            [found, "get"],
            stdin=server.encode(),
            timeout=HELPER_TIMEOUT,
            env=env,
            limit=MAX_HELPER_ANSWER,
        )
    except OSError as exc:
        raise RegistryError(
            f"credential helper {binary} did not answer for {server_shown} "
            f"({exc.__class__.__name__})",
            hint=f"run `echo {server_shown} | {binary} get` by hand to see what it needs",
        ) from None
    if result.timed_out:
        raise RegistryError(
            f"credential helper {binary} did not answer for {server_shown} within "
            f"{HELPER_TIMEOUT:.0f}s",
            hint=f"run `echo {server_shown} | {binary} get` by hand to see what it needs",
        )
    if result.returncode != 0:
        # "credentials not found in native keychain": no login for this server.
        return None
    try:
        data = None if result.truncated else bounded.loads_json(result.stdout)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("Secret"), str):
        raise RegistryError(
            f"credential helper {binary} answered for {server_shown} without Username/Secret JSON",
            hint=f"run `echo {server_shown} | {binary} get` by hand (it prints the secret: do it "
            "privately)",
        )
    user = data.get("Username")
    return Credentials(
        user if isinstance(user, str) else "", data["Secret"], f"{source} ({binary})"
    )
