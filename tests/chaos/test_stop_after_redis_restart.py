"""A restarted Redis forgets every channel-layer group, the stop listener's too, while the
listener's blocking read goes on as if nothing happened. The listener rejoins, so a Stop pushed
from another process after the restart still ends the turn within a second or two; here the row
poll is slowed to 30 s, so only the push can be that fast."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest
import redis as redis_client
from django.conf import settings
from django.test import override_settings

from agents_app.runtime import core as runtime_module
from agents_app.runtime.core import Runtime, stop_group
from chat_app import services
from chat_app.models import ChatSession, SessionStatus
from fakes.openai_server import held
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.servers import private_redis

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.services,
    pytest.mark.usefixtures("close_async_db_connections"),
]


@pytest.fixture
def redis(tmp_path):
    with private_redis(tmp_path) as server:
        yield server


async def until(condition, seconds: float, what: str) -> None:
    """Poll an observable condition with a deadline."""
    deadline = time.monotonic() + seconds
    while not await condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def test_a_pushed_stop_reaches_the_turn_after_redis_restarted(
    redis, member, agents_llm, fake_llm, monkeypatch
):
    monkeypatch.setattr(runtime_module, "STOP_POLL_SECONDS", 30.0)
    monkeypatch.setattr(runtime_module, "STOP_REJOIN_SECONDS", 0.5)
    layers = dataclasses.replace(settings.CONFIG, redis_url=redis.url).channel_layers()
    agents_llm.add("default", held(60))
    chat = await asyncio.to_thread(services.start_chat, member)
    group_key = f"ongrid:group:{stop_group(chat.pk)}"
    client = redis_client.Redis.from_url(redis.url)

    async def in_group() -> bool:
        return bool(await asyncio.to_thread(client.zcard, group_key))

    async def model_asked() -> bool:
        return len(fake_llm.chat_requests) >= 1

    with override_settings(CHANNEL_LAYERS=layers):
        await services.abegin_turn(chat.pk, "why is checkout slow?")
        turn = asyncio.create_task(Runtime().run_turn(chat.pk))
        await until(model_asked, 20, "the model call")
        await until(in_group, 10, "the stop listener to join")

        await asyncio.to_thread(redis.restart)  # empty: any membership now is a rejoin
        await until(in_group, 10, "the stop listener to rejoin")

        stopped_at = time.monotonic()
        await Runtime().stop_session(chat.pk, by="bob")  # another runtime: only the push reaches it
        result = await asyncio.wait_for(turn, 10)
        assert time.monotonic() - stopped_at < 2.0
    client.close()
    assert result.status == "killed" and result.error == "stopped by bob"
    row = await ChatSession.objects.aget(pk=chat.pk)
    assert row.status == SessionStatus.IDLE and row.error == "stopped by bob"
