"""Acknowledge / Resolve done in Ongrid mirrored to the incident's source when the source's
`mirror_state` is on (incidents_app.writeback, ops_app.estate.signals): a write-back row of kind
acknowledge / resolve, delivered with the same retries; off, or a change that came from the
source's own webhook, writes nothing."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from fakes.openai_server import text
from incidents_app import writeback_outbox
from incidents_app.models import SourceWriteback
from ops_app.estate import incidents
from ops_app.estate.change_events import Actor
from ops_app.estate.signals import incident_state_changed
from ops_app.models import Incident
from tests.support.alert_apis import OG_ALERT, PD_INCIDENT, opsgenie_source, pagerduty_source
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.gate import ack_arguments, gated_call, make_chat, make_worker
from tests.support.procs import wait_until
from tests.support.writebacks import paged_incident

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("inline_writeback", "close_async_db_connections"),
]

ACTOR = Actor(None, "agent specialist-ops")
APPROVE = "Decision: approve\nSOP: pass — RB-12 covers acknowledging\nConcurrent work: pass\nRollback: pass"


def pd_status(fake) -> str:
    return fake.incidents[PD_INCIDENT]["status"]


def test_acknowledge_and_resolve_in_ongrid_are_done_in_pagerduty(org, fake_pagerduty):
    source = pagerduty_source(org, fake_pagerduty, mirror_state=True)
    incident = paged_incident(org, source, PD_INCIDENT)

    incidents.acknowledge(incident.pk, org.pk, ACTOR, "on it")
    wait_until(lambda: pd_status(fake_pagerduty) == "acknowledged", 20.0, "PagerDuty acknowledged")
    incidents.resolve(incident.pk, org.pk, ACTOR, "fixed")
    wait_until(lambda: pd_status(fake_pagerduty) == "resolved", 20.0, "PagerDuty resolved")

    bodies = [r.json for r in fake_pagerduty.received("PUT")]
    assert bodies == [
        {"incident": {"type": "incident_reference", "status": "acknowledged"}},
        {"incident": {"type": "incident_reference", "status": "resolved"}},
    ]
    kinds = list(SourceWriteback.objects.order_by("pk").values_list("kind", "status"))
    assert kinds == [("acknowledge", "done"), ("resolve", "done")]


def test_opsgenie_acknowledge_and_close(org, fake_opsgenie):
    source = opsgenie_source(org, fake_opsgenie, mirror_state=True)
    incident = paged_incident(org, source, OG_ALERT)

    incidents.resolve(incident.pk, org.pk, ACTOR, "fixed")  # firing → resolved directly
    wait_until(lambda: fake_opsgenie.alerts[OG_ALERT]["status"] == "closed", 20.0, "the alert closed")

    assert [r.path.rsplit("/", 1)[-1] for r in fake_opsgenie.received()] == ["close"]


def test_mirror_off_writes_nothing(org, fake_pagerduty):
    source = pagerduty_source(org, fake_pagerduty, mirror_state=False)
    incident = paged_incident(org, source, PD_INCIDENT)

    incidents.acknowledge(incident.pk, org.pk, ACTOR)
    async_to_sync(writeback_outbox.drain_once)(None)

    assert not SourceWriteback.objects.exists() and fake_pagerduty.requests == []


def test_a_state_change_from_the_sources_webhook_is_not_echoed_back(org, fake_pagerduty):
    source = pagerduty_source(org, fake_pagerduty, mirror_state=True)
    incident = paged_incident(org, source, PD_INCIDENT)

    # What the PagerDuty receiver does on incident.acknowledged: it updates the row itself.
    Incident.objects.filter(pk=incident.pk).update(status="acknowledged")
    async_to_sync(writeback_outbox.drain_once)(None)

    assert not SourceWriteback.objects.exists() and fake_pagerduty.requests == []


def test_a_mirrored_state_is_retried_like_the_findings(org, fake_pagerduty):
    source = pagerduty_source(org, fake_pagerduty, mirror_state=True)
    incident = paged_incident(org, source, PD_INCIDENT)
    fake_pagerduty.fail_next(1, status=503)

    incidents.acknowledge(incident.pk, org.pk, ACTOR)
    wait_until(lambda: SourceWriteback.objects.filter(attempts=1).first(), 20.0, "the first attempt")
    row = SourceWriteback.objects.get()
    assert (row.status, row.last_error) == ("pending", "HTTP 503")
    async_to_sync(writeback_outbox.drain_once)(row.next_attempt_at)

    assert pd_status(fake_pagerduty) == "acknowledged"


def test_another_organizations_incident_is_never_mirrored(org, other_org, fake_pagerduty):
    source = pagerduty_source(other_org, fake_pagerduty, mirror_state=True)
    theirs = paged_incident(other_org, source, PD_INCIDENT)

    incident_state_changed.send(
        sender=Incident, organization_id=org.pk, incident_id=theirs.pk, status="resolved"
    )

    assert not SourceWriteback.objects.exists()


async def test_the_gated_acknowledge_tool_is_mirrored(
    org, member, agents_llm, fake_pagerduty, fresh_gate_caches
):
    source = await sync_to_async(pagerduty_source)(org, fake_pagerduty, mirror_state=True)
    incident = await sync_to_async(paged_incident)(org, source, PD_INCIDENT)
    worker = await sync_to_async(make_worker)(await sync_to_async(make_chat)(member))
    agents_llm.add("reviewer", text(APPROVE))

    outcome = await gated_call(
        worker, "specialist-ops", "acknowledge_incident", ack_arguments(incident), "a-1"
    )

    assert outcome.status == "ok"
    await sync_to_async(wait_until)(
        lambda: pd_status(fake_pagerduty) == "acknowledged", 20.0, "PagerDuty acknowledged"
    )
