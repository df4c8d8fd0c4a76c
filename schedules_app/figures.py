"""The exact figures of a report, from database queries scoped to one organization.

The reporter persona writes the narrative around these numbers; it never computes them. Every
query filters on `organization_id` first, so a report for one tenant counts only its own rows.

Definitions (docs/schedules.md, "Report figures"):
- opened: incidents whose `started_at` is in the window; resolved: `resolved_at` in the window.
- MTTA: mean of acknowledged_at − started_at over the incidents opened in the window that were
  acknowledged; MTTR: mean of resolved_at − started_at over the incidents resolved in the window.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

from django.db.models import Count, Sum

from agents_app.models import MutatingProposal
from audit_app.costs import estimate_cost
from audit_app.models import AuditLog, LLMCall
from chat_app.models import ChatSession
from ops_app.models import Alert, ChangeEvent, Incident

TOP = 5
CHANGES_LISTED = 20


def _mean_seconds(deltas: list[dt.timedelta]) -> float | None:
    if not deltas:
        return None
    return round(sum(d.total_seconds() for d in deltas) / len(deltas), 1)


def compute(organization_id: int, start: dt.datetime, end: dt.datetime) -> dict[str, Any]:
    """Every figure of the report for [start, end), JSON-ready."""
    incidents = Incident.objects.for_organization(organization_id)
    opened = list(
        incidents.filter(started_at__gte=start, started_at__lt=end)
        .select_related("device")
        .order_by("started_at")
    )
    resolved = list(incidents.filter(resolved_at__gte=start, resolved_at__lt=end))
    mtta = _mean_seconds([i.acknowledged_at - i.started_at for i in opened if i.acknowledged_at])
    mttr = _mean_seconds([i.resolved_at - i.started_at for i in resolved])

    services = Counter(s for i in opened for s in (i.affected_services or []) if isinstance(s, str))
    devices = Counter(i.device.name for i in opened if i.device is not None)
    per_day = Counter(i.started_at.date().isoformat() for i in opened)

    noisy = (
        Alert.objects.for_organization(organization_id)
        .filter(starts_at__gte=start, starts_at__lt=end)
        .values("name")
        .annotate(n=Count("id"))
        .order_by("-n", "name")[:TOP]
    )
    changes = ChangeEvent.objects.for_organization(organization_id).filter(
        occurred_at__gte=start, occurred_at__lt=end
    )
    by_actor = changes.values("actor_name").annotate(n=Count("id")).order_by("-n", "actor_name")
    decided = MutatingProposal.objects.for_organization(organization_id).filter(
        decided_at__gte=start, decided_at__lt=end
    )
    sessions = ChatSession.objects.for_organization(organization_id).filter(
        created_at__gte=start, created_at__lt=end
    )
    calls = LLMCall.objects.for_organization(organization_id).filter(
        started_at__gte=start, started_at__lt=end
    )
    usage = calls.values("model").annotate(prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"))
    by_model = {
        row["model"]: {"prompt": row["prompt"] or 0, "completion": row["completion"] or 0} for row in usage
    }

    return {
        "window": {"start": start.isoformat(), "end": end.isoformat()},
        "incidents": {
            "opened": len(opened),
            "resolved": len(resolved),
            "mtta_seconds": mtta,
            "mttr_seconds": mttr,
            "opened_per_day": _every_day(start, end, per_day),
            "by_severity": dict(Counter(i.severity for i in opened)),
        },
        "noisiest_alert_rules": [{"name": row["name"], "alerts": row["n"]} for row in noisy],
        "top_services": [{"name": n, "incidents": c} for n, c in services.most_common(TOP)],
        "top_devices": [{"name": n, "incidents": c} for n, c in devices.most_common(TOP)],
        "changes": {
            "total": changes.count(),
            "by_actor": [{"actor": row["actor_name"] or "system", "changes": row["n"]} for row in by_actor],
            "latest": [
                {"at": c.occurred_at.isoformat(), "who": c.actor_name or "system", "what": str(c)}
                for c in changes.order_by("-occurred_at")[:CHANGES_LISTED]
            ],
        },
        "gate": {
            "approved": decided.filter(decision=MutatingProposal.Decision.APPROVE).count(),
            "rejected": decided.filter(decision=MutatingProposal.Decision.REJECT).count(),
        },
        "agents": {
            "sessions": sessions.count(),
            "tool_calls": AuditLog.objects.for_organization(organization_id)
            .filter(started_at__gte=start, started_at__lt=end)
            .count(),
            "llm_calls": calls.count(),
            "tokens": sum(m["prompt"] + m["completion"] for m in by_model.values()),
            "cost": estimate_cost(by_model),
        },
    }


def _every_day(start: dt.datetime, end: dt.datetime, counts: Counter) -> list[list]:
    """[[ISO day, count], ...] for every UTC day of the window, zeros included (the trend chart)."""
    days, day = [], start.date()
    while day < end.date() or (day == start.date() and not days):
        days.append([day.isoformat(), counts.get(day.isoformat(), 0)])
        day += dt.timedelta(days=1)
    return days


def duration(seconds: float | None) -> str:
    """ "1 h 05 min" for the page and the e-mail; "—" when there is nothing to average."""
    if seconds is None:
        return "—"
    minutes = int(round(seconds / 60))
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"
