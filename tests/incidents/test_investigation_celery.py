"""The scale-out shape: an investigation started by an Alertmanager delivery runs on a real
Celery worker (over the test's Redis) and ends `done` with its report."""

from __future__ import annotations

import dataclasses
import json
import signal
import time

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from chat_app import services
from chat_app.models import ChatSession
from fakes.openai_server import held
from incidents_app.models import Investigation
from ops_app.models import AlertmanagerReceiver, Device, Incident
from tests.support.celery_worker import celery_worker_process
from tests.support.investigations import INVESTIGATOR, answer, read_incident, report, submit, wait_finished
from tests.support.required import require

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(settings, fake_llm, agents_llm, tmp_path):
    require(bool(settings.CONFIG.redis_url), "Redis (REDIS_URL) for the Celery executor")
    settings.CONFIG = dataclasses.replace(settings.CONFIG, auto_investigate=True)
    settings.ONGRID_EXECUTOR = "celery"
    with celery_worker_process(fake_llm.base_url, str(tmp_path)) as proc:
        yield proc


def test_an_alertmanager_delivery_is_investigated_on_a_celery_worker(client, org, agents_llm, worker):
    db_host = Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    agents_llm.add(
        INVESTIGATOR, read_incident(), submit(report({"kind": "device", "name": "db-01"})), answer()
    )
    receiver = AlertmanagerReceiver.objects.create(organization=org)
    alert = {
        "status": "firing",
        "labels": {"alertname": "CheckoutErrors", "service": "checkout", "severity": "critical"},
        "annotations": {"summary": "checkout 5xx above 5%"},
        "startsAt": timezone.now().isoformat().replace("+00:00", "Z"),
        "endsAt": "0001-01-01T00:00:00Z",
        "fingerprint": "fp-checkout",
    }
    body = {"version": "4", "groupKey": '{}:{service="checkout"}', "status": "firing", "alerts": [alert]}
    response = client.post(
        reverse("alertmanager-webhook", args=[receiver.token]),
        data=json.dumps(body),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    incident = Incident.objects.get(pk=response.json()["incidents"][0])

    # The delivery only queued it on Redis: this process runs no investigation in celery mode.
    investigation = wait_finished(Investigation.objects.get(incident=incident).pk, timeout=90)

    assert settings.ONGRID_EXECUTOR == "celery"
    assert investigation.status == "done", investigation.error
    assert investigation.trigger == "alertmanager"
    assert investigation.report["patient_zero"]["device_id"] == db_host.pk
    assert investigation.report["summary"] == report({})["summary"]
    session = ChatSession.objects.get(pk=investigation.session_id)
    assert (session.kind, session.status) == ("investigation", "completed")
    assert len(agents_llm.seen[INVESTIGATOR]) == 3  # the worker's model calls reached the fake LLM


def test_a_worker_killed_mid_investigation_leaves_it_failed_by_the_reaper_and_re_investigable(
    client, org, member, fake_llm, agents_llm, worker
):
    agents_llm.add(INVESTIGATOR, held(120))
    incident = Incident.objects.create(  # critical and firing: investigated automatically
        organization=org, title="Checkout 5xx", severity="critical", started_at=timezone.now()
    )
    client.force_login(member)
    wait_until(lambda: len(fake_llm.chat_requests) >= 1, "the investigator never reached the model")
    investigation = Investigation.objects.get(incident=incident)
    assert investigation.status == "running"

    worker.send_signal(signal.SIGKILL)  # the process dies with the model call in flight
    worker.wait(timeout=20)
    assert services.reap_orphans() >= 1

    investigation.refresh_from_db()
    assert investigation.status == "failed" and "reaper" in investigation.error
    assert ChatSession.objects.get(pk=investigation.session_id).status == "failed"
    again = client.post(f"/api/incidents/{incident.pk}/investigate/")
    assert again.status_code == 202 and again.json()["id"] != investigation.pk


def wait_until(condition, why: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, why
        time.sleep(0.05)
