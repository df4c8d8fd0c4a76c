"""Findings written back to the paging tool when an investigation ends (incidents_app.writeback,
incidents_app.writeback_outbox), against the fake vendor APIs: once per investigation, as each
source's own note or annotation, retried with backoff and shown on the incident page, never
carrying the key or what the vendor answered."""

from __future__ import annotations

import asyncio
import logging

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.urls import reverse

from audit_app.models import AuditLog
from incidents_app import writeback_outbox
from incidents_app.models import SourceWriteback
from ongrid_site.asgi import application
from tests.support.alert_apis import OG_ALERT, PD_INCIDENT, grafana_source, opsgenie_source, pagerduty_source
from tests.support.procs import wait_until
from tests.support.writebacks import end, finished_investigation, grafana_alert, paged_incident, wait_row

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("inline_writeback")]

SUMMARY = "Checkout fails because its database host is down."
ROOT_CAUSE = "db-01 stopped answering; checkout's queries time out."


def drain(now=None) -> int:
    return async_to_sync(writeback_outbox.drain_once)(now)


def test_a_finished_pagerduty_investigation_becomes_one_note_with_findings_and_link(org, fake_pagerduty):
    source = pagerduty_source(org, fake_pagerduty)
    incident = paged_incident(org, source, PD_INCIDENT)
    investigation = finished_investigation(incident)

    end(investigation)
    wait_until(lambda: fake_pagerduty.notes(PD_INCIDENT), 20.0, "the note")
    end(investigation)  # the same investigation announced again (a retried runner, a reaper)
    drain()

    [note] = fake_pagerduty.notes(PD_INCIDENT)
    assert SUMMARY in note and ROOT_CAUSE in note
    assert "Confidence: high (80%)" in note
    assert f"http://127.0.0.1:8000/incidents/{incident.pk}/" in note
    assert "Causal chain" not in note  # the summary setting, not the full report
    assert SourceWriteback.objects.get().status == SourceWriteback.Status.DONE


def test_full_adds_the_rest_of_the_report(org, fake_pagerduty):
    source = pagerduty_source(org, fake_pagerduty, writeback="full")
    incident = paged_incident(org, source, PD_INCIDENT)

    end(finished_investigation(incident))
    [note] = wait_until(lambda: fake_pagerduty.notes(PD_INCIDENT), 20.0, "the note")

    assert "Patient zero: device db-01" in note
    assert "Causal chain:\n- db-01 down\n- checkout queries time out" in note
    assert "- the alert fired at 10:00, 12% 5xx" in note
    assert "Next actions:\n- Restart the database service on db-01" in note


def test_off_writes_nothing(org, fake_pagerduty):
    source = pagerduty_source(org, fake_pagerduty, writeback="off")
    incident = paged_incident(org, source, PD_INCIDENT)

    end(finished_investigation(incident))
    drain()

    assert not SourceWriteback.objects.exists()
    assert fake_pagerduty.requests == []


def test_a_failed_investigation_says_so_with_its_first_findings(org, fake_opsgenie):
    source = opsgenie_source(org, fake_opsgenie)
    incident = paged_incident(org, source, OG_ALERT)

    end(finished_investigation(incident, status="failed"))
    [note] = wait_until(lambda: fake_opsgenie.notes(OG_ALERT), 20.0, "the note")

    assert "ended without a report (Failed)" in note
    assert "db-01 stopped answering at 10:02" in note
    assert fake_opsgenie.requests[0].path == f"/v2/alerts/{OG_ALERT}/notes"


def test_grafana_annotation_on_the_alerts_panel_or_the_organization(org, fake_grafana):
    source = grafana_source(org, fake_grafana)
    on_panel = paged_incident(org, source, fingerprint="grafana-group-1")
    grafana_alert(on_panel, __dashboardUid__="checkout-dash", __panelId__="7", summary="5xx")
    organization_wide = paged_incident(org, source, fingerprint="grafana-group-2")

    end(finished_investigation(on_panel))
    end(finished_investigation(organization_wide))
    wait_until(lambda: len(fake_grafana.annotations) == 2, 20.0, "two annotations")

    by_incident = {a["tags"][1]: a for a in fake_grafana.annotations}
    panel = by_incident[f"incident-{on_panel.pk}"]
    assert (panel["dashboardUID"], panel["panelId"]) == ("checkout-dash", 7)
    assert SUMMARY in panel["text"] and "ongrid" in panel["tags"]
    assert "dashboardUID" not in by_incident[f"incident-{organization_wide.pk}"]


