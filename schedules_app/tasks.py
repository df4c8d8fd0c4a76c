"""Celery tasks of the scale-out shape. `schedules_app.tick` is a periodic task of Celery beat
(django-celery-beat's DatabaseScheduler, see settings.CELERY_BEAT_SCHEDULE); any number of beats
or workers may run it, the claim in `scheduler.tick` keeps each due time to one run."""

from __future__ import annotations

from celery import shared_task
from django.db import close_old_connections

from schedules_app import runner, scheduler


@shared_task(name="schedules_app.tick")
def tick_task() -> list[int]:
    """Claim the due runs and queue each for a worker."""
    close_old_connections()
    won = scheduler.tick()
    for run_id in won:
        execute_run_task.delay(run_id)
    return won


@shared_task(name="schedules_app.execute_run", acks_late=False)
def execute_run_task(run_id: int) -> None:
    """Run one claimed schedule run. Not retried: an inspection has side effects (incidents)."""
    close_old_connections()
    runner.execute_run(run_id)
