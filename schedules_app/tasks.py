"""Celery tasks of the scale-out shape. `schedules_app.tick` is a periodic task of Celery beat
(django-celery-beat's DatabaseScheduler, see settings.CELERY_BEAT_SCHEDULE); any number of beats
or workers may run it, the claim in `scheduler.tick` keeps each due time to one run."""

from __future__ import annotations

from celery import shared_task
from django.db import close_old_connections

from agents_app.api import run_on_worker_loop
from schedules_app import runner, scheduler


def _fresh_connection(task) -> None:
    """On a worker the database may have restarted since the last task; an eager task runs inside
    its caller's request or transaction, whose connection must not be touched."""
    if not task.request.is_eager:
        close_old_connections()


@shared_task(name="schedules_app.tick", bind=True)
def tick_task(self) -> list[int]:
    """Claim the due runs and queue each for a worker."""
    _fresh_connection(self)
    won = scheduler.tick()
    for run_id in won:
        execute_run_task.delay(run_id)
    return won


@shared_task(name="schedules_app.execute_run", acks_late=False, bind=True)
def execute_run_task(self, run_id: int) -> None:
    """Run one claimed schedule run. Not retried: an inspection has side effects (incidents).

    The agent runs on the worker process's own loop, beside the turns (docs/runtime.md)."""
    _fresh_connection(self)
    run_on_worker_loop(self, runner.aexecute_run(run_id))
