"""What the toolsets over Ongrid's own records (incidents, estate) share: row limits, time
arguments and choices, checked so the model reads a message it can act on."""

from __future__ import annotations

import datetime as dt

from agents_app.toolsets.contract import ToolError
from ops_app.core.timeutil import TimeParseError, parse_time

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
LIMIT_PARAM = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most rows."}


def limit_of(value: int | None) -> int:
    if value is None:
        return DEFAULT_LIMIT
    if not isinstance(value, int) or value < 1:
        raise ToolError("limit must be a positive integer")
    return min(value, MAX_LIMIT)


def time_of(value, name: str) -> dt.datetime | None:
    try:
        return parse_time(value)
    except TimeParseError as exc:
        raise ToolError(f"{name}: {exc}") from None


def choice_of(value: str | None, allowed: list[str], name: str) -> str | None:
    if value is None or value == "":
        return None
    if value not in allowed:
        raise ToolError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value
