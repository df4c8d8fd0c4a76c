"""The embedded shape's scheduler: a loop on the server's own event loop (no Redis, no beat).

Started by the ASGI app with the first request, like the startup reaper. Several daphne
processes may each run one: `scheduler.tick` claims each due time in the database, so a run
fires once whichever process sees it first (docs/schedules.md).
"""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async
from django.conf import settings

from schedules_app.dispatching import fire_due

log = logging.getLogger(__name__)

_started = False


def should_run() -> bool:
    """Only without Celery: in the scale-out shape, beat ticks instead."""
    return settings.ONGRID_EXECUTOR == "inline" and settings.CONFIG.scheduler_interval > 0


async def scheduler_loop() -> None:
    """Tick forever; a failing tick is logged and the loop goes on."""
    global _started
    if _started:
        return
    _started = True
    while True:
        try:
            await sync_to_async(fire_due)()
        except Exception:  # noqa: BLE001 - the scheduler must outlive a bad tick (database restart...)
            log.exception("scheduler tick failed")
        await asyncio.sleep(settings.CONFIG.scheduler_interval)
