"""Automatic investigations, end to end: Alertmanager delivery → incident → investigation run by
the investigator persona against the fake LLM through the real SDK → stored report."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import threading

import pytest
from django.urls import reverse

from audit_app.models import AuditLog
from chat_app.models import ChatSession
from incidents_app.models import Investigation, InvestigationPolicy
from ops_app.models import AlertmanagerReceiver, Device, Incident
from tests.support.investigations import (
    INVESTIGATOR,
    answer,
    enable_auto,
    last_tool_result,
    read_incident,
    report,
    submit,
    wait_finished,
)
from tests.support.procs import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def auto(settings, agents_llm):
    enable_auto(settings)
    return agents_llm


@pytest.fixture
def receiver(org):
    return AlertmanagerReceiver.objects.create(organization=org)


@pytest.fixture
def db_host(org):
    return Device.objects.create(organization=org, name="db-01", address="10.0.0.9")


def deliver(client, receiver, *, group="checkout", severity="critical", status="firing"):
    alert = {
        "status": status,
        "labels": {"alertname": f"{group}Errors", "service": group, "severity": severity},
        "annotations": {"summary": f"{group} 5xx above 5%"},
        "startsAt": T0.isoformat().replace("+00:00", "Z"),
        "endsAt": "2026-05-01T10:30:00Z" if status == "resolved" else "0001-01-01T00:00:00Z",
        "fingerprint": f"fp-{group}",
    }
    body = {
        "version": "4",
        "groupKey": f'{{}}:{{alertname="{group}Errors"}}',
        "status": status,
        "receiver": "ongrid",
        "commonLabels": alert["labels"],
        "commonAnnotations": alert["annotations"],
        "alerts": [alert],
    }
    response = client.post(
        reverse("alertmanager-webhook", args=[receiver.token]),
        data=json.dumps(body),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return Incident.objects.get(pk=response.json()["incidents"][0])


def test_a_firing_critical_group_is_investigated_once_with_a_validated_report(
    client, receiver, db_host, auto
):
    auto.add(INVESTIGATOR, read_incident(), submit(report({"kind": "device", "name": "DB-01"})), answer())

    incident = deliver(client, receiver)
    investigation = wait_finished(Investigation.objects.get(incident=incident).pk)

    assert investigation.status == "done", investigation.error
    assert investigation.trigger == "alertmanager"
    pz = investigation.report["patient_zero"]
    assert (pz["name"], pz["device_id"]) == ("db-01", db_host.pk)  # resolved to the organization's device
    evidence = investigation.report["evidence"][0]
    audit = AuditLog.objects.get(pk=evidence["audit_id"])
    assert (audit.tool, audit.tool_call_id) == ("get_incident_detail", "c1")
    assert investigation.confidence == 0.8
    session = ChatSession.objects.get(pk=investigation.session_id)
    assert (session.kind, session.agent_id, session.user_id, session.status) == (
        "investigation",
        INVESTIGATOR,
        None,
        "completed",
    )
    first = auto.seen[INVESTIGATOR][0]
    assert "submit_report" in first.tool_names and "AgentTool" not in first.tool_names
    assert f"incident #{incident.pk}" in first.messages[1]["content"]

    deliver(client, receiver)  # Alertmanager re-sends the group inside the cooldown
    assert Investigation.objects.filter(incident__organization=incident.organization).count() == 1


def test_severity_below_the_policy_threshold_is_not_investigated(client, org, receiver):
    deliver(client, receiver, group="cache", severity="warning")  # default threshold: high
    InvestigationPolicy.objects.create(organization=org, min_severity="critical")
    deliver(client, receiver, group="queue", severity="high")
    assert not Investigation.objects.exists()


def test_a_report_that_does_not_validate_is_returned_then_accepted(client, receiver, db_host, auto):
    bad = report({"kind": "device", "name": "db-01"}, evidence_call="made-up")
    auto.add(
        INVESTIGATOR,
        read_incident(),
        submit(bad, call_id="r1"),
        submit(report({"kind": "device", "name": "db-01"}), call_id="r2"),
        answer(),
    )
    incident = deliver(client, receiver)
    investigation = wait_finished(Investigation.objects.get(incident=incident).pk)

    assert investigation.status == "done", investigation.error
    told = last_tool_result(auto.seen[INVESTIGATOR][2])
    assert "'made-up' is not one of your tool calls" in told and "2 attempt(s) left" in told


def test_a_run_without_a_report_is_inconclusive_with_its_partial_findings(client, receiver, auto):
    auto.add(INVESTIGATOR, read_incident(), answer("Checkout errors started at 10:00; cause unknown."))
    incident = deliver(client, receiver)
    investigation = wait_finished(Investigation.objects.get(incident=incident).pk)
    assert investigation.status == "inconclusive"
    assert investigation.report == {}
    assert "cause unknown" in investigation.partial_findings


def test_the_fourth_investigation_waits_for_a_free_slot(client, org, receiver, auto):
    InvestigationPolicy.objects.create(organization=org, max_concurrent=3)
    release = threading.Event()

    def held(request):
        release.wait(timeout=30)
        return answer("nothing found")

    auto.add(INVESTIGATOR, *[held] * 4)
    incidents = [deliver(client, receiver, group=g) for g in ("a", "b", "c", "d")]
    try:
        wait_until(lambda: len(auto.seen[INVESTIGATOR]) == 3, 20, "three investigators asking")
        states = {i.incident.title[:1]: i.status for i in Investigation.objects.select_related("incident")}
        assert sorted(states.values()) == ["queued", "running", "running", "running"]
        assert states["d"] == "queued"
    finally:
        release.set()
    for incident in incidents:
        assert wait_finished(Investigation.objects.get(incident=incident).pk).status == "inconclusive"


def test_the_daily_budget_leaves_later_incidents_for_a_human(client, org, receiver, auto):
    InvestigationPolicy.objects.create(organization=org, daily_max_investigations=1)
    auto.add(INVESTIGATOR, answer("nothing"))
    first = deliver(client, receiver, group="a")
    second = deliver(client, receiver, group="b")
    wait_finished(Investigation.objects.get(incident=first).pk)
    assert not Investigation.objects.filter(incident=second).exists()


def test_resolving_the_incident_mid_run_stops_the_investigation(client, receiver, auto):
    asked = threading.Event()
    release = threading.Event()

    def held(request):
        asked.set()
        release.wait(timeout=30)
        return answer("too late")

    auto.add(INVESTIGATOR, held)
    incident = deliver(client, receiver)
    try:
        assert asked.wait(timeout=20)
        deliver(client, receiver, status="resolved")
        session_id = Investigation.objects.get(incident=incident).session_id
        assert ChatSession.objects.get(pk=session_id).stop_requested_at is not None
        release.set()
        investigation = wait_finished(Investigation.objects.get(incident=incident).pk)
    finally:
        release.set()
    assert investigation.status == "stopped"
    assert "resolved" in investigation.error
    assert ChatSession.objects.get(pk=investigation.session_id).status == "killed"


def test_the_offline_model_investigates_from_real_tool_results(client, settings, receiver, db_host):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, llm="offline")
    incident = deliver(client, receiver)
    investigation = wait_finished(Investigation.objects.get(incident=incident).pk)
    assert investigation.status == "done", investigation.error
    assert investigation.report["confidence_word"] == "low"
    assert "offline model" in investigation.report["summary"]
    assert investigation.report["patient_zero"] == {"kind": "service", "name": "checkout"}
    assert (
        AuditLog.objects.get(pk=investigation.report["evidence"][0]["audit_id"]).tool == "get_incident_detail"
    )
