"""Retention: delete audit data older than N days, in batches, never touching open sessions.

What goes:
* audit rows (AuditLog, LLMCall) that started before the cutoff, unless their session is still
  pending or running;
* whole session trees (coordinator, workers, reviewers and their messages) in which nothing
  happened since the cutoff: every session created before it, no message after it, and none of
  them pending or running. An idle coordinator counts as finished; it would be reopened by a
  new message, and a tree with a recent message is kept whole.

Each batch is its own short transaction, so a large purge never holds long locks, and a purge that
is interrupted simply resumes on the next run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from audit_app.immutability import purging
from audit_app.models import AuditLog, LLMCall
from chat_app.models import ChatMessage, ChatSession, SessionStatus

logger = logging.getLogger(__name__)

OPEN_STATUSES = (SessionStatus.PENDING, SessionStatus.RUNNING)
DEFAULT_BATCH = 1000


@dataclass
class PurgeReport:
    cutoff: datetime
    audit_logs: int = 0
    llm_calls: int = 0
    sessions: int = 0

    def __str__(self) -> str:
        return (
            f"purged audit data before {self.cutoff:%Y-%m-%d %H:%M:%S %Z}: {self.audit_logs} tool calls, "
            f"{self.llm_calls} LLM calls, {self.sessions} session trees"
        )


def expired_calls(model, cutoff: datetime):
    """Rows of `model` (AuditLog or LLMCall) older than the cutoff and not of an open session."""
    return model.objects.filter(started_at__lt=cutoff).exclude(session__status__in=OPEN_STATUSES)


def expired_trees(cutoff: datetime):
    """Coordinator sessions whose whole tree has been quiet since before the cutoff."""
    # Uncorrelated: computed once per batch (the correlated form scanned the table per row on SQLite).
    busy = ChatSession.objects.filter(root_session__isnull=False).filter(
        Q(status__in=OPEN_STATUSES) | Q(created_at__gte=cutoff)
    )
    recent = ChatMessage.objects.filter(created_at__gte=cutoff)
    return ChatSession.objects.filter(
        root_session__isnull=True, created_at__lt=cutoff, parent_session__isnull=True
    ).exclude(
        Q(status__in=OPEN_STATUSES)
        | Q(pk__in=busy.values("root_session_id"))
        | Q(Exists(recent.filter(session=OuterRef("pk"))))
        | Q(Exists(recent.filter(session__root_session=OuterRef("pk"))))
    )


def _delete_in_batches(rows, batch_size: int) -> int:
    deleted = 0
    while True:
        ids = list(rows.order_by("pk").values_list("pk", flat=True)[:batch_size])
        if not ids:
            return deleted
        with transaction.atomic(), purging():
            rows.model.objects.filter(pk__in=ids).delete()
        deleted += len(ids)


def purge(days: int, batch_size: int = DEFAULT_BATCH, now: datetime | None = None) -> PurgeReport:
    """Delete audit data older than `days` days. `days` must be positive: 0 means "keep"."""
    if days < 1:
        raise ValueError("retention must be at least 1 day")
    report = PurgeReport(cutoff=(now or timezone.now()) - timedelta(days=days))
    report.audit_logs = _delete_in_batches(expired_calls(AuditLog, report.cutoff), batch_size)
    report.llm_calls = _delete_in_batches(expired_calls(LLMCall, report.cutoff), batch_size)
    report.sessions = _delete_in_batches(expired_trees(report.cutoff), batch_size)
    logger.info("%s", report)
    return report
