"""Grafana's HTTP API for write-back (docs/alerts.md): an annotation with the findings (on the
alert's dashboard panel when known, else an organization annotation) and a silence in Grafana
Alerting's own Alertmanager. Calls authenticate with a service account token as a bearer token
on the source's API base URL (the Grafana's own URL); failures raise `SourceAPIError`."""

from __future__ import annotations

import datetime as dt

from ops_app.alert_sources.rest import base_of, send
from ops_app.models import AlertSource

SILENCES = "/api/alertmanager/grafana/api/v2/silences"
TEXT_LIMIT = 20_000


def _headers(source: AlertSource) -> dict[str, str]:
    return {"Authorization": f"Bearer {source.api_key}", "Content-Type": "application/json"}


async def annotate(
    source: AlertSource,
    text: str,
    tags: list[str],
    *,
    dashboard_uid: str = "",
    panel_id: int | None = None,
    at: dt.datetime | None = None,
) -> int:
    """An annotation at `at` (now by default); returns its id."""
    moment = at or dt.datetime.now(dt.UTC)
    body: dict = {"time": int(moment.timestamp() * 1000), "tags": tags, "text": text[:TEXT_LIMIT]}
    if dashboard_uid:
        body["dashboardUID"] = dashboard_uid
        if panel_id is not None:
            body["panelId"] = panel_id
    answer = await send("POST", f"{base_of(source)}/api/annotations", headers=_headers(source), body=body)
    return int(answer.get("id") or 0)


async def silence(
    source: AlertSource, matchers: list[dict], minutes: int, comment: str, created_by: str
) -> str:
    """A silence of the alerts matching every (equality) matcher for `minutes`; its id."""
    starts = dt.datetime.now(dt.UTC)
    body = {
        "matchers": [
            {"name": m["name"], "value": m["value"], "isRegex": False, "isEqual": True} for m in matchers
        ],
        "startsAt": starts.isoformat(),
        "endsAt": (starts + dt.timedelta(minutes=minutes)).isoformat(),
        "createdBy": created_by[:100],
        "comment": comment[:1000],
    }
    answer = await send("POST", f"{base_of(source)}{SILENCES}", headers=_headers(source), body=body)
    return str(answer.get("silenceID", ""))
