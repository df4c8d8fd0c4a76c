"""The embedded shape's scheduler: a loop on the server's own event loop (no Redis, no beat).

Started by the ASGI app with the first request, like the startup reaper. Several daphne
processes may each run one: `scheduler.tick` claims each due time in the database, so a run
fires once whichever process sees it first (docs/schedules.md).
"""

from __future__ import annotations

from django.conf import settings

from ops_app.core import loops
from schedules_app.dispatching import fire_due


def should_run() -> bool:
    """Only without Celery: in the scale-out shape, beat ticks instead."""
    return settings.ONGRID_EXECUTOR == "inline" and settings.CONFIG.scheduler_interval > 0


async def scheduler_loop() -> None:
    """Tick for ever on this process."""
    await loops.repeat("scheduler tick", fire_due, lambda: settings.CONFIG.scheduler_interval)
