"""The first write tools (docs/review-gate.md): restart a service, acknowledge / resolve an
incident, silence alerts.

None of them runs unless the review gate approved the call (agents_app.review_gate). Each
one also describes itself for the reviewer (`describe_change`): what it changes, where, and how
far a mistake would reach. Every write tool takes a `reason`: the evidence the reviewer judges.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable

import httpx
from asgiref.sync import sync_to_async
from django.conf import settings

from agents_app.hosts.transport import Script
from agents_app.tool_names import MCP_PREFIX
from agents_app.tools.base import ToolContext, ToolError, tool
from agents_app.tools.hosts import device_and_transport, run_with
from ops_app.estate import incidents
from ops_app.estate.change_events import Actor
from ops_app.integrations import datasources
from ops_app.models import DataSource, Incident

RESTART_TIME_LIMIT = 45.0
SILENCE_MAX_MINUTES = 7 * 24 * 60
REASON = {
    "type": "string",
    "minLength": 10,
    "description": "Why this change, with the evidence (metrics, logs, runbook). The reviewer judges it.",
}
# Labels whose equality matcher pins a silence to one machine.
HOST_LABELS = {"instance", "host", "hostname", "device", "node"}
SERVICE_NAME = re.compile(r"^[A-Za-z0-9@_.:-]{1,200}$")

Describer = Callable[[dict], dict]
DESCRIBERS: dict[str, Describer] = {}


def describes(name: str) -> Callable[[Describer], Describer]:
    def register(describer: Describer) -> Describer:
        DESCRIBERS[name] = describer
        return describer

    return register


def describe_change(tool_name: str, arguments: dict) -> dict:
    """{action, target, blast_radius} of a write call; raises ToolError when it can never be allowed.

    An unknown write tool is described conservatively (tenant-wide) rather than refused, so a
    tool added later is still reviewed.
    """
    describer = DESCRIBERS.get(tool_name)
    if describer is None and tool_name.startswith(MCP_PREFIX):
        return _describe_mcp(tool_name, arguments)
    if describer is None:
        return {"action": tool_name, "target": "", "blast_radius": "tenant_wide"}
    return describer(arguments)


def _describe_mcp(tool_name: str, arguments: dict) -> dict:
    """An MCP write: Ongrid cannot know what it touches, so it is judged as tenant-wide."""
    server, _, remote = tool_name.removeprefix(MCP_PREFIX).partition("__")
    shown = json.dumps({k: v for k, v in arguments.items() if k != "reason"}, ensure_ascii=False, default=str)
    return {
        "action": f"MCP tool {remote or tool_name} on server {server}",
        "target": shown if len(shown) <= 300 else shown[:299] + "…",
        "blast_radius": "tenant_wide",
    }


def _actor(ctx: ToolContext) -> Actor:
    return Actor(ctx.user_id, f"agent {ctx.persona_name}"[:150])


# ---- host_restart_service --------------------------------------------------------------------------


def _check_service(service: str) -> str:
    allowed = settings.CONFIG.restartable_services
    if not isinstance(service, str) or not SERVICE_NAME.match(service):
        raise ToolError("service must be a plain systemd unit name, e.g. nginx")
    if service not in allowed:
        listing = ", ".join(allowed) or "none"
        raise ToolError(
            f"{service!r} is not in the restartable services allowlist "
            f"(ONGRID_RESTARTABLE_SERVICES: {listing})."
        )
    return service


@describes("host_restart_service")
def _describe_restart(arguments: dict) -> dict:
    service = _check_service(arguments.get("service", ""))
    device = str(arguments.get("device", ""))
    return {"action": f"systemctl restart {service}", "target": device, "blast_radius": "single_device"}


@tool(
    "host_restart_service",
    "Restart one systemd service on one device (`systemctl restart <service>`). Only services in "
    "the configured allowlist. Reviewed before it runs; returns the command's outcome.",
    {
        "type": "object",
        "properties": {
            "device": {"type": "string", "description": "Device name or id (from query_devices)."},
            "service": {"type": "string", "description": "The systemd unit, e.g. nginx."},
            "reason": REASON,
        },
        "required": ["device", "service", "reason"],
        "additionalProperties": False,
    },
    tool_class="write",
    timeout=60.0,
)
async def host_restart_service(ctx: ToolContext, device: str, service: str, reason: str) -> dict:
    _check_service(service)
    target, transport = await device_and_transport(ctx, device)
    script = Script.command("systemctl", "restart", service)
    result = await run_with(target, transport, script, time_limit=RESTART_TIME_LIMIT, max_output=16 * 1024)
    if not result.ok:
        raise ToolError(result.error_text())
    return {
        "device": target.name,
        "service": service,
        "restarted": True,
        "duration_ms": result.duration_ms,
        "output": (result.stdout + result.stderr).strip()[-2000:],
    }


# ---- incidents -------------------------------------------------------------------------------------

INCIDENT_SCHEMA = {
    "type": "object",
    "properties": {
        "incident_id": {"type": "integer", "minimum": 1, "description": "From query_incidents."},
        "reason": REASON,
    },
    "required": ["incident_id", "reason"],
    "additionalProperties": False,
}


def _describe_incident(verb: str) -> Describer:
    def describe(arguments: dict) -> dict:
        return {
            "action": f"{verb} incident",
            "target": f"incident:{arguments.get('incident_id')}",
            "blast_radius": "single_device",
        }

    return describe


DESCRIBERS["acknowledge_incident"] = _describe_incident("acknowledge")
DESCRIBERS["resolve_incident"] = _describe_incident("resolve")


async def _change_incident(ctx: ToolContext, change, incident_id: int, reason: str) -> dict:
    try:
        incident = await sync_to_async(change)(incident_id, ctx.organization_id, _actor(ctx), reason)
    except Incident.DoesNotExist:
        raise ToolError(f"incident {incident_id} not found in this organization") from None
    except incidents.IncidentStateError as error:
        raise ToolError(str(error)) from None
    return {
        "incident_id": incident.pk,
        "title": incident.title,
        "status": incident.status,
        "acknowledged_at": incident.acknowledged_at.isoformat() if incident.acknowledged_at else None,
        "resolved_at": incident.resolved_at.isoformat() if incident.resolved_at else None,
    }


@tool(
    "acknowledge_incident",
    "Acknowledge a firing incident: someone is on it. Recorded in the change history with the agent "
    "as actor. Reviewed before it runs.",
    INCIDENT_SCHEMA,
    tool_class="write",
)
async def acknowledge_incident(ctx: ToolContext, incident_id: int, reason: str) -> dict:
    return await _change_incident(ctx, incidents.acknowledge, incident_id, reason)


@tool(
    "resolve_incident",
    "Mark an incident resolved once its cause is fixed and its alerts are quiet. Recorded in the "
    "change history with the agent as actor. Reviewed before it runs.",
    INCIDENT_SCHEMA,
    tool_class="write",
)
async def resolve_incident(ctx: ToolContext, incident_id: int, reason: str) -> dict:
    return await _change_incident(ctx, incidents.resolve, incident_id, reason)


# ---- create_silence --------------------------------------------------------------------------------

MATCHER = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "value": {"type": "string"},
        "isRegex": {"type": "boolean", "default": False},
        "isEqual": {"type": "boolean", "default": True},
    },
    "required": ["name", "value"],
    "additionalProperties": False,
}


def _matcher_text(matcher: dict) -> str:
    operator = ("=~" if matcher.get("isRegex") else "=") if matcher.get("isEqual", True) else "!="
    if not matcher.get("isEqual", True) and matcher.get("isRegex"):
        operator = "!~"
    return f'{matcher["name"]}{operator}"{matcher["value"]}"'


@describes("create_silence")
def _describe_silence(arguments: dict) -> dict:
    matchers = arguments.get("matchers") or []
    exact = [m for m in matchers if not m.get("isRegex") and m.get("isEqual", True)]
    if any(m["name"] in HOST_LABELS for m in exact):
        radius = "single_device"
    elif exact and len(exact) == len(matchers) and any(m["name"] != "alertname" for m in exact):
        radius = "cluster"
    else:
        radius = "tenant_wide"
    target = "{" + ", ".join(_matcher_text(m) for m in matchers) + "}"
    minutes = arguments.get("duration_minutes")
    if arguments.get("datasource"):
        target = f"{arguments['datasource']}: {target}"
    return {"action": f"silence alerts for {minutes} min", "target": target, "blast_radius": radius}


@tool(
    "create_silence",
    "Silence matching alerts in Alertmanager for a while (API v2). Matchers select alerts by label; "
    "prefer exact matchers on instance or alertname. Reviewed before it runs; returns the silence id.",
    {
        "type": "object",
        "properties": {
            "matchers": {"type": "array", "items": MATCHER, "minItems": 1},
            "duration_minutes": {"type": "integer", "minimum": 1, "maximum": SILENCE_MAX_MINUTES},
            "reason": REASON,
            "datasource": {
                "type": "string",
                "description": "The Alertmanager data source, by name (default: the default one).",
            },
        },
        "required": ["matchers", "duration_minutes", "reason"],
        "additionalProperties": False,
    },
    tool_class="write",
)
async def create_silence(
    ctx: ToolContext, matchers: list, duration_minutes: int, reason: str, datasource: str | None = None
) -> dict:
    try:
        target = await datasources.aendpoint(ctx.organization_id, DataSource.Kind.ALERTMANAGER, datasource)
    except datasources.UnknownDataSource as exc:
        raise ToolError(str(exc)) from None
    if target is None:
        raise ToolError(
            "Alertmanager is not configured for this organization "
            "(no Alertmanager data source, and ALERTMANAGER_URL is unset)."
        )
    starts = dt.datetime.now(dt.UTC)
    ends = starts + dt.timedelta(minutes=duration_minutes)
    body = {
        "matchers": [
            {
                "name": m["name"],
                "value": m["value"],
                "isRegex": bool(m.get("isRegex", False)),
                "isEqual": bool(m.get("isEqual", True)),
            }
            for m in matchers
        ],
        "startsAt": starts.isoformat(),
        "endsAt": ends.isoformat(),
        "createdBy": f"ongrid/{ctx.persona_name}"[:100],
        "comment": reason[:1000],
    }
    try:
        async with target.client() as client:
            response = await client.post(f"{target.url}/api/v2/silences", json=body)
    except httpx.HTTPError as error:
        raise ToolError(f"Alertmanager is unreachable: {type(error).__name__}: {error}") from None
    if response.status_code >= 400:
        raise ToolError(f"Alertmanager refused the silence ({response.status_code}): {response.text[:500]}")
    silence_id = response.json().get("silenceID", "")
    return {
        "silence_id": silence_id,
        "datasource": target.name,
        "starts_at": body["startsAt"],
        "ends_at": body["endsAt"],
    }
