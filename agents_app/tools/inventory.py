"""Read tools over the managed estate (docs/estate.md): incidents, alerts, rules, devices, change events,
the service graph and incident correlation.

Every query is scoped to `ctx.organization_id`. Results are compact JSON for an LLM: ids, names,
ISO 8601 UTC times, no secrets, and list sizes capped with the total reported.
"""

from __future__ import annotations

import datetime as dt
import json

import httpx
from asgiref.sync import sync_to_async
from django.db.models import Count, Q
from django.db.models.fields.json import KeyTextTransform
from django.db.models.lookups import Exact

from agents_app.tools.base import ToolContext, ToolError, tool
from ops_app.core.timeutil import TimeParseError, iso, parse_time
from ops_app.estate.correlation import change_summary, correlate, incident_nodes
from ops_app.estate.topology import (
    DIRECTIONS,
    MAX_DEPTH,
    TopologyError,
    expand,
    find_nodes,
    node_summary,
    resolve_node,
)
from ops_app.integrations import datasources
from ops_app.integrations.datasources import Endpoint
from ops_app.models import (
    Alert,
    AlertRule,
    ChangeEvent,
    DataSource,
    Device,
    Incident,
    Severity,
    TopologyNode,
)

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
SEVERITIES = [s.value for s in Severity]
INCIDENT_STATUSES = [s.value for s in Incident.Status]
TIME_HELP = "ISO 8601 (2024-05-01T10:00:00Z), epoch seconds, 'now' or relative like 'now-6h' / '-30m'"
LIMIT_PARAM = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most rows to return."}


def _limit(value: int | None) -> int:
    if value is None:
        return DEFAULT_LIMIT
    if not isinstance(value, int) or value < 1:
        raise ToolError("limit must be a positive integer")
    return min(value, MAX_LIMIT)


def _time(value, name: str) -> dt.datetime | None:
    try:
        return parse_time(value)
    except TimeParseError as exc:
        raise ToolError(f"{name}: {exc}") from None


def _choice(value: str | None, allowed: list[str], name: str) -> str | None:
    if value is None or value == "":
        return None
    if value not in allowed:
        raise ToolError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


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


@tool(
    "query_incidents",
    "Search incidents of the estate. Filters combine with AND; all are optional. Returns the newest "
    "first with id, title, severity, status, start/resolve times, services and device.",
    {
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": INCIDENT_STATUSES},
            "severity": {"type": "string", "enum": SEVERITIES},
            "service": {"type": "string", "description": "An affected service name (exact)."},
            "device": {"type": "string", "description": "Device name (exact, case-insensitive)."},
            "since": {"type": "string", "description": f"Started at or after. {TIME_HELP}."},
            "until": {"type": "string", "description": f"Started at or before. {TIME_HELP}."},
            "text": {"type": "string", "description": "Words to find in the title or summary."},
            "limit": LIMIT_PARAM,
        },
        "additionalProperties": False,
    },
)
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
    status = _choice(status, INCIDENT_STATUSES, "status")
    severity = _choice(severity, SEVERITIES, "severity")
    start, end, limit = _time(since, "since"), _time(until, "until"), _limit(limit)

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


@tool(
    "get_active_incidents",
    "The incidents that are not resolved yet (firing or acknowledged), worst severity first.",
    {"type": "object", "properties": {"limit": LIMIT_PARAM}, "additionalProperties": False},
)
async def get_active_incidents(ctx: ToolContext, limit: int | None = None) -> dict:
    limit = _limit(limit)

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


@tool(
    "get_incident_detail",
    "Everything about one incident: its alerts, a timeline, the devices and topology nodes it "
    "touches and the change events recorded around it.",
    {
        "type": "object",
        "properties": {"incident_id": {"type": "integer", "description": "The incident's id."}},
        "required": ["incident_id"],
        "additionalProperties": False,
    },
)
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


@tool(
    "correlate_incident",
    "For one incident: its alerts, alerts on neighbouring services and the change events within "
    "±30 minutes of its start, as one timeline ordered by time (earliest deviation first), plus the "
    "changes on its topology neighbourhood just before it started (likely causes, closest first).",
    {
        "type": "object",
        "properties": {"incident_id": {"type": "integer", "description": "The incident's id."}},
        "required": ["incident_id"],
        "additionalProperties": False,
    },
)
async def correlate_incident(ctx: ToolContext, incident_id: int) -> dict:
    return await sync_to_async(lambda: correlate(_incident(ctx, incident_id)))()


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


@tool(
    "query_alert_rules",
    "Alerting rules: those stored in Ongrid and, when Prometheus is configured, the live rules "
    "Prometheus evaluates (with their state: inactive, pending or firing).",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Part of the rule name (case-insensitive)."},
            "severity": {"type": "string", "enum": SEVERITIES},
            "include_live": {
                "type": "boolean",
                "description": "Also read Prometheus /api/v1/rules (default true).",
            },
            "datasource": {
                "type": "string",
                "description": "The Prometheus data source for live rules (default: the default one).",
            },
        },
        "additionalProperties": False,
    },
)
async def query_alert_rules(
    ctx: ToolContext,
    name: str | None = None,
    severity: str | None = None,
    include_live: bool = True,
    datasource: str | None = None,
) -> dict:
    severity = _choice(severity, SEVERITIES, "severity")

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
            target = await datasources.aendpoint(ctx.organization_id, DataSource.Kind.PROMETHEUS, datasource)
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


