"""Slack Socket Mode end to end: the loop `manage.py ongrid_im` runs (`outbound.run_all`) connects to
the fake Slack's real websocket, envelopes pushed there are acknowledged and answered through a
real turn on the fake model; what the user sees in the thread."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time

import pytest
from asgiref.sync import sync_to_async

from chat_app.models import ChatSession
from fakes.openai_server import call, text, tool_calls
from fakes.slack_api import FakeSlack
from fakes.telegram_api import FakeTelegram
from im_app import background, connection, outbound
from ops_app.models import Incident
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.im import link, sessions_of, slack_app, slack_mention, telegram_app, tg_message, until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections", "inline_executor", "fresh_registry"),
]

TS = "1700000100.000100"
APP_TOKEN = "xapp-test-token"
OTHER_TOKEN = "xapp-other-token"


@pytest.fixture
def slack():
    fake = FakeSlack(
        emails={"U42": "alice@acme.example"}, app_tokens={APP_TOKEN: "A1", OTHER_TOKEN: "A2"}
    ).start()
    yield fake
    fake.stop()


@pytest.fixture
def app(org, slack):
    return slack_app(org, slack, connection_mode="polling", app_token=APP_TOKEN)


@pytest.fixture
def alice(app, member):
    link(app, "U42", member)
    return member


@contextlib.asynccontextmanager
async def ongrid_im():
    """What `manage.py ongrid_im` runs, until the block ends; then every started turn is awaited
    and the loop is stopped (it must end by itself, not be cancelled)."""
    stop = asyncio.Event()
    runner = asyncio.create_task(outbound.run_all(stop))
    try:
        yield runner
    finally:
        await background.drain()
        stop.set()
        await asyncio.wait_for(runner, timeout=10)


def answered(slack: FakeSlack, thread_ts: str, count: int = 1):
    """True once `count` answers of this thread carry their final footer (the Transcript link)."""
    return lambda: sum("|Transcript>" in t for t in slack.thread_texts(thread_ts)) >= count


async def test_an_event_envelope_is_acked_then_answered_with_throttled_edits_in_its_thread(
    app, alice, slack, agents_llm
):
    answer = "## Checkout\n**p99** is 2.1 s & rising since the 10:02 deploy; rolling it back is safe."
    agents_llm.add("default", text(answer, chunk_size=3, chunk_delay=0.03))

    async with ongrid_im():
        await until(lambda: slack.connections(APP_TOKEN) == 1, what="the Socket Mode connection")
        envelope = slack.push("events_api", slack_mention("Ev1", "why is checkout slow?"))
        await until(answered(slack, TS), what="the final answer")

    ack = slack.acked(envelope)
    assert ack == {"token": APP_TOKEN, "at": ack["at"], "envelope_id": envelope}
    [session] = await sessions_of(alice)
    assert session.channel == "slack" and session.thread_key == f"{app.pk}:C1:{TS}"
    [placeholder] = slack.called("chat.postMessage")
    assert ack["at"] < placeholder.at  # acknowledged before any work
    assert placeholder.body["thread_ts"] == TS and "Looking into it" in placeholder.body["text"]
    updates = [c for c in slack.called("chat.update") if c.status == 200]
    assert len(updates) >= 2
    gaps = [b.at - a.at for a, b in zip(updates, updates[1:], strict=False)]
    assert all(gap >= 0.75 for gap in gaps), gaps
    assert updates[-1].body["text"].startswith("*Checkout*\n*p99* is 2.1 s &amp; rising since the 10:02")
    assert len(slack.called("apps.connections.open")) == 1


async def test_a_replayed_envelope_with_the_same_event_id_starts_nothing(app, alice, slack, agents_llm):
    agents_llm.add("default", text("Once."), text("Twice."))

    async with ongrid_im():
        await until(lambda: slack.connections(APP_TOKEN) == 1)
        slack.push("events_api", slack_mention("EvSame", "status?"))
        await until(answered(slack, TS))
        replay = slack.push("events_api", slack_mention("EvSame", "status?"))
        # Envelopes of one connection are handled in order: once this one is answered, the
        # replay before it has been handled too.
        slack.push("events_api", slack_mention("EvNext", "and now?", ts="1700000200.000200", thread_ts=TS))
        await until(answered(slack, TS, count=2))

    assert slack.acked(replay) is not None  # acknowledged, so Slack stops redelivering it
    assert len(agents_llm.seen["default"]) == 2
    assert len(slack.called("chat.postMessage")) == 2
    assert len(await sessions_of(alice)) == 1


async def test_a_disconnect_makes_the_client_reconnect_and_keep_working(app, alice, slack, agents_llm):
    agents_llm.add("default", text("Before."), text("After."))

    async with ongrid_im():
        await until(lambda: slack.connections(APP_TOKEN) == 1)
        slack.push("events_api", slack_mention("Ev1", "status?"))
        await until(answered(slack, TS))
        slack.disconnect(APP_TOKEN, reason="refresh_requested")
        await until(lambda: slack.connections(APP_TOKEN) == 2, what="the second connection")
        after = slack.push(
            "events_api", slack_mention("Ev2", "and now?", ts="1700000200.000200", thread_ts=TS)
        )
        await until(answered(slack, TS, count=2))

    assert len(slack.called("apps.connections.open")) == 2  # a fresh URL for the new connection
    assert slack.acked(after)["at"] > slack.called("apps.connections.open")[1].at
    texts = slack.thread_texts(TS)
    assert texts[0].startswith("Before.") and texts[1].startswith("After.")


async def test_a_dropped_connection_is_opened_again_after_a_pause(app, alice, slack, agents_llm, caplog):
    agents_llm.add("default", text("After the drop."))
    caplog.set_level(logging.INFO, logger="im_app")

    async with ongrid_im():
        await until(lambda: slack.connections(APP_TOKEN) == 1)
        slack.drop(APP_TOKEN)
        await until(lambda: slack.connections(APP_TOKEN) == 2, what="the connection opened again")
        slack.push("events_api", slack_mention("Ev1", "still there?"))
        await until(answered(slack, TS))

    first, second = slack.called("apps.connections.open")
    assert second.at - first.at >= 0.95  # after the backoff, not in a tight loop
    assert f"IM app {app.pk}: Socket Mode connection dropped; reconnecting in 1s" in caplog.text
    assert slack.thread_texts(TS)[0].startswith("After the drop.")


async def test_a_refused_app_token_is_reported_and_other_apps_go_on(
    app, alice, org, slack, agents_llm, caplog
):
    revoked = await sync_to_async(slack_app)(
        org, slack, name="Revoked bot", connection_mode="polling", app_token="xapp-revoked-123"
    )
    agents_llm.add("default", text("Still here."))
    caplog.set_level(logging.INFO, logger="im_app")

    async with ongrid_im() as runner:
        await until(lambda: slack.connections(APP_TOKEN) == 1)
        slack.push("events_api", slack_mention("Ev1", "status?"))
        await until(answered(slack, TS))
        await until(
            lambda: len([c for c in slack.called("apps.connections.open") if c.status == 200]) >= 3,
            what="the refused app asking again after its backoff",
        )
        assert not runner.done()

    asked = [c.headers["Authorization"] for c in slack.called("apps.connections.open")]
    assert asked.count("Bearer xapp-revoked-123") >= 2 and asked.count(f"Bearer {APP_TOKEN}") == 1
    assert (
        f"IM app {revoked.pk}: Slack refused Socket Mode (apps.connections.open: invalid_auth)" in caplog.text
    )
    assert "xapp-revoked-123" not in caplog.text
    assert slack.thread_texts(TS)[0].startswith("Still here.")


async def test_an_approval_pressed_in_an_interactive_envelope_is_refused_to_others_and_executes_for_the_owner(
    app, alice, org, slack, agents_llm, settings
):
    from tests.support.gate import DUAL, ack_arguments, make_incident, make_user_agent

    settings.CONFIG = dataclasses.replace(settings.CONFIG, approval_timeout=30.0)
    await sync_to_async(make_user_agent)(org, DUAL, "dual-sign-required", ["acknowledge_incident"])
    incident = await sync_to_async(make_incident)(org)
    carol = await sync_to_async(create_user)("carol", "carol-pass-123", org, roles.MEMBER)
    await sync_to_async(link)(app, "U77", carol)
    brief = {"description": "Ack payments", "subagent_type": DUAL, "prompt": "Ack the incident."}
    agents_llm.add("default", tool_calls(call("AgentTool", brief, id="dispatch")), text("Acknowledged it."))
    agents_llm.add(
        DUAL, tool_calls(call("acknowledge_incident", ack_arguments(incident), id="ack")), text("Done.")
    )
    agents_llm.add("reviewer", text("Decision: approve\nSOP: pass\nConcurrent work: pass\nRollback: pass"))

    def press(user: str, value: str) -> dict:
        return {
            "type": "block_actions",
            "user": {"id": user},
            "channel": {"id": "C1"},
            "message": {"ts": card_ts, "thread_ts": TS},
            "actions": [{"action_id": "im_approve", "value": value}],
        }

    async with ongrid_im():
        await until(lambda: slack.connections(APP_TOKEN) == 1)
        slack.push("events_api", slack_mention("Ev1", "ack the payments incident"))
        card_ts = await until(
            lambda: next((ts for ts, m in list(slack.messages.items()) if "Approval" in m["text"]), None)
        )
        actions = slack.messages[card_ts]["blocks"][1]["elements"]
        assert [a["action_id"] for a in actions] == ["im_approve", "im_reject"]

        refused = slack.push("interactive", press("U77", actions[0]["value"]))
        await until(lambda: slack.ephemeral, what="the refusal")
        assert "Only the chat's owner or an org admin" in slack.ephemeral[0]["text"]
        assert (await Incident.objects.aget(pk=incident.pk)).status == "firing"

        slack.push("interactive", press("U42", actions[0]["value"]))
        await until(answered(slack, TS), what="the answer after the approval")

    assert slack.acked(refused) is not None
    assert (await Incident.objects.aget(pk=incident.pk)).status == "acknowledged"
    card = slack.messages[card_ts]
    assert "Approved by alice" in card["text"] and card["blocks"] == []


async def test_the_new_slash_command_envelope_is_answered_in_its_ack_and_opens_a_thread(
    app, alice, slack, agents_llm
):
    agents_llm.add("default", text("Fresh."))
    form = {
        "command": "/new",
        "text": "what changed?",
        "user_id": "U42",
        "channel_id": "C1",
        "trigger_id": "T1",
    }

    async with ongrid_im():
        await until(lambda: slack.connections(APP_TOKEN) == 1)
        envelope = slack.push("slash_commands", form, accepts_response_payload=True)
        root = await until(
            lambda: next((ts for ts, m in list(slack.messages.items()) if m["thread_ts"] is None), None)
        )
        await until(answered(slack, root))

    assert slack.acked(envelope)["payload"] == {
        "response_type": "ephemeral",
        "text": "Starting a new conversation…",
    }
    assert slack.messages[root]["text"] == "New conversation with <@U42>: what changed?"
    [session] = await sessions_of(alice)
    assert session.thread_key == f"{app.pk}:C1:{root}"


async def test_an_app_of_one_organization_never_starts_a_turn_in_another(
    app, alice, org, other_org, slack, agents_llm
):
    """U42 is alice's Slack id through org A's app; org B's app does not know it, and its
    envelopes only ever reach org B's app."""
    other = await sync_to_async(slack_app)(
        other_org, slack, name="Globex bot", connection_mode="polling", app_token=OTHER_TOKEN
    )
    bob = await sync_to_async(create_user)("bob", "bob-pass-123", other_org, roles.ORG_ADMIN)
    await sync_to_async(link)(other, "U55", bob)
    agents_llm.add("default", text("For alice."))

    async with ongrid_im():
        await until(lambda: slack.connections(APP_TOKEN) == 1 and slack.connections(OTHER_TOKEN) == 1)
        slack.push(
            "events_api", slack_mention("Ev1", "status?", ts="1700000300.000300"), app_token=OTHER_TOKEN
        )
        await until(lambda: slack.thread_texts("1700000300.000300"), what="the link reply")
        slack.push("events_api", slack_mention("Ev1", "status?"), app_token=APP_TOKEN)  # same id, other app
        await until(answered(slack, TS))

    assert "Link your account" in slack.thread_texts("1700000300.000300")[0]
    assert len(agents_llm.seen["default"]) == 1
    [session] = await sessions_of(alice)
    assert session.organization_id == org.pk
    assert not await ChatSession.objects.filter(organization=other_org).aexists()


