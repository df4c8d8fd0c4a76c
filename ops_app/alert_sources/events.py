"""The one shape every alert source's delivery is read into, whatever its vendor: the shared
ingestion (ops_app/estate/intake.py) only ever sees `AlertEvent`s, so PagerDuty, Opsgenie,
Grafana and a generic sender differ only in their `inbound.py`."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field

from ops_app.estate import alertmanager
from ops_app.estate.alertmanager import SEVERITY_ALIASES
from ops_app.models import Severity

FIRING = "firing"
ACKNOWLEDGED = "acknowledged"
RESOLVED = "resolved"
NOTE = "note"
STATUSES = (FIRING, ACKNOWLEDGED, RESOLVED, NOTE)

__all__ = [
    "STATUSES",
    "AlertEvent",
    "AlertInstance",
    "PayloadError",
    "VerificationFailed",
    "digest",
    "severity_of",
]


class PayloadError(alertmanager.PayloadError):
    """The delivery is not what its source's kind sends (or its mapping cannot read it); the
    message names the first problem. A ValueError, like Alertmanager's."""


class VerificationFailed(Exception):
    """The request is not from the source's sender (bad signature, wrong token, no credentials).
    The message names what was wrong, never the expected value."""


@dataclass(frozen=True)
class AlertInstance:
    """One alert of a group, as its source identifies it (a Grafana alert instance)."""

    fingerprint: str
    status: str  # FIRING or RESOLVED
    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: dt.datetime
    ends_at: dt.datetime | None = None
    generator_url: str = ""


@dataclass(frozen=True)
class AlertEvent:
    """One state change (or a note) of one alert group in its source.

    `group_key` is what makes deliveries meet in one incident (PagerDuty's incident id, Opsgenie's
    alias, Grafana's group key, the generic mapping's group key); `event_id` is what makes a
    replayed delivery recognisable (the sender's own event id when it has one, else a digest of
    what the delivery says)."""

    status: str  # one of STATUSES
    group_key: str
    event_id: str
    title: str = ""
    severity: str = Severity.WARNING
    labels: dict[str, str] = field(default_factory=dict)
    started_at: dt.datetime | None = None
    external_id: str = ""
    external_url: str = ""
    summary: str = ""
    # When the source says it happened (None: unknown); a late event from before the group's
    # resolve changes nothing.
    occurred_at: dt.datetime | None = None
    # A firing event that undoes an acknowledge or a resolve (PagerDuty reopened / unacknowledged,
    # Opsgenie UnAcknowledge): the group's last resolved incident fires again.
    reopens: bool = False
    # The group's alert instances when the source sends them (Grafana); empty: the group is one
    # alert, drawn from the event itself. Kept as the incident's alerts, like Alertmanager's.
    instances: tuple[AlertInstance, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise PayloadError(f"unknown status {self.status!r}; expected one of {', '.join(STATUSES)}")
        if not self.group_key:
            raise PayloadError("the delivery names no alert group (group key)")
        if not self.event_id:
            raise PayloadError("the delivery has no event id")


def severity_of(value: object, default: str = Severity.WARNING) -> str:
    """A vendor's severity word (critical, P1, high, warning…) as one of Ongrid's severities."""
    word = str(value or "").strip().lower()
    if word in Severity.values:
        return word
    return SEVERITY_ALIASES.get(word, default)


def digest(*parts: object) -> str:
    """A stable id for deliveries that carry none: the same content gives the same id."""
    canonical = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()[:40]


def parse_time(value: object, where: str) -> dt.datetime | None:
    """RFC 3339 text, or epoch seconds / milliseconds / nanoseconds, as an aware UTC time."""
    if value in (None, ""):
        return None
    if isinstance(value, bool):
        raise PayloadError(f"{where} is not a time: {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
        while seconds > 1e11:  # milliseconds, microseconds, nanoseconds
            seconds /= 1000
        try:
            return dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            raise PayloadError(f"{where} is out of range: {value!r}") from None
    if not isinstance(value, str):
        raise PayloadError(f"{where} is not a time: {value!r}")
    if value.startswith("0001-01-01"):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise PayloadError(f"{where} is not an RFC 3339 time: {value!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


def text(value: object, limit: int) -> str:
    """A scalar as bounded text ("" for null, objects and lists)."""
    if value is None or isinstance(value, dict | list):
        return ""
    return str(value)[:limit]


def string_labels(value: object) -> dict[str, str]:
    """Labels or tags as a flat {str: str}: an object's scalars, or a list of `k:v` / bare tags."""
    labels: dict[str, str] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(item, dict | list):
                labels[str(key)[:100]] = text(item, 500)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str | int | float) and not isinstance(item, bool):
                key, sep, rest = str(item).partition(":")
                labels[key[:100]] = rest[:500] if sep else "true"
    return labels
