"""What the incident page shows of its latest investigation, built without a request: the page
renders it once, and the websocket consumer re-renders it as an HTMX out-of-band fragment each
time the runner publishes progress (docs/investigations.md, "Pages")."""

from __future__ import annotations

from django.template.loader import render_to_string

from audit_app.models import AuditLog
from ops_app.models import ChangeEvent, Incident
from web_app.charts import chart_for_tool


def report_context(incident: Incident, audit: bool) -> dict:
    """The latest investigation of the incident, its report and the tool calls it made so far.
    `audit`: the viewer may open the audit pages, so evidence links to its tool call there."""
    latest = incident.investigations.order_by("-created_at", "-pk").first()
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
        "steps": steps,
        "audit": audit,
    }


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
    return {"timeline": timeline, "history": incident.investigations.order_by("-created_at", "-pk")[:10]}


def live_fragments(incident_id: int, audit: bool, can_act: bool = False) -> str:
    """What the page's socket redraws on each progress event, as out-of-band swaps: the
    investigation block (`#investigation`), the timeline and the past investigations.
    `can_act`: the viewer may send the report's proposed changes (members, not auditors)."""
    incident = Incident.objects.get(pk=incident_id)
    context = {**report_context(incident, audit), "oob": True, "can_act": can_act}
    context.update(timeline_context(incident, context["steps"]))
    return render_to_string("incidents/_report.html", context) + render_to_string(
        "incidents/_timeline.html", context
    )
