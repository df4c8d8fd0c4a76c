"""The incidents toolset's reads (docs/estate.md): incidents and their alerts, one incident's detail
and correlation, alerting rules (stored, and live from Prometheus).

Every query is scoped to `ctx.organization_id`. Results are compact JSON for an LLM: ids, names,
ISO 8601 UTC times, no secrets, and list sizes capped with the total reported.
"""

from __future__ import annotations

import datetime as dt
import json

import httpx
from asgiref.sync import sync_to_async
from django.db.models import Count, Q

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.incidents.manifest import (
    FIND_SIMILAR_INCIDENTS_MAX,
    INCIDENT_STATUSES,
    QUERY_ALERT_RULES,
    SEVERITIES,
)
from agents_app.toolsets.records import MAX_LIMIT, choice_of, limit_of, time_of
from ops_app.core.egress import EgressRefused
from ops_app.core.timeutil import iso
from ops_app.estate.correlation import change_summary, correlate, incident_nodes
from ops_app.estate.topology import node_summary
from ops_app.integrations import datasources
from ops_app.integrations.datasources import Endpoint
from ops_app.knowledge import past_incidents
from ops_app.knowledge import vault as knowledge
from ops_app.models import Alert, AlertRule, ChangeEvent, Incident


def incident_summary(incident: Incident) -> dict:
    summary = {
        "id": incident.pk,
        "title": incident.title,
        "severity": incident.severity,
        "status": incident.status,
        "started_at": iso(incident.started_at),
        "resolved_at": iso(incident.resolved_at),
        "services": incident.affected_services,
        "device": incident.device.name if incident.device_id else None,
        "source": incident.source,
    }
    alert_count = getattr(incident, "alert_count", None)
    if alert_count is not None:
        summary["alerts"] = alert_count
    return summary


def _incident_rows(queryset, limit: int) -> dict:
    queryset = queryset.select_related("device").annotate(alert_count=Count("alerts"))
    total = queryset.count()
    rows = [incident_summary(i) for i in queryset.order_by("-started_at")[:limit]]
    return {"total": total, "returned": len(rows), "incidents": rows}


# --- incidents ---------------------------------------------------------------------------------


async def query_incidents(
    ctx: ToolContext,
    status: str | None = None,
    severity: str | None = None,
    service: str | None = None,
    device: str | None = None,
    since: str | None = None,
    until: str | None = None,
    text: str | None = None,
    limit: int | None = None,
) -> dict:
    status = choice_of(status, INCIDENT_STATUSES, "status")
    severity = choice_of(severity, SEVERITIES, "severity")
    start, end, limit = time_of(since, "since"), time_of(until, "until"), limit_of(limit)

    def run() -> dict:
        rows = Incident.objects.filter(organization_id=ctx.organization_id)
        if status:
            rows = rows.filter(status=status)
        if severity:
            rows = rows.filter(severity=severity)
        if service:
            # JSON text match: works on SQLite too, where JSON containment does not.
            rows = rows.filter(affected_services__icontains=json.dumps(service))
        if device:
            rows = rows.filter(device__name__iexact=device)
        if start:
            rows = rows.filter(started_at__gte=start)
        if end:
            rows = rows.filter(started_at__lte=end)
        for word in (text or "").split():
            rows = rows.filter(Q(title__icontains=word) | Q(summary__icontains=word))
        return _incident_rows(rows, limit)

    return await sync_to_async(run)()


async def get_active_incidents(ctx: ToolContext, limit: int | None = None) -> dict:
    limit = limit_of(limit)

    def run() -> dict:
        rows = (
            Incident.objects.filter(organization_id=ctx.organization_id)
            .exclude(status=Incident.Status.RESOLVED)
            .select_related("device")
            .annotate(alert_count=Count("alerts"))
        )
        found = sorted(rows, key=lambda i: (SEVERITIES.index(i.severity), -i.started_at.timestamp()))
        return {"active": len(found), "incidents": [incident_summary(i) for i in found[:limit]]}

    return await sync_to_async(run)()


def _alert_summary(alert: Alert) -> dict:
    summary = {
        "name": alert.name,
        "status": alert.status,
        "severity": alert.severity,
        "starts_at": iso(alert.starts_at),
        "ends_at": iso(alert.ends_at),
        "labels": alert.labels,
    }
    text = alert.annotations.get("summary") or alert.annotations.get("description")
    if text:
        summary["summary"] = text[:500]
    return summary


async def get_incident_detail(ctx: ToolContext, incident_id: int) -> dict:
    def run() -> dict:
        incident = _incident(ctx, incident_id)
        alerts = list(incident.alerts.order_by("starts_at")[:50])
        nodes = incident_nodes(incident)
        devices = {n.device.name for n in nodes if n.device_id}
        if incident.device_id:
            devices.add(incident.device.name)
        end = incident.resolved_at or incident.updated_at
        changes = ChangeEvent.objects.filter(
            organization_id=ctx.organization_id,
            occurred_at__gte=incident.started_at - dt.timedelta(hours=2),
            occurred_at__lte=end,
        ).order_by("-occurred_at")[:15]
        return {
            "incident": {**incident_summary(incident), "summary": incident.summary[:1000]},
            "alerts": [_alert_summary(a) for a in alerts],
            "timeline": _timeline(incident, alerts),
            "devices": sorted(devices),
            "topology_nodes": [node_summary(n) for n in nodes],
            "recent_changes": [change_summary(c) for c in changes],
        }

    return await sync_to_async(run)()


