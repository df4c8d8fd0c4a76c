"""Incident state changes made by people or agents, each recorded as a ChangeEvent with its actor.

Incidents are not in the automatic change recorder (Alertmanager updates them constantly); a
deliberate acknowledgement or resolution is recorded here instead, so "who closed this?" has an
answer in the change history the reviewer and the inventory tools read.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from ops_app.estate.change_events import Actor
from ops_app.estate.signals import incident_state_changed
from ops_app.models import ChangeEvent, Incident


class IncidentStateError(ValueError):
    """The transition does not apply to the incident's current state."""


def acknowledge(incident_id: int, organization_id: int, actor: Actor, note: str = "") -> Incident:
    """firing → acknowledged."""
    return _transition(incident_id, organization_id, actor, note, Incident.Status.ACKNOWLEDGED)


def resolve(incident_id: int, organization_id: int, actor: Actor, note: str = "") -> Incident:
    """firing or acknowledged → resolved."""
    return _transition(incident_id, organization_id, actor, note, Incident.Status.RESOLVED)


def refusal(incident: Incident, target: str) -> str:
    """Why `incident` cannot move to `target` now ("" when it can), in the active language: the
    incident page checks it before sending the change to the review gate."""
    if incident.status == target:
        message = {
            Incident.Status.ACKNOWLEDGED: _("incident %(id)s is already acknowledged"),
            Incident.Status.RESOLVED: _("incident %(id)s is already resolved"),
        }.get(target, _("incident %(id)s is already %(status)s"))
        return message % {"id": incident.pk, "status": target}
    if incident.status == Incident.Status.RESOLVED:
        message = _("incident %(id)s is resolved; it cannot be acknowledged again")
        if target != Incident.Status.ACKNOWLEDGED:
            message = _("incident %(id)s is resolved; it cannot be %(status)s again")
        return message % {"id": incident.pk, "status": target}
    return ""


def _transition(incident_id: int, organization_id: int, actor: Actor, note: str, target: str) -> Incident:
    with transaction.atomic():
        incident = (
            Incident.objects.for_organization(organization_id)
            .select_for_update()
            .filter(pk=incident_id)
            .first()
        )
        if incident is None:
            raise Incident.DoesNotExist(f"incident {incident_id} not found in this organization")
        problem = refusal(incident, target)
        if problem:
            raise IncidentStateError(problem)
        before = {"status": incident.status}
        now = timezone.now()
        incident.status = target
        fields = ["status", "updated_at"]
        if target == Incident.Status.ACKNOWLEDGED:
            incident.acknowledged_at = now
            fields.append("acknowledged_at")
        else:
            incident.resolved_at = now
            fields.append("resolved_at")
            if incident.acknowledged_at is None:
                incident.acknowledged_at = now
                fields.append("acknowledged_at")
        incident.save(update_fields=fields)
        verb = "acknowledged" if target == Incident.Status.ACKNOWLEDGED else "resolved"
        summary = f"{actor.name} {verb} incident {incident.title}"
        ChangeEvent.objects.create(
            organization_id=organization_id,
            occurred_at=now,
            actor_id=actor.user_id,
            actor_name=actor.name[:150],
            action=ChangeEvent.Action.UPDATE,
            resource_type="incident",
            resource_id=str(incident.pk),
            resource_name=incident.title[:300],
            summary=(summary + (f": {note}" if note else ""))[:500],
            before=before,
            after={"status": target},
        )
        transaction.on_commit(lambda: _announce(organization_id, incident.pk, target))
        return incident


def _announce(organization_id: int, incident_id: int, status: str) -> None:
    """Tell the surfaces (a receiver's failure is theirs: it never undoes the committed change)."""
    incident_state_changed.send_robust(
        sender=Incident, organization_id=organization_id, incident_id=incident_id, status=status
    )


def open_manual(
    organization_id: int,
    *,
    title: str,
    summary: str,
    fingerprint: str,
    severity: str = "warning",
    actor: Actor | None = None,
) -> tuple[Incident, bool]:
    """Open a `manual` incident unless one with the same fingerprint is still open; returns
    (incident, created). Callers that repeat a finding (scheduled inspections) pass a stable
    fingerprint so the same problem never opens a second incident while the first is unresolved.

    Two callers racing with the same fingerprint both find nothing open; the partial unique
    constraint `incident_org_open_manual_uniq` lets one insert win, and the loser, blocked until
    the winner commits, gets the winner's incident instead of a twin."""
    fingerprint = fingerprint[:64]
    with transaction.atomic():
        existing = _open_manual(organization_id, fingerprint)
        if existing is not None:
            return existing, False
        now = timezone.now()
        try:
            with transaction.atomic():  # a savepoint: the outer transaction survives a lost race
                incident = Incident.objects.create(
                    organization_id=organization_id,
                    title=title[:300],
                    summary=summary,
                    severity=severity,
                    status=Incident.Status.FIRING,
                    started_at=now,
                    source=Incident.Source.MANUAL,
                    fingerprint=fingerprint,
                )
        except IntegrityError:
            existing = _open_manual(organization_id, fingerprint)
            if existing is None:
                raise
            return existing, False
        if actor is not None:
            ChangeEvent.objects.create(
                organization_id=organization_id,
                occurred_at=now,
                actor_id=actor.user_id,
                actor_name=actor.name[:150],
                action=ChangeEvent.Action.CREATE,
                resource_type="incident",
                resource_id=str(incident.pk),
                resource_name=incident.title[:300],
                summary=f"{actor.name} opened incident {incident.title}"[:500],
                after={"status": incident.status},
            )
        return incident, True


def _open_manual(organization_id: int, fingerprint: str) -> Incident | None:
    return (
        Incident.objects.for_organization(organization_id)
        .select_for_update()
        .filter(source=Incident.Source.MANUAL, fingerprint=fingerprint)
        .exclude(status=Incident.Status.RESOLVED)
        .first()
    )
