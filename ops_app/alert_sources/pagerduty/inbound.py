"""PagerDuty's v3 webhook subscriptions: each delivery is one event, `{"event": {id, event_type,
resource_type, occurred_at, data}}`, signed in `X-PagerDuty-Signature: v1=<hex>` with the
HMAC-SHA256 of the raw body under the subscription's secret. During a secret rotation PagerDuty
sends several comma-separated signatures; one match is enough."""

from __future__ import annotations

from collections.abc import Mapping

from ops_app.alert_sources import verify
from ops_app.alert_sources.events import (
    ACKNOWLEDGED,
    FIRING,
    NOTE,
    RESOLVED,
    AlertEvent,
    PayloadError,
    VerificationFailed,
    parse_time,
    severity_of,
    text,
)
from ops_app.models import AlertSource, Severity

SIGNATURE_HEADER = "X-PagerDuty-Signature"
STATUS_OF = {
    "incident.triggered": FIRING,
    "incident.escalated": FIRING,
    "incident.reopened": FIRING,
    "incident.acknowledged": ACKNOWLEDGED,
    "incident.unacknowledged": FIRING,
    "incident.resolved": RESOLVED,
    "incident.annotated": NOTE,
}
PRIORITY_SEVERITY = {"p1": Severity.CRITICAL, "p2": Severity.HIGH, "p3": Severity.WARNING}
URGENCY_SEVERITY = {"high": Severity.HIGH, "low": Severity.WARNING}


def verify_request(source: AlertSource, headers: Mapping[str, str], raw: bytes) -> None:
    if not source.signing_secret:
        raise VerificationFailed("this source has no signing secret yet: paste the subscription's secret")
    header = headers.get(SIGNATURE_HEADER, "")
    candidates = [part.strip()[3:] for part in header.split(",") if part.strip().startswith("v1=")]
    if not candidates:
        raise VerificationFailed(f"no {SIGNATURE_HEADER} header with a v1= signature")
    if not verify.signature_matches(source.signing_secret, raw, candidates):
        raise VerificationFailed(f"no signature in {SIGNATURE_HEADER} matches the body")


def parse(data: object, source: AlertSource) -> list[AlertEvent]:
    """The delivery's event, or none for event types Ongrid does not follow (pagey.ping, service.*)."""
    if not isinstance(data, dict) or not isinstance(data.get("event"), dict):
        raise PayloadError('the body must be a JSON object with an "event" object (webhook v3)')
    event = data["event"]
    event_type = event.get("event_type")
    if not isinstance(event_type, str) or not event_type:
        raise PayloadError("event.event_type is missing")
    status = STATUS_OF.get(event_type)
    if status is None:
        return []
    event_id = text(event.get("id"), 200)
    if not event_id:
        raise PayloadError("event.id is missing")
    body = event.get("data")
    if not isinstance(body, dict):
        raise PayloadError("event.data must be an object")
    # An annotation's data is the note; the incident is the note's `incident` reference.
    incident = body.get("incident") if body.get("type") == "incident_note" else body
    if not isinstance(incident, dict) or not text(incident.get("id"), 200):
        raise PayloadError("event.data names no incident id")
    incident_id = text(incident["id"], 200)
    return [
        AlertEvent(
            status=status,
            group_key=incident_id,
            event_id=event_id,
            title=text(incident.get("title") or incident.get("summary"), 300) or f"PagerDuty {incident_id}",
            severity=_severity(incident),
            labels=_labels(incident),
            started_at=parse_time(incident.get("created_at") or event.get("occurred_at"), "created_at"),
            external_id=incident_id,
            external_url=text(incident.get("html_url"), 1000),
            summary=text(body.get("content"), 2000) if status == NOTE else "",
            occurred_at=parse_time(event.get("occurred_at"), "event.occurred_at"),
            reopens=event_type in ("incident.reopened", "incident.unacknowledged"),
        )
    ]


def _severity(incident: dict) -> str:
    priority = incident.get("priority")
    name = text(priority.get("summary") if isinstance(priority, dict) else "", 20).lower()
    if name in PRIORITY_SEVERITY:
        return PRIORITY_SEVERITY[name]
    if name.startswith("p"):
        return Severity.INFO
    return URGENCY_SEVERITY.get(text(incident.get("urgency"), 10), severity_of(name))


def _labels(incident: dict) -> dict[str, str]:
    labels = {}
    service = incident.get("service")
    if isinstance(service, dict) and service.get("summary"):
        labels["service"] = text(service["summary"], 200)
    priority = incident.get("priority")
    if isinstance(priority, dict) and priority.get("summary"):
        labels["priority"] = text(priority["summary"], 50)
    for key in ("urgency", "incident_key", "number"):
        if incident.get(key) not in (None, ""):
            labels[key] = text(incident[key], 200)
    return labels
