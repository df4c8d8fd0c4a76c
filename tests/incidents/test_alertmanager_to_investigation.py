"""Alertmanager deliveries over real HTTP end as investigations: a burst of concurrent deliveries
of one new group starts exactly one (PostgreSQL row locks), and the real Alertmanager's webhook
turns a posted alert into an incident with a completed, validated report."""

from __future__ import annotations

import concurrent.futures
import json
import threading
import urllib.error
import urllib.request

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from incidents_app.models import Investigation
from ops_app.models import AlertmanagerReceiver, Device, Incident
from tests.support.alertmanager import running_alertmanager
from tests.support.investigations import (
    INVESTIGATOR,
    answer,
    enable_auto,
    read_incident,
    report,
    submit,
    wait_finished,
)
from tests.support.procs import wait_until
from tests.support.required import IN_CI, require

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
DELIVERIES = 20


@pytest.fixture
def investigator(settings, agents_llm, org):
    """Automatic investigations on, the investigator scripted to read the incident and report
    db-01 (a device of the organization) as patient zero."""
    enable_auto(settings)
    Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    agents_llm.add(
        INVESTIGATOR, read_incident(), submit(report({"kind": "device", "name": "db-01"})), answer()
    )
    return agents_llm


def _group(status: str = "firing") -> bytes:
    alert = {
        "status": status,
        "labels": {"alertname": "CheckoutErrors", "service": "checkout", "severity": "critical"},
        "annotations": {"summary": "checkout 5xx above 5%"},
        "startsAt": "2026-05-01T10:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "fingerprint": "00000000000c0c0c",
    }
    body = {
        "version": "4",
        "groupKey": '{}:{alertname="CheckoutErrors"}',
        "status": status,
        "receiver": "ongrid",
        "alerts": [alert],
    }
    return json.dumps(body).encode()


def test_twenty_concurrent_deliveries_of_a_new_critical_group_start_one_investigation(
    wide_live_server, org, investigator
):
    if connection.vendor != "postgresql" and not IN_CI:
        require(False, "PostgreSQL as the test database (DATABASE_URL=postgres://...)")
    receiver = AlertmanagerReceiver.objects.create(organization=org)
    url = wide_live_server + reverse("alertmanager-webhook", args=[receiver.token])
    body = _group()
    start = threading.Barrier(DELIVERIES)

    def deliver(_: int) -> int:
        request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
        start.wait(timeout=60)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    with concurrent.futures.ThreadPoolExecutor(max_workers=DELIVERIES) as pool:
        statuses = list(pool.map(deliver, range(DELIVERIES)))
    assert statuses.count(200) == DELIVERIES, statuses
    incident = Incident.objects.get(organization=org)
    investigation = wait_finished(Investigation.objects.get(incident=incident).pk)
    assert investigation.status == "done", investigation.error
    assert Investigation.objects.filter(organization=org).count() == 1
    assert len(investigator.seen[INVESTIGATOR]) == 3  # one investigator conversation, not twenty


def test_the_real_alertmanager_delivers_an_alert_that_ends_investigated(
    live_server, org, investigator, tmp_path
):
    receiver = AlertmanagerReceiver.objects.create(organization=org)
    webhook = live_server.url + reverse("alertmanager-webhook", args=[receiver.token])
    with running_alertmanager(webhook, tmp_path) as alertmanager:
        labels = {"alertname": "CheckoutErrors", "service": "checkout", "severity": "critical"}
        alertmanager.post_alert(labels, {"summary": "checkout 5xx above 5%"}, timezone.now())

        def investigated():
            return Investigation.objects.filter(
                incident__organization=org, status__in=["done", "inconclusive", "failed", "stopped"]
            ).first()

        investigation = wait_until(investigated, 60, "the alert to be delivered and investigated")
    assert investigation.status == "done", investigation.error
    assert investigation.trigger == "alertmanager"
    assert investigation.incident.title == "checkout 5xx above 5%"
    assert investigation.report["patient_zero"]["device_id"] == Device.objects.get(name="db-01").pk
    assert investigation.report["evidence"][0]["audit_id"]
    assert Investigation.objects.filter(organization=org).count() == 1
