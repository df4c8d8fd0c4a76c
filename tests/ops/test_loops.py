"""The embedded shape's periodic loops (`ops_app.core.loops.repeat`): once per process, a failing
round does not end the loop, blocking work stays off the event loop's thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ops_app.core import loops

pytestmark = pytest.mark.asyncio


async def test_a_failing_round_is_logged_and_the_loop_goes_on_off_the_event_loop_thread(caplog):
    rounds: list[str] = []
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    main_thread = threading.get_ident()

    def work() -> None:
        rounds.append("off-loop" if threading.get_ident() != main_thread else "on-loop")
        if len(rounds) == 1:
            raise RuntimeError("database restarting")
        if len(rounds) == 3:
            loop.call_soon_threadsafe(done.set)

    task = asyncio.create_task(loops.repeat("test loop: failing round", work, 0))
    try:
        await asyncio.wait_for(done.wait(), timeout=10)
    finally:
        task.cancel()
    assert rounds[:3] == ["off-loop"] * 3
    assert "test loop: failing round: round failed" in caplog.text


async def test_a_second_loop_of_the_same_name_returns_at_once():
    calls = 0
    started = asyncio.Event()

    async def work() -> None:
        nonlocal calls
        calls += 1
        started.set()

    first = asyncio.create_task(loops.repeat("test loop: once", work, 3600))
    try:
        await asyncio.wait_for(started.wait(), timeout=10)
        await asyncio.wait_for(loops.repeat("test loop: once", work, 0), timeout=10)
    finally:
        first.cancel()
    assert calls == 1
