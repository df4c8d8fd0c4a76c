"""Celery tasks of the scale-out shape: one investigation per task, and the write-back drain."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from celery import shared_task

from agents_app.api import run_on_worker_loop
from incidents_app.runner import run_investigation


@shared_task(name="incidents_app.run_investigation", acks_late=False, bind=True)
def run_investigation_task(self, investigation_id: int) -> None:
    """Not retried: an investigation has a session and audit rows; the reaper handles crashes.

    It runs on the worker process's own loop, beside the turns, so the channel layer it publishes
    on stays open for the next task (closing it here closed it on the wrong loop)."""
    run_on_worker_loop(self, run_investigation(investigation_id))


@shared_task(name="incidents_app.drain_notifications", acks_late=False)
def drain_notifications_task() -> int:
    """The scale-out shape's drainer of alert notifications (beat, and one per queued batch)."""
    from incidents_app.alerting.drain import drain_once

    return drain_once()


@shared_task(name="incidents_app.drain_writebacks")
def drain_writebacks_task() -> int:
    """Write the due findings and mirrored states back to the alert sources (a beat task, and kicked
    when a row is queued); rows are claimed, so overlapping runs write each once."""
    from incidents_app.writeback_outbox import drain_once

    return async_to_sync(drain_once)()
