"""What the incident page shows of its latest investigation, built without a request: the page
renders it once, and the websocket consumer re-renders it as an HTMX out-of-band fragment each
time the runner publishes progress (docs/investigations.md, "Pages")."""

from __future__ import annotations

from django.template.loader import render_to_string

from audit_app.models import AuditLog
from ops_app.models import Incident
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


def report_fragment(incident_id: int, audit: bool) -> str:
    """The investigation block as an out-of-band swap (it replaces `#investigation` in place)."""
    incident = Incident.objects.get(pk=incident_id)
    return render_to_string("incidents/_report.html", {**report_context(incident, audit), "oob": True})
