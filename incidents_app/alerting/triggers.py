"""When notifications are owed: a new or reopened incident (after its delivery commits; never for
curated loads), the investigation's first findings, its end, and a change pressed on a card."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models.signals import post_save, pre_save

from chat_app.signals import investigation_finished
from incidents_app.alerting import drain, outbox
from incidents_app.models import Investigation
from ops_app.estate import change_events
from ops_app.models import Incident

log = logging.getLogger(__name__)
FINDINGS_CHARS = 2000


def connect() -> None:
    pre_save.connect(remember_reopening, sender=Incident, dispatch_uid="ongrid-alert-reopening")
    post_save.connect(incident_saved, sender=Incident, dispatch_uid="ongrid-alert-notify")
    investigation_finished.connect(investigation_ended, dispatch_uid="ongrid-alert-report")


def remember_reopening(sender, instance: Incident, raw: bool = False, **kwargs) -> None:
    """The status before this save: a resolved incident saved as firing again is announced again
    (subject to the group's limit), and any other change of status redraws its cards."""
    before = None
    if not raw and instance.pk and not change_events.is_suppressed():
        before = Incident.objects.filter(pk=instance.pk).values_list("status", flat=True).first()
    instance._ongrid_status_before = before


def incident_saved(sender, instance: Incident, created: bool = False, raw: bool = False, **kwargs) -> None:
    if raw or change_events.is_suppressed():
        return  # fixtures and curated loads (the demo, an evaluation's estate) announce nothing
    before = getattr(instance, "_ongrid_status_before", None)
    incident_id = instance.pk
    if created or (before == Incident.Status.RESOLVED and instance.status == Incident.Status.FIRING):
        transaction.on_commit(lambda: announce(incident_id), robust=True)
    elif before is not None and before != instance.status:
        transaction.on_commit(lambda: card_changed(incident_id), robust=True)


def announce(incident_id: int) -> list[int]:
    due = outbox.announce(incident_id)
    if due:
        drain.kick()
    return due


def findings_found(investigation_id: int, text: str) -> bool:
    """The investigation's first findings: kept once (a conditional UPDATE, so a second call is
    one cheap no-op) and the incident's cards redrawn with them. True the first time."""
    text = text.strip()[:FINDINGS_CHARS]
    if not text:
        return False
    first = Investigation.objects.filter(pk=investigation_id, partial_findings="").update(
        partial_findings=text
    )
    if not first:
        return False
    incident_id = (
        Investigation.objects.filter(pk=investigation_id).values_list("incident_id", flat=True).first()
    )
    card_changed(incident_id)
    return True


def card_changed(incident_id: int | None, *, report: bool = False) -> None:
    if incident_id is not None and outbox.queue_updates(incident_id, report=report):
        drain.kick()


def investigation_ended(sender, investigation: Investigation, **kwargs) -> None:
    """The report (or the run's end) redraws the cards; e-mail and webhooks get one follow-up
    when there is a report to tell."""
    try:
        card_changed(investigation.incident_id, report=bool(investigation.report))
    except Exception:  # noqa: BLE001 - a notification must never fail the investigation's end
        log.exception("investigation %s: could not queue the alert updates", investigation.pk)
