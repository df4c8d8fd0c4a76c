"""Times as tools accept them: what an LLM writes ("now-1h", "-30m", ISO 8601, epoch seconds)."""

from __future__ import annotations

import datetime as dt
import re

from django.utils import timezone

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class TimeParseError(ValueError):
    pass


def parse_duration(text: str) -> dt.timedelta:
    """'90s', '5m', '1.5h', '2d', '1w' → timedelta."""
    match = _DURATION.match(text.strip().lower())
    if not match:
        raise TimeParseError(f"{text!r} is not a duration like 30s, 5m, 2h, 1d")
    return dt.timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])


def parse_time(value: str | int | float | None, now: dt.datetime | None = None) -> dt.datetime | None:
    """An absolute UTC time from ISO 8601, epoch seconds, 'now', 'now-1h' or '-1h' (None stays None)."""
    if value is None or value == "":
        return None
    now = now or timezone.now()
    if isinstance(value, int | float):
        return dt.datetime.fromtimestamp(float(value), dt.UTC)
    text = value.strip()
    lowered = text.lower()
    if lowered == "now":
        return now
    relative = lowered.removeprefix("now")
    if relative.startswith("-") and _DURATION.match(relative[1:]):
        return now - parse_duration(relative[1:])
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return dt.datetime.fromtimestamp(float(text), dt.UTC)
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise TimeParseError(
            f"{value!r} is not a time; use ISO 8601 (2024-05-01T10:00:00Z), epoch seconds, 'now' or 'now-1h'"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


def iso(value: dt.datetime | None) -> str | None:
    """ISO 8601 in UTC with a Z, the one time format tools return."""
    if value is None:
        return None
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
