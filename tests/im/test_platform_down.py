"""A chat platform that is down never loses the question: the webhook is answered, the turn runs
and is in the user's web chats, the answer waits in the outbox and is posted into the thread
(once, with a note that it is late) when the platform is back; past the retry budget the row is
failed with a short reason an org admin sees in the admin, and never a token.

The fakes really go away (their listening socket closed: connections refused) and come back on
the same port; the embedded drainer is the real loop, with short pauses."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections
from django.test import Client
from django.urls import reverse

from chat_app.models import ChatMessage
from fakes.feishu_api import FakeFeishu
from fakes.openai_server import call, text, tool_calls
from fakes.slack_api import FakeSlack
from fakes.telegram_api import FakeTelegram
from im_app import delivery, outbox, redelivery
from im_app.models import LateDelivery, OutboxMessage
from im_app.tasks import redeliver_task
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.im import (
    feishu_app,
    feishu_message,
    link,
    post_feishu,
    post_slack,
    post_telegram,
    sessions_of,
    slack_app,
    slack_mention,
    telegram_app,
    tg_message,
    until,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections", "inline_executor", "fresh_registry"),
]

QUESTION = "Why is db-1 disk full?"
ANSWER = "The WAL of postgres fills /var on db-1."
SLACK_TS = "1700000100.000100"
LATE = "delivered late"
APPROVE = "Decision: approve\nSOP: pass — RB-12 covers acknowledging\nConcurrent work: pass\nRollback: pass"


@dataclass
class Platform:
    """One platform under test: its fake, how a question reaches Ongrid, what its thread shows."""

    name: str
    fake: object
    make_app: object
    sender: str

    async def ask(self, app, question: str, number: int = 1):
        if self.name == "slack":
            body = json.dumps(slack_mention(f"Ev{number}", question, ts=SLACK_TS)).encode()
            return await post_slack(app, "events", body)
        if self.name == "telegram":
            return await post_telegram(app, tg_message(number, question))
        return await post_feishu(app, feishu_message(f"Ev{number}", question))

    def thread(self) -> list[str]:
        """Every bot message in the question's thread, oldest first, as the user reads it."""
        if self.name == "slack":
            return self.fake.thread_texts(SLACK_TS)
        if self.name == "telegram":
            return self.fake.bot_texts(555)
        return self.fake.thread("om_user_1")


FAKES = {"slack": (FakeSlack, slack_app, "U42"), "telegram": (FakeTelegram, telegram_app, "42")}
FAKES["feishu"] = (FakeFeishu, feishu_app, "ou_alice")


def platform_named(name: str) -> Platform:
    fake_class, make_app, sender = FAKES[name]
    return Platform(name, fake_class().start(), make_app, sender)


@pytest.fixture
async def quick(monkeypatch):
    """Short pauses (the quick tries, the outbox backoff, the embedded loop); the loops started in
    the test are stopped at its end."""
    monkeypatch.setattr(delivery, "PAUSES", (0.05, 0.1))
    monkeypatch.setattr(outbox, "FIRST_PAUSE", timedelta(seconds=0.2))
    monkeypatch.setattr(outbox, "LONGEST_PAUSE", timedelta(seconds=0.5))
    monkeypatch.setattr(redelivery, "DRAIN_EVERY", 0.1)
    yield
    running = redelivery.running_drainers()
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)


@pytest.fixture(params=["slack", "telegram", "feishu"])
def platform(request):
    platform = platform_named(request.param)
    yield platform
    platform.fake.stop()


@pytest.fixture
def telegram():
    platform = platform_named("telegram")
    yield platform
    platform.fake.stop()


def app_and_user(platform: Platform, org, member):
    app = platform.make_app(org, platform.fake)
    link(app, platform.sender, member)
    return app


async def rows() -> list[OutboxMessage]:
    return await sync_to_async(list)(OutboxMessage.objects.order_by("pk"))


async def contents(session) -> list[str]:
    return await sync_to_async(list)(
        ChatMessage.objects.filter(session=session).order_by("seq").values_list("content", flat=True)
    )


async def test_the_question_survives_the_outage_and_the_answer_comes_late_once(
    platform, org, member, agents_llm, quick
):
    await _outage_then_late_answer(platform, org, member, agents_llm, "refused")


async def test_an_outage_answered_503_by_the_platforms_edge_is_survived_the_same_way(
    org, member, agents_llm, quick
):
    slack = platform_named("slack")
    try:
        await _outage_then_late_answer(slack, org, member, agents_llm, "503")
    finally:
        slack.fake.stop()


