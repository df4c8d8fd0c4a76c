"""Any JSON sender: the source's mapping reads title, severity, status, group key, labels, start,
event id and link out of its body (docs/alerts.md, "Any JSON sender")."""

from __future__ import annotations

import datetime as dt

import pytest

from ops_app.alert_sources.generic.inbound import MappingError, preview, validate_mapping
from ops_app.models import AlertDelivery, AlertSource, Incident
from tests.alerts.conftest import GENERIC_HMAC, GENERIC_TOKEN, MAPPING
from tests.support.alert_senders import send_generic

pytestmark = pytest.mark.django_db


def _body(state="open", delivery="d-1", level="sev1"):
    return {
        "id": "uptime-check-42",
        "state": state,
        "level": level,
        "delivery": delivery,
        "ts": "2026-05-01T10:00:00Z",
        "link": "https://uptime.example/checks/42",
        "alert": {"name": "checkout.example.com is down"},
        "tags": {"service": "checkout", "region": "eu"},
    }


def test_a_mapped_delivery_opens_an_incident_and_its_states_follow(client, org, generic_source):
    delivery = send_generic(client, generic_source, _body(), token=GENERIC_TOKEN)
    assert delivery.status_code == 200, delivery.body
    incident = Incident.objects.get(organization=org)
    assert (incident.source, incident.title, incident.severity) == (
        "webhook",
        "checkout.example.com is down",
        "critical",
    )
    assert incident.external_url == "https://uptime.example/checks/42"
    assert incident.started_at == dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)
    assert incident.affected_services == ["checkout"]
    send_generic(client, generic_source, _body("ack", "d-2"), token=GENERIC_TOKEN)
    incident.refresh_from_db()
    assert incident.status == "acknowledged"
    send_generic(client, generic_source, _body("closed", "d-3"), token=GENERIC_TOKEN)
    incident.refresh_from_db()
    assert incident.status == "resolved"
    again = send_generic(client, generic_source, _body("closed", "d-3"), token=GENERIC_TOKEN)
    assert again.body["status"] == "duplicate"


def test_a_path_that_finds_nothing_is_a_400_naming_it_and_the_body_is_kept_for_the_preview(
    client, org, generic_source
):
    body = _body()
    del body["alert"]
    delivery = send_generic(client, generic_source, body, token=GENERIC_TOKEN)
    assert delivery.status_code == 400
    assert 'title: nothing at "alert.name"' in delivery.body["error"]
    assert not Incident.objects.exists() and not AlertDelivery.objects.exists()
    generic_source.refresh_from_db()
    assert generic_source.last_payload["id"] == "uptime-check-42"


def test_an_unmapped_status_value_is_a_400_saying_to_map_it(client, org, generic_source):
    delivery = send_generic(client, generic_source, _body(state="flapping"), token=GENERIC_TOKEN)
    assert delivery.status_code == 400 and "status_map" in delivery.body["error"]


def test_without_the_bearer_token_nothing_is_stored(client, org, generic_source):
    assert send_generic(client, generic_source, _body(), token="nope").status_code == 401
    assert send_generic(client, generic_source, _body()).status_code == 401
    generic_source.refresh_from_db()
    assert generic_source.last_payload is None and not Incident.objects.exists()


def test_an_hmac_signed_sender(client, org):
    source = AlertSource.objects.create(
        organization=org, name="signed", kind="generic", signing_secret=GENERIC_HMAC, mapping=MAPPING
    )
    assert send_generic(client, source, _body(), signing_secret="wrong").status_code == 401
    assert send_generic(client, source, _body(), signing_secret=GENERIC_HMAC).status_code == 200


def test_without_an_event_id_path_identical_bodies_are_one_event(client, org):
    mapping = {k: v for k, v in MAPPING.items() if k != "event_id"}
    source = AlertSource.objects.create(
        organization=org, name="no-ids", kind="generic", auth_token=GENERIC_TOKEN, mapping=mapping
    )
    assert send_generic(client, source, _body(), token=GENERIC_TOKEN).body["status"] == "ok"
    assert send_generic(client, source, _body(), token=GENERIC_TOKEN).body["status"] == "duplicate"


@pytest.mark.parametrize(
    ("mapping", "named"),
    [
        ({"group_key": "id"}, '"title" is required'),
        ({**MAPPING, "colour": "x"}, 'unknown key "colour"'),
        ({**MAPPING, "title": "alert..name"}, '"title" must be a dotted path'),
        ({**MAPPING, "status_map": {"open": "burning"}}, "\"status_map\" maps to 'burning'"),
        ([], "JSON object"),
    ],
)
def test_a_bad_mapping_is_refused_naming_the_bad_key(mapping, named):
    with pytest.raises(MappingError) as caught:
        validate_mapping(mapping)
    assert named in str(caught.value)


def test_the_preview_shows_what_the_mapping_yields_and_which_path_is_missing():
    shown = preview(MAPPING, _body())
    assert shown.values["title"] == "checkout.example.com is down"
    assert (shown.values["status"], shown.values["severity"], shown.values["group_key"]) == (
        "firing",
        "critical",
        "uptime-check-42",
    )
    body = _body()
    del body["link"]
    assert preview(MAPPING, body).missing == ["external_url: link"]
    del body["id"]
    assert 'group_key: nothing at "id"' in preview(MAPPING, body).error
