"""Every reason code is worded once, in resolver/solve/words.py: the checks decide, the registry
says."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest

from resolver.data.codes import ADVISORY_CODES, REASON_CODES
from resolver.solve import words

PACKAGE = Path(__file__).resolve().parents[1] / "resolver"


def _sources() -> dict[Path, str]:
    return {
        p: p.read_text()
        for p in PACKAGE.rglob("*.py")
        if p.name != "words.py" and "__pycache__" not in p.parts
    }


@pytest.mark.parametrize("code", REASON_CODES + ADVISORY_CODES)
def test_every_code_has_its_words(code: str) -> None:
    assert any(k == code or k.startswith(code + "/") for k in words.WORDS), code


def test_every_wording_is_used_and_names_a_code() -> None:
    text = "\n".join(_sources().values())
    for key in words.WORDS:
        code = key.split("/")[0]
        assert code in REASON_CODES + ADVISORY_CODES, key
        # said by its key, or by its code with a variant the check names (f"{code}/{...}")
        said = f'"{key}"' in text or f'f"{code}/{{' in text
        assert said, f"wording {key} is never said"


def test_no_reason_or_advisory_is_worded_outside_the_registry() -> None:
    """A ``Reason(...)`` or ``Advisory(...)`` takes its message and hint from ``words``: no
    string literal or f-string is written for them anywhere else."""
    offenders = []
    for path, src in _sources().items():
        for node in ast.walk(ast.parse(src)):
            if not (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", "") in ("Reason", "Advisory")
            ):
                continue
            for kw in node.keywords:
                if kw.arg in ("message", "hint") and isinstance(
                    kw.value, ast.Constant | ast.JoinedStr | ast.BinOp
                ):
                    offenders.append(f"{path.name}:{node.lineno} {kw.arg}")
    assert not offenders, offenders


def test_every_template_formats_with_the_values_its_checks_give() -> None:
    """A template names only plain fields (no attribute or index lookups into live objects)."""
    for key, said in words.WORDS.items():
        for template in (said.message, said.hint, said.fix, *said.facts):
            for _, field, spec, conv in string.Formatter().parse(template):
                if field is not None:
                    assert field.isidentifier() and not spec and not conv, (key, field)


def test_a_derivation_words_each_candidate_code_through_the_registry() -> None:
    from resolver.explain.chain import CODE_ORDER

    for code in CODE_ORDER:
        assert code in words.PREDICATES or code.endswith("-unknown"), code
