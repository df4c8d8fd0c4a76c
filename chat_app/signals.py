"""Events the session store publishes to the layers above it (they subscribe; it never imports them)."""

from django.dispatch import Signal

# Sent by `services.reap_orphans` for each row it closes, with `session_id`, `kind` and `reason`:
# an investigation whose process died is failed by its own app from here.
session_reaped = Signal()

# Sent once per investigation that reaches a terminal state (docs/investigations.md). It lives here,
# below both, so the incidents app can send it and the IM bridges can hear it without importing
# each other. Keyword arguments:
#   investigation    the incidents app's row (receivers in other apps should not rely on it)
#   organization_id  the investigation's organization
#   summary          a JSON-safe dict: "investigation" (id), "incident" {"id", "title",
#                    "severity", "path" (the incident page, e.g. /incidents/7/)}, "status",
#                    "summary", "root_cause", "confidence", "confidence_word", "error"
investigation_finished = Signal()

# Sent by the schedules app when a run of a schedule with IM delivery on has its output (its
# finding, or its report), for the IM bridges to post it to the organization's summary channels;
# the two apps never import each other (docs/schedules.md, "Delivery"). Keyword arguments:
#   organization_id  the schedule's organization: only its IM apps may receive the message
#   kind             "inspection" or "report"
#   title            one line, e.g. "disk check: PROBLEM" or "Weekly report 2026-02-23 – 2026-03-02"
#   markdown         a short Markdown summary (the finding with its evidence, or the key figures)
#   url              the absolute address of the run page (inspection) or the report page (report)
#   status           "ok" | "warning" | "problem" for an inspection, "report" for a report
#   compose          optional: a callable returning (title, markdown) written in the active
#                    language, for a receiver that posts in its reader's language (the IM bridges
#                    call it once per IM app, inside that app's language)
# A receiver returns a short outcome ("posted to 2 channel(s)") kept on the run, and must not
# raise for a chat outage: it logs it. The sender uses `send_robust`, so one that does raise is
# recorded as a failed delivery and never fails the run.
schedule_delivered = Signal()
