"""Telegram end to end: a real webhook request (or long poll) against the fake Bot API, a real
turn on the fake model, and what the user sees in Telegram: a placeholder at once, edits no
closer than 800 ms, the final answer in Telegram HTML with links back to Ongrid."""

from __future__ import annotations

import asyncio
import logging

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test import Client

from fakes.openai_server import text
from fakes.telegram_api import FakeTelegram
from im_app import background
from im_app.models import IMApp
from im_app.platforms.telegram import polling
from im_app.platforms.telegram.client import TelegramClient
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.im import link, post_telegram, sessions_of, telegram_app, tg_message

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections", "inline_executor", "fresh_registry"),
]

CHAT = 555
ALICE = 42

ANSWER = (
    "## Disk\n**db-1** is at 91% on `/var`: the <postgres> WAL & old logs.\n"
    "See [the runbook](https://runbooks.example/disk) and run:\n```\ndu -sh /var/* | sort -h\n```\n"
)


@pytest.fixture
def telegram():
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


@pytest.fixture
def app(org, telegram) -> IMApp:
    return telegram_app(org, telegram)


@pytest.fixture
def alice(app, member):
    link(app, ALICE, member)
    return member


def placeholder_of(telegram: FakeTelegram) -> int:
    first = telegram.called("sendMessage")[0]
    assert "Looking into it" in first.body["text"]
    return min(telegram.messages)


def edits_of(telegram: FakeTelegram, message_id: int) -> list:
    return [
        c
        for c in telegram.called("editMessageText")
        if c.body.get("message_id") == message_id and c.status == 200
    ]


async def test_a_message_gets_a_placeholder_throttled_edits_and_a_formatted_answer(
    app, alice, telegram, agents_llm
):
    agents_llm.add("default", text(ANSWER, chunk_size=4, chunk_delay=0.03))

    response = await post_telegram(app, tg_message(1, "Why is db-1 disk full?"))

    assert response.status_code == 200
    [session] = await sessions_of(alice)
    assert session.channel == "telegram" and session.thread_key == f"{app.pk}:{CHAT}:"
    message_id = placeholder_of(telegram)
    edits = edits_of(telegram, message_id)
    # Streaming took ~1.7 s: a few progress edits, never two within 800 ms, then the final one.
    assert len(edits) >= 2
    gaps = [later.at - earlier.at for earlier, later in zip(edits, edits[1:], strict=False)]
    assert all(gap >= 0.75 for gap in gaps), gaps
    assert edits[0].at - telegram.called("sendMessage")[0].at >= 0.75
    final = telegram.messages[message_id]["text"]
    assert final == edits[-1].body["text"] and edits[-1].body["parse_mode"] == "HTML"
    assert "<b>Disk</b>\n<b>db-1</b> is at 91% on <code>/var</code>" in final
    assert "the &lt;postgres&gt; WAL &amp; old logs" in final
    assert '<a href="https://runbooks.example/disk">the runbook</a>' in final
    assert "<pre>du -sh /var/* | sort -h</pre>" in final
    assert f'<a href="http://127.0.0.1:8000/chat/{session.pk}/">Transcript</a>' in final
    assert len(telegram.called("sendMessage")) == 1  # one message, edited in place


async def test_the_same_chat_continues_its_session_and_new_starts_another(app, alice, telegram, agents_llm):
    agents_llm.add("default", text("First answer."), text("Second answer."), text("Fresh answer."))

    await post_telegram(app, tg_message(1, "Is checkout healthy?"))
    await post_telegram(app, tg_message(2, "And the payments API?"))
    [session] = await sessions_of(alice)
    second_request = agents_llm.seen["default"][1]
    assert "Is checkout healthy?" in str(second_request.messages)  # the follow-up kept its context

    await post_telegram(app, tg_message(3, "/new"))
    await post_telegram(app, tg_message(4, "What changed today?"))

    first, fresh = await sessions_of(alice)
    assert first.pk == session.pk and fresh.thread_key == first.thread_key
    assert "Is checkout healthy?" not in str(agents_llm.seen["default"][2].messages)
    assert "Started a new conversation" in " ".join(telegram.bot_texts(CHAT))
    assert telegram.bot_texts(CHAT)[-1].startswith("Fresh answer.")


