"""Secrets at rest (R25, R29): device credentials encrypted, issued tokens hashed, keys rotated,
tokens kept out of request logs. Raw columns are read with a cursor, past the model layer."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import urllib.request
from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django import forms
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse
from rest_framework.test import APIClient

from ongrid_site import config
from ops_app.core import encryption
from ops_app.core.log_masking import mask_secret_paths
from ops_app.models import AlertmanagerReceiver, ApiToken, ChangeEvent, Device

PASSWORD = "hunter2-device-password"
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nkey-material-XYZ\n-----END OPENSSH PRIVATE KEY-----"
KEY_A, KEY_B = Fernet.generate_key().decode(), Fernet.generate_key().decode()


def raw_rows(table: str, *columns: str) -> list[tuple]:
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(table)} ORDER BY 1")
        return cursor.fetchall()


def raw_text(table: str) -> str:
    """Every column of every row of a table, as one string."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
        return json.dumps(cursor.fetchall(), default=str)


def _payload() -> dict:
    alert = {
        "status": "firing",
        "labels": {"alertname": "DiskFull", "severity": "high"},
        "annotations": {"summary": "Disk full"},
        "startsAt": "2026-05-01T10:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "fingerprint": "d15c",
    }
    return {"version": "4", "groupKey": '{}:{alertname="DiskFull"}', "status": "firing", "alerts": [alert]}


# --- configuration ----------------------------------------------------------------------------


def test_keys_default_to_one_derived_from_secret_key():
    cfg = config.load({"SECRET_KEY": "k1"})
    assert cfg.encryption_keys_derived and len(cfg.encryption_keys) == 1
    assert cfg.encryption_keys == config.load({"SECRET_KEY": "k1"}).encryption_keys
    assert cfg.encryption_keys != config.load({"SECRET_KEY": "k2"}).encryption_keys
    Fernet(cfg.encryption_keys[0].encode())  # a valid Fernet key


def test_keys_from_the_environment_first_encrypts_and_the_derived_key_can_be_named():
    cfg = config.load({"SECRET_KEY": "k1", "ONGRID_ENCRYPTION_KEYS": f" {KEY_B} , {KEY_A},from-secret-key"})
    assert cfg.encryption_keys == (KEY_B, KEY_A, config.derive_encryption_key("k1"))
    assert not cfg.encryption_keys_derived


def test_a_malformed_key_stops_startup_without_echoing_it():
    with pytest.raises(config.ConfigError, match="entry 2 is not a Fernet key") as caught:
        config.load({"SECRET_KEY": "k", "ONGRID_ENCRYPTION_KEYS": f"{KEY_A},not-a-key-value"})
    assert "not-a-key-value" not in str(caught.value)


# --- raw columns --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_device_credentials_are_encrypted_in_the_column(org):
    device = Device.objects.create(
        organization=org, name="web-01", ssh_password=PASSWORD, ssh_private_key=PRIVATE_KEY
    )
    assert Device._meta.db_table == "ops_app_device"
    (stored_key, stored_password), *_ = raw_rows("ops_app_device", "ssh_private_key", "ssh_password")
    for stored in (stored_key, stored_password):
        assert stored.startswith(encryption.PREFIX)
    assert PASSWORD not in raw_text("ops_app_device") and "key-material-XYZ" not in raw_text("ops_app_device")
    device = Device.objects.get(pk=device.pk)
    assert (device.ssh_password, device.ssh_private_key) == (PASSWORD, PRIVATE_KEY)
    assert Device.objects.filter(ssh_password="").count() == 0  # emptiness is still queryable
    Device.objects.filter(pk=device.pk).update(ssh_password="updated-in-bulk-77")
    assert "updated-in-bulk-77" not in raw_text("ops_app_device")
    assert Device.objects.get(pk=device.pk).ssh_password == "updated-in-bulk-77"


@pytest.mark.django_db
def test_dumpdata_carries_ciphertext_and_loads_back(org):
    from django.core import serializers

    Device.objects.create(organization=org, name="web-01", ssh_password=PASSWORD)
    dumped = serializers.serialize("json", Device.objects.all())
    assert PASSWORD not in dumped and encryption.PREFIX in dumped
    (loaded,) = serializers.deserialize("json", dumped)
    assert loaded.object.ssh_password == PASSWORD


