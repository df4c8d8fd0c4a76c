"""Celery tasks of the audit app."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from audit_app import retention


@shared_task(name="audit_app.purge_audit")
def purge_audit_task() -> str:
    """Nightly retention purge; does nothing while ONGRID_AUDIT_RETENTION_DAYS is 0 (keep forever)."""
    days = settings.CONFIG.audit_retention_days
    if days < 1:
        return "retention disabled"
    return str(retention.purge(days))
