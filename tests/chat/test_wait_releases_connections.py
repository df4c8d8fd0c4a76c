"""Issue 28: a `?wait=1` request holds no database connection while its turn runs.

One daphne on PostgreSQL without Redis (the inline executor) and a fake model that holds every
answer until all the questions are in: with a pool far smaller than the number of clients, every
client still gets its answer, and the process never has more connections open than its pool.
Over the process's cap the extra clients get 503 + Retry-After, and nothing of theirs is stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path

import httpx
import psycopg
import pytest
from django.db import connection

from chat_app.models import ChatMessage, ChatSession, SessionStatus
from fakes.openai_server import FakeLLM, RecordedRequest, Reply, text
from ops_app.models import ApiToken
from tests.support import django_subprocess
from tests.support.django_subprocess import ROOT, child_env
from tests.support.procs import free_port, stop, wait_until
from tests.support.required import require

pytestmark = pytest.mark.django_db(transaction=True)

APPLICATION = "ongrid-wait-test"  # how the daphne's connections name themselves in pg_stat_activity
QUESTION = re.compile(r"question-(\d+)")


class HeldModel:
    """A coordinator that answers "Answer to question-N", holding every answer until `expected`
    questions have reached it (or `release()` is called)."""

    def __init__(self, expected: int | None = None) -> None:
        self.expected = expected
        self.asked = 0
        self._open = False
        self._changed = threading.Condition()

    def __call__(self, request: RecordedRequest) -> Reply:
        users = [m for m in request.messages if m.get("role") == "user"]
        found = QUESTION.search(str(users[-1].get("content") if users else ""))
        with self._changed:
            self.asked += 1
            self._changed.notify_all()
            self._changed.wait_for(self._may_answer, timeout=120)
        return text(f"Answer to question-{found.group(1)}." if found else "Hello.")

    def _may_answer(self) -> bool:
        return self._open or (self.expected is not None and self.asked >= self.expected)

    def release(self) -> None:
        with self._changed:
            self._open = True
            self._changed.notify_all()


class ConnectionCounter:
    """Samples how many connections the daphne has open, from a connection of its own."""

    def __init__(self) -> None:
        self.highest = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        with psycopg.connect(django_subprocess.test_database_url(), autocommit=True) as db:
            while not self._stop.is_set():
                row = db.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APPLICATION]
                ).fetchone()
                self.highest = max(self.highest, row[0])
                self._stop.wait(0.02)  # a sampling period, not synchronisation

    def __enter__(self) -> ConnectionCounter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@contextlib.contextmanager
def postgres_daphne(tmp_path: Path, model_url: str, **env: str) -> Iterator[tuple[str, Path]]:
    """(base URL, log file) of one daphne on the test's PostgreSQL database, inline executor."""
    require(connection.vendor == "postgresql", "PostgreSQL (DATABASE_URL)")
    port = free_port()
    full_env = child_env(
        DATABASE_URL=f"{django_subprocess.test_database_url()}?application_name={APPLICATION}",
        ONGRID_DATA_DIR=str(tmp_path),
        ONGRID_LLM="openai",
        OPENAI_API_KEY="test-key",
        OPENAI_BASE_URL=model_url,
        ONGRID_MODEL="fake-model",
        ONGRID_LLM_MAX_RETRIES="0",
        ONGRID_LLM_TIMEOUT="150",  # the held answers come once every question is in
        ONGRID_API_USER_RATE="off",
        **env,
    )
    full_env.pop("REDIS_URL", None)  # the inline executor: turns run inside this daphne
    log_path = tmp_path / "daphne.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "ongrid_site.asgi:application",
            ],
            cwd=ROOT,
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until(
                lambda: urllib.request.urlopen(base + "/healthz", timeout=2).status == 200, 60, "daphne"
            )
            yield base, log_path
        finally:
            stop(process)


@dataclass
class Outcome:
    index: int
    created: int
    session: int | None = None
    status: int | None = None
    body: dict = field(default_factory=dict)
    retry_after: str | None = None


async def ask(client: httpx.AsyncClient, index: int) -> Outcome:
    """One API client: create a chat, post one question and wait for the answer."""
    created = await client.post("/api/sessions/", json={"title": f"client {index}"})
    if created.status_code != 201:
        return Outcome(index, created.status_code)
    session = created.json()["id"]
    reply = await client.post(
        f"/api/sessions/{session}/messages/?wait=1", json={"content": f"question-{index}"}
    )
    return Outcome(index, 201, session, reply.status_code, reply.json(), reply.headers.get("Retry-After"))


