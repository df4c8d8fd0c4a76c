"""What the telemetry toolsets (prometheus, loki, tempo) share: the organization's data source of
a kind, a GET against it, the backend's own error message, and series summaries.

A backend that is not configured gives a "not configured" result (the LLM should stop trying);
a backend that refuses the query gives a ToolError carrying the backend's own message (the LLM
should correct the query); one the egress policy refuses (docs/security.md) a ToolError saying
so. Results are summarised: a range query never returns more than the point budget per series
(docs/estate.md).
"""

from __future__ import annotations

import datetime as dt
import math

import httpx

from agents_app.toolsets.contract import ToolContext, ToolError
from ops_app.core.egress import EgressRefused
from ops_app.core.timeutil import TimeParseError, iso, parse_time
from ops_app.integrations import datasources
from ops_app.integrations.datasources import Endpoint

MAX_SERIES = 20
DATASOURCE = {
    "type": "string",
    "description": "A data source by name (default: the default one of its kind).",
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


def time_argument(value, name: str, default: dt.datetime | None = None, now: dt.datetime | None = None):
    """Parse a tool's time argument; `now` pins relative times of one call to the same instant."""
    try:
        return parse_time(value, now) or default
    except TimeParseError as exc:
        raise ToolError(f"{name}: {exc}") from None


async def get(backend: str, target: Endpoint, path: str, params: dict) -> httpx.Response:
    """GET with the data source's timeout and credentials; transport failures become ToolErrors."""
    url = target.url + path
    try:
        async with target.client() as client:
            return await client.get(url, params=params)
    except httpx.TimeoutException:
        raise ToolError(f"{backend} did not answer within {target.timeout:g} s ({url})") from None
    except httpx.HTTPError as exc:
        raise ToolError(f"{backend} is unreachable at {url}: {exc}") from None
    except EgressRefused as refused:
        raise ToolError(
            f"{backend} at {target.url} is refused by the egress policy: {refused.reason}"
        ) from None


def backend_error(backend: str, response: httpx.Response) -> ToolError:
    try:
        body = response.json()
        message = body.get("error") or body.get("message") or response.text
        kind = body.get("errorType")
    except ValueError:
        message, kind = response.text, None
    message = (message or "").strip()[:1000] or response.reason_phrase
    prefix = f"{backend} returned HTTP {response.status_code}" + (f" ({kind})" if kind else "")
    return ToolError(f"{prefix}: {message}")


def number(raw) -> float | None:
    """Prometheus sends sample values as strings; NaN and ±Inf become null (valid JSON)."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def summarise_matrix(result: list[dict]) -> list[dict]:
    series = []
    for item in result[:MAX_SERIES]:
        points = [[int(float(ts)), number(v)] for ts, v in item.get("values", [])]
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


def from_ns(value) -> str:
    return iso(dt.datetime.fromtimestamp(int(value) / 1_000_000_000, dt.UTC))
