"""Working through the notification outbox. It runs in both shapes: as passes on the serving
process's event loop without Redis (started by the first message queued, or at startup when rows
wait, and repeated while rows wait), and as the Celery beat task
`incidents_app.drain_notifications` with Redis, plus a task per newly queued batch so a message
does not wait for the next beat. Any number may run at once: each row is claimed first
(`outbox.claim`), so it is sent once whoever drains it."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from agents_app.api import run_in_background
from incidents_app.alerting import clock, outbox, sending
from incidents_app.alerting.models import NotificationDelivery

log = logging.getLogger(__name__)
DRAIN_EVERY = 15.0  # seconds between two passes of the embedded loop

_timer: asyncio.TimerHandle | None = None  # the embedded shape's next planned pass


def drain_once(now: dt.datetime | None = None) -> int:
    """One pass: try every due row once. Returns how many went out."""
    now = now or clock.now()
    sent = 0
    for pk in outbox.due(now):
        row = outbox.claim(pk, now)
        if row is not None:
            sent += sending.deliver(row)
    return sent


def _drain_on_own_thread() -> int:
    """A pass off the process's one thread for sync calls: a chat platform or a webhook that takes
    its whole timeout must not hold every other sync call of the process behind it. The thread's
    database connection is closed afterwards."""
    try:
        return drain_once()
    finally:
        connection.close()


def embedded() -> bool:
    return settings.ONGRID_EXECUTOR != "celery"


def kick() -> None:
    """New rows are due: drain now (a background pass here, or a Celery task)."""
    if not embedded():
        from incidents_app.tasks import drain_notifications_task  # the task module imports this one

        drain_notifications_task.delay()
        return
    run_in_background(drain_pass())


async def drain_pass() -> None:
    """One pass on the event loop; while rows still wait (a retry, a digest's window) the next
    pass is set for DRAIN_EVERY seconds later. With nothing left no timer runs: the next queued
    row starts the passes again."""
    try:
        await sync_to_async(_drain_on_own_thread, thread_sensitive=False)()
    except Exception:  # noqa: BLE001 - logged; the next pass tries again
        log.exception("notification pass failed")
    try:
        if await sync_to_async(waiting)():
            _again_later(asyncio.get_running_loop())
    except Exception:  # noqa: BLE001
        log.exception("could not plan the next notification pass")


def _again_later(loop: asyncio.AbstractEventLoop) -> None:
    global _timer
    if _timer is not None and not _timer.cancelled() and _timer.when() > loop.time():
        return  # one pass is planned already
    _timer = loop.call_later(DRAIN_EVERY, _next_pass)


def _next_pass() -> None:
    global _timer
    _timer = None
    run_in_background(drain_pass())


def waiting() -> bool:
    return NotificationDelivery.objects.filter(status=NotificationDelivery.Status.PENDING).exists()


def stop() -> None:
    """Drop the planned pass (a test's teardown: its rows are gone with its database)."""
    global _timer
    if _timer is not None:
        _timer.cancel()
    _timer = None
