"""Incidents seen before, as knowledge: a finished investigation's report becomes the incident's
one `past-incident` document (the newest report replaces the older one), its resolution adds what
fixed it, and `similar` finds it for a later incident of the same organization only."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from agents_app.models import MutatingProposal
from chat_app.models import ChatSession
from chat_app.signals import investigation_finished
from incidents_app import seen_before
from incidents_app.models import IncidentAction, Investigation
from ops_app.estate import incidents as estate_incidents
from ops_app.estate.change_events import Actor
from ops_app.knowledge import past_incidents
from ops_app.models import Alert, Incident, KnowledgeDocument

pytestmark = pytest.mark.django_db
STARTED = dt.datetime(2026, 3, 4, 10, 0, tzinfo=dt.UTC)

DISK_REPORT = {
    "summary": "Postgres on db-01 stopped accepting writes.",
    "root_cause": "The WAL volume of db-01 filled up after archiving stalled.",
    "patient_zero": {"kind": "device", "name": "db-01"},
}
CERT_REPORT = {
    "summary": "Browsers refused the storefront.",
    "root_cause": "The TLS certificate of shop.example.com expired; renewal cron was disabled.",
    "patient_zero": {"kind": "service", "name": "storefront"},
}


def incident_of(org, title: str, alert: str, **fields) -> Incident:
    incident = Incident.objects.create(organization=org, title=title, started_at=STARTED, **fields)
    Alert.objects.create(
        organization=org,
        incident=incident,
        name=alert,
        fingerprint=f"fp-{incident.pk}",
        labels={"alertname": alert, "service": "orders-db"},
        starts_at=STARTED,
    )
    return incident


def finished(incident: Incident, report: dict, status: str = "done") -> Investigation:
    """An investigation that ended, announced as the runner announces it."""
    investigation = Investigation.objects.create(
        organization_id=incident.organization_id,
        incident=incident,
        trigger="manual",
        status=status,
        report=report if status == "done" else {},
        finished_at=timezone.now(),
    )
    investigation_finished.send(sender=Investigation, investigation=investigation)
    return investigation


def document_of(incident: Incident) -> KnowledgeDocument:
    return KnowledgeDocument.objects.get(source_kind="past-incident", incident=incident)


def test_a_finished_report_becomes_the_incidents_one_past_incident_document(
    org, django_capture_on_commit_callbacks
):
    incident = incident_of(org, "Orders DB read-only", "PostgresReadOnly", affected_services=["orders"])
    with django_capture_on_commit_callbacks(execute=True):
        finished(incident, DISK_REPORT)

    document = document_of(incident)
    assert document.title == "Orders DB read-only (2026-03-04)"
    assert document.source == f"incident/{incident.pk}"
    assert document.url == f"/incidents/{incident.pk}/"
    sections = past_incidents.sections_of(document.content)
    assert sections["Root cause"] == DISK_REPORT["root_cause"]
    assert sections["Patient zero"] == "device db-01"
    assert "PostgresReadOnly" in sections["Affected"] and "orders" in sections["Affected"]
    assert "What fixed it" not in sections  # not resolved yet
    assert document.passages.exists()  # indexed: searchable right away


def test_the_newest_report_replaces_the_older_one_and_a_failed_run_changes_nothing(
    org, django_capture_on_commit_callbacks
):
    incident = incident_of(org, "Orders DB read-only", "PostgresReadOnly")
    with django_capture_on_commit_callbacks(execute=True):
        finished(incident, DISK_REPORT)
        finished(incident, {**DISK_REPORT, "root_cause": "A runaway batch job filled the WAL volume."})
        finished(incident, {}, status="failed")

    documents = KnowledgeDocument.objects.filter(source_kind="past-incident", incident=incident)
    assert documents.count() == 1
    assert "runaway batch job" in documents.get().content
    assert "archiving stalled" not in documents.get().content
    found = past_incidents.similar(org.id, "runaway batch job WAL volume").incidents
    assert [f.incident_id for f in found] == [incident.pk]


def test_a_resolve_done_in_ongrid_adds_who_resolved_it_and_their_note(
    org, member, django_capture_on_commit_callbacks
):
    incident = incident_of(org, "Orders DB read-only", "PostgresReadOnly")
    with django_capture_on_commit_callbacks(execute=True):
        finished(incident, DISK_REPORT)
    with django_capture_on_commit_callbacks(execute=True):
        estate_incidents.resolve(
            incident.pk, org.id, Actor(name="alice", user_id=member.pk), note="grew the WAL volume to 200G"
        )

    fixed = past_incidents.sections_of(document_of(incident).content)["What fixed it"]
    assert fixed == "- Resolved by alice: grew the WAL volume to 200G"
    found = past_incidents.similar(org.id, "orders db read-only WAL").incidents[0]
    assert found.what_fixed_it == ["Resolved by alice: grew the WAL volume to 200G"]
    assert found.resolved_at is not None


def test_a_paged_incident_resolved_in_its_source_says_so_with_the_executed_change(
    org, member, django_capture_on_commit_callbacks
):
    incident = incident_of(org, "Storefront TLS errors", "CertificateExpired", source="pagerduty")
    session = ChatSession.objects.create(organization=org, title="action")
    IncidentAction.objects.create(
        organization=org, incident=incident, requested_by=member, verb="change",
        label="Renew the certificate of shop.example.com", session=session,
    )  # fmt: skip
    refused = ChatSession.objects.create(organization=org, title="action")
    IncidentAction.objects.create(
        organization=org, incident=incident, requested_by=member, verb="change",
        label="Restart every web node", session=refused,
    )  # fmt: skip
    for root, executed in ((session, timezone.now()), (refused, None)):
        MutatingProposal.objects.create(
            organization=org, session=root, root_session=root, tool="host_bash", tool_class="write",
            persona="default", permission_mode="default", executed_at=executed,
        )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        finished(incident, CERT_REPORT)
    with django_capture_on_commit_callbacks(execute=True):
        incident.status, incident.resolved_at = Incident.Status.RESOLVED, timezone.now()
        incident.save()  # what the PagerDuty webhook's intake does

    fixed = past_incidents.sections_of(document_of(incident).content)["What fixed it"].splitlines()
    assert fixed == [
        "- Executed change: Renew the certificate of shop.example.com",  # not the one never run
        "- Resolved in PagerDuty",
    ]


def test_resolving_an_incident_never_investigated_writes_nothing(org, django_capture_on_commit_callbacks):
    incident = incident_of(org, "Orders DB read-only", "PostgresReadOnly")
    with django_capture_on_commit_callbacks(execute=True):
        incident.status = Incident.Status.RESOLVED
        incident.save()
    assert not KnowledgeDocument.objects.filter(source_kind="past-incident").exists()
    assert seen_before.remember(incident.pk) is None


def test_similar_finds_the_matching_past_incident_leaves_the_incident_out_and_keeps_tenants_apart(
    org, other_org, django_capture_on_commit_callbacks
):
    disk = incident_of(org, "Orders DB read-only", "PostgresReadOnly")
    cert = incident_of(org, "Storefront TLS errors", "CertificateExpired")
    theirs = incident_of(other_org, "Orders DB read-only", "PostgresReadOnly")
    with django_capture_on_commit_callbacks(execute=True):
        finished(disk, DISK_REPORT)
        finished(cert, CERT_REPORT)
        finished(theirs, DISK_REPORT)

    again = incident_of(org, "Orders DB read-only again", "PostgresReadOnly")
    found = seen_before.for_page(again)
    assert found[0].incident_id == disk.pk
    assert found[0].root_cause == DISK_REPORT["root_cause"]
    assert theirs.pk not in {f.incident_id for f in found}
    assert disk.pk not in {f.incident_id for f in seen_before.for_page(disk)}  # never itself
    certificate = past_incidents.similar(org.id, "certificate expired storefront", top_k=1).incidents
    assert [f.incident_id for f in certificate] == [cert.pk]
    assert past_incidents.similar(other_org.id, "certificate expired").incidents == []
