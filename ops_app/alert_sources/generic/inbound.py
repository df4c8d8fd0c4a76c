"""Any JSON sender: the source's `mapping` says where each field of the event is in the body, as
dotted paths (`alert.name`, `tags.0`), with optional value maps for status and severity:

    {"title": "alert.name", "severity": "level", "status": "state", "group_key": "id",
     "labels": "tags", "started_at": "ts", "event_id": "delivery", "external_url": "link",
     "status_map": {"open": "firing", "ack": "acknowledged", "closed": "resolved"},
     "severity_map": {"sev1": "critical"}}

Verified by the source's token (bearer, or basic auth with a user name) and/or an HMAC-SHA256
signature of the raw body in `X-Ongrid-Signature` (hex, optionally `sha256=`-prefixed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ops_app.alert_sources import verify
from ops_app.alert_sources.events import (
    FIRING,
    STATUSES,
    AlertEvent,
    PayloadError,
    VerificationFailed,
    digest,
    parse_time,
    severity_of,
    string_labels,
    text,
)
from ops_app.models import AlertSource, Severity

SIGNATURE_HEADER = "X-Ongrid-Signature"
PATH_FIELDS = (
    "title",
    "group_key",
    "status",
    "severity",
    "labels",
    "started_at",
    "event_id",
    "external_id",
    "external_url",
    "summary",
)
REQUIRED = ("title", "group_key")
VALUE_MAPS = ("status_map", "severity_map")
MISSING = object()


class MappingError(ValueError):
    """The mapping itself is wrong; the message names the bad key."""


def validate_mapping(mapping: object) -> dict:
    """The mapping as stored, or MappingError naming the first bad key (used on save)."""
    if not isinstance(mapping, dict):
        raise MappingError("the mapping must be a JSON object of field → dotted path")
    for key in REQUIRED:
        if key not in mapping:
            raise MappingError(
                f'"{key}" is required: the dotted path of the alert\'s {key.replace("_", " ")}'
            )
    for key, value in mapping.items():
        if key in VALUE_MAPS:
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise MappingError(f'"{key}" must be an object of sender value → Ongrid value')
            allowed = STATUSES if key == "status_map" else tuple(Severity.values)
            bad = next((v for v in value.values() if v not in allowed), None)
            if bad is not None:
                raise MappingError(f'"{key}" maps to {bad!r}; expected one of {", ".join(allowed)}')
        elif key in PATH_FIELDS:
            if not isinstance(value, str) or not value.strip() or any(not p for p in value.split(".")):
                raise MappingError(f'"{key}" must be a dotted path such as "alert.name", not {value!r}')
        else:
            raise MappingError(f'unknown key "{key}"; expected {", ".join(PATH_FIELDS + VALUE_MAPS)}')
    return mapping


def lookup(data: object, path: str) -> object:
    """The value at a dotted path (list items by index), or MISSING."""
    node = data
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node


@dataclass(frozen=True)
class Preview:
    """What the mapping makes of a body: each field's value, and the paths that found nothing."""

    values: dict
    missing: list[str]
    error: str = ""


def preview(mapping: object, data: object) -> Preview:
    """The mapping applied to `data`, for the admin's live preview: never raises."""
    try:
        validate_mapping(mapping)
    except MappingError as exc:
        return Preview({}, [], str(exc))
    missing = [
        f"{key}: {mapping[key]}"
        for key in PATH_FIELDS
        if key in mapping and lookup(data, mapping[key]) is MISSING
    ]
    try:
        event = _event(mapping, data)
    except PayloadError as exc:
        return Preview({}, missing, str(exc))
    values = {
        "title": event.title,
        "status": event.status,
        "severity": event.severity,
        "group_key": event.group_key,
        "event_id": event.event_id,
        "labels": event.labels,
        "started_at": event.started_at.isoformat() if event.started_at else "",
        "external_id": event.external_id,
        "external_url": event.external_url,
    }
    return Preview(values, missing)


def verify_request(source: AlertSource, headers: Mapping[str, str], raw: bytes) -> None:
    if not source.auth_token and not source.signing_secret:
        raise VerificationFailed("this source has neither an auth token nor a signing secret")
    verify.check_credentials(source, headers)
    if source.signing_secret:
        signature = headers.get(SIGNATURE_HEADER, "").strip()
        if not signature:
            raise VerificationFailed(f"no {SIGNATURE_HEADER} header (the source has a signing secret)")
        if not verify.signature_matches(source.signing_secret, raw, [signature.removeprefix("sha256=")]):
            raise VerificationFailed(f"the {SIGNATURE_HEADER} signature does not match the body")


def parse(data: object, source: AlertSource) -> list[AlertEvent]:
    try:
        validate_mapping(source.mapping)
    except MappingError as exc:
        raise PayloadError(f"the source's mapping is invalid: {exc}") from None
    return [_event(source.mapping, data)]


def _event(mapping: dict, data: object) -> AlertEvent:
    def value(key: str) -> object:
        return lookup(data, mapping[key]) if key in mapping else MISSING

    def required(key: str) -> str:
        found = value(key)
        if found is MISSING or text(found, 1) == "":
            raise PayloadError(f'{key}: nothing at "{mapping[key]}" in the body')
        return text(found, 2000)

    title = required("title")[:300]
    group_key = required("group_key")
    status = _mapped(value("status"), mapping.get("status_map", {}), FIRING)
    if status not in STATUSES:
        where = mapping["status"]
        raise PayloadError(
            f'status: {status!r} (at "{where}") is not one of {", ".join(STATUSES)}; add it to status_map'
        )
    severity = _mapped(value("severity"), mapping.get("severity_map", {}), "")
    event_id = text(value("event_id"), 200) if value("event_id") is not MISSING else ""
    started = value("started_at")
    return AlertEvent(
        status=status,
        group_key=group_key,
        event_id=event_id or digest(data),
        title=title,
        severity=severity_of(severity),
        labels=string_labels(value("labels")) if value("labels") is not MISSING else {},
        started_at=parse_time(started, "started_at") if started is not MISSING else None,
        external_id=text(value("external_id"), 200) if value("external_id") is not MISSING else "",
        external_url=_url(value("external_url")),
        summary=text(value("summary"), 2000) if value("summary") is not MISSING else "",
    )


def _mapped(found: object, table: dict, default: str) -> str:
    if found is MISSING or found is None:
        return default
    word = text(found, 100)
    return table.get(word, word.lower())


def _url(found: object) -> str:
    url = text(found, 1000) if found is not MISSING else ""
    return url if url.startswith(("https://", "http://")) else ""
