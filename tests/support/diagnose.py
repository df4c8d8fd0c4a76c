"""What is still running in this process, for a test that found work it did not expect: every
thread's stack and the background loops' tasks (a hang in CI is then readable from its log)."""

from __future__ import annotations

import asyncio
import sys
import threading
import traceback

from agents_app.runtime import executors


def running_work() -> str:
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        if ident == threading.get_ident():
            continue
        stack = "".join(traceback.format_stack(frame)[-12:])
        parts.append(f"--- thread {names.get(ident, ident)}\n{stack}")
    for loop in {executors._background, executors._main_loop}:
        if loop is None or loop.is_closed():
            continue
        for task in asyncio.all_tasks(loop):
            chain = "\n".join(await_chain(task.get_coro()))
            parts.append(f"--- task {task.get_name()}\n{chain}")
    return "\n".join(parts)


def await_chain(coro) -> list[str]:
    """Where a suspended coroutine waits: each awaiting frame, outermost first."""
    lines = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            lines.append(f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return lines
