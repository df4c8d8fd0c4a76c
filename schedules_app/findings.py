"""The `submit_finding` tool an inspection ends with, and what a finding leads to.

The tool is not a built-in: it is bound to one run and handed only to that run's agent, so no
chat coordinator or specialist ever sees it. Its arguments are the classification itself
(status, summary, findings with evidence); the runner reads them back from the holder.
"""

from __future__ import annotations

import hashlib
import json

from agents_app.api import SUBMIT_FINDING, Tool, ToolContext, ToolError

STATUSES = ("ok", "warning", "problem")

SCHEMA = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": list(STATUSES), "description": "The overall verdict."},
        "summary": {"type": "string", "description": "One or two sentences a human reads first."},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "title": {
                        "type": "string",
                        "description": "What is wrong or fine, e.g. 'db-01 /var 91 % full'.",
                    },
                    "severity": {"type": "string", "enum": list(STATUSES)},
                    "target": {"type": "string", "description": "The device, service or path concerned."},
                    "evidence": {
                        "type": "string",
                        "description": "The command output or figure it rests on.",
                    },
                },
                "required": ["title", "severity", "evidence"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["status", "summary", "findings"],
    "additionalProperties": False,
}

INSTRUCTION = (
    "\n\nWhen you have checked everything, call `submit_finding` exactly once: status `ok` (nothing "
    "to act on), `warning` (worth a look) or `problem` (needs action now), a short summary, and one "
    "finding per thing you checked with the evidence (figures, command output) it rests on."
)


def finding_tool(holder: dict) -> Tool:
    """A `submit_finding` tool that stores the last valid submission in `holder['finding']`."""

    async def submit_finding(ctx: ToolContext, status: str, summary: str, findings: list) -> dict:
        if status not in STATUSES:
            raise ToolError(f"status must be one of {', '.join(STATUSES)}")
        if not isinstance(summary, str) or not summary.strip():
            raise ToolError("summary must say what you found, in a sentence or two")
        holder["finding"] = {"status": status, "summary": summary.strip(), "findings": list(findings)}
        return {"recorded": True, "status": status}

    return Tool.from_spec(SUBMIT_FINDING, submit_finding, parameters=SCHEMA)


def problem_fingerprint(schedule_id: int, finding: dict) -> str:
    """Identical problems share a fingerprint: the schedule plus the sorted (target, title) of its
    `problem` findings, ignoring evidence (figures move from run to run: 91 % then 92 %)."""
    problems = [
        f for f in finding.get("findings") or [] if isinstance(f, dict) and f.get("severity") == "problem"
    ]
    keys = sorted(
        (str(f.get("target", "")).strip().lower(), str(f.get("title", "")).strip().lower()) for f in problems
    )
    basis = json.dumps(
        {"schedule": schedule_id, "problems": keys or finding.get("summary", "").strip().lower()}
    )
    return hashlib.sha256(basis.encode()).hexdigest()
