from __future__ import annotations

import pytest

from ops_app.models import AlertSource

PD_SECRET = "pd-subscription-secret-1"
OG_TOKEN = "opsgenie-header-token-1"
GRAFANA_TOKEN = "grafana-bearer-token-1"
GRAFANA_HMAC = "grafana-hmac-secret-1"
GENERIC_TOKEN = "generic-bearer-token-1"
GENERIC_HMAC = "generic-hmac-secret-1"
MAPPING = {
    "title": "alert.name",
    "severity": "level",
    "status": "state",
    "group_key": "id",
    "labels": "tags",
    "started_at": "ts",
    "event_id": "delivery",
    "external_url": "link",
    "status_map": {"open": "firing", "ack": "acknowledged", "closed": "resolved"},
    "severity_map": {"sev1": "critical", "sev2": "high"},
}


@pytest.fixture
def pd_source(org) -> AlertSource:
    return AlertSource.objects.create(
        organization=org, name="pagerduty-payments", kind="pagerduty", signing_secret=PD_SECRET
    )


@pytest.fixture
def og_source(org) -> AlertSource:
    return AlertSource.objects.create(organization=org, name="opsgenie", kind="opsgenie", auth_token=OG_TOKEN)


@pytest.fixture
def grafana_source(org) -> AlertSource:
    return AlertSource.objects.create(
        organization=org, name="grafana", kind="grafana", auth_token=GRAFANA_TOKEN
    )


@pytest.fixture
def generic_source(org) -> AlertSource:
    return AlertSource.objects.create(
        organization=org, name="uptime", kind="generic", auth_token=GENERIC_TOKEN, mapping=MAPPING
    )
