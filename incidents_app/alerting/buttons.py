"""An alert card's buttons, pressed by a linked user in a chat app (`alert_card_pressed`):
Acknowledge and Silence 1 h go through the review gate exactly like the incident page's buttons,
Investigate now queues an investigation. The answer is a short line for the presser; the card is
redrawn as the change moves on (docs/alerts.md, "The card's buttons")."""

from __future__ import annotations

import logging

from django.utils.translation import gettext as _

from agents_app.api import SILENCE_INCIDENT, CallRefused
from incidents_app import investigations, runner, transitions
from incidents_app.access import may_act
from incidents_app.alerting import triggers
from ops_app.models import Incident

log = logging.getLogger(__name__)
SILENCE_TOOL = SILENCE_INCIDENT.name
SILENCE_MINUTES = 60
VERBS = ("acknowledge", "investigate", "silence")


def connect() -> None:
    from chat_app.signals import alert_card_pressed

    alert_card_pressed.connect(card_pressed, dispatch_uid="ongrid-alert-card-pressed")


def card_pressed(sender, organization_id: int, incident_id, verb: str, user, via: str, **kwargs) -> str:
    """Do what the button says if the incident is the organization's and the user may act there."""
    incident = _incident_for(user, organization_id, incident_id)
    if incident is None:
        return _("This incident is not one you can see.")
    if not may_act(user):
        return _("Auditors cannot change incidents.")
    if verb not in VERBS:
        return _("This button is not known.")
    where = {"via": via, "user": user.get_username()}
    if verb == "investigate":
        return investigate(incident, user)
    if verb == "acknowledge":
        return acknowledge(incident, user, where)
    return silence(incident, user, where)


def _incident_for(user, organization_id: int, incident_id) -> Incident | None:
    """Within the IM app's organization and among the incidents the user sees: both, or neither."""
    try:
        pk = int(incident_id)
    except (TypeError, ValueError):
        return None
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return Incident.objects.for_user(user).filter(pk=pk, organization_id=organization_id).first()


def investigate(incident: Incident, user) -> str:
    try:
        investigations.request(incident, user)
    except investigations.AlreadyInvestigating:
        return _("Incident #%(id)s is already being investigated.") % {"id": incident.pk}
    runner.start_queued(incident.organization_id)
    triggers.card_changed(incident.pk)
    return _("Investigation of incident #%(id)s started.") % {"id": incident.pk}


def acknowledge(incident: Incident, user, where: dict) -> str:
    problem = transitions.refusal(incident, "acknowledge")
    if problem:
        return problem
    reason = _("Acknowledge pressed in %(via)s by %(user)s") % where
    try:
        transitions.transition(user, incident, "acknowledge", reason)
    except CallRefused as exc:
        return str(exc)
    triggers.card_changed(incident.pk)
    return _("Acknowledge sent to the review gate.")


def silence(incident: Incident, user, where: dict) -> str:
    if incident.status == Incident.Status.RESOLVED:
        return _("Incident #%(id)s is resolved: nothing to silence.") % {"id": incident.pk}
    reason = _("Silence 1 h pressed in %(via)s by %(user)s") % where
    arguments = {"incident_id": incident.pk, "minutes": SILENCE_MINUTES, "reason": reason}
    try:
        transitions.send(user, incident, SILENCE_TOOL, arguments, _("Silence 1 h"), "silence")
    except CallRefused as exc:
        return str(exc)
    triggers.card_changed(incident.pk)
    return _("Silence 1 h sent to the review gate.")
