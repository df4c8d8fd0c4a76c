"""The receiver every alert source shares (POST /api/alerts/<kind>/<url key>/): which source a URL
reaches, the body limit, JSON errors, tenancy, concurrent deliveries and the automatic
investigation of a paged incident (docs/alerts.md, "What a delivery does", "Limits")."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.urls import reverse

from incidents_app.models import Investigation
from ops_app.alert_sources.intake import LAST_PAYLOAD_BYTES
from ops_app.alert_sources.views import MAX_BODY_BYTES
from ops_app.models import AlertDelivery, AlertSource, Incident
from tests.alerts.conftest import PD_SECRET
from tests.support.alert_senders import encode, pagerduty_event, post, send_pagerduty
from tests.support.investigations import INVESTIGATOR, answer, enable_auto, wait_finished


@pytest.mark.django_db
def test_the_url_name_builds_the_sources_path(pd_source):
    assert reverse("alert-source-webhook", args=["pagerduty", pd_source.url_key]) == pd_source.path


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    ["/api/alerts/pagerduty/no-such-key/", "/api/alerts/opsgenie/{key}/", "/api/alerts/nagios/{key}/"],
    ids=["unknown-key", "kind-mismatch", "unknown-kind"],
)
def test_an_unknown_key_or_a_kind_mismatch_is_a_json_404(client, pd_source, path):
    delivery = post(client, pd_source, encode(pagerduty_event()), {}, path=path.format(key=pd_source.url_key))
    assert delivery.status_code == 404 and "unknown" in delivery.body["error"]


@pytest.mark.django_db
def test_a_disabled_source_is_a_404_and_get_is_refused(client, pd_source):
    AlertSource.objects.filter(pk=pd_source.pk).update(enabled=False)
    assert send_pagerduty(client, pd_source, pagerduty_event(), secret=PD_SECRET).status_code == 404
    assert client.get(pd_source.path).status_code == 405
    assert not Incident.objects.exists()


@pytest.mark.django_db
def test_a_signed_body_that_is_not_json_is_a_400(client, pd_source):
    delivery = send_pagerduty(client, pd_source, b'{"event": ', secret=PD_SECRET)
    assert delivery.status_code == 400 and "not JSON" in delivery.body["error"]
    assert send_pagerduty(client, pd_source, {"nope": 1}, secret=PD_SECRET).status_code == 400


@pytest.mark.django_db
def test_a_body_over_5_mb_is_refused_with_json_and_the_next_valid_delivery_is_stored_in_full(
    client, org, pd_source
):
    too_big = b'{"event": {"pad": "' + b"x" * MAX_BODY_BYTES + b'"}}'
    refused = send_pagerduty(client, pd_source, too_big, secret=PD_SECRET)
    assert refused.status_code == 413
    assert refused.body["limit"] == MAX_BODY_BYTES and "too large" in refused.body["error"]
    assert not AlertDelivery.objects.exists()
    body = pagerduty_event(title="Checkout 5xx above 5%")
    body["event"]["data"]["body"] = {"details": "y" * (4 * 1024 * 1024)}  # a valid 4 MB delivery
    stored = send_pagerduty(client, pd_source, body, secret=PD_SECRET)
    assert stored.status_code == 200, stored.body
    incident = Incident.objects.get(organization=org)
    assert incident.title == "Checkout 5xx above 5%" and incident.external_id == "Q1ABC2DEF"
    assert AlertDelivery.objects.get().incident == incident
    pd_source.refresh_from_db()
    kept = json.dumps(pd_source.last_payload)
    assert len(kept) <= LAST_PAYLOAD_BYTES
    assert pd_source.last_payload["event"]["data"]["title"] == "Checkout 5xx above 5%"


@pytest.mark.django_db
def test_a_sources_url_only_ever_reaches_its_own_organization(client, org, other_org, pd_source):
    theirs = AlertSource.objects.create(
        organization=other_org, name="pagerduty-payments", kind="pagerduty", signing_secret="globex-secret"
    )
    send_pagerduty(client, pd_source, pagerduty_event(), secret=PD_SECRET)
    assert list(Incident.objects.values_list("organization", flat=True)) == [org.pk]
    # A's secret on B's URL, and B's on A's: refused, nothing of either is touched.
    assert send_pagerduty(client, theirs, pagerduty_event(), secret=PD_SECRET).status_code == 401
    assert send_pagerduty(client, pd_source, pagerduty_event(), secret="globex-secret").status_code == 401
    # The same PagerDuty incident id in B is B's own incident, never A's.
    assert send_pagerduty(client, theirs, pagerduty_event(), secret="globex-secret").status_code == 200
    mine, yours = Incident.objects.get(organization=org), Incident.objects.get(organization=other_org)
    assert (mine.alert_source, yours.alert_source) == (pd_source, theirs)
    assert AlertDelivery.objects.filter(organization=other_org, source=theirs).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_deliveries_of_one_group_open_one_incident(wide_live_server, org, pd_source):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL (SQLite serialises the whole database)")
    kinds = ["incident.triggered", "incident.escalated", "incident.annotated", "incident.triggered"] * 4
    bodies = [encode(pagerduty_event(kind, event_id=f"evt-{i}")) for i, kind in enumerate(kinds)]
    replay = bodies[0]  # and the first event delivered four times at once
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(
            pool.map(
                lambda raw: send_pagerduty(wide_live_server, pd_source, raw, secret=PD_SECRET),
                bodies + [replay] * 4,
            )
        )
    assert [a.status_code for a in answers] == [200] * len(answers), [a.body for a in answers]
    assert Incident.objects.filter(organization=org).count() == 1
    assert AlertDelivery.objects.filter(source=pd_source).count() == len(bodies)
    assert sum(a.body["status"] == "duplicate" for a in answers) == 4


@pytest.mark.django_db(transaction=True)
def test_a_high_severity_page_is_investigated_automatically_as_paged(
    client, org, pd_source, settings, agents_llm
):
    enable_auto(settings)
    agents_llm.add(INVESTIGATOR, answer("nothing conclusive"))
    delivery = send_pagerduty(client, pd_source, pagerduty_event(priority="P2"), secret=PD_SECRET)
    assert delivery.status_code == 200, delivery.body
    investigation = Investigation.objects.get(incident__organization=org)
    assert investigation.trigger == "paged"
    assert investigation.incident.alert_source == pd_source
    wait_finished(investigation.pk)
    # The replay of the page starts no second investigation.
    send_pagerduty(client, pd_source, delivery.raw, secret=PD_SECRET)
    assert Investigation.objects.filter(incident__organization=org).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_low_severity_page_is_not_investigated_by_the_default_policy(
    client, org, pd_source, settings, agents_llm
):
    enable_auto(settings)
    send_pagerduty(client, pd_source, pagerduty_event(priority="P4"), secret=PD_SECRET)
    assert Incident.objects.get().severity == "info"
    assert not Investigation.objects.exists()


@pytest.fixture
def refusing_deliveries():
    """PostgreSQL itself refuses to store delivery rows with the given SQLSTATE (a real database
    fault, injected with a trigger), until the test lifts it."""
    if connection.vendor != "postgresql":
        pytest.skip("the fault is injected with a PostgreSQL trigger")
    installed = []

    def refuse(sqlstate: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "CREATE OR REPLACE FUNCTION ongrid_test_refuse() RETURNS trigger AS $$ BEGIN "
                f"RAISE EXCEPTION 'injected fault' USING ERRCODE = '{sqlstate}'; END $$ LANGUAGE plpgsql"
            )
            cursor.execute(
                "CREATE TRIGGER ongrid_test_refuse BEFORE INSERT ON ops_app_alertdelivery "
                "FOR EACH ROW EXECUTE FUNCTION ongrid_test_refuse()"
            )
        installed.append(True)

    def lift() -> None:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER IF EXISTS ongrid_test_refuse ON ops_app_alertdelivery")
            cursor.execute("DROP FUNCTION IF EXISTS ongrid_test_refuse()")

    refuse.lift = lift
    yield refuse
    if installed:
        lift()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("sqlstate", ["40001", "57P03"], ids=["keeps-losing-races", "database-unavailable"])
def test_database_trouble_asks_the_sender_to_retry_and_the_retry_loses_nothing(
    client, org, pd_source, refusing_deliveries, sqlstate
):
    raw = encode(pagerduty_event())
    refusing_deliveries(sqlstate)
    refused = send_pagerduty(client, pd_source, raw, secret=PD_SECRET)
    assert refused.status_code == 503 and "retry" in refused.body["error"]
    assert not Incident.objects.exists()  # the whole delivery rolled back
    refusing_deliveries.lift()
    retried = send_pagerduty(client, pd_source, raw, secret=PD_SECRET)
    assert (retried.status_code, retried.body["status"]) == (200, "ok")
    assert Incident.objects.filter(organization=org).count() == 1
