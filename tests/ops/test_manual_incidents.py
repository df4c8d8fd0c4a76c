"""Manual incidents with a fingerprint (a repeated inspection problem): one open incident per
problem, even when two reports of it race."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from ops_app.estate import incidents
from ops_app.models import Incident

FINGERPRINT = "f" * 64


def open_problem(org, title: str = "db-01 /var full") -> tuple[Incident, bool]:
    return incidents.open_manual(
        org.pk, title=title, summary="91% used", fingerprint=FINGERPRINT, severity="critical"
    )


@pytest.mark.django_db
def test_the_database_refuses_a_second_open_manual_incident_for_one_problem(org, other_org):
    first, created = open_problem(org)
    assert created
    with pytest.raises(IntegrityError), transaction.atomic():
        Incident.objects.create(
            organization=org,
            title="twin",
            started_at=timezone.now(),
            source="manual",
            fingerprint=FINGERPRINT,
        )
    # Resolved ones, other organizations, and incidents without a fingerprint are not constrained.
    Incident.objects.filter(pk=first.pk).update(status=Incident.Status.RESOLVED)
    again, created = open_problem(org)
    assert created and again.pk != first.pk
    assert open_problem(other_org)[1]
    for title in ("by hand", "by hand too"):
        Incident.objects.create(organization=org, title=title, started_at=timezone.now(), source="manual")
    assert Incident.objects.filter(organization=org).exclude(status="resolved").count() == 3


@pytest.mark.django_db(transaction=True)
def test_concurrent_identical_problems_open_one_incident(org):
    if connection.vendor == "sqlite":
        pytest.skip("the race needs concurrent connections (run with DATABASE_URL=postgres://...)")
    racers = 6
    start = threading.Barrier(racers, timeout=20)
    results: list[tuple[int, bool]] = []
    errors: list[BaseException] = []

    def report():
        start.wait()
        try:
            incident, created = open_problem(org)
            results.append((incident.pk, created))
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=report) for _ in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)

    assert errors == []
    assert len(results) == racers
    assert len({pk for pk, _ in results}) == 1  # everyone got the same incident
    assert sum(created for _, created in results) == 1
    assert Incident.objects.filter(organization=org, fingerprint=FINGERPRINT).count() == 1