async def test_a_forum_topic_is_its_own_thread(app, alice, telegram, agents_llm):
    agents_llm.add("default", text("In the main chat."), text("In the topic."))

    await post_telegram(app, tg_message(1, "hello"))
    await post_telegram(app, tg_message(2, "hello", topic=77))

    main, topic = await sessions_of(alice)
    assert topic.thread_key == f"{app.pk}:{CHAT}:77"
    assert telegram.called("sendMessage")[-1].body["message_thread_id"] == 77


async def test_a_replayed_update_is_ignored(app, alice, telegram, agents_llm):
    agents_llm.add("default", text("Once."))
    update = tg_message(9, "Is checkout healthy?")

    assert (await post_telegram(app, update)).status_code == 200
    replay = await post_telegram(app, update)

    assert replay.status_code == 200 and replay.json()["duplicate"] is True
    assert len(agents_llm.seen["default"]) == 1 and len(telegram.called("sendMessage")) == 1


@pytest.mark.parametrize(
    "secret, path, status", [("wrong", None, 403), ("", None, 403), (None, "guess", 404)]
)
async def test_a_wrong_secret_or_path_starts_nothing(app, alice, telegram, agents_llm, secret, path, status):
    from tests.support.im import TELEGRAM_SECRET

    response = await post_telegram(
        app,
        tg_message(1, "Restart everything"),
        secret=TELEGRAM_SECRET if secret is None else secret,
        path=path,
    )

    assert response.status_code == status
    assert await sessions_of(alice) == [] and telegram.calls == [] and agents_llm.seen == {}


async def test_a_rate_limited_call_is_retried_after_retry_after(app, alice, telegram, agents_llm):
    agents_llm.add("default", text("Fine."))
    telegram.rate_limit_next("sendMessage", retry_after=1)

    await post_telegram(app, tg_message(1, "status?"))

    limited, posted = telegram.called("sendMessage")
    assert limited.status == 429 and posted.status == 200
    assert posted.at - limited.at >= 0.95
    assert telegram.messages[min(telegram.messages)]["text"].startswith("Fine.")


async def test_an_unlinked_sender_gets_a_link_and_starts_nothing_until_confirmed(
    app, member, telegram, agents_llm
):
    agents_llm.add("default", text("Now I know you."))

    await post_telegram(app, tg_message(1, "Is checkout healthy?", user_id=99))

    [reply] = telegram.bot_texts(CHAT)
    assert "Link your account" in reply and agents_llm.seen == {} and await sessions_of(member) == []
    link_path = reply.split("http://127.0.0.1:8000", 1)[1].split()[0]
    browser = Client()
    await sync_to_async(browser.force_login)(member)
    page = await sync_to_async(browser.get)(link_path)
    assert page.status_code == 200 and "user99" in page.content.decode()
    confirmed = await sync_to_async(browser.post)(link_path)
    assert "now talks to Ongrid as" in confirmed.content.decode()
    assert (await sync_to_async(browser.post)(link_path)).status_code == 404  # one-time

    await post_telegram(app, tg_message(2, "Is checkout healthy?", user_id=99))

    [session] = await sessions_of(member)
    assert telegram.bot_texts(CHAT)[-1].startswith("Now I know you.")


async def test_a_sender_outside_allow_from_is_ignored_and_logged(org, telegram, member, agents_llm, caplog):
    app = await sync_to_async(telegram_app)(org, telegram, allow_from="42, -100200")
    await sync_to_async(link)(app, 7, member)

    with caplog.at_level(logging.WARNING, logger="im_app"):
        await post_telegram(app, tg_message(1, "Restart the DB", user_id=7, chat_id=8))

    assert telegram.calls == [] and await sessions_of(member) == [] and agents_llm.seen == {}
    assert "not in allow_from" in caplog.text


async def test_another_organizations_user_can_never_start_a_turn_through_this_app(
    app, telegram, outsider, agents_llm
):
    await sync_to_async(link)(app, ALICE, outsider)  # a mapping that should never exist

    await post_telegram(app, tg_message(1, "Show me your incidents"))

    assert await sessions_of(outsider) == [] and agents_llm.seen == {}
    assert "Link your account" in telegram.bot_texts(CHAT)[0]


