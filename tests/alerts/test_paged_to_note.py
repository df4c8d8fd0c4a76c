"""End to end, as an on-call team would see it: PagerDuty pages (a signed v3 `incident.triggered`
to the source's receiver), Ongrid opens one incident, investigates it on its own with the
(scripted) model, and the findings appear once as a note on the PagerDuty incident; a replayed
delivery opens no second incident and writes no second note."""

from __future__ import annotations

import pytest

from incidents_app.models import Investigation, SourceWriteback
from ops_app.models import Device, Incident
from tests.alerts.conftest import PD_SECRET
from tests.support.alert_apis import PD_INCIDENT, pagerduty_source
from tests.support.alert_senders import pagerduty_event, send_pagerduty
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


def test_a_signed_page_becomes_one_incident_one_investigation_and_one_note(
    client, org, settings, agents_llm, fake_pagerduty
):
    enable_auto(settings)
    Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    agents_llm.add(
        INVESTIGATOR, read_incident(), submit(report({"kind": "device", "name": "db-01"})), answer()
    )
    source = pagerduty_source(org, fake_pagerduty, signing_secret=PD_SECRET)

    delivery = send_pagerduty(
        client, source, pagerduty_event("incident.triggered", PD_INCIDENT), secret=PD_SECRET
    )
    assert delivery.status_code == 200, delivery.body
    incident = Incident.objects.get(organization=org)
    assert (incident.alert_source, incident.external_id) == (source, PD_INCIDENT)
    investigation = Investigation.objects.get(incident=incident)
    assert wait_finished(investigation.pk).status == "done"
    [note] = wait_until(lambda: fake_pagerduty.notes(PD_INCIDENT), 20.0, "the note in PagerDuty")

    replay = send_pagerduty(client, source, delivery.raw, secret=PD_SECRET)

    assert replay.status_code == 200
    assert Incident.objects.filter(organization=org).count() == 1
    assert Investigation.objects.filter(incident__organization=org).count() == 1
    assert "Checkout fails because its database host is down." in note
    assert f"/incidents/{incident.pk}/" in note
    assert fake_pagerduty.notes(PD_INCIDENT) == [note]
    assert SourceWriteback.objects.get().status == "done"
