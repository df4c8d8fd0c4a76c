"""Events of the estate layer for the surfaces above it, which it never imports."""

from django.dispatch import Signal

# Sent after the transaction of an Acknowledge or Resolve done in Ongrid commits
# (`ops_app.estate.incidents.acknowledge` / `resolve`, which the review-gated tools call), so the
# incidents app can mirror it to the paging tool the incident came from (docs/alerts.md).
# A state change that arrives from the source's own webhook is not sent: it must not echo back.
# Keyword arguments: organization_id, incident_id, status ("acknowledged" | "resolved").
incident_state_changed = Signal()
