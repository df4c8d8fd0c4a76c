"""Example prompts for an empty chat, built from the organization's own estate: a question about
one of its open incidents and about one of its real devices reads better than a generic hint.
Each prompt is one the organization's tools can answer: a device question names a device Ongrid
can reach (never the demo's documentation addresses), and a metrics question appears only where
a Prometheus data source is configured."""

from __future__ import annotations

from django.db.models import Case, IntegerField, Value, When
from django.utils.translation import gettext, gettext_lazy

from ops_app.estate.devices import is_documentation_address, local_devices_enabled
from ops_app.integrations import datasources
from ops_app.models import DataSource, Device, Incident

GENERIC = [
    gettext_lazy("What is firing right now, and what should I look at first?"),
    gettext_lazy("Summarise the incidents of the last 24 hours."),
]
# How many devices are looked at for one Ongrid can reach (the demo's come first by name otherwise).
DEVICES_LOOKED_AT = 20


def example_prompts(organization_id: int | None, limit: int = 4) -> list[str]:
    """At most `limit` prompts: the newest open incident, a reachable device, then generic ones."""
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
            asked = gettext("What is going on with incident #%(id)s (%(title)s)?")
            prompts.append(asked % {"id": incident.pk, "title": incident.title})
        device = reachable_device(organization_id)
        if device is not None:
            named = {"device": device.name}
            prompts.append(gettext("How full are the disks on %(device)s, and what is growing?") % named)
            if datasources.configured(organization_id, DataSource.Kind.PROMETHEUS):
                prompts.append(
                    gettext("Is anything unusual in the last hour of metrics for %(device)s?") % named
                )
            else:
                prompts.append(gettext("What is using the CPU and memory on %(device)s right now?") % named)
    prompts.extend(str(prompt) for prompt in GENERIC)
    return prompts[:limit]


def reachable_device(organization_id: int) -> Device | None:
    """A device the host tools can run on: the Ongrid host first where allowed, then by name."""
    devices = (
        Device.objects.filter(organization_id=organization_id)
        .annotate(
            rank=Case(
                When(transport=Device.Transport.LOCAL, then=Value(0)),
                default=Value(1),
                output_field=IntegerField(),
            )
        )
        .order_by("rank", "name")
        .only("name", "address", "transport")
    )
    for device in devices[:DEVICES_LOOKED_AT]:
        if device.transport == Device.Transport.LOCAL:
            if local_devices_enabled():
                return device
        elif not is_documentation_address(device.address):
            return device
    return None
