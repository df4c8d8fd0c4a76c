"""Local stand-ins of the paging tools' webhook senders: each builds a body in its vendor's
documented wire format, serialises it once, signs or authenticates those exact bytes as the vendor
does, and POSTs them to an alert source's receiver, through Django's test client or to a live
server's base URL.

    send_pagerduty(client, source, pagerduty_event("incident.triggered"), secret="s3cret")
    send_opsgenie(live_server.url, source, opsgenie_event("Create"), token="t0ken")
    send_grafana(client, source, grafana_payload(), token="t", hmac_secret="h", timestamp=True)
    send_generic(client, source, {"alert": {...}}, token="t", signing_secret="s")

Each returns a `Delivery` (status code, JSON answer, the raw bytes sent)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass

import httpx

from ops_app.models import AlertSource

T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Delivery:
    status_code: int
    body: dict
    raw: bytes
    headers: dict


def _hex(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def encode(body: dict | bytes | str) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body).encode()


def post(target, source: AlertSource, raw: bytes, headers: dict, path: str | None = None) -> Delivery:
    """POST `raw` as is to the source's receiver: `target` is Django's test client or a base URL."""
    path = path or source.path
    headers = {"Content-Type": "application/json", **headers}
    if isinstance(target, str):
        response = httpx.post(target.rstrip("/") + path, content=raw, headers=headers, timeout=30)
        status, text = response.status_code, response.text
    else:
        extra = {k: v for k, v in headers.items() if k != "Content-Type"}
        response = target.generic("POST", path, data=raw, content_type=headers["Content-Type"], headers=extra)
        status, text = response.status_code, response.content.decode()
    try:
        answer = json.loads(text)
    except ValueError:
        answer = {"_not_json": text[:200]}
    return Delivery(status, answer, raw, headers)


# --- PagerDuty: webhook v3 ------------------------------------------------------------------------


def pagerduty_event(
    event_type: str = "incident.triggered",
    incident_id: str = "Q1ABC2DEF",
    *,
    event_id: str | None = None,
    title: str = "Checkout 5xx above 5%",
    urgency: str = "high",
    priority: str | None = "P1",
    service: str = "checkout",
    created_at: dt.datetime = T0,
    note: str = "",
) -> dict:
    """A v3 webhook body: {"event": {id, event_type, resource_type, occurred_at, agent, data}}."""
    incident = {
        "id": incident_id,
        "type": "incident",
        "self": f"https://api.pagerduty.com/incidents/{incident_id}",
        "html_url": f"https://acme.pagerduty.com/incidents/{incident_id}",
        "number": 42,
        "status": event_type.removeprefix("incident."),
        "incident_key": f"key-{incident_id}",
        "created_at": created_at.isoformat().replace("+00:00", "Z"),
        "title": title,
        "service": {
            "id": "PSVC123",
            "type": "service_reference",
            "summary": service,
            "html_url": "https://acme.pagerduty.com/services/PSVC123",
        },
        "assignees": [],
        "escalation_policy": {"id": "PESC1", "type": "escalation_policy_reference", "summary": "Default"},
        "teams": [],
        "priority": (
            {"id": "PPRI1", "type": "priority_reference", "summary": priority}
            if priority is not None
            else None
        ),
        "urgency": urgency,
        "conference_bridge": None,
        "resolve_reason": None,
    }
    data = incident
    resource = "incident"
    if event_type == "incident.annotated":
        data = {
            "incident": {"id": incident_id, "type": "incident_reference", "html_url": incident["html_url"]},
            "id": "PNOTE1",
            "content": note or "a note",
            "trigger_log_entry": None,
            "type": "incident_note",
        }
    return {
        "event": {
            "id": event_id or str(uuid.uuid4()),
            "event_type": event_type,
            "resource_type": resource,
            "occurred_at": dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z"),
            "agent": {"id": "PUSER1", "type": "user_reference", "summary": "Ana On-call"},
            "client": None,
            "data": data,
        }
    }


def pagerduty_signature(raw: bytes, *secrets: str) -> str:
    """X-PagerDuty-Signature: "v1=<hex>" per secret, comma-separated (several during a rotation)."""
    return ",".join(f"v1={_hex(secret, raw)}" for secret in secrets)


def send_pagerduty(
    target,
    source: AlertSource,
    body,
    *,
    secret: str | None = None,
    secrets: tuple[str, ...] = (),
    headers=None,
) -> Delivery:
    raw = encode(body)
    signed = secrets or ((secret,) if secret else ())
    sent = {"User-Agent": "PagerDuty-Webhook/V3.0", "X-Webhook-Id": str(uuid.uuid4())}
    if signed:
        sent["X-PagerDuty-Signature"] = pagerduty_signature(raw, *signed)
    return post(target, source, raw, {**sent, **(headers or {})})


# --- Opsgenie: the Webhook integration ------------------------------------------------------------


def opsgenie_event(
    action: str = "Create",
    alert_id: str = "70413a06-38d6-4c85-92b8-5ebc900d42e2",
    *,
    alias: str = "checkout-5xx",
    message: str = "Checkout 5xx above 5%",
    priority: str = "P1",
    tags: tuple[str, ...] = ("service:checkout", "prod"),
    updated_at_ns: int | None = None,
    created_at: dt.datetime = T0,
    note: str = "",
) -> dict:
    alert = {
        "updatedAt": updated_at_ns if updated_at_ns is not None else time.time_ns(),
        "tags": list(tags),
        "teams": ["payments"],
        "recipients": [],
        "message": message,
        "username": "ana@example.com",
        "alertId": alert_id,
        "source": "api",
        "alias": alias,
        "tinyId": "23",
        "createdAt": int(created_at.timestamp() * 1000),
        "userId": "daed1180-0ce8-438b-8f8e-57e1a5920a2d",
        "entity": "checkout-01",
        "priority": priority,
    }
    if action == "Create":
        alert["description"] = "Errors on the checkout service."
        alert["details"] = {"region": "eu-west-1"}
    if note:
        alert["note"] = note
    return {
        "source": {"name": "", "type": "web"},
        "alert": alert,
        "action": action,
        "integrationId": "37c8f316-17c6-49d7-899b-9c7e540c048d",
        "integrationName": "Ongrid",
        "integrationType": "Webhook",
    }


def send_opsgenie(
    target, source: AlertSource, body, *, token: str | None = None, basic: tuple[str, str] | None = None
) -> Delivery:
    """Opsgenie sends what its integration's Custom Headers say: here X-Ongrid-Token, or basic auth."""
    sent = {"User-Agent": "Opsgenie"}
    if token:
        sent["X-Ongrid-Token"] = token
    if basic:
        sent["Authorization"] = "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
    return post(target, source, encode(body), sent)


