"""Builders for review-gate tests: a chat with a worker whose writes are gated, personas per
permission mode, and a way to make one gated call exactly as the kernel does (`invoke_tool`)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from django.utils import timezone

from agents_app.models import UserAgent
from agents_app.personas import registry
from agents_app.runtime import dedupe
from agents_app.tools.invoke import ToolOutcome, invoke_tool
from agents_app.toolsets.contract import ToolContext
from agents_app.toolsets.registry import load_builtin_tools
from chat_app import services
from ops_app.models import Incident

DUAL = "ops-dual-sign"


def make_chat(user, question: str = "Acknowledge the payments incident, we are on it"):
    chat = services.start_chat(user)
    services.begin_turn(chat.pk, question)
    return chat


def make_worker(chat, persona: str = "specialist-ops", call_id: str = "call-dispatch"):
    return services.open_worker_session(
        chat, persona, "Acknowledge the payments incident", "Ack it.", call_id
    )


def make_incident(org, title: str = "Payments DB pool exhausted") -> Incident:
    return Incident.objects.create(organization=org, title=title, started_at=timezone.now())


def make_user_agent(org, name: str, mode: str, tools: list[str]) -> UserAgent:
    return UserAgent.objects.create(
        organization=org,
        name=name,
        description=f"{name} for gate tests",
        when_to_use="When a gate test needs it.",
        body=f"You are {name}.",
        tools=tools,
        permission_mode=mode,
    )


async def gated_call(
    worker,
    persona: str,
    tool_name: str,
    arguments: dict,
    call_id: str = "call-1",
    tool_timeout: float | None = None,
) -> ToolOutcome:
    """One tool call from `worker` as persona `persona`, through the whole R15 chain."""
    tool = load_builtin_tools()[tool_name]
    if tool_timeout is not None:
        tool = dataclasses.replace(tool, timeout=tool_timeout)
    ctx = ToolContext(
        organization_id=worker.organization_id,
        session_id=worker.pk,
        user_id=worker.user_id,
        persona_name=persona,
        tool_call_id=call_id,
    )
    return await invoke_tool(tool, ctx, json.dumps(arguments))


def ack_arguments(incident: Incident) -> dict:
    return {"incident_id": incident.pk, "reason": "On-call confirmed; runbook RB-12 says acknowledge first."}


@pytest.fixture
def fresh_gate_caches(monkeypatch):
    """Gate tests start with the persona registry read afresh and no remembered dispatches (a
    test's agents and dispatches never decide another's); use with `usefixtures`."""
    registry.reset()
    monkeypatch.setattr(dedupe, "DISPATCHES", dedupe.DispatchCache())
    yield
    registry.reset()
