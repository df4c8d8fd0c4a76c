"""The only writer of `NotificationDelivery`: which messages an incident gets (one per channel of
its matching rules, after quiet hours and the rate limits), the updates owed to sent cards, and
every state change of a row as the drainer works through it (each one conditional UPDATE, so
two drainers never send a row twice)."""

from __future__ import annotations

import datetime as dt
import logging

from django.db import transaction

from incidents_app.alerting import clock, rules
from incidents_app.alerting.models import NotificationChannel, NotificationDelivery, NotificationRule
from ops_app.core import retry_rows
from ops_app.models import Incident

log = logging.getLogger(__name__)
Kind, Status = NotificationDelivery.Kind, NotificationDelivery.Status

FIRST_PAUSE = dt.timedelta(seconds=30)  # after the first failed attempt; doubles each time
LONGEST_PAUSE = dt.timedelta(minutes=15)
MAX_ATTEMPTS = 8  # about 45 minutes of retries, then the row is failed for good
LEASE = dt.timedelta(minutes=2)  # a claim this old is taken as abandoned (its drainer died)
COUNTED = (Status.PENDING, Status.SENT, Status.FAILED)  # the messages a channel's window counts


def group_of(incident: Incident) -> str:
    return (incident.fingerprint or f"incident-{incident.pk}")[:100]


def announce(incident_id: int) -> list[int]:
    """Queue the alert messages of a new or reopened incident: one per channel of the rules that
    match it, unless quiet hours or the group's limit hold it back; over a channel's limit it is
    collected for that channel's digest. Returns the ids of the rows due now."""
    incident = Incident.objects.select_related("alert_source").filter(pk=incident_id).first()
    if incident is None or incident.status != Incident.Status.FIRING:
        return []
    now = clock.now()
    due, seen = [], set()
    for rule in rules.matching_rules(incident):
        if rules.silenced_by_quiet_hours(rule, incident, now):
            log.info("incident %s: rule %s is in its quiet hours", incident.pk, rule.pk)
            continue
        for channel in rule.channels.all():
            if (
                channel.pk in seen
                or not channel.enabled
                or channel.organization_id != incident.organization_id
            ):
                continue
            seen.add(channel.pk)
            row = _queue_alert(rule, channel, incident, now)
            if row is not None and row.status == Status.PENDING:
                due.append(row.pk)
    return due


def _queue_alert(
    rule: NotificationRule, channel: NotificationChannel, incident: Incident, now: dt.datetime
) -> NotificationDelivery | None:
    """Under the channel's row lock, so concurrent alerts count the window right."""
    group = group_of(incident)
    with transaction.atomic():
        NotificationChannel.objects.select_for_update().filter(pk=channel.pk).values_list("pk").first()
        sent_for_incident = NotificationDelivery.objects.filter(
            channel=channel, incident=incident, kind=Kind.ALERT, created_at__gte=now - dt.timedelta(minutes=1)
        )
        if sent_for_incident.exists():
            return None  # the same incident saved twice in a moment: announced once
        if rule.group_minutes and _recent_in_group(rule, channel, group, now):
            log.info("incident %s: group %s announced on channel %s lately", incident.pk, group, channel.pk)
            return None
        window = NotificationDelivery.objects.filter(
            channel=channel,
            kind=Kind.ALERT,
            status__in=COUNTED,
            created_at__gt=now - dt.timedelta(minutes=channel.window_minutes),
        )
        full = window.count() >= channel.max_messages
        row = NotificationDelivery.objects.create(
            organization_id=incident.organization_id,
            rule=rule,
            channel=channel,
            incident=incident,
            kind=Kind.ALERT,
            group=group,
            status=Status.COLLECTED if full else Status.PENDING,
            next_attempt_at=None if full else now,
            created_at=now,
        )
        if full:
            oldest = window.order_by("created_at").values_list("created_at", flat=True).first() or now
            _ensure_digest(channel, oldest + dt.timedelta(minutes=channel.window_minutes))
        return row


def _recent_in_group(
    rule: NotificationRule, channel: NotificationChannel, group: str, now: dt.datetime
) -> bool:
    since = now - dt.timedelta(minutes=rule.group_minutes)
    return NotificationDelivery.objects.filter(
        rule=rule, channel=channel, group=group, kind=Kind.ALERT, created_at__gte=since
    ).exists()


