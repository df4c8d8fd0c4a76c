"""What the incident page shows of its latest investigation, built without a request: the page
renders it once, and the websocket consumer re-renders it as an HTMX out-of-band fragment each
time the runner publishes progress (docs/investigations.md, "Pages")."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.timesince import timesince
from django.utils.translation import gettext as _

from audit_app.models import AuditLog
from audit_app.queries import can_audit
from incidents_app import actions, wording, writeback
from incidents_app.access import may_act
from incidents_app.changes import likely_cause, what_changed
from incidents_app.models import current_report, newest_first
from ops_app.estate.correlation import incident_nodes
from ops_app.estate.topology import expand
from ops_app.models import ChangeEvent, Device, Incident, TopologyNode
from web_app.charts import chart_for_tool


@dataclass(frozen=True)
class Viewer:
    """What the person looking may do, which decides the links and buttons drawn."""

    audit: bool = False  # may open the audit pages: evidence links to its tool call there
    can_act: bool = False  # a member, not an auditor: may send the report's proposed changes
    staff: bool = False  # may open the admin: patient zero's device links to its record


def viewer_of(user) -> Viewer:
    return Viewer(audit=can_audit(user), can_act=may_act(user), staff=bool(user.is_staff))


def report_context(incident: Incident, viewer: Viewer) -> dict:
    """The incident's current report (the newest valid one), the latest run when it is still going
    or ended without replacing that report (shown as a notice), and the latest run's tool calls."""
    latest = newest_first(incident).select_related("requested_by").first()
    current = current_report(incident)
    steps = []
    if latest and latest.session_id:
        steps = list(
            AuditLog.objects.filter(session_id=latest.session_id)
            .order_by("started_at", "pk")
            .only("pk", "tool", "status", "started_at", "tool_call_id")
        )
    report = (current.report if current else {}) or {}
    notice = latest if latest and not latest.is_open and latest != current else None
    return {
        "notice_reason": wording.reason(notice.error) if notice else "",
        "confidence_word": wording.confidence(report.get("confidence_word") or ""),
        "incident": incident,
        "latest": latest,
        "current": current,
        "kept": current is not None and current != latest,
        "notice": notice,
        "report": report,
        "evidence": evidence_with_charts(report),
        "patient_zero": patient_zero_context(incident.organization_id, report.get("patient_zero") or {}),
        "steps": steps,
        "audit": viewer.audit,
        "can_act": viewer.can_act,
        "staff": viewer.staff,
    }


def patient_zero_context(organization_id: int, named: dict) -> dict:
    """Patient zero resolved to the organization's records: its device and its topology node with
    the nodes one hop up- and downstream (what it calls and what calls it)."""
    device = node = None
    if named.get("device_id"):
        device = Device.objects.filter(organization_id=organization_id, pk=named["device_id"]).first()
    nodes = TopologyNode.objects.filter(organization_id=organization_id).select_related("device")
    if named.get("topology_node_id"):
        node = nodes.filter(pk=named["topology_node_id"]).first()
    elif device is not None:
        node = nodes.filter(device=device).first()
    neighbours = []
    if node is not None:
        neighbours = [n for n in expand(organization_id, node, "both", 1)["nodes"] if n["relation"] != "self"]
        devices = dict(Device.objects.filter(organization_id=organization_id).values_list("name", "pk"))
        for n in neighbours:
            n["url"] = neighbour_url(n, devices)
    return {"device": device, "node": node, "neighbours": neighbours}


def neighbour_url(node: dict, devices: dict[str, int]) -> str:
    """A topology neighbour's page: its device's page, else the incidents of that service."""
    device = node.get("device")
    pk = device if isinstance(device, int) else devices.get(device)
    if pk:
        return reverse("device-page", args=[pk])
    return service_incidents_url(node["name"])


def evidence_with_charts(report: dict) -> list[dict]:
    """Each evidence item with the chat's SVG chart of its PromQL range result ("" for other
    tools): drawn from the audit row of the call the item names, so the page shows the numbers
    the investigator saw, not a re-run of the query."""
    items = [item for item in report.get("evidence") or [] if isinstance(item, dict)]
    ids = [item["audit_id"] for item in items if item.get("audit_id")]
    results = dict(AuditLog.objects.filter(pk__in=ids).values_list("pk", "result"))
    return [
        {"item": item, "chart": chart_for_tool(item.get("tool", ""), results.get(item.get("audit_id"), ""))}
        for item in items
    ]


