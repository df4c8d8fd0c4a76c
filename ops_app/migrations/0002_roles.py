"""Creates the three role groups. Their permissions are synchronised by ops_app.tenancy.roles after every
migrate, because later apps add models (and so permissions) this migration cannot know."""

from django.db import migrations

ROLE_NAMES = ("member", "auditor", "org-admin")


def create_roles(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLE_NAMES:
        Group.objects.get_or_create(name=name)


def drop_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLE_NAMES).delete()


class Migration(migrations.Migration):
    dependencies = [("ops_app", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(create_roles, drop_roles)]
