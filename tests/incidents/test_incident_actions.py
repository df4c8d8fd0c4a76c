"""Acknowledge / Resolve on the incident page: a person's own action, written by the same
ops_app incident service the agents' write tools use, so both leave the same change record."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from incidents_app import investigations
from incidents_app.models import Investigation, InvestigationPolicy
from ops_app.models import ChangeEvent, Incident

pytestmark = pytest.mark.django_db(transaction=True)
T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def incident(org):
    return Incident.objects.create(organization=org, title="Checkout 5xx", severity="critical", started_at=T0)


def test_acknowledge_then_resolve_are_recorded_with_the_person_and_shown_on_the_timeline(
    client, incident, member
):
    client.force_login(member)
    client.post(reverse("incident-acknowledge", args=[incident.pk]), {"note": "on it"})
    client.post(reverse("incident-resolve", args=[incident.pk]))

    incident.refresh_from_db()
    assert incident.status == "resolved" and incident.acknowledged_at and incident.resolved_at
    events = ChangeEvent.objects.filter(resource_type="incident", resource_id=str(incident.pk))
    assert [(e.actor_id, e.after["status"]) for e in events.order_by("occurred_at")] == [
        (member.pk, "acknowledged"),
        (member.pk, "resolved"),
    ]
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert "alice acknowledged incident Checkout 5xx: on it" in page
    assert "alice resolved incident Checkout 5xx" in page
    assert f'action="/incidents/{incident.pk}/resolve/"' not in page  # no Resolve once resolved


def test_resolving_from_the_page_stops_a_waiting_investigation(client, org, incident, member):
    InvestigationPolicy.objects.create(organization=org, max_concurrent=0)  # it stays queued
    queued = investigations.request(incident, member)
    client.force_login(member)
    client.post(reverse("incident-resolve", args=[incident.pk]))
    queued.refresh_from_db()
    assert queued.status == Investigation.Status.STOPPED
    assert "resolved" in queued.error


def test_an_auditor_cannot_acknowledge(client, incident, auditor):
    client.force_login(auditor)
    response = client.post(reverse("incident-acknowledge", args=[incident.pk]))
    assert response.status_code == 403
    incident.refresh_from_db()
    assert incident.status == "firing"
    assert not ChangeEvent.objects.filter(resource_type="incident").exists()
