"""Every documented way to run a Celery worker works (docs/runtime.md, "Running it"): prefork
with several children, threads and solo. Turns, a dispatch, Stop, an investigation and a schedule
run all end as they should, with nothing in the worker's log but what an operator expects; and a
worker started before `migrate` says so in one line and stays up.

Real worker processes on PostgreSQL (its connection pool is what a fork can break) and Redis."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import uuid

import psycopg
import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.utils import timezone

from agents_app.runtime.core import Runtime
from agents_app.runtime.turns import last_answer, start_turn, wait_for_turn
from chat_app import services
from chat_app.models import ChatSession, SessionStatus
from fakes.openai_server import call, held, text, tool_calls
from incidents_app.models import Investigation
from ops_app.core.async_db import pooled_database
from ops_app.models import Device, Incident
from schedules_app import scheduler
from schedules_app.models import ScheduleRun
from schedules_app.tasks import execute_run_task
from tests.support.celery_worker import HeldModel, celery_worker_process, worker_log
from tests.support.django_subprocess import test_database_url as database_url_of_this_test
from tests.support.investigations import INVESTIGATOR, answer, read_incident, report, submit, wait_finished
from tests.support.procs import wait_until
from tests.support.required import require
from tests.support.schedules import make_schedule

# What must never appear in a worker's log: the symptoms of a pool, loop or connection that
# crossed a fork or a loop.
BAD_LOG_WORDS = ("Traceback", "PoolClosed", "different loop", "ERROR")
TURN_TIMEOUT = 60.0
TURNS = 8  # more than the two children, from as many sessions, all at once


def _worker(fake_llm, tmp_path, pool: str, **options):
    require(pooled_database(), "PostgreSQL (DATABASE_URL) with its connection pool")
    return celery_worker_process(fake_llm.base_url, str(tmp_path), pool=pool, **options)


@pytest.fixture
def prefork(settings, fake_llm, agents_llm, tmp_path):
    settings.ONGRID_EXECUTOR = "celery"
    with _worker(fake_llm, tmp_path, "prefork", concurrency=2) as proc:
        yield proc


def _clean(log: str) -> None:
    for word in BAD_LOG_WORDS:
        assert word not in log, f"{word!r} in the worker's log:\n{log[-4000:]}"


def _turn(member, question: str):
    chat = services.start_chat(member)
    _, waitable = start_turn(chat, question)
    return chat, waitable


def _answer_of(chat, waitable) -> str:
    ended = wait_for_turn(chat.pk, waitable, timeout=TURN_TIMEOUT)
    assert ended.status == SessionStatus.IDLE, ended.error
    assert ended.error == ""
    return last_answer(chat.pk).content


def _idle(proc) -> None:
    """Wait until the worker runs no task: a task's own ending (where a foreign loop or a closed
    pool used to raise) is over before the log is read."""
    from ongrid_site.celery import app

    def nothing_active() -> bool:
        replies = app.control.inspect(destination=[proc.celery_name], timeout=1.0).active() or {}
        return bool(replies) and not any(replies.values())

    wait_until(nothing_active, TURN_TIMEOUT, "the worker to finish its tasks")


@pytest.mark.django_db(transaction=True)
def test_turns_of_several_sessions_run_at_once_on_prefork_children(member, agents_llm, prefork):
    model = HeldModel(expected=TURNS, reply=text("all good"))
    agents_llm.add("default", *[model] * TURNS)
    turns = [_turn(member, f"question {n}") for n in range(TURNS)]

    assert model.wait_all_in(TURN_TIMEOUT), f"only {model.open} of {TURNS} turns reached the model at once"
    owners = set(ChatSession.objects.filter(pk__in=[c.pk for c, _ in turns]).values_list("owner", flat=True))
    model.release()

    assert [_answer_of(chat, waitable) for chat, waitable in turns] == ["all good"] * TURNS
    assert model.peak == TURNS
    assert not any(owner.endswith(f":{prefork.pid}") for owner in owners)  # run by the children
    _idle(prefork)
    _clean(worker_log(prefork))


@pytest.mark.django_db(transaction=True)
def test_a_dispatching_turn_completes_in_a_prefork_child(member, agents_llm, prefork):
    agents_llm.add(
        "default",
        tool_calls(
            call(
                "AgentTool",
                {
                    "description": "du",
                    "subagent_type": "specialist-disk",
                    "prompt": "On web-01 what fills /var?",
                },
            )
        ),
        text("/var/log holds 38G."),
    )
    agents_llm.add("specialist-disk", text("/var/log 38G"))

    assert _answer_of(*_turn(member, "what fills /var on web-01?")) == "/var/log holds 38G."
    worker = ChatSession.objects.get(parent_session__isnull=False)
    assert (worker.status, worker.result) == (SessionStatus.COMPLETED, "/var/log 38G")
    _clean(worker_log(prefork))


@pytest.mark.django_db(transaction=True)
def test_stop_ends_a_turn_running_in_a_prefork_child_within_seconds(member, fake_llm, agents_llm, prefork):
    agents_llm.add("default", held(60))
    chat, waitable = _turn(member, "why is checkout slow?")
    wait_until(lambda: fake_llm.chat_requests, TURN_TIMEOUT, "the turn's model call")

    stopped_at = time.monotonic()
    async_to_sync(Runtime().stop_session)(chat.pk, by="alice")
    ended = wait_for_turn(chat.pk, waitable, timeout=TURN_TIMEOUT)

    assert time.monotonic() - stopped_at < 3.0
    assert (ended.status, ended.error) == (SessionStatus.IDLE, "stopped by alice")
    assert last_answer(chat.pk).content.startswith("Stopped by alice")
    assert len(fake_llm.hangups) == 1  # the child closed its request to the model
    _clean(worker_log(prefork))


@pytest.mark.django_db(transaction=True)
def test_a_killed_prefork_child_is_reaped_and_its_replacement_runs_the_next_turn(
    settings, member, fake_llm, agents_llm, tmp_path
):
    settings.ONGRID_EXECUTOR = "celery"
    agents_llm.add("default", held(60), text("answered by the new child"))
    with _worker(fake_llm, tmp_path, "prefork", concurrency=1) as proc:
        chat, _ = _turn(member, "first")
        wait_until(lambda: fake_llm.chat_requests, TURN_TIMEOUT, "the first turn's model call")
        owner = ChatSession.objects.get(pk=chat.pk).owner
        child = int(owner.rpartition(":")[2])
        assert child != proc.pid
        os.kill(child, signal.SIGKILL)  # the child dies with the turn in flight
        wait_until(lambda: not _alive(child), TURN_TIMEOUT, "the child to die")

        assert services.reap_orphans() == 1
        reaped = ChatSession.objects.get(pk=chat.pk)
        assert reaped.status == SessionStatus.IDLE and owner in reaped.error
        # The parent forks a new child, which opens its own pool and loop.
        assert _answer_of(*_restart(chat, "second")) == "answered by the new child"
        assert ChatSession.objects.get(pk=chat.pk).owner == ""
        log = worker_log(proc)
    assert "PoolClosed" not in log and "different loop" not in log


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _restart(chat, question: str):
    _, waitable = start_turn(chat, question)
    return chat, waitable


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("pool", ["prefork", "threads", "solo"])
def test_an_investigation_a_schedule_run_and_a_turn_share_the_worker_loop(
    pool, settings, client, org, member, fake_llm, agents_llm, tmp_path
):
    settings.ONGRID_EXECUTOR = "celery"
    db_host = Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    incident = Incident.objects.create(
        organization=org, title="Checkout 5xx", severity="warning", started_at=timezone.now()
    )
    agents_llm.add(
        INVESTIGATOR, read_incident(), submit(report({"kind": "device", "name": "db-01"})), answer()
    )
    finding = {"status": "ok", "summary": "disks fine", "findings": []}
    agents_llm.add("specialist-disk", tool_calls(call("submit_finding", finding)), text("Reported."))
    agents_llm.add("default", text("before the investigation"), text("after the investigation"))
    client.force_login(member)

    with _worker(fake_llm, tmp_path, pool, concurrency=2 if pool != "solo" else None) as proc:
        # A turn first: the channel layer then has Redis connections on the worker's loop, which
        # an investigation on a loop of its own used to close from the wrong loop.
        first_answer = _answer_of(*_turn(member, "how are things?"))
        started = client.post(f"/api/incidents/{incident.pk}/investigate/")
        assert started.status_code == 202, started.content
        investigation = wait_finished(started.json()["id"], timeout=TURN_TIMEOUT)
        run = scheduler.create_manual_run(make_schedule(org))
        execute_run_task.delay(run.pk)
        run = wait_until(
            lambda: ScheduleRun.objects.filter(pk=run.pk, state=ScheduleRun.State.FINISHED).first(),
            TURN_TIMEOUT,
            "the schedule run",
        )
        turn_answer = _answer_of(*_turn(member, "and now?"))
        _idle(proc)
        assert proc.poll() is None
    log = worker_log(proc)  # its warm shutdown included

    assert investigation.status == Investigation.Status.DONE, investigation.error
    assert investigation.report["patient_zero"]["device_id"] == db_host.pk
    assert run.finding == "ok"
    assert (first_answer, turn_answer) == ("before the investigation", "after the investigation")
    _clean(log)


@contextlib.contextmanager
def _empty_database():
    """A fresh database with no tables, on the test's PostgreSQL server."""
    base = database_url_of_this_test()
    name = f"ongrid_unmigrated_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


