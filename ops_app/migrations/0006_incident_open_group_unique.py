"""At most one open Alertmanager incident per group key and organization.

Concurrent deliveries could open several incidents for one group before this constraint. They are
merged first, losing nothing: the oldest open incident keeps the group, the alerts of the others
move to it, and the others are closed as resolved (their rows, notes and history stay).
"""

from django.db import migrations, models
from django.db.models import Count, Q
from django.utils import timezone


def merge_open_twins(apps, schema_editor):
    Incident = apps.get_model("ops_app", "Incident")
    Alert = apps.get_model("ops_app", "Alert")
    open_alertmanager = Incident.objects.filter(source="alertmanager").exclude(status="resolved")
    groups = (
        open_alertmanager.values("organization_id", "fingerprint")
        .annotate(total=Count("id"))
        .filter(total__gt=1)
    )
    for group in groups:
        twins = list(
            open_alertmanager.filter(
                organization_id=group["organization_id"], fingerprint=group["fingerprint"]
            ).order_by("started_at", "pk")
        )
        keeper, others = twins[0], twins[1:]
        Alert.objects.filter(incident__in=others).update(incident=keeper)
        Incident.objects.filter(pk__in=[twin.pk for twin in others]).update(
            status="resolved", resolved_at=timezone.now()
        )


class Migration(migrations.Migration):
    dependencies = [
        ("ops_app", "0005_knowledge"),
    ]

    operations = [
        migrations.RunPython(merge_open_twins, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="incident",
            constraint=models.UniqueConstraint(
                condition=Q(source="alertmanager") & ~Q(status="resolved"),
                fields=("organization", "fingerprint"),
                name="incident_org_open_group_uniq",
                violation_error_message="This Alertmanager group already has an open incident.",
            ),
        ),
    ]