def _ensure_digest(channel: NotificationChannel, at: dt.datetime) -> None:
    """One digest waits per channel: it is sent when the window that filled up ends."""
    waiting = NotificationDelivery.objects.filter(channel=channel, kind=Kind.DIGEST, status=Status.PENDING)
    if not waiting.exists():
        NotificationDelivery.objects.create(
            organization_id=channel.organization_id,
            channel=channel,
            kind=Kind.DIGEST,
            next_attempt_at=at,
            created_at=clock.now(),
        )


def queue_updates(incident_id: int, *, report: bool) -> list[int]:
    """The updates owed to the incident's messages: every IM card is redrawn (one pending redraw
    per card is enough, it draws the state when sent); e-mail and webhooks get one follow-up,
    with the report (`report`). Returns the ids of the rows due now."""
    now = clock.now()
    alerted = NotificationDelivery.objects.filter(incident_id=incident_id, kind=Kind.ALERT).exclude(
        status=Status.COLLECTED
    )
    due = []
    for channel in NotificationChannel.objects.filter(pk__in=alerted.values("channel_id"), enabled=True):
        updates = NotificationDelivery.objects.filter(
            channel=channel, incident_id=incident_id, kind=Kind.UPDATE
        )
        if channel.kind == NotificationChannel.Kind.IM:
            if updates.filter(status=Status.PENDING, claimed_until__isnull=True).exists():
                continue
        elif not report or updates.exists():
            continue
        row = NotificationDelivery.objects.create(
            organization_id=channel.organization_id,
            channel=channel,
            incident_id=incident_id,
            kind=Kind.UPDATE,
            next_attempt_at=now,
            created_at=now,
        )
        due.append(row.pk)
    return due


# --- the drainer's side ----------------------------------------------------------------------------


def due(now: dt.datetime, limit: int = 50) -> list[int]:
    return retry_rows.due(NotificationDelivery.objects.filter(status=Status.PENDING), now, limit)


def claim(pk: int, now: dt.datetime) -> NotificationDelivery | None:
    """The row if this caller won it (compare-and-set on its claim), else None."""
    if not retry_rows.claim(NotificationDelivery.objects.filter(status=Status.PENDING), pk, now, LEASE):
        return None
    return NotificationDelivery.objects.select_related("channel", "incident").get(pk=pk)


def record_sent(row: NotificationDelivery, ref: dict | None = None) -> None:
    NotificationDelivery.objects.filter(pk=row.pk).update(
        status=Status.SENT,
        attempts=row.attempts + 1,
        sent_at=clock.now(),
        claimed_until=None,
        last_error="",
        ref=ref,
    )


def record_failure(row: NotificationDelivery, reason: str, now: dt.datetime, *, final: bool = False) -> str:
    """One more failed attempt: the next after a doubling pause, or failed for good after
    MAX_ATTEMPTS (or at once when retrying cannot help). Returns the row's new status."""
    attempts = row.attempts + 1
    if final or attempts >= MAX_ATTEMPTS:
        status, next_at = Status.FAILED, row.next_attempt_at
    else:
        status, next_at = Status.PENDING, now + backoff(attempts)
    NotificationDelivery.objects.filter(pk=row.pk).update(
        attempts=attempts, status=status, next_attempt_at=next_at, claimed_until=None, last_error=reason[:200]
    )
    return status


def backoff(attempts: int) -> dt.timedelta:
    """30 s, 1 min, 2 min, … capped at 15 min."""
    return retry_rows.backoff(attempts, FIRST_PAUSE, LONGEST_PAUSE)


def collected_for(digest: NotificationDelivery) -> list[NotificationDelivery]:
    return list(
        NotificationDelivery.objects.filter(
            channel_id=digest.channel_id, kind=Kind.ALERT, status=Status.COLLECTED
        )
        .select_related("incident")
        .order_by("created_at", "pk")
    )


def record_digested(rows: list[NotificationDelivery]) -> None:
    NotificationDelivery.objects.filter(pk__in=[r.pk for r in rows], status=Status.COLLECTED).update(
        status=Status.DIGESTED, sent_at=clock.now()
    )


def card_of(row: NotificationDelivery) -> NotificationDelivery | None:
    """The alert (or digest) row whose posted card an update redraws."""
    return (
        NotificationDelivery.objects.filter(
            channel_id=row.channel_id, incident_id=row.incident_id, kind=Kind.ALERT
        )
        .exclude(status=Status.COLLECTED)
        .order_by("-created_at", "-pk")
        .first()
    )
