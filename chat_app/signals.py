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
