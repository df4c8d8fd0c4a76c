"""Opsgenie's outgoing Webhook integration: `{"action": "Create", "alert": {alertId, alias,
message, tags, priority, entity, createdAt, updatedAt, …}, "source": …, "integrationId": …}`.
Opsgenie signs nothing, so the source's token comes back in a custom header the admin adds to
the integration (`X-Ongrid-Token`), or as basic auth when the source has a user name."""

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
    digest,
    parse_time,
    string_labels,
    text,
)
from ops_app.models import AlertSource, Severity

TOKEN_HEADER = "X-Ongrid-Token"
STATUS_OF = {
    "Create": FIRING,
    "Acknowledge": ACKNOWLEDGED,
    "UnAcknowledge": FIRING,
    "Close": RESOLVED,
    "Delete": RESOLVED,
    "AddNote": NOTE,
    "Escalate": FIRING,
    "EscalateNext": FIRING,
}
PRIORITY_SEVERITY = {
    "P1": Severity.CRITICAL,
    "P2": Severity.HIGH,
    "P3": Severity.WARNING,
    "P4": Severity.INFO,
    "P5": Severity.INFO,
}


def verify_request(source: AlertSource, headers: Mapping[str, str], raw: bytes) -> None:
    if not source.auth_token:
        raise VerificationFailed("this source has no auth token: set one and add it to the integration")
    verify.check_credentials(source, headers, token_header=TOKEN_HEADER)


def parse(data: object, source: AlertSource) -> list[AlertEvent]:
    if not isinstance(data, dict):
        raise PayloadError("the body must be a JSON object")
    action = data.get("action")
    if not isinstance(action, str) or not action:
        raise PayloadError("action is missing")
    alert = data.get("alert")
    if not isinstance(alert, dict):
        raise PayloadError("alert must be an object")
    alert_id = text(alert.get("alertId"), 200)
    if not alert_id:
        raise PayloadError("alert.alertId is missing")
    status = STATUS_OF.get(action)
    if status is None:
        return []  # tags, priority or responder changes: nothing for the incident
    # Opsgenie sends no event id: the alert, the action and the alert's update time (ns) are one.
    updated = alert.get("updatedAt")
    event_id = f"{alert_id}:{action}:{updated}" if updated not in (None, "") else digest(data)
    labels = string_labels(alert.get("tags"))
    for key in ("entity", "source", "priority", "tinyId", "team"):
        if alert.get(key) not in (None, "") and not isinstance(alert.get(key), dict | list):
            labels[key] = text(alert[key], 200)
    details = alert.get("details")
    if isinstance(details, dict):
        labels.update({k: v for k, v in string_labels(details).items() if k not in labels})
    return [
        AlertEvent(
            status=status,
            group_key=text(alert.get("alias"), 500) or alert_id,
            event_id=event_id[:200],
            title=text(alert.get("message"), 300) or f"Opsgenie alert {alert_id}",
            severity=PRIORITY_SEVERITY.get(text(alert.get("priority"), 5).upper(), Severity.WARNING),
            labels=labels,
            started_at=parse_time(alert.get("createdAt"), "alert.createdAt"),
            external_id=alert_id,
            summary=text(alert.get("note") if status == NOTE else alert.get("description"), 2000),
            occurred_at=parse_time(updated, "alert.updatedAt"),
            reopens=action == "UnAcknowledge",
        )
    ]