def _incident(ctx: ToolContext, incident_id) -> Incident:
    if not isinstance(incident_id, int):
        raise ToolError("incident_id must be an integer")
    incident = (
        Incident.objects.filter(organization_id=ctx.organization_id, pk=incident_id)
        .select_related("device")
        .first()
    )
    if incident is None:
        raise ToolError(f"no incident {incident_id}; use query_incidents to find ids")
    return incident


def _timeline(incident: Incident, alerts: list[Alert]) -> list[dict]:
    events = [{"at": iso(incident.started_at), "event": "incident started"}]
    for alert in alerts:
        events.append({"at": iso(alert.starts_at), "event": f"alert {alert.name} firing"})
        if alert.ends_at:
            events.append({"at": iso(alert.ends_at), "event": f"alert {alert.name} resolved"})
    if incident.acknowledged_at:
        events.append({"at": iso(incident.acknowledged_at), "event": "incident acknowledged"})
    if incident.resolved_at:
        events.append({"at": iso(incident.resolved_at), "event": "incident resolved"})
    return sorted(events, key=lambda e: e["at"])


async def correlate_incident(ctx: ToolContext, incident_id: int) -> dict:
    return await sync_to_async(lambda: correlate(_incident(ctx, incident_id)))()


async def find_similar_incidents(
    ctx: ToolContext, query: str | None = None, incident_id: int | None = None, top_k: int = 5
) -> dict:
    """Past incidents like `query` and/or incident `incident_id` (left out of the results)."""
    if query is not None and not isinstance(query, str):
        raise ToolError("query must be text: symptoms, services or alert names")
    if incident_id is not None and (isinstance(incident_id, bool) or not isinstance(incident_id, int)):
        raise ToolError("incident_id must be an integer; use query_incidents to find ids")
    if not (query or "").strip() and incident_id is None:
        raise ToolError("give a query, an incident_id, or both")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= FIND_SIMILAR_INCIDENTS_MAX:
        raise ToolError(f"top_k must be an integer from 1 to {FIND_SIMILAR_INCIDENTS_MAX}")

    def run() -> dict:
        words = [(query or "").strip()]
        if incident_id is not None:
            words.append(past_incidents.query_for(_incident(ctx, incident_id)))
        question = " ".join(w for w in words if w)
        if not knowledge.query_words(question):
            raise ToolError("the query has no searchable words; describe the symptoms or the system")
        found = past_incidents.similar(ctx.organization_id, question, top_k, exclude_incident_id=incident_id)
        result = {
            "query": question[:500],
            "mode": found.mode,
            "incidents": [item.as_dict() for item in found.incidents],
        }
        if found.note:
            result["note"] = found.note
        if not found.incidents:
            result["hint"] = "No past incident matches: nothing like this was investigated before."
        return result

    return await sync_to_async(run)()


# --- rules, devices, changes ------------------------------------------------------------------


def _rule_summary(rule: AlertRule) -> dict:
    return {
        "name": rule.name,
        "expression": rule.expression,
        "for": rule.for_duration or None,
        "severity": rule.severity,
        "labels": rule.labels,
        "enabled": rule.enabled,
        "source": rule.source,
    }


async def query_alert_rules(
    ctx: ToolContext,
    name: str | None = None,
    severity: str | None = None,
    include_live: bool = True,
    datasource: str | None = None,
) -> dict:
    severity = choice_of(severity, SEVERITIES, "severity")

    def run() -> list[dict]:
        rows = AlertRule.objects.filter(organization_id=ctx.organization_id)
        if name:
            rows = rows.filter(name__icontains=name)
        if severity:
            rows = rows.filter(severity=severity)
        return [_rule_summary(r) for r in rows.order_by("name")[:MAX_LIMIT]]

    result: dict = {"rules": await sync_to_async(run)()}
    if include_live:
        try:
            target = await datasources.aendpoint(
                ctx.organization_id, QUERY_ALERT_RULES.datasource, datasource
            )
        except datasources.UnknownDataSource as exc:
            raise ToolError(str(exc)) from None
        result["live"] = await _live_rules(target, name, severity)
    return result


async def _live_rules(target: Endpoint | None, name: str | None, severity: str | None) -> dict:
    if target is None:
        return {
            "status": "not_configured",
            "message": "No Prometheus data source (PROMETHEUS_URL unset); only stored rules are shown.",
        }
    try:
        async with target.client() as client:
            response = await client.get(target.url + "/api/v1/rules", params={"type": "alert"})
        body = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        return {"status": "error", "message": f"Prometheus rules API unreachable: {exc}"}
    except EgressRefused as refused:
        return {
            "status": "error",
            "message": f"Prometheus at {target.url} is refused by the egress policy: {refused.reason}",
        }
    if body.get("status") != "success":
        return {"status": "error", "message": body.get("error") or f"HTTP {response.status_code}"}
    rules = []
    for group in body["data"].get("groups", []):
        for rule in group.get("rules", []):
            labels = rule.get("labels") or {}
            if name and name.lower() not in rule.get("name", "").lower():
                continue
            if severity and labels.get("severity") != severity:
                continue
            rules.append(
                {
                    "group": group.get("name"),
                    "name": rule.get("name"),
                    "expression": rule.get("query"),
                    "for_seconds": rule.get("duration"),
                    "labels": labels,
                    "state": rule.get("state"),
                    "health": rule.get("health"),
                    "active_alerts": len(rule.get("alerts") or []),
                }
            )
    return {"status": "ok", "rules": rules[:MAX_LIMIT]}
