"""What changed around an incident: the estate's change events (deploys, config and label
changes, new rules) in the two hours before its start and while it lasts, each placed relative to
the start ("6 minutes before the start") and marked when it touched the incident's own services,
devices or their topology neighbours. The page shows it whatever the investigation concluded, and
the investigator's brief carries it, because a change just before the start is the usual suspect
(docs/incidents.md, "What changed")."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.utils import timezone
from django.utils.timesince import timesince
from django.utils.translation import gettext as _

from ops_app.estate.correlation import correlate
from ops_app.models import ChangeEvent, Incident

WINDOW_BEFORE = dt.timedelta(hours=2)
MAX_CHANGES = 20


@dataclass(frozen=True)
class Change:
    """One change event as the page and the brief present it."""

    pk: int
    at: dt.datetime
    actor: str
    summary: str
    resource_type: str
    resource_id: str
    resource_name: str
    related: bool  # on the incident's services, devices or their neighbours
    minutes_from_start: float  # negative: before the start
    diffs: list[str] = field(default_factory=list)

    @property
    def before_start(self) -> bool:
        return self.minutes_from_start <= 0

    def relative(self, started_at: dt.datetime) -> str:
        """The change placed from the start ("6 minutes before the start"), in the active language."""
        if self.before_start:
            return _("%(amount)s before the start") % {"amount": timesince(self.at, started_at)}
        return _("%(amount)s after the start") % {"amount": timesince(started_at, self.at)}


def diff_lines(before: object, after: object, prefix: str = "") -> list[str]:
    """What an update changed, key by key, into nested maps (a node's labels are named as themselves):
    `db_pool_size 50 → 5`. Keys whose values are equal are left out."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return [] if before == after else [f"{prefix or 'value'} {_plain(before)} → {_plain(after)}"]
    lines: list[str] = []
    for key in sorted(set(before) | set(after), key=str):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            lines += diff_lines(old, new, "" if key == "labels" else f"{prefix}{key}.")
        else:
            lines.append(f"{prefix}{key} {_plain(old)} → {_plain(new)}")
    return lines


def _plain(value: object) -> str:
    return "—" if value is None else str(value)


def what_changed(incident: Incident, now: dt.datetime | None = None) -> list[Change]:
    """Change events from two hours before the start until the end (or now), closest to the start
    first among those before it, then those during it in time order. Incident state changes
    (acknowledged, resolved) are the timeline's, not changes to the estate."""
    correlated = correlate(incident, WINDOW_BEFORE)
    related = {item["id"]: item["related"] for item in correlated["timeline"] if item.get("kind") == "change"}
    end = incident.resolved_at or now or timezone.now()
    rows = (
        ChangeEvent.objects.filter(
            organization_id=incident.organization_id,
            occurred_at__gte=incident.started_at - WINDOW_BEFORE,
            occurred_at__lte=max(end, incident.started_at),
        )
        .exclude(resource_type="incident")
        .order_by("-occurred_at", "-pk")[:MAX_CHANGES]
    )
    changes = [_change(row, incident, related.get(row.pk, False)) for row in rows]
    before = sorted((c for c in changes if c.before_start), key=lambda c: -c.minutes_from_start)
    during = sorted((c for c in changes if not c.before_start), key=lambda c: c.at)
    return before + during


def _change(row: ChangeEvent, incident: Incident, related: bool) -> Change:
    minutes = (row.occurred_at - incident.started_at).total_seconds() / 60
    return Change(
        pk=row.pk,
        at=row.occurred_at,
        actor=row.actor_name or "system",
        summary=row.summary,
        resource_type=row.resource_type,
        resource_id=row.resource_id,
        resource_name=row.resource_name,
        related=related,
        minutes_from_start=round(minutes, 1),
        diffs=diff_lines(row.before, row.after) if row.action == "update" else [],
    )


def likely_cause(changes: list[Change]) -> Change | None:
    """The change closest before the start on the incident's own neighbourhood, if any."""
    return next((c for c in changes if c.before_start and c.related), None)


def for_brief(changes: list[Change]) -> list[dict]:
    """The changes as the investigator's brief lists them (compact JSON, minutes from the start)."""
    return [
        {
            "change_id": c.pk,
            "at": c.at.isoformat(),
            "minutes_from_start": c.minutes_from_start,
            "actor": c.actor,
            "summary": c.summary,
            "resource": f"{c.resource_type} {c.resource_name}",
            "changed": c.diffs,
            "on_the_incident_neighbourhood": c.related,
        }
        for c in changes
    ]
