"""The incident page an on-call engineer trusts (issue 29, findings 1 and 3): a re-run that ends
without a report keeps the good report and says so; what changed before the start is named, and
the offline investigator names the demo's pool-size change as the likely cause; the header shows
colour-coded severity and state, how long it has been open, who acknowledged it and who owns it;
neighbours and devices link to pages a member can open (never the admin's edit form)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from incidents_app import investigations, runner
from incidents_app.changes import diff_lines
from incidents_app.models import Investigation
from ops_app.estate import incidents as incident_states
from ops_app.estate.change_events import Actor
from ops_app.estate.demo import load_demo_estate
from ops_app.models import Device, Incident, TopologyNode
from tests.support.investigations import INVESTIGATOR, answer, read_incident, report, submit, wait_finished

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def inline(settings):
    settings.ONGRID_EXECUTOR = "inline"


@pytest.fixture
def demo(org) -> Incident:
    """The estate `bin/start` shows: pool size 50 → 5 on payments, then checkout's 502s."""
    load_demo_estate(org)
    return Incident.objects.get(organization=org)


@pytest.fixture
def offline(settings, inline):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, llm="offline", openai_api_key="")


def investigate(incident: Incident, user) -> Investigation:
    investigation = investigations.request(incident, user)
    runner.start_queued(incident.organization_id)
    return wait_finished(investigation.pk)


def page_of(client, incident: Incident) -> str:
    response = client.get(reverse("incident-page", args=[incident.pk]))
    assert response.status_code == 200
    return response.content.decode().replace("\xa0", " ")  # timesince's non-breaking spaces


def block(html: str, element_id: str) -> str:
    """The HTML of one element of the page, up to its own closing tag (nested ones counted)."""
    found = re.search(rf'<(\w+) id="{element_id}"', html)
    assert found, element_id
    tag, depth = found.group(1), 0
    for mark in re.finditer(rf"<(/?){tag}\b", html[found.start() :]):
        depth += -1 if mark.group(1) else 1
        if depth == 0:
            return html[found.start() : found.start() + mark.end()]
    raise AssertionError(f"#{element_id} is not closed")


def test_an_inconclusive_rerun_keeps_the_report_with_a_notice_and_the_run_history(
    client, org, member, auditor, agents_llm, inline
):
    Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    incident = Incident.objects.create(
        organization=org, title="Checkout 5xx", severity="critical", started_at=dt.datetime.now(dt.UTC)
    )
    listing = {"action": "List devices", "proposed_write": {"tool": "query_devices", "arguments": {}}}
    good_report = report({"kind": "device", "name": "db-01"}, next_actions=[listing])
    agents_llm.add(INVESTIGATOR, read_incident(), submit(good_report), answer())
    good = investigate(incident, member)
    assert good.status == "done", good.error
    agents_llm.add(INVESTIGATOR, read_incident(), answer("Could not tell this time."))
    rerun = investigate(incident, member)
    assert rerun.status == "inconclusive"

    client.force_login(member)
    html = page_of(client, incident)
    shown = block(html, "investigation")
    assert "Checkout fails because its database host is down." in shown  # the good report stays
    assert "List devices" in shown
    assert f"Investigation #{rerun.pk} ended without a new report; the report below is kept." in shown
    assert "The investigator ended without a valid report." in shown
    assert "Could not tell this time." in shown  # its partial findings, folded
    assert f"Report of investigation #{good.pk}" in shown
    history = html[html.index('id="investigation-history"') :]
    rows = re.findall(r'data-run="(\d+)" data-verdict="(\w+)"', history)
    assert rows == [(str(rerun.pk), "inconclusive"), (str(good.pk), "report")]
    assert history.count("Started by alice") == 2 and "A person" not in history
    assert "audit" not in re.sub(r"<[^>]+>", "", history).split("Verdict", 1)[1]  # members get no audit links

    detail = client.get(f"/api/incidents/{incident.pk}/").json()
    assert (detail["latest_investigation"]["id"], detail["current_investigation"]["id"]) == (
        rerun.pk,
        good.pk,
    )

    client.force_login(auditor)
    html = page_of(client, incident)
    assert f'href="/audit/sessions/{rerun.session_id}/"' in block(
        html, "investigation"
    )  # the notice links it

    # a failed run after that still keeps it, and the kept report's proposed change is the one sent
    failed = investigations.request(incident, member)
    Investigation.objects.filter(pk=failed.pk).update(status="running")
    investigations.finish(failed.pk, "failed", error="The model endpoint answered 503.")
    client.force_login(member)
    shown = block(page_of(client, incident), "investigation")
    assert "Checkout fails because its database host is down." in shown
    assert "The model endpoint answered 503." in shown and 'class="badge verdict-failed"' in shown
    sent = client.post(reverse("incident-send-action", args=[incident.pk, 0]), follow=True)
    assert "query_devices changes nothing" in sent.content.decode()  # the kept report's action, not a 404


def test_without_any_report_the_failed_run_is_told_and_no_report_is_invented(client, org, member):
    incident = Incident.objects.create(
        organization=org, title="Disk", severity="high", started_at=dt.datetime.now(dt.UTC)
    )
    failed = investigations.request(incident, member)
    Investigation.objects.filter(pk=failed.pk).update(status="running")
    investigations.finish(failed.pk, "failed", error="boom")
    client.force_login(member)
    shown = block(page_of(client, incident), "investigation")
    assert f"Investigation #{failed.pk} ended without a report." in shown and "boom" in shown
    assert "Root cause" not in shown