@pytest.mark.django_db
def test_receiver_token_is_stored_only_as_its_hash(org):
    receiver = AlertmanagerReceiver.objects.create(organization=org)
    token = receiver.token
    assert token.startswith("oga_") and len(token) > 40
    assert token not in raw_text("ops_app_alertmanagerreceiver")
    assert raw_rows("ops_app_alertmanagerreceiver", "token_hash") == [
        (hashlib.sha256(token.encode()).hexdigest(),)
    ]
    assert AlertmanagerReceiver.for_token(token) == receiver
    assert not hasattr(AlertmanagerReceiver.objects.get(pk=receiver.pk), "token")  # not recoverable
    assert token not in json.dumps(list(ChangeEvent.objects.values("before", "after", "summary")))


@pytest.mark.django_db
def test_api_token_is_stored_only_as_its_hash(member):
    row, token = ApiToken.issue(member, name="ci")
    assert token.startswith("ogt_") and row.hint == token[:8]
    assert token not in raw_text("ops_app_apitoken")
    assert ApiToken.for_token(token) == row and ApiToken.for_token(token + "x") is None


# --- rotation -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_rotation_moves_every_value_to_the_new_key(settings, org):
    settings.ONGRID_ENCRYPTION_KEYS = (KEY_A,)
    Device.objects.create(organization=org, name="a", ssh_password=PASSWORD, ssh_private_key=PRIVATE_KEY)
    Device.objects.create(organization=org, name="b", ssh_password="second-password-2")
    Device.objects.create(organization=org, name="c")  # nothing to encrypt
    before = raw_rows("ops_app_device", "ssh_password")

    settings.ONGRID_ENCRYPTION_KEYS = (KEY_B, KEY_A)
    out = StringIO()
    call_command("ongrid_rotate_secrets", "--batch-size", "1", stdout=out)
    assert "ops_app.Device.ssh_password: 2 stored, 2 re-encrypted, 0 already current" in out.getvalue()
    assert "ops_app.Device.ssh_private_key: 1 stored, 1 re-encrypted" in out.getvalue()
    assert raw_rows("ops_app_device", "ssh_password") != before

    out = StringIO()
    call_command("ongrid_rotate_secrets", stdout=out)  # idempotent
    assert "ops_app.Device.ssh_password: 2 stored, 0 re-encrypted, 2 already current" in out.getvalue()

    settings.ONGRID_ENCRYPTION_KEYS = (KEY_B,)
    assert Device.objects.get(name="a").ssh_private_key == PRIVATE_KEY
    assert [d.ssh_password for d in Device.objects.order_by("name")] == [PASSWORD, "second-password-2", ""]

    settings.ONGRID_ENCRYPTION_KEYS = (KEY_A,)  # the retired key alone no longer reads them
    with pytest.raises(encryption.SecretDecryptionError) as caught:
        Device.objects.get(name="a")
    assert PASSWORD not in str(caught.value)


@pytest.mark.django_db
def test_rotation_encrypts_legacy_plain_values_and_reports_undecryptable_ones(settings, org):
    device = Device.objects.create(organization=org, name="a")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE ops_app_device SET ssh_password = %s WHERE id = %s", ["plain-legacy-pw", device.pk]
        )
    assert Device.objects.get(pk=device.pk).ssh_password == "plain-legacy-pw"  # still readable
    call_command("ongrid_rotate_secrets", stdout=StringIO())
    assert "plain-legacy-pw" not in raw_text("ops_app_device")
    assert Device.objects.get(pk=device.pk).ssh_password == "plain-legacy-pw"

    settings.ONGRID_ENCRYPTION_KEYS = (KEY_B,)
    out = StringIO()
    with pytest.raises(CommandError, match="ops_app.Device.ssh_password"):
        call_command("ongrid_rotate_secrets", stdout=out)
    assert "1 undecryptable" in out.getvalue()


def test_generate_key_prints_a_usable_key():
    out = StringIO()
    call_command("ongrid_rotate_secrets", "--generate-key", stdout=out)
    Fernet(out.getvalue().strip().encode())


