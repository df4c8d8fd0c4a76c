"""How a run learns it must stop, and how a stop interrupts whatever the run is waiting on.

A `CancelToken` belongs to one agent run. `cancel(reason)` (from any thread) sets it; `race(aw)`
runs one awaitable (a model request, a tool call) as a task and cancels that task the moment the
token fires, so the streaming HTTP response, the local subprocess or the SSH channel it holds is
closed by the task's own cleanup instead of being waited out (docs/runtime.md, "Stop").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

logger = logging.getLogger(__name__)

StopCheck = Callable[[], Awaitable[str | bool | None]]
T = TypeVar("T")

# How long a cancelled call may take to clean up (kill its process group, close its channel)
# before the run moves on without it.
CLEANUP_SECONDS = 2.0


class Stopped(Exception):
    """The token fired while `race` was waiting; the awaited work was cancelled."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class CancelToken:
    """A stop request for one run, checked before every LLM call and every tool call (the
    cross-process `check` before LLM calls and write tools only: agents_app/tools/invoke.py).

    `cancel(reason)` stops it from inside the process (any thread). `check` is an optional async
    hook the runtime plugs a cross-process stop flag into (the session row): it returns a truthy
    value (ideally the reason) when the run must stop.
    """

    def __init__(self, check: StopCheck | None = None):
        self.check = check
        self._reason: str | None = None
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def cancelled(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        return self._reason

    def cancel(self, reason: str = "stop requested") -> None:
        """Set the token and wake every `race` waiting on it; safe from any thread."""
        if self._reason is not None:
            return
        self._reason = reason or "stop requested"
        event, loop = self._event, self._loop
        if event is None or loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            event.set()
        else:
            loop.call_soon_threadsafe(event.set)

    async def poll(self) -> bool:
        """True when the run must stop; consults the cross-process hook if one is plugged in."""
        if self._reason is None and self.check is not None:
            try:
                verdict = await self.check()
            except Exception:
                logger.exception("the stop-flag check failed; the run goes on")
                verdict = None
            if verdict:
                self.cancel(verdict if isinstance(verdict, str) else "stop requested")
        return self.cancelled

    async def wait(self) -> str:
        """Return the reason once the token fires."""
        if self._event is None:
            self._loop = asyncio.get_running_loop()
            self._event = asyncio.Event()
        if self._reason is None:
            await self._event.wait()
        return self._reason or "stop requested"

    async def race(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable` unless the token fires first; then cancel it and raise `Stopped`.

        The cancelled task gets up to CLEANUP_SECONDS to run its `finally` blocks (closing the HTTP
        stream, killing the process group, closing the SSH channel) before this returns.
        """
        if self._reason is not None:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise Stopped(self._reason)
        work = asyncio.ensure_future(awaitable)
        waiter = asyncio.ensure_future(self.wait())
        try:
            await asyncio.wait({work, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            waiter.cancel()
            await _cancel_and_settle(work)
            raise
        if work.done():
            waiter.cancel()
            return work.result()
        await _cancel_and_settle(work)
        raise Stopped(self._reason or "stop requested")


async def _cancel_and_settle(task: asyncio.Future) -> None:
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=CLEANUP_SECONDS)
    if not done:
        logger.warning("a stopped call did not finish its cleanup within %ss", CLEANUP_SECONDS)
    elif not task.cancelled() and task.exception() is not None:
        logger.debug("a stopped call ended with %r", task.exception())
