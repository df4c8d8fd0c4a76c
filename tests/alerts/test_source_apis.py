"""The write-back REST clients (ops_app/alert_sources/<kind>/api.py) against the fake vendor APIs:
the documented paths, bodies and credentials, the Opsgenie region's base URL, and failures that
carry only the HTTP status or the error class (never the answer, never the key)."""

from __future__ import annotations

import pytest

from ops_app.alert_sources.grafana import api as grafana
from ops_app.alert_sources.opsgenie import api as opsgenie
from ops_app.alert_sources.pagerduty import api as pagerduty
from ops_app.alert_sources.rest import SourceAPIError
from ops_app.models import AlertSource
from tests.support.alert_apis import (
    FROM_EMAIL,
    OG_ALERT,
    PD_INCIDENT,
    grafana_source,
    opsgenie_source,
    pagerduty_source,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("close_async_db_connections")]


async def test_pagerduty_note_ack_snooze_resolve_speak_rest_v2(org, fake_pagerduty):
    source = await AlertSource.objects.acreate(
        organization=org,
        name="pd",
        kind="pagerduty",
        api_base_url=fake_pagerduty.api_base,
        api_key=fake_pagerduty.api_key,
        from_email=FROM_EMAIL,
    )
    await pagerduty.add_note(source, PD_INCIDENT, "Root cause: db-01 down")
    await pagerduty.acknowledge(source, PD_INCIDENT)
    await pagerduty.snooze(source, PD_INCIDENT, 3600)
    await pagerduty.resolve(source, PD_INCIDENT)

    assert fake_pagerduty.notes(PD_INCIDENT) == ["Root cause: db-01 down"]
    assert fake_pagerduty.incidents[PD_INCIDENT]["snoozed_for"] == 3600
    assert fake_pagerduty.incidents[PD_INCIDENT]["status"] == "resolved"
    calls = [(r.method, r.path, r.status) for r in fake_pagerduty.requests]
    assert calls == [
        ("POST", f"/incidents/{PD_INCIDENT}/notes", 201),
        ("PUT", f"/incidents/{PD_INCIDENT}", 200),
        ("POST", f"/incidents/{PD_INCIDENT}/snooze", 201),
        ("PUT", f"/incidents/{PD_INCIDENT}", 200),
    ]
    first = fake_pagerduty.requests[0].headers
    assert first["Authorization"] == f"Token token={fake_pagerduty.api_key}"
    assert first["From"] == FROM_EMAIL
    assert first["Accept"] == "application/vnd.pagerduty+json;version=2"


async def test_a_wrong_key_is_a_permanent_http_401_that_names_no_key(org, fake_pagerduty):
    source = await AlertSource.objects.acreate(
        organization=org,
        name="pd",
        kind="pagerduty",
        api_base_url=fake_pagerduty.api_base,
        api_key="pd-wrong-key-SECRET",
        from_email=FROM_EMAIL,
    )
    with pytest.raises(SourceAPIError) as failure:
        await pagerduty.add_note(source, PD_INCIDENT, "note")
    assert (failure.value.reason, failure.value.status, failure.value.transient) == ("HTTP 401", 401, False)
    assert "SECRET" not in repr(failure.value) and "Unauthorized" not in str(failure.value)
    assert fake_pagerduty.notes(PD_INCIDENT) == []


async def test_unavailable_and_refused_connections_are_transient_with_the_status_or_class_only(
    org, fake_opsgenie
):
    source = await AlertSource.objects.acreate(
        organization=org,
        name="og",
        kind="opsgenie",
        api_base_url=fake_opsgenie.api_base,
        api_key=fake_opsgenie.api_key,
    )
    fake_opsgenie.fail_next(1, status=503)
    with pytest.raises(SourceAPIError) as unavailable:
        await opsgenie.add_note(source, OG_ALERT, "note")
    assert (unavailable.value.reason, unavailable.value.transient) == ("HTTP 503", True)

    fake_opsgenie.refuse_connections()
    with pytest.raises(SourceAPIError) as refused:
        await opsgenie.add_note(source, OG_ALERT, "note")
    assert (refused.value.reason, refused.value.transient) == ("ConnectError", True)
    fake_opsgenie.come_back()
    await opsgenie.add_note(source, OG_ALERT, "finally")
    assert fake_opsgenie.notes(OG_ALERT) == ["finally"]


async def test_opsgenie_actions_use_the_genie_key_and_the_alert_id(org, fake_opsgenie):
    source = await AlertSource.objects.acreate(
        organization=org,
        name="og",
        kind="opsgenie",
        api_base_url=fake_opsgenie.api_base,
        api_key=fake_opsgenie.api_key,
    )
    request_id = await opsgenie.add_note(source, OG_ALERT, "Findings")
    await opsgenie.acknowledge(source, OG_ALERT)
    await opsgenie.snooze(source, OG_ALERT, 3600)
    await opsgenie.resolve(source, OG_ALERT)

    assert request_id
    alert = fake_opsgenie.alerts[OG_ALERT]
    assert alert["notes"][0] == "Findings" and alert["acknowledged"] and alert["status"] == "closed"
    assert alert["snoozed_until"].endswith("Z")
    assert [r.path.rsplit("/", 1)[-1] for r in fake_opsgenie.requests] == [
        "notes",
        "acknowledge",
        "snooze",
        "close",
    ]
    assert all(r.status == 202 and r.query == {"identifierType": "id"} for r in fake_opsgenie.requests)
    assert fake_opsgenie.requests[0].headers["Authorization"] == f"GenieKey {fake_opsgenie.api_key}"


def test_opsgenie_region_picks_the_eu_or_us_base_url(org):
    eu = opsgenie_source(org, None, name="og-eu", region="eu")
    us = opsgenie_source(org, None, name="og-us", region="us")
    assert eu.api_base() == "https://api.eu.opsgenie.com"
    assert us.api_base() == "https://api.opsgenie.com"


async def test_grafana_annotation_on_a_panel_and_a_silence(org, fake_grafana):
    source = await AlertSource.objects.acreate(
        organization=org,
        name="gf",
        kind="grafana",
        api_base_url=fake_grafana.api_base,
        api_key=fake_grafana.token,
    )
    annotation = await grafana.annotate(source, "Findings", ["ongrid"], dashboard_uid="abc", panel_id=4)
    silence = await grafana.silence(
        source, [{"name": "alertname", "value": "HighLatency"}], 60, "busy", "ongrid"
    )

    assert annotation == 1 and silence
    body = fake_grafana.annotations[0]
    assert (body["dashboardUID"], body["panelId"], body["tags"], body["text"]) == (
        "abc",
        4,
        ["ongrid"],
        "Findings",
    )
    assert fake_grafana.silences[0]["matchers"] == [
        {"name": "alertname", "value": "HighLatency", "isRegex": False, "isEqual": True}
    ]
    assert fake_grafana.requests[0].headers["Authorization"] == f"Bearer {fake_grafana.token}"


def test_builders_point_at_the_fakes(org, fake_pagerduty, fake_grafana):
    assert pagerduty_source(org, fake_pagerduty).api_base() == fake_pagerduty.base_url
    assert grafana_source(org, fake_grafana).api_base() == fake_grafana.base_url
