"""Feishu end to end: events (plain and encrypted) posted to the Ongrid URL as Feishu would, the
fake open API recording every call, a real turn on the fake model; what the user sees in the
thread: a placeholder card with Stop, patched no closer than 800 ms, the final card markdown."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from fakes.feishu_api import FakeFeishu
from fakes.openai_server import call, text, tool_calls
from ops_app.models import Incident
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.im import (
    FEISHU_ENCRYPT_KEY,
    feishu_app,
    feishu_button,
    feishu_encrypt,
    feishu_message,
    link,
    post_feishu,
    sessions_of,
    until,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections", "inline_executor", "fresh_registry"),
]

ANSWER = "## Queue\n**orders** lag is 4 min since the <deploy> & rising; see [graph](https://g.example/q)."


@pytest.fixture
def feishu():
    fake = FakeFeishu().start()
    yield fake
    fake.stop()


@pytest.fixture
def app(org, feishu):
    return feishu_app(org, feishu)


@pytest.fixture
def alice(app, member):
    link(app, "ou_alice", member)
    return member


async def test_the_challenge_is_answered_only_with_the_right_token(app):
    challenge = {"type": "url_verification", "challenge": "ch-1", "token": "feishu-verification-token"}

    good = await post_feishu(app, challenge)
    bad = await post_feishu(app, {**challenge, "token": "guessed"})

    assert good.status_code == 200 and good.json() == {"challenge": "ch-1"}
    assert bad.status_code == 403


async def test_encrypted_events_are_opened_with_the_apps_key_and_nothing_else(
    org, feishu, member, agents_llm
):
    app = await sync_to_async(feishu_app)(org, feishu, encrypt_key=FEISHU_ENCRYPT_KEY)
    await sync_to_async(link)(app, "ou_alice", member)
    agents_llm.add("default", text("Decrypted and answered."))
    challenge = {"type": "url_verification", "challenge": "ch-2", "token": "feishu-verification-token"}

    opened = await post_feishu(app, feishu_encrypt(challenge))
    wrong_key = await post_feishu(app, feishu_encrypt(feishu_message("Ev0", "hi"), key="not-the-key"))
    in_clear = await post_feishu(app, feishu_message("Ev1", "hi"))
    assert (opened.status_code, opened.json()) == (200, {"challenge": "ch-2"})
    assert wrong_key.status_code == 403 and in_clear.status_code == 403
    assert feishu.calls == [] and await sessions_of(member) == []

    answered = await post_feishu(app, feishu_encrypt(feishu_message("Ev2", "status?")))

    assert answered.status_code == 200
    [card_id] = feishu.messages
    assert feishu.text(card_id).startswith("Decrypted and answered.")


async def test_a_mention_gets_a_threaded_card_throttled_patches_and_card_markdown(
    app, alice, feishu, agents_llm
):
    agents_llm.add("default", text(ANSWER, chunk_size=3, chunk_delay=0.03))

    response = await post_feishu(app, feishu_message("Ev1", "why is the orders queue lagging?"))

    assert response.status_code == 200
    [session] = await sessions_of(alice)
    assert session.channel == "feishu" and session.thread_key == f"{app.pk}:oc_team:om_user_1"
    [placeholder] = feishu.called("im.message.reply")
    assert placeholder.body["reply_in_thread"] is True and placeholder.body["msg_type"] == "interactive"
    [card_id] = feishu.messages
    assert feishu.messages[card_id]["root_id"] == "om_user_1"
    assert (
        '"Looking into it' in placeholder.body["content"] and '"im": "im:stop:' in placeholder.body["content"]
    )
    updates = [c for c in feishu.called("im.message.patch") if c.status == 200]
    assert len(updates) >= 2
    gaps = [b.at - a.at for a, b in zip(updates, updates[1:], strict=False)]
    assert all(gap >= 0.75 for gap in gaps), gaps
    final = feishu.text(card_id)
    assert final.startswith("**Queue**\n**orders** lag is 4 min since the &lt;deploy&gt; &amp; rising")
    assert "[graph](https://g.example/q)" in final
    assert f"[Transcript](http://127.0.0.1:8000/chat/{session.pk}/)" in final
    assert feishu.buttons(card_id) == []  # the Stop button is gone once the answer is there
    assert len(feishu.called("tenant_access_token")) == 1


async def test_the_thread_continues_its_session_and_new_starts_another(app, alice, feishu, agents_llm):
    agents_llm.add("default", text("One."), text("Two."), text("Fresh."))

    await post_feishu(app, feishu_message("Ev1", "is checkout healthy?"))
    await post_feishu(
        app, feishu_message("Ev2", "and payments?", message_id="om_user_2", root_id="om_user_1")
    )
    [session] = await sessions_of(alice)
    await post_feishu(app, feishu_message("Ev3", "/new", message_id="om_user_3", root_id="om_user_1"))
    await post_feishu(
        app, feishu_message("Ev4", "what changed?", message_id="om_user_4", root_id="om_user_1")
    )

    first, fresh = await sessions_of(alice)
    assert first.pk == session.pk and fresh.thread_key == session.thread_key
    assert "is checkout healthy?" in str(agents_llm.seen["default"][1].messages)
    assert "is checkout healthy?" not in str(agents_llm.seen["default"][2].messages)
    texts = feishu.thread("om_user_1")
    assert any("Started a new conversation" in t for t in texts) and texts[-1].startswith("Fresh.")
    assert len(feishu.called("tenant_access_token")) == 1  # the tenant token is reused


async def test_a_direct_chat_is_one_conversation_answered_in_the_chat(app, alice, feishu, agents_llm):
    agents_llm.add("default", text("Hello."))
    app.reply_language = "es"
    await app.asave(update_fields=["reply_language"])

    await post_feishu(app, feishu_message("Ev1", "hello", chat_type="p2p", chat_id="oc_dm"))

    [session] = await sessions_of(alice)
    assert session.thread_key == f"{app.pk}:oc_dm:"
    assert session.reply_language == "es"  # the app's default reply language, for the prompt
    [created] = feishu.called("im.message.create")
    assert created.body["receive_id"] == "oc_dm"


async def test_a_replayed_event_is_ignored(app, alice, feishu, agents_llm):
    agents_llm.add("default", text("Once."))

    await post_feishu(app, feishu_message("EvSame", "status?"))
    replay = await post_feishu(app, feishu_message("EvSame", "status?"))

    assert replay.status_code == 200 and replay.json()["duplicate"] is True
    assert len(agents_llm.seen["default"]) == 1 and len(feishu.called("im.message.reply")) == 1


async def test_a_wrong_verification_token_starts_nothing(app, alice, feishu, agents_llm):
    response = await post_feishu(app, feishu_message("Ev1", "restart everything", token="forged"))

    assert response.status_code == 403
    assert await sessions_of(alice) == [] and feishu.calls == [] and agents_llm.seen == {}


async def test_a_rate_limited_patch_is_retried_after_the_reset_delay(app, alice, feishu, agents_llm):
    agents_llm.add("default", text("Fine."))
    feishu.rate_limit_next("im.message.patch", retry_after=1)

    await post_feishu(app, feishu_message("Ev1", "status?"))

    limited, *rest = feishu.called("im.message.patch")
    assert limited.status == 429 and rest and rest[0].status == 200
    assert rest[0].at - limited.at >= 0.95
    assert feishu.text(next(iter(feishu.messages))).startswith("Fine.")


async def test_an_unlinked_sender_gets_a_link_and_starts_nothing(app, member, feishu, agents_llm):
    await post_feishu(app, feishu_message("Ev1", "hello", open_id="ou_stranger"))

    assert await sessions_of(member) == [] and agents_llm.seen == {}
    assert "Link your account" in feishu.thread("om_user_1")[0]


async def test_an_approval_button_is_refused_to_others_and_executes_for_the_owner(
    app, alice, org, feishu, agents_llm, settings
):
    import dataclasses

    from tests.support.gate import DUAL, ack_arguments, make_incident, make_user_agent

    settings.CONFIG = dataclasses.replace(settings.CONFIG, approval_timeout=30.0)
    await sync_to_async(make_user_agent)(org, DUAL, "dual-sign-required", ["acknowledge_incident"])
    incident = await sync_to_async(make_incident)(org)
    carol = await sync_to_async(create_user)("carol", "carol-pass-123", org, roles.MEMBER)
    await sync_to_async(link)(app, "ou_carol", carol)
    brief = {"description": "Ack payments", "subagent_type": DUAL, "prompt": "Ack the incident."}
    agents_llm.add("default", tool_calls(call("AgentTool", brief, id="dispatch")), text("Acknowledged it."))
    agents_llm.add(
        DUAL, tool_calls(call("acknowledge_incident", ack_arguments(incident), id="ack")), text("Done.")
    )
    agents_llm.add("reviewer", text("Decision: approve\nSOP: pass\nConcurrent work: pass\nRollback: pass"))

    await post_feishu(app, feishu_message("Ev1", "ack the payments incident"), wait=False)
    card_id = await until(
        lambda: next((i for i in list(feishu.messages) if "Approval needed" in feishu.text(i)), None)
    )
    approve, reject = feishu.buttons(card_id)
    assert (approve["text"]["content"], reject["text"]["content"]) == ("Approve", "Reject")

    refused = await post_feishu(
        app, feishu_button("Cb1", approve["value"]["im"], open_id="ou_carol", message_id=card_id), wait=False
    )
    assert "Only the chat's owner or an org admin" in refused.json()["toast"]["content"]
    assert (await Incident.objects.aget(pk=incident.pk)).status == "firing"

    accepted = await post_feishu(
        app, feishu_button("Cb2", approve["value"]["im"], open_id="ou_alice", message_id=card_id)
    )

    assert accepted.json()["toast"]["content"] == "Approved."
    assert (await Incident.objects.aget(pk=incident.pk)).status == "acknowledged"
    assert "Approved by alice" in feishu.text(card_id) and feishu.buttons(card_id) == []
    assert feishu.thread("om_user_1")[0].startswith("Acknowledged it.")


async def test_the_stop_button_stops_the_turn_and_the_card_says_who(app, alice, org, feishu, agents_llm):
    agents_llm.add("default", text("still thinking " * 200, chunk_size=3, chunk_delay=0.02))

    await post_feishu(app, feishu_message("Ev1", "scan every host"), wait=False)
    card_id = await until(lambda: next(iter(feishu.messages), None))
    [stop] = feishu.buttons(card_id)
    assert stop["text"]["content"] == "Stop"
    await until(lambda: feishu.called("im.message.patch"), what="the stream under way")

    pressed = await post_feishu(
        app, feishu_button("Cb1", stop["value"]["im"], open_id="ou_alice", message_id=card_id)
    )

    assert pressed.json()["toast"]["content"] == "Stopping…"
    assert "Stopped by alice" in feishu.text(card_id) and feishu.buttons(card_id) == []
    [session] = await sessions_of(alice)
    assert session.status != "running"
