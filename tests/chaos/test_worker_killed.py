"""A Celery worker SIGKILLed mid-turn: the next worker to start reaps the turn (the chat goes
back to idle, saying why), keeps the user's message, and answers the next one."""

from __future__ import annotations

import pytest

from chat_app.models import ChatSession
from tests.chaos.conftest import ChatClient, HeldAnswer, texts
from tests.support import procs
from tests.support.servers import Daphne, Worker, private_redis, running, stack_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


def test_a_killed_worker_is_reaped_by_the_next_one_and_the_chat_answers(fake_llm, chat_token, tmp_path):
    model = HeldAnswer("never delivered", then="answered by the new worker")
    fake_llm.route(model)
    with private_redis(tmp_path) as redis:
        env = stack_env(tmp_path, fake_llm.base_url, redis.url)
        daphne, doomed = Daphne(env, tmp_path), Worker(env, tmp_path, "worker-1")
        with running(daphne, doomed):
            client = ChatClient(daphne.base, chat_token)
            chat = client.new_chat()
            client.send(chat, "restart nginx on web-1?")
            model.wait_asked()
            procs.wait_until(
                lambda: ChatSession.objects.get(pk=chat).owner == doomed.identity, 30, "the worker's claim"
            )
            doomed.kill()
            model.release()  # the dead worker's model call ends unanswered
            with running(Worker(env, tmp_path, "worker-2")):
                session = client.wait_idle(chat, 30)
                assert "is gone; closed by the reaper" in session["error"]
                assert texts(session, "user") == ["restart nginx on web-1?"]
                client.send(chat, "try again")
                session = client.wait_idle(chat, 60)
                assert session["error"] == ""
                assert texts(session)[-1] == "answered by the new worker"
