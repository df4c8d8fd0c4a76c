"""Helpers for the investigation tests: scripted investigator replies and waiting for an
investigation to reach a terminal state."""

from __future__ import annotations

import dataclasses
import re

from fakes.llm_routing import tool_messages
from fakes.openai_server import RecordedRequest, call, text, tool_calls
from incidents_app.models import Investigation
from tests.support.procs import wait_until

INVESTIGATOR = "incident-investigator"
TERMINAL = ("done", "inconclusive", "failed", "stopped")


def enable_auto(settings) -> None:
    settings.CONFIG = dataclasses.replace(settings.CONFIG, auto_investigate=True)
    settings.ONGRID_EXECUTOR = "inline"


def incident_id_of(request: RecordedRequest) -> int:
    first = next(m for m in request.messages if m.get("role") == "user")
    return int(re.search(r"incident #(\d+)", first["content"]).group(1))


def read_incident(call_id: str = "c1"):
    """The investigator's first step: get_incident_detail of the incident in its brief."""
    return lambda request: tool_calls(
        call("get_incident_detail", {"incident_id": incident_id_of(request)}, id=call_id)
    )


def report(patient_zero: dict, evidence_call: str = "c1", **extra) -> dict:
    return {
        "summary": "Checkout fails because its database host is down.",
        "root_cause": "db-01 stopped answering; checkout's queries time out.",
        "patient_zero": patient_zero,
        "causal_chain": ["db-01 down", "checkout queries time out", "checkout returns 5xx"],
        "symptoms": ["CheckoutErrors firing"],
        "evidence": [{"tool_call_id": evidence_call, "finding": "the alert fired at 10:00, 12% 5xx"}],
        "confidence": 0.8,
        "confidence_word": "high",
        "next_actions": [{"action": "Restart the database service on db-01"}],
        "ruled_out": [{"hypothesis": "a deployment", "why": "no change events in the window"}],
        **extra,
    }


def submit(body: dict, call_id: str = "r1"):
    return tool_calls(call("submit_report", body, id=call_id))


def last_tool_result(request: RecordedRequest) -> str:
    return tool_messages(request)[-1]["content"]


def wait_finished(investigation_id: int, timeout: float = 30.0) -> Investigation:
    def finished():
        row = Investigation.objects.get(pk=investigation_id)
        return row if row.status in TERMINAL else None

    return wait_until(finished, timeout, f"investigation {investigation_id} to finish")


def answer(words: str = "Report submitted."):
    return text(words)
