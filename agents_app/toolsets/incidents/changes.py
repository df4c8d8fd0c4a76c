"""The incidents toolset's writes (docs/review-gate.md): acknowledge and resolve an incident, and
silence it where it came from (docs/alerts.md, "Acknowledge, Resolve and Silence in the source").

They run only once the review gate approved the call; each describes itself for the reviewer
(`describe_<tool>`). The change is recorded with the agent as the actor.
"""

from __future__ import annotations

import re

from asgiref.sync import sync_to_async

from agents_app.toolsets.alertmanager.handlers import create_silence
from agents_app.toolsets.contract import Describer, ToolContext, ToolError
from agents_app.toolsets.incidents.manifest import SILENCE_INCIDENT_MAX_MINUTES
from ops_app.alert_sources.grafana import api as grafana
from ops_app.alert_sources.opsgenie import api as opsgenie
from ops_app.alert_sources.pagerduty import api as pagerduty
from ops_app.alert_sources.rest import SourceAPIError
from ops_app.estate import incidents
from ops_app.estate.change_events import Actor
from ops_app.integrations import datasources
from ops_app.models import AlertSource, Incident


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


# --- silence_incident: quiet the paging where the incident came from --------------------------------


def describe_silence_incident(arguments: dict) -> dict:
    """A silence by labels may quiet more than this incident's alerts, hence `cluster`."""
    minutes = arguments.get("minutes", 60)
    return {
        "action": f"silence incident for {minutes} min in its source",
        "target": f"incident:{arguments.get('incident_id')}",
        "blast_radius": "cluster",
    }


def _incident_for_silence(organization_id: int, incident_id: int) -> tuple[Incident, list[dict]]:
    incident = (
        Incident.objects.for_organization(organization_id)
        .select_related("alert_source")
        .filter(pk=incident_id)
        .first()
    )
    if incident is None:
        raise ToolError(f"incident {incident_id} not found in this organization")
    label_sets = [alert.labels or {} for alert in incident.alerts.all()]
    if not label_sets and incident.group_key:
        label_sets = [group_labels(incident.group_key)]
    return incident, label_sets


def common_labels(label_sets: list[dict]) -> list[dict]:
    """Equality matchers on the labels every alert of the incident carries with the same value:
    what silences this group and nothing narrower (the rule for Alertmanager and Grafana).
    Internal labels (`__name__`, Grafana's `__dashboardUid__`…) are left out."""
    if not label_sets:
        return []
    shared = dict(label_sets[0])
    for labels in label_sets[1:]:
        shared = {name: value for name, value in shared.items() if labels.get(name) == value}
    return [
        {"name": name, "value": str(value)}
        for name, value in sorted(shared.items())
        if not name.startswith("__")
    ]


GROUP_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def group_labels(group_key: str) -> dict:
    """The labels a notification group is grouped by, from its key: the last `{…}` of
    Alertmanager's and Grafana's group keys (`{}/{…}:{alertname="X", team="y"}`). What a
    Grafana incident has when Ongrid keeps no alert rows for it."""
    tail = group_key.rsplit(":{", 1)[-1] if ":{" in group_key else ""
    return {name: value.replace('\\"', '"') for name, value in GROUP_LABEL.findall(tail)}


def _not_silenced(incident: Incident, why: str) -> dict:
    return {"incident_id": incident.pk, "silenced": False, "why": why}


async def silence_incident(ctx: ToolContext, incident_id: int, reason: str, minutes: int = 60) -> dict:
    incident, label_sets = await sync_to_async(_incident_for_silence)(ctx.organization_id, incident_id)
    minutes = max(1, min(int(minutes), SILENCE_INCIDENT_MAX_MINUTES))
    source = incident.alert_source
    if source is None:
        if incident.source != Incident.Source.ALERTMANAGER:
            return _not_silenced(incident, "the incident did not come from a paging tool or Alertmanager")
        return await _silence_in_alertmanager(ctx, incident, label_sets, minutes, reason)
    if not source.enabled or not source.api_key or not source.api_base():
        return _not_silenced(
            incident, f"alert source {source.name} has no API key or API URL to silence with"
        )
    try:
        return await _silence_in_source(ctx, incident, source, label_sets, minutes, reason)
    except SourceAPIError as error:
        raise ToolError(f"{source.get_kind_display()} did not take the silence ({error.reason})") from None


async def _silence_in_source(
    ctx: ToolContext,
    incident: Incident,
    source: AlertSource,
    label_sets: list[dict],
    minutes: int,
    reason: str,
) -> dict:
    seconds = minutes * 60
    done = {
        "incident_id": incident.pk,
        "silenced": True,
        "where": source.get_kind_display(),
        "minutes": minutes,
    }
    if source.kind == AlertSource.Kind.PAGERDUTY and incident.external_id:
        # PagerDuty snoozes acknowledged incidents only: acknowledge there first (a no-op if it is).
        await pagerduty.acknowledge(source, incident.external_id)
        await pagerduty.snooze(source, incident.external_id, seconds)
        return {**done, "how": "acknowledged and snoozed in PagerDuty"}
    if source.kind == AlertSource.Kind.OPSGENIE and incident.external_id:
        await opsgenie.snooze(source, incident.external_id, seconds, note=reason)
        return {**done, "how": "snoozed in Opsgenie"}
    if source.kind == AlertSource.Kind.GRAFANA:
        matchers = common_labels(label_sets)
        if not matchers:
            return _not_silenced(incident, "its alerts share no label to silence them by")
        created_by = f"ongrid/{ctx.persona_name}"
        silence_id = await grafana.silence(source, matchers, minutes, reason, created_by)
        return {**done, "how": "silenced in Grafana Alerting", "silence_id": silence_id, "matchers": matchers}
    return _not_silenced(incident, f"a {source.get_kind_display()} source cannot be silenced from Ongrid")


async def _silence_in_alertmanager(
    ctx: ToolContext, incident: Incident, label_sets: list[dict], minutes: int, reason: str
) -> dict:
    """Through `create_silence`'s own code path, on the organization's default Alertmanager."""
    matchers = common_labels(label_sets)
    if not matchers:
        return _not_silenced(incident, "its alerts share no label to silence them by")
    if await datasources.aendpoint(ctx.organization_id, "alertmanager", None) is None:
        return _not_silenced(incident, "Alertmanager is not configured for this organization")
    created = await create_silence(ctx, matchers, minutes, reason)
    return {
        "incident_id": incident.pk,
        "silenced": True,
        "where": "Alertmanager",
        "minutes": minutes,
        "how": "silenced in Alertmanager",
        "matchers": matchers,
        **created,
    }
