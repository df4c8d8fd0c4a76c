"""The LLM endpoint failing (issue 28 part E): rate limits with Retry-After, bursts of 5xx, and an
endpoint that hangs, through the real SDK against the fake server, in whole chat turns.

Timing assertions measure elapsed time on the fake server's request timestamps; nothing sleeps."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.urls import reverse

from agents_app.llm.openai_provider import retry_after_seconds
from agents_app.runtime import events
from agents_app.runtime.core import Runtime
from chat_app import services
from chat_app.groups import session_group
from chat_app.models import ChatMessage, ChatSession, MessageRole, SessionStatus
from fakes.openai_server import call, error, held, stalled, text, tool_calls
from ongrid_site import config
from ongrid_site.asgi import application
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from web_app.chat import fragments

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("close_async_db_connections")]


@pytest.fixture
def chat(member):
    return services.start_chat(member)


@pytest.fixture
def llm(agents_llm, settings):
    """The product's LLM on the fake, with the deployment's retry policy (3 retries) and a short
    ONGRID_LLM_TIMEOUT, so a hang ends within the test's patience."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, llm_max_retries=3, llm_timeout=2.0)
    return agents_llm


async def ask(chat, question: str):
    await services.abegin_turn(chat.pk, question)
    clock = time.monotonic()
    result = await Runtime().run_turn(chat.pk)
    return result, time.monotonic() - clock


