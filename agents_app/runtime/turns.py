"""Starting and stopping turns: the entry points shared by the API, the websocket consumer, the
command line and the IM bridges.

A caller that waits for its turn (`?wait=1`, the command line) holds no database connection while
it waits: the turn needs connections to finish, and a pool held by waiters deadlocks (issue 28).
It waits on the turn's future (inline executor) or on the session's channel-layer group (Celery),
and borrows a connection per call afterwards. How many callers may wait at once is bounded by the
process's cap (`ONGRID_TURNS_PER_PROCESS`): beyond it `waiting_slot` refuses with `TurnsBusy`
before anything is stored, and the API answers 503 (docs/runtime.md, "Executors").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Iterator

from channels.layers import get_channel_layer
from django.conf import settings

from agents_app.runtime import events, executors
from chat_app import services
from chat_app.groups import session_group
from chat_app.models import ChatMessage, ChatSession, SessionStatus
from ops_app.core.async_db import db_twin, release_connection

log = logging.getLogger(__name__)

# Without a push (a turn ended by the reaper, or an event lost by the layer) the row is looked at
# this often while waiting; each look borrows a connection for one query.
RECHECK_SECONDS = 5.0
CLOSE_SECONDS = 5.0  # the longest a finished wait spends leaving the channel layer
RETRY_AFTER_SECONDS = 5


class TurnsBusy(Exception):
    """This process already carries as many waiting or running turns as its cap allows."""

    retry_after = RETRY_AFTER_SECONDS


class _WaitingRoom:
    """Counts the callers of this process that wait for a turn (threads of one process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def enter(self, cap: int) -> None:
        with self._lock:
            if self.count >= cap:
                raise TurnsBusy(f"{self.count} requests already wait for their turns (cap {cap})")
            if executors.inline_slots_full():
                raise TurnsBusy(f"all {cap} turn slots of this process are taken")
            self.count += 1

    def leave(self) -> None:
        with self._lock:
            self.count -= 1


_waiting_room = _WaitingRoom()


@contextlib.contextmanager
def waiting_slot() -> Iterator[None]:
    """Hold one of this process's places for a caller that will wait for its turn, or raise
    `TurnsBusy` at once (call it before `start_turn`, so a refused message is never stored)."""
    _waiting_room.enter(settings.CONFIG.turns_per_process)
    try:
        yield
    finally:
        _waiting_room.leave()


def start_turn(session: ChatSession, text: str) -> tuple[ChatMessage, object]:
    """Persist the user's message, then hand the turn to the executor. Returns (message, waitable)."""
    message = services.begin_turn(session.pk, text)
    return message, executors.submit_turn(session.pk)


async def astart_turn(session: ChatSession, text: str) -> tuple[ChatMessage, object]:
    """`start_turn` for the event loop: the turn becomes a task of this very loop (inline executor)."""
    message = await services.abegin_turn(session.pk, text)
    return message, executors.submit_turn(session.pk)


def wait_for_turn(session_id: int, waitable: object, timeout: float = 600.0) -> ChatSession:
    """Block until the turn ends (used by `?wait=1` and the command line), holding no database
    connection meanwhile; returns the session row as the turn left it."""
    release_connection()
    if isinstance(waitable, concurrent.futures.Future):
        waitable.result(timeout=timeout)
    elif isinstance(waitable, asyncio.Future):
        raise TypeError("wait on an asyncio future with `await`, not wait_for_turn")
    else:  # celery: the turn runs in another process, which tells the session's group
        from asgiref.sync import async_to_sync

        async_to_sync(await_turn_end)(session_id, timeout)
    return ChatSession.objects.get(pk=session_id)


def _running(session_id: int) -> bool:
    return ChatSession.objects.filter(pk=session_id, status=SessionStatus.RUNNING).exists()


_arunning = db_twin(_running)


async def await_turn_end(session_id: int, within: float = 600.0) -> None:
    """Wait for `turn.ended` on the session's channel-layer group (the process that runs the turn
    publishes it), looking at the row once on joining and every RECHECK_SECONDS after, one borrowed
    connection per look. Raises TimeoutError after `within` seconds.

    The layer is read by a task of its own that is cancelled once, at the end: cutting a Redis read
    short every few seconds would be both wasteful and fragile. If the layer fails, the looks at
    the row carry on alone."""
    layer = get_channel_layer()  # settings always configure one (in-memory or Redis)
    channel = await layer.new_channel()
    group = session_group(session_id)
    await layer.group_add(group, channel)
    listener = asyncio.create_task(_turn_ended(layer, channel, session_id))
    deadline = time.monotonic() + within
    try:
        # Joined first, then looked at the row: an end cannot slip in between unseen.
        while await _arunning(session_id):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"the turn did not finish within {within:g}s")
            if not listener.done():
                await asyncio.wait([listener], timeout=min(RECHECK_SECONDS, remaining))
            elif listener.exception() is None:
                return
            else:  # the layer failed: the row is the only truth left
                await asyncio.sleep(min(RECHECK_SECONDS, remaining))
    finally:
        await _close_listener(listener, layer, group, channel)


async def _turn_ended(layer, channel: str, session_id: int) -> None:
    """Return once a `turn.ended` of the session arrives on `channel`."""
    while True:
        event = events.parse((await layer.receive(channel)).get("event") or {})
        if isinstance(event, events.TurnEnded) and event.session == session_id:
            return


async def _close_listener(listener: asyncio.Task, layer, group: str, channel: str) -> None:
    if listener.done() and not listener.cancelled() and listener.exception() is not None:
        log.warning("waiting for a turn without the channel layer: %r", listener.exception())
    listener.cancel()
    # Whatever a cancelled read ends with, it is not ours to raise; bounded, so a layer that does
    # not answer a cancelled read (Redis gone mid-read) never keeps the waiting request.
    await asyncio.wait([listener], timeout=CLOSE_SECONDS)
    if listener.done() and not listener.cancelled():
        listener.exception()  # retrieved: no "exception was never retrieved" at exit
    try:
        await asyncio.wait_for(layer.group_discard(group, channel), CLOSE_SECONDS)
    except Exception:  # noqa: BLE001 - the group entry expires on its own
        log.warning("could not leave %s", group, exc_info=True)


def last_answer(session_id: int) -> ChatMessage | None:
    """The newest assistant message that is an answer (not a tool call, not a note)."""
    recent = ChatMessage.objects.filter(session_id=session_id, role="assistant").exclude(kind="note")
    for message in recent.order_by("-seq")[:20]:
        if not message.tool_calls:
            return message
    return None
