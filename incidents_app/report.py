"""The RCA report: its JSON schema (the `submit_report` tool's parameters, so the model sees it)
and the checks a schema cannot express — evidence names real tool calls of this investigation and
patient zero is one of the organization's own devices, services or topology nodes.

A report that fails is returned to the model with every problem listed (docs/investigations.md).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from jsonschema import Draft202012Validator

from audit_app.models import AuditLog
from ops_app.models import Device, Incident, TopologyNode

CONFIDENCE_WORDS = ("low", "medium", "high")
PATIENT_ZERO_KINDS = ("device", "service", "topology_node")
_TEXT = {"type": "string", "minLength": 1, "maxLength": 4000}
_SHORT = {"type": "string", "minLength": 1, "maxLength": 1000}

REPORT_SCHEMA: dict = {
    "type": "object",
    "additionalProperties": False,
    "required": ["summary", "root_cause", "patient_zero", "evidence", "confidence", "confidence_word"],
    "properties": {
        "summary": {**_TEXT, "description": "Two or three sentences for the on-call engineer."},
        "root_cause": {**_TEXT, "description": "What failed first and why."},
        "patient_zero": {
            "type": "object",
            "additionalProperties": False,
            "required": ["kind", "name"],
            "description": "The first component that failed, named as in the organization's records.",
            "properties": {
                "kind": {"enum": list(PATIENT_ZERO_KINDS)},
                "name": {"type": "string", "minLength": 1, "maxLength": 200},
            },
        },
        "causal_chain": {
            "type": "array",
            "maxItems": 20,
            "items": _SHORT,
            "description": "From patient zero to the alerting symptom, one step per item.",
        },
        "symptoms": {"type": "array", "maxItems": 30, "items": _SHORT},
        "evidence": {
            "type": "array",
            "minItems": 1,
            "maxItems": 30,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["tool_call_id", "finding"],
                "properties": {
                    "tool_call_id": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The id of YOUR tool call that produced this evidence.",
                    },
                    "query": {"type": "string", "maxLength": 2000},
                    "window": {"type": "string", "maxLength": 200},
                    "finding": {**_SHORT, "description": "What it showed, with the numbers."},
                },
            },
        },
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "confidence_word": {"enum": list(CONFIDENCE_WORDS)},
        "next_actions": {
            "type": "array",
            "maxItems": 10,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["action"],
                "properties": {
                    "action": _SHORT,
                    "proposed_write": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["tool", "arguments"],
                        "description": "A write tool call a human can send through the review gate.",
                        "properties": {
                            "tool": {"type": "string", "minLength": 1, "maxLength": 200},
                            "arguments": {"type": "object"},
                        },
                    },
                },
            },
        },
        "ruled_out": {
            "type": "array",
            "maxItems": 20,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["hypothesis", "why"],
                "properties": {"hypothesis": _SHORT, "why": _SHORT},
            },
        },
    },
}
_VALIDATOR = Draft202012Validator(REPORT_SCHEMA)


@dataclass
class Checked:
    report: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_report(data: object, incident: Incident, session_id: int) -> Checked:
    """Validate a submitted report against the schema and the organization's records.

    On success the returned report carries the resolved patient zero (`device_id`,
    `topology_node_id`) and each evidence item's audit row id (`audit_id`)."""
    errors = sorted(_VALIDATOR.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        return Checked(problems=[_describe(e) for e in errors[:10]])
    report = _copy(data)
    problems: list[str] = []
    _resolve_patient_zero(report["patient_zero"], incident, problems)
    calls = {
        row["tool_call_id"]: row
        for row in AuditLog.objects.filter(session_id=session_id)
        .exclude(tool_call_id="")
        .values("id", "tool_call_id", "tool")
    }
    for index, item in enumerate(report["evidence"]):
        row = calls.get(item["tool_call_id"])
        if row is None:
            problems.append(
                f"evidence[{index}].tool_call_id {item['tool_call_id']!r} is not one of your tool calls "
                f"in this investigation (yours: {', '.join(sorted(calls)) or 'none yet'})"
            )
        else:
            item["audit_id"] = row["id"]
            item["tool"] = row["tool"]
    return Checked(report=report if not problems else {}, problems=problems)


def _resolve_patient_zero(pz: dict, incident: Incident, problems: list[str]) -> None:
    org_id = incident.organization_id
    name = pz["name"].strip()
    if pz["kind"] == "device":
        device = Device.objects.filter(organization_id=org_id, name__iexact=name).first()
        if device is None:
            problems.append(
                f"patient_zero: no device named {name!r} in this organization (see query_devices)"
            )
            return
        pz.update(name=device.name, device_id=device.pk)
        node = TopologyNode.objects.filter(organization_id=org_id, device=device).first()
    else:
        node = TopologyNode.objects.filter(organization_id=org_id, name__iexact=name).first()
        if node is None and not (pz["kind"] == "service" and name in (incident.affected_services or [])):
            problems.append(
                f"patient_zero: no {pz['kind'].replace('_', ' ')} named {name!r} in this organization "
                "(see find_topology_node)"
            )
            return
        if node is not None:
            pz["name"] = node.name
            if node.device_id:
                pz["device_id"] = node.device_id
    if node is not None:
        pz["topology_node_id"] = node.pk


def _describe(error) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "(the report)"
    return f"{where}: {error.message}"


def _copy(data: dict) -> dict:
    return copy.deepcopy(data)
