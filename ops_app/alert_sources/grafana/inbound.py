"""Grafana Alerting's webhook contact point (payload version "1"): Alertmanager's group payload
plus Grafana's `title`, `message`, `state` and per-alert dashboard and panel links. Optional
credentials: basic auth, or an Authorization header (Bearer by default). Optional HMAC signature:
hex HMAC-SHA256 in `X-Grafana-Alerting-Signature`, over the raw body, or over "<timestamp>:<body>"
when the contact point sends a timestamp header (`X-Grafana-Alerting-Signature-Timestamp`)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from ops_app.alert_sources import verify
from ops_app.alert_sources.events import (
    FIRING,
    RESOLVED,
    AlertEvent,
    AlertInstance,
    PayloadError,
    VerificationFailed,
    digest,
    parse_time,
    severity_of,
    string_labels,
    text,
)
from ops_app.models import SEVERITY_RANK, AlertSource, Severity

SIGNATURE_HEADER = "X-Grafana-Alerting-Signature"
TIMESTAMP_HEADER = "X-Grafana-Alerting-Signature-Timestamp"
MAX_CLOCK_SKEW_SECONDS = 600  # a signed timestamp older (or newer) than this is a replay
LINK_ANNOTATIONS = ("__dashboardUid__", "__panelId__", "__alertRuleUID__")


def verify_request(source: AlertSource, headers: Mapping[str, str], raw: bytes) -> None:
    if not source.auth_token and not source.signing_secret:
        raise VerificationFailed("this source has neither an auth token nor a signing secret")
    verify.check_credentials(source, headers)
    if not source.signing_secret:
        return
    signature = headers.get(SIGNATURE_HEADER, "")
    if not signature:
        raise VerificationFailed(f"no {SIGNATURE_HEADER} header (the source has an HMAC secret)")
    stamp = headers.get(TIMESTAMP_HEADER, "").strip()
    message = raw
    if stamp:
        try:
            skew = abs(time.time() - int(stamp))
        except ValueError:
            raise VerificationFailed(f"{TIMESTAMP_HEADER} is not a Unix time") from None
        if skew > MAX_CLOCK_SKEW_SECONDS:
            raise VerificationFailed(f"{TIMESTAMP_HEADER} is more than {MAX_CLOCK_SKEW_SECONDS} s off")
        message = stamp.encode() + b":" + raw
    if not verify.signature_matches(source.signing_secret, message, [signature]):
        raise VerificationFailed(f"the {SIGNATURE_HEADER} signature does not match the body")


def parse(data: object, source: AlertSource) -> list[AlertEvent]:
    if not isinstance(data, dict):
        raise PayloadError("the body must be a JSON object")
    if str(data.get("version")) != "1":
        raise PayloadError(f'unsupported payload version {data.get("version")!r}; expected "1"')
    group_key = text(data.get("groupKey"), 2000)
    if not group_key:
        raise PayloadError("groupKey is missing")
    alerts = data.get("alerts")
    if not isinstance(alerts, list) or not alerts or not all(isinstance(a, dict) for a in alerts):
        raise PayloadError("alerts must be a non-empty list of objects")
    status = data.get("status")
    if status not in (FIRING, RESOLVED):
        raise PayloadError(f"status must be 'firing' or 'resolved', not {status!r}")
    common_labels = string_labels(data.get("commonLabels"))
    common_annotations = string_labels(data.get("commonAnnotations"))
    instances = [_instance(i, raw) for i, raw in enumerate(alerts)]
    labels = dict(common_labels)
    first = alerts[0]
    first_annotations = string_labels(first.get("annotations"))
    for key in LINK_ANNOTATIONS:
        if first_annotations.get(key):
            labels[key] = first_annotations[key]
    starts = [i["starts_at"] for i in instances if i["starts_at"] is not None]
    severities = [severity_of(i["labels"].get("severity")) for i in instances]
    title = (
        common_annotations.get("summary")
        or common_labels.get("alertname")
        or text(data.get("title"), 300)
        or "Grafana alert"
    )
    return [
        AlertEvent(
            status=status,
            group_key=group_key,
            # Grafana sends no delivery id; its retries repeat the same group state.
            event_id=digest(
                group_key,
                status,
                [(i["fingerprint"], i["status"], str(i["starts_at"]), i["ends"]) for i in instances],
            ),
            title=title[:300],
            severity=min(severities, key=lambda s: SEVERITY_RANK[s]) if severities else Severity.WARNING,
            labels=labels,
            started_at=min(starts) if starts else None,
            external_id=group_key[:200],
            external_url=text(first.get("generatorURL") or data.get("externalURL"), 1000),
            summary=(common_annotations.get("description") or text(data.get("message"), 2000))[:2000],
            instances=tuple(
                _alert(raw, found) for raw, found in zip(alerts, instances, strict=True) if found["starts_at"]
            ),
        )
    ]


def _alert(raw: dict, found: dict) -> AlertInstance:
    """The instance as the incident's alert (its own labels, annotations and rule link)."""
    ends_at = parse_time(raw.get("endsAt"), "endsAt") if found["status"] == RESOLVED else None
    return AlertInstance(
        fingerprint=found["fingerprint"] or digest(sorted(found["labels"].items()))[7:23],
        status=found["status"],
        labels=found["labels"],
        annotations=string_labels(raw.get("annotations")),
        starts_at=found["starts_at"],
        ends_at=ends_at,
        generator_url=text(raw.get("generatorURL"), 1000),
    )


def _instance(index: int, raw: dict) -> dict:
    where = f"alerts[{index}]"
    if raw.get("status") not in (FIRING, RESOLVED):
        raise PayloadError(f"{where}.status must be 'firing' or 'resolved', not {raw.get('status')!r}")
    return {
        "status": raw["status"],
        "labels": string_labels(raw.get("labels")),
        "fingerprint": text(raw.get("fingerprint"), 64),
        "starts_at": parse_time(raw.get("startsAt"), f"{where}.startsAt"),
        "ends": text(raw.get("endsAt"), 40),
    }
