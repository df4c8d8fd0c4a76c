"""Work that runs after a webhook has been answered: platforms give a few seconds for the HTTP
answer (Slack 3 s, Feishu 3 s), and a turn takes far longer. Tasks live on the server's event
loop; references are kept here so they are not garbage-collected mid-run."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

TASKS: set[asyncio.Task] = set()
T = TypeVar("T")


def run_after_answer(work: Coroutine, name: str) -> asyncio.Task:
    # A fresh context: the request's (asgiref's per-request thread executor among it) ends with
    # the answer, and database calls made after it must not be routed to that dead executor.
    task = asyncio.get_running_loop().create_task(
        _logged(work, name), name=name, context=contextvars.Context()
    )
    TASKS.add(task)
    task.add_done_callback(TASKS.discard)
    return task


async def _logged(work: Coroutine, name: str) -> None:
    try:
        await work
    except Exception:  # noqa: BLE001 - one bad delivery must not take the bridge down
        log.exception("IM work %s failed", name)


async def drain() -> None:
    """Wait for every piece of work started so far (tests, graceful shutdown)."""
    while TASKS:
        await asyncio.gather(*list(TASKS), return_exceptions=True)


# --- the long-lived loops of `manage.py ongrid_im` ----------------------------------------------


async def unless_stopped(work: Coroutine[Any, Any, T], stop: asyncio.Event) -> T | None:
    """`work`'s result, or None (the work cancelled) when `stop` is set first: a long poll or a
    connection attempt must not hold up the end of the process."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if task.done():
        return task.result()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return None


async def sleep_unless_stopped(seconds: float, stop: asyncio.Event) -> None:
    """A backoff pause that `stop` cuts short."""
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        pass
