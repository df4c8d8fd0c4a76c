"""Celery tasks of im_app. `im_app.redeliver` is a periodic task of Celery beat in the scale-out
shape (settings.CELERY_BEAT_SCHEDULE); any number may run at once, each outbox row is claimed
before it is posted (`im_app.outbox.claim`)."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from celery import shared_task
from django.db import close_old_connections

from im_app import redelivery


@shared_task(name="im_app.redeliver", bind=True)
def redeliver_task(self) -> int:
    """Post the outbox rows that are due; returns how many were delivered."""
    if not self.request.is_eager:
        close_old_connections()  # the database may have restarted since the last task
    return async_to_sync(redelivery.drain_once)()
