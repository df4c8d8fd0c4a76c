"""Telemetry tools (docs/estate.md): PromQL against the Prometheus HTTP API, LogQL against Loki, TraceQL
against Tempo.

A backend that is not configured gives a "not configured" result (the LLM should stop trying);
a backend that refuses the query gives a ToolError carrying the backend's own message (the LLM
should correct the query). Results are summarised: a range query never returns more than the
point budget per series, log lines and spans are capped and truncated.
"""

from __future__ import annotations

import datetime as dt
import math

import httpx
from django.utils import timezone

from agents_app.tools.base import ToolContext, ToolError, tool
from ops_app.core.timeutil import TimeParseError, iso, parse_duration, parse_time
from ops_app.integrations import datasources
from ops_app.integrations.datasources import Endpoint
from ops_app.models import DataSource

DEFAULT_POINTS = 120
MAX_POINTS = 1000
MAX_SERIES = 20
MAX_LOG_LINES = 500
MAX_LINE_CHARS = 500
MAX_TRACES = 50
MAX_SPANS = 100
TIME_HELP = "ISO 8601, epoch seconds, 'now' or relative like 'now-1h'"


DATASOURCE = {
    "type": "string",
    "description": "The organization's data source to ask, by name (default: the default one of its kind).",
}


def not_configured(variable: str, backend: str) -> dict:
    return {
        "status": "not_configured",
        "message": f"{backend} is not configured for this organization (no {backend} data source, "
        f"and {variable} is unset); this data source cannot be queried.",
    }


async def data_source(ctx: ToolContext, kind: str, name: str | None) -> Endpoint | None:
    """The organization's data source of `kind` (by name, or the default); None when none exists."""
    try:
        return await datasources.aendpoint(ctx.organization_id, kind, name or None)
    except datasources.UnknownDataSource as exc:
        raise ToolError(str(exc)) from None


def _time(value, name: str, default: dt.datetime | None = None, now: dt.datetime | None = None):
    """Parse a tool's time argument; `now` pins relative times of one call to the same instant."""
    try:
        return parse_time(value, now) or default
    except TimeParseError as exc:
        raise ToolError(f"{name}: {exc}") from None


async def _get(backend: str, target: Endpoint, path: str, params: dict) -> httpx.Response:
    """GET with the data source's timeout and credentials; transport failures become ToolErrors."""
    url = target.url + path
    try:
        async with target.client() as client:
            return await client.get(url, params=params)
    except httpx.TimeoutException:
        raise ToolError(f"{backend} did not answer within {target.timeout:g} s ({url})") from None
    except httpx.HTTPError as exc:
        raise ToolError(f"{backend} is unreachable at {url}: {exc}") from None


def _backend_error(backend: str, response: httpx.Response) -> ToolError:
    try:
        body = response.json()
        message = body.get("error") or body.get("message") or response.text
        kind = body.get("errorType")
    except ValueError:
        message, kind = response.text, None
    message = (message or "").strip()[:1000] or response.reason_phrase
    prefix = f"{backend} returned HTTP {response.status_code}" + (f" ({kind})" if kind else "")
    return ToolError(f"{prefix}: {message}")


