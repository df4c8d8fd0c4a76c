"""Builders for the write-back tests: an incident from a paging source (made with the ORM, as
engineer A's receivers would leave it), a finished investigation of it, and waiting for the rows."""

from __future__ import annotations

import pytest
from django.utils import timezone

from incidents_app import notify
from incidents_app.models import Investigation, SourceWriteback
from ops_app.models import Alert, AlertSource, Incident
from tests.support.investigations import report
from tests.support.procs import wait_until

PATIENT_ZERO = {"kind": "device", "name": "db-01"}


@pytest.fixture
def inline_writeback(settings) -> None:
    """Rows are tried on this process's loop (the embedded shape), not handed to Celery."""
    settings.ONGRID_EXECUTOR = "inline"


def paged_incident(org, source: AlertSource, external_id: str = "", **fields) -> Incident:
    values = {
        "title": "Checkout 5xx above 10%",
        "severity": "critical",
        "started_at": timezone.now(),
        "source": source.kind if source.kind != "generic" else "webhook",
        "alert_source": source,
        "external_id": external_id,
        "fingerprint": f"fp-{source.pk}-{external_id or 'x'}",
    }
    return Incident.objects.create(organization=org, **{**values, **fields})


def grafana_alert(incident: Incident, **annotations) -> Alert:
    return Alert.objects.create(
        organization_id=incident.organization_id,
        incident=incident,
        name="CheckoutErrors",
        fingerprint="a1b2c3",
        severity="critical",
        labels={"alertname": "CheckoutErrors", "service": "checkout", "team": "payments"},
        annotations=annotations,
        starts_at=incident.started_at,
    )


def finished_investigation(incident: Incident, status: str = "done", **report_fields) -> Investigation:
    done = status == "done"
    return Investigation.objects.create(
        organization_id=incident.organization_id,
        incident=incident,
        trigger=Investigation.Trigger.PAGED,
        status=status,
        report=report(PATIENT_ZERO, **report_fields) if done else {},
        confidence=0.8 if done else None,
        partial_findings="" if done else "db-01 stopped answering at 10:02",
        finished_at=timezone.now(),
    )


def end(investigation: Investigation) -> None:
    """What the runner does when an investigation reaches a terminal state."""
    notify.investigation_ended(investigation)


def wait_row(incident: Incident, what: str = "a write-back attempt", **match) -> SourceWriteback:
    def found():
        return incident.writebacks.filter(**match).first()

    return wait_until(found, 20.0, what, interval=0.05)
