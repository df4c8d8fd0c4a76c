"""Delivery of the write-back rows (`SourceWriteback`, queued by `incidents_app.writeback`) to the
paging tools' REST APIs, with retries: the only writer of a row's outcome.

Like the IM outbox (`im_app.outbox`), every state change is one conditional UPDATE and a drainer
works on a row only after winning its claim, so two drainers (two server processes, the beat task
and a kick) never write the same note twice. A failure that may pass (HTTP 429 or 5xx, a network
error) is tried again after a doubling pause until GIVE_UP_AFTER; one that will not (a wrong key,
an unknown incident, the egress policy's refusal) ends the row at once. Each attempt is recorded
in the audit log as a call of `alert_source_writeback` by the system.

Where it runs: with Redis, the Celery beat task `incidents_app.drain_writebacks`; without it,
`writeback_loop` on the serving process's event loop (started by ongrid_site.asgi). A new row is
also tried at once (`kick`).
"""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone, translation

from agents_app.api import run_in_background
from audit_app.models import ToolStatus
from audit_app.recorder import record_tool_call
from incidents_app import runner, writeback
from incidents_app.models import SourceWriteback
from ops_app.alert_sources.grafana import api as grafana
from ops_app.alert_sources.opsgenie import api as opsgenie
from ops_app.alert_sources.pagerduty import api as pagerduty
from ops_app.alert_sources.rest import SourceAPIError
from ops_app.core import loops, retry_rows
from ops_app.models import AlertSource

log = logging.getLogger(__name__)

Status = SourceWriteback.Status
GIVE_UP_AFTER = timedelta(hours=6)  # a row still not written this long after it was queued fails
FIRST_PAUSE = timedelta(seconds=30)  # the pause after the first failure; doubles each time
LONGEST_PAUSE = timedelta(minutes=15)
LEASE = timedelta(minutes=2)  # a claim this old is taken as abandoned (its drainer died mid-call)
DRAIN_EVERY = 15.0  # seconds between two passes of the embedded loop
AUDIT_TOOL = "alert_source_writeback"


# --- the rows ----------------------------------------------------------------------------------------


def due(now: datetime, limit: int = 50) -> list[int]:
    return retry_rows.due(SourceWriteback.objects.filter(status=Status.PENDING), now, limit)


def claim(pk: int, now: datetime) -> SourceWriteback | None:
    """The row, if this caller won it (compare-and-set on its claim); None if another did first."""
    if not retry_rows.claim(SourceWriteback.objects.filter(status=Status.PENDING), pk, now, LEASE):
        return None
    return SourceWriteback.objects.select_related("source", "incident", "investigation__incident").get(pk=pk)


def record_done(row: SourceWriteback) -> None:
    SourceWriteback.objects.filter(pk=row.pk).update(
        status=Status.DONE,
        attempts=row.attempts + 1,
        done_at=timezone.now(),
        claimed_until=None,
        last_error="",
    )


def record_failure(row: SourceWriteback, error: SourceAPIError, now: datetime) -> str:
    """One more failed attempt; returns the row's new status."""
    attempts = row.attempts + 1
    if error.refused:
        status, next_at = Status.REFUSED, row.next_attempt_at
    elif not error.transient or now - row.created_at >= GIVE_UP_AFTER:
        status, next_at = Status.FAILED, row.next_attempt_at
    else:
        status, next_at = Status.PENDING, now + backoff(attempts)
    SourceWriteback.objects.filter(pk=row.pk).update(
        attempts=attempts,
        status=status,
        next_attempt_at=next_at,
        claimed_until=None,
        last_error=error.reason[:120],
    )
    return status


def backoff(attempts: int) -> timedelta:
    """30 s, 1 min, 2 min, ... capped at 15 min: about 30 tries in six hours."""
    return retry_rows.backoff(attempts, FIRST_PAUSE, LONGEST_PAUSE)


# --- one write ---------------------------------------------------------------------------------------


async def drain_once(now: datetime | None = None) -> int:
    """One pass: try every due row once. Returns how many were written."""
    now = now or timezone.now()
    written = 0
    for pk in await sync_to_async(due)(now):
        row = await sync_to_async(claim)(pk, now)
        if row is not None:
            written += await deliver(row, now)
    return written


