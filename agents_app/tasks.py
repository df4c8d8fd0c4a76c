"""Celery tasks of the scale-out shape."""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async
from celery import shared_task
from celery.signals import worker_ready
from channels.layers import get_channel_layer
from django.db import close_old_connections

from agents_app.runtime import get_runtime
from chat_app.services import reap_orphans


@shared_task(name="agents_app.run_turn", acks_late=False)
def run_turn_task(session_id: int) -> None:
    """Run one coordinator turn in this worker process. Not retried: a turn has side effects."""
    asyncio.run(_turn(session_id))


async def _turn(session_id: int) -> None:
    """One event loop per task: check the ORM thread's connection first (the database may have
    restarted since the last task) and release the loop's Redis pools at the end."""
    await sync_to_async(close_old_connections)()
    try:
        await get_runtime().run_turn(session_id)
    finally:
        layer = get_channel_layer()
        if hasattr(layer, "close_pools"):
            await layer.close_pools()


@shared_task(name="agents_app.reap_orphans")
def reap_orphans_task() -> int:
    return reap_orphans()


@worker_ready.connect
def reap_when_a_worker_starts(**kwargs) -> None:
    """A worker that starts after a crash closes the rows its predecessor left running."""
    reap_orphans()
