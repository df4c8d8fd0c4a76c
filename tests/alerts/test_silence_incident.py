"""`silence_incident` (agents_app/toolsets/incidents/changes.py): through the review gate like every
write, it quiets an incident where it came from — a PagerDuty or Opsgenie snooze, a Grafana
Alerting silence, or an Alertmanager silence through `create_silence` (a real Alertmanager) — on
the labels all its alerts share, and says why when there is no way to silence it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents_app.gate.direct_calls import persona_for
from agents_app.models import MutatingProposal
from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.registry import load_builtin_tools
from fakes.openai_server import text
from ops_app.models import Alert, Incident
from tests.support.alert_apis import OG_ALERT, PD_INCIDENT, grafana_source, opsgenie_source, pagerduty_source
from tests.support.alertmanager import running_alertmanager
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.gate import gated_call, make_chat, make_worker
from tests.support.writebacks import paged_incident

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections", "fresh_gate_caches"),
]

REASON = "On-call is on it; runbook RB-12 says silence the page for an hour while we fix db-01."
APPROVE = "Decision: approve\nSOP: pass — RB-12 covers silencing\nConcurrent work: pass\nRollback: pass"


def silence(org, **arguments):
    tool = load_builtin_tools()["silence_incident"]
    return tool.handler(ToolContext(organization_id=org.pk, persona_name="specialist-ops"), **arguments)


def alerts_of(incident: Incident, *label_sets: dict) -> None:
    for index, labels in enumerate(label_sets):
        Alert.objects.create(
            organization_id=incident.organization_id,
            incident=incident,
            name=labels.get("alertname", "A"),
            fingerprint=f"fp{index}",
            labels=labels,
            starts_at=timezone.now() - dt.timedelta(minutes=index),
        )


SHARED = {"alertname": "CheckoutErrors", "service": "checkout", "team": "payments"}


async def test_a_pagerduty_incident_is_snoozed_there_through_the_gate(
    org, member, agents_llm, fake_pagerduty
):
    source = await sync_to_async(pagerduty_source)(org, fake_pagerduty)
    incident = await sync_to_async(paged_incident)(org, source, PD_INCIDENT)
    chat = await sync_to_async(make_chat)(member, "Silence the checkout page for an hour")
    worker = await sync_to_async(make_worker)(chat)
    agents_llm.add("reviewer", text(APPROVE))

    arguments = {"incident_id": incident.pk, "minutes": 60, "reason": REASON}
    outcome = await gated_call(worker, "specialist-ops", "silence_incident", arguments, "sil-1")

    assert outcome.status == "ok" and json.loads(outcome.content)["silenced"] is True
    assert fake_pagerduty.incidents[PD_INCIDENT]["snoozed_for"] == 3600
    snooze = fake_pagerduty.received("POST", "/snooze")[0]
    assert snooze.json == {"duration": 3600}
    proposal = await MutatingProposal.objects.aget(tool_call_id="sil-1")
    assert proposal.payload["target"] == f"incident:{incident.pk}" and proposal.executed_at is not None


async def test_a_rejected_silence_never_reaches_the_source(org, member, agents_llm, fake_pagerduty):
    source = await sync_to_async(pagerduty_source)(org, fake_pagerduty)
    incident = await sync_to_async(paged_incident)(org, source, PD_INCIDENT)
    worker = await sync_to_async(make_worker)(await sync_to_async(make_chat)(member))
    agents_llm.add("reviewer", text("Decision: reject\nSOP: fail — no runbook covers silencing"))

    arguments = {"incident_id": incident.pk, "reason": REASON}
    outcome = await gated_call(worker, "specialist-ops", "silence_incident", arguments, "sil-2")

    assert outcome.status == "rejected"
    assert fake_pagerduty.requests == []


async def test_opsgenie_is_snoozed_for_the_default_hour(org, fake_opsgenie):
    source = await sync_to_async(opsgenie_source)(org, fake_opsgenie)
    incident = await sync_to_async(paged_incident)(org, source, OG_ALERT)

    result = await silence(org, incident_id=incident.pk, reason=REASON)

    assert (result["silenced"], result["minutes"]) == (True, 60)
    [snooze] = fake_opsgenie.received("POST", "/snooze")
    until = dt.datetime.fromisoformat(snooze.json["endTime"].replace("Z", "+00:00"))
    assert abs((until - dt.datetime.now(dt.UTC)).total_seconds() - 3600) < 60
    assert snooze.json["note"] == REASON and snooze.query == {"identifierType": "id"}


async def test_grafana_silences_the_labels_every_alert_shares(org, fake_grafana):
    source = await sync_to_async(grafana_source)(org, fake_grafana)
    incident = await sync_to_async(paged_incident)(org, source, fingerprint="group-1")
    await sync_to_async(alerts_of)(
        incident, {**SHARED, "instance": "web-01:9100"}, {**SHARED, "instance": "web-02:9100"}
    )

    result = await silence(org, incident_id=incident.pk, minutes=30, reason=REASON)

    assert result["silenced"] is True
    [made] = fake_grafana.silences
    assert {(m["name"], m["value"]) for m in made["matchers"]} == set(SHARED.items())
    assert made["createdBy"] == "ongrid/specialist-ops" and made["comment"] == REASON
    length = dt.datetime.fromisoformat(made["endsAt"]) - dt.datetime.fromisoformat(made["startsAt"])
    assert length == dt.timedelta(minutes=30)


@pytest.fixture(scope="module")
def alertmanager(tmp_path_factory):
    with running_alertmanager("http://127.0.0.1:9/unused", tmp_path_factory.mktemp("am")) as server:
        yield server


async def test_an_alertmanager_incident_is_silenced_through_create_silence(org, settings, alertmanager):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, alertmanager_url=alertmanager.url)
    incident = await Incident.objects.acreate(
        organization=org,
        title="Checkout 5xx",
        started_at=timezone.now(),
        source="alertmanager",
        fingerprint="g",
    )
    await sync_to_async(alerts_of)(incident, {**SHARED, "pod": "a"}, {**SHARED, "pod": "b"})

    result = await silence(org, incident_id=incident.pk, reason=REASON)

    async with httpx.AsyncClient() as client:
        made = (await client.get(f"{alertmanager.url}/api/v2/silence/{result['silence_id']}")).json()
    assert made["status"]["state"] == "active"
    assert {(m["name"], m["value"]) for m in made["matchers"]} == set(SHARED.items())
    assert made["createdBy"] == "ongrid/specialist-ops"


async def test_no_way_to_silence_is_a_clear_result_not_an_error(org, settings, fake_pagerduty):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, alertmanager_url=None)
    manual = await Incident.objects.acreate(organization=org, title="By hand", started_at=timezone.now())
    unconfigured = await Incident.objects.acreate(
        organization=org, title="AM", started_at=timezone.now(), source="alertmanager", fingerprint="g2"
    )
    await sync_to_async(alerts_of)(unconfigured, SHARED)
    keyless = await sync_to_async(pagerduty_source)(org, fake_pagerduty, api_key="")
    paged = await sync_to_async(paged_incident)(org, keyless, PD_INCIDENT)

    answers = [await silence(org, incident_id=i.pk, reason=REASON) for i in (manual, unconfigured, paged)]

    assert [a["silenced"] for a in answers] == [False, False, False]
    assert "did not come from a paging tool or Alertmanager" in answers[0]["why"]
    assert "Alertmanager is not configured" in answers[1]["why"]
    assert "has no API key" in answers[2]["why"]
    assert fake_pagerduty.requests == []


async def test_another_organizations_incident_is_not_found(org, other_org, fake_pagerduty):
    source = await sync_to_async(pagerduty_source)(other_org, fake_pagerduty)
    theirs = await sync_to_async(paged_incident)(other_org, source, PD_INCIDENT)

    with pytest.raises(ToolError, match="not found in this organization"):
        await silence(org, incident_id=theirs.pk, reason=REASON)
    assert fake_pagerduty.requests == []


def test_the_cards_button_finds_the_ops_specialist_to_run_it(org):
    assert persona_for(org.pk, "silence_incident") == "specialist-ops"


async def test_a_grafana_incident_without_alert_rows_is_silenced_by_its_group_labels(org, fake_grafana):
    source = await sync_to_async(grafana_source)(org, fake_grafana)
    key = (
        '{}/{__grafana_autogenerated__="true"}/{__grafana_receiver__="ongrid"}'
        ':{alertname="CheckoutErrors", team="pay \\"A\\""}'
    )
    incident = await sync_to_async(paged_incident)(org, source, fingerprint="group-2", group_key=key)

    result = await silence(org, incident_id=incident.pk, reason=REASON)

    assert result["silenced"] is True
    [made] = fake_grafana.silences
    assert {(m["name"], m["value"]) for m in made["matchers"]} == {
        ("alertname", "CheckoutErrors"),
        ("team", 'pay "A"'),
    }


def test_the_offline_reviewer_and_the_evaluations_treat_it_as_reaching_outside_ongrid():
    """It lives in the incidents toolset (Ongrid's own records) but calls a paging tool: the
    stand-in reviewer does not approve it, and evaluations answer it from recordings."""
    from agents_app.llm.offline.tool_knowledge import is_approved_offline
    from evals_app.runner import replayed_tools

    assert is_approved_offline("acknowledge_incident") and not is_approved_offline("silence_incident")
    assert "silence_incident" in replayed_tools() and "acknowledge_incident" not in replayed_tools()
