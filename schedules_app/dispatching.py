"""Handing claimed runs to an executor, the same split as chat turns (agents_app/runtime/executors.py):
a Celery worker in the scale-out shape, the server's own event loop in the embedded one."""

from __future__ import annotations

import datetime as dt

from django.conf import settings

from agents_app.api import run_in_background
from schedules_app import scheduler
from schedules_app.models import Schedule, ScheduleRun
from schedules_app.runner import aexecute_run
from schedules_app.tasks import execute_run_task


def dispatch(run_id: int) -> None:
    if settings.ONGRID_EXECUTOR == "celery":
        execute_run_task.delay(run_id)
    else:
        run_in_background(aexecute_run(run_id))


def run_now(schedule: Schedule, now: dt.datetime | None = None) -> ScheduleRun:
    """ "Run now": a manual run, executed at once wherever runs execute."""
    run = scheduler.create_manual_run(schedule, now)
    dispatch(run.pk)
    return run


def fire_due(now: dt.datetime | None = None) -> list[int]:
    """One scheduler tick that also starts what it claimed (the embedded loop's step)."""
    won = scheduler.tick(now)
    for run_id in won:
        dispatch(run_id)
    return won
