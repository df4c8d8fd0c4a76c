"""Many turns per worker process: the process's own event loop, fed by the Celery task.

A turn is almost all waiting on the model, so one process can carry hundreds of them as asyncio
tasks. The Celery task `agents_app.run_turn` does not run the turn itself: it waits for a free
slot (`ONGRID_TURNS_PER_PROCESS`), hands the turn to this process's long-lived loop thread, and
returns once the turn has claimed its session row (owner = this process). Its broker message is
acknowledged only then, so while every slot is taken the task blocks, the worker fetches nothing
more and new turns wait in the broker queue: that is the back-pressure (docs/runtime.md,
"Many turns per worker process").

Every other Celery task that runs async code (investigations, schedule runs) runs on the same
loop through `TurnHost.run`, so the channel layer's Redis connections, the model clients and the
stop listeners all live on one loop per process, and nothing is closed on a loop it was not
opened on. A prefork child starts with a fresh host (`reset_after_fork`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from channels.layers import channel_layers
from django.conf import settings
from django.db import close_old_connections

from agents_app.runtime.core import get_runtime
from chat_app import services

log = logging.getLogger(__name__)
T = TypeVar("T")

# How long a hand-over may take once a slot is free: claiming the row is one UPDATE.
CLAIM_TIMEOUT = 60.0


class TurnHost:
    """One per worker process: a loop thread and a cap on the turns it runs at once."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._slots = threading.BoundedSemaphore(capacity)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._running = 0
        self._tasks: set[asyncio.Task] = set()

    @property
    def running(self) -> int:
        """Turns this process carries right now (for tests and the bench)."""
        return self._running

    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop thread, started on first use, so a forked pool child starts its own."""
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="ongrid-turns", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` on this process's loop and block the calling (task) thread for its result.

        For the Celery tasks that are not turns (an investigation, a schedule run): they share the
        loop with the turns instead of each opening, and failing to close, a loop of its own. Its
        ORM thread's connection is refreshed first, as for a turn."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("TurnHost.run called from the host's own loop: await the coroutine instead")
        future = asyncio.run_coroutine_threadsafe(_fresh(coro), self.loop())
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def hand_over(self, session_id: int, queued_by: str | None = None) -> bool:
        """Block until a slot is free, start the turn on the loop, return once it owns its row.

        False when the turn was not ours to run (another process claimed it, or it ended while
        queued); the slot is given back at once then."""
        self._slots.acquire()
        owned: concurrent.futures.Future[bool] = concurrent.futures.Future()
        try:
            asyncio.run_coroutine_threadsafe(self._host(session_id, queued_by, owned), self.loop())
        except BaseException:
            self._slots.release()
            raise
        return owned.result(timeout=CLAIM_TIMEOUT)

    async def _host(self, session_id: int, queued_by: str | None, owned: concurrent.futures.Future) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._running += 1
        try:
            # The ORM thread's connection may be stale (the database restarted since the last turn).
            await sync_to_async(close_old_connections)()
            claimed = await services.aclaim_turn(session_id, queued_by)
            owned.set_result(claimed)
            if claimed:
                await get_runtime().run_turn(session_id)
        except BaseException as exc:
            if not owned.done():
                owned.set_exception(exc)
            if not isinstance(exc, asyncio.CancelledError):
                log.exception("the turn of session %s crashed in its host", session_id)
        finally:
            self._running -= 1
            self._slots.release()
            if task is not None:
                self._tasks.discard(task)


async def _fresh(coro: Coroutine[Any, Any, T]) -> T:
    try:
        await sync_to_async(close_old_connections)()
    except BaseException:
        coro.close()
        raise
    return await coro


_host: TurnHost | None = None
_host_lock = threading.Lock()


def turn_host() -> TurnHost:
    """This process's host, sized by ONGRID_TURNS_PER_PROCESS."""
    global _host
    with _host_lock:
        if _host is None:
            _host = TurnHost(settings.CONFIG.turns_per_process)
        return _host


def reset_after_fork() -> None:
    """In a prefork child: forget the parent's host and channel layers, so the child's first
    turn starts its own loop thread and opens its own Redis connections (a loop thread does not
    survive a fork, and a lock or a connection copied from the parent must not be used)."""
    global _host, _host_lock
    _host, _host_lock = None, threading.Lock()
    channel_layers.backends = {}
