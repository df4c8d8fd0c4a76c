"""Alertmanager webhook ingestion (payload version 4).

The whole payload is validated before anything is written, and written in one transaction, so a
bad delivery is refused with its reason and stores nothing. Alertmanager retries and re-sends
groups, so ingestion is idempotent: an alert instance is keyed by (fingerprint, startsAt) and the
incident of a group is found again through its alerts, or through the open incident of the same
group key. The same instance twice in one delivery is merged (the later entry wins).

Concurrent deliveries of one group meet in the database, not in a read-then-write: an organization
has at most one open incident per group key and one alert row per instance (unique constraints),
and a delivery that loses a race (IntegrityError, or a deadlock / serialization failure) is
replayed from the start in a fresh transaction, where it finds the winner's rows.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ops_app.estate import grouping
from ops_app.estate.grouping import RETRIES, TransientIngestError  # noqa: F401 - re-exported
from ops_app.models import SEVERITY_RANK, Alert, AlertmanagerReceiver, Device, Incident, Severity

# Alertmanager writes this for "no end time" (Go's zero time).
ZERO_TIME_PREFIX = "0001-01-01"
SEVERITY_ALIASES = {
    "critical": Severity.CRITICAL,
    "page": Severity.CRITICAL,
    "emergency": Severity.CRITICAL,
    "high": Severity.HIGH,
    "error": Severity.HIGH,
    "major": Severity.HIGH,
    "warning": Severity.WARNING,
    "warn": Severity.WARNING,
    "minor": Severity.WARNING,
    "info": Severity.INFO,
    "none": Severity.INFO,
    "low": Severity.INFO,
}
SERVICE_LABELS = ("service", "app", "job")
DEVICE_LABELS = ("device", "host", "hostname", "nodename", "instance")


class PayloadError(ValueError):
    """The delivery is not a valid Alertmanager v4 webhook payload; the message says why."""


@dataclass(frozen=True)
class ParsedAlert:
    status: str
    labels: dict
    annotations: dict
    starts_at: dt.datetime
    ends_at: dt.datetime | None
    fingerprint: str
    generator_url: str

    @property
    def name(self) -> str:
        return self.labels.get("alertname", "unnamed alert")

    @property
    def severity(self) -> str:
        return SEVERITY_ALIASES.get(str(self.labels.get("severity", "")).lower(), Severity.WARNING)


@dataclass(frozen=True)
class ParsedPayload:
    group_key: str
    status: str
    common_labels: dict
    common_annotations: dict
    alerts: list[ParsedAlert] = field(default_factory=list)


@dataclass(frozen=True)
class IngestResult:
    incident_ids: list[int]
    created_alerts: int
    updated_alerts: int


def parse_payload(data: object) -> ParsedPayload:
    """Validate a decoded webhook body; raises PayloadError naming the first problem."""
    if not isinstance(data, dict):
        raise PayloadError("the body must be a JSON object")
    if str(data.get("version")) != "4":
        raise PayloadError(f'unsupported payload version {data.get("version")!r}; expected "4"')
    group_key = data.get("groupKey")
    if not isinstance(group_key, str) or not group_key:
        raise PayloadError("groupKey is missing")
    alerts = data.get("alerts")
    if not isinstance(alerts, list) or not alerts:
        raise PayloadError("alerts must be a non-empty list")
    merged: dict[tuple[str, dt.datetime], ParsedAlert] = {}
    for i, raw in enumerate(alerts):
        alert = _parse_alert(i, raw)
        merged.pop((alert.fingerprint, alert.starts_at), None)  # the later entry wins, in its place
        merged[(alert.fingerprint, alert.starts_at)] = alert
    parsed = list(merged.values())
    return ParsedPayload(
        group_key=group_key,
        status=str(data.get("status", "")),
        common_labels=_string_map(data.get("commonLabels") or {}, "commonLabels"),
        common_annotations=_string_map(data.get("commonAnnotations") or {}, "commonAnnotations"),
        alerts=parsed,
    )


def _parse_alert(index: int, raw: object) -> ParsedAlert:
    where = f"alerts[{index}]"
    if not isinstance(raw, dict):
        raise PayloadError(f"{where} must be an object")
    status = raw.get("status")
    if status not in ("firing", "resolved"):
        raise PayloadError(f"{where}.status must be 'firing' or 'resolved', not {status!r}")
    labels = _string_map(raw.get("labels"), f"{where}.labels")
    if not labels:
        raise PayloadError(f"{where}.labels must not be empty")
    starts_at = _time(raw.get("startsAt"), f"{where}.startsAt")
    if starts_at is None:
        raise PayloadError(f"{where}.startsAt is required")
    ends_at = _time(raw.get("endsAt"), f"{where}.endsAt")
    fingerprint = raw.get("fingerprint") or _label_fingerprint(labels)
    if not isinstance(fingerprint, str) or len(fingerprint) > 64:
        raise PayloadError(f"{where}.fingerprint must be a string of at most 64 characters")
    generator_url = raw.get("generatorURL") or ""
    if not isinstance(generator_url, str):
        raise PayloadError(f"{where}.generatorURL must be a string")
    return ParsedAlert(
        status=status,
        labels=labels,
        annotations=_string_map(raw.get("annotations") or {}, f"{where}.annotations"),
        starts_at=starts_at,
        ends_at=ends_at,
        fingerprint=fingerprint,
        generator_url=generator_url[:1000],
    )


def _string_map(value: object, where: str) -> dict:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise PayloadError(f"{where} must be an object of strings")
    return dict(value)


def _time(value: object, where: str) -> dt.datetime | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise PayloadError(f"{where} must be an RFC 3339 time string")
    if value.startswith(ZERO_TIME_PREFIX):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise PayloadError(f"{where} is not an RFC 3339 time: {value!r}") from None
    if parsed.tzinfo is None:
        raise PayloadError(f"{where} has no time zone: {value!r}")
    try:
        return parsed.astimezone(dt.UTC)
    except OverflowError:
        raise PayloadError(f"{where} is out of range: {value!r}") from None


def _label_fingerprint(labels: dict) -> str:
    canonical = "\x00".join(f"{k}\x01{labels[k]}" for k in sorted(labels))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def group_fingerprint(group_key: str) -> str:
    return grouping.group_fingerprint(group_key)


def ingest(receiver: AlertmanagerReceiver, payload: ParsedPayload) -> IngestResult:
    """Store one validated delivery for the receiver's organization, replaying it after a lost race."""
    return grouping.replayed(lambda: _ingest_once(receiver, payload))