# --- Grafana Alerting: the webhook contact point (payload version 1) ------------------------------


def grafana_alert(
    status: str = "firing",
    *,
    fingerprint: str = "c6eadffa33fcdf37",
    starts_at: dt.datetime = T0,
    ends_at: dt.datetime | None = None,
    **labels: str,
) -> dict:
    labels = {"alertname": "CheckoutErrors", "service": "checkout", "severity": "critical", **labels}
    return {
        "status": status,
        "labels": labels,
        "annotations": {"summary": "Checkout 5xx above 5%", "__dashboardUid__": "abc123", "__panelId__": "4"},
        "startsAt": starts_at.isoformat().replace("+00:00", "Z"),
        "endsAt": ends_at.isoformat().replace("+00:00", "Z") if ends_at else "0001-01-01T00:00:00Z",
        "generatorURL": "https://grafana.example/alerting/grafana/rule-uid/view",
        "fingerprint": fingerprint,
        "silenceURL": "https://grafana.example/alerting/silence/new",
        "dashboardURL": "https://grafana.example/d/abc123",
        "panelURL": "https://grafana.example/d/abc123?viewPanel=4",
        "values": {"B": 7.5},
        "valueString": "[ var='B' value=7.5 ]",
    }


def grafana_payload(*alerts: dict, group_key: str = '{}:{alertname="CheckoutErrors"}') -> dict:
    alerts = list(alerts) or [grafana_alert()]
    status = "firing" if any(a["status"] == "firing" for a in alerts) else "resolved"
    return {
        "receiver": "ongrid",
        "status": status,
        "orgId": 1,
        "alerts": alerts,
        "groupLabels": {"alertname": "CheckoutErrors"},
        "commonLabels": {"alertname": "CheckoutErrors", "service": "checkout"},
        "commonAnnotations": {"summary": "Checkout 5xx above 5%"},
        "externalURL": "https://grafana.example/",
        "version": "1",
        "groupKey": group_key,
        "truncatedAlerts": 0,
        "title": f"[{status.upper()}:{len(alerts)}] CheckoutErrors",
        "state": "alerting" if status == "firing" else "ok",
        "message": "**Firing**\nCheckout 5xx above 5%",
    }


def send_grafana(
    target,
    source: AlertSource,
    body,
    *,
    token: str | None = None,
    basic: tuple[str, str] | None = None,
    hmac_secret: str | None = None,
    timestamp: bool | int = False,
) -> Delivery:
    """As Grafana's contact point: Authorization (Bearer or Basic), and with an HMAC secret the hex
    signature of the body, or of "<unix time>:<body>" when a timestamp header is configured."""
    raw = encode(body)
    sent = {"User-Agent": "Grafana"}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    if basic:
        sent["Authorization"] = "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
    if hmac_secret:
        if timestamp:
            stamp = str(int(time.time()) if timestamp is True else timestamp)
            sent["X-Grafana-Alerting-Signature-Timestamp"] = stamp
            sent["X-Grafana-Alerting-Signature"] = _hex(hmac_secret, stamp.encode() + b":" + raw)
        else:
            sent["X-Grafana-Alerting-Signature"] = _hex(hmac_secret, raw)
    return post(target, source, raw, sent)


# --- any JSON sender --------------------------------------------------------------------------------


def send_generic(
    target, source: AlertSource, body, *, token: str | None = None, signing_secret: str | None = None
) -> Delivery:
    raw = encode(body)
    sent = {}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    if signing_secret:
        sent["X-Ongrid-Signature"] = "sha256=" + _hex(signing_secret, raw)
    return post(target, source, raw, sent)