# --- the migration: existing plain values ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_migration_encrypts_and_hashes_existing_values_and_reverses(org, member):
    before, after = [("ops_app", "0005_knowledge")], [("ops_app", "0007_secrets_at_rest")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    old.get_model("ops_app", "Device").objects.create(
        organization_id=org.pk, name="legacy", ssh_password=PASSWORD, ssh_private_key=PRIVATE_KEY
    )
    old.get_model("ops_app", "AlertmanagerReceiver").objects.create(
        organization_id=org.pk, name="legacy", token="legacy-receiver-token-0123456789"
    )
    drf_key = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"
    with connection.cursor() as cursor:  # what rest_framework.authtoken left behind
        cursor.execute(
            'CREATE TABLE authtoken_token ("key" varchar(40) NOT NULL PRIMARY KEY, '
            "created timestamp with time zone NOT NULL, user_id integer NOT NULL)"
        )
        cursor.execute(
            'INSERT INTO authtoken_token ("key", created, user_id) VALUES (%s, %s, %s)',
            [drf_key, member.date_joined, member.pk],
        )

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    assert PASSWORD not in raw_text("ops_app_device") and "key-material-XYZ" not in raw_text("ops_app_device")
    assert Device.objects.get(name="legacy").ssh_password == PASSWORD
    assert "legacy-receiver-token" not in raw_text("ops_app_alertmanagerreceiver")
    assert AlertmanagerReceiver.for_token("legacy-receiver-token-0123456789").name == "legacy"
    assert "authtoken_token" not in connection.introspection.table_names()
    assert ApiToken.for_token(drf_key).user == member  # existing API clients keep working
    assert drf_key not in raw_text("ops_app_apitoken")

    executor = MigrationExecutor(connection)
    executor.migrate(before)
    assert raw_rows("ops_app_device", "ssh_password") == [(PASSWORD,)]
    (token,) = raw_rows("ops_app_alertmanagerreceiver", "token")[0]
    assert token and token != "legacy-receiver-token-0123456789"  # hashes cannot be reversed
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


# --- write-only forms and the admin -----------------------------------------------------------


class _DeviceSecretsForm(forms.ModelForm):
    class Meta:
        model = Device
        fields = ["name", "ssh_password"]


@pytest.mark.django_db
def test_an_encrypted_field_form_is_write_only_keeps_on_blank_and_clears(org):
    device = Device.objects.create(organization=org, name="web-01", ssh_password=PASSWORD)
    html = str(_DeviceSecretsForm(instance=device))
    assert PASSWORD not in html and "leave blank to keep" in html and 'name="ssh_password_clear"' in html

    form = _DeviceSecretsForm({"name": "web-01", "ssh_password": ""}, instance=device)
    assert form.is_valid() and not form.has_changed()
    form.save()
    assert Device.objects.get(pk=device.pk).ssh_password == PASSWORD

    _DeviceSecretsForm({"name": "web-01", "ssh_password": "new-one-3"}, instance=device).save()
    assert Device.objects.get(pk=device.pk).ssh_password == "new-one-3"

    _DeviceSecretsForm({"name": "web-01", "ssh_password_clear": "on"}, instance=device).save()
    assert Device.objects.get(pk=device.pk).ssh_password == ""


@pytest.mark.django_db
def test_admin_issues_an_api_token_once_and_org_admins_see_only_their_own(client, org_admin, member):
    ApiToken.issue(member, name="members-token")
    client.force_login(org_admin)
    response = client.post(reverse("admin:ops_app_apitoken_add"), {"name": "laptop", "user": member.pk})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    token = response.context["token"]
    assert token in response.content.decode()
    row = ApiToken.for_token(token)
    assert (row.user, row.name) == (org_admin, "laptop")  # not the member named in the post
    listing = client.get(reverse("admin:ops_app_apitoken_changelist")).content.decode()
    assert "laptop" in listing and "members-token" not in listing and token not in listing
    page = client.get(reverse("admin:ops_app_apitoken_change", args=[row.pk])).content.decode()
    assert token not in page and row.hint in page


# --- API authentication -------------------------------------------------------------------------


@pytest.mark.django_db
def test_api_token_authenticates_its_user_with_either_keyword(member):
    _, token = ApiToken.issue(member)
    for keyword in ("Token", "Bearer"):
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"{keyword} {token}")
        assert api.get("/api/sessions/").status_code == 200
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}x")
    assert api.get("/api/sessions/").status_code in (401, 403)
    assert ApiToken.objects.get().last_used_at is not None
    member.is_active = False
    member.save()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert api.get("/api/sessions/").status_code in (401, 403)


@pytest.mark.django_db
def test_ongrid_token_command_prints_a_working_token_once(member):
    out, err = StringIO(), StringIO()
    call_command("ongrid_token", "alice", "--name", "ci", stdout=out, stderr=err)
    token = out.getvalue().strip()
    assert ApiToken.for_token(token).user == member and "shown once" in err.getvalue()
    call_command("ongrid_token", "alice", "--revoke-all", stdout=StringIO(), stderr=StringIO())
    assert ApiToken.for_token(token) is None and ApiToken.objects.count() == 1
    with pytest.raises(CommandError, match="no user named"):
        call_command("ongrid_token", "nobody", stdout=StringIO(), stderr=StringIO())


