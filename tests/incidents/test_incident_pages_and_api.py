"""Incident pages and API: tenancy, the investigate action, restart safety (reaper, backfill)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import socket

import pytest
from django.urls import reverse

from chat_app import services
from chat_app.models import ChatSession
from incidents_app import investigations, startup
from incidents_app.models import Investigation, InvestigationPolicy
from ops_app.models import Device, Incident, TopologyEdge, TopologyNode

pytestmark = pytest.mark.django_db(transaction=True)
T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def incident(org):
    return Incident.objects.create(organization=org, title="Checkout 5xx", severity="critical", started_at=T0)


@pytest.fixture
def held_queue(org):
    """Nothing launches: the tests look at what was queued, not at a run."""
    return InvestigationPolicy.objects.create(organization=org, max_concurrent=0)


def test_another_organization_gets_404_on_pages_and_api(client, incident, outsider):
    client.force_login(outsider)
    for url in (
        reverse("incident-page", args=[incident.pk]),
        f"/api/incidents/{incident.pk}/",
        f"/api/incidents/{incident.pk}/investigations/",
    ):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/api/incidents/{incident.pk}/investigate/").status_code == 404
    assert incident.title not in client.get(reverse("incident-list")).content.decode()
    assert client.get("/api/incidents/").json()["results"] == []


def test_a_member_starts_an_investigation_through_the_api_and_reads_it_back(
    client, member, incident, held_queue
):
    client.force_login(member)
    started = client.post(f"/api/incidents/{incident.pk}/investigate/")
    assert started.status_code == 202 and started.json()["trigger"] == "manual"
    assert client.post(f"/api/incidents/{incident.pk}/investigate/").status_code == 409
    detail = client.get(f"/api/incidents/{incident.pk}/").json()
    assert detail["latest_investigation"]["status"] == "queued"
    listed = client.get(f"/api/incidents/{incident.pk}/investigations/").json()
    assert [row["id"] for row in listed["results"]] == [started.json()["id"]]
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert "Checkout 5xx" in page and "queued" in page
    assert "/api/incidents/{id}/investigate/" in client.get("/api/schema/").content.decode()


def test_the_reaper_fails_an_orphaned_investigation_and_it_can_be_investigated_again(
    client, member, incident, held_queue
):
    investigation = investigations.request(incident, member)
    Investigation.objects.filter(pk=investigation.pk).update(status="running")
    session = investigations.open_session(investigation.pk, "Investigate incident #1")
    ChatSession.objects.filter(pk=session.pk).update(owner=f"{socket.gethostname()}:999999")  # a dead pid

    assert services.reap_orphans() == 1

    investigation.refresh_from_db()
    assert investigation.status == "failed" and "reaper" in investigation.error
    assert ChatSession.objects.get(pk=session.pk).status == "failed"
    client.force_login(member)
    assert client.post(f"/api/incidents/{incident.pk}/investigate/").status_code == 202


def test_startup_backfills_firing_incidents_that_match_the_policy_bounded(org, settings, held_queue):
    # Incidents stored while no process could investigate them (automatic investigation was off).
    for name, severity in (("a", "critical"), ("b", "critical"), ("c", "warning")):
        Incident.objects.create(organization=org, title=name, severity=severity, started_at=T0)
    Incident.objects.create(
        organization=org, title="old", severity="critical", started_at=T0, status="resolved"
    )
    settings.CONFIG = dataclasses.replace(settings.CONFIG, auto_investigate=True)

    assert len(startup.recover(backfill_limit=1)) == 1
    assert len(startup.recover(backfill_limit=5)) == 1  # the other critical one; never the warning
    assert sorted(Investigation.objects.values_list("incident__title", flat=True)) == ["a", "b"]
    assert set(Investigation.objects.values_list("trigger", flat=True)) == {"backfill"}


def test_an_auditor_reads_but_cannot_start_an_investigation(client, auditor, incident):
    client.force_login(auditor)
    assert client.get(f"/api/incidents/{incident.pk}/").status_code == 200
    assert client.post(f"/api/incidents/{incident.pk}/investigate/").status_code == 403


def test_patient_zero_is_shown_with_its_device_and_topology_neighbourhood(
    client, org, incident, member, org_admin
):
    db = Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    pg = TopologyNode.objects.create(organization=org, name="payments-db", kind="database", device=db)
    api = TopologyNode.objects.create(organization=org, name="payments-api", kind="service")
    disk = TopologyNode.objects.create(organization=org, name="san-a", kind="other")
    TopologyEdge.objects.create(organization=org, source=api, target=pg)
    TopologyEdge.objects.create(organization=org, source=pg, target=disk)
    named = {"kind": "device", "name": "db-01", "device_id": db.pk}
    report = {"summary": "s", "root_cause": "r", "patient_zero": named}
    Investigation.objects.create(
        organization=org, incident=incident, trigger="manual", status="done", report=report
    )

    client.force_login(member)
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert f'device <a href="/devices/{db.pk}/">db-01</a> (10.0.0.9)' in page
    assert "topology node payments-db (database)" in page
    api_link = '<a href="/incidents/?service=payments-api"><strong>payments-api</strong></a>'
    assert f"called by {api_link} (service)" in page
    assert 'calls <a href="/incidents/?service=san-a"><strong>san-a</strong></a> (other)' in page
    assert f"/admin/ops_app/device/{db.pk}/change/" not in page  # a member does not reach the admin
    client.force_login(org_admin)
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert f'<a href="/devices/{db.pk}/">db-01</a>' in page  # the read-only page, for admins too
    device = client.get(reverse("device-page", args=[db.pk])).content.decode()
    assert f'href="/admin/ops_app/device/{db.pk}/change/"' in device  # from there, the admin form
