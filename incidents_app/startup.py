"""What a starting process does for investigations (docs/investigations.md, "Restart"): close
what a dead predecessor left running, backfill firing incidents that were never investigated, and
start whatever the queue holds."""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async
from django.conf import settings

from chat_app.services import reap_orphans
from incidents_app import investigations, runner
from incidents_app.alerting import drain
from incidents_app.models import Investigation, NotificationDelivery

log = logging.getLogger(__name__)


def recover(backfill_limit: int = investigations.BACKFILL_LIMIT) -> list[int]:
    """Reap, backfill (bounded), then launch the queue of every organization; returns the
    backfilled investigation ids."""
    reap_orphans()
    investigations.fail_unstarted("The process that claimed this investigation is gone.")
    backfilled = investigations.backfill(backfill_limit) if settings.CONFIG.auto_investigate else []
    orgs = set(
        Investigation.objects.filter(status=Investigation.Status.QUEUED).values_list(
            "organization_id", flat=True
        )
    )
    for org_id in sorted(orgs):
        runner.start_queued(org_id)
    if NotificationDelivery.objects.filter(status=NotificationDelivery.Status.PENDING).exists():
        drain.kick()  # alert notifications queued before the restart (docs/alerts.md)
    if backfilled:
        log.info("backfilled %d investigation(s) at startup", len(backfilled))
    return backfilled


async def recover_investigations() -> None:
    """`recover` for the ASGI server's first request; never fails the server."""
    try:
        await sync_to_async(recover)()
    except Exception:  # noqa: BLE001
        log.exception("investigation recovery at startup failed")