def _ingest_once(receiver: AlertmanagerReceiver, payload: ParsedPayload) -> IngestResult:
    org_id = receiver.organization_id
    with transaction.atomic():
        # Lock the group's open incident first: deliveries of one group then queue here, in order.
        open_incident = grouping.open_incident(
            org_id, group_fingerprint(payload.group_key), Incident.Source.ALERTMANAGER
        )
        existing = {
            (a.fingerprint, a.starts_at): a
            for a in Alert.objects.select_for_update(of=("self",))
            .select_related("incident")
            .filter(
                organization_id=org_id,
                fingerprint__in={p.fingerprint for p in payload.alerts},
                starts_at__in={p.starts_at for p in payload.alerts},
            )
            .order_by("pk")
        }
        incident = _incident_for(org_id, payload, existing, open_incident)
        created = updated = 0
        fresh = []
        for parsed in payload.alerts:
            alert = existing.get((parsed.fingerprint, parsed.starts_at))
            if alert is None:
                alert = Alert(
                    organization_id=org_id, fingerprint=parsed.fingerprint, starts_at=parsed.starts_at
                )
                _apply(alert, parsed, incident)
                fresh.append(alert)
                created += 1
            else:
                _apply(alert, parsed, incident)
                alert.save()
                updated += 1
        Alert.objects.bulk_create(fresh, batch_size=500)
        _refresh_incident(incident, payload)
        AlertmanagerReceiver.objects.filter(pk=receiver.pk).update(last_delivery_at=timezone.now())
    return IngestResult([incident.pk], created, updated)


