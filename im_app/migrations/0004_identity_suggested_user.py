"""A platform's word about a sender (Slack's profile e-mail) becomes a suggestion that needs a
confirmation (docs/im.md, "linking senders"); and no sender stays linked to platform staff."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def unlink_platform_staff(apps, schema_editor):
    identities = apps.get_model("im_app", "IMIdentity")
    identities.objects.filter(user__is_superuser=True).update(user=None, linked_at=None)


class Migration(migrations.Migration):
    dependencies = [
        ("im_app", "0003_verbose_names"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="imidentity",
            name="suggested_user",
            field=models.ForeignKey(
                blank=True,
                help_text=(
                    "The user whose e-mail the platform gives for this sender. Not linked until that "
                    "user confirms from the web, or an org admin confirms it here."
                ),
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
                verbose_name="suggested user",
            ),
        ),
        migrations.RunPython(unlink_platform_staff, migrations.RunPython.noop),
    ]