def test_what_changed_names_the_pool_size_change_six_minutes_before_the_start(client, member, demo):
    client.force_login(member)
    html = page_of(client, demo)
    changed = html[html.index('id="what-changed"') : html.index('id="investigation"')]
    likely = re.search(r'<p class="likely-change">(.*?)</p>', changed, re.S).group(1)
    assert "jonas changed topology node payments" in likely
    assert "db_pool_size 50 → 5" in likely and "6 minutes before the start" in likely
    # the routine deploy six hours ago is outside the window; the change links to payments' device
    assert "7.3.2" not in changed and "DiskAlmostFull" not in changed
    payments = Device.objects.get(organization=demo.organization, name="payments-01")
    assert f'href="/devices/{payments.pk}/"' in changed
    assert "Not investigated yet." in html  # shown before any investigation has run


def test_the_brief_and_the_offline_report_name_the_change_as_the_likely_cause(client, member, demo, offline):
    assert "db_pool_size 50 \\u2192 5" in runner.brief(demo)  # the investigator is told what changed

    investigation = investigate(demo, member)

    assert investigation.status == "done", investigation.error
    found = investigation.report
    assert found["root_cause"].startswith("Likely cause: jonas changed topology node payments")
    assert "db_pool_size 50 → 5" in found["root_cause"] and "PaymentsDbPoolExhausted" in found["root_cause"]
    assert (found["patient_zero"]["kind"], found["patient_zero"]["name"]) == ("topology_node", "payments")
    assert "offline model" in found["summary"]
    client.force_login(member)
    shown = block(page_of(client, demo), "investigation")
    assert "Not established" not in shown and "Likely cause: jonas" in shown


def test_header_badges_duration_owner_acknowledger_and_links(client, org, member, demo, offline):
    investigate(demo, member)
    incident_states.acknowledge(demo.pk, org.pk, Actor(user_id=member.pk, name="alice"))
    client.force_login(member)
    html = page_of(client, demo)

    facts = re.search(r'<p class="incident-facts">(.*?)</p>', html, re.S).group(1)
    assert 'class="badge severity-critical">Critical<' in facts
    assert 'class="badge state-acknowledged">Acknowledged<' in facts
    assert "acknowledged, open for 14 minutes" in facts
    assert "acknowledged by alice" in facts and "owner: team orders, payments" in facts

    shown = block(html, "investigation")
    assert "/admin/" not in html.split('id="main"', 1)[1]  # a member never lands on the admin form
    checkout = Device.objects.get(organization=org, name="checkout-01")
    postgres = Device.objects.get(organization=org, name="pg-01")
    assert f'<a href="/devices/{checkout.pk}/"><strong>checkout</strong></a>' in shown  # called by
    assert f'<a href="/devices/{postgres.pk}/"><strong>postgres</strong></a>' in shown  # calls
    assert '<a href="/incidents/?service=psp"><strong>psp</strong></a>' in shown  # no device: its incidents

    device = client.get(reverse("device-page", args=[checkout.pk])).content.decode()
    assert "checkout-01" in device and "192.0.2.21" in device and f"/incidents/{demo.pk}/" in device
    listed = client.get(reverse("incident-list") + "?service=payments").content.decode()
    assert f"/incidents/{demo.pk}/" in listed
    assert (
        f"/incidents/{demo.pk}/" not in client.get(reverse("incident-list") + "?service=psp").content.decode()
    )


def test_resolved_incidents_say_how_long_they_took_and_devices_stay_in_their_organization(
    client, org, member, outsider
):
    start = dt.datetime.now(dt.UTC) - dt.timedelta(hours=2)
    device = Device.objects.create(organization=org, name="db-01")
    TopologyNode.objects.create(organization=org, name="db", kind="database", device=device)
    incident = Incident.objects.create(
        organization=org, title="DB", severity="info", started_at=start, device=device,
        status="resolved", resolved_at=start + dt.timedelta(minutes=42),
    )  # fmt: skip
    client.force_login(member)
    facts = re.search(r'<p class="incident-facts">(.*?)</p>', page_of(client, incident), re.S).group(1)
    assert "resolved after 42 minutes" in facts and "state-resolved" in facts
    assert "No change events" in page_of(client, incident)
    client.force_login(outsider)
    assert client.get(reverse("device-page", args=[device.pk])).status_code == 404


def test_diff_lines_name_each_changed_key_once():
    before = {"labels": {"version": "2.4.1", "db_pool_size": "50", "team": "payments"}}
    after = {"labels": {"version": "2.5.0", "db_pool_size": "5", "team": "payments"}}
    assert diff_lines(before, after) == ["db_pool_size 50 → 5", "version 2.4.1 → 2.5.0"]
    assert diff_lines({"replicas": 3}, {"replicas": 3}) == []


def _luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_every_badge_colour_pair_reads_at_aa_contrast_in_both_themes():
    css = (Path(settings.BASE_DIR) / "static" / "css" / "incidents.css").read_text()
    light, dark = css.split("@media (prefers-color-scheme: dark)", 1)
    for theme in (light, dark):
        colours = dict(re.findall(r"--([a-z-]+)-bg: (#[0-9a-f]{6})", theme))
        texts = dict(re.findall(r"--([a-z-]+)-fg: (#[0-9a-f]{6})", theme))
        assert set(colours) == set(texts) and len(colours) == 6
        for name, background in colours.items():
            high, low = sorted((_luminance(background), _luminance(texts[name])), reverse=True)
            assert (high + 0.05) / (low + 0.05) >= 4.5, name


def test_the_page_speaks_the_users_language(client, member, demo):
    client.force_login(member)
    response = client.get(reverse("incident-page", args=[demo.pk]), HTTP_ACCEPT_LANGUAGE="fr")
    html = response.content.decode().replace("\xa0", " ")
    assert "Ce qui a changé" in html and "Cause probable :" in html
    assert "6 minutes avant le début" in html and "en alerte depuis 14 minutes" in html
