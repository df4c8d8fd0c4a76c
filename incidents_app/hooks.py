"""How incidents reach the investigations without the estate layer knowing about them: a
post-save receiver on Incident (run after the delivery's transaction commits) and the session
store's reaper signal."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_save

from chat_app.models import SessionKind
from chat_app.signals import session_reaped
from incidents_app import investigations, notify, runner
from incidents_app.alerting import buttons as alert_buttons
from incidents_app.alerting import triggers as alert_triggers
from ops_app.estate import change_events
from ops_app.models import Incident

log = logging.getLogger(__name__)


def connect() -> None:
    post_save.connect(incident_saved, sender=Incident, dispatch_uid="ongrid-investigate-incident")
    session_reaped.connect(session_was_reaped, dispatch_uid="ongrid-investigation-reaped")
    alert_triggers.connect()  # alert-time notifications (docs/alerts.md)
    alert_buttons.connect()


def incident_saved(sender, instance: Incident, raw: bool = False, **kwargs) -> None:
    if raw or change_events.is_suppressed():
        return  # fixtures and curated loads (the demo, an evaluation's estate) start nothing
    if not settings.CONFIG.auto_investigate and instance.status != Incident.Status.RESOLVED:
        return
    incident_id = instance.pk
    transaction.on_commit(lambda: _consider(incident_id), robust=True)


def _consider(incident_id: int) -> None:
    investigation = investigations.consider_incident(incident_id)
    if investigation is not None:
        runner.start_queued(investigation.organization_id)


def session_was_reaped(sender, session_id: int, kind: str, reason: str, **kwargs) -> None:
    if kind != SessionKind.INVESTIGATION:
        return
    investigation = investigations.fail_reaped_session(session_id, reason)
    if investigation is not None:
        notify.investigation_ended(investigation)