def timeline_context(incident: Incident, steps: list) -> dict:
    """The incident's story in time order: its alerts, its change events (acknowledged, resolved,
    by whom) and the latest investigation's tool calls; and its past investigations."""
    changes = list(
        ChangeEvent.objects.filter(
            organization_id=incident.organization_id, resource_type="incident", resource_id=str(incident.pk)
        ).order_by("occurred_at")
    )
    pressed, covered = actions.timeline_entries(incident, changes)
    timeline = sorted(
        [(a.starts_at, wording.alert_line(a)) for a in incident.alerts.all()]
        + [(c.occurred_at, wording.change_line(c)) for c in changes if c.pk not in covered]
        + pressed
        + [(s.started_at, wording.step_line(s.tool, s.status)) for s in steps],
        key=lambda pair: pair[0],
    )
    history = newest_first(incident).select_related("requested_by")[:10]
    return {"timeline": timeline, "history": history, "actions": actions.recent_progress(incident)}


def incident_facts(incident: Incident, now=None) -> dict:
    """What the page's header says beyond the record: for how long it has been open (or how long
    it took), who acknowledged it, the teams that own its services, and what changed around it."""
    now = now or timezone.now()
    end = incident.resolved_at or now
    amount = timesince(incident.started_at, end, depth=2)
    if incident.status == Incident.Status.RESOLVED:
        duration = _("resolved after %(amount)s") % {"amount": amount}
    elif incident.status == Incident.Status.ACKNOWLEDGED:
        duration = _("acknowledged, open for %(amount)s") % {"amount": amount}
    else:
        duration = _("firing for %(amount)s") % {"amount": amount}
    acknowledgement = (
        ChangeEvent.objects.filter(
            organization_id=incident.organization_id,
            resource_type="incident",
            resource_id=str(incident.pk),
            after__status=Incident.Status.ACKNOWLEDGED,
        )
        .order_by("occurred_at")
        .first()
    )
    acknowledged_by = actions.credited(incident, acknowledgement) if acknowledgement else None
    teams = sorted({n.labels.get("team") for n in incident_nodes(incident) if n.labels.get("team")})
    changes = what_changed(incident, now)
    entries = [
        {
            "change": c,
            "when": c.relative(incident.started_at),
            "link": change_link(incident.organization_id, c),
        }
        for c in changes
    ]
    likely = likely_cause(changes)
    return {
        "duration": duration,
        "acknowledged_by": acknowledged_by,
        "teams": teams,
        "changes": entries,
        "likely_change": next((e for e in entries if e["change"] is likely), None),
    }


def service_incidents_url(service: str) -> str:
    return reverse("incident-list") + "?" + urlencode({"service": service})


def change_link(organization_id: int, change) -> str:
    """Where a change's resource can be looked at by a member: its device's page, the device of
    its topology node, or the incidents of that service."""
    if change.resource_type == "device" and change.resource_id.isdigit():
        return reverse("device-page", args=[int(change.resource_id)])
    if change.resource_type == "topology_node" and change.resource_id.isdigit():
        nodes = TopologyNode.objects.filter(organization_id=organization_id)
        node = nodes.filter(pk=int(change.resource_id)).first()
        if node is not None and node.device_id:
            return reverse("device-page", args=[node.device_id])
        if node is not None:
            return service_incidents_url(node.name)
    return ""


def live_fragments(incident_id: int, viewer: Viewer) -> str:
    """What the page's socket redraws on each progress event, as out-of-band swaps: the
    investigation block (`#investigation`), the timeline and the past investigations, and the
    pressed changes with the buttons (`#actions`), since an approved one changes the status, and
    the writes back to the alert source (`#writebacks`)."""
    incident = Incident.objects.get(pk=incident_id)
    context = {**report_context(incident, viewer), "oob": True, "writebacks": writeback.page_lines(incident)}
    context.update(timeline_context(incident, context["steps"]))
    names = ("_report", "_timeline", "_actions", "_writebacks")
    return "".join(render_to_string(f"incidents/{name}.html", context) for name in names)