NOT_MIGRATED = "database not migrated yet: run manage.py migrate; the reaper will run from beat"


@pytest.mark.django_db(transaction=True)
def test_a_worker_started_before_migrate_says_so_in_one_line_and_stays_up(fake_llm, tmp_path):
    require(connection.vendor == "postgresql", "PostgreSQL (DATABASE_URL)")
    with _empty_database() as url:
        with _worker(fake_llm, tmp_path, "prefork", concurrency=1, DATABASE_URL=url) as proc:
            wait_until(lambda: NOT_MIGRATED in worker_log(proc), TURN_TIMEOUT, "the not-migrated line")
            from ongrid_site.celery import app

            assert app.control.ping(destination=[proc.celery_name], timeout=2.0)
            assert proc.poll() is None
            log = worker_log(proc)
    assert log.count(NOT_MIGRATED) == 1
    _clean(log)


@pytest.mark.parametrize(
    ("pool", "refused"),
    [
        ("celery.concurrency.gevent:TaskPool", True),
        ("eventlet", True),
        ("celery.concurrency.prefork:TaskPool", False),
        ("threads", False),
        ("solo", False),
    ],
)
def test_only_gevent_and_eventlet_are_refused_and_the_refusal_names_the_pools_that_work(pool, refused):
    from ongrid_site.celery import refusal

    line = refusal(pool)
    assert (line is not None) == refused
    if refused:
        assert "\n" not in line
        assert all(f"--pool={name}" in line for name in ("prefork", "threads", "solo"))


@pytest.mark.django_db
def test_a_task_runs_its_coroutine_on_the_hosts_loop_and_gets_its_result_or_its_error():
    from agents_app.runtime.turn_host import TurnHost

    host = TurnHost(capacity=2)

    async def which_loop():
        return asyncio.get_running_loop()

    async def fails():
        raise ValueError("the investigation's own error")

    async def nested():
        inner = which_loop()
        with pytest.raises(RuntimeError, match="own loop"):
            host.run(inner)
        return "refused"

    assert host.run(which_loop()) is host.loop()
    assert host.run(which_loop()) is host.loop()  # the same loop for every task, not one per task
    with pytest.raises(ValueError, match="own error"):
        host.run(fails())
    assert host.run(nested()) == "refused"  # waiting on itself would deadlock: refused at once
    host.loop().call_soon_threadsafe(host.loop().stop)
