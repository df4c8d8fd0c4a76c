"""A verified delivery of an alert source, stored: its events go through the same grouping as
Alertmanager's (ops_app/estate/grouping.py: one open incident per group, replayed after a lost
race), and each event id is recorded in the same transaction, so a replayed or retried delivery
changes nothing (at-least-once senders).

The source's acknowledge and resolve are written here directly, never through the Ongrid-side
transitions (ops_app/estate/incidents.py) that may be mirrored back to the source: a state that
came from the source must not be sent back to it."""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import dataclass, field

from django.db import DatabaseError, transaction
from django.utils import timezone

from ops_app.alert_sources.events import (
    ACKNOWLEDGED,
    FIRING,
    NOTE,
    RESOLVED,
    AlertEvent,
    AlertInstance,
    severity_of,
)
from ops_app.alert_sources.registry import KINDS
from ops_app.estate import grouping
from ops_app.estate.alertmanager import SERVICE_LABELS, device_for_labels
from ops_app.models import Alert, AlertDelivery, AlertSource, Incident

log = logging.getLogger(__name__)
KEEP_DELIVERIES = dt.timedelta(days=7)  # replays come within hours; older ids are forgotten
PRUNE_BATCH = 500
LAST_PAYLOAD_BYTES = 64 * 1024  # what the admin's preview keeps of the last delivery
CUT_STRING = 2000
CUT_LIST = 50

OK = "ok"
DUPLICATE = "duplicate"
IGNORED = "ignored"


@dataclass(frozen=True)
class IntakeResult:
    status: str  # OK (something stored), DUPLICATE (every event seen before), IGNORED (no event)
    incident_ids: list[int] = field(default_factory=list)
    events: int = 0
    duplicates: int = 0


def ingest(source: AlertSource, events: list[AlertEvent], payload: object) -> IntakeResult:
    """Store a verified, parsed delivery of `source` (the caller wraps it in `acting_as`)."""
    result = grouping.replayed(lambda: _ingest_once(source, events, payload))
    if result.status == OK:
        prune(source)
    return result


def _ingest_once(source: AlertSource, events: list[AlertEvent], payload: object) -> IntakeResult:
    incident_source = KINDS[source.kind].incident_source
    with transaction.atomic():
        seen = set(
            AlertDelivery.objects.filter(
                source=source, event_id__in=[e.event_id for e in events]
            ).values_list("event_id", flat=True)
        )
        incident_ids: list[int] = []
        duplicates = 0
        for event in events:
            if event.event_id in seen:
                duplicates += 1
                continue
            seen.add(event.event_id)
            incident = _apply(source, incident_source, event)
            if incident is not None and incident.pk not in incident_ids:
                incident_ids.append(incident.pk)
            # A concurrent twin of this delivery fails here (alert_delivery_once) and is replayed.
            AlertDelivery.objects.create(
                organization_id=source.organization_id,
                source=source,
                event_id=event.event_id,
                incident=incident,
            )
        if events and duplicates == len(events):
            return IntakeResult(DUPLICATE, events=len(events), duplicates=duplicates)
        AlertSource.objects.filter(pk=source.pk).update(
            last_payload=bounded(payload), last_delivery_at=timezone.now()
        )
    return IntakeResult(OK if events else IGNORED, incident_ids, len(events), duplicates)


def _apply(source: AlertSource, incident_source: str, event: AlertEvent) -> Incident | None:
    org_id = source.organization_id
    fingerprint = grouping.group_fingerprint(event.group_key, source)
    incident = grouping.open_incident(org_id, fingerprint, incident_source, source)
    if incident is None:
        last = grouping.last_resolved_incident(org_id, fingerprint, incident_source, source)
        if last is not None and _before_resolve(event, last):
            return last  # a late event (a retry after a failure, out of order): recorded, no effect
        if event.reopens:
            incident = last
    if event.status == NOTE:
        return incident  # a note changes no state (and Ongrid's own notes come back as notes)
    if incident is None:
        if event.status == RESOLVED:
            return None  # the group's page was never seen open: nothing to resolve
        incident = grouping.new_incident(
            org_id,
            source=incident_source,
            group_key=event.group_key,
            fingerprint=fingerprint,
            alert_source=source,
            title=event.title or event.group_key[:300],
            started_at=event.started_at or timezone.now(),
            severity=event.severity,
        )
    _update(incident, event)
    _record_alerts(source, incident, event)
    return incident


def _before_resolve(event: AlertEvent, resolved: Incident) -> bool:
    return bool(event.occurred_at and resolved.resolved_at and event.occurred_at <= resolved.resolved_at)


