"""Secrets at rest: device credentials encrypted, receiver and API tokens stored as hashes.

- Device SSH keys and passwords become encrypted columns; their plain values are encrypted here
  (reverse: decrypted back).
- Alertmanager receiver tokens are replaced by their SHA-256, so existing Alertmanager configs keep
  working. A hash cannot be reversed: migrating back issues new tokens (shown in the admin).
- API tokens move from DRF's authtoken table (plain keys) to ops_app.ApiToken (hashes); the old
  table is dropped so no plain key stays behind. Existing clients keep their tokens.
"""

import hashlib
import secrets

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import ops_app.core.encryption

DEVICE_SECRETS = ("ssh_private_key", "ssh_password")


def _flush_deferred_checks(schema_editor):
    """PostgreSQL refuses to ALTER a table with pending deferred-constraint events in the same
    transaction: check them now, so the schema changes after a data step can run."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        schema_editor.execute("SET CONSTRAINTS ALL DEFERRED")


def encrypt_device_secrets(apps, schema_editor):
    device = apps.get_model("ops_app", "Device")
    for column in DEVICE_SECRETS:
        ops_app.core.encryption.rotate_column(device, column, using=schema_editor.connection.alias)
    _flush_deferred_checks(schema_editor)


def decrypt_device_secrets(apps, schema_editor):
    device = apps.get_model("ops_app", "Device")
    for column in DEVICE_SECRETS:
        ops_app.core.encryption.decrypt_column(device, column, using=schema_editor.connection.alias)
    _flush_deferred_checks(schema_editor)


def hash_receiver_tokens(apps, schema_editor):
    receiver = apps.get_model("ops_app", "AlertmanagerReceiver")
    for row in receiver.objects.using(schema_editor.connection.alias).exclude(token=None):
        row.token_hash = hashlib.sha256(row.token.encode()).hexdigest()
        row.token = None
        row.save(update_fields=["token_hash", "token"])
    _flush_deferred_checks(schema_editor)


def issue_new_receiver_tokens(apps, schema_editor):
    receiver = apps.get_model("ops_app", "AlertmanagerReceiver")
    for row in receiver.objects.using(schema_editor.connection.alias).all():
        row.token = secrets.token_urlsafe(32)
        row.save(update_fields=["token"])
    _flush_deferred_checks(schema_editor)


def import_drf_tokens(apps, schema_editor):
    """Hash the keys of rest_framework.authtoken (when it was installed) into ApiToken, then drop
    its table and forget its migrations."""
    connection = schema_editor.connection
    if "authtoken_token" not in connection.introspection.table_names():
        return
    api_token = apps.get_model("ops_app", "ApiToken")
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quote('key')}, {quote('user_id')}, {quote('created')} FROM authtoken_token")
        rows = cursor.fetchall()
    api_token.objects.using(connection.alias).bulk_create(
        api_token(
            user_id=user_id,
            name="imported DRF token",
            key_hash=hashlib.sha256(key.encode()).hexdigest(),
            hint=key[:8],
            created_at=created,
        )
        for key, user_id, created in rows
    )
    schema_editor.execute(f"DROP TABLE {quote('authtoken_token')}")
    schema_editor.execute("DELETE FROM django_migrations WHERE app = %s", ["authtoken"])


class Migration(migrations.Migration):
    dependencies = [
        ("ops_app", "0006_incident_open_group_unique"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="device",
            name="ssh_private_key",
            field=ops_app.core.encryption.EncryptedTextField(
                blank=True, help_text="PEM/OpenSSH private key; encrypted at rest, never logged."
            ),
        ),
        migrations.AlterField(
            model_name="device",
            name="ssh_password",
            field=ops_app.core.encryption.EncryptedTextField(
                blank=True, help_text="Used when no key is set; encrypted at rest."
            ),
        ),
        migrations.RunPython(encrypt_device_secrets, decrypt_device_secrets),
        migrations.AddField(
            model_name="alertmanagerreceiver",
            name="token_hash",
            field=models.CharField(editable=False, max_length=64, null=True),
        ),
        migrations.AlterField(
            model_name="alertmanagerreceiver",
            name="token",
            field=models.CharField(editable=False, max_length=64, null=True),
        ),
        migrations.RunPython(hash_receiver_tokens, issue_new_receiver_tokens),
        migrations.RemoveField(model_name="alertmanagerreceiver", name="token"),
        migrations.AlterField(
            model_name="alertmanagerreceiver",
            name="token_hash",
            field=models.CharField(editable=False, max_length=64, unique=True),
        ),
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(blank=True, help_text="What the token is for.", max_length=100)),
                ("key_hash", models.CharField(editable=False, max_length=64, unique=True)),
                (
                    "hint",
                    models.CharField(
                        editable=False, help_text="The token's first characters.", max_length=12
                    ),
                ),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ("last_used_at", models.DateTimeField(blank=True, editable=False, null=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_tokens",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={"verbose_name": "API token", "ordering": ["-created_at"]},
        ),
        migrations.RunPython(import_drf_tokens, migrations.RunPython.noop),
    ]