async def test_test_connection_also_tries_the_app_level_token(app, org, slack):
    revoked = await sync_to_async(slack_app)(
        org, slack, name="Revoked bot", connection_mode="polling", app_token="xapp-revoked-123"
    )

    ok = await sync_to_async(connection.test_connection)(app)
    refused = await sync_to_async(connection.test_connection)(revoked)

    assert ok == (True, "ongrid (bot BBOT) in Acme, Socket Mode ready")
    assert refused == (
        False,
        "ongrid (bot BBOT) in Acme, but Socket Mode refused the app-level token: "
        "apps.connections.open: invalid_auth",
    )


async def test_one_process_serves_telegram_long_polling_and_slack_socket_mode_and_stops_at_once(
    app, alice, org, slack, agents_llm
):
    telegram = FakeTelegram().start()
    try:
        polled = await sync_to_async(telegram_app)(org, telegram, connection_mode="polling")
        await sync_to_async(link)(polled, 42, alice)
        agents_llm.add("default", text("From Slack."), text("From Telegram."))
        stop = asyncio.Event()
        runner = asyncio.create_task(outbound.run_all(stop))

        await until(lambda: slack.connections(APP_TOKEN) == 1)
        slack.push("events_api", slack_mention("Ev1", "status?"))
        await until(answered(slack, TS))
        telegram.push_update(**tg_message(7, "and from here?"))
        await until(
            lambda: any("Transcript" in t for t in telegram.bot_texts(555)), what="the Telegram answer"
        )
        await background.drain()
        await until(lambda: len(telegram.called("getUpdates")) >= 3, what="a long poll being held")
        stopping = time.monotonic()
        stop.set()
        await asyncio.wait_for(runner, timeout=10)
        stopped_in = time.monotonic() - stopping
    finally:
        telegram.stop()

    assert slack.thread_texts(TS)[0].startswith("From Slack.")
    assert telegram.bot_texts(555)[-1].startswith("From Telegram.")
    assert len(await sessions_of(alice)) == 2
    assert stopped_in < 1.5, stopped_in  # the held long poll (up to 2 s here, 50 s for real) is cut short


async def test_the_app_level_token_is_encrypted_in_the_database(app):
    def raw() -> str:
        from django.db import connection as db

        with db.cursor() as cursor:
            cursor.execute("SELECT app_token FROM im_app_imapp WHERE id = %s", [app.pk])
            return cursor.fetchone()[0]

    stored = await sync_to_async(raw)()

    assert stored.startswith("fernet:") and APP_TOKEN not in stored


async def test_the_admin_takes_the_app_level_token_write_only_and_shows_no_webhook_urls(app, org_admin):
    from django.test import Client

    def change_page() -> str:
        admin = Client()
        admin.force_login(org_admin)
        return admin.get(f"/admin/im_app/imapp/{app.pk}/change/").content.decode()

    page = await sync_to_async(change_page)()

    assert 'name="app_token"' in page and APP_TOKEN not in page
    assert "Socket Mode: Slack calls no URL" in page and f"/im/slack/{app.pk}/events" not in page
