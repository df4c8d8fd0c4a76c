"""At most one open manual incident per fingerprint and organization (a repeated inspection
problem).

Concurrent runs could open twins before this constraint. They are merged first, as
0006 did for Alertmanager groups: the oldest open incident keeps the fingerprint, the others are
closed as resolved (their rows and history stay).
"""

from django.db import migrations, models
from django.db.models import Count, Q
from django.utils import timezone


def resolve_open_twins(apps, schema_editor):
    Incident = apps.get_model("ops_app", "Incident")
    open_manual = Incident.objects.filter(source="manual").exclude(status="resolved").exclude(fingerprint="")
    groups = (
        open_manual.values("organization_id", "fingerprint").annotate(total=Count("id")).filter(total__gt=1)
    )
    for group in groups:
        twins = list(
            open_manual.filter(
                organization_id=group["organization_id"], fingerprint=group["fingerprint"]
            ).order_by("started_at", "pk")
        )
        Incident.objects.filter(pk__in=[twin.pk for twin in twins[1:]]).update(
            status="resolved", resolved_at=timezone.now()
        )


class Migration(migrations.Migration):
    dependencies = [
        ("ops_app", "0012_organization_timezone"),
    ]

    operations = [
        migrations.RunPython(resolve_open_twins, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="incident",
            constraint=models.UniqueConstraint(
                condition=Q(source="manual") & ~Q(status="resolved") & ~Q(fingerprint=""),
                fields=("organization", "fingerprint"),
                name="incident_org_open_manual_uniq",
                violation_error_message="This problem already has an open incident.",
            ),
        ),
    ]
