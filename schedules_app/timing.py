"""When a schedule fires next, and which period a report covers. Pure functions of their inputs
(no clock, no database), so the scheduler's tests pass the time in instead of sleeping.

Cron expressions are evaluated in the schedule's time zone by croniter, so "0 7 * * *" in
Europe/Madrid stays 07:00 local across daylight-saving changes.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo

from croniter import croniter


def valid_cron(expression: str) -> bool:
    return croniter.is_valid(expression.strip())


def next_fire(cron: str, interval_minutes: int | None, tz_name: str, after: dt.datetime) -> dt.datetime:
    """The first firing strictly after `after` (aware), as an aware UTC datetime."""
    if cron.strip():
        local = after.astimezone(zoneinfo.ZoneInfo(tz_name))
        following = croniter(cron.strip(), local).get_next(dt.datetime)
        return following.astimezone(dt.UTC)
    if not interval_minutes:
        raise ValueError("a schedule needs a cron expression or an interval")
    return (after + dt.timedelta(minutes=interval_minutes)).astimezone(dt.UTC)


def report_window(period: str, tz_name: str, at: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The whole period before `at`, in local calendar terms: yesterday, the 7 days before today,
    or the previous calendar month. Returned as aware UTC datetimes [start, end)."""
    tz = zoneinfo.ZoneInfo(tz_name)
    local = at.astimezone(tz)
    today = dt.datetime(local.year, local.month, local.day, tzinfo=tz)
    if period == "daily":
        start, end = today - dt.timedelta(days=1), today
    elif period == "weekly":
        start, end = today - dt.timedelta(days=7), today
    elif period == "monthly":
        end = dt.datetime(local.year, local.month, 1, tzinfo=tz)
        previous = end - dt.timedelta(days=1)
        start = dt.datetime(previous.year, previous.month, 1, tzinfo=tz)
    else:
        raise ValueError(f"unknown report period {period!r}")
    return start.astimezone(dt.UTC), end.astimezone(dt.UTC)
