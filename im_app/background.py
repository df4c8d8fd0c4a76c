"""Work that runs after a webhook has been answered: platforms give a few seconds for the HTTP
answer (Slack 3 s, Feishu 3 s), and a turn takes far longer. Tasks live on the server's event
loop; references are kept here so they are not garbage-collected mid-run."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Coroutine

log = logging.getLogger(__name__)

TASKS: set[asyncio.Task] = set()


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
