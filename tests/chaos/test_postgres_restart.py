"""PostgreSQL restarted under a turn (the turn runs inside daphne, the embedded executor, on a
private cluster): /healthz answers 503 naming the database within its timeout, probe after probe,
while it is down; the model's answer that arrives meanwhile is written once the database is back
(or the turn ends `failed` saying why), the chat is idle, never stuck `running`, the user's
message is kept, the next message is answered, and /healthz is 200 again."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ongrid_site.health import CHECK_TIMEOUT
from tests.chaos.conftest import ChatClient, HeldAnswer, healthz, texts
from tests.support import procs
from tests.support.django_subprocess import ROOT
from tests.support.servers import Daphne, private_postgres, running, stack_env

pytestmark = pytest.mark.services

ANSWER_WITHIN = CHECK_TIMEOUT + 1.5  # the checks' bound plus a busy machine's request overhead

SETUP = """
import django
django.setup()
from ops_app.models import ApiToken
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_organization, create_user
user = create_user("alice", "alice-pass-123", create_organization("Acme Corp", "acme"), roles.MEMBER)
print(ApiToken.issue(user)[1])
"""


def prepare(env: dict[str, str]) -> str:
    """Migrate the private database and give it a member; her API token."""
    migrate = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
    subprocess.run(migrate, cwd=ROOT, env=env, check=True, capture_output=True, timeout=600)
    made = subprocess.run(
        [sys.executable, "-c", SETUP],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return made.stdout.strip().splitlines()[-1]


def test_a_turn_outlives_a_postgres_restart_and_healthz_says_database(fake_llm, tmp_path):
    model = HeldAnswer("written after the restart", then="the database is back")
    fake_llm.route(model)
    with private_postgres(tmp_path) as postgres:
        env = stack_env(tmp_path, fake_llm.base_url, None, DATABASE_URL=postgres.create_database())
        daphne = Daphne(env, tmp_path)
        client = ChatClient(daphne.base, prepare(env))
        with running(daphne):
            chat = client.new_chat()
            client.send(chat, "is the database healthy?")
            model.wait_asked()

            postgres.stop()
            for _ in range(3):
                status, body, took = healthz(daphne.base)
                assert status == 503, body
                assert took < ANSWER_WITHIN, f"/healthz took {took:.1f}s while PostgreSQL was down"
                assert body["failed"] == ["database"]
            model.release()  # the answer comes while the database is still down
            procs.wait_until(lambda: len(fake_llm.chat_requests) >= 1 and model.asked.is_set(), 5, "answer")
            status, body, took = healthz(daphne.base)
            assert status == 503 and took < ANSWER_WITHIN
            postgres.start()

            session = client.wait_idle(chat, 90)
            assert texts(session, "user") == ["is the database healthy?"]
            if session["error"]:  # ended visibly, saying why
                assert session["error"].startswith("The turn failed")
            else:
                assert texts(session)[-1] == "written after the restart"
            procs.wait_until(lambda: healthz(daphne.base)[0] == 200, 30, "/healthz to be 200 again")

            client.send(chat, "and now?")
            session = client.wait_idle(chat, 60)
            assert session["error"] == ""
            assert texts(session)[-1] == "the database is back"
