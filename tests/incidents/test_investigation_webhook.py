"""The notification seam's outgoing webhook: a finished investigation POSTs its signed JSON
summary to the organization's URL; a receiver that is down does not fail the investigation."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging

import pytest
from django.utils import timezone

from incidents_app.models import Investigation, InvestigationPolicy
from ops_app.models import Device, Incident
from tests.support.httpd import closed_port_url, recording_receiver
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

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "s3cret-shared-with-the-receiver"


@pytest.fixture(autouse=True)
def auto(settings, agents_llm, org):
    enable_auto(settings)
    Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    agents_llm.add(
        INVESTIGATOR, read_incident(), submit(report({"kind": "device", "name": "db-01"})), answer()
    )
    return agents_llm


def fire(org) -> Investigation:
    """A firing critical incident; the automatic trigger investigates it."""
    incident = Incident.objects.create(
        organization=org, title="Checkout 5xx above 5%", severity="critical", started_at=timezone.now()
    )
    return wait_finished(Investigation.objects.get(incident=incident).pk)


def verifies(body: bytes, signature: str, secret: str) -> bool:
    """What a receiver does: recompute the HMAC over the raw body and compare in constant time."""
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


def test_a_finished_investigation_posts_its_signed_summary(org):
    with recording_receiver() as (url, received):
        InvestigationPolicy.objects.create(organization=org, webhook_url=url, webhook_secret=SECRET)
        investigation = fire(org)
        assert investigation.status == "done", investigation.error
        wait_until(lambda: received, 10, "the webhook to arrive")

    assert len(received) == 1
    post = received[0]
    assert post.path == "/hooks/ongrid"
    assert post.headers["Content-Type"] == "application/json"
    body = json.loads(post.body)
    assert body["event"] == "investigation.finished"
    assert (body["investigation"], body["status"]) == (investigation.pk, "done")
    assert body["incident"]["id"] == investigation.incident_id
    assert body["incident"]["path"] == f"/incidents/{investigation.incident_id}/"
    assert body["summary"] == report({})["summary"]
    assert body["patient_zero"]["name"] == "db-01"
    assert body["confidence"] == 0.8
    signature = post.headers["X-Ongrid-Signature"]
    assert verifies(post.body, signature, SECRET)
    assert not verifies(post.body, signature, "a-wrong-secret")
    assert not verifies(post.body.replace(b"db-01", b"db-02"), signature, SECRET)  # tampered body
    assert SECRET not in post.body.decode()


def test_a_receiver_that_is_down_does_not_fail_the_investigation_nor_hold_the_queue(org, auto, caplog):
    caplog.set_level(logging.WARNING, logger="incidents_app.notify")
    InvestigationPolicy.objects.create(
        organization=org, webhook_url=closed_port_url(), webhook_secret=SECRET, max_concurrent=1
    )
    auto.add(INVESTIGATOR, read_incident(), submit(report({"kind": "device", "name": "db-01"})), answer())
    incidents = [
        Incident.objects.create(
            organization=org, title=f"{name} 5xx above 5%", severity="critical", started_at=timezone.now()
        )
        for name in ("checkout", "payments")
    ]
    # one slot: the second waits queued and starts only after the first one's notification ran
    finished = [wait_finished(Investigation.objects.get(incident=i).pk) for i in incidents]

    assert [f.status for f in finished] == ["done", "done"], [f.error for f in finished]
    assert finished[0].report["summary"] == report({})["summary"]
    wait_until(
        lambda: caplog.text.count("webhook delivery failed") == 2, 10, "both failed deliveries to be logged"
    )
