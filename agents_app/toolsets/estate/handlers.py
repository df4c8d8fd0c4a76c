"""The estate toolset's handlers (docs/estate.md): devices, recorded changes, the service graph.

Every query is scoped to `ctx.organization_id`; lists are capped with the total reported.
"""

from __future__ import annotations

import datetime as dt

from asgiref.sync import sync_to_async
from django.db.models import Q
from django.db.models.fields.json import KeyTextTransform
from django.db.models.lookups import Exact

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.records import choice_of, limit_of, time_of
from ops_app.core.timeutil import iso, parse_time
from ops_app.estate.correlation import change_summary
from ops_app.estate.topology import TopologyError, expand, find_nodes, node_summary, resolve_node
from ops_app.models import ChangeEvent, Device


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


async def query_devices(
    ctx: ToolContext,
    name: str | None = None,
    kind: str | None = None,
    label: str | None = None,
    online: bool | None = None,
    limit: int | None = None,
) -> dict:
    kind = choice_of(kind, [k.value for k in Device.Kind], "kind")
    limit = limit_of(limit)

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


async def query_change_events(
    ctx: ToolContext,
    since: str | None = None,
    until: str | None = None,
    resource_type: str | None = None,
    resource: str | None = None,
    actor: str | None = None,
    limit: int | None = None,
) -> dict:
    end = time_of(until, "until") or parse_time("now")
    start = time_of(since, "since") or end - dt.timedelta(hours=24)
    limit = limit_of(limit)

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


async def expand_topology(ctx: ToolContext, node: str, direction: str = "both", depth: int = 1) -> dict:
    def run() -> dict:
        try:
            start = resolve_node(ctx.organization_id, node)
            graph = expand(ctx.organization_id, start, direction, depth)
        except TopologyError as exc:
            raise ToolError(str(exc)) from None
        return {"node": start.name, "direction": direction, "depth": depth, **graph}

    return await sync_to_async(run)()
