"""Incidents seen before (docs/knowledge.md, "Incidents seen before"): the receivers that keep
each incident's past-incident document, and what the incident page and the investigator's brief
show of the similar ones.

Two moments write the document, both after the sender's transaction commits and both with local
database work only (no network, no lock held while anything slow runs):
- `investigation_finished` with a report: the newest report replaces the older one;
- the incident saved as resolved (a Resolve done in Ongrid, or the paging source / Alertmanager
  resolving it): "What fixed it" is added — the gate's executed changes pressed on the incident
  page, who resolved it with their note, or "Resolved in <source>".
A failure is logged, never raised: the investigation or the resolution is over whatever happens
to its memory. Re-running a receiver writes nothing new (the vault compares content hashes).
"""

from __future__ import annotations

import logging
from functools import partial

from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.urls import reverse

from agents_app.models import MutatingProposal
from chat_app.signals import investigation_finished
from incidents_app.models import IncidentAction, Investigation
from ops_app.knowledge import past_incidents
from ops_app.models import ChangeEvent, Incident

log = logging.getLogger(__name__)
SHOWN_ON_PAGE = 5
IN_BRIEF = 3
# Incidents whose resolution comes from elsewhere: the document says where.
OWN_SOURCES = (Incident.Source.MANUAL, Incident.Source.DEMO)


@receiver(investigation_finished, dispatch_uid="ongrid-seen-before-report")
def report_remembered(sender, investigation: Investigation, **kwargs) -> None:
    if investigation.status == Investigation.Status.DONE and investigation.report:
        transaction.on_commit(partial(remember, investigation.incident_id), robust=True)


@receiver(post_save, sender=Incident, dispatch_uid="ongrid-seen-before-resolution")
def resolution_remembered(sender, instance: Incident, created: bool, **kwargs) -> None:
    """Cheap on every incident save: nothing unless it is resolved (then a query or two)."""
    if not created and instance.status == Incident.Status.RESOLVED and not kwargs.get("raw"):
        transaction.on_commit(partial(remember, instance.pk), robust=True)


def remember(incident_id: int) -> dict | None:
    """Write the incident's past-incident document from its newest report, if it has one."""
    try:
        investigation = (
            Investigation.objects.filter(incident_id=incident_id, status=Investigation.Status.DONE)
            .exclude(report={})
            .select_related("incident__device")
            .order_by("-finished_at", "-pk")
            .first()
        )
        if investigation is None:
            return None
        incident = investigation.incident
        url = reverse("incident-page", args=[incident.pk])
        return past_incidents.record(incident, investigation.report, what_fixed_it(incident), url)
    except Exception:  # noqa: BLE001 - a receiver must not fail the sender
        log.exception("incident %s: could not remember it as a past incident", incident_id)
        return None


def what_fixed_it(incident: Incident) -> list[str]:
    """Plain sentences (stored knowledge, so fixed English like the headings): the changes pressed
    on the incident page that the gate let through and that ran, then how it was resolved."""
    changes = IncidentAction.objects.filter(incident=incident, verb="change").order_by("created_at", "pk")
    executed = set(
        MutatingProposal.objects.filter(
            root_session_id__in=changes.values("session_id"), executed_at__isnull=False
        ).values_list("root_session_id", flat=True)
    )
    lines = [f"Executed change: {action.label}" for action in changes if action.session_id in executed]
    if incident.status == Incident.Status.RESOLVED:
        lines.append(_resolution(incident))
    return lines


def _resolution(incident: Incident) -> str:
    event = (
        ChangeEvent.objects.filter(
            organization_id=incident.organization_id, resource_type="incident", resource_id=str(incident.pk)
        )
        .order_by("-occurred_at", "-pk")
        .first()
    )
    if event is None or (event.after or {}).get("status") != Incident.Status.RESOLVED:
        if incident.source in OWN_SOURCES:
            return "Resolved"
        return f"Resolved in {incident.get_source_display()}"
    pressed = (
        IncidentAction.objects.filter(incident=incident, verb="resolve")
        .select_related("requested_by")
        .order_by("-created_at", "-pk")
        .first()
    )
    who = pressed.requested_by.get_username() if pressed else event.actor_name
    prefix = f"{event.actor_name} resolved incident {incident.title}"[:500]
    note = event.summary[len(prefix) + 2 :] if event.summary.startswith(prefix + ": ") else ""
    return f"Resolved by {who}" + (f": {note}" if note else "")


def for_page(incident: Incident) -> list[past_incidents.SimilarIncident]:
    """The incident page's "Similar past incidents": one search, the incident itself left out."""
    return similar_to(incident, SHOWN_ON_PAGE).incidents


def similar_to(incident: Incident, top_k: int, extra: str = "") -> past_incidents.Similar:
    query = " ".join(part for part in (extra, past_incidents.query_for(incident)) if part)
    return past_incidents.similar(incident.organization_id, query, top_k, exclude_incident_id=incident.pk)


def for_brief(incident: Incident) -> list[dict]:
    """Up to three incidents seen before, as the investigator's brief lists them."""
    return [
        {"title": found.title, "root_cause": found.root_cause, "link": found.url}
        for found in similar_to(incident, IN_BRIEF).incidents
    ]