def _incident_for(
    org_id: int, payload: ParsedPayload, existing: dict, open_incident: Incident | None
) -> Incident:
    linked = next((a.incident for a in existing.values() if a.incident_id), None)
    if linked is not None and (linked.status != Incident.Status.RESOLVED or open_incident is None):
        return linked  # a resolved one is reopened only while its group has no other open incident
    if open_incident is not None:
        return open_incident
    first = min(payload.alerts, key=lambda a: a.starts_at)
    return grouping.new_incident(
        org_id,
        source=Incident.Source.ALERTMANAGER,
        group_key=payload.group_key,
        fingerprint=group_fingerprint(payload.group_key),
        title=_title(payload),
        started_at=first.starts_at,
        severity=first.severity,
    )


def _apply(alert: Alert, parsed: ParsedAlert, incident: Incident) -> None:
    alert.incident = incident
    alert.name = parsed.name[:200]
    alert.status = parsed.status
    alert.severity = parsed.severity
    alert.labels = parsed.labels
    alert.annotations = parsed.annotations
    alert.generator_url = parsed.generator_url
    # A firing alert's endsAt is Alertmanager's resolve-timeout guess, not an end.
    alert.ends_at = parsed.ends_at if parsed.status == "resolved" else None


def _title(payload: ParsedPayload) -> str:
    annotations = payload.common_annotations or payload.alerts[0].annotations
    title = annotations.get("summary") or annotations.get("title")
    if not title:
        labels = payload.common_labels or payload.alerts[0].labels
        where = next((labels[k] for k in SERVICE_LABELS + DEVICE_LABELS if labels.get(k)), "")
        title = labels.get("alertname", "Alert") + (f" on {where}" if where else "")
    return title[:300]


def _refresh_incident(incident: Incident, payload: ParsedPayload) -> None:
    """Derive the incident's status, severity, services and device from all of its alerts."""
    alerts = list(incident.alerts.all())
    firing = [a for a in alerts if a.status == Alert.Status.FIRING]
    if firing:
        if incident.status == Incident.Status.RESOLVED:
            incident.status = Incident.Status.FIRING
        incident.resolved_at = None
    else:
        incident.status = Incident.Status.RESOLVED
        incident.resolved_at = max((a.ends_at for a in alerts if a.ends_at), default=timezone.now())
    incident.severity = min((a.severity for a in alerts), key=lambda s: SEVERITY_RANK[s])
    incident.started_at = min(a.starts_at for a in alerts)
    services = {a.labels[k] for a in alerts for k in SERVICE_LABELS[:2] if a.labels.get(k)}
    if not services:
        services = {a.labels["job"] for a in alerts if a.labels.get("job")}
    incident.affected_services = sorted(services)
    if not incident.summary:
        incident.summary = (payload.common_annotations or alerts[0].annotations).get("description", "")[:2000]
    if incident.device_id is None:
        incident.device = match_device(incident.organization_id, alerts)
    incident.save()


def match_device(org_id: int, alerts: list[Alert]) -> Device | None:
    """The device named by the alerts' host labels (an `instance` loses its :port)."""
    return device_for_labels(org_id, [alert.labels for alert in alerts])


def device_for_labels(org_id: int, label_sets: Iterable[dict]) -> Device | None:
    """The device a host label of any label set names (shared with the paging sources)."""
    names = set()
    for labels in label_sets:
        for key in DEVICE_LABELS:
            value = labels.get(key)
            if value:
                names.add(value.rsplit(":", 1)[0] if key == "instance" else value)
    if not names:
        return None
    return (
        Device.objects.filter(organization_id=org_id)
        .filter(Q(name__in=names) | Q(address__in=names))
        .order_by("name")
        .first()
    )
