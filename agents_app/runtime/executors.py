"""Where a chat turn runs. `inline` (no Redis): an asyncio task on the ASGI server's own event
loop, so the in-memory channel layer and the consumers share one loop. `celery` (REDIS_URL set):
a Celery task on any worker. Either way the turn outlives the request or socket that started it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import threading
import weakref
from collections.abc import Coroutine
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import close_old_connections

from agents_app.runtime import events
from agents_app.runtime.core import get_runtime
from agents_app.runtime.publishing import Publisher
from agents_app.runtime.tasks import run_turn_task
from chat_app.models import MessageKind, MessageRole
from chat_app.services import aappend_message, aend_turn, process_identity, reap_orphans
from ops_app.core import tracing

log = logging.getLogger(__name__)

# The error a turn ends with when the task queue (Redis) cannot take it.
UNQUEUED = "The turn could not be queued: the task queue is unreachable. Send the message again."
# How long cancelled background work gets to unwind (its ORM call in a thread cannot be interrupted).
SETTLE_CANCEL_SECONDS = 10.0

_main_loop: asyncio.AbstractEventLoop | None = None
_background: asyncio.AbstractEventLoop | None = None
_background_lock = threading.Lock()
_tasks: set[asyncio.Task] = set()
# The inline shape's cap (ONGRID_TURNS_PER_PROCESS): one semaphore per event loop, so a daphne
# process (one loop) or a management command's private loop never runs more turns at once.
_inline_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def remember_main_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """Called by the ASGI app on each request: sync views hand turns to this loop. True the first time."""
    global _main_loop
    first = _main_loop is None
    _main_loop = loop
    return first


async def reap_at_startup() -> None:
    """Close the rows a crashed predecessor left running (docs/runtime.md); never fails the server."""
    try:
        await sync_to_async(reap_orphans)()
    except Exception:  # noqa: BLE001 - a reaper failure must not take the server down
        log.exception("the startup reaper failed")


def _background_loop() -> asyncio.AbstractEventLoop:
    """A private loop thread for processes with no server loop (management commands, WSGI)."""
    global _background
    with _background_lock:
        if _background is None or _background.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="ongrid-runtime", daemon=True).start()
            _background = loop
        return _background


def _keep(task: asyncio.Task) -> asyncio.Task:
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    task.add_done_callback(_log_crash)
    return task


def _log_crash(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("turn task crashed", exc_info=task.exception())


def run_in_background(coro: Coroutine[Any, Any, Any]) -> asyncio.Future | concurrent.futures.Future:
    """Start `coro` detached from the caller's lifetime; returns something to wait on if needed."""
    running = _running_loop()
    # A fresh context: the turn must not inherit the caller's (a request's or a socket's
    # thread-sensitive executor ends with it, and a sync view waiting for the turn would deadlock).
    if running is not None:
        return _keep(running.create_task(coro, context=contextvars.Context()))
    loop = _main_loop if _main_loop is not None and _main_loop.is_running() else _background_loop()
    return contextvars.Context().run(asyncio.run_coroutine_threadsafe, _tracked(coro), loop)


async def _tracked(coro: Coroutine[Any, Any, Any]) -> Any:
    task = asyncio.current_task()
    if task is not None:
        _keep(task)
    return await coro


def settle_background(seconds: float, cancel: bool = True) -> int:
    """Wait up to `seconds` for the work this process started in the background (turns,
    investigations) on its server or private loop, then cancel what is left (unless not `cancel`);
    returns how many were left. Whoever is about to empty or drop the database (a test's teardown)
    must not leave a turn writing into it: one holding a row lock would block the next TRUNCATE."""
    left = 0
    for loop in {_background, _main_loop}:
        if loop is None or loop.is_closed() or not loop.is_running() or loop is _running_loop():
            continue
        settling = asyncio.run_coroutine_threadsafe(_settle(seconds, cancel), loop)
        left += settling.result(timeout=seconds + SETTLE_CANCEL_SECONDS + 5)
    return left


