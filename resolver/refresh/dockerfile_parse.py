"""Read the facts a vLLM ROCm Dockerfile declares: ARG defaults, FROM images, ``git clone`` URLs.

Only declarations are read, never executed: ``ARG NAME=default`` (the first default wins, as in
BuildKit where a later ``ARG NAME`` without a value only re-imports it), ``${NAME}`` references
expanded from earlier defaults, backslash continuations joined, comments dropped. Everything that
comes out is still untrusted text; ``resolver.refresh.vllm`` checks it against strict patterns.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_GITHUB_URL = re.compile(r"^https://github\.com/([^/\s]+)/([^/\s]+?)(?:\.git)?/?\Z")
_CMAKE_HIP = re.compile(r'set\(\s*HIP_SUPPORTED_ARCHS\s+"([^"]*)"', re.IGNORECASE)
# Before AITER_ROCM_ARCH existed (v0.8.2-v0.10.x) AITER was built with a literal list on its RUN
# line.
_LITERAL_GPU_ARCHS = re.compile(r"\bGPU_ARCHS=[\"']?([A-Za-z0-9;]+)[\"']?(?=\s)")
# FlashAttention's build line from v0.8.3: GPU_ARCHS=$(echo ${PYTORCH_ROCM_ARCH} | sed -e
# 's/;gfx1[0-9]\{3\}//g'): an ARG's list with every ";gfx1xxx" removed (FA_GPU_ARCHS in gfx1250).
_SED_GPU_ARCHS = re.compile(
    r"\bGPU_ARCHS=\$\(echo \$\{?([A-Za-z_][A-Za-z0-9_]*)\}? \| sed -e "
    r"'s/;gfx1\[0-9\]\\\{3\\\}//g'\)"
)


@dataclass
class DockerfileFacts:
    args: dict[str, str] = field(default_factory=dict)  # first default of each ARG (and ENV)
    froms: list[str] = field(default_factory=list)  # FROM images, ARGs expanded
    clones: list[str] = field(default_factory=list)  # literal URLs given to `git clone`
    aiter_build_archs: list[str] = field(
        default_factory=list
    )  # literal GPU_ARCHS on AITER's build line
    fa_build_archs: str | None = None  # FlashAttention's GPU_ARCHS as its build line makes it
    stages: list[str] = field(default_factory=list)  # FROM ... AS name, in order
    # ENV each stage sets, ARGs expanded (a value naming an unset variable is left out)
    stage_env: dict[str, dict[str, str]] = field(default_factory=dict)
    runs: list[tuple[str, str]] = field(default_factory=list)  # (stage, RUN line), in order


def logical_lines(text: str) -> list[str]:
    """Join backslash continuations and drop comment lines (Dockerfile rules, default escape)."""
    out: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.lstrip().startswith("#"):
            continue  # comments are dropped even inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        if full:
            out.append(full)
    if pending.strip():
        out.append(pending.strip())  # a file that ends inside a continuation: keep what is there
    return out


def expand(value: str, args: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        if name in args and args[name] != "":
            return args[name]
        return m.group(2) or ""

    return _VAR.sub(sub, value)


def _known_refs(value: str, args: dict[str, str]) -> bool:
    """Every variable ``value`` refers to is an ARG already set (a literal refers to none)."""
    names = [m.group(1) or m.group(3) for m in _VAR.finditer(value)]
    return all(n in args and args[n] != "" for n in names) and value.count("$") == len(names)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def parse(text: str) -> DockerfileFacts:
    facts = DockerfileFacts()
    stage = ""  # before the first FROM: the global scope
    for line in logical_lines(text):
        instr, _, rest = line.partition(" ")
        keyword = instr.upper()
        if keyword == "ENV":
            _stage_env(facts.stage_env.setdefault(stage, {}), rest, facts.args)
        if keyword in ("ARG", "ENV"):
            for word in _split(rest):
                name, eq, default = word.partition("=")
                # ENV adds literal values (AITER_ROCM_ARCH is an ENV from 2025-09 on) and values
                # made of ARGs the file already set (the gfx1250 files' AITER_ROCM_ARCH is
                # ${PYTORCH_ROCM_ARCH}); an ENV whose ARG a damaged file lost must not stand in.
                if (
                    eq
                    and name not in facts.args
                    and (keyword == "ARG" or _known_refs(default, facts.args))
                ):
                    facts.args[name] = expand(_unquote(default), facts.args)
        elif keyword == "FROM":
            words = [w for w in rest.split() if not w.startswith("--")]
            if words:
                facts.froms.append(expand(words[0], facts.args))
            if len(words) == 3 and words[1].upper() == "AS":
                stage = words[2]
                facts.stages.append(stage)
        elif keyword == "RUN":
            facts.runs.append((stage, rest))
            facts.clones.extend(_clone_urls(rest))
            if "flash-attention" in rest and facts.fa_build_archs is None:
                facts.fa_build_archs = _fa_archs(rest, facts.args)
            if "aiter" in rest and not facts.aiter_build_archs:
                m = _LITERAL_GPU_ARCHS.search(rest + " ")
                if m:
                    facts.aiter_build_archs = [a for a in m.group(1).split(";") if a]
    return facts


def _stage_env(env: dict[str, str], rest: str, args: dict[str, str]) -> None:
    """One ENV instruction into ``env``: ``NAME=value ...``, or the legacy ``NAME value``."""
    words = _split(rest)
    if words and "=" not in words[0]:
        pairs = [(words[0], " ".join(words[1:]))]
    else:
        pairs = [w.partition("=")[::2] for w in words if "=" in w]
    for name, value in pairs:
        value = _unquote(value)
        if _known_refs(value, args):
            env[name] = expand(value, args)


def declared_names(text: str) -> set[str]:
    """Every ARG, ENV and stage name a Dockerfile declares (what a build of it can be compared
    by: issue 39's upstream comparison)."""
    out = set(parse(text).stages)
    for line in logical_lines(text):
        keyword, _, rest = line.partition(" ")
        words = rest.split()
        if not words or keyword.upper() not in ("ARG", "ENV"):
            continue
        if keyword.upper() == "ARG" or "=" not in words[0]:
            out.add(words[0].partition("=")[0])
        else:
            out |= {w.partition("=")[0] for w in _split(rest) if "=" in w}
    return out


def _split(rest: str) -> list[str]:
    try:
        return shlex.split(rest, posix=False)
    except ValueError:
        return rest.split()  # unbalanced quote in a damaged file: take the words as they are


def _clone_urls(run: str) -> list[str]:
    try:
        words = shlex.split(run)
    except ValueError:
        words = run.split()
    urls = []
    for i, word in enumerate(words):
        if word == "clone" and i > 0 and words[i - 1] == "git":
            # The repository is the first URL-like word (options such as --depth 1 come first).
            for arg in words[i + 1 :]:
                if arg in ("&&", "||", ";", "|"):
                    break
                if arg.startswith("$") or "${" in arg:
                    break  # a ${VAR} clone is the *_REPO ARG, already read
                if "://" in arg:
                    urls.append(arg)
                    break
    return urls


def github_repo(url: str) -> str | None:
    """``https://github.com/ROCm/triton.git`` -> ``ROCm/triton``; anything else -> None."""
    m = _GITHUB_URL.match(url.strip())
    return f"{m.group(1)}/{m.group(2)}" if m else None


def cmake_hip_archs(text: str) -> list[str] | None:
    """The first ``set(HIP_SUPPORTED_ARCHS "...")`` list in vLLM's CMakeLists.txt."""
    m = _CMAKE_HIP.search(text)
    if not m:
        return None
    return [a.strip() for a in m.group(1).split(";") if a.strip()]


def _fa_archs(run: str, args: dict[str, str]) -> str | None:
    """FlashAttention's GPU_ARCHS on its build line, evaluated: a literal list, or an ARG's list
    through upstream's ``sed -e 's/;gfx1[0-9]\\{3\\}//g'`` (applied as sed would, so a gfx1xxx
    first in the list stays)."""
    m = _SED_GPU_ARCHS.search(run)
    if m:
        value = args.get(m.group(1))
        return re.sub(r";gfx1[0-9]{3}", "", value) if value else None
    m = _LITERAL_GPU_ARCHS.search(run + " ")
    return m.group(1) if m else None
