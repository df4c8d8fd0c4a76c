"""Incident pages for members: the list with filters, one incident with its report, alerts,
timeline and the human actions (docs/investigations.md, "Pages"). Thin: access, then render."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from agents_app.api import CallRefused, ProposalClosed, may_sign, sign, start_turn
from chat_app import services as chats
from incidents_app import actions, investigations, runner, seen_before, transitions, writeback
from incidents_app.access import incident_or_404, may_act, visible_incidents
from incidents_app.api import filter_incidents
from incidents_app.context import incident_context
from incidents_app.fragments import incident_facts, report_context, timeline_context, viewer_of
from incidents_app.models import IncidentAction, current_report
from ops_app.models import Device, Incident, Severity, TopologyNode

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
        "chosen": {k: request.GET.get(k, "") for k in ("status", "severity", "service", "q")},
    }
    return render(request, "incidents/list.html", context)


@login_required
def incident_page(request: HttpRequest, incident_id: int) -> HttpResponse:
    incident = incident_or_404(request.user, incident_id)
    return render(request, "incidents/detail.html", _detail_context(request, incident))


def _detail_context(request: HttpRequest, incident: Incident) -> dict:
    context = report_context(incident, viewer_of(request.user))
    return {
        **context,
        **timeline_context(incident, context["steps"]),
        **incident_facts(incident),
        "alerts": incident.alerts.order_by("starts_at"),
        "writebacks": writeback.page_lines(incident),
        "similar_incidents": seen_before.for_page(incident),
    }


@login_required
def device_page(request: HttpRequest, device_id: int) -> HttpResponse:
    """A device as members see it, read-only: what it is, its topology nodes and its incidents
    (the admin's edit form is for those who administer the estate)."""
    device = Device.objects.for_user(request.user).filter(pk=device_id).first()
    if device is None:
        raise Http404(_("No such device."))
    context = {
        "device": device,
        "nodes": TopologyNode.objects.filter(organization_id=device.organization_id, device=device),
        "incidents": visible_incidents(request.user).filter(device=device).order_by("-started_at")[:20],
    }
    return render(request, "incidents/device.html", context)


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
        return _go(request, reverse("incident-page", args=[incident.pk]))
    runner.start_queued(incident.organization_id)
    if request.htmx:  # the runner's progress redraws the page over its socket
        return HttpResponse(status=204)
    return redirect("incident-page", incident.pk)


@login_required
@require_POST
def incident_transition(request: HttpRequest, incident_id: int, action: str) -> HttpResponse:
    """Acknowledge / Resolve: the agents' own write tool, sent through the review gate with one
    click; the person stays on the incident page, which shows the review and the outcome."""
    incident = _acting_incident(request, incident_id)
    note = request.POST.get("note", "").strip()[:400]
    verb = _("Acknowledge") if action == "acknowledge" else _("Resolve")
    pressed = _("%(verb)s pressed on the incident page by %(user)s") % {
        "verb": verb,
        "user": request.user.get_username(),
    }
    reason = f"{note} ({pressed})" if note else pressed
    problem = transitions.refusal(incident, action)
    if problem:  # nothing for the reviewer to judge
        messages.error(request, problem)
        return redirect("incident-page", incident.pk)
    return _send(
        request,
        incident,
        transitions.TOOLS[action],
        {"incident_id": incident.pk, "reason": reason},
        reason,
        action,
    )


@login_required
@require_POST
def incident_send_action(request: HttpRequest, incident_id: int, index: int) -> HttpResponse:
    """A report's proposed write, sent as the investigator wrote it through the review gate."""
    incident = _acting_incident(request, incident_id)
    shown = current_report(incident)  # the one the page shows
    actions = ((shown.report or {}).get("next_actions") or []) if shown is not None else []
    if index >= len(actions) or not isinstance(actions[index].get("proposed_write"), dict):
        raise Http404(_("This report has no such proposed change."))
    action = actions[index]
    proposed = action["proposed_write"]
    tool = str(proposed.get("tool", ""))
    return _send(request, incident, tool, proposed.get("arguments"), str(action["action"]), "change")


def _send(
    request: HttpRequest, incident: Incident, tool: str, arguments, what: str, verb: str
) -> HttpResponse:
    """Send the call in a hidden session (no chat opens) and come back to the incident page,
    whose actions block follows it through the gate."""
    try:
        transitions.send(request.user, incident, tool, arguments, what, verb)
    except CallRefused as exc:
        messages.error(request, str(exc))
        return _go(request, reverse("incident-page", args=[incident.pk]))
    if request.htmx:  # the page's socket draws the pending change in place: nothing to reload
        return HttpResponse(status=204)
    return redirect("incident-page", incident.pk)


@login_required
@require_POST
def incident_sign_action(request: HttpRequest, incident_id: int, action_id: int) -> HttpResponse:
    """Dual sign on the page: the person (or an org admin) approves or rejects a pressed change
    that the reviewer approved and that waits for them."""
    incident = _acting_incident(request, incident_id)
    pressed = IncidentAction.objects.filter(incident=incident, pk=action_id).first()
    proposal = actions.awaiting_proposal(pressed) if pressed is not None else None
    if proposal is None:
        raise Http404(_("This change is not waiting for a signature."))
    if not may_sign(request.user, proposal):
        raise PermissionDenied(_("Only the person who pressed it or an org admin may sign this change."))
    try:
        sign(proposal, request.user, request.POST.get("approve") == "1")
    except ProposalClosed:
        pass  # decided meanwhile (timeout, the other signer): the page shows how
    async_to_sync(runner.publish)(incident.pk, {"kind": "action"})
    if request.htmx:
        return HttpResponse(status=204)
    return redirect("incident-page", incident.pk)


def _go(request: HttpRequest, url: str) -> HttpResponse:
    """A plain redirect, or htmx's client redirect for the buttons of the live report block."""
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@login_required
@require_POST
def incident_ask(request: HttpRequest, incident_id: int) -> HttpResponse:
    """A new chat whose first message carries the incident and its latest report."""
    incident = incident_or_404(request.user, incident_id)
    chat = chats.start_chat(request.user, title=_("About incident #%(id)s") % {"id": incident.pk})
    start_turn(chat, incident_context(incident, request.POST.get("question", "")))
    return _go(request, reverse("chat-page", args=[chat.pk]))
