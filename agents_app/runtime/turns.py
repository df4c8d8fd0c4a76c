"""Starting and stopping turns: the entry points shared by the API, the websocket consumer, the
command line and the IM bridges."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time

from agents_app.runtime import executors
from chat_app import services
from chat_app.models import ChatMessage, ChatSession, SessionStatus


def start_turn(session: ChatSession, text: str) -> tuple[ChatMessage, object]:
    """Persist the user's message, then hand the turn to the executor. Returns (message, waitable)."""
    message = services.begin_turn(session.pk, text)
    return message, executors.submit_turn(session.pk)


async def astart_turn(session: ChatSession, text: str) -> tuple[ChatMessage, object]:
    """`start_turn` for the event loop: the turn becomes a task of this very loop (inline executor)."""
    message = await services.abegin_turn(session.pk, text)
    return message, executors.submit_turn(session.pk)


def wait_for_turn(session_id: int, waitable: object, timeout: float = 600.0) -> ChatSession:
    """Block until the turn ends (used by `?wait=1` and the command line)."""
    if isinstance(waitable, concurrent.futures.Future):
        waitable.result(timeout=timeout)
    elif isinstance(waitable, asyncio.Future):
        raise TypeError("wait on an asyncio future with `await`, not wait_for_turn")
    else:  # celery: the row is the only shared truth
        deadline = time.monotonic() + timeout
        while ChatSession.objects.filter(pk=session_id, status=SessionStatus.RUNNING).exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the turn did not finish within {timeout:g}s")
            time.sleep(0.2)
    return ChatSession.objects.get(pk=session_id)


def last_answer(session_id: int) -> ChatMessage | None:
    """The newest assistant message that is an answer (not a tool call, not a note)."""
    recent = ChatMessage.objects.filter(session_id=session_id, role="assistant").exclude(kind="note")
    for message in recent.order_by("-seq")[:20]:
        if not message.tool_calls:
            return message
    return None