async def _outage_then_late_answer(platform: Platform, org, member, agents_llm, mode: str) -> None:
    """The platform down (`mode`: connections refused, or every call answered 503) while the
    question arrives; the answer is in the web chat at once and in the thread once it is back."""
    app = await sync_to_async(app_and_user)(platform, org, member)
    agents_llm.add("default", text(ANSWER))
    if mode == "refused":
        platform.fake.refuse_connections()
    else:
        platform.fake.answer_unavailable()

    response = await platform.ask(app, QUESTION)

    assert response.status_code == 200
    [session] = await sessions_of(member)  # in the user's web chats, question and answer
    said = await contents(session)
    assert QUESTION in said and ANSWER in said
    page = await sync_to_async(_chat_page)(member, session.pk)
    assert QUESTION in page and ANSWER in page
    [row] = await rows()
    assert row.status == LateDelivery.PENDING and row.session_id == session.pk
    assert row.last_error == ("ConnectError" if mode == "refused" else "HTTP 503")
    assert platform.thread() == []

    platform.fake.come_back()

    await until(lambda: _is(row.pk, LateDelivery.DELIVERED), what="the late delivery")
    [late] = platform.thread()
    assert late.count(ANSWER) == 1 and LATE in late
    assert f"{platform.fake.__class__.__name__[4:]} was unreachable" in late
    delivered = await sync_to_async(OutboxMessage.objects.get)(pk=row.pk)
    assert delivered.delivered_at is not None and delivered.last_error == ""
    assert await redelivery.drain_once() == 0 and len(platform.thread()) == 1  # never twice


def _chat_page(user, session_id: int) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("chat-page", args=[session_id]))
    assert response.status_code == 200
    return response.content.decode()


@sync_to_async
def _status(pk: int) -> str:
    return OutboxMessage.objects.get(pk=pk).status


async def _is(pk: int, status: str) -> bool:
    return await _status(pk) == status


async def test_a_placeholder_refused_twice_is_posted_on_the_third_try(
    telegram, org, member, agents_llm, quick
):
    app = await sync_to_async(app_and_user)(telegram, org, member)
    agents_llm.add("default", text(ANSWER))
    telegram.fake.unavailable_next("sendMessage", 2)

    await telegram.ask(app, QUESTION)

    tries = telegram.fake.called("sendMessage")
    assert [c.status for c in tries] == [503, 503, 200] and "Looking into it" in tries[2].body["text"]
    [message] = telegram.thread()  # the placeholder, edited into the answer
    assert message.startswith(ANSWER) and LATE not in message
    assert await rows() == []


async def test_a_platform_down_past_the_budget_fails_the_row_for_the_admin_without_a_token(
    telegram, org, member, org_admin, agents_llm, quick, monkeypatch, caplog
):
    monkeypatch.setattr(outbox, "GIVE_UP_AFTER", timedelta(seconds=1))
    caplog.set_level(logging.INFO)
    app = await sync_to_async(app_and_user)(telegram, org, member)
    agents_llm.add("default", text(ANSWER))
    telegram.fake.refuse_connections()

    await telegram.ask(app, QUESTION)
    [row] = await rows()
    await until(lambda: _is(row.pk, LateDelivery.FAILED), what="the row given up")

    failed = await sync_to_async(OutboxMessage.objects.get)(pk=row.pk)
    assert failed.last_error.startswith("ConnectError; gave up after")
    token = telegram.fake.token
    stored = json.dumps([failed.address, failed.messages, failed.last_error, failed.language])
    assert token not in stored and token not in caplog.text
    page = await sync_to_async(_admin_outbox)(org_admin, failed.pk)
    assert "ConnectError; gave up after" in page and ("failed" in page.lower()) and token not in page
    telegram.fake.come_back()
    assert await redelivery.drain_once() == 0 and telegram.thread() == []  # failed stays failed


def _admin_outbox(admin, pk: int) -> str:
    client = Client()
    client.force_login(admin)
    listing = client.get("/admin/im_app/outboxmessage/")
    detail = client.get(f"/admin/im_app/outboxmessage/{pk}/change/")
    assert listing.status_code == 200 and detail.status_code == 200
    return listing.content.decode() + detail.content.decode()


async def test_a_note_of_a_fast_turn_stays_in_the_thread(telegram, org, member, agents_llm, quick):
    app = await sync_to_async(app_and_user)(telegram, org, member)
    note = "Dispatching specialist-disk, one moment."
    agents_llm.add("default", tool_calls(call("SendMessage", {"message": note})), text(ANSWER))

    await telegram.ask(app, QUESTION)

    [message] = telegram.thread()
    assert f"💬 {note}" in message and ANSWER in message
    assert message.index(note) < message.index(ANSWER)


def _beat_task() -> int:
    """What Celery beat runs (its schedule entry names this task), on a connection of its own."""
    entry = settings.CELERY_BEAT_SCHEDULE["redeliver-im-outbox"]
    assert entry["task"] == redeliver_task.name
    try:
        return redeliver_task.apply().get()
    finally:
        connections.close_all()


async def test_two_drainers_at_once_post_a_late_answer_once(
    telegram, org, member, agents_llm, quick, monkeypatch
):
    app = await sync_to_async(app_and_user)(telegram, org, member)
    monkeypatch.setattr(redelivery, "ensure_drainer", lambda: None)  # only the two drainers below
    agents_llm.add("default", text(ANSWER))
    telegram.fake.refuse_connections()
    await telegram.ask(app, QUESTION)
    [row] = await rows()
    telegram.fake.come_back()

    # The embedded loop's pass and the beat task (in its own thread, with its own connection).
    embedded, beat = await asyncio.gather(redelivery.drain_once(), asyncio.to_thread(_beat_task))

    assert sorted([embedded, beat]) == [0, 1]
    [late] = telegram.thread()
    assert LATE in late and late.count(ANSWER) == 1
    assert await _status(row.pk) == LateDelivery.DELIVERED