def test_failures_are_retried_with_backoff_and_shown_on_the_incident_page(
    org, member, client, fake_pagerduty
):
    source = pagerduty_source(org, fake_pagerduty)
    incident = paged_incident(org, source, PD_INCIDENT)
    fake_pagerduty.fail_next(2, status=503)
    client.force_login(member)
    page = reverse("incident-page", args=[incident.pk])

    end(finished_investigation(incident))
    first = wait_row(incident, attempts=1)
    assert (first.status, first.last_error) == ("pending", "HTTP 503")
    assert (first.next_attempt_at - first.created_at).total_seconds() >= 29
    shown = client.get(page).content.decode()
    assert "Write-back to PagerDuty failed (HTTP 503), retrying at" in shown

    assert drain(first.next_attempt_at) == 0  # the second attempt: 503 again
    second = SourceWriteback.objects.get()
    assert second.attempts == 2 and second.next_attempt_at > first.next_attempt_at
    assert drain(second.next_attempt_at) == 1

    assert len(fake_pagerduty.notes(PD_INCIDENT)) == 1
    assert SourceWriteback.objects.get().status == "done"
    assert "Written back to PagerDuty ✓" in client.get(page).content.decode()
    audit = list(AuditLog.objects.filter(tool="alert_source_writeback").order_by("started_at", "pk"))
    assert [(a.status, a.error) for a in audit] == [("error", "HTTP 503"), ("error", "HTTP 503"), ("ok", "")]


def test_a_source_still_down_after_the_bound_is_given_up_with_the_reason(org, member, client, fake_pagerduty):
    source = pagerduty_source(org, fake_pagerduty)
    incident = paged_incident(org, source, PD_INCIDENT)
    fake_pagerduty.refuse_connections()

    end(finished_investigation(incident))
    row = wait_row(incident, attempts=1)
    assert row.last_error == "ConnectError"
    drain(row.created_at + writeback_outbox.GIVE_UP_AFTER)

    row.refresh_from_db()
    assert (row.status, row.attempts) == ("failed", 2)
    client.force_login(member)
    shown = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert "Write-back to PagerDuty failed (ConnectError); given up." in shown


def test_a_wrong_key_is_not_retried_and_no_key_reaches_logs_rows_or_audit(org, fake_pagerduty, caplog):
    secret = "pd-rotated-key-DO-NOT-LOG"
    source = pagerduty_source(org, fake_pagerduty, api_key=secret)
    incident = paged_incident(org, source, PD_INCIDENT)
    caplog.set_level(logging.DEBUG)

    end(finished_investigation(incident))
    row = wait_row(incident, status="failed")

    assert (row.last_error, row.attempts) == ("HTTP 401", 1)
    assert fake_pagerduty.requests[0].status == 401
    assert secret not in caplog.text
    assert '"code": 2006' not in caplog.text  # PagerDuty's answer body is not logged either
    rows = [str(v) for v in SourceWriteback.objects.values().get().values()]
    assert not any(secret in value for value in rows)
    for audit in AuditLog.objects.filter(tool="alert_source_writeback"):
        assert secret not in audit.arguments + audit.result + audit.error


def test_an_egress_refusal_is_recorded_as_refused_and_the_eu_host_is_the_one_dialled(
    org, member, client, fake_dns
):
    fake_dns["api.eu.opsgenie.com"] = ["10.20.30.40"]  # private: the policy refuses it
    source = opsgenie_source(org, None, region="eu")
    incident = paged_incident(org, source, OG_ALERT)

    end(finished_investigation(incident))
    row = wait_row(incident, status="refused")

    assert (row.last_error, row.attempts) == ("EgressRefused", 1)
    client.force_login(member)
    shown = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert "Write-back to Opsgenie refused by the egress policy" in shown


def test_an_incident_without_a_source_or_key_queues_nothing(org, fake_pagerduty):
    keyless = pagerduty_source(org, fake_pagerduty, api_key="")
    end(finished_investigation(paged_incident(org, keyless, PD_INCIDENT)))
    assert not SourceWriteback.objects.exists()


def test_an_auditor_finds_each_attempt_in_the_audit(org, auditor, client, fake_pagerduty):
    source = pagerduty_source(org, fake_pagerduty)
    incident = paged_incident(org, source, PD_INCIDENT)

    end(finished_investigation(incident))
    wait_row(incident, status="done")
    client.force_login(auditor)
    wait_until(lambda: AuditLog.objects.filter(tool="alert_source_writeback").exists(), 20.0, "the audit row")

    listed = client.get("/api/audit/tool-calls/", {"tool": "alert_source_writeback"}).json()
    [entry] = listed["results"]
    assert entry["status"] == "ok" and entry["tool_class"] == "write"
    page = client.get(reverse("audit-call", args=[entry["id"]]))
    assert page.status_code == 200 and "alert_source_writeback" in page.content.decode()


async def test_an_open_incident_page_redraws_the_block_when_the_write_lands(
    org, member, client, fake_pagerduty
):
    source = await sync_to_async(pagerduty_source)(org, fake_pagerduty)
    incident = await sync_to_async(paged_incident)(org, source, PD_INCIDENT)
    await sync_to_async(client.force_login)(member)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    socket = WebsocketCommunicator(
        application,
        f"/ws/incidents/{incident.pk}/",
        headers=[(b"host", b"127.0.0.1"), (b"origin", b"http://127.0.0.1"), cookie],
    )
    assert (await socket.connect(timeout=5))[0]
    first = await socket.receive_from(timeout=20)
    assert 'id="writebacks"' in first and "Written back" not in first

    await sync_to_async(end)(await sync_to_async(finished_investigation)(incident))

    async with asyncio.timeout(20):
        while "Written back to PagerDuty ✓" not in (frame := await socket.receive_from(timeout=20)):
            pass
    assert 'id="writebacks"' in frame and 'hx-swap-oob="true"' in frame
    await socket.disconnect()
