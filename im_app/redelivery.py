"""The drainer of the outbox (`im_app.outbox`): posts the answers a platform could not take when
they were ready, once it answers again, each with a short note that it comes late.

It runs in both shapes: as a loop on the serving process's event loop without Redis (started with
the first queued row, or by the first webhook after a restart when rows wait; and by
`manage.py ongrid_im`), and as the Celery beat task
`im_app.redeliver` with Redis. Any number may run at once: each row is claimed first
(`outbox.claim`), so it is posted once whoever drains it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import weakref
from datetime import datetime

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from im_app import outbox
from im_app.background import sleep_unless_stopped
from im_app.delivery import FAILURES, failure_reason
from im_app.models import LateDelivery, OutboxMessage
from im_app.thread import PlatformThread

log = logging.getLogger(__name__)

DRAIN_EVERY = 15.0  # seconds between two passes of the embedded loop

# The embedded drainer of each event loop that runs one (a server has one loop; a test, one per
# test). Holding the task here keeps it from being garbage-collected mid-run.
_loops: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}
_checked: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()  # see resume_if_pending


async def drain_once(now: datetime | None = None) -> int:
    """One pass: try every due row once. Returns how many rows were delivered."""
    now = now or timezone.now()
    delivered = 0
    for pk in await sync_to_async(outbox.due)(now):
        row = await sync_to_async(outbox.claim)(pk, now)
        if row is None:
            continue  # another drainer has it
        delivered += await deliver(row, now)
    return delivered


async def deliver(row: OutboxMessage, now: datetime) -> bool:
    """Post the row's messages not yet sent, the late note on the first; record the outcome."""
    try:
        if not row.app.enabled:
            raise AppDisabled
        thread = thread_of(row)
        with translation.override(row.language or None):
            messages = await _messages(row, thread)
            for index in range(row.sent, len(messages)):
                text, buttons = messages[index]
                if index == 0:
                    text = await _with_late_note(thread, row, text)
                await thread.post(text, buttons)
                await sync_to_async(outbox.record_sent)(row, index + 1)
    except Exception as exc:  # noqa: BLE001 - any failure is one failed attempt, never a lost row
        if not isinstance(exc, (*FAILURES, AppDisabled)):
            log.exception("IM outbox %s: unexpected failure", row.pk)
        reason = failure_reason(exc)
        status = await sync_to_async(outbox.record_failure)(row, reason, now)
        log.warning(
            "IM outbox %s (app %s): redelivery failed (%s), now %s", row.pk, row.app_id, reason, status
        )
        return False
    await sync_to_async(outbox.record_delivered)(row)
    log.info("IM outbox %s (app %s): delivered late", row.pk, row.app_id)
    return True


class AppDisabled(Exception):
    """The row's app is switched off: nothing is posted until it is enabled again (or the row fails)."""


def thread_of(row: OutboxMessage) -> PlatformThread:
    """The row's thread, with the app's current credentials (never stored in the row)."""
    from im_app.platforms.registry import PLATFORMS  # the platforms import the relay, which queues here

    return PLATFORMS[row.app.platform].thread.at(row.app, row.address)


def late_note(row: OutboxMessage) -> str:
    return _("(delivered late: %(platform)s was unreachable when the answer was ready)") % {
        "platform": row.app.get_platform_display()
    }


async def _with_late_note(thread: PlatformThread, row: OutboxMessage, text: str) -> str:
    """The first message with the note above it; the note alone first when both would not fit."""
    note = thread.markup.emphasis(late_note(row))
    if len(note) + 2 + len(text) <= thread.max_text:
        return f"{note}\n\n{text}"
    await thread.post(note)
    return text


async def _messages(row: OutboxMessage, thread: PlatformThread) -> list[tuple[str, list | None]]:
    """What to post: as queued; an approval card as its proposal stands now (decided meanwhile, it
    shows the decision and no buttons)."""
    stored = [
        (m["text"], [tuple(b) for b in m["buttons"]] if m.get("buttons") else None) for m in row.messages
    ]
    if row.kind != OutboxMessage.Kind.CARD or row.proposal_id is None:
        return stored
    from im_app.conversation import acard_now  # the relay imports this module's starter

    card = await acard_now(row.app, thread, row.proposal_id)
    return [card] if card is not None else stored


# --- where it runs ---------------------------------------------------------------------------------


def embedded() -> bool:
    """Without Redis the serving process drains; with it, Celery beat does (`im_app.redeliver`)."""
    return settings.ONGRID_EXECUTOR == "inline"


def ensure_drainer() -> None:
    """Start the embedded loop on the running event loop unless one runs there (embedded shape
    only). Called when a row is queued: a process that never queues one never polls the table."""
    if not embedded():
        return
    loop = asyncio.get_running_loop()
    running = _loops.get(loop)
    if running is None or running.done():
        # A fresh context, as for `background.run_after_answer`: a request's (its per-request
        # thread executor among it) ends with the answer, and this loop's database calls outlive it.
        _loops[loop] = loop.create_task(
            drainer_loop(asyncio.Event()), name="im-redelivery", context=contextvars.Context()
        )


async def resume_if_pending() -> None:
    """After a restart nothing queues a row, yet rows may wait: the first webhook a serving
    process gets starts its loop when there are any (one query per event loop, not per webhook)."""
    if not embedded():
        return
    loop = asyncio.get_running_loop()
    if loop in _checked:
        return
    _checked.add(loop)
    if await OutboxMessage.objects.filter(status=LateDelivery.PENDING).aexists():
        ensure_drainer()


def running_drainers() -> list[asyncio.Task]:
    """The embedded loops still running (tests stop them; a server's run until it exits)."""
    return [task for task in _loops.values() if not task.done()]


async def drainer_loop(stop: asyncio.Event, every: float | None = None) -> None:
    """Drain every `every` seconds until `stop`; a failing pass is logged and the loop goes on."""
    while not stop.is_set():
        try:
            await drain_once()
        except Exception:  # noqa: BLE001 - the drainer must outlive a bad pass (database restart...)
            log.exception("IM outbox pass failed")
        await sleep_unless_stopped(every if every is not None else DRAIN_EVERY, stop)
