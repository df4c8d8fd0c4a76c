"""PagerDuty's v3 webhook into incidents: signed deliveries open, acknowledge and resolve one
incident per PagerDuty incident; replays, bad signatures and rotations (docs/alerts.md)."""

from __future__ import annotations

import pytest

from ops_app.models import AlertDelivery, AlertSource, Incident
from tests.alerts.conftest import PD_SECRET
from tests.support.alert_senders import T0, encode, pagerduty_event, pagerduty_signature, post, send_pagerduty

pytestmark = pytest.mark.django_db


def test_a_signed_triggered_event_opens_one_incident_with_its_pagerduty_link(client, org, pd_source):
    delivery = send_pagerduty(client, pd_source, pagerduty_event("incident.triggered"), secret=PD_SECRET)
    assert delivery.status_code == 200, delivery.body
    assert delivery.body["status"] == "ok"
    incident = Incident.objects.get(organization=org)
    assert delivery.body["incidents"] == [incident.pk]
    assert (incident.source, incident.alert_source, incident.external_id) == (
        "pagerduty",
        pd_source,
        "Q1ABC2DEF",
    )
    assert incident.external_url == "https://acme.pagerduty.com/incidents/Q1ABC2DEF"
    assert (incident.title, incident.severity, incident.status) == (
        "Checkout 5xx above 5%",
        "critical",
        "firing",
    )
    assert incident.started_at == T0
    assert incident.affected_services == ["checkout"]
    pd_source.refresh_from_db()
    assert pd_source.last_delivery_at is not None
    assert pd_source.last_payload["event"]["event_type"] == "incident.triggered"


def test_the_same_delivery_replayed_changes_nothing(client, org, pd_source):
    raw = encode(pagerduty_event("incident.triggered", event_id="01DEV7WJ6KUSBKYGE9KZA9MAX0"))
    first = send_pagerduty(client, pd_source, raw, secret=PD_SECRET)
    incident = Incident.objects.get(organization=org)
    again = send_pagerduty(client, pd_source, raw, secret=PD_SECRET)
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.body["status"] == "duplicate"
    assert Incident.objects.filter(organization=org).count() == 1
    assert AlertDelivery.objects.filter(source=pd_source).count() == 1
    assert Incident.objects.get().updated_at == incident.updated_at


def test_triggered_then_acknowledged_then_resolved_moves_the_incident_along(client, org, pd_source):
    for event_type in ("incident.triggered", "incident.acknowledged"):
        assert (
            send_pagerduty(client, pd_source, pagerduty_event(event_type), secret=PD_SECRET).status_code
            == 200
        )
    incident = Incident.objects.get(organization=org)
    assert incident.status == "acknowledged" and incident.acknowledged_at is not None
    assert (
        send_pagerduty(client, pd_source, pagerduty_event("incident.resolved"), secret=PD_SECRET).status_code
        == 200
    )
    incident.refresh_from_db()
    assert incident.status == "resolved" and incident.resolved_at is not None
    assert Incident.objects.filter(organization=org).count() == 1
    # One alert stands for the PagerDuty incident, as the incident page and the investigator read it.
    alert = incident.alerts.get()
    assert (alert.name, alert.status, alert.labels["service"]) == (
        "Checkout 5xx above 5%",
        "resolved",
        "checkout",
    )
    assert alert.generator_url == "https://acme.pagerduty.com/incidents/Q1ABC2DEF"


def test_an_acknowledge_whose_trigger_was_lost_still_opens_the_incident_acknowledged(client, org, pd_source):
    send_pagerduty(client, pd_source, pagerduty_event("incident.acknowledged"), secret=PD_SECRET)
    assert Incident.objects.get(organization=org).status == "acknowledged"


def test_a_reopened_incident_is_the_same_incident_firing_again(client, org, pd_source):
    for event_type in ("incident.triggered", "incident.resolved", "incident.reopened"):
        send_pagerduty(client, pd_source, pagerduty_event(event_type), secret=PD_SECRET)
    incident = Incident.objects.get(organization=org)
    assert (incident.status, incident.resolved_at) == ("firing", None)