def _device_summary(device: Device) -> dict:
    return {
        "id": device.pk,
        "name": device.name,
        "address": device.address,
        "kind": device.kind,
        "labels": device.labels,
        "transport": device.transport,
        "online": device.online,
        "last_seen_at": iso(device.last_seen_at),
    }


@tool(
    "query_devices",
    "Devices (hosts) of the estate with address, kind, labels, transport and online status.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Part of the name or address (case-insensitive)."},
            "kind": {"type": "string", "enum": [k.value for k in Device.Kind]},
            "label": {"type": "string", "description": "A label as key=value, or a key alone."},
            "online": {"type": "boolean"},
            "limit": LIMIT_PARAM,
        },
        "additionalProperties": False,
    },
)
async def query_devices(
    ctx: ToolContext,
    name: str | None = None,
    kind: str | None = None,
    label: str | None = None,
    online: bool | None = None,
    limit: int | None = None,
) -> dict:
    kind = _choice(kind, [k.value for k in Device.Kind], "kind")
    limit = _limit(limit)

    def run() -> dict:
        rows = Device.objects.filter(organization_id=ctx.organization_id)
        if name:
            rows = rows.filter(Q(name__icontains=name) | Q(address__icontains=name))
        if kind:
            rows = rows.filter(kind=kind)
        if online is not None:
            rows = rows.filter(online=online)
        if label:
            key, has_value, value = (part.strip() for part in label.partition("="))
            if has_value:
                rows = rows.filter(Exact(KeyTextTransform(key, "labels"), value))
            else:
                rows = rows.filter(labels__has_key=key)
        total = rows.count()
        return {"total": total, "devices": [_device_summary(d) for d in rows.order_by("name")[:limit]]}

    return await sync_to_async(run)()


@tool(
    "query_change_events",
    "Recorded changes (who created, changed or deleted a device, rule, topology node/edge, agent or "
    "receiver, and what changed), newest first. Default window: the last 24 hours.",
    {
        "type": "object",
        "properties": {
            "since": {"type": "string", "description": f"Default now-24h. {TIME_HELP}."},
            "until": {"type": "string", "description": f"Default now. {TIME_HELP}."},
            "resource_type": {
                "type": "string",
                "enum": [
                    "device",
                    "alert_rule",
                    "topology_node",
                    "topology_edge",
                    "user_agent",
                    "alertmanager_receiver",
                ],
            },
            "resource": {"type": "string", "description": "Part of the resource's name, or its id."},
            "actor": {"type": "string", "description": "User name of whoever made the change."},
            "limit": LIMIT_PARAM,
        },
        "additionalProperties": False,
    },
)
async def query_change_events(
    ctx: ToolContext,
    since: str | None = None,
    until: str | None = None,
    resource_type: str | None = None,
    resource: str | None = None,
    actor: str | None = None,
    limit: int | None = None,
) -> dict:
    end = _time(until, "until") or parse_time("now")
    start = _time(since, "since") or end - dt.timedelta(hours=24)
    limit = _limit(limit)

    def run() -> dict:
        rows = ChangeEvent.objects.filter(
            organization_id=ctx.organization_id, occurred_at__gte=start, occurred_at__lte=end
        )
        if resource_type:
            rows = rows.filter(resource_type=resource_type)
        if resource:
            rows = rows.filter(Q(resource_name__icontains=resource) | Q(resource_id=resource))
        if actor:
            rows = rows.filter(actor_name__iexact=actor)
        total = rows.count()
        return {
            "window": {"from": iso(start), "to": iso(end)},
            "total": total,
            "changes": [change_summary(c) for c in rows.order_by("-occurred_at")[:limit]],
        }

    return await sync_to_async(run)()


# --- topology ----------------------------------------------------------------------------------


@tool(
    "find_topology_node",
    "Find service-graph nodes (services, hosts, databases, queues...) by approximate name or label "
    "value, best match first, with a score between 0 and 1.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "A name, part of it, or a label value."},
            "kind": {"type": "string", "enum": [k.value for k in TopologyNode.Kind]},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)
async def find_topology_node(ctx: ToolContext, query: str, kind: str | None = None, limit: int = 5) -> dict:
    def run() -> dict:
        try:
            matches = find_nodes(ctx.organization_id, query, kind, min(max(int(limit), 1), 20))
        except TopologyError as exc:
            raise ToolError(str(exc)) from None
        return {
            "matches": [{**node_summary(m.node), "score": m.score, "matched": m.matched} for m in matches]
        }

    return await sync_to_async(run)()


@tool(
    "expand_topology",
    "The neighbourhood of a service-graph node. An edge A → B means A calls / depends on B: "
    "'downstream' follows dependencies, 'upstream' finds callers, 'both' does both. Depth 1 to 3.",
    {
        "type": "object",
        "properties": {
            "node": {"type": "string", "description": "Node name (exact, case-insensitive) or id."},
            "direction": {"type": "string", "enum": list(DIRECTIONS), "description": "Default both."},
            "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "Default 1."},
        },
        "required": ["node"],
        "additionalProperties": False,
    },
)
async def expand_topology(ctx: ToolContext, node: str, direction: str = "both", depth: int = 1) -> dict:
    def run() -> dict:
        try:
            start = resolve_node(ctx.organization_id, node)
            graph = expand(ctx.organization_id, start, direction, depth)
        except TopologyError as exc:
            raise ToolError(str(exc)) from None
        return {"node": start.name, "direction": direction, "depth": depth, **graph}

    return await sync_to_async(run)()
