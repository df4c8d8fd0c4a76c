"""Redis restarted (empty, as after a crash or a failover) under a turn running on a Celery
worker: the turn still completes, nothing is stuck `running`, the user's message is kept, a Stop
pressed after the restart still stops the next turn, and the message after that is answered."""

from __future__ import annotations

import pytest

from fakes.openai_server import held, text
from tests.chaos.conftest import ChatClient, HeldAnswer, texts
from tests.support import procs
from tests.support.servers import Daphne, Worker, private_redis, running, stack_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


def test_a_turn_survives_a_redis_restart_and_the_chat_stays_usable(fake_llm, chat_token, tmp_path):
    model = HeldAnswer("answered after the restart")
    fake_llm.route(model)
    with private_redis(tmp_path) as redis:
        env = stack_env(tmp_path, fake_llm.base_url, redis.url)
        daphne, worker = Daphne(env, tmp_path), Worker(env, tmp_path)
        with running(daphne, worker):
            client = ChatClient(daphne.base, chat_token)
            chat = client.new_chat()
            client.send(chat, "what is the disk usage?")
            model.wait_asked()  # the turn runs on the worker, waiting on the model
            redis.restart()
            model.release()
            session = client.wait_idle(chat, 60)
            assert session["error"] == ""
            assert texts(session, "user") == ["what is the disk usage?"]
            assert texts(session)[-1] == "answered after the restart"

            # A Stop after the restart: the pushed stop (the listener rejoined) or the row flag.
            asked = len(fake_llm.chat_requests)
            fake_llm.route(lambda request: held(60))
            client.send(chat, "and the memory?")
            procs.wait_until(lambda: len(fake_llm.chat_requests) > asked, 60, "the second turn's model call")
            client.stop(chat)
            session = client.wait_idle(chat, 15)
            assert session["error"] == "stopped by alice"

            fake_llm.route(lambda request: text("memory is fine"))
            client.send(chat, "once more: the memory?")
            session = client.wait_idle(chat, 60)
            assert texts(session)[-1] == "memory is fine"
            assert texts(session, "user")[-1] == "once more: the memory?"
