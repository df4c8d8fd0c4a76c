"""The investigator's run without a model (docs/investigations.md), kept apart from the chat paths:
read the incident, submit a low-confidence report filled from what it returned, say so in one line."""

from __future__ import annotations

import json
import re

from agents_app.llm.base import LLMCompletion, ToolCall
from agents_app.toolsets.manifest import ROLE_INCIDENT_DETAIL, ROLE_REPORT

from .completions import calling, final
from .conversation import tool_steps, trailing_results, user_texts
from .phrases import LABEL
from .tool_knowledge import tool_for

_INCIDENT_REF = re.compile(r"incident #(\d+)")


def investigate_offline(conversation: list[dict]) -> LLMCompletion:
    """The next step of the run: the incident's detail, then the report, then a closing line."""
    users = user_texts(conversation)
    found = _INCIDENT_REF.search(users[0] if users else "")
    steps = tool_steps(conversation)
    detail_tool = tool_for(ROLE_INCIDENT_DETAIL)
    if found is None:
        return final(f"No incident id in the brief; nothing to investigate. {LABEL}")
    if not steps:
        arguments = json.dumps({"incident_id": int(found.group(1))})
        return calling([ToolCall(id="offline_detail", name=detail_tool, arguments_raw=arguments)])
    results = trailing_results(conversation)
    if results and results[0][0] == detail_tool and len(steps) == 1:
        report = _offline_report(results[0][1])
        if report is not None:
            raw = json.dumps(report)
            return calling([ToolCall(id="offline_report", name=tool_for(ROLE_REPORT), arguments_raw=raw)])
    told = results[0][1][:500] if results else ""
    return final(f"Investigation finished by the offline stand-in. {told} {LABEL}".strip())


def _patient_zero(detail: dict, incident: dict) -> dict | None:
    """The first device, else topology node, else service the detail names."""
    devices, nodes = detail.get("devices") or [], detail.get("topology_nodes") or []
    services = incident.get("services") or []
    if devices:
        return {"kind": "device", "name": devices[0]}
    if nodes and isinstance(nodes[0], dict) and nodes[0].get("name"):
        return {"kind": "topology_node", "name": nodes[0]["name"]}
    if services:
        return {"kind": "service", "name": services[0]}
    return None


def _offline_report(detail_json: str) -> dict | None:
    try:
        detail = json.loads(detail_json)
        incident = detail["incident"]
    except (ValueError, KeyError, TypeError):
        return None
    patient_zero = _patient_zero(detail, incident)
    if patient_zero is None:
        return None
    alerts = detail.get("alerts") or []
    changes = detail.get("recent_changes") or []
    finding = f"{len(alerts)} alert(s) in the group, {len(changes)} change event(s) around the start"
    return {
        "summary": f"{incident.get('title', 'The incident')}: a first read by the offline stand-in. {LABEL}",
        "root_cause": f"Not established by the offline stand-in; the alerts point at {patient_zero['name']}.",
        "patient_zero": patient_zero,
        "causal_chain": [f"{patient_zero['name']} alerting"],
        "symptoms": [str(a.get("name") or a)[:200] for a in alerts[:5] if isinstance(a, dict)],
        "evidence": [{"tool_call_id": "offline_detail", "finding": finding}],
        "confidence": 0.2,
        "confidence_word": "low",
        "next_actions": [{"action": "Configure a real LLM (OPENAI_API_KEY) for a full investigation."}],
        "ruled_out": [],
    }
