"""The trigger policy's optional parts: re-running on escalation inside the cooldown, and the
daily token budget after which new incidents wait for a person's "Investigate"."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.urls import reverse
from django.utils import timezone

from incidents_app.models import Investigation, InvestigationPolicy
from ops_app.models import AlertmanagerReceiver, Incident
from tests.support.investigations import INVESTIGATOR, answer, enable_auto, wait_finished

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def auto(settings, agents_llm):
    enable_auto(settings)
    return agents_llm


@pytest.fixture
def receiver(org):
    return AlertmanagerReceiver.objects.create(organization=org)


def _alert(name: str, severity: str, starts_at: dt.datetime) -> dict:
    return {
        "status": "firing",
        "labels": {"alertname": name, "service": "checkout", "severity": severity},
        "annotations": {"summary": "checkout 5xx above 5%"},
        "startsAt": starts_at.isoformat().replace("+00:00", "Z"),
        "endsAt": "0001-01-01T00:00:00Z",
        "fingerprint": f"fp-{name}",
    }


def deliver(client, receiver, *alerts: dict) -> Incident:
    """One delivery of the checkout group carrying `alerts` (Alertmanager re-sends the whole group)."""
    body = {
        "version": "4",
        "groupKey": '{}:{service="checkout"}',
        "status": "firing",
        "receiver": "ongrid",
        "commonLabels": {"service": "checkout"},
        "commonAnnotations": {"summary": "checkout 5xx above 5%"},
        "alerts": list(alerts),
    }
    response = client.post(
        reverse("alertmanager-webhook", args=[receiver.token]),
        data=json.dumps(body),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return Incident.objects.get(pk=response.json()["incidents"][0])


def investigated_once(client, receiver, auto, *alerts: dict) -> Incident:
    auto.add(INVESTIGATOR, answer("nothing conclusive"))
    incident = deliver(client, receiver, *alerts)
    first = Investigation.objects.get(incident=incident)
    assert wait_finished(first.pk).status == "inconclusive"
    return incident


@pytest.mark.parametrize("rerun", [True, False])
def test_a_severity_rise_inside_the_cooldown_is_reinvestigated_only_when_the_policy_says_so(
    client, org, receiver, auto, rerun
):
    InvestigationPolicy.objects.create(organization=org, rerun_on_escalation=rerun)
    started = timezone.now() - dt.timedelta(minutes=5)
    errors = _alert("CheckoutErrors", "high", started)
    incident = investigated_once(client, receiver, auto, errors)

    auto.add(INVESTIGATOR, answer("worse now"))
    deliver(client, receiver, {**errors, "labels": {**errors["labels"], "severity": "critical"}})

    rows = list(Investigation.objects.filter(incident=incident).order_by("created_at", "pk"))
    if not rerun:
        assert len(rows) == 1  # inside the cooldown, and re-running is off
        return
    assert [r.trigger for r in rows] == ["alertmanager", "escalation"]
    assert rows[1].severity == "critical"
    assert wait_finished(rows[1].pk).status == "inconclusive"


@pytest.mark.parametrize("rerun", [True, False])
def test_a_new_alert_in_the_group_inside_the_cooldown_is_reinvestigated_only_when_the_policy_says_so(
    client, org, receiver, auto, rerun
):
    InvestigationPolicy.objects.create(organization=org, rerun_on_escalation=rerun)
    errors = _alert("CheckoutErrors", "critical", timezone.now() - dt.timedelta(minutes=5))
    incident = investigated_once(client, receiver, auto, errors)

    auto.add(INVESTIGATOR, answer("the database too"))
    latency = _alert("CheckoutLatency", "critical", timezone.now())
    deliver(client, receiver, errors, latency)

    rows = list(Investigation.objects.filter(incident=incident).order_by("created_at", "pk"))
    assert incident.alerts.count() == 2
    if not rerun:
        assert len(rows) == 1
        return
    assert [r.trigger for r in rows] == ["alertmanager", "escalation"]
    assert wait_finished(rows[1].pk).status == "inconclusive"
    # the same group re-sent again, nothing new and nothing worse: no third investigation
    deliver(client, receiver, errors, latency)
    assert Investigation.objects.filter(incident=incident).count() == 2


def test_a_plain_resend_inside_the_cooldown_is_not_an_escalation(client, org, receiver, auto):
    InvestigationPolicy.objects.create(organization=org, rerun_on_escalation=True)
    errors = _alert("CheckoutErrors", "critical", timezone.now() - dt.timedelta(minutes=5))
    incident = investigated_once(client, receiver, auto, errors)
    deliver(client, receiver, errors)
    assert Investigation.objects.filter(incident=incident).count() == 1


def _spent_today(org, tokens: int) -> None:
    """Usage as the budget counts it: the `tokens` of the organization's investigations created
    today (set from the model's usage when each one finishes)."""
    earlier = Incident.objects.create(
        organization=org, title="earlier today", severity="critical", started_at=timezone.now()
    )
    Investigation.objects.create(
        organization=org, incident=earlier, trigger="alertmanager", status="done", tokens=tokens
    )


@pytest.mark.parametrize(("spent", "investigated"), [(1_001, False), (999, True)])
def test_past_the_daily_token_budget_a_firing_incident_waits_for_a_person(
    client, org, member, receiver, auto, spent, investigated
):
    InvestigationPolicy.objects.create(organization=org, daily_max_tokens=1_000)
    _spent_today(org, spent)
    auto.add(INVESTIGATOR, answer("nothing"))

    incident = deliver(client, receiver, _alert("CheckoutErrors", "critical", timezone.now()))

    assert Investigation.objects.filter(incident=incident).exists() is investigated
    if investigated:
        wait_finished(Investigation.objects.get(incident=incident).pk)
        return
    client.force_login(member)  # the human "Investigate" is not bound by the budget
    response = client.post(f"/api/incidents/{incident.pk}/investigate/")
    assert response.status_code == 202, response.content
    row = Investigation.objects.get(incident=incident)
    assert (row.trigger, row.requested_by_id) == ("manual", member.pk)
    wait_finished(row.pk)


def test_tokens_of_finished_investigations_count_against_the_budget(client, org, receiver, auto):
    """The budget is fed by real runs: the fake model's reported usage is stored on the row."""
    InvestigationPolicy.objects.create(organization=org, daily_max_tokens=1)
    incident = investigated_once(client, receiver, auto, _alert("CheckoutErrors", "critical", timezone.now()))
    assert Investigation.objects.get(incident=incident).tokens > 1

    other = _alert("PaymentsDown", "critical", timezone.now())
    other["labels"] = {**other["labels"], "service": "payments"}
    payments = _deliver_group(client, receiver, "payments", other)
    assert not Investigation.objects.filter(incident=payments).exists()


def _deliver_group(client, receiver, group: str, alert: dict) -> Incident:
    body = {
        "version": "4",
        "groupKey": f'{{}}:{{service="{group}"}}',
        "status": "firing",
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
