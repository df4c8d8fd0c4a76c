"""PostgreSQL's connection pool (docs/architecture.md, "Talking to the database from async code"):
turns keep working after the server drops every connection of the database."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from asgiref.sync import sync_to_async
from django.db import close_old_connections, connection

from agents_app.runtime.turns import astart_turn
from audit_app.models import LLMCall
from chat_app import services
from chat_app.models import ChatSession, SessionStatus
from fakes.openai_server import text
from ops_app.core.async_db import pooled_database
from tests.support.celery_worker import celery_worker_process

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the connection pool is PostgreSQL's"),
]


@pytest.fixture
def main_backend() -> int:
    """The backend of pytest-django's own connection (it flushes the tables after the test)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _drop_connections(keep: int) -> int:
    """What a server restart does to every client of the database (but pytest-django's)."""
    db = connection.settings_dict
    params = {"dbname": db["NAME"], "host": db["HOST"] or "127.0.0.1", "port": db["PORT"] or 5432}
    with psycopg.connect(**params, user=db["USER"], password=db["PASSWORD"] or None, autocommit=True) as raw:
        return raw.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> %s",
            [keep],
        ).fetchone()[0]


async def _after_the_restart(keep: int) -> None:
    assert await asyncio.to_thread(_drop_connections, keep) >= 1
    # What Django does at the start of the next request: the stale connection goes back to the pool.
    await sync_to_async(close_old_connections)()


async def _turn_ends(chat_id: int) -> ChatSession:
    async with asyncio.timeout(60):
        while True:
            chat = await ChatSession.objects.aget(pk=chat_id)
            if chat.status == SessionStatus.IDLE:
                return chat
            await asyncio.sleep(0.05)  # polling the shared row, as `wait_for_turn` does


async def test_inline_turns_survive_the_server_dropping_every_connection(
    member, agents_llm, inline_executor, main_backend
):
    assert pooled_database()
    chat = await sync_to_async(services.start_chat)(member)
    agents_llm.add("default", text("first answer"), text("second answer"))
    await astart_turn(chat, "first")
    assert (await _turn_ends(chat.pk)).error == ""
    await _after_the_restart(main_backend)
    await astart_turn(chat, "second")
    after = await _turn_ends(chat.pk)
    assert after.error == ""
    assert await LLMCall.objects.filter(session_id=chat.pk).acount() == 2
    answers = [m async for m in chat.messages.filter(role="assistant").values_list("content", flat=True)]
    assert answers == ["first answer", "second answer"]


async def test_a_worker_process_survives_the_server_dropping_every_connection(
    member, agents_llm, fake_llm, tmp_path, main_backend
):
    with celery_worker_process(fake_llm.base_url, str(tmp_path)):
        chat = await sync_to_async(services.start_chat)(member)
        agents_llm.add("default", text("first answer"), text("second answer"))
        await astart_turn(chat, "first")
        assert (await _turn_ends(chat.pk)).error == ""
        await _after_the_restart(main_backend)  # the worker's pooled connections among them
        await astart_turn(chat, "second")
        after = await _turn_ends(chat.pk)
    assert after.error == ""
    assert await LLMCall.objects.filter(session_id=chat.pk).acount() == 2
