"""Celery tasks of the scale-out shape."""

from __future__ import annotations

import asyncio

from celery import shared_task
from celery.signals import worker_ready


@shared_task(name="agents_app.run_turn", acks_late=False)
def run_turn_task(session_id: int) -> None:
    """Run one coordinator turn in this worker process. Not retried: a turn has side effects."""
    from agents_app.runtime import get_runtime

    asyncio.run(get_runtime().run_turn(session_id))


@shared_task(name="agents_app.reap_orphans")
def reap_orphans_task() -> int:
    from chat_app.services import reap_orphans

    return reap_orphans()


@worker_ready.connect
def reap_when_a_worker_starts(**kwargs) -> None:
    """A worker that starts after a crash closes the rows its predecessor left running."""
    from chat_app.services import reap_orphans

    reap_orphans()
