"""Events the session store publishes to the layers above it (they subscribe; it never imports them)."""

from django.dispatch import Signal

# Sent by `services.reap_orphans` for each row it closes, with `session_id`, `kind` and `reason`:
# an investigation whose process died is failed by its own app from here.
session_reaped = Signal()
