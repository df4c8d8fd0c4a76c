"""Opsgenie's Alert API v2 for write-back (docs/alerts.md): a note on an alert, acknowledge,
close (resolve) and snooze, on the US or EU base URL by the source's region. Calls authenticate
with the source's API integration key (`Authorization: GenieKey …`) and address the alert by its
id (`identifierType=id`). Opsgenie accepts these with 202 and processes them asynchronously;
failures raise `SourceAPIError` (ops_app.alert_sources.rest)."""

from __future__ import annotations

import datetime as dt
from urllib.parse import quote

from ops_app.alert_sources.rest import base_of, send
from ops_app.models import AlertSource

NOTE_LIMIT = 25_000  # characters Opsgenie keeps of a note
ACTOR = "Ongrid"  # the `user` and `source` Opsgenie shows on the alert's activity log


async def _post(source: AlertSource, alert_id: str, action: str, body: dict) -> str:
    """POST one action; returns Opsgenie's request id."""
    url = f"{base_of(source)}/v2/alerts/{quote(alert_id, safe='')}/{action}"
    headers = {"Authorization": f"GenieKey {source.api_key}", "Content-Type": "application/json"}
    answer = await send(
        "POST",
        url,
        headers=headers,
        body={"user": ACTOR, "source": ACTOR, **body},
        params={"identifierType": "id"},
    )
    return str(answer.get("requestId", ""))


async def add_note(source: AlertSource, alert_id: str, note: str) -> str:
    return await _post(source, alert_id, "notes", {"note": note[:NOTE_LIMIT]})


async def acknowledge(source: AlertSource, alert_id: str) -> str:
    return await _post(source, alert_id, "acknowledge", {"note": "Acknowledged in Ongrid"})


async def resolve(source: AlertSource, alert_id: str) -> str:
    """Opsgenie calls it closing the alert."""
    return await _post(source, alert_id, "close", {"note": "Resolved in Ongrid"})


async def snooze(source: AlertSource, alert_id: str, seconds: int, note: str = "") -> str:
    end = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)
    body = {"endTime": end.isoformat(timespec="seconds").replace("+00:00", "Z")}
    if note:
        body["note"] = note[:NOTE_LIMIT]
    return await _post(source, alert_id, "snooze", body)
