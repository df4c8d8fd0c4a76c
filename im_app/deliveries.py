"""Retried deliveries are handled once: the only writer of `SeenDelivery`.

Platforms redeliver an event they think was lost (Slack after 3 s, Telegram until a 200, Feishu
on timeouts). The unique constraint makes "first time?" an atomic question for every process;
rows older than `KEEP` are pruned as new ones arrive, so the store stays bounded.
"""

from __future__ import annotations

from datetime import timedelta

from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction
from django.utils import timezone

from im_app.models import IMApp, SeenDelivery

KEEP = timedelta(days=1)


def first_time(app: IMApp, delivery_id: str) -> bool:
    """True the first time this app sees `delivery_id`, False for every replay."""
    try:
        with transaction.atomic():
            SeenDelivery.objects.create(app=app, delivery_id=delivery_id[:200])
    except IntegrityError:
        return False
    SeenDelivery.objects.filter(seen_at__lt=timezone.now() - KEEP).delete()
    return True


afirst_time = sync_to_async(first_time)
