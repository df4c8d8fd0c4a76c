"""Redis down: /healthz answers 503 naming the channel layer and the broker within its check
timeout, probe after probe; once Redis is back (empty) /healthz is 200 and the chat answers.
A message sent while the broker is unreachable: test_broker_unreachable.py."""

from __future__ import annotations

import pytest

from fakes.openai_server import text
from ongrid_site.health import CHECK_TIMEOUT
from tests.chaos.conftest import ChatClient, healthz, texts
from tests.support import procs
from tests.support.servers import Daphne, Worker, private_redis, running, stack_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]

# What a load balancer may rely on: an answer within the checks' timeout plus the request's own
# overhead on a busy two-core machine.
ANSWER_WITHIN = CHECK_TIMEOUT + 1.5


def test_healthz_names_redis_while_it_is_down_and_the_chat_recovers(fake_llm, chat_token, tmp_path):
    fake_llm.route(lambda request: text("back in business"))
    with private_redis(tmp_path) as redis:
        env = stack_env(tmp_path, fake_llm.base_url, redis.url)
        daphne, worker = Daphne(env, tmp_path), Worker(env, tmp_path)
        with running(daphne, worker):
            client = ChatClient(daphne.base, chat_token)
            chat = client.new_chat()
            assert healthz(daphne.base)[0] == 200
            redis.kill()
            for _ in range(4):  # repeated probes during the outage: each one bounded, none piling up
                status, body, took = healthz(daphne.base)
                assert status == 503, body
                assert took < ANSWER_WITHIN, f"/healthz took {took:.1f}s while Redis was down"
                assert body["status"] == "unhealthy"
                assert body["failed"] == ["channel layer", "broker"]
                assert body["checks"]["database"] == {"ok": True}

            redis.start()  # same port, empty
            procs.wait_until(lambda: healthz(daphne.base)[0] == 200, 30, "/healthz to be 200 again")
            client.send(chat, "hello again?")
            session = client.wait_idle(chat, 60)
            assert session["error"] == ""
            assert texts(session)[-1] == "back in business"
