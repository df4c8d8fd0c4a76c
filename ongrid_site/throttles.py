"""API throttles that fail open when their cache (Redis) is down.

The throttle counters live in Redis so every process counts together; a Redis outage must not turn
every API request into a 500. While the cache cannot be read or written the request is let
through (there is nothing to count against) and one warning is logged per outage, not per request.
"""

from __future__ import annotations

import logging

from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

log = logging.getLogger(__name__)

_outage = {"logged": False}


class FailOpen:
    """Mixin for a DRF throttle: a cache failure lets the request through instead of raising."""

    def allow_request(self, request, view) -> bool:
        try:
            allowed = super().allow_request(request, view)
        except Exception as exc:  # noqa: BLE001 - any cache failure: redis errors, timeouts, refusals
            if not _outage["logged"]:
                _outage["logged"] = True
                log.warning("API throttling is off while its cache is unreachable (%s)", type(exc).__name__)
            return True
        consulted = getattr(self, "key", None) is not None  # not for a throttle that does not apply
        if consulted and _outage["logged"]:
            _outage["logged"] = False
            log.warning("API throttling is back: its cache answers again")
        return allowed


class AnonThrottle(FailOpen, AnonRateThrottle):
    pass


class UserThrottle(FailOpen, UserRateThrottle):
    pass
