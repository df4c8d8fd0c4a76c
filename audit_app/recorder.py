"""The one module that writes audit rows: one per tool call, one per LLM call.

The agents layer calls these after each call; redaction and truncation happen here, so no caller
can store a secret or an unbounded result by forgetting a step. A failing write is logged and
reported as `None`, never raised: losing an audit row must not lose the user's answer.
The inserts run through `ops_app.core.async_db.db_twin`: on the thread pool with a pooled connection on
PostgreSQL, so concurrent turns do not queue on one ORM thread.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings

from audit_app.models import AuditLog, LLMCall
from audit_app.redaction import redact_arguments, redact_text
from ops_app.core import tracing
from ops_app.core.async_db import db_twin

log = logging.getLogger(__name__)


def truncate(text: str, limit: int | None = None) -> str:
    """Cut `text` to `limit` characters with a note of the original size the model can reason about."""
    limit = limit or settings.CONFIG.tool_result_limit
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n…[truncated: showing {limit} of {len(text)} characters]"


async def record_tool_call(
    *,
    organization_id: int,
    session_id: int | None,
    user_id: int | None,
    persona: str,
    tool_call_id: str,
    tool: str,
    tool_class: str,
    arguments_raw: str,
    content: str,
    status: str,
    error: str,
    started_at: datetime,
    duration_ms: int,
) -> int | None:
    """Store one tool call; `content` is the whole result (the row keeps it truncated and its size)."""
    try:
        row = await _create_tool_row(
            organization_id=organization_id,
            session_id=session_id,
            user_id=user_id,
            persona=persona[:100],
            tool_call_id=tool_call_id[:200],
            tool=tool[:200],
            tool_class=tool_class,
            arguments=redact_arguments(arguments_raw),
            result=redact_text(truncate(content)),
            result_size=len(content),
            status=status,
            error=redact_text(error),
            started_at=started_at,
            duration_ms=duration_ms,
            trace_id=tracing.current_trace_id(),
        )
    except Exception:  # noqa: BLE001 - see the module docstring
        log.exception("could not write the audit row for %s (call %s)", tool, tool_call_id)
        return None
    return row.pk


async def record_llm_call(
    *,
    organization_id: int,
    session_id: int | None,
    persona: str,
    provider: str,
    model: str,
    usage: dict,
    latency_ms: int,
    finish_reason: str,
    error: str,
    started_at: datetime,
    endpoint: str = "",
) -> int | None:
    """Store one model request: who asked, which endpoint and model, tokens, latency, how it ended."""
    try:
        row = await _create_llm_row(
            organization_id=organization_id,
            session_id=session_id,
            persona=persona[:100],
            provider=provider,
            endpoint=endpoint[:60],
            model=model[:200],
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
            cached_tokens=usage.get("cached_tokens", 0),
            latency_ms=latency_ms,
            finish_reason=finish_reason[:40],
            error=redact_text(error),
            started_at=started_at,
            trace_id=tracing.current_trace_id(),
        )
    except Exception:  # noqa: BLE001 - see the module docstring
        log.exception("could not record the LLM call")
        return None
    return row.pk


def _insert_tool_row(**fields) -> AuditLog:
    return AuditLog.objects.create(**fields)


def _insert_llm_row(**fields) -> LLMCall:
    return LLMCall.objects.create(**fields)


_create_tool_row = db_twin(_insert_tool_row)
_create_llm_row = db_twin(_insert_llm_row)
