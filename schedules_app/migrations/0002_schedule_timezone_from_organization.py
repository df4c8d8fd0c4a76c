"""A schedule's time zone may be left blank: it then takes its organization's (ops_app 0012)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ops_app", "0012_organization_timezone"),
        ("schedules_app", "0001_initial"),
    ]

    operations = [
        migrations.AlterField(
            model_name="schedule",
            name="timezone",
            field=models.CharField(
                blank=True,
                help_text='e.g. "Europe/Madrid". Leave blank for the organization\'s time zone (filled in on save).',
                max_length=64,
            ),
        ),
    ]
