"""The incident page's fixed words in the reader's language, chosen when the page is drawn.

Rows keep the English Ongrid wrote (an investigation's error, an incident change's summary, a tool
call's status): other code, the audit and the agents read them, and a stored sentence must not
change with the language of whoever triggered it. Only what the page shows is translated here;
a sentence this module does not know (an agent's own words, an exception's text) is shown as it is.
"""

from __future__ import annotations

from django.utils.translation import gettext, gettext_lazy, pgettext, pgettext_lazy

from audit_app.models import TOOL_STATUS_WORDS
from chat_app.stops import for_viewer
from ops_app.models import Alert, ChangeEvent, Incident

# The reasons an investigation ends with that Ongrid itself writes (incidents_app.runner,
# .investigations, .startup).
REASONS = {
    "The investigator ended without a valid report.": gettext_lazy(
        "The investigator ended without a valid report."
    ),
    "The investigation failed.": gettext_lazy("The investigation failed."),
    "Stopped.": gettext_lazy("Stopped."),
    "The incident was resolved while it was being investigated.": gettext_lazy(
        "The incident was resolved while it was being investigated."
    ),
    "The process that claimed this investigation is gone.": gettext_lazy(
        "The process that claimed this investigation is gone."
    ),
}

CONFIDENCE = {
    "low": pgettext_lazy("confidence", "low"),
    "medium": pgettext_lazy("confidence", "medium"),
    "high": pgettext_lazy("confidence", "high"),
}


def reason(text: str) -> str:
    """An investigation's stored error in the reader's language when Ongrid wrote it."""
    text = (text or "").strip()
    known = REASONS.get(text)
    return str(known) if known is not None else for_viewer(text)


def step_status(status: str) -> str:
    label = TOOL_STATUS_WORDS.get(status)  # as the chat names it
    return str(label) if label is not None else status


def confidence(word: str) -> str:
    label = CONFIDENCE.get(word)
    return str(label) if label is not None else word


def actor(name: str) -> str:
    """Who made a change: Ongrid's own "system" (ops_app.estate.change_events) in the reader's
    words, a person's or an integration's name as it is."""
    if not name or name == "system":
        return pgettext("actor of a change", "system")
    return name


def alert_line(alert: Alert) -> str:
    """ "alert HighLatency firing", the status in the reader's words."""
    return gettext("alert %(name)s %(status)s") % {"name": alert.name, "status": alert.get_status_display()}


def step_line(tool: str, status: str) -> str:
    return gettext("investigation step: %(tool)s (%(status)s)") % {
        "tool": tool,
        "status": step_status(status),
    }


def change_line(change: ChangeEvent) -> str:
    """An incident change event: acknowledging, resolving and opening are retold from the row's
    fields (who, the new status, the note after the stored summary); any other is shown as stored."""
    who = actor(change.actor_name)
    status = (change.after or {}).get("status") if isinstance(change.after, dict) else None
    if change.resource_type == "incident" and change.action == ChangeEvent.Action.UPDATE:
        line = {
            Incident.Status.ACKNOWLEDGED: gettext("%(who)s acknowledged the incident"),
            Incident.Status.RESOLVED: gettext("%(who)s resolved the incident"),
        }.get(status)
        if line is not None:
            # The stored summary is "<who> <verb> incident <title>[: <note>]"; the note is the
            # person's own words, kept as written.
            verb = "acknowledged" if status == Incident.Status.ACKNOWLEDGED else "resolved"
            written = f"{change.actor_name} {verb} incident {change.resource_name}: "
            note = change.summary[len(written) :] if change.summary.startswith(written) else ""
            text = line % {"who": who}
            return f"{text}: {note}" if note else text
    if change.resource_type == "incident" and change.action == ChangeEvent.Action.CREATE:
        return gettext("%(who)s opened the incident") % {"who": who}
    return change.summary
