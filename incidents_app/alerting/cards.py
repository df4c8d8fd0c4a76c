"""What a notification says, drawn from the incident as it stands when the message is sent (so a
retried or redrawn card is never stale): the IM card dict of the contract in `chat_app.signals`,
the e-mail's subject and bodies, the webhook's JSON."""

from __future__ import annotations

from django.conf import settings
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _

from incidents_app import actions
from incidents_app.models import Investigation, current_report, newest_first
from ops_app.models import SEVERITY_RANK, Incident

FINDINGS_CHARS = 500
DIGEST_LISTED = 20  # a digest names this many incidents, then says how many more


def incident_url(incident_id: int) -> str:
    return f"{settings.CONFIG.public_url}/incidents/{incident_id}/"


def source_of(incident: Incident) -> str:
    return incident.alert_source.kind if incident.alert_source_id else incident.source


def card(incident: Incident) -> dict:
    """The card of `incident` now: its alert, the first findings, the report, who did what, and
    the buttons still offered."""
    latest = newest_first(incident).first()
    report = current_report(incident)
    return {
        "incident": incident.pk,
        "title": incident.title,
        "severity": incident.severity,
        "status": incident.status,
        "services": [str(s) for s in incident.affected_services or []],
        "started_at": incident.started_at.isoformat(),
        "url": incident_url(incident.pk),
        "source": source_of(incident),
        "source_url": incident.external_url or "",
        "findings": (latest.partial_findings[:FINDINGS_CHARS] if latest is not None else ""),
        "report": report_of(report),
        "log": log_of(incident),
        "buttons": buttons_of(incident, latest),
    }


def report_of(investigation: Investigation | None) -> dict | None:
    if investigation is None:
        return None
    report = investigation.report or {}
    return {
        "summary": str(report.get("summary", ""))[:1000],
        "root_cause": str(report.get("root_cause", ""))[:1000],
        "confidence_word": str(report.get("confidence_word", "")),
    }


def log_of(incident: Incident) -> list[str]:
    """Who did what from the cards and the incident page, oldest first: each change with where the
    review gate has it ("acknowledged by alice (review gate: approved by the reviewer)"), and the
    investigations people asked for."""
    entries = []
    for progress in actions.recent_progress(incident):
        state = progress.verdict if progress.state == actions.DONE and progress.verdict else progress.text
        if progress.reason and progress.state in (actions.REJECTED, actions.FAILED):
            state = f"{state}: {progress.reason[:120]}"
        line = _("%(who)s (review gate: %(state)s)") % {"who": progress.headline, "state": state}
        entries.append((progress.action.created_at, line))
    asked = incident.investigations.filter(trigger=Investigation.Trigger.MANUAL, requested_by__isnull=False)
    for investigation in asked.select_related("requested_by").order_by("-created_at")[:5]:
        name = investigation.requested_by.get_username()
        entries.append((investigation.created_at, _("investigation requested by %(name)s") % {"name": name}))
    return [line for _at, line in sorted(entries, key=lambda entry: entry[0])]


def buttons_of(incident: Incident, latest: Investigation | None) -> list[str]:
    """No Acknowledge once acknowledged (or while one waits for the gate), no Investigate while one
    runs, nothing once resolved."""
    if incident.status == Incident.Status.RESOLVED:
        return []
    progress = actions.recent_progress(incident)
    pending = {p.action.verb for p in progress if p.open}
    done = {p.action.verb for p in progress if p.state == actions.DONE}
    offered = []
    if incident.status == Incident.Status.FIRING and "acknowledge" not in pending:
        offered.append("acknowledge")
    if latest is None or not latest.is_open:
        offered.append("investigate")
    if not ({"silence"} & (pending | done)):
        offered.append("silence")
    return offered


def digest_card(incidents: list[Incident], window_minutes: int) -> dict:
    """One card for the alerts a channel's rate limit held back: how many, and the first ones."""
    first = incidents[0]
    lines = [
        f"{i.get_severity_display()} · {i.title} · {incident_url(i.pk)}" for i in incidents[:DIGEST_LISTED]
    ]
    if len(incidents) > DIGEST_LISTED:
        lines.append(_("…and %(count)d more") % {"count": len(incidents) - DIGEST_LISTED})
    services = sorted({str(s) for i in incidents for s in i.affected_services or []})
    return {
        "incident": first.pk,
        "title": digest_title(len(incidents), window_minutes),
        "severity": min((i.severity for i in incidents), key=_rank),
        "status": "firing",
        "services": services,
        "started_at": first.started_at.isoformat(),
        "url": f"{settings.CONFIG.public_url}/incidents/",
        "source": source_of(first),
        "source_url": "",
        "findings": "",
        "report": None,
        "log": lines,
        "buttons": [],
    }


def digest_title(count: int, window_minutes: int) -> str:
    return _("Digest: %(count)d more alerts in the last %(minutes)d minutes") % {
        "count": count,
        "minutes": window_minutes,
    }


def _rank(severity: str) -> int:
    return SEVERITY_RANK.get(severity, 99)


# --- e-mail ----------------------------------------------------------------------------------------


def email_subject(drawn: dict, kind: str) -> str:
    if kind == "digest":
        return f"[Ongrid] {drawn['title']}"
    if kind == "update":
        return _("[Ongrid] Report: %(title)s") % {"title": drawn["title"]}
    return f"[Ongrid] {drawn['severity'].upper()}: {drawn['title']}"


def email_lines(drawn: dict, kind: str) -> list[tuple[str, str]]:
    """The message as (label, value) lines, shared by the plain text and the HTML."""
    lines = [
        (_("Severity"), drawn["severity"]),
        (_("Services"), ", ".join(drawn["services"]) or "—"),
        (_("Started"), drawn["started_at"]),
        (_("Source"), drawn["source"]),
        (_("Incident"), drawn["url"]),
    ]
    if drawn["source_url"]:
        lines.append((_("In the source"), drawn["source_url"]))
    report = drawn.get("report")
    if kind == "update" and report:
        lines += [
            (_("Summary"), report["summary"]),
            (_("Root cause"), report["root_cause"]),
            (_("Confidence"), report["confidence_word"]),
        ]
    elif drawn.get("findings"):
        lines.append((_("First findings"), drawn["findings"]))
    if kind == "digest":
        lines = [(_("Incidents"), line) for line in drawn["log"]]
    return lines


def email_text(drawn: dict, kind: str) -> str:
    lines = email_lines(drawn, kind)
    return "\n".join([drawn["title"], ""] + [f"{label}: {value}" for label, value in lines]) + "\n"


def email_html(drawn: dict, kind: str) -> str:
    rows = format_html_join("", "<tr><th align='left'>{}</th><td>{}</td></tr>", email_lines(drawn, kind))
    return format_html("<h2>{}</h2><table>{}</table>", drawn["title"], rows)


# --- webhook ---------------------------------------------------------------------------------------

WEBHOOK_EVENTS = {"alert": "alert.fired", "digest": "alert.digest", "update": "alert.report"}


def webhook_body(drawn: dict, kind: str) -> dict:
    return {"event": WEBHOOK_EVENTS[kind], "incident": drawn}
