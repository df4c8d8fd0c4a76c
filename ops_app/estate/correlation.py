"""Correlate an incident with what happened around it.

Within ±30 minutes of the incident's start: its own alerts, alerts of other incidents on its
topology neighbourhood, and change events (the neighbourhood's first, then the rest of the
estate's). Everything is one timeline ordered by time, so the earliest deviation — often the
cause — comes first. Changes made shortly before the start on a neighbouring resource are the
usual suspects and are listed separately, closest first.
"""

from __future__ import annotations

import datetime as dt

from django.db.models import Q

from ops_app.core.timeutil import iso
from ops_app.estate.cluster_changes import CONFIGMAP_TYPE, DEPLOYMENT_TYPE
from ops_app.estate.topology import expand, node_summary
from ops_app.models import Alert, ChangeEvent, Incident, TopologyNode

WINDOW = dt.timedelta(minutes=30)
NEIGHBOUR_DEPTH = 2
MAX_ITEMS = 50
# Change events of the clusters' objects, named "<cluster>/<namespace>/<name>".
CLUSTER_TYPES = (DEPLOYMENT_TYPE, CONFIGMAP_TYPE)


def incident_nodes(incident: Incident) -> list[TopologyNode]:
    """Topology nodes the incident touches: its affected services and its device's nodes."""
    condition = Q(name__in=incident.affected_services or [])
    if incident.device_id:
        condition |= Q(device_id=incident.device_id)
    return list(
        TopologyNode.objects.filter(condition, organization_id=incident.organization_id).select_related(
            "device"
        )
    )


def neighbourhood(incident: Incident) -> tuple[list[dict], dict[int, dict]]:
    """The incident's nodes plus their neighbours (both directions, NEIGHBOUR_DEPTH hops)."""
    reached: dict[int, dict] = {}
    for node in incident_nodes(incident):
        for entry in expand(incident.organization_id, node, "both", NEIGHBOUR_DEPTH)["nodes"]:
            known = reached.get(entry["id"])
            if known is None or entry["distance"] < known["distance"]:
                reached[entry["id"]] = entry
    ordered = sorted(reached.values(), key=lambda d: (d["distance"], d["name"]))
    return ordered, reached


def correlate(incident: Incident, window: dt.timedelta = WINDOW) -> dict:
    org_id = incident.organization_id
    start, end = incident.started_at - window, incident.started_at + window
    neighbours, by_id = neighbourhood(incident)
    names = {n["name"] for n in neighbours}
    node_ids = {str(pk) for pk in by_id}
    device_ids = {str(incident.device_id)} if incident.device_id else set()
    nodes = TopologyNode.objects.filter(pk__in=by_id, device_id__isnull=False).values_list(
        "device_id", flat=True
    )
    device_ids |= {str(d) for d in nodes}

    timeline = []
    alerts = (
        Alert.objects.filter(organization_id=org_id, starts_at__gte=start, starts_at__lte=end)
        .filter(Q(incident=incident) | Q(labels__service__in=list(names)) if names else Q(incident=incident))
        .select_related("incident")
        .order_by("starts_at")[:MAX_ITEMS]
    )
    for alert in alerts:
        timeline.append(
            {
                "at": iso(alert.starts_at),
                "kind": "alert",
                "name": alert.name,
                "status": alert.status,
                "severity": alert.severity,
                "service": alert.labels.get("service"),
                "incident_id": alert.incident_id,
                "this_incident": alert.incident_id == incident.pk,
            }
        )
    changes = ChangeEvent.objects.filter(organization_id=org_id, occurred_at__gte=start, occurred_at__lte=end)
    suspects = []
    for change in changes.order_by("occurred_at")[:MAX_ITEMS]:
        related = _touches(change, names, node_ids, device_ids)
        item = change_summary(change)
        item.update(kind="change", related=related)
        timeline.append(item)
        if related and change.occurred_at <= incident.started_at:
            suspects.append(
                {**item, "minutes_before_start": _minutes(incident.started_at - change.occurred_at)}
            )
    timeline.sort(key=lambda item: item["at"])
    suspects.sort(key=lambda item: item["minutes_before_start"])
    return {
        "incident": {
            "id": incident.pk,
            "title": incident.title,
            "status": incident.status,
            "severity": incident.severity,
            "started_at": iso(incident.started_at),
            "affected_services": incident.affected_services,
        },
        "window": {"from": iso(start), "to": iso(end)},
        "earliest_deviation": timeline[0] if timeline else None,
        "timeline": timeline,
        "suspect_changes": suspects,
        "neighbours": [{k: n[k] for k in ("name", "kind", "distance", "relation")} for n in neighbours],
    }


def _touches(change: ChangeEvent, names: set[str], node_ids: set[str], device_ids: set[str]) -> bool:
    if change.resource_type == "topology_node":
        return change.resource_id in node_ids or change.resource_name in names
    if change.resource_type == "device":
        return change.resource_id in device_ids
    if change.resource_type in CLUSTER_TYPES:
        return _names_workload(change.resource_name, names)
    if change.resource_type in ("topology_edge", "alert_rule"):
        return any(name in change.resource_name for name in names) or any(
            name in str(change.after or change.before) for name in names
        )
    return False


def _names_workload(resource_name: str, names: set[str]) -> bool:
    """A cluster object ("<cluster>/<namespace>/<name>") is on a topology node named like it: the
    object itself (`payments-api`), the workload it belongs to (node `payments` for
    `payments-api` or `payments-config`), or its namespace (`payments`)."""
    namespace, _, name = resource_name.rpartition("/")
    namespace = namespace.rpartition("/")[2]
    return any(node == name or name.startswith(f"{node}-") or node == namespace for node in names if node)


def _minutes(delta: dt.timedelta) -> float:
    return round(delta.total_seconds() / 60, 1)


def change_summary(change: ChangeEvent) -> dict:
    item = {
        "id": change.pk,
        "at": iso(change.occurred_at),
        "actor": change.actor_name or "system",
        "action": change.action,
        "resource_type": change.resource_type,
        "resource_id": change.resource_id,
        "resource_name": change.resource_name,
        "summary": change.summary,
    }
    if change.action == "update":
        item["before"], item["after"] = change.before, change.after
    return item


__all__ = ["correlate", "neighbourhood", "incident_nodes", "change_summary", "iso", "node_summary"]
