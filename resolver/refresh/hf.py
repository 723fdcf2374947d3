"""``--online``: fetch a model's config files (never weights) into the Hugging Face cache layout.

GET ``{endpoint}/{id}/resolve/main/{file}`` for ``config.json``, ``generation_config.json`` and
``model.safetensors.index.json`` (``HF_ENDPOINT``, default https://huggingface.co), through the
project's ``HttpClient`` (timeouts, retries on 429/5xx, a size cap), written atomically as
``models--org--name/snapshots/<rev>/<file>`` with ``refs/main`` naming ``<rev>`` (the commit the
Hub states in ``X-Repo-Commit``), so that ``hfmodel.read_model(id)`` finds them. A missing
generation config or index is fine; a gated or private model (401/403) is a clear error.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

from resolver.data import hfmodel
from resolver.refresh.http import HttpClient
from resolver.util import atomic, redact
from resolver.util.errors import ModelError, RegistryError

DEFAULT_ENDPOINT: Final = "https://huggingface.co"
FILES: Final = ("config.json", "generation_config.json", "model.safetensors.index.json")
LIMITS: Final = {
    "config.json": hfmodel.CONFIG_LIMIT,
    "generation_config.json": hfmodel.CONFIG_LIMIT,
    "model.safetensors.index.json": hfmodel.INDEX_LIMIT,
}
_REV_RE: Final = re.compile(r"[0-9a-f]{40}")
_LOCAL_REV: Final = "0" * 40  # a mirror that states no commit: one fixed local snapshot


def endpoint_from_env() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def fetch_model_files(
    model_id: str,
    *,
    endpoint: str | None = None,
    cache_dir: Path | None = None,
    timeout: tuple[float, float] = (5.0, 30.0),
    client: HttpClient | None = None,
    token: str | None = None,
) -> Path:
    """Fetch the config files of ``model_id`` into the hub cache ``cache_dir`` (default: the one
    ``read_model`` reads); returns the snapshot directory."""
    if not hfmodel.is_model_id(model_id):
        raise ModelError(
            f"--model {model_id!r} is not a Hugging Face id",
            hint="a Hugging Face id is org/name (letters, digits, '.', '_', '-')",
        )
    base = (endpoint or endpoint_from_env()).rstrip("/")
    own = client is None
    http = client or HttpClient(timeout=timeout, retries=2)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    got: dict[str, bytes] = {}
    rev: str | None = None
    try:
        for name in FILES:
            http.max_body = LIMITS[name]
            url = f"{base}/{model_id}/resolve/main/{name}"
            resp = http.get(url, headers=headers, allow=frozenset({401, 403, 404}))
            if resp.status in (401, 403):
                raise RegistryError(
                    f"{model_id} is gated or private ({redact.url(url)}: HTTP {resp.status})",
                    hint="accept its licence on the Hub and set HF_TOKEN, or download "
                    "config.json yourself and pass the directory",
                )
            if resp.status == 404:
                if name == "config.json":
                    raise ModelError(
                        f"{model_id}: no config.json at {redact.url(url)}",
                        hint="check the id (org/name) and HF_ENDPOINT",
                    )
                continue
            got[name] = resp.body
            commit = resp.headers.get("x-repo-commit", "")
            if rev is None and _REV_RE.fullmatch(commit):
                rev = commit
    finally:
        if own:
            http.close()
    # What is written must read back: a proxy's HTML page is refused before it lands in the cache.
    hfmodel.parse_config(_json_object(got["config.json"], model_id), source=model_id)
    repo = hfmodel.cache_repo_dir(model_id) if cache_dir is None else _repo(cache_dir, model_id)
    snap = repo / "snapshots" / (rev or _LOCAL_REV)
    for name, body in got.items():
        atomic.write_atomic(snap / name, body)
    atomic.write_atomic(repo / "refs" / "main", rev or _LOCAL_REV)
    return snap


def _repo(cache_dir: Path, model_id: str) -> Path:
    org, name = model_id.split("/")
    return cache_dir / f"models--{org}--{name}"


def _json_object(body: bytes, model_id: str) -> dict[str, object]:
    try:
        value = hfmodel.loads_config(body)
    except (ValueError, UnicodeDecodeError):
        value = None
    if not isinstance(value, dict):
        raise RegistryError(
            f"{model_id}: the config.json served is not a JSON object",
            hint="the endpoint answered with something else (a proxy page?); check HF_ENDPOINT",
        )
    return value
