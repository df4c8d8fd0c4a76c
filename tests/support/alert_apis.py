"""Pytest fixtures for the fake vendor REST APIs alert sources write back to
(`fakes/pagerduty_api.py`, `fakes/opsgenie_api.py`, `fakes/grafana_api.py`), and builders of
sources pointed at them. Registered for the whole suite by tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.grafana_api import FakeGrafana
from fakes.opsgenie_api import FakeOpsgenie
from fakes.pagerduty_api import FakePagerDuty
from ops_app.models import AlertSource

PD_INCIDENT = "Q1ABC2DEF"
OG_ALERT = "8418d193-2dab-4490-b331-8c02cdd196b7"
FROM_EMAIL = "oncall@example.com"


@pytest.fixture
def fake_pagerduty() -> Iterator[FakePagerDuty]:
    fake = FakePagerDuty(incidents=(PD_INCIDENT,)).start()
    try:
        yield fake
    finally:
        fake.release()
        fake.stop()


@pytest.fixture
def fake_opsgenie() -> Iterator[FakeOpsgenie]:
    fake = FakeOpsgenie(alerts={OG_ALERT: "checkout-5xx"}).start()
    try:
        yield fake
    finally:
        fake.release()
        fake.stop()


@pytest.fixture
def fake_grafana() -> Iterator[FakeGrafana]:
    fake = FakeGrafana().start()
    try:
        yield fake
    finally:
        fake.release()
        fake.stop()


def pagerduty_source(org, fake: FakePagerDuty, **fields) -> AlertSource:
    values = {
        "name": "pagerduty-payments",
        "kind": AlertSource.Kind.PAGERDUTY,
        "signing_secret": "pd-webhook-secret",
        "api_base_url": fake.api_base,
        "api_key": fake.api_key,
        "from_email": FROM_EMAIL,
    }
    return AlertSource.objects.create(organization=org, **{**values, **fields})


def opsgenie_source(org, fake: FakeOpsgenie | None, **fields) -> AlertSource:
    values = {
        "name": "opsgenie-payments",
        "kind": AlertSource.Kind.OPSGENIE,
        "auth_token": "og-webhook-token",
        "api_base_url": fake.api_base if fake else "",
        "api_key": fake.api_key if fake else "og-key",
    }
    return AlertSource.objects.create(organization=org, **{**values, **fields})


def grafana_source(org, fake: FakeGrafana, **fields) -> AlertSource:
    values = {
        "name": "grafana-payments",
        "kind": AlertSource.Kind.GRAFANA,
        "api_base_url": fake.api_base,
        "api_key": fake.token,
    }
    return AlertSource.objects.create(organization=org, **{**values, **fields})
