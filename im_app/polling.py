"""Outbound-only mode for installations without a public URL: Telegram long polling and Slack
Socket Mode (`socket_mode`), one loop per app, all in one process (`manage.py ongrid_im`). A
failure backs off (1 s doubling to 60 s) and the loop carries on; deliveries are de-duplicated by
the same store as the webhooks'."""

from __future__ import annotations

import asyncio
import logging

from im_app import background, deliveries, socket_mode, telegram_bridge
from im_app.models import ConnectionMode, IMApp, Platform
from im_app.platforms.telegram import TelegramClient

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
        if await deliveries.afirst_time(app, f"update:{update['update_id']}"):
            background.run_after_answer(
                telegram_bridge.handle_update(app, update, client), f"telegram-{app.pk}-{update['update_id']}"
            )
    return offset


async def poll_app(app: IMApp, stop: asyncio.Event) -> None:
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


async def run_all(stop: asyncio.Event) -> None:
    """One loop per enabled app in outbound-only mode: Telegram long polling, Slack Socket Mode.
    Apps are read once at start: restart the process after adding one."""
    apps = [
        app
        async for app in IMApp.objects.filter(
            enabled=True,
            platform__in=[Platform.TELEGRAM, Platform.SLACK],
            connection_mode=ConnectionMode.POLLING,
        ).order_by("pk")
    ]
    if not apps:
        log.warning("no enabled IM app uses an outbound-only connection; nothing to do")
        return
    log.info("serving %d outbound-only IM app(s)", len(apps))
    await asyncio.gather(
        *(
            poll_app(app, stop) if app.platform == Platform.TELEGRAM else socket_mode.serve_app(app, stop)
            for app in apps
        )
    )