def test_late_events_from_before_the_resolve_open_nothing(client, org, pd_source):
    """A trigger retried after PagerDuty got a 503, or an acknowledge delivered after the resolve:
    both happened before the resolve, so neither opens a second incident."""
    late_trigger = pagerduty_event("incident.triggered")
    late_ack = pagerduty_event("incident.acknowledged")
    send_pagerduty(client, pd_source, pagerduty_event("incident.triggered"), secret=PD_SECRET)
    send_pagerduty(client, pd_source, pagerduty_event("incident.resolved"), secret=PD_SECRET)
    for body in (late_ack, late_trigger):
        delivery = send_pagerduty(client, pd_source, body, secret=PD_SECRET)
        assert (delivery.status_code, delivery.body["status"]) == (200, "ok")
    incident = Incident.objects.get(organization=org)
    assert incident.status == "resolved"
    assert AlertDelivery.objects.filter(source=pd_source, incident=incident).count() == 4


def test_an_unacknowledged_incident_fires_again(client, org, pd_source):
    for event_type in ("incident.triggered", "incident.acknowledged", "incident.unacknowledged"):
        send_pagerduty(client, pd_source, pagerduty_event(event_type), secret=PD_SECRET)
    incident = Incident.objects.get(organization=org)
    assert (incident.status, incident.acknowledged_at) == ("firing", None)


def test_another_pagerduty_incident_is_another_incident(client, org, pd_source):
    send_pagerduty(client, pd_source, pagerduty_event(incident_id="Q1AAA"), secret=PD_SECRET)
    send_pagerduty(client, pd_source, pagerduty_event(incident_id="Q2BBB", priority="P3"), secret=PD_SECRET)
    assert sorted(Incident.objects.values_list("external_id", "severity")) == [
        ("Q1AAA", "critical"),
        ("Q2BBB", "warning"),
    ]


def test_a_note_changes_no_state_and_pings_are_ignored(client, org, pd_source):
    send_pagerduty(client, pd_source, pagerduty_event("incident.triggered"), secret=PD_SECRET)
    note = send_pagerduty(
        client, pd_source, pagerduty_event("incident.annotated", note="Ongrid: disk full"), secret=PD_SECRET
    )
    assert note.status_code == 200 and note.body["incidents"] == [Incident.objects.get().pk]
    assert Incident.objects.get().status == "firing"
    ping = {
        "event": {
            "id": "01PING",
            "event_type": "pagey.ping",
            "resource_type": "pagey",
            "data": {"message": "Hello"},
        }
    }
    answer = send_pagerduty(client, pd_source, ping, secret=PD_SECRET)
    assert (answer.status_code, answer.body["status"]) == (200, "ignored")


def test_priority_absent_falls_back_to_urgency(client, org, pd_source):
    send_pagerduty(client, pd_source, pagerduty_event(priority=None, urgency="low"), secret=PD_SECRET)
    assert Incident.objects.get().severity == "warning"


def _nothing_stored(org, source: AlertSource) -> bool:
    source.refresh_from_db()
    return (
        not Incident.objects.filter(organization=org).exists()
        and not AlertDelivery.objects.exists()
        and source.last_payload is None
        and source.last_delivery_at is None
    )


@pytest.mark.parametrize(
    "signing",
    [
        {"secret": "not-the-subscription-secret"},
        {},  # no signature header at all
    ],
    ids=["wrong-secret", "unsigned"],
)
def test_a_bad_or_missing_signature_is_refused_and_stores_nothing(client, org, pd_source, signing):
    delivery = send_pagerduty(client, pd_source, pagerduty_event(), **signing)
    assert delivery.status_code == 401
    assert "signature" in delivery.body["error"]
    assert PD_SECRET not in str(delivery.body)
    assert _nothing_stored(org, pd_source)


def test_a_body_changed_after_signing_is_refused(client, org, pd_source):
    raw = encode(pagerduty_event())
    header = {"X-PagerDuty-Signature": pagerduty_signature(raw, PD_SECRET)}
    tampered = raw.replace(b"Checkout 5xx", b"Checkout 4xx")
    assert post(client, pd_source, tampered, header).status_code == 401
    assert _nothing_stored(org, pd_source)


def test_during_a_rotation_one_right_signature_among_several_is_enough(client, org, pd_source):
    delivery = send_pagerduty(client, pd_source, pagerduty_event(), secrets=("the-old-secret", PD_SECRET))
    assert delivery.status_code == 200, delivery.body
    assert Incident.objects.filter(organization=org).count() == 1


def test_a_source_without_a_secret_accepts_nothing(client, org):
    source = AlertSource.objects.create(organization=org, name="pd-unset", kind="pagerduty")
    assert send_pagerduty(client, source, pagerduty_event(), secret="anything").status_code == 401
    assert not Incident.objects.exists()
