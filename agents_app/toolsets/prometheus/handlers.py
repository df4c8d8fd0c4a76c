"""The handler of `query_promql`: an instant or range query against the Prometheus HTTP API."""

from __future__ import annotations

import datetime as dt
import math

from django.utils import timezone

from agents_app.toolsets.backends import (
    MAX_SERIES,
    backend_error,
    data_source,
    get,
    not_configured,
    number,
    summarise_matrix,
    time_argument,
)
from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.prometheus.manifest import DEFAULT_POINTS, MAX_POINTS, QUERY_PROMQL
from ops_app.core.timeutil import TimeParseError, iso, parse_duration


def plan_range(start: dt.datetime, end: dt.datetime, step: str | None, max_points: int) -> float:
    """The step in seconds: the one asked for, widened so no series exceeds `max_points` points."""
    if end <= start:
        raise ToolError("end must be after start")
    span = (end - start).total_seconds()
    wanted = parse_duration(step).total_seconds() if step else 0.0
    # A range includes both ends: n intervals give n + 1 points.
    return max(wanted, math.ceil(span / max(max_points - 1, 1)), 1.0)


def summarise_vector(result: list[dict]) -> list[dict]:
    return [
        {
            "labels": item.get("metric", {}),
            "value": number(item["value"][1]),
            "at": iso(_epoch(item["value"][0])),
        }
        for item in result[:MAX_SERIES]
    ]


def _epoch(value) -> dt.datetime:
    return dt.datetime.fromtimestamp(float(value), dt.UTC)


async def query_promql(
    ctx: ToolContext,
    query: str,
    time: str | None = None,
    start: str | None = None,
    end: str | None = None,
    step: str | None = None,
    max_points: int = DEFAULT_POINTS,
    datasource: str | None = None,
) -> dict:
    target = await data_source(ctx, QUERY_PROMQL.datasource, datasource)
    if target is None:
        return not_configured("PROMETHEUS_URL", "Prometheus")
    if not query.strip():
        raise ToolError("query must not be empty")
    api = "/api/v1/"
    if start is None:
        params = {"query": query}
        at = time_argument(time, "time")
        if at is not None:
            params["time"] = at.timestamp()
        response = await get("Prometheus", target, api + "query", params)
    else:
        now = timezone.now()
        begin, finish = time_argument(start, "start", now=now), time_argument(end, "end", now, now=now)
        try:
            step_seconds = plan_range(begin, finish, step, min(max(int(max_points), 10), MAX_POINTS))
        except TimeParseError as exc:
            raise ToolError(f"step: {exc}") from None
        # Anchor the grid on `end` so the newest point is the one asked for, not up to a step before it.
        begin = finish - dt.timedelta(
            seconds=step_seconds * ((finish - begin).total_seconds() // step_seconds)
        )
        params = {"query": query, "start": begin.timestamp(), "end": finish.timestamp(), "step": step_seconds}
        response = await get("Prometheus", target, api + "query_range", params)
    if response.status_code != 200:
        raise backend_error("Prometheus", response)
    data = response.json()["data"]
    kind, result = data["resultType"], data["result"]
    answer: dict = {"status": "ok", "datasource": target.name, "query": query, "result_type": kind}
    if kind == "matrix":
        answer.update(
            start=iso(begin),
            end=iso(finish),
            step_seconds=step_seconds,
            step_widened=bool(step) and step_seconds > parse_duration(step).total_seconds(),
            series=summarise_matrix(result),
        )
    elif kind == "vector":
        answer["series"] = summarise_vector(result)
    else:  # scalar or string: [time, value]
        answer.update(value=result[1], at=iso(_epoch(result[0])))
    if kind in ("matrix", "vector"):
        answer["series_total"] = len(result)
        answer["truncated"] = len(result) > MAX_SERIES
    return answer
