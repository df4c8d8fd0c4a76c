"""Writing Ongrid's findings back to the paging tool an incident came from (docs/alerts.md,
"Writing findings back", "Acknowledge, Resolve and Silence in the source").

What is written and when is decided here; `incidents_app.writeback_outbox` delivers it with
retries. Two receivers queue rows:
- `investigation_finished` (chat_app.signals): the investigation's summary, root cause,
  confidence and a link to the incident page (the source's `full` setting adds the rest of the
  report), as a PagerDuty note, an Opsgenie note or a Grafana annotation. One row per
  investigation (a unique constraint), so a second signal for the same run writes nothing more.
- `incident_state_changed` (ops_app.estate.signals): an Acknowledge / Resolve done in Ongrid, when
  the source mirrors state. The source's own webhook changes the state without those functions,
  so nothing it sent is echoed back.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.dispatch import receiver
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from chat_app.signals import investigation_finished
from incidents_app.models import Investigation, SourceWriteback
from ops_app.estate.signals import incident_state_changed
from ops_app.models import AlertSource, Incident

log = logging.getLogger(__name__)

Kind = SourceWriteback.Kind
# What each kind of source can be written: findings everywhere an API key is set; the incident's
# state only where the source has one (Grafana's alerts resolve themselves).
WRITABLE = {
    AlertSource.Kind.PAGERDUTY: {Kind.NOTE, Kind.ACKNOWLEDGE, Kind.RESOLVE},
    AlertSource.Kind.OPSGENIE: {Kind.NOTE, Kind.ACKNOWLEDGE, Kind.RESOLVE},
    AlertSource.Kind.GRAFANA: {Kind.NOTE},
}
STATE_KINDS = {Incident.Status.ACKNOWLEDGED: Kind.ACKNOWLEDGE, Incident.Status.RESOLVED: Kind.RESOLVE}


def writable(source: AlertSource | None, incident: Incident, kind: str) -> bool:
    """Whether `kind` can be written to `source` for `incident` at all: an enabled source of a kind
    that takes it, with an API key and base URL, and (PagerDuty, Opsgenie) the incident's id there."""
    if source is None or not source.enabled or kind not in WRITABLE.get(source.kind, ()):
        return False
    if not source.api_key or not source.api_base():
        return False
    return source.kind == AlertSource.Kind.GRAFANA or bool(incident.external_id)


@receiver(investigation_finished, dispatch_uid="ongrid-source-writeback")
def investigation_written_back(sender, investigation: Investigation, **kwargs) -> None:
    """Queue the findings for the incident's source; a failure here is logged, never raised (the
    investigation is over whatever happens to its write-back)."""
    try:
        row = queue_findings(investigation.pk)
    except Exception:  # noqa: BLE001 - a receiver must not fail the sender
        log.exception("investigation %s: could not queue the write-back", investigation.pk)
        return
    if row is not None:
        transaction.on_commit(kick, robust=True)


def queue_findings(investigation_id: int) -> SourceWriteback | None:
    """The findings row of the investigation, if its incident's source takes one and none exists."""
    investigation = Investigation.objects.select_related("incident__alert_source").get(pk=investigation_id)
    incident = investigation.incident
    source = incident.alert_source
    if source is None or source.writeback == AlertSource.Writeback.OFF:
        return None
    if not writable(source, incident, Kind.NOTE):
        return None
    return _once(incident, source, Kind.NOTE, investigation)


@receiver(incident_state_changed, dispatch_uid="ongrid-source-mirror-state")
def state_mirrored(sender, organization_id: int, incident_id: int, status: str, **kwargs) -> None:
    """Queue an Acknowledge / Resolve done in Ongrid for a source that mirrors state."""
    kind = STATE_KINDS.get(status)
    incident = (
        Incident.objects.for_organization(organization_id)
        .select_related("alert_source")
        .filter(pk=incident_id)
        .first()
    )
    if kind is None or incident is None:
        return
    source = incident.alert_source
    if source is None or not source.mirror_state or not writable(source, incident, kind):
        return
    if _once(incident, source, kind) is not None:
        kick()