async def _settle(seconds: float, cancel: bool) -> int:
    here = asyncio.get_running_loop()
    mine = [task for task in list(_tasks) if task.get_loop() is here and task is not asyncio.current_task()]
    if not mine:
        return 0
    if seconds > 0:
        _done, pending = await asyncio.wait(mine, timeout=seconds)
    else:
        pending = {task for task in mine if not task.done()}
    if not cancel:
        return len(pending)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=SETTLE_CANCEL_SECONDS)
    return len(pending)


def executor_name() -> str:
    return settings.ONGRID_EXECUTOR


def submit_turn(session_id: int) -> asyncio.Future | concurrent.futures.Future | None:
    """Run the pending turn of `session_id` (its user message is already persisted)."""
    if executor_name() == "celery":
        running = _running_loop()
        if running is None:
            # Outside the `except` that found no loop, so a failure logged while queueing is not
            # reported "during handling of RuntimeError: no running event loop".
            async_to_sync(_queue_turn)(session_id, process_identity())
        else:
            _keep(running.create_task(_queue_turn(session_id, process_identity())))
        return None
    return run_in_background(tracing.carry_context(_fresh_turn(session_id)))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _slots() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    slots = _inline_slots.get(loop)
    if slots is None:
        slots = _inline_slots[loop] = asyncio.Semaphore(settings.CONFIG.turns_per_process)
    return slots


def inline_slots_full() -> bool:
    """True when the server loop of this process runs as many inline turns as its cap allows, so
    a new one would only queue: the API refuses a waiting request then (agents_app/runtime/turns.py)."""
    loop = _main_loop
    slots = _inline_slots.get(loop) if loop is not None else None
    return slots is not None and slots.locked()


async def _fresh_turn(session_id: int) -> None:
    """Wait for one of this loop's slots (the chat shows "Queued" meanwhile, as in the Celery
    shape), then run the turn. Its ORM thread's connection is dropped first if stale (the database
    may have restarted or dropped it since the last turn); on PostgreSQL it goes back to the pool,
    which checks it."""
    slots = _slots()
    if slots.locked():
        await _announce_queued(session_id)
    async with slots:
        await sync_to_async(close_old_connections)()
        await get_runtime().run_turn(session_id)


async def _queue_turn(session_id: int, queued_by: str) -> None:
    """Tell the chat its turn waits for a worker, then enqueue it (in that order, so `turn.started`
    always comes after `turn.queued`). The task claims the row only if `queued_by` still owns it."""
    await _announce_queued(session_id)
    try:
        await sync_to_async(run_turn_task.delay, thread_sensitive=False)(session_id, queued_by)
    except Exception as exc:  # noqa: BLE001 - the broker is unreachable: end the turn visibly
        log.error("could not queue the turn of session %s: %s: %s", session_id, type(exc).__name__, exc)
        await _end_unqueued(session_id, UNQUEUED)


async def _end_unqueued(session_id: int, error: str) -> None:
    """A turn no worker will ever see ends now, as failed, instead of showing "Queued" until
    the reaper: its error bubble, the session idle (the user's message stays), the page told.
    A worker that got the message after all cannot claim it any more (its owner is cleared)."""
    message = await aappend_message(session_id, MessageRole.ASSISTANT, error, kind=MessageKind.ERROR)
    await aend_turn(session_id, error=error)
    ended = events.TurnEnded(session_id, status="failed", error=error, message_id=message.pk)
    await Publisher(session_id).publish(ended)


async def _announce_queued(session_id: int) -> None:
    """Tell the chat its turn waits; cosmetic, so a failure is logged and the turn still goes on."""
    try:
        await Publisher(session_id).publish(events.TurnQueued(session_id))
    except Exception:  # noqa: BLE001
        log.exception("could not announce the queued turn of session %s", session_id)
