"""Incident state changes made by people or agents, each recorded as a ChangeEvent with its actor.

Incidents are not in the automatic change recorder (Alertmanager updates them constantly); a
deliberate acknowledgement or resolution is recorded here instead, so "who closed this?" has an
answer in the change history the reviewer and the inventory tools read.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from ops_app.change_events import Actor
from ops_app.models import ChangeEvent, Incident


class IncidentStateError(ValueError):
    """The transition does not apply to the incident's current state."""


def acknowledge(incident_id: int, organization_id: int, actor: Actor, note: str = "") -> Incident:
    """firing → acknowledged."""
    return _transition(incident_id, organization_id, actor, note, Incident.Status.ACKNOWLEDGED)


def resolve(incident_id: int, organization_id: int, actor: Actor, note: str = "") -> Incident:
    """firing or acknowledged → resolved."""
    return _transition(incident_id, organization_id, actor, note, Incident.Status.RESOLVED)


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
        if incident.status == target:
            raise IncidentStateError(f"incident {incident_id} is already {target}")
        if incident.status == Incident.Status.RESOLVED:
            raise IncidentStateError(f"incident {incident_id} is resolved; it cannot be {target} again")
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
        return incident
