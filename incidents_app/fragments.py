"""What the incident page shows of its latest investigation, built without a request: the page
renders it once, and the websocket consumer re-renders it as an HTMX out-of-band fragment each
time the runner publishes progress (docs/investigations.md, "Pages")."""

from __future__ import annotations

from dataclasses import dataclass

from django.template.loader import render_to_string

from audit_app.models import AuditLog
from audit_app.queries import can_audit
from incidents_app.access import may_act
from incidents_app.models import newest_first
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
    """The latest investigation of the incident, its report and the tool calls it made so far."""
    latest = newest_first(incident).first()
    steps = []
    if latest and latest.session_id:
        steps = list(
            AuditLog.objects.filter(session_id=latest.session_id)
            .order_by("started_at", "pk")
            .only("pk", "tool", "status", "started_at", "tool_call_id")
        )
    report = (latest.report if latest else {}) or {}
    return {
        "incident": incident,
        "latest": latest,
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
    return {"device": device, "node": node, "neighbours": neighbours}


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
    changes = ChangeEvent.objects.filter(
        organization_id=incident.organization_id, resource_type="incident", resource_id=str(incident.pk)
    ).order_by("occurred_at")
    timeline = sorted(
        [(a.starts_at, f"alert {a.name} {a.status}") for a in incident.alerts.all()]
        + [(c.occurred_at, c.summary) for c in changes]
        + [(s.started_at, f"investigation step: {s.tool} ({s.status})") for s in steps],
        key=lambda pair: pair[0],
    )
    return {"timeline": timeline, "history": newest_first(incident)[:10]}


def live_fragments(incident_id: int, viewer: Viewer) -> str:
    """What the page's socket redraws on each progress event, as out-of-band swaps: the
    investigation block (`#investigation`), the timeline and the past investigations."""
    incident = Incident.objects.get(pk=incident_id)
    context = {**report_context(incident, viewer), "oob": True}
    context.update(timeline_context(incident, context["steps"]))
    return render_to_string("incidents/_report.html", context) + render_to_string(
        "incidents/_timeline.html", context
    )
