"""Which rules announce an incident, and whether now is a moment to (quiet hours). Pure decisions
on rows already loaded, so they are tested without sending anything."""

from __future__ import annotations

import datetime as dt
import zoneinfo

from incidents_app.alerting.models import NotificationRule
from ops_app.models import SEVERITY_RANK, Incident, Severity


def matching_rules(incident: Incident) -> list[NotificationRule]:
    """The incident's organization's enabled rules whose sources, severity and services match."""
    rules = NotificationRule.objects.filter(organization_id=incident.organization_id, enabled=True)
    rules = rules.prefetch_related("sources", "channels")
    return [rule for rule in rules if matches(rule, incident)]


def matches(rule: NotificationRule, incident: Incident) -> bool:
    return (
        rule.organization_id == incident.organization_id
        and source_matches(rule, incident)
        and severe_enough(rule.min_severity, incident.severity)
        and services_match(rule.services, incident.affected_services)
    )


def source_matches(rule: NotificationRule, incident: Incident) -> bool:
    """A kind (`alertmanager`, `pagerduty`, …) or a named source matches; neither given: all do."""
    kinds = set(rule.source_kinds or [])
    named = {source.pk for source in rule.sources.all()}
    if not kinds and not named:
        return True
    return incident.source in kinds or (
        incident.alert_source_id is not None and incident.alert_source_id in named
    )


def severe_enough(minimum: str, severity: str) -> bool:
    worst_allowed = SEVERITY_RANK.get(minimum, SEVERITY_RANK[Severity.INFO])
    return SEVERITY_RANK.get(severity, 99) <= worst_allowed


def services_match(wanted: list, affected: list) -> bool:
    return not wanted or bool(set(wanted) & set(affected or []))


def in_quiet_hours(rule: NotificationRule, moment: dt.datetime) -> bool:
    """`moment` falls in the rule's quiet hours, read in its time zone; a start later than the end
    spans midnight (22:00–07:00 is quiet at 23:30 and at 06:59, not at 07:00)."""
    if rule.quiet_start is None or rule.quiet_end is None or rule.quiet_start == rule.quiet_end:
        return False
    local = moment.astimezone(zoneinfo.ZoneInfo(rule.time_zone or "UTC")).time()
    start, end = rule.quiet_start, rule.quiet_end
    if start < end:
        return start <= local < end
    return local >= start or local < end


def silenced_by_quiet_hours(rule: NotificationRule, incident: Incident, moment: dt.datetime) -> bool:
    """Quiet hours hold the message back, unless the incident is critical and the rule lets
    critical ones through (the default: a critical page at 3 a.m. is why on-call exists)."""
    if not in_quiet_hours(rule, moment):
        return False
    return not (rule.critical_breaks_quiet and incident.severity == Severity.CRITICAL)
