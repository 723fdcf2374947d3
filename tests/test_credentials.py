"""Registry credentials from the user's Docker config (issue 11.16): auths, credHelpers and
credsStore, against a real docker-registry with htpasswd (Basic) auth and the token-auth registry;
a secret never reaches any output."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from resolver.artifacts.credentials import Credentials, config_path, lookup
from resolver.artifacts.registry import RegistryClient, parse_registry
from resolver.cli import app
from resolver.util.errors import InputError, RegistryError
from tests import services
from tests.conftest import BASIC_PASSWORD, BASIC_USER

OFFICIAL = "vllm/vllm-openai-rocm"
MI300X_X8 = ["--gfx", "gfx942", "--gpus", "8", "--driver", "30.30.3"]


def write_config(directory: Path, config: dict[str, Any]) -> dict[str, str]:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    return {"DOCKER_CONFIG": str(directory)}


def auths(host: str, user: str = BASIC_USER, password: str = BASIC_PASSWORD) -> dict[str, Any]:
    return {"auths": {host: {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}}}


def host_of(url: str) -> str:
    return url.split("://", 1)[1]


# --- reading the Docker config -------------------------------------------------------------------


def test_no_config_means_no_credentials(tmp_path: Path) -> None:
    assert lookup("127.0.0.1:5000", env={"DOCKER_CONFIG": str(tmp_path)}) is None
    assert config_path({"DOCKER_CONFIG": "/x"}) == Path("/x/config.json")
    assert config_path({}) == Path.home() / ".docker" / "config.json"


def test_auths_entry_by_host_with_or_without_scheme(tmp_path: Path) -> None:
    env = write_config(tmp_path, auths("https://Registry.Example:5000/v1/"))
    creds = lookup("registry.example:5000", env=env)
    assert creds is not None and (creds.username, creds.secret) == (BASIC_USER, BASIC_PASSWORD)
    assert "auths" in creds.source
    assert lookup("other.example", env=env) is None


def test_docker_hub_is_found_under_its_v1_index_key(tmp_path: Path) -> None:
    env = write_config(tmp_path, auths("https://index.docker.io/v1/", "hubuser", "hubpass"))
    creds = lookup("registry-1.docker.io", env=env)
    assert creds is not None and creds.username == "hubuser"


def test_identity_token_entry(tmp_path: Path) -> None:
    env = write_config(tmp_path, {"auths": {"r.example": {"identitytoken": "refresh-xyz"}}})
    creds = lookup("r.example", env=env)
    assert creds is not None and creds.identity_token
    assert creds.engine_auth() == {"identitytoken": "refresh-xyz"}


def test_cred_helpers_and_creds_store_speak_the_helper_protocol(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    services.credential_helper(bin_dir, "rvtest", {"r.example": ("helper-user", "helper-secret")})
    path = f"{bin_dir}:/usr/bin:/bin"
    env = write_config(tmp_path / "a", {"credHelpers": {"r.example": "rvtest"}}) | {"PATH": path}
    creds = lookup("r.example", env=env)
    assert creds is not None and (creds.username, creds.secret) == ("helper-user", "helper-secret")
    assert "docker-credential-rvtest" in creds.source
    assert (bin_dir / "asked.log").read_text() == "get r.example\n"
    store = write_config(tmp_path / "b", {"credsStore": "rvtest", "auths": {"r.example": {}}}) | {
        "PATH": path
    }
    found = lookup("r.example", env=store)
    assert found is not None and found.username == "helper-user" and "credsStore" in found.source
    assert lookup("unknown.example", env=store) is None  # the helper says: not found


def test_a_missing_helper_and_a_broken_config_are_clean_errors(tmp_path: Path) -> None:
    env = write_config(tmp_path / "a", {"credHelpers": {"r.example": "nosuchhelper"}}) | {
        "PATH": "/nonexistent"
    }
    with pytest.raises(RegistryError, match="docker-credential-nosuchhelper"):
        lookup("r.example", env=env)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "config.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        lookup("r.example", env={"DOCKER_CONFIG": str(tmp_path / "b")})
    bad = write_config(tmp_path / "c", {"auths": {"r.example": {"auth": "!!!"}}})
    with pytest.raises(InputError) as err:
        lookup("r.example", env=bad)
    assert "!!!" not in err.value.message


def test_a_config_path_and_key_are_shown_escaped_and_without_a_login(tmp_path: Path) -> None:
    odd = tmp_path / "cfg\nerror: forged"
    (odd).mkdir()
    (odd / "config.json").write_text("{not json")
    with pytest.raises(InputError) as err:
        lookup("r.example", env={"DOCKER_CONFIG": str(odd)})
    assert "\n" not in err.value.message and "error: forged" in err.value.message
    # A helper that fails for a server key carrying a login: the hint's command hides it.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    helper = bin_dir / "docker-credential-broken"
    helper.write_text("#!/bin/sh\necho not-json\n")
    helper.chmod(0o755)
    env = write_config(
        tmp_path / "k", {"credsStore": "broken", "auths": {"https://bob:S3cretTok@r.example": {}}}
    ) | {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    with pytest.raises(RegistryError) as failed:
        lookup("r.example", env=env)
    assert "S3cretTok" not in failed.value.message + (failed.value.hint or "")


def test_a_secret_is_never_in_repr_or_str() -> None:
    creds = Credentials("user", "very-secret", "auths in /x/config.json")
    assert "very-secret" not in repr(creds) and "very-secret" not in str(creds)


# --- against docker-registry with htpasswd (Basic) auth ------------------------------------------


def _client(url: str, env: dict[str, str]) -> RegistryClient:
    return RegistryClient(
        parse_registry(url), backoff=0.05, credentials=lambda host: lookup(host, env=env)
    )


@pytest.mark.registry
def test_basic_auth_registry_without_credentials_says_docker_login(
    basic_registry: str, shim_images, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    import requests

    assert (
        requests.head(f"{basic_registry}/v2/{OFFICIAL}/manifests/v0.24.0", timeout=5).status_code
        == 401
    )
    with pytest.raises(RegistryError) as err:
        _client(basic_registry, {"DOCKER_CONFIG": str(tmp_path)}).resolve(OFFICIAL, "v0.24.0")
    assert "wants a login (Basic auth)" in err.value.message
    assert f"docker login {host_of(basic_registry)}" in (err.value.hint or "")


@pytest.mark.registry
def test_basic_auth_with_auths_from_the_docker_config(
    basic_registry: str, shim_images, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    env = write_config(tmp_path, auths(host_of(basic_registry)))
    got = _client(basic_registry, env).resolve(OFFICIAL, "v0.24.0")
    assert got.digest == shim_images.official.digest


@pytest.mark.registry
def test_basic_auth_with_a_cred_helper(basic_registry: str, shim_images, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    host = host_of(basic_registry)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    services.credential_helper(bin_dir, "rvtest", {host: (BASIC_USER, BASIC_PASSWORD)})
    env = write_config(tmp_path / "cfg", {"credHelpers": {host: "rvtest"}}) | {
        "PATH": f"{bin_dir}:/usr/bin:/bin"
    }
    got = _client(basic_registry, env).resolve(OFFICIAL, "v0.20.0")
    assert got.digest == shim_images.index.digest
    assert (bin_dir / "asked.log").read_text() == f"get {host}\n"


@pytest.mark.registry
def test_wrong_password_is_refused_and_never_shown(
    basic_registry: str, shim_images, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    env = write_config(tmp_path, auths(host_of(basic_registry), password="wrong-pass-xyz"))
    with pytest.raises(RegistryError) as err:
        _client(basic_registry, env).resolve(OFFICIAL, "v0.24.0")
    text = f"{err.value.message} {err.value.hint}"
    assert "refused the credentials" in text and "auths" in text
    assert "wrong-pass-xyz" not in text
    assert err.value.exit_code == 4


# --- token auth with credentials (the Docker Hub / Harbor flow) -----------------------------------


@pytest.mark.registry
def test_token_flow_sends_the_credentials_to_the_token_server(
    token_registry, shim_images, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    url, tokens = token_registry
    env = write_config(tmp_path, auths(host_of(url)))
    before = len(tokens.users)
    assert _client(url, env).resolve(OFFICIAL, "v0.24.0").digest == shim_images.official.digest
    assert tokens.users[before:] == [BASIC_USER]
    anonymous = _client(url, {"DOCKER_CONFIG": str(tmp_path / "none")})
    assert anonymous.resolve(OFFICIAL, "v0.24.0").digest == shim_images.official.digest
    assert tokens.users[-1] is None


@pytest.mark.registry
def test_identity_token_uses_the_refresh_token_grant(
    token_registry, shim_images, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    url, tokens = token_registry
    env = write_config(
        tmp_path / "ok", {"auths": {host_of(url): {"identitytoken": tokens.refresh_token}}}
    )
    assert _client(url, env).resolve(OFFICIAL, "v0.24.0").digest == shim_images.official.digest
    form = tokens.requests[-1]
    assert form["grant_type"] == ["refresh_token"] and form["service"] == [tokens.service]
    assert form["scope"] == [f"repository:{OFFICIAL}:pull"]
    stale = write_config(
        tmp_path / "stale", {"auths": {host_of(url): {"identitytoken": "refresh-expired"}}}
    )
    with pytest.raises(RegistryError) as err:
        _client(url, stale).resolve(OFFICIAL, "v0.24.0")
    assert (
        "refused the credentials" in err.value.message
        and "refresh-expired" not in err.value.message
    )


# --- through the CLI: --digest and --pull, no secret in any output --------------------------------


def _cli(*args: str, env: dict[str, str]) -> Any:
    return CliRunner().invoke(
        app, ["image", *args], env={"NO_COLOR": "1", "ROCM_VLLM_REGISTRY": "", **env}
    )


@pytest.mark.registry
def test_image_digest_through_a_private_mirror(
    basic_registry: str, shim_images, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    env = write_config(tmp_path, auths(host_of(basic_registry)))
    for extra in ((), ("--json",)):
        result = _cli(*MI300X_X8, "--registry", basic_registry, "--digest", *extra, env=env)
        assert result.exit_code == 0, result.output
        assert shim_images.official.digest in result.stdout
        assert BASIC_PASSWORD not in result.stdout + result.stderr
        assert (
            base64.b64encode(f"{BASIC_USER}:{BASIC_PASSWORD}".encode()).decode()
            not in result.stdout + result.stderr
        )
    denied = _cli(
        *MI300X_X8,
        "--registry",
        basic_registry,
        "--digest",
        env={"DOCKER_CONFIG": str(tmp_path / "empty")},
    )
    assert denied.exit_code == 4
    assert denied.stderr.startswith("error: ") and "docker login" in denied.stderr


@pytest.mark.docker
def test_image_pull_through_a_private_mirror(
    basic_registry: str, shim_images, docker_url: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    env = write_config(tmp_path, auths(host_of(basic_registry))) | {"DOCKER_HOST": docker_url}
    result = _cli(*MI300X_X8, "--registry", basic_registry, "--digest", "--pull", "--json", env=env)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["pull"]["verified"] is True
    assert (
        f"{host_of(basic_registry)}/{OFFICIAL}@{shim_images.official.digest}"
        in out["pull"]["repo_digests"]
    )
    assert BASIC_PASSWORD not in result.stdout + result.stderr
