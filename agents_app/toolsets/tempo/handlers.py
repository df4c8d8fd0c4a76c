"""The handler of `query_traceql`: a TraceQL search, or one trace's spans, from Tempo's HTTP API."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from agents_app.toolsets.backends import (
    backend_error,
    data_source,
    from_ns,
    get,
    not_configured,
    time_argument,
)
from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.tempo.manifest import MAX_TRACES, QUERY_TRACEQL
from ops_app.core.timeutil import iso

MAX_SPANS = 100


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
                        "start": from_ns(start_ns),
                        "duration_ms": round((end_ns - start_ns) / 1_000_000, 3),
                        "error": status in ("STATUS_CODE_ERROR", 2),
                        "_start_ns": start_ns,
                    }
                )
    spans.sort(key=lambda s: s.pop("_start_ns"))
    return {"spans": spans[:MAX_SPANS], "span_total": len(spans), "errors": sum(s["error"] for s in spans)}


async def query_traceql(
    ctx: ToolContext,
    query: str | None = None,
    trace_id: str | None = None,
    start: str | None = None,
    end: str | None = None,
    limit: int = 20,
    datasource: str | None = None,
) -> dict:
    target = await data_source(ctx, QUERY_TRACEQL.datasource, datasource)
    if target is None:
        return not_configured("TEMPO_URL", "Tempo")
    if bool(query) == bool(trace_id):
        raise ToolError("give exactly one of query (to search) or trace_id (to fetch a trace)")
    if trace_id:
        if not all(c in "0123456789abcdefABCDEF" for c in trace_id) or len(trace_id) > 32:
            raise ToolError(f"trace_id must be up to 32 hex digits, not {trace_id!r}")
        response = await get("Tempo", target, f"/api/traces/{trace_id}", {})
        if response.status_code != 200:
            raise backend_error("Tempo", response)
        return {"status": "ok", "trace_id": trace_id, **summarise_trace(response.json())}
    now = timezone.now()
    finish = time_argument(end, "end", now, now=now)
    begin = time_argument(start, "start", finish - dt.timedelta(hours=1), now=now)
    limit = min(max(int(limit), 1), MAX_TRACES)
    params = {"q": query, "start": int(begin.timestamp()), "end": int(finish.timestamp()), "limit": limit}
    response = await get("Tempo", target, "/api/search", params)
    if response.status_code != 200:
        raise backend_error("Tempo", response)
    traces = []
    for trace in response.json().get("traces", [])[:limit]:
        matched = sum(len(s.get("spans", [])) for s in trace.get("spanSets") or [trace.get("spanSet") or {}])
        traces.append(
            {
                "trace_id": trace.get("traceID"),
                "root_service": trace.get("rootServiceName"),
                "root_name": trace.get("rootTraceName"),
                "start": from_ns(trace.get("startTimeUnixNano", 0)),
                "duration_ms": trace.get("durationMs"),
                "matched_spans": matched,
            }
        )
    return {"status": "ok", "query": query, "start": iso(begin), "end": iso(finish), "traces": traces}
