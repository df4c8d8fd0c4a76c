"""The incidents toolset's writes (docs/review-gate.md): acknowledge and resolve an incident.

They run only once the review gate approved the call; each describes itself for the reviewer
(`describe_<tool>`). The change is recorded with the agent as the actor.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async

from agents_app.toolsets.contract import Describer, ToolContext, ToolError
from ops_app.estate import incidents
from ops_app.estate.change_events import Actor
from ops_app.models import Incident


def _actor(ctx: ToolContext) -> Actor:
    return Actor(ctx.user_id, f"agent {ctx.persona_name}"[:150])


def _describe_incident(verb: str) -> Describer:
    def describe(arguments: dict) -> dict:
        return {
            "action": f"{verb} incident",
            "target": f"incident:{arguments.get('incident_id')}",
            "blast_radius": "single_device",
        }

    return describe


describe_acknowledge_incident = _describe_incident("acknowledge")
describe_resolve_incident = _describe_incident("resolve")


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


async def acknowledge_incident(ctx: ToolContext, incident_id: int, reason: str) -> dict:
    return await _change_incident(ctx, incidents.acknowledge, incident_id, reason)


async def resolve_incident(ctx: ToolContext, incident_id: int, reason: str) -> dict:
    return await _change_incident(ctx, incidents.resolve, incident_id, reason)
