"""The one clock of the notifications: quiet hours, rate-limit windows, digests and retries all
read `now()`, so a test sets the time (`set_now`) instead of sleeping."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

_fixed: dt.datetime | None = None


def now() -> dt.datetime:
    return _fixed if _fixed is not None else timezone.now()


def set_now(moment: dt.datetime | None) -> None:
    """Fix the clock at `moment` (None: the real time again)."""
    global _fixed
    _fixed = moment
