"""An idle chat websocket through daphne and the Redis channel layer stays open (redis-py's
default 5 s read timeout used to meet channels_redis' 5 s blocking read and close it with 1011),
and afterwards still carries a turn's events. The one long test of the folder: a minute of
silence, so it has its own timeout and may run in parallel with the others."""

from __future__ import annotations

import json

import pytest

from fakes.openai_server import text
from tests.chaos.conftest import ChatClient, chat_socket, frames_until
from tests.support.servers import Daphne, Worker, private_redis, running, stack_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.timeout(300)]

IDLE_SECONDS = 60


def test_an_idle_chat_socket_stays_open_and_then_streams_a_turn(
    fake_llm, chat_token, session_cookie, tmp_path
):
    fake_llm.route(lambda request: text("still listening"))
    with private_redis(tmp_path) as redis:
        env = stack_env(tmp_path, fake_llm.base_url, redis.url)
        daphne, worker = Daphne(env, tmp_path), Worker(env, tmp_path)
        with running(daphne, worker):
            chat = ChatClient(daphne.base, chat_token).new_chat()
            with chat_socket(daphne.ws_base, chat, session_cookie) as socket:
                # A minute with nothing to say: the wait is the test (a close would end it early).
                with pytest.raises(TimeoutError):
                    socket.recv(timeout=IDLE_SECONDS)
                socket.send(json.dumps({"message": "are you still there?"}))
                frames_until(socket, "still listening", 60)
        assert "TimeoutError" not in daphne.log.read_text(errors="replace")
