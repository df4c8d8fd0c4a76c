"""The outbound-only connections of `manage.py ongrid_im`, for installations without a public
URL: one loop per enabled app in that connection mode (Telegram long polling, Slack Socket Mode:
each platform's own, named by its registry row), all in one process."""

from __future__ import annotations

import asyncio
import logging

from im_app import redelivery
from im_app.models import ConnectionMode, IMApp
from im_app.platforms.registry import PLATFORMS

log = logging.getLogger(__name__)


async def run_all(stop: asyncio.Event) -> None:
    """Serve every enabled outbound-only app of a platform that has such a loop, until `stop`.
    Apps are read once at start: restart the process after adding one. Without Redis the outbox of
    late answers is drained here too (`im_app.redelivery`), whether or not any app is outbound-only."""
    drainer = asyncio.ensure_future(redelivery.drainer_loop(stop)) if redelivery.embedded() else None
    try:
        await _serve(stop)
        if drainer is not None:
            await drainer  # until `stop`
    finally:
        if drainer is not None and not drainer.done():
            drainer.cancel()
            await asyncio.gather(drainer, return_exceptions=True)


async def _serve(stop: asyncio.Event) -> None:
    outbound = [value for value, platform in PLATFORMS.items() if platform.outbound is not None]
    apps = [
        app
        async for app in IMApp.objects.filter(
            enabled=True, platform__in=outbound, connection_mode=ConnectionMode.POLLING
        ).order_by("pk")
    ]
    if not apps:
        log.warning("no enabled IM app uses an outbound-only connection; nothing to do")
        return
    log.info("serving %d outbound-only IM app(s)", len(apps))
    await asyncio.gather(*(PLATFORMS[app.platform].outbound(app, stop) for app in apps))
