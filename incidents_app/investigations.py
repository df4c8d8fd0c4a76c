"""Every write to investigations goes through this module: the trigger decision (policy,
cooldown, budget), the queue (at most N running per organization), and every terminal path.

Decisions are taken under row locks (the incident, then the organization), so concurrent
Alertmanager deliveries of one group start one investigation and concurrent finishes never start
more than the organization's cap.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from chat_app import services as sessions
from chat_app.models import ChatSession, SessionStatus
from incidents_app.models import Investigation, InvestigationPolicy
from incidents_app.policy import fingerprint_of, matches, policy_for
from ops_app.models import SEVERITY_RANK, Incident, Organization

log = logging.getLogger(__name__)
Status = Investigation.Status
Trigger = Investigation.Trigger
BACKFILL_LIMIT = 20


class AlreadyInvestigating(Exception):
    """The incident has an investigation queued or running; a second would only duplicate it."""


def consider_incident(incident_id: int) -> Investigation | None:
    """The hook after an incident is created or changed: investigate, stop, or do nothing."""
    with transaction.atomic():
        incident = Incident.objects.select_for_update().filter(pk=incident_id).first()
        if incident is None:
            return None
        if incident.status == Incident.Status.RESOLVED:
            stop_open(incident, "The incident was resolved while it was being investigated.")
            return None
        policy = policy_for(incident.organization_id)
        trigger = _automatic_trigger(incident, policy)
        if trigger is None or not within_budget(policy):
            return None
        return _enqueue(incident, trigger)


def _automatic_trigger(incident: Incident, policy: InvestigationPolicy) -> str | None:
    if not matches(policy, incident):
        return None
    mine = Investigation.objects.filter(incident=incident)
    if mine.filter(status__in=[Status.QUEUED, Status.RUNNING]).exists():
        return None
    since = timezone.now() - dt.timedelta(minutes=policy.cooldown_minutes)
    last = (
        Investigation.objects.filter(
            organization_id=incident.organization_id,
            fingerprint=fingerprint_of(incident),
            created_at__gte=since,
        )
        .order_by("-created_at")
        .first()
    )
    if last is None:
        if incident.alert_source_id is not None:
            return Trigger.PAGED
        return Trigger.ALERTMANAGER if incident.source == Incident.Source.ALERTMANAGER else Trigger.MANUAL
    if policy.rerun_on_escalation and last.incident_id == incident.pk and _escalated(incident, last):
        return Trigger.ESCALATION
    return None  # inside the cooldown


def _escalated(incident: Incident, last: Investigation) -> bool:
    """Worse than when `last` was queued: a higher severity, or an alert of the group that started
    after it (Alertmanager re-sends the whole group, so alerts the last run saw do not count)."""
    worse = SEVERITY_RANK.get(incident.severity, 99) < SEVERITY_RANK.get(last.severity, 99)
    return worse or incident.alerts.filter(starts_at__gt=last.created_at).exists()


def within_budget(policy: InvestigationPolicy) -> bool:
    """Today's automatic investigations (count and tokens) are under the organization's budget."""
    today = Investigation.objects.filter(
        organization_id=policy.organization_id, created_at__gte=start_of_day()
    )
    if today.count() >= policy.daily_max_investigations:
        log.info("organization %s: daily investigation count spent", policy.organization_id)
        return False
    tokens = today.aggregate(total=Sum("tokens"))["total"] or 0
    return tokens < policy.daily_max_tokens


def start_of_day() -> dt.datetime:
    return timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)


def request(incident: Incident, user) -> Investigation:
    """A person's "Investigate": no policy, cooldown or budget; refused while one is open."""
    with transaction.atomic():
        Incident.objects.select_for_update().filter(pk=incident.pk).values_list("pk").first()
        if incident.investigations.filter(status__in=[Status.QUEUED, Status.RUNNING]).exists():
            raise AlreadyInvestigating(
                _("incident %(id)s is already being investigated") % {"id": incident.pk}
            )
        return _enqueue(incident, Trigger.MANUAL, user)


def _enqueue(incident: Incident, trigger: str, user=None) -> Investigation:
    investigation = Investigation.objects.create(
        organization_id=incident.organization_id,
        incident=incident,
        fingerprint=fingerprint_of(incident),
        severity=incident.severity,
        trigger=trigger,
        requested_by=user,
    )
    log.info("incident %s: investigation %s queued (%s)", incident.pk, investigation.pk, trigger)
    return investigation


