"""The offline model as the reviewer: without a model nothing can judge a change to a system, so it
rejects every held call except an incident's acknowledgement or resolution, which changes only
Ongrid's own incident record (the one-click Acknowledge / Resolve of the incident page must work in
the demo; `tool_knowledge` marks those tools). Deterministic, and it says it is the stand-in
(docs/review-gate.md)."""

from __future__ import annotations

import json
import re

from .tool_knowledge import is_approved_offline

_EXACT_CALL = re.compile(r"Exact call:\s*```json\s*(\{.*?\})\s*```", re.S)
NOTE = "(Decided by Ongrid's offline stand-in, not a real LLM.)"


def review_brief_call(request: str) -> dict | None:
    """The held call of a reviewer's brief, or None when `request` is not one."""
    if "Decision: approve" not in request:
        return None
    # The first match is the gate's own block: the proposal above it is json.dumps output (its
    # quotes escaped, so no object can hide there) and the recent activity comes after it.
    found = _EXACT_CALL.search(request)
    if found is None:
        return None
    try:
        call = json.loads(found.group(1))
    except ValueError:
        return None
    return call if isinstance(call, dict) else None


def offline_verdict(call: dict) -> str:
    """The reviewer's answer to the held `call`: its decision line, then why."""
    tool = str(call.get("tool", ""))
    if is_approved_offline(tool):
        return (
            f"Decision: approve\n{tool} changes only the incident's record in Ongrid, not a system; "
            f"the stand-in approves it. {NOTE}"
        )
    return (
        f"Decision: reject\n{tool} changes a system, and without a configured model nothing can "
        f"judge it; set OPENAI_API_KEY to have a reviewer model decide. {NOTE}"
    )