async def test_a_link_code_cannot_be_confirmed_from_another_organization(app, telegram, outsider):
    await post_telegram(app, tg_message(1, "hi", user_id=99))
    link_path = telegram.bot_texts(CHAT)[0].split("http://127.0.0.1:8000", 1)[1].split()[0]
    browser = Client()
    await sync_to_async(browser.force_login)(outsider)

    assert (await sync_to_async(browser.post)(link_path)).status_code == 404

    from im_app.models import IMIdentity

    identity = await IMIdentity.objects.aget(app=app, external_id="99")
    assert identity.user_id is None


async def test_long_polling_answers_without_a_webhook(org, telegram, member, agents_llm):
    app = await sync_to_async(telegram_app)(org, telegram, connection_mode="polling")
    await sync_to_async(link)(app, ALICE, member)
    agents_llm.add("default", text("Polled answer."))
    telegram.push_update(**tg_message(5, "status?"))
    client = TelegramClient(app)

    offset = await polling.poll_once(app, client, None, hold_seconds=1)
    await background.drain()
    again = await polling.poll_once(app, client, offset - 1, hold_seconds=0)  # the same update again
    await background.drain()

    assert offset == 6 and again == 6
    assert telegram.bot_texts(CHAT)[-1].startswith("Polled answer.")
    assert len(agents_llm.seen["default"]) == 1  # the redelivered update was dropped
    assert len(await sessions_of(member)) == 1


def test_credentials_are_encrypted_in_the_database(org, telegram):
    app = telegram_app(org, telegram)

    with connection.cursor() as cursor:
        cursor.execute("SELECT bot_token, webhook_secret FROM im_app_imapp WHERE id = %s", [app.pk])
        token, secret = cursor.fetchone()

    assert token.startswith("fernet:") and telegram.token not in token
    assert secret.startswith("fernet:") and "tg-webhook-secret" not in secret
    assert IMApp.objects.get(pk=app.pk).bot_token == telegram.token


def test_the_admin_never_shows_a_credential_and_tests_the_connection(org, org_admin, telegram):
    app = telegram_app(org, telegram)
    admin = Client()
    admin.force_login(org_admin)

    page = admin.get(f"/admin/im_app/imapp/{app.pk}/change/").content.decode()
    answer = admin.post(
        "/admin/im_app/imapp/", {"action": "check_connection", "_selected_action": [app.pk]}, follow=True
    ).content.decode()

    assert telegram.token not in page and "tg-webhook-secret" not in page
    assert "connected as @ongrid_test_bot" in answer and telegram.token not in answer
    assert IMApp.objects.get(pk=app.pk).bot_identity.startswith("@ongrid_test_bot")
    IMApp.objects.filter(pk=app.pk).update(api_base_url=telegram.base_url + "/nowhere")
    app.refresh_from_db()
    app.bot_token = "999:wrong"
    app.save()
    failed = admin.post(
        "/admin/im_app/imapp/", {"action": "check_connection", "_selected_action": [app.pk]}, follow=True
    ).content.decode()
    assert "failed: getMe: HTTP 401" in failed and "999:wrong" not in failed
    assert "Unauthorized" not in failed  # Telegram's own words are never shown (docs/security.md)


def test_an_org_admin_sees_only_their_organizations_apps(org, other_org, org_admin, telegram):
    telegram_app(org, telegram, name="Ours")
    telegram_app(other_org, telegram, name="Theirs")
    admin = Client()
    admin.force_login(org_admin)

    listing = admin.get("/admin/im_app/imapp/").content.decode()

    assert "Ours" in listing and "Theirs" not in listing


async def test_nothing_is_left_running(app, alice, telegram, agents_llm):
    agents_llm.add("default", text("Done."))
    await post_telegram(app, tg_message(1, "hi"))
    assert not background.TASKS and not [
        t for t in asyncio.all_tasks() if t.get_name().startswith("telegram-")
    ]


# ---- dual sign-off by button ------------------------------------------------------------------

APPROVE = "Decision: approve\nSOP: pass — RB-12 covers acknowledging\nConcurrent work: pass\nRollback: pass"


@pytest.fixture
def dual_scene(org, settings):
    import dataclasses

    from tests.support.gate import DUAL, make_incident, make_user_agent

    settings.CONFIG = dataclasses.replace(settings.CONFIG, approval_timeout=30.0)
    make_user_agent(org, DUAL, "dual-sign-required", ["acknowledge_incident", "query_incidents"])
    return make_incident(org)


