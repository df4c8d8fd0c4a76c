"""Example prompts for an empty chat, built from the organization's own estate: a question about
one of its open incidents and about one of its real devices reads better than a generic hint."""

from __future__ import annotations

from ops_app.models import Device, Incident

GENERIC = [
    "What is firing right now, and what should I look at first?",
    "Summarise the incidents of the last 24 hours.",
]


def example_prompts(organization_id: int | None, limit: int = 4) -> list[str]:
    """At most `limit` prompts: the newest open incident, a device, then generic ones."""
    prompts: list[str] = []
    if organization_id is not None:
        incident = (
            Incident.objects.filter(organization_id=organization_id)
            .exclude(status=Incident.Status.RESOLVED)
            .order_by("-started_at")
            .only("pk", "title")
            .first()
        )
        if incident is not None:
            prompts.append(f"What is going on with incident #{incident.pk} ({incident.title})?")
        device = Device.objects.filter(organization_id=organization_id).order_by("name").only("name").first()
        if device is not None:
            prompts.append(f"How full are the disks on {device.name}, and what is growing?")
            prompts.append(f"Is anything unusual in the last hour of metrics for {device.name}?")
    prompts.extend(GENERIC)
    return prompts[:limit]
