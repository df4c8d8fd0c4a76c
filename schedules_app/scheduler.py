"""Deciding that a schedule is due, claiming the run exactly once, and handing it to an executor.

`tick(now)` is the whole scheduler: both shapes call it (the embedded loop inside the server
process, the Celery beat entry in the scale-out shape), and any number of processes may call it
at once. A due time is claimed by a conditional UPDATE of the schedule's `next_run_at` (only the
process whose UPDATE still sees the old value moves it on) and the run row's unique
(schedule, due_at) pair; whoever loses either simply skips. `ScheduleRun` rows are written only
here and in `runner`; `dispatching` hands claimed runs to an executor.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import IntegrityError, transaction
from django.utils import timezone

from schedules_app import timing
from schedules_app.models import Schedule, ScheduleRun

log = logging.getLogger(__name__)


def compute_next(schedule: Schedule, after: dt.datetime) -> dt.datetime | None:
    """The next firing after `after`, or None for a disabled schedule."""
    if not schedule.enabled:
        return None
    return timing.next_fire(schedule.cron, schedule.interval_minutes, schedule.timezone, after)


def reschedule(schedule: Schedule, now: dt.datetime | None = None) -> None:
    """Recompute `next_run_at` after the timing or the switch changed (the admin calls this)."""
    schedule.next_run_at = compute_next(schedule, now or timezone.now())
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=schedule.next_run_at)


def tick(now: dt.datetime | None = None) -> list[int]:
    """Claim every due run; return the ids of the runs this caller won (to be executed by it).

    A schedule whose due time passed while no scheduler ran fires once, late, and then goes on
    from `now` (no burst of catch-up runs).
    """
    now = now or timezone.now()
    won = []
    due = Schedule.objects.filter(enabled=True, next_run_at__lte=now).order_by("next_run_at")
    for schedule in list(due):
        run_id = _claim(schedule, now)
        if run_id is not None:
            won.append(run_id)
    return won


def _claim(schedule: Schedule, now: dt.datetime) -> int | None:
    due_at = schedule.next_run_at
    following = compute_next(schedule, now)
    try:
        with transaction.atomic():
            moved = Schedule.objects.filter(pk=schedule.pk, enabled=True, next_run_at=due_at).update(
                next_run_at=following, last_run_at=now
            )
            if moved != 1:
                return None  # another scheduler claimed this due time first
            run = ScheduleRun.objects.create(
                organization_id=schedule.organization_id,
                schedule=schedule,
                due_at=due_at,
                trigger=ScheduleRun.Trigger.SCHEDULE,
            )
    except IntegrityError:
        return None  # the run row already exists: the second guard
    log.info("schedule %s claimed its run due %s (run %s)", schedule.pk, due_at, run.pk)
    return run.pk


def create_manual_run(schedule: Schedule, now: dt.datetime | None = None) -> ScheduleRun:
    """The admin's "Run now": a run outside the timetable (next_run_at is unchanged)."""
    now = now or timezone.now()
    run = ScheduleRun.objects.create(
        organization_id=schedule.organization_id,
        schedule=schedule,
        due_at=now,
        trigger=ScheduleRun.Trigger.MANUAL,
    )
    Schedule.objects.filter(pk=schedule.pk).update(last_run_at=now)
    return run
