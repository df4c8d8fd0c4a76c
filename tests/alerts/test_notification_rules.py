"""Which new incidents a rule announces, and when it holds back: the sources (kinds and named
sources), the minimum severity, the services, quiet hours (critical breaking through), the
per-group limit and the per-channel limit with its digest, and tenancy. The messages are read
where a person gets them: the e-mail outbox."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core import mail

from incidents_app.alerting import drain, rules
from incidents_app.models import NotificationDelivery, NotificationRule
from ops_app.models import AlertSource, Incident
from tests.support.alerts import T0, email_channel, eventually, fire, rule, settled

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("inline_executor", "fixed_clock"),
]


def subjects() -> list[str]:
    eventually(settled, what="the drainer")
    return sorted(m.subject for m in mail.outbox)


def test_a_matching_incident_sends_one_mail_per_channel_even_when_two_rules_match(org):
    channel = email_channel(org)
    rule(org, channel, name="everything")
    rule(org, channel, name="critical", min_severity="critical")
    fire(org, "Checkout 5xx")
    eventually(lambda: mail.outbox, what="the mail")
    assert subjects() == ["[Ongrid] CRITICAL: Checkout 5xx"]
    assert mail.outbox[0].to == ["oncall@acme.test", "lead@acme.test"]
    row = NotificationDelivery.objects.get()
    assert (row.kind, row.status, row.attempts, row.last_error) == ("alert", "sent", 1, "")


def test_severity_services_and_sources_decide(org):
    channel = email_channel(org)
    pagerduty = AlertSource.objects.create(organization=org, name="pd-payments", kind="pagerduty")
    rule(
        org, channel, min_severity="high", services=["checkout", "payments"], source_kinds=["grafana"]
    ).sources.add(pagerduty)
    fire(org, "From grafana", source="grafana")
    fire(
        org, "From the named PagerDuty source", source="pagerduty", alert_source=pagerduty, fingerprint="pd1"
    )
    fire(org, "From alertmanager: no such kind", source="alertmanager", fingerprint="am1")
    fire(org, "Too mild", severity="warning", source="grafana", fingerprint="g2")
    fire(org, "Other service", source="grafana", affected_services=["search"], fingerprint="g3")
    eventually(lambda: len(mail.outbox) >= 2, what="two mails")
    assert subjects() == [
        "[Ongrid] CRITICAL: From grafana",
        "[Ongrid] CRITICAL: From the named PagerDuty source",
    ]


def test_a_rule_without_sources_takes_every_source_and_a_disabled_rule_nothing(org):
    channel = email_channel(org)
    rule(org, channel)
    rule(org, email_channel(org, "off-mail", recipients="off@acme.test"), enabled=False)
    fire(org, "Any source", source="webhook")
    eventually(lambda: mail.outbox, what="the mail")
    assert [m.to for m in mail.outbox] == [["oncall@acme.test", "lead@acme.test"]]
    assert subjects() == ["[Ongrid] CRITICAL: Any source"]


def test_quiet_hours_hold_back_all_but_critical_in_the_rules_time_zone(org, fixed_clock):
    # 22:00–07:00 in Madrid (UTC+2 in May): 10:00 UTC is noon there, 23:30 UTC is 01:30 there.
    quiet = rule(
        org,
        email_channel(org),
        min_severity="info",
        quiet_start=dt.time(22),
        quiet_end=dt.time(7),
        time_zone="Europe/Madrid",
        group_minutes=0,
    )
    fire(org, "Day warning", severity="warning", fingerprint="d1")  # noon in Madrid
    fixed_clock.set_now(T0.replace(hour=23, minute=30))
    fire(org, "Night warning", severity="warning", fingerprint="n1")
    fire(org, "Night critical", severity="critical", fingerprint="n2")
    eventually(lambda: len(mail.outbox) >= 2, what="two mails")
    assert subjects() == ["[Ongrid] CRITICAL: Night critical", "[Ongrid] WARNING: Day warning"]

    NotificationRule.objects.filter(pk=quiet.pk).update(critical_breaks_quiet=False)
    quiet.refresh_from_db()
    night = Incident(organization=org, severity="critical", title="x")
    assert rules.silenced_by_quiet_hours(quiet, night, T0.replace(hour=23, minute=30))
    assert not rules.in_quiet_hours(quiet, T0.replace(hour=5))  # 07:00 in Madrid: quiet is over


def test_a_group_firing_again_within_its_limit_is_announced_once(org, fixed_clock):
    rule(org, email_channel(org), group_minutes=30)
    first = fire(org, "DB down", fingerprint="db-group")
    eventually(lambda: mail.outbox, what="the first mail")
    first.status = Incident.Status.RESOLVED
    first.save()
    fixed_clock.set_now(T0 + dt.timedelta(minutes=10))
    first.status = Incident.Status.FIRING  # reopened within 30 minutes
    first.save()
    first.status = Incident.Status.RESOLVED
    first.save()
    fixed_clock.set_now(T0 + dt.timedelta(minutes=40))
    fire(org, "DB down again", fingerprint="db-group")  # the same group, after the limit
    eventually(lambda: len(mail.outbox) >= 2, what="the second mail")
    assert subjects() == ["[Ongrid] CRITICAL: DB down", "[Ongrid] CRITICAL: DB down again"]


def test_over_the_channels_limit_alerts_are_collected_into_one_digest_when_the_window_ends(org, fixed_clock):
    channel = email_channel(org, max_messages=2, window_minutes=10)
    rule(org, channel)
    for n in range(5):
        fixed_clock.set_now(T0 + dt.timedelta(minutes=n))
        fire(org, f"Storm {n}", fingerprint=f"storm-{n}")
    eventually(lambda: len(mail.outbox) >= 2, what="the first two mails")
    assert subjects() == ["[Ongrid] CRITICAL: Storm 0", "[Ongrid] CRITICAL: Storm 1"]
    assert NotificationDelivery.objects.filter(status="collected").count() == 3
    digest = NotificationDelivery.objects.get(kind="digest")
    assert digest.status == "pending" and digest.next_attempt_at == T0 + dt.timedelta(minutes=10)

    fixed_clock.set_now(T0 + dt.timedelta(minutes=9))
    assert drain.drain_once() == 0  # the window has not ended
    fixed_clock.set_now(T0 + dt.timedelta(minutes=10))
    drain.drain_once()
    eventually(lambda: len(mail.outbox) == 3, what="the digest")
    sent = mail.outbox[-1]
    assert sent.subject == "[Ongrid] Digest: 3 more alerts in the last 10 minutes"
    assert all(f"Storm {n}" in sent.body for n in (2, 3, 4)) and "Storm 1" not in sent.body
    assert NotificationDelivery.objects.filter(status="digested").count() == 3
    assert NotificationDelivery.objects.get(kind="digest").status == "sent"


def test_an_organizations_rule_never_announces_another_organizations_incident(org, other_org):
    rule(org, email_channel(org))
    fire(other_org, "Globex outage")
    fire(org, "Acme outage", fingerprint="acme")
    eventually(lambda: mail.outbox, what="Acme's mail")
    assert subjects() == ["[Ongrid] CRITICAL: Acme outage"]
    assert not NotificationDelivery.objects.filter(organization=other_org).exists()


def test_curated_loads_and_resolved_incidents_announce_nothing(org):
    from ops_app.estate import change_events

    rule(org, email_channel(org))
    with change_events.suppressed():
        fire(org, "Demo estate incident", fingerprint="demo")
    fire(org, "Born resolved", status=Incident.Status.RESOLVED, fingerprint="resolved")
    fire(org, "Real one", fingerprint="real")
    eventually(lambda: mail.outbox, what="the real mail")
    assert subjects() == ["[Ongrid] CRITICAL: Real one"]
