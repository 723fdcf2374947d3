"""Every reason, warning and problem code the code can emit is documented in docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = re.compile(r"""\bcode=["']([a-z0-9][a-z0-9-]*)["']""")
# Problems made positionally: Problem("code", ...) and view.problem("code", ...), on one line or the
# next.
POSITIONAL = re.compile(r"""\b(?:Problem|problem)\(\s*f?["']([a-z0-9][a-z0-9{}_-]*)["']""")


def said_codes(text: str) -> set[str]:
    """The codes of ``Advisory.said(KEY, ...)`` calls: every string the key can be (a
    conditional's branches too), each up to its first "/" (the wording's variant)."""
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "said"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "Advisory"
        ):
            assert node.args, "Advisory.said without its key"
            for part in ast.walk(node.args[0]):
                assert not isinstance(part, ast.JoinedStr), "an advisory key built from pieces"
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    found.add(part.value.partition("/")[0])
    return found


def emitted_codes() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "resolver").rglob("*.py"):
        text = path.read_text()
        found |= set(CODE.findall(text))
        found |= {c for c in POSITIONAL.findall(text) if "{" not in c}
        found |= said_codes(text)
    return found


def test_every_emitted_code_is_documented() -> None:
    docs = "\n".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    codes = emitted_codes()
    assert len(codes) > 40  # the scan itself works
    missing = sorted(c for c in codes if f"`{c}`" not in docs)
    assert missing == [], (
        "document these codes (docs/verdicts.md, docs/probe.md, ...): " + ", ".join(missing)
    )


def test_every_reason_and_advisory_code_is_one_literal_and_documented() -> None:
    from resolver.data.codes import ADVISORY_CODES, REASON_CODES

    docs = (ROOT / "docs" / "verdicts.md").read_text()
    listed = REASON_CODES + ADVISORY_CODES
    assert len(set(listed)) == len(listed) and set(REASON_CODES).isdisjoint(ADVISORY_CODES)
    missing = sorted(c for c in listed if f"`{c}`" not in docs)
    assert missing == [], "document these codes in docs/verdicts.md: " + ", ".join(missing)


def test_no_reason_or_advisory_code_outside_the_literals() -> None:
    # mypy checks each Reason(code=...) against ReasonCode; a Advisory also passes probe problems
    # through, so its codes are checked here: every module that makes a solver Advisory, and no
    # code built from pieces (an f-string code cannot be listed or documented).
    import ast

    from resolver.data.codes import ADVISORY_CODES, REASON_CODES

    paths = [*(ROOT / "resolver" / "solve").rglob("*.py")]
    paths += [
        ROOT / "resolver" / "artifacts" / "images.py",
        ROOT / "resolver" / "artifacts" / "parallel.py",
    ]
    found: set[str] = set()
    for path in paths:
        text = path.read_text()
        found |= set(CODE.findall(text)) | said_codes(text)
        # Every string a code= argument can take, a conditional's branches too (issue 21: a
        # `code="a" if x else "b"` hid "mxfp4-emulated" from the regex above).
        for node in ast.walk(ast.parse(text)):
            for kw in getattr(node, "keywords", []) if isinstance(node, ast.Call) else []:
                if kw.arg != "code":
                    continue
                for part in ast.walk(kw.value):
                    assert not isinstance(part, ast.JoinedStr), f"{path.name} builds a code"
                    if isinstance(part, ast.Constant) and isinstance(part.value, str):
                        found.add(part.value)
    assert found, "the scan itself works"
    assert sorted(found - set(REASON_CODES) - set(ADVISORY_CODES)) == []


def test_explain_and_solve_read_no_prose_back() -> None:
    """Pass structure, never prose: no regex and no substring test over the tool's own messages
    in the layers that decide and word (``message``, ``hint``, ``text``, ``label`` fields)."""
    import ast

    prose = {"message", "hint", "text", "label", "detail"}
    string_ops = {"startswith", "endswith", "split", "rsplit", "partition", "find", "index"}
    string_ops |= {"removeprefix", "removesuffix", "replace"}
    offences: list[str] = []
    for layer in ("solve", "explain"):
        for path in sorted((ROOT / "resolver" / layer).rglob("*.py")):
            tree = ast.parse(path.read_text())
            where = path.relative_to(ROOT)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    names = [a.name for a in node.names]
                    module = getattr(node, "module", None)
                    # text.py finds `inline commands` to keep them unwrapped: layout, not data.
                    if ("re" in names or module == "re") and path.name != "text.py":
                        offences.append(f"{where}:{node.lineno} imports re")
                if isinstance(node, ast.Compare) and any(
                    isinstance(op, ast.In | ast.NotIn) for op in node.ops
                ):
                    # `x in r.hint` is a substring test; `h.text in seen` (a set) is not.
                    for side in node.comparators:
                        if isinstance(side, ast.Attribute) and side.attr in prose:
                            offences.append(f"{where}:{node.lineno} `in` over .{side.attr}")
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in string_ops
                    and isinstance(node.func.value, ast.Attribute)
                    and node.func.value.attr in prose
                ):
                    offences.append(
                        f"{where}:{node.lineno} .{node.func.value.attr}.{node.func.attr}()"
                    )
    assert offences == []


def test_probe_problem_codes_are_one_literal_and_documented() -> None:
    """issue 21: a probe problem code is a type (ProblemCode), so an Advisory's code is
    AdvisoryCode | ProblemCode, never any string; each one is documented in docs/."""
    from resolver.data.codes import PROBLEM_CODES

    docs = "\n".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    assert len(PROBLEM_CODES) > 25
    assert [c for c in PROBLEM_CODES if f"`{c}`" not in docs] == []
    emitted = {c for c in emitted_codes() if c in PROBLEM_CODES}
    assert emitted <= set(PROBLEM_CODES)


def test_a_node_files_unknown_problem_code_is_read_as_probe_reported() -> None:
    from resolver.data.node import from_json

    node = from_json(
        {
            "gfx_targets": ["gfx942"],
            "problems": [
                {"code": "from-the-future", "message": "something new", "hint": "upgrade"},
                {"code": "numa-balancing-on", "message": "NUMA balancing is on", "hint": "off"},
            ],
        },
        where="n.json",
    )
    assert [(p.code, p.message) for p in node.problems] == [
        ("probe-reported", "something new (reported as from-the-future)"),
        ("numa-balancing-on", "NUMA balancing is on"),
    ]