def _once(
    incident: Incident, source: AlertSource, kind: str, investigation: Investigation | None = None
) -> SourceWriteback | None:
    """Insert the row unless its twin exists (the unique constraints decide under concurrency)."""
    try:
        with transaction.atomic():
            return SourceWriteback.objects.create(
                organization_id=incident.organization_id,
                incident=incident,
                investigation=investigation,
                source=source,
                kind=kind,
                next_attempt_at=timezone.now(),
            )
    except IntegrityError:
        return None


def kick() -> None:
    """Try what was just queued now rather than at the next drain."""
    from incidents_app import writeback_outbox  # it imports the rendering below

    writeback_outbox.kick()


# --- what is written -------------------------------------------------------------------------------


def incident_link(incident: Incident) -> str:
    return settings.CONFIG.public_url + reverse("incident-page", args=[incident.pk])


def findings_text(investigation: Investigation, full: bool) -> str:
    """The note: plain text every source shows as it is (PagerDuty and Opsgenie notes, Grafana
    annotations), in the site's language."""
    report = investigation.report or {}
    incident = investigation.incident
    lines = [_("Ongrid investigation of incident #%(id)s") % {"id": incident.pk}]
    if investigation.status == Investigation.Status.DONE and report:
        lines += [
            _("Summary: %(text)s") % {"text": report.get("summary", "")},
            _("Root cause: %(text)s") % {"text": report.get("root_cause", "")},
            _("Confidence: %(word)s (%(percent)s%%)")
            % {
                "word": report.get("confidence_word", ""),
                "percent": round(100 * (report.get("confidence") or 0)),
            },
        ]
        if full:
            lines += _full_report(report)
    else:
        lines.append(
            _("The investigation ended without a report (%(status)s).")
            % {"status": investigation.get_status_display()}
        )
        if investigation.partial_findings:
            lines.append(_("First findings: %(text)s") % {"text": investigation.partial_findings[:1000]})
    lines.append(_("Incident in Ongrid: %(url)s") % {"url": incident_link(incident)})
    return "\n".join(lines)


def _full_report(report: dict) -> list[str]:
    lines = []
    patient_zero = report.get("patient_zero") or {}
    if patient_zero:
        lines.append(
            _("Patient zero: %(kind)s %(name)s")
            % {"kind": patient_zero.get("kind", ""), "name": patient_zero.get("name", "")}
        )
    sections = (
        (_("Causal chain:"), report.get("causal_chain") or []),
        (_("Evidence:"), [item.get("finding", "") for item in report.get("evidence") or []]),
        (_("Next actions:"), [item.get("action", "") for item in report.get("next_actions") or []]),
    )
    for title, items in sections:
        if items:
            lines.append(title)
            lines += [f"- {item}" for item in items]
    return lines


# --- what the incident page shows -------------------------------------------------------------------


def page_lines(incident: Incident) -> list[dict]:
    """One line per write-back of the incident, oldest first: {"state", "kind", "text"}."""
    rows = incident.writebacks.select_related("source").order_by("created_at", "pk")
    return [{"state": _state(row), "kind": row.get_kind_display(), "text": describe(row)} for row in rows]


def _state(row: SourceWriteback) -> str:
    if row.status == SourceWriteback.Status.PENDING:
        return "retrying" if row.attempts else "pending"
    return "done" if row.status == SourceWriteback.Status.DONE else "failed"


def _clock(moment) -> str:
    return timezone.localtime(moment).strftime("%H:%M")


def describe(row: SourceWriteback) -> str:
    """The row's outcome in a sentence, in the active language."""
    words = {"source": row.source.get_kind_display(), "reason": row.last_error}
    if row.status == SourceWriteback.Status.DONE:
        return _("Written back to %(source)s ✓ %(time)s") % {**words, "time": _clock(row.done_at)}
    if row.status == SourceWriteback.Status.REFUSED:
        return _("Write-back to %(source)s refused by the egress policy; nothing was sent.") % words
    if row.status == SourceWriteback.Status.FAILED:
        return _("Write-back to %(source)s failed (%(reason)s); given up.") % words
    if row.attempts:
        return _("Write-back to %(source)s failed (%(reason)s), retrying at %(time)s") % {
            **words,
            "time": _clock(row.next_attempt_at),
        }
    return _("Writing back to %(source)s…") % words
