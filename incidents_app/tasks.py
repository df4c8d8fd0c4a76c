"""Celery task of the scale-out shape: one investigation per task."""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async
from celery import shared_task
from channels.layers import get_channel_layer
from django.db import close_old_connections

from incidents_app.runner import run_investigation


@shared_task(name="incidents_app.run_investigation", acks_late=False)
def run_investigation_task(investigation_id: int) -> None:
    """Not retried: an investigation has a session and audit rows; the reaper handles crashes."""
    asyncio.run(_run(investigation_id))


async def _run(investigation_id: int) -> None:
    await sync_to_async(close_old_connections)()
    try:
        await run_investigation(investigation_id)
    finally:
        layer = get_channel_layer()
        if hasattr(layer, "close_pools"):
            await layer.close_pools()
