"""Grafana Alerting's webhook contact point into incidents: the group payload (version 1), its
optional credentials and HMAC signature with or without a timestamp (docs/alerts.md)."""

from __future__ import annotations

import time

import pytest

from ops_app.models import AlertSource, Incident
from tests.alerts.conftest import GRAFANA_HMAC, GRAFANA_TOKEN
from tests.support.alert_senders import T0, grafana_alert, grafana_payload, send_grafana

pytestmark = pytest.mark.django_db


def test_a_firing_group_opens_an_incident_and_its_resolution_resolves_it(client, org, grafana_source):
    firing = send_grafana(client, grafana_source, grafana_payload(), token=GRAFANA_TOKEN)
    assert firing.status_code == 200, firing.body
    incident = Incident.objects.get(organization=org)
    assert (incident.source, incident.title, incident.severity) == (
        "grafana",
        "Checkout 5xx above 5%",
        "critical",
    )
    assert incident.external_url == "https://grafana.example/alerting/grafana/rule-uid/view"
    assert incident.started_at == T0
    resolved = grafana_payload(grafana_alert("resolved", ends_at=T0.replace(hour=11)))
    assert send_grafana(client, grafana_source, resolved, token=GRAFANA_TOKEN).status_code == 200
    incident.refresh_from_db()
    assert incident.status == "resolved"


def test_the_worst_severity_of_the_group_wins(client, org, grafana_source):
    body = grafana_payload(
        grafana_alert(severity="warning"), grafana_alert(fingerprint="b2", severity="high")
    )
    send_grafana(client, grafana_source, body, token=GRAFANA_TOKEN)
    assert Incident.objects.get().severity == "high"


def test_a_repeated_notification_of_the_same_state_is_a_duplicate(client, org, grafana_source):
    assert send_grafana(client, grafana_source, grafana_payload(), token=GRAFANA_TOKEN).body["status"] == "ok"
    again = send_grafana(client, grafana_source, grafana_payload(), token=GRAFANA_TOKEN)
    assert again.body["status"] == "duplicate"


@pytest.mark.parametrize("token", [None, "not-the-token"], ids=["no-auth", "wrong-token"])
def test_the_bearer_token_is_required_when_set(client, org, grafana_source, token):
    assert send_grafana(client, grafana_source, grafana_payload(), token=token).status_code == 401
    assert not Incident.objects.exists()


def test_a_source_with_neither_token_nor_secret_takes_no_delivery(client, org):
    """Its URL alone (which proxies log) must not be enough to open incidents."""
    bare = AlertSource.objects.create(organization=org, name="grafana-bare", kind="grafana")
    delivery = send_grafana(client, bare, grafana_payload())
    assert delivery.status_code == 401
    assert "neither an auth token nor a signing secret" in delivery.body["error"]
    assert not Incident.objects.exists()


@pytest.fixture
def signed_source(org) -> AlertSource:
    return AlertSource.objects.create(
        organization=org, name="grafana-hmac", kind="grafana", signing_secret=GRAFANA_HMAC
    )


@pytest.mark.parametrize("timestamp", [False, True], ids=["body", "timestamp-and-body"])
def test_the_hmac_signature_is_checked(client, org, signed_source, timestamp):
    good = send_grafana(
        client, signed_source, grafana_payload(), hmac_secret=GRAFANA_HMAC, timestamp=timestamp
    )
    assert good.status_code == 200, good.body
    bad = send_grafana(
        client, signed_source, grafana_payload(group_key="other"), hmac_secret="wrong", timestamp=timestamp
    )
    assert bad.status_code == 401
    assert Incident.objects.filter(organization=org).count() == 1


def test_an_old_signed_timestamp_is_a_replay(client, org, signed_source):
    stale = int(time.time()) - 3600
    delivery = send_grafana(
        client, signed_source, grafana_payload(), hmac_secret=GRAFANA_HMAC, timestamp=stale
    )
    assert delivery.status_code == 401 and "Timestamp" in delivery.body["error"]
    assert not Incident.objects.exists()


def test_an_unsigned_delivery_to_a_signed_source_is_refused(client, org, signed_source):
    assert send_grafana(client, signed_source, grafana_payload()).status_code == 401


def test_a_wrong_payload_version_is_a_400(client, org, grafana_source):
    body = {**grafana_payload(), "version": "4"}
    delivery = send_grafana(client, grafana_source, body, token=GRAFANA_TOKEN)
    assert delivery.status_code == 400 and "version" in delivery.body["error"]


def test_each_alert_instance_is_kept_with_its_own_labels_as_the_incidents_alerts(client, org, grafana_source):
    """The page lists them and the investigator, the silence and the annotation read them."""
    body = grafana_payload(
        grafana_alert(fingerprint="aaaa000000000001", pod="checkout-7d9f-x1"),
        grafana_alert(fingerprint="aaaa000000000002", pod="checkout-7d9f-x2", severity="warning"),
    )
    assert send_grafana(client, grafana_source, body, token=GRAFANA_TOKEN).status_code == 200
    incident = Incident.objects.get(organization=org)
    alerts = list(incident.alerts.order_by("labels__pod"))
    assert [(a.labels["pod"], a.severity, a.status) for a in alerts] == [
        ("checkout-7d9f-x1", "critical", "firing"),
        ("checkout-7d9f-x2", "warning", "firing"),
    ]
    assert alerts[0].annotations["__dashboardUid__"] == "abc123"
    assert alerts[0].generator_url == "https://grafana.example/alerting/grafana/rule-uid/view"
    # The group resolves one instance: that alert alone is resolved, still one row each.
    resolved = grafana_payload(
        grafana_alert(
            "resolved", fingerprint="aaaa000000000001", ends_at=T0.replace(hour=11), pod="checkout-7d9f-x1"
        ),
        grafana_alert(fingerprint="aaaa000000000002", pod="checkout-7d9f-x2", severity="warning"),
    )
    assert send_grafana(client, grafana_source, resolved, token=GRAFANA_TOKEN).status_code == 200
    assert sorted(incident.alerts.values_list("labels__pod", "status")) == [
        ("checkout-7d9f-x1", "resolved"),
        ("checkout-7d9f-x2", "firing"),
    ]


def test_two_sources_with_the_same_alert_fingerprint_keep_separate_alerts(client, org, grafana_source):
    other = AlertSource.objects.create(organization=org, name="grafana-2", kind="grafana", auth_token="t-2")
    send_grafana(client, grafana_source, grafana_payload(), token=GRAFANA_TOKEN)
    send_grafana(client, other, grafana_payload(), token="t-2")
    incidents = Incident.objects.filter(organization=org)
    assert incidents.count() == 2
    assert [i.alerts.count() for i in incidents] == [1, 1]
