"""Opsgenie's Webhook integration into incidents: the custom token header (or basic auth),
Create / Acknowledge / Close / AddNote, one incident per alias (docs/alerts.md)."""

from __future__ import annotations

import pytest

from ops_app.models import AlertDelivery, AlertSource, Incident
from tests.alerts.conftest import OG_TOKEN
from tests.support.alert_senders import T0, encode, opsgenie_event, send_opsgenie

pytestmark = pytest.mark.django_db


def test_create_opens_an_incident_with_the_alerts_priority_and_tags(client, org, og_source):
    delivery = send_opsgenie(client, og_source, opsgenie_event("Create"), token=OG_TOKEN)
    assert delivery.status_code == 200, delivery.body
    incident = Incident.objects.get(organization=org)
    assert (incident.source, incident.alert_source, incident.severity) == ("opsgenie", og_source, "critical")
    assert incident.external_id == "70413a06-38d6-4c85-92b8-5ebc900d42e2"
    assert incident.title == "Checkout 5xx above 5%"
    assert incident.started_at == T0  # createdAt is epoch milliseconds
    assert incident.affected_services == ["checkout"]  # from the tag service:checkout
    assert incident.summary == "Errors on the checkout service."


NS = 1_777_629_600_000_000_000  # Opsgenie's updatedAt: nanoseconds


def test_acknowledge_then_close_follow_and_a_note_changes_nothing(client, org, og_source):
    send_opsgenie(client, og_source, opsgenie_event("Create", updated_at_ns=NS), token=OG_TOKEN)
    send_opsgenie(client, og_source, opsgenie_event("Acknowledge", updated_at_ns=NS + 1), token=OG_TOKEN)
    incident = Incident.objects.get(organization=org)
    assert incident.status == "acknowledged"
    send_opsgenie(
        client, og_source, opsgenie_event("AddNote", updated_at_ns=NS + 2, note="looking"), token=OG_TOKEN
    )
    incident.refresh_from_db()
    assert incident.status == "acknowledged"
    send_opsgenie(client, og_source, opsgenie_event("UnAcknowledge", updated_at_ns=NS + 3), token=OG_TOKEN)
    incident.refresh_from_db()
    assert incident.status == "firing"
    send_opsgenie(
        client, og_source, opsgenie_event("Close", updated_at_ns=NS + 4_000_000_000), token=OG_TOKEN
    )
    incident.refresh_from_db()
    assert incident.status == "resolved"
    assert incident.resolved_at.timestamp() == pytest.approx((NS + 4_000_000_000) / 1e9)
    assert AlertDelivery.objects.filter(source=og_source).count() == 5


def test_a_retried_delivery_is_a_duplicate(client, org, og_source):
    raw = encode(opsgenie_event("Create", updated_at_ns=1_420_452_193_166_002_000))
    assert send_opsgenie(client, og_source, raw, token=OG_TOKEN).body["status"] == "ok"
    assert send_opsgenie(client, og_source, raw, token=OG_TOKEN).body["status"] == "duplicate"
    assert Incident.objects.filter(organization=org).count() == 1


@pytest.mark.parametrize("token", [None, "wrong-token"], ids=["no-token", "wrong-token"])
def test_without_the_sources_token_nothing_is_stored(client, org, og_source, token):
    delivery = send_opsgenie(client, og_source, opsgenie_event(), token=token)
    assert delivery.status_code == 401
    assert "X-Ongrid-Token" in delivery.body["error"] or "wrong token" in delivery.body["error"]
    og_source.refresh_from_db()
    assert not Incident.objects.exists() and og_source.last_payload is None


def test_basic_auth_when_the_source_has_a_user_name(client, org):
    source = AlertSource.objects.create(
        organization=org, name="og-basic", kind="opsgenie", auth_username="opsgenie", auth_token="pw-1"
    )
    assert send_opsgenie(client, source, opsgenie_event(), basic=("opsgenie", "wrong")).status_code == 401
    assert (
        send_opsgenie(client, source, opsgenie_event(), token="pw-1").status_code == 401
    )  # basic is required
    assert send_opsgenie(client, source, opsgenie_event(), basic=("opsgenie", "pw-1")).status_code == 200


def test_a_body_without_an_alert_id_is_a_400_naming_it(client, org, og_source):
    body = opsgenie_event()
    del body["alert"]["alertId"]
    delivery = send_opsgenie(client, og_source, body, token=OG_TOKEN)
    assert delivery.status_code == 400 and "alertId" in delivery.body["error"]
    assert not Incident.objects.exists()
