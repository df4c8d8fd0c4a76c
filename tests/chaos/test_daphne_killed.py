"""daphne SIGKILLed while it streams a turn that runs on a Celery worker: the turn finishes on the
worker, and the chat socket reconnecting to a new daphne shows the finished answer (not the
stale streaming bubble) and no Stop button."""

from __future__ import annotations

import json

import pytest
from websockets.exceptions import ConnectionClosed

from chat_app.models import ChatSession, SessionStatus
from tests.chaos.conftest import ChatClient, HeldAnswer, chat_socket, frames_until
from tests.support import procs
from tests.support.servers import Daphne, Worker, private_redis, running, stack_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


def test_the_turn_finishes_on_the_worker_and_a_new_daphne_shows_it(
    fake_llm, chat_token, session_cookie, tmp_path
):
    model = HeldAnswer("finished while daphne was away")
    fake_llm.route(model)
    with private_redis(tmp_path) as redis:
        env = stack_env(tmp_path, fake_llm.base_url, redis.url)
        first, worker = Daphne(env, tmp_path, "daphne-1"), Worker(env, tmp_path)
        second = Daphne(env, tmp_path, "daphne-2")
        with running(first, worker):
            chat = ChatClient(first.base, chat_token).new_chat()
            with chat_socket(first.ws_base, chat, session_cookie) as socket:
                socket.send(json.dumps({"message": "check the web hosts"}))
                model.wait_asked()
                frames_until(socket, "check the web hosts", 30)  # the turn is on the page
                first.kill()
                with pytest.raises(ConnectionClosed):
                    socket.recv(timeout=10)
            model.release()
            procs.wait_until(
                lambda: ChatSession.objects.get(pk=chat).status == SessionStatus.IDLE, 60, "the turn to end"
            )
            assert ChatSession.objects.get(pk=chat).error == ""
            with running(second), chat_socket(second.ws_base, chat, session_cookie) as socket:
                frame = frames_until(socket, "finished while daphne was away", 30)
                assert "streaming" not in frame  # the stale bubble is replaced
                assert 'class="stop"' not in frame  # and the Stop button goes
