"""Reads that stay put for one turn, made once per turn instead of once per agent.

A turn spawns workers, and each used to ask the database the same questions again: the registry
version, the organization's tools (its data sources and MCP tools), default LLM endpoint and reply
language —
a dozen or more queries a turn for answers that an edit changes only between turns. Inside
`turn_scope()` the first `remembered(key, load)` runs `load` and every later call with the same key
(from the same task or any task it starts, such as parallel workers) gets that answer; concurrent
first calls share one load. Outside a scope nothing is remembered, so admin pages, the API and
tests always read fresh. An edit made during a turn applies from the next turn.

Remembered values are shared: callers must treat them as read-only.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Hashable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_memo: ContextVar[dict[Hashable, asyncio.Future] | None] = ContextVar("ongrid_turn_memo", default=None)
_RETRY = object()  # the first load failed: a waiter loads for itself


@contextlib.contextmanager
def turn_scope() -> Iterator[None]:
    """Remember reads until the block ends; a nested scope keeps the outer one's answers."""
    if _memo.get() is not None:
        yield
        return
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


async def remembered(key: Hashable, load: Callable[[], Awaitable[T]]) -> T:
    """`await load()`, once per key per turn scope (every call when no scope is open).

    A failed or cancelled load is not remembered: the next caller, and any caller already waiting
    on it, runs its own load, so one worker's error never becomes the whole turn's answer.
    """
    memo = _memo.get()
    if memo is None:
        return await load()
    pending = memo.get(key)
    if pending is not None:
        value: Any = await asyncio.shield(pending)
        return await load() if value is _RETRY else value
    pending = asyncio.get_running_loop().create_future()
    memo[key] = pending
    try:
        value = await load()
    except BaseException:
        memo.pop(key, None)
        pending.set_result(_RETRY)
        raise
    pending.set_result(value)
    return value
