"""The incident page and API name the alert source an incident came from and link back to it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from ops_app.models import Incident
from tests.alerts.conftest import PD_SECRET
from tests.support.alert_senders import pagerduty_event, send_pagerduty

pytestmark = pytest.mark.django_db


@pytest.fixture
def paged(client, pd_source) -> Incident:
    send_pagerduty(client, pd_source, pagerduty_event(), secret=PD_SECRET)
    return Incident.objects.get()


def test_the_incident_page_shows_the_source_and_a_link_back(client, member, paged):
    client.force_login(member)
    page = client.get(reverse("incident-page", args=[paged.pk])).content.decode()
    assert "Source: PagerDuty" in page
    assert 'href="https://acme.pagerduty.com/incidents/Q1ABC2DEF"' in page and "open in PagerDuty" in page


def test_the_api_returns_the_source_and_its_external_id_and_url(client, member, paged, pd_source):
    client.force_login(member)
    listed = client.get("/api/incidents/").json()
    row = (listed["results"] if isinstance(listed, dict) else listed)[0]
    assert (row["alert_source"], row["external_id"], row["source"]) == (
        pd_source.name,
        "Q1ABC2DEF",
        "pagerduty",
    )
    detail = client.get(f"/api/incidents/{paged.pk}/").json()
    assert detail["external_url"] == "https://acme.pagerduty.com/incidents/Q1ABC2DEF"


def test_a_link_that_is_not_http_is_never_put_on_the_page(client, member, pd_source):
    body = pagerduty_event()
    body["event"]["data"]["html_url"] = "javascript:alert(1)"
    send_pagerduty(client, pd_source, body, secret=PD_SECRET)
    incident = Incident.objects.get()
    assert incident.external_url == ""
    client.force_login(member)
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert "Source: PagerDuty" in page and "javascript:alert" not in page
