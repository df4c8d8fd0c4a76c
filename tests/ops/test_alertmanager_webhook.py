from __future__ import annotations

import copy
import datetime as dt
import json

import pytest
from django.urls import reverse
from django.utils import timezone

from ops_app.models import Alert, AlertmanagerReceiver, ChangeEvent, Device, Incident
from tests.support.alertmanager import running_alertmanager
from tests.support.procs import wait_until

T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)


def _alert(status="firing", starts=T0, ends=None, fingerprint="f00d", **labels):
    return {
        "status": status,
        "labels": {"alertname": "CheckoutErrors", "service": "checkout", "severity": "critical", **labels},
        "annotations": {"summary": "Checkout 5xx above 5%", "description": "See the dashboard."},
        "startsAt": starts.isoformat().replace("+00:00", "Z"),
        "endsAt": (ends.isoformat().replace("+00:00", "Z") if ends else "0001-01-01T00:00:00Z"),
        "generatorURL": "http://prometheus.example/graph?g0.expr=up",
        "fingerprint": fingerprint,
    }


def _payload(*alerts, group_key='{}:{alertname="CheckoutErrors"}', status=None):
    alerts = list(alerts) or [_alert()]
    return {
        "version": "4",
        "groupKey": group_key,
        "truncatedAlerts": 0,
        "status": status or ("firing" if any(a["status"] == "firing" for a in alerts) else "resolved"),
        "receiver": "ongrid",
        "groupLabels": {"alertname": "CheckoutErrors"},
        "commonLabels": {"alertname": "CheckoutErrors", "service": "checkout"},
        "commonAnnotations": {"summary": "Checkout 5xx above 5%"},
        "externalURL": "http://alertmanager.example",
        "alerts": alerts,
    }


@pytest.fixture
def receiver(org):
    return AlertmanagerReceiver.objects.create(organization=org)


def _post(client, receiver, body):
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.post(
        reverse("alertmanager-webhook", args=[receiver.token]), data=data, content_type="application/json"
    )


@pytest.mark.django_db
def test_firing_delivery_creates_an_incident_with_its_alerts(client, org, receiver):
    device = Device.objects.create(organization=org, name="checkout-01", address="10.0.0.5")
    second = _alert(fingerprint="beef", instance="10.0.0.5:9100", severity="warning")
    response = _post(client, receiver, _payload(_alert(), second))
    assert response.status_code == 200, response.content
    incident = Incident.objects.get(organization=org)
    assert incident.pk in response.json()["incidents"]
    assert (incident.title, incident.status, incident.severity) == (
        "Checkout 5xx above 5%",
        "firing",
        "critical",
    )
    assert incident.source == "alertmanager"
    assert incident.started_at == T0
    assert incident.affected_services == ["checkout"]
    assert incident.device == device  # matched through the instance label, port removed
    assert sorted(incident.alerts.values_list("fingerprint", flat=True)) == ["beef", "f00d"]
    assert Alert.objects.get(fingerprint="f00d").ends_at is None  # a firing alert's endsAt is no end
    receiver.refresh_from_db()
    assert receiver.last_delivery_at is not None


@pytest.mark.django_db
def test_repeated_delivery_is_idempotent_and_resolution_resolves(client, org, receiver):
    for _ in range(3):
        assert _post(client, receiver, _payload()).status_code == 200
    assert (Incident.objects.count(), Alert.objects.count()) == (1, 1)
    ended = T0 + dt.timedelta(minutes=7)
    response = _post(client, receiver, _payload(_alert(status="resolved", ends=ended)))
    assert response.json()["alerts_updated"] == 1
    incident = Incident.objects.get()
    assert (incident.status, incident.resolved_at) == ("resolved", ended)
    assert Alert.objects.get().status == "resolved"
    # the same resolved notification again changes nothing
    _post(client, receiver, _payload(_alert(status="resolved", ends=ended)))
    assert (Incident.objects.count(), Alert.objects.count()) == (1, 1)