def claim_queued(organization_id: int) -> list[int]:
    """Move the oldest queued investigations to running, up to the organization's cap; returns
    their ids for the caller to launch. The organization row lock serialises concurrent claims."""
    with transaction.atomic():
        Organization.objects.select_for_update().filter(pk=organization_id).values_list("pk").first()
        cap = policy_for(organization_id).max_concurrent
        running = Investigation.objects.filter(organization_id=organization_id, status=Status.RUNNING).count()
        free = max(0, cap - running)
        if not free:
            return []
        ids = list(
            Investigation.objects.filter(organization_id=organization_id, status=Status.QUEUED)
            .order_by("created_at", "pk")
            .values_list("pk", flat=True)[:free]
        )
        Investigation.objects.filter(pk__in=ids, status=Status.QUEUED).update(
            status=Status.RUNNING, started_at=timezone.now()
        )
        return ids


def open_session(investigation_id: int, brief: str) -> ChatSession:
    """The investigation's root session, with the brief as its first message, marked running in
    this process (so the reaper can tell when the process is gone)."""
    investigation = Investigation.objects.select_related("incident").get(pk=investigation_id)
    session = sessions.start_investigation(
        investigation.organization_id,
        investigation.requested_by,
        title=f"Investigation of incident #{investigation.incident_id}: {investigation.incident.title}",
    )
    Investigation.objects.filter(pk=investigation_id).update(session=session)
    sessions.begin_turn(session.pk, brief)
    return session


def finish(
    investigation_id: int,
    status: str,
    *,
    report: dict | None = None,
    partial: str = "",
    error: str = "",
    tokens: int = 0,
) -> Investigation | None:
    """Close a running investigation (first close wins) and its session. None if already closed."""
    with transaction.atomic():
        investigation = Investigation.objects.select_for_update().get(pk=investigation_id)
        if not investigation.is_open:
            return None
        if status == Status.STOPPED and investigation.stop_reason:
            error = investigation.stop_reason
        investigation.status = status
        investigation.report = report or {}
        investigation.confidence = (report or {}).get("confidence")
        investigation.partial_findings = partial[:20000]
        investigation.error = error[:4000]
        investigation.tokens = tokens
        investigation.finished_at = timezone.now()
        investigation.save()
        if investigation.session_id:
            session_status = {
                Status.DONE: SessionStatus.COMPLETED,
                Status.INCONCLUSIVE: SessionStatus.COMPLETED,
                Status.STOPPED: SessionStatus.KILLED,
            }.get(status, SessionStatus.FAILED)
            summary = (report or {}).get("summary", "") or partial
            sessions.close_session(investigation.session_id, session_status, result=summary, error=error)
        return investigation


def stop_open(incident: Incident, reason: str) -> list[int]:
    """Queued investigations of the incident end stopped now; running ones are asked to stop and
    end stopped with `reason` when their agent notices (within a second)."""
    Investigation.objects.filter(incident=incident, status=Status.QUEUED).update(
        status=Status.STOPPED, stop_reason=reason, error=reason, finished_at=timezone.now()
    )
    running = list(Investigation.objects.filter(incident=incident, status=Status.RUNNING))
    for investigation in running:
        Investigation.objects.filter(pk=investigation.pk).update(stop_reason=reason)
        if investigation.session_id:
            sessions.request_stop(investigation.session_id)
    return [i.pk for i in running]


def fail_reaped_session(session_id: int, reason: str) -> Investigation | None:
    """The reaper closed this investigation's session: its process died mid-run."""
    investigation = Investigation.objects.filter(session_id=session_id).first()
    if investigation is None:
        return None
    return finish(investigation.pk, Status.FAILED, error=reason)


def fail_unstarted(reason: str) -> int:
    """Running investigations that never got a session (the process died between claim and
    start) are failed; the reaper cannot see them, as they have no session row."""
    stale = timezone.now() - sessions.STALE_AFTER
    return Investigation.objects.filter(
        status=Status.RUNNING, session__isnull=True, started_at__lt=stale
    ).update(status=Status.FAILED, error=reason, finished_at=timezone.now())


def backfill(limit: int = BACKFILL_LIMIT) -> list[int]:
    """Firing incidents that match their organization's policy and were never investigated get
    one, at most `limit` in all, newest first (docs/investigations.md, "Restart")."""
    queued: list[int] = []
    candidates = (
        Incident.objects.filter(status=Incident.Status.FIRING, investigations__isnull=True)
        .order_by("-started_at")
        .values_list("pk", "organization_id")[: limit * 5]
    )
    policies: dict[int, InvestigationPolicy] = {}
    for incident_id, org_id in candidates:
        if len(queued) >= limit:
            break
        policy = policies.setdefault(org_id, policy_for(org_id))
        with transaction.atomic():
            incident = Incident.objects.select_for_update().filter(pk=incident_id).first()
            if incident is None or incident.investigations.exists():
                continue
            if matches(policy, incident) and within_budget(policy):
                queued.append(_enqueue(incident, Trigger.BACKFILL).pk)
    return queued
