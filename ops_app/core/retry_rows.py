"""Rows that are delivered later, with retries (the IM outbox, alert notifications, write-backs
to alert sources): which are due, who holds one, and how long to wait after a failure.

A drainer works on a row only after winning its claim — one conditional UPDATE on
`claimed_until` — so two drainers (two web processes, a beat task and a late worker) never
deliver the same row twice; a claim older than its lease is taken as abandoned (its drainer died
mid-delivery). The row's model needs `next_attempt_at` and `claimed_until` fields."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q, QuerySet

FIRST_PAUSE = timedelta(seconds=30)  # the pause after the first failure; doubles each time
LONGEST_PAUSE = timedelta(minutes=15)
LEASE = timedelta(minutes=5)


def _free(pending: QuerySet, now: datetime) -> QuerySet:
    return pending.filter(next_attempt_at__lte=now).filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )


def due(pending: QuerySet, now: datetime, limit: int = 50) -> list[int]:
    """Ids of the `pending` rows whose next attempt is due and nobody holds, oldest due first."""
    return list(_free(pending, now).order_by("next_attempt_at", "pk").values_list("pk", flat=True)[:limit])


def claim(pending: QuerySet, pk: int, now: datetime, lease: timedelta = LEASE) -> bool:
    """True if this caller won row `pk` (compare-and-set on its claim); False if another did."""
    return bool(_free(pending.filter(pk=pk), now).update(claimed_until=now + lease))


def backoff(attempts: int, first: timedelta = FIRST_PAUSE, longest: timedelta = LONGEST_PAUSE) -> timedelta:
    """The pause after the `attempts`-th failure: `first`, doubling, at most `longest`."""
    return min(first * (2 ** max(attempts - 1, 0)), longest)