async def listening(chat):
    """A channel in the chat's group, as every open chat page has one."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(session_group(chat.pk), channel)
    return layer, channel


async def drain(layer, channel) -> list[dict]:
    """Every event published to the group until the turn ended."""
    seen: list[dict] = []
    async with asyncio.timeout(30):
        while not seen or seen[-1]["event"] != "turn.ended":
            seen.append((await layer.receive(channel))["event"])
    return seen


def gaps(fake) -> list[float]:
    at = [r.at for r in fake.chat_requests]
    return [later - earlier for earlier, later in zip(at, at[1:], strict=False)]


async def idle_with_the_question_kept(chat, question: str) -> ChatSession:
    row = await ChatSession.objects.aget(pk=chat.pk)
    assert row.status == SessionStatus.IDLE
    asked = await ChatMessage.objects.filter(session=chat, role=MessageRole.USER).alast()
    assert asked is not None and asked.content == question
    return row


# ---- Retry-After --------------------------------------------------------------------------------


async def test_a_429_with_retry_after_is_retried_no_sooner_than_asked(chat, llm, fake_llm):
    llm.add("default", error(429, "slow down", retry_after=2), text("The disk is 91% full."))
    result, _ = await ask(chat, "how full is the disk?")
    assert result.status == "completed" and result.text == "The disk is 91% full."
    assert len(fake_llm.chat_requests) == 2
    assert gaps(fake_llm)[0] >= 2.0


async def test_retry_after_ms_on_a_503_is_honoured(chat, llm, fake_llm):
    llm.add("default", error(503, "overloaded", retry_after_ms=1500), text("back"))
    result, _ = await ask(chat, "hello")
    assert result.text == "back"
    assert gaps(fake_llm)[0] >= 1.5


async def test_a_retry_after_above_the_cap_fails_at_once_with_the_reason(chat, llm, fake_llm):
    llm.add("default", error(429, "quota", retry_after=600), text("never reached"))
    result, elapsed = await ask(chat, "hello")
    assert result.status == "failed" and elapsed < 2.0
    assert "the model asked to wait 600 s" in result.error
    assert "ONGRID_LLM_RETRY_AFTER_MAX (60 s)" in result.error and "HTTP 429" in result.error
    assert len(fake_llm.chat_requests) == 1
    row = await idle_with_the_question_kept(chat, "hello")
    assert "asked to wait 600 s" in row.error
    bubble = await ChatMessage.objects.filter(session=chat, kind="error").alast()
    assert bubble is not None and "asked to wait 600 s" in bubble.content


async def test_the_cap_is_the_operators_setting(chat, llm, fake_llm, settings):
    assert config.load({"SECRET_KEY": "x", "ONGRID_LLM_RETRY_AFTER_MAX": "1"}).llm_retry_after_max == 1
    assert config.load({"SECRET_KEY": "x"}).llm_retry_after_max == 60
    settings.CONFIG = dataclasses.replace(settings.CONFIG, llm_retry_after_max=1.0)
    llm.add("default", error(429, retry_after=2), text("never reached"))
    result, _ = await ask(chat, "hello")
    assert result.status == "failed"
    assert "asked to wait 2 s, longer than ONGRID_LLM_RETRY_AFTER_MAX (1 s)" in result.error


def test_retry_after_is_read_as_seconds_milliseconds_or_an_http_date():
    now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    in_five = format_datetime(now + timedelta(seconds=5), usegmt=True)
    assert retry_after_seconds({"retry-after": in_five}, now=now.timestamp()) == pytest.approx(5)
    assert retry_after_seconds({"retry-after": "2"}) == 2
    assert retry_after_seconds({"retry-after": "1", "retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


# ---- bursts of 5xx ------------------------------------------------------------------------------


async def test_a_burst_of_500s_is_retried_and_each_retry_is_published_to_the_chat(chat, llm, fake_llm):
    llm.add("default", error(500), error(502), text("recovered"))
    layer, channel = await listening(chat)
    result, _ = await ask(chat, "hello")
    assert result.status == "completed" and result.text == "recovered"
    seen = await drain(layer, channel)
    retries = [e for e in seen if e["event"] == "llm.retrying"]
    assert [(e["attempt"], e["attempts"], e["status"]) for e in retries] == [(2, 4, 500), (3, 4, 502)]
    assert all(e["session"] == chat.pk and e["worker"] is False and e["delay"] > 0 for e in retries)
    names = [e["event"] for e in seen]
    assert names.index("llm.retrying") < names.index("text.delta")  # shown while waiting, not after


async def test_when_the_retries_run_out_the_turn_fails_naming_the_status_and_attempts(
    chat, llm, fake_llm, settings
):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, llm_max_retries=1)
    llm.add("default", error(500, "upstream exploded"), error(500, "upstream exploded"))
    result, _ = await ask(chat, "hello")
    assert result.status == "failed"
    assert "HTTP 500" in result.error and "after 2 attempts" in result.error
    await idle_with_the_question_kept(chat, "hello")


# ---- an endpoint that hangs ---------------------------------------------------------------------


async def test_an_endpoint_that_never_answers_fails_the_turn_after_the_timeout(chat, llm, fake_llm):
    llm.add("default", held(60), text("not asked again"))
    result, elapsed = await ask(chat, "is web-01 up?")
    assert result.status == "failed"
    assert "did not answer within 2 s (ONGRID_LLM_TIMEOUT)" in result.error
    assert 1.9 <= elapsed < 4.0  # one timeout, not one per retry
    assert len(fake_llm.chat_requests) == 1 and len(fake_llm.hangups) == 1
    row = await idle_with_the_question_kept(chat, "is web-01 up?")
    assert "ONGRID_LLM_TIMEOUT" in row.error


async def test_a_reply_that_stops_mid_stream_fails_and_keeps_the_partial_answer(chat, llm, fake_llm):
    llm.add("default", stalled("web-01 is up; its disk is", 60))
    layer, channel = await listening(chat)
    result, elapsed = await ask(chat, "is web-01 up?")
    assert result.status == "failed" and elapsed < 4.0
    assert "stopped answering mid-reply: nothing for 2 s (ONGRID_LLM_TIMEOUT)" in result.error
    assert len(fake_llm.chat_requests) == 1  # something was streamed: never asked twice
    ended = (await drain(layer, channel))[-1]
    assert ended["status"] == "failed" and ended["text"] == "web-01 is up; its disk is"
    assert "stopped answering" in ended["error"]
    await idle_with_the_question_kept(chat, "is web-01 up?")
    kept = await ChatMessage.objects.filter(session=chat, role=MessageRole.ASSISTANT, kind="text").alast()
    assert kept is not None and kept.content == "web-01 is up; its disk is"
    # Shown above the error: live (the turn's last fragment) and after a reload (the page).
    live = fragments.turn_ended(ended["message_id"], events.parse(ended), chat.pk)
    page = await sync_to_async(shown_page)(chat)
    for html in (live, page):
        partial, error = html.index("web-01 is up; its disk is"), html.index("stopped answering mid-reply")
        assert partial < error and 'class="bubble assistant answer partial"' in html


def shown_page(chat) -> str:
    client = Client()
    client.force_login(chat.user)
    return client.get(reverse("chat-page", args=[chat.pk])).content.decode()


async def test_a_workers_retry_is_published_for_its_tile(chat, llm, fake_llm):
    task = {"description": "Disk scan", "subagent_type": "specialist-disk", "prompt": "Scan web-01."}
    dispatch = call("AgentTool", task)
    llm.add("default", tool_calls(dispatch), text("web-01's disk is fine."))
    llm.add("specialist-disk", error(503), text("Disk at 40%."))
    layer, channel = await listening(chat)
    result, _ = await ask(chat, "scan web-01")
    assert result.status == "completed"
    seen = await drain(layer, channel)
    worker = next(e["session"] for e in seen if e["event"] == "worker.started")
    retries = [e for e in seen if e["event"] == "llm.retrying"]
    shown = [(e["session"], e["worker"], e["status"], e["attempt"]) for e in retries]
    assert shown == [(worker, True, 503, 2)]


def test_listeners_that_do_not_show_retries_ignore_the_event():
    """The IM placeholder and `ongrid_chat` skip it; a receiver parses it back to its class."""
    from im_app.thread import Progress

    retrying = events.LLMRetrying(7, status=429, attempt=2, attempts=4, delay=2.0)
    assert events.parse(retrying.to_message()) == retrying
    progress = Progress()
    assert progress.take(retrying) is False and progress.lines == []


@pytest.mark.usefixtures("inline_executor")
async def test_the_chat_socket_shows_the_retry_line_and_drops_it_with_the_first_words(
    client, chat, member, llm
):
    llm.add("default", error(500), text("back online", chunk_size=50))
    await sync_to_async(client.force_login)(member)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    origin = [(b"host", b"127.0.0.1"), (b"origin", b"http://127.0.0.1")]
    socket = WebsocketCommunicator(application, f"/ws/chat/{chat.pk}/", headers=[*origin, cookie])
    connected, _ = await socket.connect(timeout=5)
    assert connected
    await socket.send_to(text_data='{"message": "are you there?"}')
    frames: list[str] = []
    async with asyncio.timeout(20):
        while not any("back online" in frame for frame in frames):
            frames.append(await socket.receive_from(timeout=20))
    await socket.disconnect()
    shown = next(i for i, f in enumerate(frames) if "Retrying: the model answered 500 (attempt 2 of 4" in f)
    words = next(i for i, f in enumerate(frames) if "back online" in f)
    assert shown < words and 'class="stamp retrying"' in frames[shown]
    turn = frames[words].split('id="retrying-')[1].split('"')[0]
    assert f'<p id="retrying-{turn}" hx-swap-oob="delete"></p>' in frames[words]
