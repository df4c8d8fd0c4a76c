"""How a run learns it must stop: a token checked before every LLM call and every tool call."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)

StopCheck = Callable[[], Awaitable[str | bool | None]]


class CancelToken:
    """A stop request for one run, checked before every LLM call and every tool call.

    `cancel(reason)` stops it from inside the process. `check` is an optional async hook the
    runtime plugs a cross-process stop flag into (a database column, a Redis key): it returns a
    truthy value (ideally the reason) when the run must stop.
    """

    def __init__(self, check: StopCheck | None = None):
        self.check = check
        self._reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        return self._reason

    def cancel(self, reason: str = "stop requested") -> None:
        if self._reason is None:
            self._reason = reason or "stop requested"

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