def client_for(base: str, token: str, clients: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=clients + 5, max_keepalive_connections=clients + 5)
    return httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Token {token}"}, timeout=300, limits=limits
    )


async def ask_all(base: str, token: str, clients: int) -> list[Outcome]:
    async with client_for(base, token, clients) as client:
        return await asyncio.gather(*(ask(client, i) for i in range(clients)))


def assert_all_answered(outcomes: list[Outcome]) -> None:
    wrong = [o for o in outcomes if (o.created, o.status) != (201, 200)]
    assert not wrong, f"{len(wrong)} clients were not answered: {wrong[:5]}"
    for outcome in outcomes:
        assert outcome.body["status"] == "completed", outcome
        assert outcome.body["answer"] == f"Answer to question-{outcome.index}.", outcome


def assert_clean_log(log_path: Path) -> None:
    log = log_path.read_text(errors="replace")
    assert "PoolTimeout" not in log and "crashed" not in log and "Traceback" not in log, log[-3000:]


@pytest.fixture
def roomy_llm(monkeypatch):
    """The fake model with a listen backlog for hundreds of turns connecting at once (the default
    of 5 makes the kernel drop connection attempts, which then retry seconds later)."""
    monkeypatch.setattr(ThreadingHTTPServer, "request_queue_size", 1024)
    with FakeLLM() as server:
        yield server


@pytest.mark.parametrize(
    ("clients", "pool"), [(40, 4), (200, None)], ids=["40-clients-pool-4", "200-clients"]
)
def test_waiting_clients_hold_no_connection(member, roomy_llm, tmp_path, clients, pool):
    fake_llm = roomy_llm
    model = HeldModel(expected=clients)  # nobody is answered until every question is in
    fake_llm.route(model)
    _, token = ApiToken.issue(member)
    env = {"ONGRID_DB_POOL_SIZE": str(pool)} if pool else {}
    with postgres_daphne(tmp_path, fake_llm.base_url, **env) as (base, log_path), ConnectionCounter() as seen:
        outcomes = asyncio.run(ask_all(base, token, clients))
    assert_all_answered(outcomes)
    assert model.asked == clients  # all turns were in flight at once, every waiter parked
    assert 0 < seen.highest <= (pool or 20), f"{seen.highest} connections open at once"
    assert not ChatSession.objects.filter(status=SessionStatus.RUNNING).exists()
    assert_clean_log(log_path)


async def ask_over_the_cap(base: str, token: str, clients: int, cap: int, model: HeldModel) -> list[Outcome]:
    """All clients at once; once the ones over the cap have been answered, let the model answer."""
    async with client_for(base, token, clients) as client:
        pending = {asyncio.create_task(ask(client, i)) for i in range(clients)}
        done: set[asyncio.Task] = set()
        async with asyncio.timeout(120):
            while len(done) < clients - cap:
                finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                done |= finished
        model.release()
        if pending:
            done |= (await asyncio.wait(pending))[0]
        return sorted((task.result() for task in done), key=lambda o: o.index)


def test_over_the_cap_clients_get_503_and_nothing_is_stored(member, fake_llm, tmp_path):
    model = HeldModel()
    fake_llm.route(model)
    _, token = ApiToken.issue(member)
    with postgres_daphne(tmp_path, fake_llm.base_url, ONGRID_TURNS_PER_PROCESS="5") as (base, log_path):
        outcomes = asyncio.run(ask_over_the_cap(base, token, 10, 5, model))
    assert all(o.created == 201 for o in outcomes)  # creating a chat is never refused
    refused = [o for o in outcomes if o.status == 503]
    answered = [o for o in outcomes if o.status == 200]
    assert len(refused) == 5 and len(answered) == 5, [(o.index, o.status) for o in outcomes]
    for outcome in refused:
        assert outcome.retry_after == "5"
        assert "busy" in outcome.body["detail"] and outcome.body["error"]
        chat = ChatSession.objects.get(pk=outcome.session)
        assert chat.status == SessionStatus.IDLE and not chat.error
        assert not ChatMessage.objects.filter(session=chat).exists()  # the message was not stored
    for outcome in answered:
        assert outcome.body["answer"] == f"Answer to question-{outcome.index}."
    assert model.asked == 5
    assert_clean_log(log_path)