async def deliver(row: SourceWriteback, now: datetime) -> bool:
    started, clock = timezone.now(), time.monotonic()
    try:
        await write(row)
    except Exception as raised:  # noqa: BLE001 - any failure is one failed attempt, never a stuck row
        error = raised if isinstance(raised, SourceAPIError) else SourceAPIError(type(raised).__name__)
        if error is not raised:
            log.exception("write-back %s: unexpected failure", row.pk)
        status = await sync_to_async(record_failure)(row, error, now)
        log.warning(
            "write-back %s (%s of incident %s to source %s) failed: %s; now %s",
            row.pk,
            row.kind,
            row.incident_id,
            row.source_id,
            error.reason,
            status,
        )
        await _audit(row, started, clock, ToolStatus.ERROR, error.reason)
        await _redraw(row)
        return False
    await sync_to_async(record_done)(row)
    log.info(
        "write-back %s (%s of incident %s) written to source %s",
        row.pk,
        row.kind,
        row.incident_id,
        row.source_id,
    )
    await _audit(row, started, clock, ToolStatus.OK, "")
    await _redraw(row)
    return True


async def write(row: SourceWriteback) -> None:
    """The one call the row stands for, with the source's current key (never copied to the row)."""
    source, incident = row.source, row.incident
    if row.kind == SourceWriteback.Kind.NOTE:
        with translation.override(settings.LANGUAGE_CODE):
            text = await sync_to_async(writeback.findings_text)(
                row.investigation, source.writeback == AlertSource.Writeback.FULL
            )
        await _write_findings(row, text)
        return
    client = {AlertSource.Kind.PAGERDUTY: pagerduty, AlertSource.Kind.OPSGENIE: opsgenie}.get(source.kind)
    if client is None:
        raise SourceAPIError("UnsupportedKind", transient=False)
    change = client.acknowledge if row.kind == SourceWriteback.Kind.ACKNOWLEDGE else client.resolve
    await change(source, incident.external_id)


async def _write_findings(row: SourceWriteback, text: str) -> None:
    source, incident = row.source, row.incident
    if source.kind == AlertSource.Kind.PAGERDUTY:
        await pagerduty.add_note(source, incident.external_id, text)
    elif source.kind == AlertSource.Kind.OPSGENIE:
        await opsgenie.add_note(source, incident.external_id, text)
    elif source.kind == AlertSource.Kind.GRAFANA:
        dashboard_uid, panel_id = await sync_to_async(panel_of)(incident)
        tags = ["ongrid", f"incident-{incident.pk}"]
        await grafana.annotate(source, text, tags, dashboard_uid=dashboard_uid, panel_id=panel_id)
    else:
        raise SourceAPIError("UnsupportedKind", transient=False)


def panel_of(incident) -> tuple[str, int | None]:
    """The dashboard and panel the incident's alerts carry (Grafana's __dashboardUid__ and
    __panelId__, as annotations or labels), or ("", None) for an organization annotation."""
    for alert in incident.alerts.order_by("starts_at", "pk"):
        notes = {**(alert.labels or {}), **(alert.annotations or {})}
        uid = str(notes.get("__dashboardUid__") or notes.get("dashboardUID") or "")
        if uid:
            panel = str(notes.get("__panelId__") or notes.get("panelId") or "")
            return uid, int(panel) if panel.isdigit() else None
    return "", None


async def _redraw(row: SourceWriteback) -> None:
    """Open incident pages redraw their write-back block (a broken channel layer is logged)."""
    await runner.publish(row.incident_id, {"event": "writeback", "kind": row.kind})


async def _audit(row: SourceWriteback, started: datetime, clock: float, status: str, error: str) -> None:
    """The attempt as an audit row of the system (no session, no user, no persona): what was
    written where and the outcome; never the text's recipient key or the vendor's answer."""
    arguments = {
        "incident_id": row.incident_id,
        "kind": row.kind,
        "source": row.source.name,
        "attempt": row.attempts + 1,
    }
    await record_tool_call(
        organization_id=row.organization_id,
        session_id=None,
        user_id=None,
        persona="",
        tool_call_id=f"writeback-{row.pk}-{row.attempts + 1}",
        tool=AUDIT_TOOL,
        tool_class="write",
        arguments_raw=json.dumps(arguments),
        content="written" if status == ToolStatus.OK else "",
        status=status,
        error=error,
        started_at=started,
        duration_ms=int((time.monotonic() - clock) * 1000),
    )


# --- where it runs -------------------------------------------------------------------------------------


def embedded() -> bool:
    return settings.ONGRID_EXECUTOR == "inline"


def kick() -> None:
    """Try the due rows now: on a Celery worker with Redis, else on this process's loop."""
    if embedded():
        run_in_background(drain_once())
        return
    from incidents_app.tasks import drain_writebacks_task  # the task module imports this one

    drain_writebacks_task.delay()


async def writeback_loop() -> None:
    """Drain every DRAIN_EVERY seconds on this event loop (embedded shape)."""
    await loops.repeat("write-back drain", drain_once, DRAIN_EVERY)
