"""What is still running in this process, for a test that found work it did not expect: every
thread's stack and the background loops' tasks (a hang in CI is then readable from its log)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

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


def dump_loop_tasks(signum: int | None = None, frame=None) -> None:
    """(A SIGUSR1 handler.) The tasks of the event loop running in the main thread, and where each
    waits, written to stderr: faulthandler's dump shows threads only, and a teardown that hangs in
    asyncio's `_cancel_all_tasks` is a task that does not end when cancelled."""
    loop = asyncio.events._get_running_loop()
    lines = [">>> tasks of the main thread's event loop" if loop else ">>> no event loop running"]
    for task in asyncio.all_tasks(loop) if loop else ():
        lines.append(f"--- task {task.get_name()}: {task!r}"[:600])
        lines.extend(await_chain(task.get_coro()))
    sys.__stderr__.write("\n".join(lines) + "\n")
    sys.__stderr__.flush()


@contextmanager
def loop_tasks_dumped_after(seconds: float) -> Iterator[None]:
    """Dump the main loop's tasks (SIGUSR1, `dump_loop_tasks`) if the block is still running after
    `seconds`."""
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGUSR1))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def await_chain(coro) -> list[str]:
    """Where a suspended coroutine waits: each awaiting frame, outermost first."""
    lines = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            lines.append(f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return lines