def _update(incident: Incident, event: AlertEvent) -> None:
    now = event.occurred_at or timezone.now()
    Status = Incident.Status
    if event.status == FIRING and (event.reopens or incident.status == Status.RESOLVED):
        incident.status, incident.acknowledged_at, incident.resolved_at = Status.FIRING, None, None
    elif event.status == ACKNOWLEDGED and incident.status != Status.ACKNOWLEDGED:
        incident.status, incident.acknowledged_at = Status.ACKNOWLEDGED, now
    elif event.status == RESOLVED:
        incident.status, incident.resolved_at = Status.RESOLVED, now
    if event.status != RESOLVED:
        incident.severity = event.severity
    if event.started_at and event.started_at < incident.started_at:
        incident.started_at = event.started_at
    incident.external_id = incident.external_id or event.external_id
    if event.external_url.startswith(("https://", "http://")):  # never a javascript: link on the page
        incident.external_url = incident.external_url or event.external_url
    if not incident.summary and event.summary:
        incident.summary = event.summary[:2000]
    services = {event.labels[k] for k in SERVICE_LABELS if event.labels.get(k)}
    if services - set(incident.affected_services or []):
        incident.affected_services = sorted(set(incident.affected_services or []) | services)
    if incident.device_id is None:
        incident.device = device_for_labels(incident.organization_id, [event.labels])
    incident.save()


def _record_alerts(source: AlertSource, incident: Incident, event: AlertEvent) -> None:
    """The group's alerts kept as the incident's, as Alertmanager's are: the incident page lists
    them, and the investigator, the silence and Grafana's annotations read their labels. Each
    instance the source sent (Grafana), else one alert standing for the whole group."""
    for instance in event.instances:
        _keep_alert(source, incident, instance, event.title)
    if not event.instances:
        _keep_alert(source, incident, _group_alert(incident, event), event.title, whole_group=True)


def _group_alert(incident: Incident, event: AlertEvent) -> AlertInstance:
    annotations = {"summary": incident.title}
    if incident.summary:
        annotations["description"] = incident.summary[:2000]
    return AlertInstance(
        fingerprint=incident.fingerprint,
        status=RESOLVED if incident.status == Incident.Status.RESOLVED else FIRING,
        labels=dict(event.labels),
        annotations=annotations,
        starts_at=incident.started_at,
        ends_at=incident.resolved_at if incident.status == Incident.Status.RESOLVED else None,
        generator_url=incident.external_url,
    )


def _keep_alert(
    source: AlertSource, incident: Incident, instance: AlertInstance, title: str, whole_group: bool = False
) -> None:
    """Create or update one alert row. Its fingerprint is prefixed with the source's id, so two
    sources (or an Alertmanager) sending the same labels never share a row. The alert standing
    for a whole group is found by its incident too: the group's start can move earlier."""
    org_id = source.organization_id
    fingerprint = f"s{source.pk}:{instance.fingerprint}"[:64]
    rows = Alert.objects.select_for_update().filter(organization_id=org_id, fingerprint=fingerprint)
    alert = rows.filter(starts_at=instance.starts_at).first()
    if alert is None and whole_group:
        alert = rows.filter(incident=incident).order_by("-starts_at").first()
    if alert is None:
        alert = Alert(organization_id=org_id, fingerprint=fingerprint)
    alert.incident = incident
    alert.starts_at = instance.starts_at
    alert.name = (instance.labels.get("alertname") or title or "alert")[:200]
    alert.status = instance.status
    alert.severity = severity_of(instance.labels.get("severity"), default=incident.severity)
    alert.labels = instance.labels
    alert.annotations = instance.annotations
    link = instance.generator_url
    alert.generator_url = link[:1000] if link.startswith(("https://", "http://")) else ""
    alert.ends_at = instance.ends_at if instance.status == RESOLVED else None
    alert.save()


def bounded(payload: object, limit: int = LAST_PAYLOAD_BYTES) -> object:
    """The delivery as the preview keeps it: whole when small, else with long strings and lists
    cut (paths into the first items still resolve), else only its first bytes as text."""
    if len(json.dumps(payload, default=str)) <= limit:
        return payload
    cut = _cut(payload)
    text = json.dumps(cut, default=str)
    if len(text) <= limit:
        return cut
    return {"_ongrid_truncated": True, "first_bytes": text[:limit]}


def _cut(node: object) -> object:
    if isinstance(node, str):
        return node[:CUT_STRING]
    if isinstance(node, list):
        return [_cut(item) for item in node[:CUT_LIST]]
    if isinstance(node, dict):
        return {str(key)[:200]: _cut(value) for key, value in list(node.items())[: CUT_LIST * 4]}
    return node


def prune(source: AlertSource) -> int:
    """Forget the source's event ids older than KEEP_DELIVERIES, a bounded batch per delivery
    (never a long delete on the delivery path); a failure only postpones it."""
    cutoff = timezone.now() - KEEP_DELIVERIES
    try:
        old = list(
            AlertDelivery.objects.filter(source=source, received_at__lt=cutoff).values_list("pk", flat=True)[
                :PRUNE_BATCH
            ]
        )
        if not old:
            return 0
        deleted, _ = AlertDelivery.objects.filter(pk__in=old).delete()
        return deleted
    except DatabaseError as exc:
        log.warning("alert source %s: old deliveries not pruned now: %s", source.pk, exc)
        return 0
