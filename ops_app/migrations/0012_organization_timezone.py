"""The organization's time zone: the clock new schedules run on (docs/schedules.md)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ops_app", "0011_mcp_servers"),
    ]

    operations = [
        migrations.AddField(
            model_name="organization",
            name="timezone",
            field=models.CharField(
                default="UTC",
                help_text="IANA zone the organization works in (e.g. Europe/Madrid): new schedules run on its clock.",
                max_length=64,
            ),
        ),
    ]
