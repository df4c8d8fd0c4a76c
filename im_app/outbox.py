"""The outbox of answers a thread is owed: the only writer of `OutboxMessage`.

When the platform cannot be reached as an answer (or an approval card) is ready, the relay puts
it here instead of dropping it; `im_app.redelivery` posts it later. Every state change is one
conditional UPDATE, so two drainers (two daphne processes, a beat task and a late worker) never
post the same row twice: a drainer works on a row only after winning its claim.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.utils import timezone
from django.utils.translation import get_language

from im_app.models import IMApp, LateDelivery, OutboxMessage
from im_app.thread import Buttons
from ops_app.core import retry_rows

GIVE_UP_AFTER = timedelta(hours=24)  # a row still undelivered this long after it was queued fails
FIRST_PAUSE = timedelta(seconds=30)  # the pause after the first failed redelivery; doubles each time
LONGEST_PAUSE = timedelta(minutes=15)
LEASE = timedelta(minutes=5)  # a claim this old is taken as abandoned (its drainer died mid-post)


def enqueue(
    app: IMApp,
    session_id: int | None,
    address: dict,
    messages: list[tuple[str, Buttons | None]],
    reason: str,
    *,
    kind: str = OutboxMessage.Kind.ANSWER,
    proposal_id: int | None = None,
) -> OutboxMessage:
    """Queue rendered messages for a thread; the first redelivery is due at once. The active
    language is kept so the late note is written in the thread's language."""
    return OutboxMessage.objects.create(
        organization_id=app.organization_id,
        app=app,
        session_id=session_id,
        kind=kind,
        address=address,
        messages=[{"text": text, "buttons": buttons} for text, buttons in messages],
        proposal_id=proposal_id,
        language=get_language() or "",
        next_attempt_at=timezone.now(),
        last_error=reason[:200],
    )


aenqueue = sync_to_async(enqueue)


def due(now: datetime, limit: int = 50) -> list[int]:
    """Ids of the pending rows whose next attempt is due and nobody holds."""
    return retry_rows.due(OutboxMessage.objects.filter(status=LateDelivery.PENDING), now, limit)


def claim(pk: int, now: datetime) -> OutboxMessage | None:
    """The row, if this caller won it (compare-and-set on its claim); None if another did first."""
    if not retry_rows.claim(OutboxMessage.objects.filter(status=LateDelivery.PENDING), pk, now, LEASE):
        return None
    return OutboxMessage.objects.select_related("app").get(pk=pk)


def record_sent(row: OutboxMessage, sent: int) -> None:
    """`sent` messages of the row are in the thread: a retry resumes after them."""
    OutboxMessage.objects.filter(pk=row.pk).update(sent=sent)
    row.sent = sent


def record_delivered(row: OutboxMessage) -> None:
    OutboxMessage.objects.filter(pk=row.pk).update(
        status=LateDelivery.DELIVERED, delivered_at=timezone.now(), claimed_until=None, last_error=""
    )


def record_failure(row: OutboxMessage, reason: str, now: datetime) -> str:
    """One more failed attempt: the next one after a doubling pause, or the row failed for good once
    it is older than GIVE_UP_AFTER. Returns the row's new status."""
    attempts = row.attempts + 1
    if now - row.created_at >= GIVE_UP_AFTER:
        status, next_at = LateDelivery.FAILED, row.next_attempt_at
        reason = f"{reason}; gave up after {GIVE_UP_AFTER.total_seconds() / 3600:g} h"
    else:
        status, next_at = LateDelivery.PENDING, now + backoff(attempts)
    OutboxMessage.objects.filter(pk=row.pk).update(
        attempts=attempts, status=status, next_attempt_at=next_at, claimed_until=None, last_error=reason[:200]
    )
    return status


def backoff(attempts: int) -> timedelta:
    """30 s, 1 min, 2 min, ... capped at 15 min: about 100 tries in a day."""
    return retry_rows.backoff(attempts, FIRST_PAUSE, LONGEST_PAUSE)
