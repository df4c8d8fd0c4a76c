"""Celery tasks of the scale-out shape."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready

from agents_app.runtime.turn_host import turn_host
from chat_app.services import reap_orphans


@shared_task(name="agents_app.run_turn", acks_late=True, reject_on_worker_lost=True)
def run_turn_task(session_id: int, queued_by: str | None = None) -> bool:
    """Hand one turn to this worker process's event loop; return once the turn owns its row.

    Acknowledged late: a worker that dies before the hand-over leaves the message for another
    worker, and the claim (a compare-and-set on the row's owner) makes a redelivered message a
    no-op once some process has taken the turn. Never retried otherwise: a turn has side effects.
    """
    return turn_host().hand_over(session_id, queued_by)


@shared_task(name="agents_app.reap_orphans")
def reap_orphans_task() -> int:
    return reap_orphans()


@worker_ready.connect
def reap_when_a_worker_starts(**kwargs) -> None:
    """A worker that starts after a crash closes the rows its predecessor left running."""
    reap_orphans()
