"""The first publish after a Redis restart meets a pooled connection the server closed: it is
sent again on a fresh connection and arrives. With Redis down the outage is logged once, naming
the first lost event, publishing never raises into the turn, and the first publish once Redis is
back says how many events were lost. The layer here has redis-py's own retries off (the
client main shipped with), so it is the publisher's retry that is under test."""

from __future__ import annotations

import asyncio
import logging

import pytest
from channels_redis.core import RedisChannelLayer
from django.test import override_settings

from agents_app.runtime import events, publishing
from agents_app.runtime.publishing import Publisher
from chat_app.groups import session_group
from tests.support.servers import private_redis

pytestmark = pytest.mark.services

SESSION = 7


@pytest.fixture
def redis(tmp_path):
    with private_redis(tmp_path) as server:
        yield server


def plain_layer(url: str) -> dict:
    return {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [url]}}}


async def test_the_first_publish_after_a_restart_arrives_and_an_outage_is_logged_once(
    redis, caplog, monkeypatch
):
    monkeypatch.setattr(publishing, "OUTAGE_RETRY_SECONDS", 0.0)  # every publish tries the layer
    with override_settings(CHANNEL_LAYERS=plain_layer(redis.url)):
        publisher = Publisher(SESSION)
        await publisher.publish(events.TurnQueued(SESSION))  # the pool now holds a connection
        await asyncio.to_thread(redis.restart)

        listener = RedisChannelLayer(hosts=[redis.url])
        channel = await listener.new_channel()
        await listener.group_add(session_group(SESSION), channel)
        caplog.set_level(logging.WARNING, logger="agents_app.runtime.publishing")
        await publisher.publish(events.TurnStarted(SESSION, message_id=1, user_text="hi"))
        message = await asyncio.wait_for(listener.receive(channel), 10)
        assert message["type"] == "turn.event"
        assert events.parse(message["event"]) == events.TurnStarted(SESSION, message_id=1, user_text="hi")
        assert caplog.records == []
        await listener.close_pools()

        await asyncio.to_thread(redis.kill)
        for delta in ("a", "b", "c"):  # a streaming turn goes on publishing during the outage
            await publisher.publish(events.TextDelta(SESSION, text=delta))
        warnings = [r.getMessage() for r in caplog.records]
        assert len(warnings) == 1 and "could not publish text.delta" in warnings[0]

        await asyncio.to_thread(redis.start)
        listener = RedisChannelLayer(hosts=[redis.url])
        channel = await listener.new_channel()
        await listener.group_add(session_group(SESSION), channel)
        caplog.set_level(logging.INFO, logger="agents_app.runtime.publishing")
        await publisher.publish(events.TurnEnded(SESSION, status="completed", text="done"))
        message = await asyncio.wait_for(listener.receive(channel), 10)
        assert events.parse(message["event"]) == events.TurnEnded(SESSION, status="completed", text="done")
        assert "publishing again; 3 event(s) lost" in caplog.records[-1].getMessage()
        await listener.close_pools()
