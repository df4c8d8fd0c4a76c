"""PagerDuty's REST API v2 for write-back (docs/alerts.md, "Writing findings back"): a note on an
incident, acknowledge, resolve and snooze. Calls authenticate with the source's REST API key
(`Authorization: Token token=…`) and name the user they act as in `From` (the source's e-mail);
failures raise `SourceAPIError` (ops_app.alert_sources.rest)."""

from __future__ import annotations

from urllib.parse import quote

from ops_app.alert_sources.rest import SourceAPIError, base_of, send
from ops_app.models import AlertSource

ACCEPT = "application/vnd.pagerduty+json;version=2"
NOTE_LIMIT = 25_000  # characters PagerDuty keeps of a note


def _headers(source: AlertSource) -> dict[str, str]:
    if not source.from_email:
        raise SourceAPIError("NoFromEmail", transient=False)
    return {
        "Authorization": f"Token token={source.api_key}",
        "Accept": ACCEPT,
        "From": source.from_email,
        "Content-Type": "application/json",
    }


def _incident_url(source: AlertSource, incident_id: str, tail: str = "") -> str:
    return f"{base_of(source)}/incidents/{quote(incident_id, safe='')}{tail}"


async def add_note(source: AlertSource, incident_id: str, content: str) -> str:
    """A note on the incident's timeline; returns the note's id."""
    body = {"note": {"content": content[:NOTE_LIMIT]}}
    answer = await send(
        "POST", _incident_url(source, incident_id, "/notes"), headers=_headers(source), body=body
    )
    return str((answer.get("note") or {}).get("id", ""))


async def _set_status(source: AlertSource, incident_id: str, status: str) -> None:
    body = {"incident": {"type": "incident_reference", "status": status}}
    await send("PUT", _incident_url(source, incident_id), headers=_headers(source), body=body)


async def acknowledge(source: AlertSource, incident_id: str) -> None:
    await _set_status(source, incident_id, "acknowledged")


async def resolve(source: AlertSource, incident_id: str) -> None:
    await _set_status(source, incident_id, "resolved")


async def snooze(source: AlertSource, incident_id: str, seconds: int) -> None:
    """Snooze an acknowledged incident: PagerDuty re-triggers it after `seconds`."""
    await send(
        "POST",
        _incident_url(source, incident_id, "/snooze"),
        headers=_headers(source),
        body={"duration": seconds},
    )