def _number(raw) -> float | None:
    """Prometheus sends sample values as strings; NaN and ±Inf become null (valid JSON)."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


# --- PromQL ------------------------------------------------------------------------------------


def plan_range(start: dt.datetime, end: dt.datetime, step: str | None, max_points: int) -> float:
    """The step in seconds: the one asked for, widened so no series exceeds `max_points` points."""
    if end <= start:
        raise ToolError("end must be after start")
    span = (end - start).total_seconds()
    wanted = parse_duration(step).total_seconds() if step else 0.0
    # A range includes both ends: n intervals give n + 1 points.
    return max(wanted, math.ceil(span / max(max_points - 1, 1)), 1.0)


def summarise_matrix(result: list[dict]) -> list[dict]:
    series = []
    for item in result[:MAX_SERIES]:
        points = [[int(float(ts)), _number(v)] for ts, v in item.get("values", [])]
        values = [v for _, v in points if v is not None]
        series.append(
            {
                "labels": item.get("metric", {}),
                "last": values[-1] if values else None,
                "min": min(values) if values else None,
                "max": max(values) if values else None,
                "points": points,
            }
        )
    return series


def summarise_vector(result: list[dict]) -> list[dict]:
    return [
        {
            "labels": item.get("metric", {}),
            "value": _number(item["value"][1]),
            "at": iso(_epoch(item["value"][0])),
        }
        for item in result[:MAX_SERIES]
    ]


def _epoch(value) -> dt.datetime:
    return dt.datetime.fromtimestamp(float(value), dt.UTC)


@tool(
    "query_promql",
    "Run a PromQL query against Prometheus. Without start: an instant query (at `time`, default "
    "now). With start: a range query from start to end (default now); the step is widened when "
    "needed so a series never has more than max_points points. Each series comes back as labels, "
    "last, min, max and points [[unix_seconds, value], ...].",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The PromQL expression."},
            "time": {"type": "string", "description": f"Instant query evaluation time. {TIME_HELP}."},
            "start": {
                "type": "string",
                "description": f"Range start; makes this a range query. {TIME_HELP}.",
            },
            "end": {"type": "string", "description": f"Range end (default now). {TIME_HELP}."},
            "step": {"type": "string", "description": "Resolution such as 15s, 1m, 5m (may be widened)."},
            "max_points": {
                "type": "integer",
                "minimum": 10,
                "maximum": MAX_POINTS,
                "description": "Default 120.",
            },
            "datasource": DATASOURCE,
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    timeout=20,
)
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
    target = await data_source(ctx, DataSource.Kind.PROMETHEUS, datasource)
    if target is None:
        return not_configured("PROMETHEUS_URL", "Prometheus")
    if not query.strip():
        raise ToolError("query must not be empty")
    api = "/api/v1/"
    if start is None:
        params = {"query": query}
        at = _time(time, "time")
        if at is not None:
            params["time"] = at.timestamp()
        response = await _get("Prometheus", target, api + "query", params)
    else:
        now = timezone.now()
        begin, finish = _time(start, "start", now=now), _time(end, "end", now, now=now)
        try:
            step_seconds = plan_range(begin, finish, step, min(max(int(max_points), 10), MAX_POINTS))
        except TimeParseError as exc:
            raise ToolError(f"step: {exc}") from None
        # Anchor the grid on `end` so the newest point is the one asked for, not up to a step before it.
        begin = finish - dt.timedelta(
            seconds=step_seconds * ((finish - begin).total_seconds() // step_seconds)
        )
        params = {"query": query, "start": begin.timestamp(), "end": finish.timestamp(), "step": step_seconds}
        response = await _get("Prometheus", target, api + "query_range", params)
    if response.status_code != 200:
        raise _backend_error("Prometheus", response)
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


# --- LogQL -------------------------------------------------------------------------------------


def _ns(value: dt.datetime) -> int:
    return int(value.timestamp() * 1_000_000_000)


def _from_ns(value) -> str:
    return iso(dt.datetime.fromtimestamp(int(value) / 1_000_000_000, dt.UTC))


@tool(
    "query_logql",
    "Run a LogQL query against Loki (/loki/api/v1/query_range). Log queries return streams (labels "
    "and [time, line] entries, lines cut at 500 characters); metric queries return series like "
    "query_promql. Default window: the last hour.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": 'LogQL, e.g. {service="checkout"} |= "error".'},
            "start": {"type": "string", "description": f"Default now-1h. {TIME_HELP}."},
            "end": {"type": "string", "description": f"Default now. {TIME_HELP}."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LOG_LINES,
                "description": "Default 100.",
            },
            "direction": {
                "type": "string",
                "enum": ["backward", "forward"],
                "description": "Default backward.",
            },
            "datasource": DATASOURCE,
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    timeout=20,
)
async def query_logql(
    ctx: ToolContext,
    query: str,
    start: str | None = None,
    end: str | None = None,
    limit: int = 100,
    direction: str = "backward",
    datasource: str | None = None,
) -> dict:
    target = await data_source(ctx, DataSource.Kind.LOKI, datasource)
    if target is None:
        return not_configured("LOKI_URL", "Loki")
    if direction not in ("backward", "forward"):
        raise ToolError("direction must be 'backward' (newest first) or 'forward'")
    now = timezone.now()
    finish = _time(end, "end", now, now=now)
    begin = _time(start, "start", finish - dt.timedelta(hours=1), now=now)
    limit = min(max(int(limit), 1), MAX_LOG_LINES)
    params = {"query": query, "start": _ns(begin), "end": _ns(finish), "limit": limit, "direction": direction}
    response = await _get("Loki", target, "/loki/api/v1/query_range", params)
    if response.status_code != 200:
        raise _backend_error("Loki", response)
    data = response.json()["data"]
    answer: dict = {"status": "ok", "datasource": target.name, "query": query}
    answer.update(start=iso(begin), end=iso(finish))
    answer["result_type"] = data["resultType"]
    if data["resultType"] == "streams":
        streams, lines = [], 0
        for stream in data["result"]:
            entries = [[_from_ns(ts), line[:MAX_LINE_CHARS]] for ts, line in stream.get("values", [])]
            entries = entries[: max(limit - lines, 0)]
            lines += len(entries)
            if entries:
                streams.append({"labels": stream.get("stream", {}), "entries": entries})
        answer.update(streams=streams, lines=lines, limit_reached=lines >= limit)
    else:
        answer["series"] = summarise_matrix(data["result"])
    return answer


# --- TraceQL -----------------------------------------------------------------------------------


def _attributes(raw: list[dict] | None) -> dict:
    values = {}
    for item in raw or []:
        value = item.get("value", {})
        values[item.get("key")] = next(iter(value.values()), None) if isinstance(value, dict) else value
    return values


def summarise_trace(body: dict) -> dict:
    """Spans of an OTLP-JSON trace (Tempo's `batches` or `resourceSpans`), earliest first."""
    trace = body.get("trace", body)
    spans = []
    for batch in trace.get("batches") or trace.get("resourceSpans") or []:
        service = _attributes(batch.get("resource", {}).get("attributes")).get("service.name")
        for scope in batch.get("scopeSpans") or batch.get("instrumentationLibrarySpans") or []:
            for span in scope.get("spans", []):
                start_ns, end_ns = int(span.get("startTimeUnixNano", 0)), int(span.get("endTimeUnixNano", 0))
                status = span.get("status", {}).get("code", "STATUS_CODE_UNSET")
                spans.append(
                    {
                        "span_id": span.get("spanId"),
                        "parent_span_id": span.get("parentSpanId") or None,
                        "service": service,
                        "name": span.get("name"),
                        "start": _from_ns(start_ns),
                        "duration_ms": round((end_ns - start_ns) / 1_000_000, 3),
                        "error": status in ("STATUS_CODE_ERROR", 2),
                        "_start_ns": start_ns,
                    }
                )
    spans.sort(key=lambda s: s.pop("_start_ns"))
    return {"spans": spans[:MAX_SPANS], "span_total": len(spans), "errors": sum(s["error"] for s in spans)}


@tool(
    "query_traceql",
    "Search traces in Tempo with TraceQL (/api/search), or fetch one trace by id (its spans with "
    "service, name, duration and error flag). Give either query or trace_id.",
    {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": 'TraceQL, e.g. {resource.service.name="checkout" && status=error}.',
            },
            "trace_id": {"type": "string", "description": "A trace id (hex) to fetch instead of searching."},
            "start": {"type": "string", "description": f"Search window start (default now-1h). {TIME_HELP}."},
            "end": {"type": "string", "description": f"Search window end (default now). {TIME_HELP}."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_TRACES, "description": "Default 20."},
            "datasource": DATASOURCE,
        },
        "additionalProperties": False,
    },
    timeout=20,
)
async def query_traceql(
    ctx: ToolContext,
    query: str | None = None,
    trace_id: str | None = None,
    start: str | None = None,
    end: str | None = None,
    limit: int = 20,
    datasource: str | None = None,
) -> dict:
    target = await data_source(ctx, DataSource.Kind.TEMPO, datasource)
    if target is None:
        return not_configured("TEMPO_URL", "Tempo")
    if bool(query) == bool(trace_id):
        raise ToolError("give exactly one of query (to search) or trace_id (to fetch a trace)")
    if trace_id:
        if not all(c in "0123456789abcdefABCDEF" for c in trace_id) or len(trace_id) > 32:
            raise ToolError(f"trace_id must be up to 32 hex digits, not {trace_id!r}")
        response = await _get("Tempo", target, f"/api/traces/{trace_id}", {})
        if response.status_code != 200:
            raise _backend_error("Tempo", response)
        return {"status": "ok", "trace_id": trace_id, **summarise_trace(response.json())}
    now = timezone.now()
    finish = _time(end, "end", now, now=now)
    begin = _time(start, "start", finish - dt.timedelta(hours=1), now=now)
    limit = min(max(int(limit), 1), MAX_TRACES)
    params = {"q": query, "start": int(begin.timestamp()), "end": int(finish.timestamp()), "limit": limit}
    response = await _get("Tempo", target, "/api/search", params)
    if response.status_code != 200:
        raise _backend_error("Tempo", response)
    traces = []
    for trace in response.json().get("traces", [])[:limit]:
        matched = sum(len(s.get("spans", [])) for s in trace.get("spanSets") or [trace.get("spanSet") or {}])
        traces.append(
            {
                "trace_id": trace.get("traceID"),
                "root_service": trace.get("rootServiceName"),
                "root_name": trace.get("rootTraceName"),
                "start": _from_ns(trace.get("startTimeUnixNano", 0)),
                "duration_ms": trace.get("durationMs"),
                "matched_spans": matched,
            }
        )
    return {"status": "ok", "query": query, "start": iso(begin), "end": iso(finish), "traces": traces}
