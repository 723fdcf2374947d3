"""Every code is worded once: the solver's findings at the explanation edge
(resolver/explain/words.py), the probe's problems where the probe writes its report
(resolver/data/words.py). The checks decide, the registry says."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest

from resolver.data import words as probe_words
from resolver.data.codes import ADVISORY_CODES, PROBLEM_CODES, REASON_CODES
from resolver.explain import words

PACKAGE = Path(__file__).resolve().parents[1] / "resolver"


def _sources() -> dict[Path, str]:
    return {
        p: p.read_text()
        for p in PACKAGE.rglob("*.py")
        if p.name != "words.py" and "__pycache__" not in p.parts
    }


# A problem read from a node file under a code this version does not know keeps that file's
# words (resolver.data.node): it has none of its own.
SAID_BY_THE_FILE = {"probe-reported"}
ALL_CODES = REASON_CODES + ADVISORY_CODES + PROBLEM_CODES
# Wordings that are not a code's: bad input the solver finds (RequestError), what an unknown
# answer lacks (MissingFact), and values several wordings take.
NOT_A_CODE = {
    "request",
    "missing",
    "arch-list",
    "os-ships-glibc",
    "cuda-recipe",
    "fit",
    "model-attention",
    "model-note",
}
WORDS = {**probe_words.WORDS, **words.WORDS}


def test_the_two_registries_are_disjoint_and_split_by_code() -> None:
    assert not set(probe_words.WORDS) & set(words.WORDS)
    assert {k.split("/")[0] for k in probe_words.WORDS} <= set(PROBLEM_CODES)
    assert not {k.split("/")[0] for k in words.WORDS} & set(PROBLEM_CODES)


def test_the_solver_imports_no_wording() -> None:
    """The solver decides and hands back phrases (``resolver.solve.finding``): it imports
    neither registry (lint-imports forbids it too)."""
    for path in (PACKAGE / "solve").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = {f"{node.module}.{a.name}" for a in node.names} | {node.module or ""}
            elif isinstance(node, ast.Import):  # `import resolver.explain.words`
                names = {a.name for a in node.names}
            else:
                continue
            assert not any(n.endswith("words") for n in names), (path.name, names)


@pytest.mark.parametrize("code", sorted(set(ALL_CODES) - SAID_BY_THE_FILE))
def test_every_code_has_its_words(code: str) -> None:
    assert any(k == code or k.startswith(code + "/") for k in WORDS), code


def test_every_wording_is_used_and_names_a_code() -> None:
    text = "\n".join(_sources().values())
    for key in WORDS:
        code = key.split("/")[0]
        assert code in ALL_CODES or code in NOT_A_CODE, key
        # said by its key, or by its code with a variant the check names (f"{code}/{...}")
        said = f'"{key}"' in text or f'f"{code}/{{' in text
        assert said, f"wording {key} is never said"


def _written(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant | ast.JoinedStr | ast.BinOp)


def test_no_finding_is_worded_outside_the_registry() -> None:
    """A ``Reason``, ``Advisory`` or probe ``Problem`` takes its message and hint from
    ``words``: no string literal or f-string is written for them anywhere else."""
    offenders = []
    for path, src in _sources().items():
        for node in ast.walk(ast.parse(src)):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", "") or getattr(node.func, "attr", "")
            if name in ("Reason", "Advisory", "Problem"):
                offenders += [
                    f"{path.name}:{node.lineno} {kw.arg}"
                    for kw in node.keywords
                    if kw.arg in ("message", "hint") and _written(kw.value)
                ]
            elif name == "problem" and any(_written(a) for a in node.args[1:]):
                offenders.append(f"{path.name}:{node.lineno} problem()")
    assert not offenders, offenders


def test_every_template_formats_with_the_values_its_checks_give() -> None:
    """A template names only plain fields (no attribute or index lookups into live objects)."""
    for key, said in WORDS.items():
        for template in (said.message, said.hint, said.fix, *said.facts):
            for _, field, spec, conv in string.Formatter().parse(template):
                if field is not None:
                    assert field.isidentifier() and not spec and conv in (None, "r"), (key, field)


def test_a_derivation_words_each_candidate_code_through_the_registry() -> None:
    from resolver.explain.chain import CODE_ORDER

    for code in CODE_ORDER:
        assert code in words.PREDICATES or code.endswith("-unknown"), code


def test_no_wording_is_written_twice() -> None:
    """A variant says only what differs (``base``); shared words are one constant: no text of
    the registry is written in two places, so no two places can drift apart."""
    from collections import Counter

    srcs = [(PACKAGE / d / "words.py").read_text() for d in ("data", "explain")]
    literals = Counter(
        n.value
        for src in srcs
        for n in ast.walk(ast.parse(src))
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) >= 30
    )
    assert [t for t, n in literals.items() if n > 1] == []
    for key, said in WORDS.items():
        assert not said.base or said.base in WORDS, key
