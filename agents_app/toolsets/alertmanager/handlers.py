"""The handler of `create_silence` (Alertmanager API v2), and its account for the reviewer: how far
a silence reaches follows from its matchers (one machine, one cluster, or the whole tenant)."""

from __future__ import annotations

import datetime as dt

import httpx

from agents_app.toolsets.alertmanager.manifest import CREATE_SILENCE
from agents_app.toolsets.contract import ToolContext, ToolError
from ops_app.core.egress import EgressRefused
from ops_app.integrations import datasources

# Labels whose equality matcher pins a silence to one machine.
HOST_LABELS = {"instance", "host", "hostname", "device", "node"}


def _matcher_text(matcher: dict) -> str:
    operator = ("=~" if matcher.get("isRegex") else "=") if matcher.get("isEqual", True) else "!="
    if not matcher.get("isEqual", True) and matcher.get("isRegex"):
        operator = "!~"
    return f'{matcher["name"]}{operator}"{matcher["value"]}"'


def describe_create_silence(arguments: dict) -> dict:
    matchers = arguments.get("matchers") or []
    exact = [m for m in matchers if not m.get("isRegex") and m.get("isEqual", True)]
    if any(m["name"] in HOST_LABELS for m in exact):
        radius = "single_device"
    elif exact and len(exact) == len(matchers) and any(m["name"] != "alertname" for m in exact):
        radius = "cluster"
    else:
        radius = "tenant_wide"
    target = "{" + ", ".join(_matcher_text(m) for m in matchers) + "}"
    minutes = arguments.get("duration_minutes")
    if arguments.get("datasource"):
        target = f"{arguments['datasource']}: {target}"
    return {"action": f"silence alerts for {minutes} min", "target": target, "blast_radius": radius}


async def create_silence(
    ctx: ToolContext, matchers: list, duration_minutes: int, reason: str, datasource: str | None = None
) -> dict:
    try:
        target = await datasources.aendpoint(ctx.organization_id, CREATE_SILENCE.datasource, datasource)
    except datasources.UnknownDataSource as exc:
        raise ToolError(str(exc)) from None
    if target is None:
        raise ToolError(
            "Alertmanager is not configured for this organization "
            "(no Alertmanager data source, and ALERTMANAGER_URL is unset)."
        )
    starts = dt.datetime.now(dt.UTC)
    ends = starts + dt.timedelta(minutes=duration_minutes)
    body = {
        "matchers": [
            {
                "name": m["name"],
                "value": m["value"],
                "isRegex": bool(m.get("isRegex", False)),
                "isEqual": bool(m.get("isEqual", True)),
            }
            for m in matchers
        ],
        "startsAt": starts.isoformat(),
        "endsAt": ends.isoformat(),
        "createdBy": f"ongrid/{ctx.persona_name}"[:100],
        "comment": reason[:1000],
    }
    try:
        async with target.client() as client:
            response = await client.post(f"{target.url}/api/v2/silences", json=body)
    except httpx.HTTPError as error:
        raise ToolError(f"Alertmanager is unreachable: {type(error).__name__}: {error}") from None
    except EgressRefused as refused:
        raise ToolError(
            f"Alertmanager at {target.url} is refused by the egress policy: {refused.reason}"
        ) from None
    if response.status_code >= 400:
        raise ToolError(f"Alertmanager refused the silence ({response.status_code}): {response.text[:500]}")
    silence_id = response.json().get("silenceID", "")
    return {
        "silence_id": silence_id,
        "datasource": target.name,
        "starts_at": body["startsAt"],
        "ends_at": body["endsAt"],
    }
