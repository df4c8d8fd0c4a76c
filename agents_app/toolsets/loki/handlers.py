"""The handler of `query_logql`: a range query against Loki's HTTP API, lines capped and cut."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from agents_app.toolsets.backends import (
    backend_error,
    data_source,
    from_ns,
    get,
    not_configured,
    summarise_matrix,
    time_argument,
)
from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.loki.manifest import MAX_LINE_CHARS, MAX_LOG_LINES, QUERY_LOGQL
from ops_app.core.timeutil import iso


def _ns(value: dt.datetime) -> int:
    return int(value.timestamp() * 1_000_000_000)


async def query_logql(
    ctx: ToolContext,
    query: str,
    start: str | None = None,
    end: str | None = None,
    limit: int = 100,
    direction: str = "backward",
    datasource: str | None = None,
) -> dict:
    target = await data_source(ctx, QUERY_LOGQL.datasource, datasource)
    if target is None:
        return not_configured("LOKI_URL", "Loki")
    if direction not in ("backward", "forward"):
        raise ToolError("direction must be 'backward' (newest first) or 'forward'")
    now = timezone.now()
    finish = time_argument(end, "end", now, now=now)
    begin = time_argument(start, "start", finish - dt.timedelta(hours=1), now=now)
    limit = min(max(int(limit), 1), MAX_LOG_LINES)
    params = {"query": query, "start": _ns(begin), "end": _ns(finish), "limit": limit, "direction": direction}
    response = await get("Loki", target, "/loki/api/v1/query_range", params)
    if response.status_code != 200:
        raise backend_error("Loki", response)
    data = response.json()["data"]
    answer: dict = {"status": "ok", "datasource": target.name, "query": query}
    answer.update(start=iso(begin), end=iso(finish))
    answer["result_type"] = data["resultType"]
    if data["resultType"] == "streams":
        streams, lines = [], 0
        for stream in data["result"]:
            entries = [[from_ns(ts), line[:MAX_LINE_CHARS]] for ts, line in stream.get("values", [])]
            entries = entries[: max(limit - lines, 0)]
            lines += len(entries)
            if entries:
                streams.append({"labels": stream.get("stream", {}), "entries": entries})
        answer.update(streams=streams, lines=lines, limit_reached=lines >= limit)
    else:
        answer["series"] = summarise_matrix(data["result"])
    return answer
