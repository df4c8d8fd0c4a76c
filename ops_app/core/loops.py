"""The embedded shape's periodic loops (no Celery beat): the schedule ticks, the cluster change
collector, the write-back drain, the vault repositories' sync.

Each is started by the server's first request and must run once per process, outlive a failing
round (a database restart, a remote that times out) and keep its blocking work off the event loop
and off the one thread Django keeps for sync calls, closing the database connection that worker
thread opened. `repeat` is that loop, so each feature only says what one round does.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.db import connection

log = logging.getLogger(__name__)
_running: set[str] = set()


def _in_worker_thread(work: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        try:
            return work()
        finally:
            connection.close()

    return run


async def repeat(name: str, work: Callable[[], object], every: Callable[[], float] | float) -> None:
    """Run `work` (sync: in a worker thread; or a coroutine function) every `every` seconds, for
    ever; a second call with the same `name` in the process returns at once."""
    if name in _running:
        return
    _running.add(name)
    round_ = (
        work
        if inspect.iscoroutinefunction(work)
        else sync_to_async(_in_worker_thread(work), thread_sensitive=False)
    )
    while True:
        try:
            await round_()
        except Exception:  # noqa: BLE001 - the loop must outlive a bad round (database restart...)
            log.exception("%s: round failed", name)
        await asyncio.sleep(every() if callable(every) else every)
