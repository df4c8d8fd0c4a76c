"""The text that hands an incident and its latest report to a chat's coordinator."""

from __future__ import annotations

import json

from incidents_app.changes import for_brief, what_changed
from incidents_app.models import current_report, newest_first
from ops_app.models import Incident


def incident_context(incident: Incident, question: str = "") -> str:
    latest = newest_first(incident).first()
    facts = {
        "incident_id": incident.pk,
        "title": incident.title,
        "severity": incident.severity,
        "status": incident.status,
        "started_at": str(incident.started_at),
        "affected_services": incident.affected_services,
        "device": incident.device.name if incident.device_id else None,
    }
    parts = [
        (question.strip() or f"Help me with incident #{incident.pk}: {incident.title}."),
        "",
        "Incident: " + json.dumps(facts, default=str),
    ]
    current = current_report(incident)
    if current is not None:
        parts.append(
            f"Current report (investigation {current.pk}): " + json.dumps(current.report, default=str)[:8000]
        )
    if latest is not None and latest != current:
        found = {"error": latest.error[:500], "partial_findings": latest.partial_findings[:2000]}
        parts.append(f"Latest investigation ({latest.status}): " + json.dumps(found, default=str))
    changes = for_brief(what_changed(incident))
    if changes:
        parts.append("What changed around the start: " + json.dumps(changes, default=str)[:4000])
    return "\n".join(parts)
