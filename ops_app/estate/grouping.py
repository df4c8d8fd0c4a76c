"""One open incident per alert group, whoever sends the group: Alertmanager's receivers and the
paging sources (PagerDuty, Opsgenie, Grafana, generic webhooks) share this part of ingestion.

Concurrent deliveries of one group meet in the database, not in a read-then-write: the open
incident is locked, and where there is none yet, the partial unique constraints on open incidents
(`incident_org_open_group_uniq` for Alertmanager, `incident_org_open_source_group_uniq` for a
source) make the twin fail with IntegrityError. A delivery that loses such a race (or a deadlock
or serialization failure) is replayed from the start in a fresh transaction, where it finds the
winner's rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar

from django.db import IntegrityError, OperationalError

from ops_app.models import AlertSource, Incident

RETRIES = 5
RETRYABLE_SQLSTATES = {"40001", "40P01"}  # serialization failure, deadlock detected
T = TypeVar("T")


class TransientIngestError(RuntimeError):
    """The delivery kept losing races or the database was unavailable; the sender should retry."""


def replayed(attempt: Callable[[], T]) -> T:
    """Run one delivery's transaction (`attempt`), again from the start after a lost race."""
    for number in range(1, RETRIES + 1):
        try:
            return attempt()
        except IntegrityError as exc:
            problem: Exception = exc  # another delivery created the same incident or row first
        except OperationalError as exc:
            if getattr(exc.__cause__, "sqlstate", None) not in RETRYABLE_SQLSTATES:
                raise
            problem = exc
        if number == RETRIES:
            raise TransientIngestError(f"gave up after {RETRIES} attempts: {problem}") from problem
    raise AssertionError("unreachable")


def group_fingerprint(group_key: str, alert_source: AlertSource | None = None) -> str:
    """The incident's fingerprint for a group: a source's groups are its own (two sources that
    both name a group "checkout" never share an incident or an investigation cooldown)."""
    key = group_key if alert_source is None else f"source:{alert_source.pk}:{group_key}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def open_incident(
    org_id: int, fingerprint: str, source: str, alert_source: AlertSource | None = None
) -> Incident | None:
    """The group's open incident, locked: deliveries of one group then queue here, in order."""
    return (
        Incident.objects.select_for_update()
        .filter(organization_id=org_id, fingerprint=fingerprint, source=source, alert_source=alert_source)
        .exclude(status=Incident.Status.RESOLVED)
        .order_by("-started_at")
        .first()
    )


def last_resolved_incident(
    org_id: int, fingerprint: str, source: str, alert_source: AlertSource | None = None
) -> Incident | None:
    """The group's newest resolved incident, locked (for a source event that reopens it)."""
    return (
        Incident.objects.select_for_update()
        .filter(organization_id=org_id, fingerprint=fingerprint, source=source, alert_source=alert_source)
        .filter(status=Incident.Status.RESOLVED)
        .order_by("-started_at")
        .first()
    )


def new_incident(
    org_id: int,
    *,
    source: str,
    group_key: str,
    fingerprint: str,
    alert_source: AlertSource | None = None,
    **fields,
) -> Incident:
    """The group's first open incident. A concurrent twin fails here with IntegrityError (the
    constraints above); `replayed` then runs the delivery again and it finds this row."""
    return Incident.objects.create(
        organization_id=org_id,
        source=source,
        alert_source=alert_source,
        fingerprint=fingerprint,
        group_key=group_key,
        **fields,
    )
