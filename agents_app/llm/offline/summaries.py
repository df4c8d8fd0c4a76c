"""Turning what the tools returned into the answer: a specialist's report relayed, or a few readable
bullets per tool result; and the plain answer when no tool fits."""

from __future__ import annotations

import json
from typing import Any

from agents_app.toolsets.manifest import ROLE_DISPATCH
from ops_app.core.text import cut_at_word

from .phrases import CANNOT, ENDED, FOUND, HELLO, LABEL, RAN, WHY_NO_FIT, WHY_NO_TOOLS, labels, phrase
from .tool_knowledge import tool_for

# The one fact shown beside a record's label: how big, how bad, in what state, since when.
EXTRA_KEYS = ("size", "severity", "status", "at", "started_at")
_LABEL_KEYS = ("title", "name", "summary", "event", "path", "message", "line", "resource_name", "status")
MAX_FIELDS, MAX_ITEMS, MAX_TEXT = 8, 3, 160


def summarise(results: list[tuple[str, str]], language: str = "en", targets: list[str] | None = None) -> str:
    """The final answer over the last step's (tool, content) results, `targets[i]` naming where
    the i-th ran."""
    label = phrase(language, LABEL)
    if results and all(name == tool_for(ROLE_DISPATCH) for name, _ in results):
        body = "\n\n".join(cut_at_word(_worker_report(content, language), 3000) for _, content in results)
        return f"{phrase(language, FOUND)}\n\n{body}\n\n{label}"
    lines = [phrase(language, RAN, count=len(results)), ""]
    targets = targets or []
    for index, (name, content) in enumerate(results):
        where = f" — {targets[index]}" if index < len(targets) and targets[index] else ""
        lines.extend([f"**`{name}`**{where}", ""])  # the blank line makes the bullets a Markdown list
        lines.extend(describe(content))
        lines.append("")
    lines.append(label)
    return "\n".join(lines)


def plain_answer(request: str, had_tools: bool, language: str = "en") -> str:
    """The answer when no tool fits: it says what was asked and why it cannot answer it."""
    label = phrase(language, LABEL)
    if not request.strip():
        return f"{phrase(language, HELLO)} {label}"
    why = phrase(language, WHY_NO_FIT if had_tools else WHY_NO_TOOLS)
    return f"{phrase(language, CANNOT, request=request.strip()[:500], why=why)} {label}"


def _worker_report(content: str, language: str = "en") -> str:
    """The specialist's own answer out of AgentTool's JSON envelope, without a second label."""
    try:
        payload = json.loads(content)
    except ValueError:
        return content.strip()
    if not isinstance(payload, dict):
        return content.strip()
    text = str(payload.get("result") or payload.get("error") or content)
    for label in labels():
        text = text.replace(label, "")
    text = text.strip()
    status = payload.get("worker_status") or payload.get("status")
    if status and status not in ("completed", "ok"):
        text = f"{phrase(language, ENDED, status=status)} {text}"
    return text


def _label(value: Any) -> str:
    """One short line for a value: a record's title/name/… rather than its whole JSON."""
    if isinstance(value, dict):
        for key in _LABEL_KEYS:
            if value.get(key) not in (None, "", [], {}):
                extra = next((value[k] for k in EXTRA_KEYS if k in value and k != key), None)
                text = f"{value[key]}" + (f" ({extra})" if extra not in (None, "") else "")
                return cut_at_word(text, MAX_TEXT)
        return cut_at_word(json.dumps(value, ensure_ascii=False), MAX_TEXT)
    if isinstance(value, list):
        return f"{len(value)} item(s)"
    return cut_at_word(str(value), MAX_TEXT)


def _record(value: Any) -> str:
    """A single record in full (its name, then its other fields): the answer to "what role does
    node-07 have?" is in the fields a one-line label leaves out."""
    if not isinstance(value, dict):
        return _label(value)
    fields = []
    for key, item in value.items():
        if item in (None, "", [], {}) or key in ("id", "name", "title"):
            continue
        if isinstance(item, dict):
            item = ", ".join(f"{k}={v}" for k, v in item.items())
        elif isinstance(item, list):
            item = ", ".join(_label(i) for i in item[:MAX_ITEMS])
        fields.append(f"{key} {item}")
    if not fields:
        return _label(value)
    head = value.get("name") or value.get("title")
    return cut_at_word(f"{head} ({'; '.join(fields)})" if head else "; ".join(fields), 3 * MAX_TEXT)


def describe(content: str) -> list[str]:
    """A tool result as a few Markdown bullets a person can read; plain text is excerpted."""
    try:
        data = json.loads(content)
    except ValueError:
        excerpt = [line.strip() for line in content.splitlines() if line.strip()][:6]
        return [f"- {cut_at_word(line, MAX_TEXT)}" for line in excerpt] or ["- (empty result)"]
    if not isinstance(data, dict):
        data = {"result": data}
    bullets = []
    for key, value in list(data.items())[:MAX_FIELDS]:
        if isinstance(value, list) and len(value) == 1:
            bullets.append(f"- {key}: {_record(value[0])}")
        elif isinstance(value, list):
            shown = "; ".join(_label(item) for item in value[:MAX_ITEMS])
            more = f" (+{len(value) - MAX_ITEMS} more)" if len(value) > MAX_ITEMS else ""
            bullets.append(f"- {key}: {shown or 'none'}{more}")
        else:
            bullets.append(f"- {key}: {_label(value)}")
    return bullets or ["- (empty result)"]
