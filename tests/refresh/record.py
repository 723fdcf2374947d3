"""Re-record the upstream responses under tests/refresh/recorded/ (see SOURCES.md there).

These machines reach only package registries, so GitHub content comes from repository snapshots
(git directories) rather than from the live hosts:

    python tests/refresh/record.py --vllm-git /path/to/vllm.git --rocm-git /path/to/ROCm.git

- raw files: the exact bytes of each file at each tag's commit (what raw.githubusercontent.com
  serves for /<owner>/<repo>/<sha>/<path>);
- tags pages: the GitHub REST "list repository tags" JSON shape (name, commit.sha, commit.url,
  zipball_url, tarball_url, node_id omitted) rebuilt from the snapshot's tag refs: a
  RECONSTRUCTION, not a recorded API response.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

HERE = Path(__file__).parent / "recorded"
VLLM_TAGS = ("v0.6.2", "v0.7.0", "v0.8.2", "v0.8.3", "v0.10.0")
VLLM_FILES = (
    "docker/Dockerfile.rocm_base",
    "docker/Dockerfile.rocm",
    "Dockerfile.rocm_base",
    "Dockerfile.rocm",
    "CMakeLists.txt",
)
PAGE = 50  # split the tag list over two pages so that Link pagination is exercised


def git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def tags(repo: Path) -> list[tuple[str, str]]:
    out = []
    for line in git(repo, "show-ref", "--tags", "-d").decode().splitlines():
        sha, ref = line.split()
        name = ref.removeprefix("refs/tags/")
        if name.endswith("^{}"):
            out = [(n, sha if n == name[:-3] else s) for n, s in out]  # annotated: use the commit
            continue
        out.append((name, sha))
    return sorted(out, key=lambda t: t[0], reverse=True)


def tag_pages(owner_repo: str, items: list[tuple[str, str]], stem: str) -> None:
    api = "https://api.github.com"
    entries = [
        {
            "name": name,
            "zipball_url": f"{api}/repos/{owner_repo}/zipball/refs/tags/{name}",
            "tarball_url": f"{api}/repos/{owner_repo}/tarball/refs/tags/{name}",
            "commit": {"sha": sha, "url": f"{api}/repos/{owner_repo}/commits/{sha}"},
        }
        for name, sha in items
    ]
    for i in range(0, len(entries), PAGE):
        path = HERE / "github" / f"{stem}-page{i // PAGE + 1}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(entries[i : i + PAGE], indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vllm-git", type=Path, required=True)
    ap.add_argument("--rocm-git", type=Path, required=True)
    a = ap.parse_args()
    vllm_tags = tags(a.vllm_git)
    tag_pages("vllm-project/vllm", vllm_tags, "vllm-project-vllm-tags")
    tag_pages("ROCm/ROCm", tags(a.rocm_git), "ROCm-ROCm-tags")
    shas = dict(vllm_tags)
    for tag in VLLM_TAGS:
        sha = shas[tag]
        listing = set(git(a.vllm_git, "ls-tree", "-r", "--name-only", sha).decode().splitlines())
        for path in VLLM_FILES:
            if path in listing:
                dest = HERE / "raw" / "vllm-project" / "vllm" / sha / path
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(git(a.vllm_git, "show", f"{sha}:{path}"))


if __name__ == "__main__":
    main()
