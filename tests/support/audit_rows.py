"""Builders for audit tests: session trees, tool-call rows and the review-gate rows that the gate
will write once it lands (a gated call's audit row plus the reviewer session hung under it)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from audit_app.models import AuditLog, LLMCall
from chat_app.models import ChatMessage, ChatSession, SessionKind, SessionStatus

_seq = itertools.count(1)


def session(org, user=None, *, parent: ChatSession | None = None, **fields) -> ChatSession:
    defaults = {"agent_id": "default", "kind": SessionKind.USER, "status": SessionStatus.IDLE, "title": ""}
    if parent is not None:
        defaults.update(kind=SessionKind.WORK, status=SessionStatus.COMPLETED)
        fields.setdefault("root_session_id", parent.root_session_id or parent.pk)
    defaults.update(fields)
    return ChatSession.objects.create(organization=org, user=user, parent_session=parent, **defaults)


def message(chat: ChatSession, role: str, content: str, **fields) -> ChatMessage:
    last = ChatMessage.objects.filter(session=chat).order_by("-seq").values_list("seq", flat=True).first()
    return ChatMessage.objects.create(session=chat, seq=(last or 0) + 1, role=role, content=content, **fields)


def tool_call(chat: ChatSession, tool: str, *, at: datetime | None = None, **fields) -> AuditLog:
    values = {
        "tool_class": "read",
        "status": "ok",
        "arguments": "{}",
        "result": "ok",
        "result_size": 2,
        "tool_call_id": f"call_{next(_seq)}",
        "persona": chat.agent_id,
        "duration_ms": 12,
    }
    values.update(fields)
    return AuditLog.objects.create(
        organization_id=chat.organization_id,
        session=chat,
        user_id=chat.user_id,
        tool=tool,
        started_at=at or datetime.now(UTC),
        **values,
    )


def llm_call(
    chat: ChatSession,
    *,
    model: str = "gpt-4o-mini",
    prompt: int = 100,
    completion: int = 20,
    at=None,
    endpoint: str = "",
) -> LLMCall:
    return LLMCall.objects.create(
        organization_id=chat.organization_id,
        session=chat,
        endpoint=endpoint,
        persona=chat.agent_id,
        provider="openai",
        model=model,
        prompt_tokens=prompt,
        completion_tokens=completion,
        started_at=at or datetime.now(UTC),
    )


def gated_write(
    worker: ChatSession, call_id: str, *, approve: bool = True, arguments: str | None = None
) -> tuple[AuditLog, ChatSession]:
    """A write call that passed (or failed) the review gate, with the reviewer session it spawned."""
    decision = "approve" if approve else "reject"
    reason = "the unit is in the allowlist and only nginx restarts" if approve else "blast radius too large"
    now = datetime.now(UTC)
    reviewer = session(
        worker.organization,
        worker.user,
        parent=worker,
        agent_id="reviewer",
        title="Review host_restart_service nginx on web-01",
        description="Review host_restart_service nginx on web-01",
        spawned_by_call=call_id,
        started_at=now,
        closed_at=now + timedelta(seconds=2),
        result=f"Decision: {decision}\nReason: {reason}",
    )
    message(reviewer, "user", "Proposal: restart nginx on web-01 (blast radius: one host)")
    message(reviewer, "assistant", f"Decision: {decision}\nReason: {reason}")
    llm_call(reviewer, prompt=300, completion=40)
    row = tool_call(
        worker,
        "host_restart_service",
        tool_call_id=call_id,
        tool_class="write",
        status="ok" if approve else "rejected",
        arguments=arguments or '{"device": "web-01", "service": "nginx"}',
        result="nginx restarted" if approve else f"Error: rejected by review: {reason}",
        result_size=15,
        error="" if approve else f"rejected by review: {reason}",
        at=now + timedelta(seconds=3),
    )
    return row, reviewer
