"""Every reason, warning and problem code the code can emit is documented in docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = re.compile(r"""\bcode=["']([a-z0-9][a-z0-9-]*)["']""")
# Problems made positionally: Problem("code", ...) and view.problem("code", ...), on one line or the next.
POSITIONAL = re.compile(r"""\b(?:Problem|problem)\(\s*f?["']([a-z0-9][a-z0-9{}_-]*)["']""")


def emitted_codes() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "resolver").rglob("*.py"):
        text = path.read_text()
        found |= set(CODE.findall(text))
        found |= {c for c in POSITIONAL.findall(text) if "{" not in c}
    return found


def test_every_emitted_code_is_documented() -> None:
    docs = "\n".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    codes = emitted_codes()
    assert len(codes) > 40  # the scan itself works
    missing = sorted(c for c in codes if f"`{c}`" not in docs)
    assert missing == [], (
        "document these codes (docs/verdicts.md, docs/probe.md, ...): " + ", ".join(missing)
    )