def test_an_exhausted_pool_answers_503_not_500(member, monkeypatch):
    """When no connection is free in time the API says "busy, retry", it does not crash."""
    from django.db import OperationalError
    from psycopg_pool import PoolTimeout
    from rest_framework.test import APIClient

    from chat_app import services

    def exhausted(*args, **kwargs):
        try:
            raise PoolTimeout("couldn't get a connection after 10.00 sec")
        except PoolTimeout as exc:
            raise OperationalError(str(exc)) from exc  # how Django hands it on

    monkeypatch.setattr(services, "start_chat", exhausted)
    client = APIClient()
    client.force_authenticate(member)
    answer = client.post("/api/sessions/", {"title": "t"}, format="json")
    assert answer.status_code == 503
    assert answer["Retry-After"] == "2"
    assert "database is busy" in answer.json()["detail"]
    assert not ChatSession.objects.filter(user=member).exists()


def _watched_waiter(monkeypatch, session_id: int):
    """`await_turn_end` of `session_id`, and an event set once it has joined the group and looked
    at the row for the first time (so the test acts only after that)."""
    from agents_app.runtime import turns

    looked = asyncio.Event()
    look = turns._arunning

    async def first_look(pk: int) -> bool:
        running = await look(pk)
        looked.set()
        return running

    monkeypatch.setattr(turns, "_arunning", first_look)
    return turns.await_turn_end(session_id, within=30), looked


def test_a_celery_wait_ends_on_the_pushed_turn_ended(member, monkeypatch):
    """The waiter wakes on `turn.ended` from the channel layer, not on its next look at the row."""
    from agents_app.runtime import events, turns
    from agents_app.runtime.publishing import Publisher
    from chat_app import services

    monkeypatch.setattr(turns, "RECHECK_SECONDS", 120.0)  # a look at the row would come too late
    chat = services.start_chat(member, channel="api")
    services.begin_turn(chat.pk, "hello")  # the row says running, and keeps saying it

    async def scenario() -> None:
        waiter, looked = _watched_waiter(monkeypatch, chat.pk)
        waiting = asyncio.create_task(waiter)
        async with asyncio.timeout(20):
            await looked.wait()
            await Publisher(chat.pk).publish(events.TurnEnded(chat.pk, status="completed"))
            await waiting

    asyncio.run(scenario())
    assert ChatSession.objects.get(pk=chat.pk).status == SessionStatus.RUNNING  # ended by the push


def test_a_celery_wait_sees_an_end_nobody_announced(member, monkeypatch):
    """A turn closed without `turn.ended` (the reaper, a lost message) is seen at the next look."""
    from agents_app.runtime import turns
    from chat_app import services

    monkeypatch.setattr(turns, "RECHECK_SECONDS", 0.1)
    chat = services.start_chat(member, channel="api")
    services.begin_turn(chat.pk, "hello")

    async def scenario() -> None:
        waiter, looked = _watched_waiter(monkeypatch, chat.pk)
        waiting = asyncio.create_task(waiter)
        async with asyncio.timeout(20):
            await looked.wait()
            await asyncio.to_thread(
                lambda: ChatSession.objects.filter(pk=chat.pk).update(status=SessionStatus.IDLE)
            )
            await waiting

    asyncio.run(scenario())


def test_the_pool_gives_up_on_a_connection_after_its_timeout(tmp_path):
    """A call waits ONGRID_DB_POOL_TIMEOUT (10 s by default) for a pooled connection, not 30 s."""
    from ongrid_site.config import ConfigError, _database

    url = "postgres://ongrid@db:5432/ongrid"
    assert _database({"DATABASE_URL": url}, tmp_path)["OPTIONS"]["pool"]["timeout"] == 10.0
    pool = _database({"DATABASE_URL": url, "ONGRID_DB_POOL_TIMEOUT": "2.5"}, tmp_path)["OPTIONS"]["pool"]
    assert pool == {"min_size": 2, "max_size": 20, "timeout": 2.5}
    with pytest.raises(ConfigError, match="ONGRID_DB_POOL_TIMEOUT"):
        _database({"DATABASE_URL": url, "ONGRID_DB_POOL_TIMEOUT": "soon"}, tmp_path)
