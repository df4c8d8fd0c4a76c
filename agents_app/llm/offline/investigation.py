"""The investigator's run without a model (docs/investigations.md), kept apart from the chat paths:
read the incident, submit a low-confidence report filled from what it returned, say so in one line."""

from __future__ import annotations

import datetime as dt
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


def _names_of(detail: dict, incident: dict) -> set[str]:
    """The incident's own devices, topology nodes and services: what a suspect change touches."""
    nodes = [n.get("name") for n in detail.get("topology_nodes") or [] if isinstance(n, dict)]
    return {str(n) for n in [*(detail.get("devices") or []), *nodes, *(incident.get("services") or [])] if n}


def _minutes_before(change: dict, started: str) -> float | None:
    try:
        delta = dt.datetime.fromisoformat(started) - dt.datetime.fromisoformat(change["at"])
    except (KeyError, TypeError, ValueError):
        return None
    return delta.total_seconds() / 60


def _suspect_change(detail: dict, incident: dict) -> tuple[dict, float] | None:
    """The change closest before the start on one of the incident's own components, as a
    person reading the detail would suspect it first (docs/incidents.md, "What changed")."""
    names = _names_of(detail, incident)
    found = []
    for change in detail.get("recent_changes") or []:
        if not isinstance(change, dict) or change.get("resource_type") == "incident":
            continue
        minutes = _minutes_before(change, str(incident.get("started_at") or ""))
        if minutes is not None and minutes >= 0 and change.get("resource_name") in names:
            found.append((minutes, change))
    if not found:
        return None
    minutes, change = min(found, key=lambda pair: pair[0])
    return change, minutes


def _changed_keys(change: dict) -> str:
    """`db_pool_size 50 → 5, version 2.4.1 → 2.5.0` from an update's before and after."""
    before, after = change.get("before") or {}, change.get("after") or {}
    if isinstance(before.get("labels"), dict) and isinstance(after.get("labels"), dict):
        before, after = before["labels"], after["labels"]
    if not isinstance(before, dict) or not isinstance(after, dict):
        return ""
    keys = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return ", ".join(f"{k} {before.get(k, '—')} → {after.get(k, '—')}" for k in keys)


def _cause_from_change(change: dict, minutes: float, alerts: list) -> dict:
    """The report's cause fields when a change just before the start is the suspect."""
    what = _changed_keys(change)
    actor, name = change.get("actor") or "someone", change.get("resource_name")
    kind = change.get("resource_type")
    told = f"{actor} changed {str(kind).replace('_', ' ')} {name}" + (f" ({what})" if what else "")
    when = f"{round(minutes)} min before the start"
    first_alert = next((a.get("name") for a in alerts if isinstance(a, dict) and a.get("name")), None)
    chain = [f"{told}, {when}"]
    chain += [f"{a.get('name')} firing" for a in alerts[:4] if isinstance(a, dict) and a.get("name")]
    patient_zero = {"kind": kind, "name": name} if kind in ("device", "topology_node") else None
    return {
        "root_cause": (
            f"Likely cause: {told}, {when}; the first alert"
            + (f", {first_alert}," if first_alert else "")
            + " followed it. Not confirmed with metrics by the offline stand-in."
        ),
        "causal_chain": chain,
        "patient_zero": patient_zero,
        "finding": f"change {change.get('id')}: {told} at {change.get('at')}, {when}",
    }


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
    report = {
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
    suspect = _suspect_change(detail, incident)
    if suspect is not None:
        cause = _cause_from_change(*suspect, alerts)
        report["root_cause"], report["causal_chain"] = cause["root_cause"], cause["causal_chain"]
        report["patient_zero"] = cause["patient_zero"] or patient_zero
        report["evidence"].insert(0, {"tool_call_id": "offline_detail", "finding": cause["finding"]})
        report["confidence"] = 0.35
        report["next_actions"].insert(
            0, {"action": f"Check whether reverting this change helps: {cause['finding']}"}
        )
    return report
