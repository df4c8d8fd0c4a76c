"""A person's change to an incident (Acknowledge, Resolve, Silence, a report's proposed write),
pressed on the incident page or on an alert card: the agents' own tool sent through the review
gate in a hidden session (no chat opens), recorded as the person's action so the page and the
cards follow it through the gate (docs/incidents.md, "Actions")."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.utils.translation import gettext as _

from agents_app.api import ACKNOWLEDGE_INCIDENT, RESOLVE_INCIDENT, request_call
from incidents_app import actions, runner
from incidents_app.alerting import follow
from incidents_app.models import IncidentAction, NotificationChannel, NotificationDelivery
from ops_app.estate import incidents as incident_states
from ops_app.models import Incident

TOOLS = {"acknowledge": ACKNOWLEDGE_INCIDENT.name, "resolve": RESOLVE_INCIDENT.name}
TARGETS = {"acknowledge": Incident.Status.ACKNOWLEDGED, "resolve": Incident.Status.RESOLVED}


def refusal(incident: Incident, verb: str) -> str:
    """Why Acknowledge / Resolve makes no sense now ("already acknowledged"), or ""."""
    return incident_states.refusal(incident, TARGETS[verb]) or ""


def send(user, incident: Incident, tool: str, arguments, what: str, verb: str) -> IncidentAction:
    """Send the call through the gate and record it; raises `CallRefused` when the gate will not
    even take it (an unknown tool, no persona allowed to run it)."""
    description = _("%(what)s (from incident #%(id)s)") % {"what": what, "id": incident.pk}
    title = _("Change for incident #%(id)s") % {"id": incident.pk}
    session = request_call(user, tool, arguments, description, title, hidden=True)
    action = actions.record(incident, user, verb, what, session)
    async_to_sync(runner.publish)(incident.pk, {"kind": "action"})  # open pages start following it
    if has_cards(incident):
        follow.start(incident.pk)  # and so do its alert cards
    return action


def has_cards(incident: Incident) -> bool:
    return NotificationDelivery.objects.filter(
        incident=incident, kind=NotificationDelivery.Kind.ALERT, channel__kind=NotificationChannel.Kind.IM
    ).exists()


def transition(user, incident: Incident, verb: str, reason: str) -> IncidentAction:
    """Acknowledge or Resolve with `reason` (which says who pressed it where)."""
    arguments = {"incident_id": incident.pk, "reason": reason}
    return send(user, incident, TOOLS[verb], arguments, reason, verb)
