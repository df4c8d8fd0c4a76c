"""Telegram long polling: the outbound-only way for installations without a public URL, one loop
per app in `manage.py ongrid_im` (`im_app.outbound`). A failure backs off (1 s doubling to 60 s)
and the loop carries on; updates are de-duplicated by the same store as the webhook's."""

from __future__ import annotations

import asyncio
import logging

from im_app import background
from im_app.models import IMApp
from im_app.platforms.telegram import inbound
from im_app.platforms.telegram.client import TelegramClient

log = logging.getLogger(__name__)

MAX_BACKOFF = 60.0


async def poll_once(
    app: IMApp,
    client: TelegramClient,
    offset: int | None,
    hold_seconds: int = 50,
    stop: asyncio.Event | None = None,
) -> int | None:
    """Fetch one batch of updates and start handling each new one; returns the next offset.
    Handling runs concurrently, so a long turn in one chat never delays another chat. `stop`
    ends the long poll at once (updates already fetched are still all started)."""
    fetch = client.updates(offset, hold_seconds)
    updates = await (background.unless_stopped(fetch, stop) if stop is not None else fetch)
    for update in updates or []:
        offset = update["update_id"] + 1
        await inbound.accept_update(app, update, client)
    return offset


async def poll_app(app: IMApp, stop: asyncio.Event) -> None:
    """Poll until `stop`, whatever goes wrong in between."""
    client = TelegramClient(app)
    offset: int | None = None
    backoff = 1.0
    while not stop.is_set():
        try:
            offset = await poll_once(app, client, offset, stop=stop)
            backoff = 1.0
        except Exception as exc:  # noqa: BLE001 - network, platform or database trouble: retry
            log.warning(
                "IM app %s: polling failed (%s); retrying in %.0fs", app.pk, type(exc).__name__, backoff
            )
            await background.sleep_unless_stopped(backoff, stop)
            backoff = min(backoff * 2, MAX_BACKOFF)
