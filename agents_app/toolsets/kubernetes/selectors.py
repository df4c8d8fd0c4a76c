"""kubectl's selector syntax (`app=payments,tier!=cache`, `env in (a,b)`, `!canary`) read into
lightkube's selector pairs, so the model can write selectors as it knows them."""

from __future__ import annotations

import re

from lightkube import operators

from agents_app.toolsets.contract import ToolError

_SET = re.compile(r"^([\w./-]+)\s+(in|notin)\s*\(([^)]*)\)$")
_PAIR = re.compile(r"^([\w./-]+)\s*(==|!=|=)\s*([\w.-]*)$")
_KEY = re.compile(r"^(!?)([\w./-]+)$")


def _terms(text: str) -> list[str]:
    """Split at the commas outside parentheses."""
    terms, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    terms.append(current.strip())
    return [t for t in terms if t]


def parse(text: str | None, *, fields: bool = False) -> list[tuple[str, object]] | None:
    """The pairs of selector `text` (None when empty); a term it cannot read is a ToolError."""
    if not text or not text.strip():
        return None
    which = "field_selector" if fields else "label_selector"
    pairs: list[tuple[str, object]] = []
    for term in _terms(text):
        pair = _PAIR.match(term)
        chosen = _SET.match(term) if not fields else None
        key = _KEY.match(term) if not fields else None
        if pair:
            key_name, op, value = pair.groups()
            pairs.append((key_name, operators.not_equal(value) if op == "!=" else operators.equal(value)))
        elif chosen:
            values = [v.strip() for v in chosen.group(3).split(",") if v.strip()]
            maker = operators.in_ if chosen.group(2) == "in" else operators.not_in
            pairs.append((chosen.group(1), maker(values)))
        elif key:
            pairs.append((key.group(2), operators.not_exists() if key.group(1) else operators.exists()))
        else:
            raise ToolError(f"{which}: cannot read {term!r} (use key=value, key!=value, key in (a,b), !key)")
    return pairs
