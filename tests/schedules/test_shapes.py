"""Schedules fire on their own in both deployment shapes, with real processes: the embedded loop
inside a real daphne (no Redis), and Celery beat (django-celery-beat's DatabaseScheduler) with a
worker on Redis. Each fires a due schedule once; waits poll the database with a deadline."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time

import pytest
from django.conf import settings
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from fakes.openai_server import call, text, tool_calls
from schedules_app.models import Schedule, ScheduleRun
from tests.support.django_subprocess import ROOT, child_env
from tests.support.procs import stop, wait_until
from tests.support.required import require
from tests.support.schedules import make_schedule

pytestmark = pytest.mark.django_db(transaction=True)
DEADLINE = 90.0


def script_ok(agents_llm, summary: str) -> None:
    agents_llm.add(
        "specialist-disk",
        tool_calls(call("submit_finding", {"status": "ok", "summary": summary, "findings": []})),
        text("Checked."),
    )


def make_due(org, name: str) -> Schedule:
    """An hourly schedule whose due time passed a minute ago (it is due at the next tick)."""
    schedule = make_schedule(org, name, now=timezone.now())
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=timezone.now() - dt.timedelta(minutes=1))
    return schedule


def finished_run(schedule: Schedule) -> ScheduleRun | None:
    return ScheduleRun.objects.filter(schedule=schedule, state=ScheduleRun.State.FINISHED).first()


@pytest.fixture
def embedded_daphne(request, monkeypatch):
    """The browser tests' daphne (embedded shape), its scheduler ticking every 0.2 s."""
    monkeypatch.setenv("ONGRID_SCHEDULER_INTERVAL", "0.2")
    return request.getfixturevalue("daphne_server")


def test_the_embedded_loop_in_a_real_daphne_fires_a_due_schedule_once(org, agents_llm, embedded_daphne):
    script_ok(agents_llm, "Disks fine (first).")
    first = make_due(org, "first")  # created after daphne's first tick: a later tick must find it

    run = wait_until(lambda: finished_run(first), DEADLINE, "the embedded scheduler to run the due schedule")

    assert (run.trigger, run.finding, run.summary) == ("schedule", "ok", "Disks fine (first).")
    # The loop keeps ticking: a schedule made due now fires too, and the first one did not again.
    script_ok(agents_llm, "Disks fine (second).")
    second = make_due(org, "second")
    wait_until(lambda: finished_run(second), DEADLINE, "a later tick to run the second schedule")
    assert ScheduleRun.objects.filter(schedule=first).count() == 1
    first.refresh_from_db()
    assert first.next_run_at > timezone.now() and first.last_status == "ok"


@pytest.fixture
def celery_beat_and_worker(agents_llm, fake_llm, tmp_path):
    """A real `celery beat` (DatabaseScheduler on the test database) and a worker, on Redis."""
    require(bool(settings.CONFIG.redis_url), "Redis (REDIS_URL) for celery beat and a worker")
    # Beat syncs CELERY_BEAT_SCHEDULE into this row at start-up but keeps its last run: one in the
    # past makes the scheduler's tick due at once instead of 30 s after start-up.
    every = IntervalSchedule.objects.create(every=30, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.update_or_create(
        name="fire-due-schedules",
        defaults={
            "task": "schedules_app.tick",
            "interval": every,
            "last_run_at": timezone.now() - dt.timedelta(hours=1),
        },
    )
    env = child_env(
        REDIS_URL=settings.CONFIG.redis_url,
        ONGRID_LLM="openai",
        OPENAI_API_KEY="test-key",
        OPENAI_BASE_URL=fake_llm.base_url,
        ONGRID_MODEL="fake-model",
        ONGRID_LLM_MAX_RETRIES="0",
        ONGRID_DATA_DIR=str(tmp_path),
    )
    celery = [sys.executable, "-m", "celery", "-A", "ongrid_site"]
    worker_args = ["worker", "--pool=solo", "-l", "warning", "--without-gossip", "--without-mingle"]
    processes, logs = [], []
    try:
        for name, args in (
            ("worker", [*worker_args, "-n", f"sched-{time.monotonic_ns()}@%h"]),
            ("beat", ["beat", "-l", "info", "--schedule", str(tmp_path / "beat-unused")]),
        ):
            log = (tmp_path / f"{name}.log").open("wb")
            logs.append(log)
            processes.append(
                subprocess.Popen(
                    celery + args,
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        yield tmp_path
    finally:
        for process in processes:
            stop(process)
        for log in logs:
            log.close()


def test_celery_beat_and_a_worker_on_redis_fire_a_due_schedule_once(org, agents_llm, celery_beat_and_worker):
    script_ok(agents_llm, "Disks fine (beat).")
    schedule = make_due(org, "beat check")

    def done():
        for name in ("worker", "beat"):
            log = (celery_beat_and_worker / f"{name}.log").read_text(errors="replace")
            assert "Traceback" not in log, f"celery {name} failed:\n{log[-3000:]}"
        return finished_run(schedule)

    run = wait_until(done, DEADLINE, "beat's tick and the worker to run the due schedule")

    assert (run.trigger, run.finding, run.summary) == ("schedule", "ok", "Disks fine (beat).")
    assert ScheduleRun.objects.filter(schedule=schedule).count() == 1
    schedule.refresh_from_db()
    assert schedule.next_run_at > timezone.now() and schedule.last_status == "ok"
    beat_log = (celery_beat_and_worker / "beat.log").read_text(errors="replace")
    assert "Sending due task fire-due-schedules (schedules_app.tick)" in beat_log  # beat fired it
