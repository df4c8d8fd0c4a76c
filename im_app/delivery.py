"""Posting into a thread whose platform may be down: a few quick tries, then an answer of "not
now" instead of an exception, and the short reason an operator may read.

A chat platform is sometimes unreachable (connection refused, a 503 from its edge, a timeout).
The relay must not lose the question or hang the turn on it: the placeholder is tried a few times
beside the running turn, and an answer that still cannot be posted goes to the outbox
(`im_app.outbox`). A 429 is not a failure here: `platforms.http.send` already waits the
Retry-After the platform asked for before each of these tries.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx

from im_app.platforms.http import PlatformError

log = logging.getLogger(__name__)

T = TypeVar("T")

# Pauses between the quick tries of one post: three tries over about three seconds, well inside
# every platform's rate limits (Slack ~1 message/s per channel, Telegram 30/s, Feishu 5/s).
PAUSES: tuple[float, ...] = (1.0, 2.0)

# What a post can fail with: the platform unreachable (httpx) or refusing (PlatformError).
FAILURES = (httpx.HTTPError, PlatformError)


def failure_reason(exc: BaseException) -> str:
    """A short, safe description of a failed call: an HTTP status or an exception class name.

    Never the exception's text: a platform's own words (or a URL holding a bot token) must not
    reach the admin, the logs or the audit."""
    if isinstance(exc, PlatformError):
        if exc.status is not None and exc.status >= 400:
            return f"HTTP {exc.status}"
        return "PlatformError"
    return type(exc).__name__


async def with_retries(attempt: Callable[[], Awaitable[T]], what: str) -> tuple[T | None, str]:
    """(the result, "") of the first try of `attempt` that works, or (None, the last failure's
    reason) after 1 + len(PAUSES) tries."""
    reason = ""
    for tried, pause in enumerate((*PAUSES, None), start=1):
        try:
            return await attempt(), ""
        except FAILURES as exc:
            reason = failure_reason(exc)
            log.warning("IM %s failed (%s), try %d of %d", what, reason, tried, len(PAUSES) + 1)
        if pause is not None:
            await asyncio.sleep(pause)
    return None, reason
