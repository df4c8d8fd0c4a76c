"""Slack end to end: signed Events API requests against the Ongrid webhook, the fake Web API
recording every call, a real turn on the fake model; what the user sees in the thread."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from asgiref.sync import sync_to_async

from fakes.openai_server import call, text, tool_calls
from fakes.slack_api import FakeSlack
from ops_app.models import Incident
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.im import link, post_slack, sessions_of, slack_app, slack_mention, until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections", "inline_executor", "fresh_registry"),
]

ANSWER = (
    "## Checkout\n**p99** is 2.1 s since the <deploy> at 10:02 & rising; see [graph](https://g.example/x)."
)
TS = "1700000100.000100"


@pytest.fixture
def slack():
    fake = FakeSlack(emails={"U42": "alice@acme.example"}).start()
    yield fake
    fake.stop()


@pytest.fixture
def app(org, slack):
    return slack_app(org, slack)


@pytest.fixture
def alice(app, member):
    link(app, "U42", member)
    return member


def event(event_id: str, text: str, **kwargs) -> bytes:
    return json.dumps(slack_mention(event_id, text, **kwargs)).encode()


async def test_url_verification_answers_the_challenge_only_when_signed(app):
    body = json.dumps({"type": "url_verification", "challenge": "abc123"}).encode()

    good = await post_slack(app, "events", body)
    bad = await post_slack(app, "events", body, secret="not-the-secret")

    assert good.status_code == 200 and good.json() == {"challenge": "abc123"}
    assert bad.status_code == 401


async def test_a_mention_gets_a_threaded_placeholder_throttled_updates_and_mrkdwn(
    app, alice, slack, agents_llm
):
    agents_llm.add("default", text(ANSWER, chunk_size=3, chunk_delay=0.03))

    response = await post_slack(app, "events", event("Ev1", "why is checkout slow?"))

    assert response.status_code == 200
    [session] = await sessions_of(alice)
    assert session.channel == "slack" and session.thread_key == f"{app.pk}:C1:{TS}"
    [placeholder] = slack.called("chat.postMessage")
    assert placeholder.body["thread_ts"] == TS and "Looking into it" in placeholder.body["text"]
    updates = [c for c in slack.called("chat.update") if c.status == 200]
    assert len(updates) >= 2
    gaps = [b.at - a.at for a, b in zip(updates, updates[1:], strict=False)]
    assert all(gap >= 0.75 for gap in gaps), gaps
    final = updates[-1].body["text"]
    assert "*Checkout*\n*p99* is 2.1 s since the &lt;deploy&gt; at 10:02 &amp; rising" in final
    assert "<https://g.example/x|graph>" in final
    assert f"<http://127.0.0.1:8000/chat/{session.pk}/|Transcript>" in final


async def test_the_thread_continues_its_session_and_new_starts_another(app, alice, slack, agents_llm):
    agents_llm.add("default", text("One."), text("Two."), text("Three."))

    await post_slack(app, "events", event("Ev1", "is checkout healthy?"))
    await post_slack(app, "events", event("Ev2", "and payments?", ts="1700000200.000200", thread_ts=TS))
    [session] = await sessions_of(alice)
    await post_slack(app, "events", event("Ev3", "new", ts="1700000300.000300", thread_ts=TS))
    await post_slack(app, "events", event("Ev4", "what changed?", ts="1700000400.000400", thread_ts=TS))

    first, fresh = await sessions_of(alice)
    assert first.pk == session.pk and fresh.thread_key == session.thread_key
    assert "is checkout healthy?" in str(agents_llm.seen["default"][1].messages)
    assert "is checkout healthy?" not in str(agents_llm.seen["default"][2].messages)
    assert all(c.body["thread_ts"] == TS for c in slack.called("chat.postMessage"))


async def test_a_retried_event_is_ignored(app, alice, slack, agents_llm):
    agents_llm.add("default", text("Once."))

    await post_slack(app, "events", event("EvSame", "status?"))
    replay = await post_slack(app, "events", event("EvSame", "status?"))

    assert replay.json()["duplicate"] is True
    assert len(agents_llm.seen["default"]) == 1 and len(slack.called("chat.postMessage")) == 1


@pytest.mark.parametrize("secret, age", [("wrong-secret", 0), (None, 301)])
async def test_a_bad_signature_or_a_stale_timestamp_is_refused(app, alice, slack, agents_llm, secret, age):
    from tests.support.im import SLACK_SIGNING_SECRET

    response = await post_slack(
        app, "events", event("Ev1", "restart everything"), secret=secret or SLACK_SIGNING_SECRET, age=age
    )

    assert response.status_code == 401
    assert await sessions_of(alice) == [] and slack.calls == [] and agents_llm.seen == {}


async def test_a_rate_limited_update_is_retried_after_retry_after(app, alice, slack, agents_llm):
    agents_llm.add("default", text("Fine."))
    slack.rate_limit_next("chat.update", retry_after=1)

    await post_slack(app, "events", event("Ev1", "status?"))

    limited, *rest = slack.called("chat.update")
    assert limited.status == 429 and rest and rest[0].status == 200
    assert rest[0].at - limited.at >= 0.95
    assert next(iter(slack.messages.values()))["text"].startswith("Fine.")


@pytest.mark.parametrize("before, after", [("firing", "acknowledged"), ("resolved", "resolved")])
async def test_an_approval_button_is_refused_to_others_and_executes_for_the_owner(
    app, alice, org, slack, agents_llm, settings, before, after
):
    """Resolved before the owner approves: the acknowledgement fails, and the card says so."""
    import dataclasses

    from tests.support.gate import DUAL, ack_arguments, make_incident, make_user_agent

    settings.CONFIG = dataclasses.replace(settings.CONFIG, approval_timeout=30.0)
    await sync_to_async(make_user_agent)(org, DUAL, "dual-sign-required", ["acknowledge_incident"])
    incident = await sync_to_async(make_incident)(org)
    await Incident.objects.filter(pk=incident.pk).aupdate(status=before)
    carol = await sync_to_async(create_user)("carol", "carol-pass-123", org, roles.MEMBER)
    await sync_to_async(link)(app, "U77", carol)
    brief = {"description": "Ack payments", "subagent_type": DUAL, "prompt": "Ack the incident."}
    agents_llm.add("default", tool_calls(call("AgentTool", brief, id="dispatch")), text("Acknowledged it."))
    agents_llm.add(
        DUAL, tool_calls(call("acknowledge_incident", ack_arguments(incident), id="ack")), text("Done.")
    )
    agents_llm.add("reviewer", text("Decision: approve\nSOP: pass\nConcurrent work: pass\nRollback: pass"))

    await post_slack(app, "events", event("Ev1", "ack the payments incident"), wait=False)
    card_ts = await until(
        lambda: next((ts for ts, m in list(slack.messages.items()) if "Approval" in m["text"]), None)
    )
    actions = slack.messages[card_ts]["blocks"][1]["elements"]
    assert [a["action_id"] for a in actions] == ["im_approve", "im_reject"]

    def press(user: str) -> bytes:
        payload = {
            "type": "block_actions",
            "user": {"id": user},
            "channel": {"id": "C1"},
            "message": {"ts": card_ts, "thread_ts": TS},
            "actions": [{"action_id": "im_approve", "value": actions[0]["value"]}],
        }
        return urlencode({"payload": json.dumps(payload)}).encode()

    form = "application/x-www-form-urlencoded"
    assert (
        await post_slack(app, "interactions", press("U77"), content_type=form, wait=False)
    ).status_code == 200
    await until(lambda: slack.ephemeral)
    assert "Only the chat's owner or an org admin" in slack.ephemeral[0]["text"]
    assert (await Incident.objects.aget(pk=incident.pk)).status == before

    await post_slack(app, "interactions", press("U42"), content_type=form)

    assert (await Incident.objects.aget(pk=incident.pk)).status == after
    card = slack.messages[card_ts]
    assert "Approved by alice" in card["text"] and card["blocks"] == []
    if before == "firing":
        assert card["text"].rstrip().endswith("Approved · executed.") and "failed" not in card["text"]
    else:
        refusal = f"incident {incident.pk} is resolved; it cannot be acknowledged again"
        assert f"Approved · failed: {refusal}" in card["text"] and "executed" not in card["text"]
    assert slack.thread_texts(TS)[0].startswith("Acknowledged it.")


async def test_an_unsigned_button_press_is_refused(app, alice, slack):
    body = urlencode({"payload": json.dumps({"type": "block_actions"})}).encode()
    response = await post_slack(
        app, "interactions", body, content_type="application/x-www-form-urlencoded", secret="forged"
    )
    assert response.status_code == 401 and slack.calls == []


async def test_the_stop_button_stops_the_turn_for_the_owner(app, alice, slack, agents_llm):
    agents_llm.add("default", text("still thinking " * 200, chunk_size=3, chunk_delay=0.02))

    await post_slack(app, "events", event("Ev1", "scan every host"), wait=False)
    ts = await until(lambda: next(iter(slack.messages), None))
    [stop] = slack.messages[ts]["blocks"][1]["elements"]
    assert (stop["action_id"], stop["text"]["text"]) == ("im_stop", "Stop")
    await until(lambda: slack.called("chat.update"), what="the stream under way")
    payload = {
        "type": "block_actions",
        "user": {"id": "U42"},
        "channel": {"id": "C1"},
        "message": {"ts": ts, "thread_ts": TS},
        "actions": [{"action_id": "im_stop", "value": stop["value"]}],
    }

    await post_slack(
        app,
        "interactions",
        urlencode({"payload": json.dumps(payload)}).encode(),
        content_type="application/x-www-form-urlencoded",
    )

    assert "Stopped by alice" in slack.messages[ts]["text"] and slack.messages[ts]["blocks"] == []
    assert slack.ephemeral[0]["text"] == "Stopping…"


async def test_the_new_slash_command_starts_a_fresh_conversation_in_its_own_thread(
    app, alice, slack, agents_llm
):
    agents_llm.add("default", text("Old."), text("Fresh."))
    await post_slack(app, "events", event("Ev1", "is checkout healthy?"))
    form = "application/x-www-form-urlencoded"

    def command(trigger: str, words: str) -> bytes:
        fields = {
            "command": "/new",
            "text": words,
            "user_id": "U42",
            "channel_id": "C1",
            "trigger_id": trigger,
        }
        return urlencode(fields).encode()

    answer = await post_slack(app, "commands", command("T1", "what changed today?"), content_type=form)
    forged = await post_slack(app, "commands", command("T2", "hi"), content_type=form, secret="forged")

    assert answer.status_code == 200 and answer.json()["response_type"] == "ephemeral"
    assert forged.status_code == 401
    first, fresh = await sessions_of(alice)
    [opener] = [c for c in slack.called("chat.postMessage") if "thread_ts" not in c.body]
    assert opener.body["text"] == "New conversation with <@U42>: what changed today?"
    root = next(ts for ts, m in slack.messages.items() if m["text"] == opener.body["text"])
    assert fresh.thread_key == f"{app.pk}:C1:{root}" and first.thread_key != fresh.thread_key
    assert "is checkout healthy?" not in str(agents_llm.seen["default"][1].messages)
    assert slack.thread_texts(root)[-1].startswith("Fresh.")