async def test_an_approval_button_is_refused_to_others_and_executes_for_the_owner(
    app, alice, org, telegram, agents_llm, dual_scene
):
    from fakes.openai_server import call, tool_calls
    from ops_app.models import Incident
    from tests.support.gate import DUAL, ack_arguments
    from tests.support.im import tg_button, until

    incident = dual_scene
    carol = await sync_to_async(create_user)("carol", "carol-pass-123", org, roles.MEMBER)
    await sync_to_async(link)(app, 77, carol)
    brief = {"description": "Ack payments", "subagent_type": DUAL, "prompt": "Ack the incident."}
    agents_llm.add("default", tool_calls(call("AgentTool", brief, id="dispatch")), text("Acknowledged it."))
    agents_llm.add(
        DUAL, tool_calls(call("acknowledge_incident", ack_arguments(incident), id="ack")), text("Done.")
    )
    agents_llm.add("reviewer", text(APPROVE))

    await post_telegram(app, tg_message(1, "Acknowledge the payments incident"), wait=False)
    card_id = await until(
        lambda: next((i for i, m in list(telegram.messages.items()) if "Approval" in m["text"]), None),
        what="the card",
    )
    card = telegram.messages[card_id]
    approve, reject = card["reply_markup"]["inline_keyboard"][0]
    assert "Approval needed" in card["text"] and f"incident:{incident.pk}" in card["text"]
    assert (approve["text"], reject["text"]) == ("Approve", "Reject")

    await post_telegram(
        app, tg_button(2, approve["callback_data"], user_id=77, chat_id=CHAT, message_id=card_id), wait=False
    )
    refused = await until(lambda: telegram.callback_answers, what="an answer to carol")
    assert "Only the chat's owner or an org admin" in refused[0]["text"]
    assert (await Incident.objects.aget(pk=incident.pk)).status == "firing"

    await post_telegram(
        app,
        tg_button(3, approve["callback_data"], user_id=ALICE, chat_id=CHAT, message_id=card_id),
        wait=False,
    )
    await until(lambda: len(telegram.callback_answers) == 2, what="an answer to alice")
    await background.drain()

    assert telegram.callback_answers[1]["text"] == "Approved."
    assert (await Incident.objects.aget(pk=incident.pk)).status == "acknowledged"
    decided = telegram.messages[card_id]
    assert "Approved by alice" in decided["text"] and decided["reply_markup"] is None
    assert telegram.bot_texts(CHAT)[0].startswith("Acknowledged it.")


async def test_the_stop_button_is_refused_to_others_and_stops_the_turn_for_the_owner(
    app, alice, org, telegram, agents_llm
):
    import time

    from tests.support.im import tg_button, until

    carol = await sync_to_async(create_user)("carol", "carol-pass-123", org, roles.MEMBER)
    await sync_to_async(link)(app, 77, carol)
    agents_llm.add("default", text("still thinking " * 200, chunk_size=3, chunk_delay=0.02))
    started = time.monotonic()

    await post_telegram(app, tg_message(1, "Scan every host"), wait=False)
    message_id = await until(lambda: min(telegram.messages) if telegram.messages else None)
    [[stop]] = telegram.messages[message_id]["reply_markup"]["inline_keyboard"]
    assert stop["text"] == "Stop"
    await until(lambda: edits_of(telegram, message_id), what="the stream under way")

    await post_telegram(
        app, tg_button(2, stop["callback_data"], user_id=77, chat_id=CHAT, message_id=message_id), wait=False
    )
    await until(lambda: telegram.callback_answers, what="an answer to carol")
    assert "Only the chat's owner or an org admin" in telegram.callback_answers[0]["text"]
    [session] = await sessions_of(alice)
    assert session.status == "running"

    await post_telegram(
        app, tg_button(3, stop["callback_data"], user_id=ALICE, chat_id=CHAT, message_id=message_id)
    )

    assert telegram.callback_answers[1]["text"] == "Stopping…"
    final = telegram.messages[message_id]
    assert "Stopped by alice" in final["text"] and final["reply_markup"] is None
    assert time.monotonic() - started < 15  # the 30-second stream was cut short
