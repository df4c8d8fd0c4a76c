"""Incident pages for members: the list with filters, one incident with its report, alerts,
timeline and the human actions (docs/investigations.md, "Pages"). Thin: access, then render."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agents_app import turns
from audit_app.queries import can_audit
from chat_app import services as chats
from incidents_app import investigations, runner
from incidents_app.access import incident_or_404, may_act, visible_incidents
from incidents_app.api import filter_incidents
from incidents_app.context import incident_context
from incidents_app.fragments import report_context
from ops_app import incidents as incident_states
from ops_app.change_events import Actor
from ops_app.models import ChangeEvent, Incident, Severity

LIST_SIZE = 100


@login_required
def incident_list(request: HttpRequest) -> HttpResponse:
    rows = filter_incidents(visible_incidents(request.user), request.GET).order_by("-started_at", "-pk")[
        :LIST_SIZE
    ]
    rows = list(rows.prefetch_related("investigations"))
    for incident in rows:
        incident.latest = max(incident.investigations.all(), key=lambda i: (i.created_at, i.pk), default=None)
    context = {
        "incidents": rows,
        "statuses": Incident.Status.choices,
        "severities": Severity.choices,
        "chosen": {k: request.GET.get(k, "") for k in ("status", "severity", "q")},
    }
    return render(request, "incidents/list.html", context)


@login_required
def incident_page(request: HttpRequest, incident_id: int) -> HttpResponse:
    incident = incident_or_404(request.user, incident_id)
    return render(request, "incidents/detail.html", _detail_context(request, incident))


def _detail_context(request: HttpRequest, incident: Incident) -> dict:
    context = report_context(incident, can_audit(request.user))
    changes = ChangeEvent.objects.filter(
        organization_id=incident.organization_id, resource_type="incident", resource_id=str(incident.pk)
    ).order_by("occurred_at")
    timeline = sorted(
        [(a.starts_at, f"alert {a.name} {a.status}") for a in incident.alerts.all()]
        + [(c.occurred_at, c.summary) for c in changes]
        + [(s.started_at, f"investigation step: {s.tool} ({s.status})") for s in context["steps"]],
        key=lambda pair: pair[0],
    )
    return {
        **context,
        "alerts": incident.alerts.order_by("starts_at"),
        "timeline": timeline,
        "can_act": may_act(request.user),
        "history": incident.investigations.order_by("-created_at", "-pk")[:10],
    }


def _acting_incident(request: HttpRequest, incident_id: int) -> Incident:
    incident = incident_or_404(request.user, incident_id)
    if not may_act(request.user):
        raise PermissionDenied(_("Auditors cannot change incidents."))
    return incident


@login_required
@require_POST
def incident_investigate(request: HttpRequest, incident_id: int) -> HttpResponse:
    incident = _acting_incident(request, incident_id)
    try:
        investigations.request(incident, request.user)
    except investigations.AlreadyInvestigating as exc:
        messages.info(request, str(exc))
    else:
        runner.start_queued(incident.organization_id)
    return redirect("incident-page", incident.pk)


@login_required
@require_POST
def incident_transition(request: HttpRequest, incident_id: int, action: str) -> HttpResponse:
    """Acknowledge / Resolve pressed by a person: a human action recorded with its actor (the
    review gate is for agents' writes; a person's own click is the decision)."""
    incident = _acting_incident(request, incident_id)
    actor = Actor(request.user.pk, request.user.get_username())
    change = incident_states.acknowledge if action == "acknowledge" else incident_states.resolve
    try:
        change(incident.pk, incident.organization_id, actor, note=request.POST.get("note", "")[:500])
    except incident_states.IncidentStateError as exc:
        messages.error(request, str(exc))
    return redirect("incident-page", incident.pk)


@login_required
@require_POST
def incident_ask(request: HttpRequest, incident_id: int) -> HttpResponse:
    """A new chat whose first message carries the incident and its latest report."""
    incident = incident_or_404(request.user, incident_id)
    chat = chats.start_chat(request.user, title=_("About incident #%(id)s") % {"id": incident.pk})
    turns.start_turn(chat, incident_context(incident, request.POST.get("question", "")))
    return redirect("chat-page", chat.pk)