async def test_the_late_note_is_in_the_threads_language(org, member, agents_llm, quick):
    telegram = platform_named("telegram")
    try:
        app = await sync_to_async(telegram.make_app)(org, telegram.fake, reply_language="fr")
        await sync_to_async(link)(app, telegram.sender, member)
        agents_llm.add("default", text(ANSWER))
        telegram.fake.refuse_connections()
        await telegram.ask(app, QUESTION)
        [row] = await rows()
        telegram.fake.come_back()

        await until(lambda: _is(row.pk, LateDelivery.DELIVERED), what="the late delivery")

        [late] = telegram.thread()
        assert "livré en retard : Telegram était injoignable" in late and ANSWER in late
    finally:
        telegram.fake.stop()


async def test_an_approval_card_queued_in_the_outage_arrives_late_and_its_buttons_work(
    telegram, org, member, agents_llm, quick, settings
):
    import dataclasses

    from ops_app.models import Incident
    from tests.support.gate import DUAL, ack_arguments, make_incident, make_user_agent
    from tests.support.im import tg_button

    settings.CONFIG = dataclasses.replace(settings.CONFIG, approval_timeout=60.0)
    await sync_to_async(make_user_agent)(org, DUAL, "dual-sign-required", ["acknowledge_incident"])
    incident = await sync_to_async(make_incident)(org)
    app = await sync_to_async(app_and_user)(telegram, org, member)
    brief = {"description": "Ack payments", "subagent_type": DUAL, "prompt": "Ack the incident."}
    agents_llm.add("default", tool_calls(call("AgentTool", brief, id="dispatch")), text("Acknowledged it."))
    agents_llm.add(
        DUAL, tool_calls(call("acknowledge_incident", ack_arguments(incident), id="ack")), text("Done.")
    )
    agents_llm.add("reviewer", text(APPROVE))
    telegram.fake.refuse_connections()

    await post_telegram(app, tg_message(1, "Acknowledge the payments incident"), wait=False)
    card_row = await until(
        lambda: OutboxMessage.objects.filter(kind=OutboxMessage.Kind.CARD).afirst(), what="the queued card"
    )
    assert card_row.proposal_id is not None and card_row.status == LateDelivery.PENDING
    telegram.fake.come_back()

    card_id = await until(
        lambda: next((i for i, m in list(telegram.fake.messages.items()) if "Approval" in m["text"]), None),
        what="the late card",
    )
    card = telegram.fake.messages[card_id]
    assert LATE in card["text"] and f"incident:{incident.pk}" in card["text"]
    approve, _reject = card["reply_markup"]["inline_keyboard"][0]
    press = tg_button(2, approve["callback_data"], user_id=42, chat_id=555, message_id=card_id)
    await post_telegram(app, press)  # waits for the press and for the relay, which ends with the turn

    assert (await Incident.objects.aget(pk=incident.pk)).status == "acknowledged"
    assert "Approved by alice" in telegram.fake.messages[card_id]["text"]
    assert any(t.startswith("Acknowledged it.") for t in telegram.thread())
    assert await _is(card_row.pk, LateDelivery.DELIVERED)


async def test_answers_queued_before_a_restart_go_out_after_its_first_webhook(
    telegram, org, member, agents_llm, quick
):
    app = await sync_to_async(app_and_user)(telegram, org, member)
    address = {"chat_id": 555, "topic_id": None}
    left = "Answer queued before the restart."
    row = await sync_to_async(outbox.enqueue)(app, None, address, [(left, None)], "ConnectError")
    assert redelivery.running_drainers() == []  # a fresh process: nothing drains yet
    agents_llm.add("default", text(ANSWER))

    await telegram.ask(app, QUESTION)

    await until(lambda: _is(row.pk, LateDelivery.DELIVERED), what="the row left by the restart")
    late = [t for t in telegram.thread() if left in t]
    assert len(late) == 1 and LATE in late[0]
    assert any(t.startswith(ANSWER) for t in telegram.thread())


async def test_manage_py_ongrid_im_drains_the_outbox_too(telegram, org, member, quick):
    from im_app import outbound

    app = await sync_to_async(app_and_user)(telegram, org, member)
    left = "Answer queued while Telegram was down."
    row = await sync_to_async(outbox.enqueue)(app, None, {"chat_id": 555}, [(left, None)], "HTTP 503")
    stop = asyncio.Event()
    runner = asyncio.create_task(outbound.run_all(stop))  # what `manage.py ongrid_im` runs

    await until(lambda: _is(row.pk, LateDelivery.DELIVERED), what="the row drained by ongrid_im")
    stop.set()
    await asyncio.wait_for(runner, timeout=10)

    [late] = telegram.thread()
    assert left in late and LATE in late
