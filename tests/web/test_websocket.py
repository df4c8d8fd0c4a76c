"""Websockets through the real ASGI stack (origin check, session auth, channel layer)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings

from chat_app.groups import user_group
from ongrid_site.asgi import application
from tests.support.required import require

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
ORIGIN = (b"origin", b"http://127.0.0.1")
HOST = (b"host", b"127.0.0.1")  # the origin check compares the Origin with the Host (same origin)


@sync_to_async
def _cookie_for(client, user) -> tuple[bytes, bytes]:
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def _connect(headers):
    communicator = WebsocketCommunicator(application, "/ws/events/", headers=[HOST, *headers])
    connected, code = await communicator.connect(timeout=5)
    return communicator, connected, code


async def test_signed_in_user_gets_a_round_trip(client, member):
    communicator, connected, _ = await _connect([ORIGIN, await _cookie_for(client, member)])
    assert connected
    await communicator.send_json_to({"type": "ping"})
    assert await communicator.receive_json_from(timeout=5) == {"type": "pong", "user": "alice"}
    await communicator.disconnect()


async def test_anonymous_connection_is_rejected():
    communicator, connected, code = await _connect([ORIGIN])
    assert not connected
    assert code == 4401


async def test_foreign_origin_is_rejected(client, member):
    communicator, connected, _ = await _connect(
        [(b"origin", b"http://evil.example"), await _cookie_for(client, member)]
    )
    assert not connected


async def test_group_send_reaches_only_the_users_socket(client, member, outsider):
    from channels.layers import get_channel_layer

    mine, ok1, _ = await _connect([ORIGIN, await _cookie_for(client, member)])
    theirs, ok2, _ = await _connect([ORIGIN, await _cookie_for(client, outsider)])
    assert ok1 and ok2
    await get_channel_layer().group_send(user_group(member.pk), {"type": "user.event", "payload": {"n": 1}})
    assert await mine.receive_json_from(timeout=5) == {"n": 1}
    assert await theirs.receive_nothing(timeout=0.3)
    await mine.disconnect()
    await theirs.disconnect()


PUBLISHER = """
import django, sys
django.setup()
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
message = {"type": "user.event", "payload": {"from": "subprocess"}}
async_to_sync(get_channel_layer().group_send)(sys.argv[1], message)
"""


async def test_group_send_from_another_process_reaches_the_consumer(client, member):
    require(bool(settings.CONFIG.redis_url), "Redis (REDIS_URL) for a cross-process channel layer")
    communicator, connected, _ = await _connect([ORIGIN, await _cookie_for(client, member)])
    assert connected
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ongrid_site.settings"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        PUBLISHER,
        user_group(member.pk),
        cwd=ROOT,
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, stderr.decode()
    assert await communicator.receive_json_from(timeout=10) == {"from": "subprocess"}
    await communicator.disconnect()
    assert json.dumps(settings.CHANNEL_LAYERS).count("RedisChannelLayer") == 1
