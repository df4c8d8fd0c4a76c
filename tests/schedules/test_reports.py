"""Reports: exact figures (seeded incidents with known MTTA / MTTR), one organization's only,
the narrative around them, the Reports page, and delivery by e-mail and signed webhook."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.core import mail
from django.urls import reverse

from fakes.openai_server import text
from ops_app.models import Alert, ChangeEvent, Incident
from schedules_app import delivery, runner, scheduler
from schedules_app.models import Report, ScheduleRun
from tests.support.schedules import make_schedule, webhook_receiver

pytestmark = pytest.mark.django_db(transaction=True)

# A daily report run on 2026-03-03 covers 2026-03-02 (UTC).
DAY = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)
RUN_AT = dt.datetime(2026, 3, 3, 6, 0, tzinfo=dt.UTC)


def incident(org, title, started_min, ack_min=None, resolved_min=None, **fields):
    start = DAY + dt.timedelta(minutes=started_min)
    return Incident.objects.create(
        organization=org,
        title=title,
        started_at=start,
        acknowledged_at=start + dt.timedelta(minutes=ack_min) if ack_min is not None else None,
        resolved_at=start + dt.timedelta(minutes=resolved_min) if resolved_min is not None else None,
        status=Incident.Status.RESOLVED if resolved_min is not None else Incident.Status.FIRING,
        **fields,
    )


@pytest.fixture
def seeded(org, other_org):
    # In the window: acknowledged after 4 and 10 min (MTTA 7 min); resolved after 30 and 90 min (MTTR 60 min).
    incident(org, "checkout 5xx", 60, ack_min=4, resolved_min=30, affected_services=["checkout"])
    incident(org, "db latency", 600, ack_min=10, resolved_min=90, affected_services=["checkout", "db"])
    incident(org, "disk full", 900, affected_services=["db"])  # still open, not acknowledged
    incident(org, "the day before", -300, ack_min=1, resolved_min=2)  # outside the window
    for i in range(3):
        Alert.objects.create(
            organization=org, name="HighLatency", fingerprint=f"f{i}", starts_at=DAY + dt.timedelta(hours=i)
        )
    Alert.objects.create(
        organization=org, name="DiskFull", fingerprint="d", starts_at=DAY + dt.timedelta(hours=5)
    )
    ChangeEvent.objects.create(
        organization=org,
        occurred_at=DAY + dt.timedelta(hours=2),
        actor_name="oscar",
        action="update",
        resource_type="device",
        resource_id="1",
        resource_name="db-01",
        summary="oscar changed db-01",
    )
    # Another organization, busy the same day: none of this may reach org's report.
    for n in range(5):
        incident(other_org, f"globex {n}", 120 + n, ack_min=100, resolved_min=500)
    Alert.objects.create(organization=other_org, name="GlobexNoise", fingerprint="g", starts_at=DAY)


def run_report(schedule) -> Report:
    run = scheduler.create_manual_run(schedule, now=RUN_AT)
    runner.execute_run(run.pk)
    run = ScheduleRun.objects.get(pk=run.pk)
    assert run.state == "finished", run.error
    return run.report


def test_the_reports_figures_are_the_databases_and_only_its_own_organizations(org, seeded, agents_llm):
    agents_llm.add("reporter", text("A busy Monday: checkout failed twice."))
    schedule = make_schedule(
        org, "daily report", kind="report", persona="reporter", period="daily", prompt=""
    )
    report = run_report(schedule)

    f = report.figures
    assert (report.period_start, report.period_end) == (DAY, DAY + dt.timedelta(days=1))
    assert (f["incidents"]["opened"], f["incidents"]["resolved"]) == (3, 2)
    assert f["incidents"]["mtta_seconds"] == 7 * 60
    assert f["incidents"]["mttr_seconds"] == 60 * 60
    assert f["noisiest_alert_rules"] == [
        {"name": "HighLatency", "alerts": 3},
        {"name": "DiskFull", "alerts": 1},
    ]
    assert f["top_services"][0] == {"name": "checkout", "incidents": 2}
    assert f["changes"]["by_actor"] == [{"actor": "oscar", "changes": 1}]
    assert report.narrative == "A busy Monday: checkout failed twice."
    # The reporter was handed the exact figures.
    prompt = next(m["content"] for m in agents_llm.seen["reporter"][0].messages if m["role"] == "user")
    assert '"mttr_seconds": 3600.0' in prompt


def test_the_reports_page_shows_the_figures_to_members_not_to_other_organizations(
    client, org, seeded, member, outsider, agents_llm
):
    agents_llm.add("reporter", text("Narrative."))
    report = run_report(
        make_schedule(org, "r", kind="report", persona="reporter", period="weekly", prompt="")
    )
    client.force_login(member)
    page = client.get(reverse("report", args=[report.pk])).content.decode()
    # The week holds the day before too: 4 incidents, acknowledged after 1, 4 and 10 min (MTTA 5 min).
    assert "Incidents opened: <strong>4</strong>" in page and "MTTA: <strong>5 min</strong>" in page
    assert report.figures["incidents"]["opened_per_day"][-2:] == [["2026-03-01", 1], ["2026-03-02", 3]]
    assert "<svg" in page  # the incidents-per-day trend
    assert client.get(reverse("report-print", args=[report.pk])).status_code == 200
    assert "# Weekly report" in client.get(reverse("report-markdown", args=[report.pk])).content.decode()
    client.force_login(outsider)
    assert client.get(reverse("report", args=[report.pk])).status_code == 404


@pytest.mark.parametrize(
    ("language", "opened", "heading"),
    [
        ("es", "Incidentes abiertos:", "Informes"),
        ("fr", "Incidents ouverts :", "Rapports"),
        ("zh-Hans", "新建事件：", "报告"),
    ],
)
def test_the_report_pages_follow_the_readers_language(
    client, org, seeded, member, agents_llm, language, opened, heading
):
    agents_llm.add("reporter", text("Narrative."))
    report = run_report(make_schedule(org, "r", kind="report", persona="reporter", prompt=""))
    client.force_login(member)
    page = client.get(reverse("report", args=[report.pk]), HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert f"{opened} <strong>" in page
    listing = client.get(reverse("reports"), HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert f"<h1>{heading}</h1>" in listing
    printable = client.get(reverse("report-print", args=[report.pk]), HTTP_ACCEPT_LANGUAGE=language)
    assert f'<html lang="{language.lower()}">' in printable.content.decode()


def test_a_report_is_mailed_and_posted_to_a_signed_webhook(org, seeded, agents_llm, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    agents_llm.add("reporter", text("Narrative for the mail."))
    with webhook_receiver() as (url, received):
        schedule = make_schedule(
            org,
            "weekly",
            kind="report",
            persona="reporter",
            period="daily",
            prompt="",
            email_to="oncall@example.com, lead@example.com",
            webhook_url=url,
            webhook_secret="s3cret-hook",
        )
        report = run_report(schedule)

    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert sent.to == ["oncall@example.com", "lead@example.com"]
    assert "Incidents opened: 3, resolved: 2" in sent.body and "Narrative for the mail." in sent.body
    assert len(received) == 1
    body, signature = received[0]["body"], received[0]["headers"]["X-Ongrid-Signature"]
    assert delivery.verify("s3cret-hook", body, signature)
    assert not delivery.verify("another-secret", body, signature)
    assert not delivery.verify("s3cret-hook", body.replace(b"3", b"4"), signature)
    payload = json.loads(body)
    assert payload["report"]["id"] == report.pk and payload["figures"]["incidents"]["mtta_seconds"] == 420.0
    assert report.run.deliveries == {
        "web": "stored",
        "email": "sent to 2 recipient(s)",
        "webhook": "HTTP 204",
    }


def test_a_report_mail_is_written_in_each_recipients_language(
    org, seeded, agents_llm, member, outsider, settings
):
    """A recipient who is a user of the organization gets the mail in their language setting; any
    other address (including one a user of another organization has) gets English."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    User = type(member)
    User.objects.filter(pk=member.pk).update(email="Alice@Example.com")
    member.membership.language = "fr"
    member.membership.save(update_fields=["language"])
    User.objects.filter(pk=outsider.pk).update(email="lead@example.com")
    outsider.membership.language = "es"
    outsider.membership.save(update_fields=["language"])
    agents_llm.add("reporter", text("Narrative for the mail."))
    schedule = make_schedule(
        org, "daily", kind="report", persona="reporter", period="daily", prompt="",
        email_to="alice@example.com, lead@example.com",
    )  # fmt: skip
    report = run_report(schedule)

    by_recipient = {tuple(sent.to): sent for sent in mail.outbox}
    assert set(by_recipient) == {("alice@example.com",), ("lead@example.com",)}
    french, english = by_recipient[("alice@example.com",)], by_recipient[("lead@example.com",)]
    start, end = f"{report.period_start:%Y-%m-%d}", f"{report.period_end:%Y-%m-%d}"
    # Dates in the French way: 2 mars 2026 (docs/i18n.md).
    assert french.subject == "[Ongrid] Rapport quotidien 2 mars 2026 – 3 mars 2026"
    assert "Incidents ouverts : 3, résolus : 2" in french.body and "## Synthèse rédigée" in french.body
    assert "Narrative for the mail." in french.body  # the reporter's own words are kept
    assert english.subject == f"[Ongrid] Daily report {start} – {end}"
    assert "Incidents opened: 3, resolved: 2" in english.body
    assert report.run.deliveries["email"] == "sent to 2 recipient(s)"