@pytest.mark.django_db
def test_partial_resolution_keeps_the_incident_firing_and_refiring_opens_a_new_one(client, org, receiver):
    _post(client, receiver, _payload(_alert(), _alert(fingerprint="beef")))
    _post(
        client,
        receiver,
        _payload(_alert(status="resolved", ends=T0 + dt.timedelta(minutes=1)), _alert(fingerprint="beef")),
    )
    assert Incident.objects.get().status == "firing"
    later = T0 + dt.timedelta(hours=2)
    _post(
        client,
        receiver,
        _payload(
            _alert(status="resolved", ends=later), _alert(fingerprint="beef", status="resolved", ends=later)
        ),
    )
    assert Incident.objects.get().status == "resolved"
    _post(client, receiver, _payload(_alert(starts=T0 + dt.timedelta(hours=3))))  # the same labels fire again
    assert list(Incident.objects.order_by("started_at").values_list("status", flat=True)) == [
        "resolved",
        "firing",
    ]


def _broken(change):
    payload = _payload(_alert(), _alert(fingerprint="beef"))
    change(payload)
    return payload


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body, reason",
    [
        ("{not json", "body is not JSON"),
        ([1, 2], "must be a JSON object"),
        (_broken(lambda p: p.update(version="3")), "unsupported payload version"),
        (_broken(lambda p: p.pop("groupKey")), "groupKey is missing"),
        (_broken(lambda p: p.update(alerts=[])), "alerts must be a non-empty list"),
        (_broken(lambda p: p["alerts"][1].update(status="exploded")), "alerts[1].status must be"),
        (
            _broken(lambda p: p["alerts"][1].update(startsAt="yesterday")),
            "alerts[1].startsAt is not an RFC 3339 time",
        ),
        (
            _broken(lambda p: p["alerts"][1].update(labels={"a": 1})),
            "alerts[1].labels must be an object of strings",
        ),
        (_broken(lambda p: p["alerts"][1].update(labels={})), "alerts[1].labels must not be empty"),
    ],
)
def test_bad_payloads_get_400_with_the_reason_and_store_nothing(client, org, receiver, body, reason):
    response = _post(client, receiver, copy.deepcopy(body))
    assert response.status_code == 400
    assert reason in response.json()["error"]
    assert (Incident.objects.count(), Alert.objects.count()) == (0, 0)


@pytest.mark.django_db
def test_the_token_picks_the_organization_and_unknown_tokens_are_refused(client, org, other_org, receiver):
    theirs = AlertmanagerReceiver.objects.create(organization=other_org)
    assert theirs.token != receiver.token and len(theirs.token) >= 32
    _post(client, theirs, _payload())
    assert Incident.objects.for_organization(other_org).count() == 1
    assert Incident.objects.for_organization(org).count() == 0
    response = client.post(
        reverse("alertmanager-webhook", args=[str(org.pk)]), data="{}", content_type="application/json"
    )
    assert response.status_code == 404
    receiver.enabled = False
    receiver.save()
    assert _post(client, receiver, _payload()).status_code == 404
    assert client.get(reverse("alertmanager-webhook", args=[theirs.token])).status_code == 405


@pytest.mark.django_db
def test_receiver_token_never_reaches_change_events(org):
    receiver = AlertmanagerReceiver.objects.create(organization=org, name="prod")
    event = ChangeEvent.objects.get(resource_type="alertmanager_receiver")
    assert receiver.token not in json.dumps([event.before, event.after, event.summary])


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_real_alertmanager_delivers_to_ongrid(live_server, org, tmp_path):
    receiver = AlertmanagerReceiver.objects.create(organization=org)
    webhook = live_server.url + reverse("alertmanager-webhook", args=[receiver.token])
    with running_alertmanager(webhook, tmp_path) as alertmanager:
        started = timezone.now().replace(microsecond=0) - dt.timedelta(seconds=30)
        labels = {
            "alertname": "DiskFull",
            "service": "postgres",
            "severity": "high",
            "instance": "pg-01:9100",
        }
        alertmanager.post_alert(labels, {"summary": "Disk of pg-01 is 97% full"}, started)
        incident = wait_until(
            lambda: Incident.objects.filter(organization=org).first(),
            60,
            "Alertmanager's webhook to create an incident",
        )
        assert (incident.title, incident.severity, incident.status) == (
            "Disk of pg-01 is 97% full",
            "high",
            "firing",
        )
        assert incident.started_at == started
        alert = incident.alerts.get()
        assert alert.labels == labels and len(alert.fingerprint) == 16  # Alertmanager's own fingerprint
        alertmanager.post_alert(
            labels, {"summary": "Disk of pg-01 is 97% full"}, started, ends_at=timezone.now()
        )
        wait_until(
            lambda: Incident.objects.filter(pk=incident.pk, status="resolved").exists(),
            60,
            "the resolved notification",
        )
    assert Alert.objects.count() == 1
