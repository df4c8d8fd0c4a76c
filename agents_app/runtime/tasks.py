"""Celery tasks of the scale-out shape, and the worker-process signals of the agents layer."""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from celery import shared_task
from celery.signals import worker_process_init, worker_ready
from django.db import DatabaseError, connection

from agents_app.runtime.turn_host import reset_after_fork, turn_host
from chat_app.models import ChatSession
from chat_app.services import reap_orphans

log = logging.getLogger(__name__)
T = TypeVar("T")

NOT_MIGRATED = "database not migrated yet: run manage.py migrate; the reaper will run from beat"


@shared_task(name="agents_app.run_turn", acks_late=True, reject_on_worker_lost=True)
def run_turn_task(session_id: int, queued_by: str | None = None) -> bool:
    """Hand one turn to this worker process's event loop; return once the turn owns its row.

    Acknowledged late: a worker that dies before the hand-over leaves the message for another
    worker, and the claim (a compare-and-set on the row's owner) makes a redelivered message a
    no-op once some process has taken the turn. Never retried otherwise: a turn has side effects.
    """
    return turn_host().hand_over(session_id, queued_by)


def run_on_worker_loop(task: Any, coro: Coroutine[Any, Any, T]) -> T:
    """Run the async body of a Celery task (an investigation, a schedule run) to its end.

    On a worker: on the process's turn host loop, shared with the turns (docs/runtime.md, "Many
    turns per worker process"). Eager (the embedded shape, no broker): in the caller's process,
    as the caller would run it itself."""
    if task.request.is_eager:
        return async_to_sync(_awaited)(coro)
    return turn_host().run(coro)


async def _awaited(coro: Coroutine[Any, Any, T]) -> T:
    return await coro


@shared_task(name="agents_app.reap_orphans")
def reap_orphans_task() -> int:
    return reap_orphans()


@worker_process_init.connect
def start_the_child_afresh(**kwargs) -> None:
    """A prefork child builds its own loop thread and channel layers on first use."""
    reset_after_fork()


@worker_ready.connect
def reap_when_a_worker_starts(**kwargs) -> None:
    """A worker that starts after a crash closes the rows its predecessor left running.

    Never stops the worker: before `migrate` there is nothing to reap (one line says what to do),
    and any other failure is logged; beat runs the reaper every 5 minutes anyway."""
    try:
        if ChatSession._meta.db_table not in connection.introspection.table_names():
            log.warning(NOT_MIGRATED)
            return
        reap_orphans()
    except DatabaseError as exc:
        log.error("the reaper could not run at worker start (%s); it will run from beat", exc)
