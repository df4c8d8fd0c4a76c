"""End to end through the Slack fake (it speaks Slack's Web API and records every call): a firing
incident → a card in the on-call channel with Acknowledge / Investigate now / Silence 1 h → the
investigation's first findings edit the same message → a linked Slack user presses Acknowledge →
the review gate approves and runs it → the same message says who acknowledged and offers no
Acknowledge any more."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from urllib.parse import urlencode

import pytest
from asgiref.sync import sync_to_async

from agents_app.models import MutatingProposal
from fakes.slack_api import FakeSlack
from incidents_app.alerting import triggers
from incidents_app.models import Investigation, NotificationChannel, NotificationDelivery
from ops_app.models import Incident
from tests.support.alerts import fire, rule
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.im import link, post_slack, slack_app

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("inline_executor", "fixed_clock", "close_async_db_connections"),
]
CHANNEL = "C-ONCALL"


@pytest.fixture
def offline(settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, llm="offline", openai_api_key="")


@pytest.fixture
def slack():
    fake = FakeSlack().start()
    yield fake
    fake.stop()


async def until(predicate, seconds: float = 30.0, what: str = "the condition"):
    """Poll (without blocking the loop the product's background work may run on)."""
    deadline = time.monotonic() + seconds
    while True:
        value = await sync_to_async(predicate)()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def shown(slack: FakeSlack, ts: str) -> tuple[str, list[str]]:
    """The message's text and its buttons' action ids, as the channel's readers see them now."""
    message = slack.messages[ts]
    actions = [block for block in message["blocks"] if block["type"] == "actions"]
    return message["text"], [e["action_id"] for e in (actions[0]["elements"] if actions else [])]


async def test_a_slack_card_is_edited_with_the_findings_and_acknowledged_through_the_gate(
    org, member, slack, offline
):
    app = await sync_to_async(slack_app)(org, slack)
    await sync_to_async(link)(app, "U42", member)
    channel = await NotificationChannel.objects.acreate(
        organization=org, name="#oncall", kind="im", im_app=app, im_channel=CHANNEL
    )
    await sync_to_async(rule)(org, channel)

    incident = await sync_to_async(fire)(org, "Checkout 5xx")
    card = await until(
        lambda: NotificationDelivery.objects.filter(kind="alert", status="sent").first(), what="the card"
    )
    ts = card.ref["message"]
    posted = [c for c in slack.called("chat.postMessage") if c.status == 200]
    assert len(posted) == 1 and posted[0].body["channel"] == CHANNEL
    text, buttons = shown(slack, ts)
    assert "Checkout 5xx" in text
    assert buttons == ["im_alert-acknowledge", "im_alert-investigate", "im_alert-silence"]

    run = await Investigation.objects.acreate(
        organization=org, incident=incident, trigger="paged", status="running"
    )
    await sync_to_async(triggers.findings_found)(
        run.pk, "query_promql: 5xx ratio 38 % on checkout since 09:58"
    )
    await until(lambda: "5xx ratio 38 %" in shown(slack, ts)[0], what="the findings on the card")
    await Investigation.objects.filter(pk=run.pk).aupdate(status="done")  # the run is over

    payload = {
        "type": "block_actions",
        "user": {"id": "U42"},
        "channel": {"id": CHANNEL},
        "message": {"ts": ts},
        "actions": [{"action_id": "im_alert-acknowledge", "value": str(incident.pk)}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    response = await post_slack(app, "interactions", body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200
    answer = [e for e in slack.ephemeral if e["user"] == "U42"][-1]
    assert answer["text"] == "Acknowledge sent to the review gate."

    await until(
        lambda: Incident.objects.get(pk=incident.pk).status == "acknowledged", seconds=60, what="the gate"
    )
    proposal = await MutatingProposal.objects.aget()
    assert (proposal.tool, proposal.decision) == ("acknowledge_incident", "approve") and proposal.executed_at
    line = "acknowledged by alice (review gate: approved by the reviewer)"
    await until(lambda: line in shown(slack, ts)[0], what="who acknowledged, on the card")
    text, buttons = shown(slack, ts)
    assert "im_alert-acknowledge" not in buttons and "im_alert-investigate" in buttons
    assert "5xx ratio 38 %" in text  # still the same message, findings kept
    assert len([c for c in slack.called("chat.postMessage") if c.status == 200]) == 1
    assert len([c for c in slack.called("chat.update") if c.status == 200]) >= 2