# --- Alertmanager: the token in a header, and out of the logs -----------------------------------


@pytest.mark.django_db
def test_webhook_accepts_the_token_as_a_bearer_header(client, org):
    receiver = AlertmanagerReceiver.objects.create(organization=org)
    url = reverse("alertmanager-webhook-bearer")
    assert url == "/api/alertmanager/"
    body = json.dumps(_payload())
    ok = client.post(
        url, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {receiver.token}"
    )
    assert ok.status_code == 200, ok.content
    assert ok.json()["alerts_created"] == 1
    assert client.post(url, body, content_type="application/json").status_code == 401
    wrong = client.post(url, body, content_type="application/json", HTTP_AUTHORIZATION="Bearer oga_wrong")
    assert wrong.status_code == 404


@pytest.mark.django_db
def test_django_request_log_never_names_the_receiver_token(client, org, caplog):
    receiver = AlertmanagerReceiver.objects.create(organization=org)
    with caplog.at_level(logging.INFO):
        client.post(
            reverse("alertmanager-webhook", args=[receiver.token]),
            "not json",
            content_type="application/json",
        )
        client.post("/api/alertmanager/oga_unknown_token_value/", "{}", content_type="application/json")
    assert caplog.records  # "Bad Request: ..." and "Not Found: ..."
    for record in caplog.records:
        assert (
            receiver.token not in record.getMessage() and "oga_unknown_token_value" not in record.getMessage()
        )
    assert "/api/alertmanager/[REDACTED]/" in caplog.text


def test_server_log_records_and_daphne_access_lines_are_masked(caplog):
    from daphne.access import AccessLogGenerator

    with caplog.at_level(logging.INFO, logger="django.server"):
        logging.getLogger("django.server").info(
            '"%s" %s %s', "POST /api/alertmanager/oga_secret123/ HTTP/1.1", 200, 5
        )
    assert "oga_secret123" not in caplog.text and "/api/alertmanager/[REDACTED]/" in caplog.text
    stream = io.StringIO()
    AccessLogGenerator(stream)(
        "http",
        "complete",
        {
            "client": "10.0.0.1:5000",
            "method": "POST",
            "path": "/api/alertmanager/oga_secret123/",
            "status": 200,
            "size": 9,
        },
    )
    assert (
        "oga_secret123" not in stream.getvalue() and "POST /api/alertmanager/[REDACTED]/" in stream.getvalue()
    )
    assert mask_secret_paths("/api/alertmanager/?x=1") == "/api/alertmanager/?x=1"


@pytest.fixture
def unbuffered_children(monkeypatch):
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")  # so daphne's access log reaches its file at once


@pytest.mark.django_db(transaction=True)
def test_a_real_daphne_access_log_masks_the_token(unbuffered_children, daphne_server, tmp_path, org):
    receiver = AlertmanagerReceiver.objects.create(organization=org)
    request = urllib.request.Request(
        f"{daphne_server}/api/alertmanager/{receiver.token}/",
        data=json.dumps(_payload()).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
    from tests.support.procs import wait_until

    log = tmp_path / "daphne.log"
    wait_until(lambda: "/api/alertmanager/[REDACTED]/" in log.read_text(), 10, "the access-log line")
    assert receiver.token not in log.read_text()


# --- bootstrap -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_bootstrap_prints_the_receiver_token_once(settings, tmp_path, client, monkeypatch):
    monkeypatch.setenv("ONGRID_ADMIN_PASSWORD", "chosen-by-operator-9")
    settings.CONFIG = dataclasses.replace(settings.CONFIG, data_dir=tmp_path)
    first, second = StringIO(), StringIO()
    call_command("ongrid_bootstrap", stdout=first)
    call_command("ongrid_bootstrap", stdout=second)
    token = first.getvalue().split("Authorization: Bearer ", 1)[1].split('"', 1)[0]
    assert "Bearer" not in second.getvalue()
    response = client.post(
        "/api/alertmanager/",
        json.dumps(_payload()),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200


def test_encrypted_columns_are_discovered():
    assert {(m._meta.label, f.name) for m, f in encryption.encrypted_columns()} >= {
        ("ops_app.Device", "ssh_password"),
        ("ops_app.Device", "ssh_private_key"),
    }


def test_the_user_model_has_no_token_attribute_left_from_drf():
    assert not hasattr(get_user_model(), "auth_token")
