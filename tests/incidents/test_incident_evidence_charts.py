"""PromQL evidence on the incident page is drawn as the chat's charts, from the numbers the
investigator's own query returned (its audit row), not from a re-run of the query."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.urls import reverse

from incidents_app.models import Investigation
from ops_app.models import Incident
from tests.support import audit_rows
from tests.support.investigations import report

pytestmark = pytest.mark.django_db
T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)
SERIES = {
    "series": [
        {
            "labels": {"__name__": "http_errors_ratio", "service": "checkout"},
            "points": [[1777629600, "0.01"], [1777629660, "0.09"], [1777629720, "0.12"]],
        }
    ]
}


def test_promql_evidence_is_charted_and_other_evidence_is_not(client, org, org_admin):
    incident = Incident.objects.create(
        organization=org, title="Checkout 5xx", severity="critical", started_at=T0
    )
    session = audit_rows.session(org, kind="investigation", agent_id="incident-investigator")
    promql = audit_rows.tool_call(session, "query_promql", result=json.dumps(SERIES), tool_call_id="q1")
    detail = audit_rows.tool_call(session, "get_incident_detail", result='{"id": 1}', tool_call_id="c1")
    body = report({"kind": "service", "name": "checkout"})
    body["evidence"] = [
        {"tool_call_id": "q1", "tool": "query_promql", "audit_id": promql.pk, "finding": "errors rose",
         "query": "http_errors_ratio", "window": "30m"},
        {"tool_call_id": "c1", "tool": "get_incident_detail", "audit_id": detail.pk, "finding": "fired"},
    ]  # fmt: skip
    Investigation.objects.create(
        organization=org, incident=incident, session=session, trigger="manual", status="done", report=body
    )
    client.force_login(org_admin)
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    evidence = page.split('<ul class="evidence">')[1]
    first, second = evidence.split("<li>fired")  # the PromQL item, then the other one
    assert "errors rose" in first and "<svg" in first
    assert "http_errors_ratio{service=&quot;checkout&quot;}" in first  # the series' legend
    assert "<svg" not in second.split("<h3>")[0]
