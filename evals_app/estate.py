"""The throwaway organization a scenario runs in: created with the scenario's estate, removed after.

Inventory tools (incidents, devices, topology, change events, knowledge) then run for real on
these rows, exactly as they would for a customer. The estate is written the way the demo estate
is (`ops_app/estate/demo.py`): fixture rows with past timestamps, change-event signals suppressed so the
history is the scenario's own and not "the loader created 12 devices a second ago".
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from agents_app.models import UserAgent
from ops_app.estate.change_events import suppressed
from ops_app.knowledge import vault as knowledge
from ops_app.models import (
    Alert,
    ChangeEvent,
    Device,
    Incident,
    Organization,
    TopologyEdge,
    TopologyNode,
)
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_organization, create_user

SLUG_PREFIX = "eval-"


@dataclass(frozen=True)
class Sandbox:
    """A scenario's organization, the user whose chat it is, and the incidents it loaded."""

    organization_id: int
    organization_slug: str
    user_id: int
    incident_ids: tuple[int, ...] = ()


def _ago(item: dict, now: dt.datetime, key: str = "minutes_ago", default: float = 10) -> dt.datetime:
    return now - dt.timedelta(minutes=float(item.get(key, default)))


@transaction.atomic
def create_sandbox(scenario_name: str, estate: dict) -> Sandbox:
    """A fresh organization holding `estate`, and a member to ask the question as."""
    tag = uuid.uuid4().hex[:10]
    organization = create_organization(f"Evaluation {scenario_name} {tag}", f"{SLUG_PREFIX}{tag}")
    user = create_user(f"{SLUG_PREFIX}{tag}", uuid.uuid4().hex, organization, roles.MEMBER)
    incidents = load_estate(organization, estate)
    return Sandbox(organization.pk, organization.slug, user.pk, tuple(incidents))


def load_estate(organization: Organization, estate: dict) -> list[int]:
    """Write the scenario's estate; returns the incident ids in file order."""
    now = timezone.now().replace(microsecond=0)
    with suppressed():
        devices = {
            d["name"]: Device.objects.create(
                organization=organization,
                name=d["name"],
                address=d.get("address", ""),
                kind=d.get("kind", Device.Kind.SERVER),
                labels=d.get("labels") or {},
                transport=Device.Transport.SSH,
                ssh_username="ongrid",
            )
            for d in estate.get("devices") or []
        }
        topology = estate.get("topology") or {}
        nodes = {
            n["name"]: TopologyNode.objects.create(
                organization=organization,
                name=n["name"],
                kind=n.get("kind", TopologyNode.Kind.SERVICE),
                device=devices.get(n.get("device", "")),
                labels=n.get("labels") or {},
                description=n.get("description", ""),
            )
            for n in topology.get("nodes") or []
        }
        for edge in topology.get("edges") or []:
            TopologyEdge.objects.create(
                organization=organization,
                source=nodes[edge["from"]],
                target=nodes[edge["to"]],
                protocol=edge.get("protocol", ""),
            )
        for change in estate.get("changes") or []:
            _change(organization, change, devices, nodes, now)
        incidents = [_incident(organization, i, devices, now) for i in estate.get("incidents") or []]
    for document in estate.get("knowledge") or []:
        knowledge.ingest(
            organization,
            kind="upload",
            source=document.get("source", f"{document['title']}.md"),
            title=document["title"],
            content=document["content"],
        )
    return incidents


def _change(organization, change: dict, devices, nodes, now) -> None:
    name = change["resource_name"]
    kind = change.get("resource_type", "topology_node")
    target = (nodes if kind == "topology_node" else devices).get(name)
    actor = change.get("actor", "deploy-bot")
    ChangeEvent.objects.create(
        organization=organization,
        occurred_at=_ago(change, now),
        actor_name=actor,
        action=change.get("action", ChangeEvent.Action.UPDATE),
        resource_type=kind,
        resource_id=str(target.pk) if target is not None else name,
        resource_name=name,
        summary=change.get("summary") or f"{actor} changed {kind.replace('_', ' ')} {name}",
        before=change.get("before") or {},
        after=change.get("after") or {},
    )


def _incident(organization, spec: dict, devices, now) -> int:
    incident = Incident.objects.create(
        organization=organization,
        title=spec["title"],
        summary=spec.get("summary", ""),
        severity=spec.get("severity", "warning"),
        status=spec.get("status", Incident.Status.FIRING),
        started_at=_ago(spec, now),
        affected_services=spec.get("affected_services") or [],
        device=devices.get(spec.get("device", "")),
        source=spec.get("source", Incident.Source.MANUAL),  # a paged alert: pagerduty, opsgenie, grafana
    )
    for alert in spec.get("alerts") or []:
        labels = alert.get("labels") or {}
        fingerprint = hashlib.sha256(f"{alert['name']}{sorted(labels.items())}".encode()).hexdigest()[:16]
        Alert.objects.create(
            organization=organization,
            incident=incident,
            name=alert["name"],
            fingerprint=fingerprint,
            status=alert.get("status", Alert.Status.FIRING),
            severity=alert.get("severity", "warning"),
            labels={"alertname": alert["name"], **labels},
            annotations=alert.get("annotations") or {},
            starts_at=_ago(alert, now),
            ends_at=_ago(alert, now, "ended_minutes_ago") if "ended_minutes_ago" in alert else None,
        )
    return incident.pk


def remove_sandbox(sandbox: Sandbox) -> None:
    """Delete the organization (its estate, sessions and audit rows cascade) and its user.

    Change-event signals are suppressed: deleting the devices must not record "deleted" events
    for an organization that is going away in the same statement. Its agents (user agents) go
    first: deleting one bumps the organization's registry counter, which the cascade would
    otherwise re-create for an organization that no longer exists.
    """
    with transaction.atomic(), suppressed():
        UserAgent.objects.filter(organization_id=sandbox.organization_id).delete()
        Organization.objects.filter(pk=sandbox.organization_id).delete()
    get_user_model().objects.filter(pk=sandbox.user_id).delete()


def entity_names(estate: dict) -> dict[str, tuple[str, ...]]:
    """The estate's nameable things, each under one canonical name with the other names it goes by.

    A topology node bound to a device is the device (an answer may say "redis" or "redis-01" for
    the same failing box); a node without a device stands alone. A change event becomes an entity
    when the scenario names it (`name`, say "payments-api revision 4"), with `aliases` holding the
    strings that identify it in prose: its version, commit, setting. Devices and nodes take
    `aliases` too. Canonical names come first in each tuple, then the aliases in file order.
    """
    entities: dict[str, list[str]] = {}
    for device in estate.get("devices") or []:
        entities.setdefault(device["name"], [device["name"]]).extend(device.get("aliases") or [])
    for node in (estate.get("topology") or {}).get("nodes") or []:
        owner = node.get("device") if node.get("device") in entities else node["name"]
        names = entities.setdefault(owner, [owner])
        names.extend(n for n in (node["name"], *(node.get("aliases") or [])) if n not in names)
    for change in estate.get("changes") or []:
        if change.get("name"):
            entities.setdefault(change["name"], [change["name"]]).extend(change.get("aliases") or [])
    return {name: tuple(dict.fromkeys(names)) for name, names in entities.items()}
