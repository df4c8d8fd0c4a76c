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

# Alert-time notifications in the team chat (docs/alerts.md, "Notifications"). The incidents app
# decides what to send and when; the IM bridges render and post. Neither imports the other.
#
# `alert_card_post` is sent (with `send`, not `send_robust`: a failure must reach the sender, which
# retries it) to post a new card. Keyword arguments:
#   organization_id  the incident's organization: only its IM apps may be used
#   app_id           the IMApp to post with (the receiver checks it belongs to organization_id)
#   channel          the channel / chat id on that platform
#   card             a JSON-safe dict, see below
# The IM receiver returns a JSON-safe `ref` dict (the platform's address of the posted message) or
# raises on any failure (platform down, unknown app, wrong organization).
#
# `alert_card_update` is sent to redraw a posted card in place, with organization_id, app_id, `ref`
# (as returned above) and `card`; it returns None or raises like the above.
#
# The card dict: "incident" (id), "title", "severity", "status" (firing | acknowledged | resolved),
# "services" [str], "started_at" (ISO 8601), "url" (the incident page, absolute), "source" (the
# kind, e.g. "pagerduty"), "source_url" (the incident in its source, or ""), "findings" (the
# investigation's first findings or "" ), "report" (None or {"summary", "root_cause",
# "confidence_word"}), "log" [str] (who did what: "acknowledged by alice", newest last),
# "buttons" [str]: the verbs still offered, of "acknowledge", "investigate", "silence".
# Buttons carry the data `im:alert-<verb>:<incident id>` (e.g. im:alert-acknowledge:42).
alert_card_post = Signal()
alert_card_update = Signal()

# `alert_card_pressed` is sent by an IM bridge when a linked user presses a card's button.
# Keyword arguments: organization_id (the IM app's), incident_id (int, unchecked: the receiver
# finds it within organization_id or refuses), verb ("acknowledge" | "investigate" | "silence"),
# user (the linked Django user), via (the platform's name, e.g. "slack"). The incidents app's
# receiver does the action (Acknowledge and Silence through the review gate) and returns a short
# answer for the presser in the active language ("Acknowledge sent to the review gate."); it
# redraws the card itself with alert_card_update.
alert_card_pressed = Signal()
