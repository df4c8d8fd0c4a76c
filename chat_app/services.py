"""Every write to chat sessions and messages goes through these functions.

They are synchronous (Django ORM); async callers use the `a*` twins, so the event loop never
blocks on the database. The turn's hot-path twins (`ops_app.core.async_db.db_twin`) run on the thread
pool with a pooled connection on PostgreSQL, and in the ORM's thread on SQLite (one writer).
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext as _

from chat_app.models import (
    TERMINAL_STATUSES,
    Channel,
    ChatMessage,
    ChatSession,
    HistorySummary,
    MessageKind,
    MessageRole,
    SessionKind,
    SessionStatus,
)
from chat_app.signals import session_reaped
from ops_app.core.async_db import db_twin
from ops_app.tenancy.scoping import organization_of

log = logging.getLogger(__name__)

# A running row whose owner has not proved it is alive for this long is an orphan.
STALE_AFTER = timedelta(minutes=10)


def process_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def start_chat(
    user, *, channel: str = Channel.WEB, title: str = "", thread_key: str = "", reply_language: str = ""
) -> ChatSession:
    """A new coordinator session for `user` in their organization (`reply_language`: a surface's
    default language for the answers, e.g. an IM app's)."""
    organization = organization_of(user)
    if organization is None:
        raise PermissionDenied(_("You belong to no organization, so you cannot start a chat."))
    return ChatSession.objects.create(
        organization=organization,
        user=user,
        agent_id="default",
        kind=SessionKind.USER,
        channel=channel,
        title=title[:200],
        thread_key=thread_key,
        reply_language=reply_language[:20],
    )


def start_investigation(organization_id: int, user=None, *, title: str = "") -> ChatSession:
    """A root session of kind `investigation`, run by the incident investigator (docs/investigations.md).

    Owned by the organization: `user` is the person who asked, or None when the alert pipeline did."""
    return ChatSession.objects.create(
        organization_id=organization_id,
        user=user,
        agent_id="incident-investigator",
        kind=SessionKind.INVESTIGATION,
        channel=Channel.WEB,
        title=title[:200],
    )


def append_message(
    session_id: int,
    role: str,
    content: str = "",
    *,
    tool_calls: list | None = None,
    tool_call_id: str = "",
    tokens: int = 0,
    kind: str = MessageKind.TEXT,
) -> ChatMessage:
    """Append one message at the end of a session's transcript (seq allocated under a row lock)."""
    with transaction.atomic():
        ChatSession.objects.select_for_update().filter(pk=session_id).values_list("pk").get()
        last = ChatMessage.objects.filter(session_id=session_id).aggregate(m=Max("seq"))["m"]
        return ChatMessage.objects.create(
            session_id=session_id,
            seq=(last or 0) + 1,
            role=role,
            content=content,
            tool_calls=tool_calls or [],
            tool_call_id=tool_call_id,
            tokens=tokens,
            kind=kind,
        )


def append_messages(session_id: int, messages: list[dict]) -> int:
    """Append a step's messages (OpenAI format) in one transaction: one lock, one round of seq
    allocation, instead of one transaction per message on the turn's hot path."""
    if not messages:
        return 0
    with transaction.atomic():
        ChatSession.objects.select_for_update().filter(pk=session_id).values_list("pk").get()
        last = ChatMessage.objects.filter(session_id=session_id).aggregate(m=Max("seq"))["m"] or 0
        ChatMessage.objects.bulk_create(
            ChatMessage(
                session_id=session_id,
                seq=last + index,
                role=message["role"],
                content=message.get("content") or "",
                tool_calls=message.get("tool_calls") or [],
                tool_call_id=message.get("tool_call_id", ""),
            )
            for index, message in enumerate(messages, start=1)
        )
    return len(messages)


def title_from(text: str) -> str:
    first = " ".join(text.split())
    return first if len(first) <= 80 else first[:77].rstrip() + "…"


class TurnInProgress(Exception):
    """The session is already running a turn; a chat takes one message at a time.

    `turn_id` is the running turn's id (its user message), so a caller can say which one to wait for.
    """

    def __init__(self, message: str, turn_id: int | None = None):
        super().__init__(message)
        self.turn_id = turn_id


def running_turn_id(session_id: int) -> int | None:
    """The id of the session's current (or last) turn: its newest user message."""
    return (
        ChatMessage.objects.filter(session_id=session_id, role=MessageRole.USER)
        .order_by("-seq")
        .values_list("pk", flat=True)
        .first()
    )


def begin_turn(session_id: int, user_text: str) -> ChatMessage:
    """Persist the user's message and mark the coordinator session running in this process.

    The session row is locked first, so two messages racing into one chat start one turn and the
    other gets `TurnInProgress` (the API answers 409).
    """
    text = user_text.strip()
    if not text:
        raise ValueError(_("The message is empty."))
    now = timezone.now()
    with transaction.atomic():
        session = ChatSession.objects.select_for_update().get(pk=session_id)
        if session.status == SessionStatus.RUNNING:
            raise TurnInProgress(
                "A turn is already running in this chat; wait for it or press Stop.",
                running_turn_id(session_id),
            )
        fields = {
            "status": SessionStatus.RUNNING,
            "owner": process_identity(),
            "heartbeat_at": now,
            "stop_requested_at": None,
            "stop_reason": "",
            "error": "",
            "updated_at": now,  # the chat list is ordered by last activity
        }
        if not session.title:
            fields["title"] = title_from(text)
        if session.started_at is None:
            fields["started_at"] = now
        ChatSession.objects.filter(pk=session_id).update(**fields)
        return append_message(session_id, MessageRole.USER, text)


def rename_chat(session: ChatSession, title: str) -> ChatSession:
    """A user's new title for their chat; blank keeps the old one."""
    session.title = title.strip()[:200] or session.title
    session.save(update_fields=["title", "updated_at"])
    return session


def delete_chat(session: ChatSession) -> None:
    """Remove a chat with its workers and messages (the caller stops its turn first)."""
    session.delete()


def end_turn(session_id: int, *, error: str = "", usage: dict | None = None) -> None:
    """A coordinator session goes back to idle (it is long-lived); the error, if any, is kept."""
    session = ChatSession.objects.get(pk=session_id)
    total = merge_usage(session.usage, usage or {})
    ChatSession.objects.filter(pk=session_id).update(
        status=SessionStatus.IDLE,
        owner="",
        heartbeat_at=None,
        error=error,
        usage=total,
        updated_at=timezone.now(),  # the chat list is ordered by last activity
    )


def merge_usage(base: dict, extra: dict) -> dict:
    merged = dict(base or {})
    for key, value in (extra or {}).items():
        if isinstance(value, int | float):
            merged[key] = merged.get(key, 0) + value
    return merged


def open_worker_session(
    parent: ChatSession, persona_name: str, description: str, prompt: str, tool_call_id: str = ""
) -> ChatSession:
    """The worker's row exists before the worker runs, so the session tree resolves at once
    (docs/runtime.md, "Worker lifecycle")."""
    kind = SessionKind.INVESTIGATION if persona_name == "incident-investigator" else SessionKind.WORK
    worker = ChatSession.objects.create(
        organization_id=parent.organization_id,
        user_id=parent.user_id,
        agent_id=persona_name,
        parent_session=parent,
        root_session_id=parent.root_session_id or parent.pk,
        kind=kind,
        channel=parent.channel,
        status=SessionStatus.PENDING,
        title=description[:200],
        description=description,
        spawned_by_call=tool_call_id,
        owner=process_identity(),
        heartbeat_at=timezone.now(),
    )
    append_message(worker.pk, MessageRole.USER, prompt)
    return worker


def open_work_session(organization_id: int, persona_name: str, title: str, prompt: str) -> ChatSession:
    """A root `work` session with no user, for agents a schedule starts (docs/schedules.md): the
    organization's auditors see it in the audit pages like any other session."""
    session = ChatSession.objects.create(
        organization_id=organization_id,
        user=None,
        agent_id=persona_name,
        kind=SessionKind.WORK,
        channel=Channel.WEB,
        status=SessionStatus.PENDING,
        title=title[:200],
        description=title,
        owner=process_identity(),
        heartbeat_at=timezone.now(),
    )
    append_message(session.pk, MessageRole.USER, prompt)
    return session


def mark_running(session_id: int) -> None:
    now = timezone.now()
    ChatSession.objects.filter(pk=session_id, status=SessionStatus.PENDING).update(
        status=SessionStatus.RUNNING, started_at=now, heartbeat_at=now
    )


def close_session(
    session_id: int, status: str, *, result: str = "", error: str = "", usage: dict | None = None
) -> bool:
    """Close a worker row on any terminal path. Idempotent: the first close wins."""
    if status not in TERMINAL_STATUSES:
        raise ValueError(f"{status!r} is not a terminal status")
    updated = ChatSession.objects.filter(pk=session_id, closed_at__isnull=True).update(
        status=status,
        result=result,
        error=error[:4000],
        usage=usage or {},
        closed_at=timezone.now(),
        owner="",
        heartbeat_at=None,
    )
    return bool(updated)


def claim_turn(session_id: int, queued_by: str | None = None) -> bool:
    """A worker process takes a queued turn: the row's owner becomes this process.

    A compare-and-set on the owner the submitting process wrote (`queued_by`), so a redelivered
    task never runs a turn twice; False when the turn is no longer running or another process
    took it (docs/runtime.md, "Many turns per worker process")."""
    rows = ChatSession.objects.filter(pk=session_id, status=SessionStatus.RUNNING)
    if queued_by is not None:
        rows = rows.filter(owner=queued_by)
    return bool(rows.update(owner=process_identity(), heartbeat_at=timezone.now()))


def request_stop(session_id: int, reason: str = "stopped") -> bool:
    """Ask whichever process runs the session to stop it, saying who asked. True if it was still open."""
    return bool(
        ChatSession.objects.filter(
            pk=session_id, closed_at__isnull=True, stop_requested_at__isnull=True
        ).update(stop_requested_at=timezone.now(), stop_reason=(reason or "stopped")[:200])
    )


def stop_requested(session_id: int) -> str:
    """The stop reason ("stopped by alice") when a stop was requested, else ""."""
    row = (
        ChatSession.objects.filter(pk=session_id, stop_requested_at__isnull=False)
        .values_list("stop_reason", flat=True)
        .first()
    )
    return "" if row is None else (row or "stopped")


def heartbeat(session_ids: list[int]) -> None:
    ChatSession.objects.filter(pk__in=session_ids, owner=process_identity()).update(
        heartbeat_at=timezone.now()
    )


def _owner_is_gone(owner: str, heartbeat_at, now) -> bool:
    host, _, pid = owner.rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        if int(pid) == os.getpid():
            return False
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass
    return heartbeat_at is None or now - heartbeat_at > STALE_AFTER


def reap_orphans(now=None) -> int:
    """Close rows whose owning process died mid-run: workers end `failed`, coordinators go idle
    (docs/runtime.md, "Worker lifecycle")."""
    now = now or timezone.now()
    open_rows = ChatSession.objects.filter(status__in=[SessionStatus.PENDING, SessionStatus.RUNNING]).only(
        "pk", "owner", "heartbeat_at", "parent_session_id", "kind"
    )
    reaped = 0
    for row in open_rows.iterator():
        if not _owner_is_gone(row.owner, row.heartbeat_at, now):
            continue
        reason = f"The process running this session ({row.owner or 'unknown'}) is gone; closed by the reaper."
        if row.parent_session_id is None and row.kind != SessionKind.INVESTIGATION:
            ChatSession.objects.filter(pk=row.pk).update(
                status=SessionStatus.IDLE, owner="", heartbeat_at=None, error=reason
            )
        else:
            close_session(row.pk, SessionStatus.FAILED, error=reason)
        session_reaped.send(sender=ChatSession, session_id=row.pk, kind=row.kind, reason=reason)
        reaped += 1
    if reaped:
        log.warning("reaper closed %d orphaned session(s)", reaped)
    return reaped


def history(session_id: int, limit: int = 50) -> list[dict]:
    """The last `limit` messages in OpenAI format, never starting inside a tool exchange.

    The window starts at a user message, so no tool result is ever sent without the assistant
    message that called it (the model API rejects that) and a long-lived session stays bounded.
    """
    rows = list(
        ChatMessage.objects.filter(session_id=session_id, kind__in=[MessageKind.TEXT, MessageKind.STOPPED])
        .exclude(role=MessageRole.SYSTEM)
        .order_by("-seq")[:limit]
        .values("role", "content", "tool_calls", "tool_call_id")
    )[::-1]
    while rows and rows[0]["role"] != MessageRole.USER:
        rows.pop(0)
    return [_as_openai(row) for row in rows]


def history_window(session_id: int, limit: int = 400) -> tuple[HistorySummary | None, list[dict]]:
    """The session's newest history summary and the messages after it (the last `limit` at most),
    in OpenAI format plus their `seq`; like `history`, the window starts at a user message."""
    summary = HistorySummary.objects.filter(session_id=session_id).order_by("-through_seq").first()
    rows = list(
        ChatMessage.objects.filter(
            session_id=session_id,
            kind__in=[MessageKind.TEXT, MessageKind.STOPPED],
            seq__gt=summary.through_seq if summary else 0,
        )
        .exclude(role=MessageRole.SYSTEM)
        .order_by("-seq")[:limit]
        .values("seq", "role", "content", "tool_calls", "tool_call_id")
    )[::-1]
    while rows and rows[0]["role"] != MessageRole.USER:
        rows.pop(0)
    return summary, [{**_as_openai(row), "seq": row["seq"]} for row in rows]


def save_history_summary(
    session_id: int, *, through_seq: int, text: str, messages: int, model: str = ""
) -> HistorySummary:
    """Record a compaction of the session's history up to message `through_seq`."""
    return HistorySummary.objects.create(
        session_id=session_id, through_seq=through_seq, text=text, messages=messages, model=model
    )


def _as_openai(row: dict) -> dict:
    message: dict = {"role": row["role"], "content": row["content"]}
    if row["role"] == MessageRole.ASSISTANT and row["tool_calls"]:
        message["tool_calls"] = row["tool_calls"]
    if row["role"] == MessageRole.TOOL:
        message["tool_call_id"] = row["tool_call_id"]
    return message


abegin_turn = sync_to_async(begin_turn)
ahistory_window = db_twin(history_window)
asave_history_summary = db_twin(save_history_summary)
arename_chat = sync_to_async(rename_chat)
adelete_chat = sync_to_async(delete_chat)
aend_turn = db_twin(end_turn)
aappend_message = db_twin(append_message)
aopen_worker_session = db_twin(open_worker_session)
aopen_work_session = db_twin(open_work_session)
amark_running = db_twin(mark_running)
aclose_session = db_twin(close_session)
arequest_stop = sync_to_async(request_stop)
aclaim_turn = db_twin(claim_turn)
aappend_messages = db_twin(append_messages)
astop_requested = sync_to_async(stop_requested)
aheartbeat = db_twin(heartbeat)
ahistory = db_twin(history)
