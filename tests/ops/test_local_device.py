"""Issue 14: the Ongrid host is not a tenant's device. A `local` device exists only with
ONGRID_ALLOW_LOCAL_DEVICE, only platform staff create or edit one, and host tools refuse it while
the setting is off."""

from __future__ import annotations

import dataclasses

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.urls import reverse

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.registry import load_builtin_tools
from ongrid_site import config
from ops_app.estate.demo import load_demo_estate
from ops_app.estate.devices import DISABLED, STAFF_ONLY
from ops_app.models import Device
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture


@pytest.fixture
def local_off(settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, allow_local_device=False)


@pytest.fixture
def superuser(db):
    return get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-123")


def _device_form(transport: str, name: str = "box-1") -> dict:
    return {
        "name": name,
        "address": "10.0.0.9",
        "kind": "server",
        "labels": "{}",
        "online": "on",
        "transport": transport,
        "ssh_port": "22",
        "ssh_username": "ops",
        "ssh_host_key_policy": "strict",
    }


def test_the_setting_is_off_unless_the_operator_sets_it():
    base = {"SECRET_KEY": "x"}
    assert config.load(base).allow_local_device is False
    assert config.load({**base, "ONGRID_ALLOW_LOCAL_DEVICE": "1"}).allow_local_device is True
    assert config.load({**base, "ONGRID_ALLOW_LOCAL_DEVICE": "no"}).allow_local_device is False


@pytest.mark.django_db
def test_org_admin_choosing_local_gets_a_field_error(client, org, org_admin):
    client.force_login(org_admin)
    response = client.post(reverse("admin:ops_app_device_add"), _device_form("local"))
    assert response.status_code == 200
    assert STAFF_ONLY in response.content.decode()
    assert not Device.objects.exists()
    response = client.post(reverse("admin:ops_app_device_add"), _device_form("ssh"))
    assert response.status_code == 302
    assert Device.objects.get().transport == "ssh"


@pytest.mark.django_db
def test_org_admin_cannot_edit_an_existing_local_device(client, org, org_admin):
    device = Device.objects.create(organization=org, name="ongrid-manager", transport="local")
    client.force_login(org_admin)
    response = client.post(
        reverse("admin:ops_app_device_change", args=[device.pk]), _device_form("local", "ongrid-manager")
    )
    assert response.status_code == 200 and STAFF_ONLY in response.content.decode()
    device.refresh_from_db()
    assert device.address == ""  # unchanged


@pytest.mark.django_db
def test_platform_staff_create_a_local_device_only_when_allowed(client, settings, org, superuser):
    client.force_login(superuser)
    form = {**_device_form("local"), "organization": str(org.pk)}
    assert client.post(reverse("admin:ops_app_device_add"), form).status_code == 302
    assert Device.objects.get().transport == "local"
    settings.CONFIG = dataclasses.replace(settings.CONFIG, allow_local_device=False)
    response = client.post(reverse("admin:ops_app_device_add"), {**form, "name": "box-2"})
    assert response.status_code == 200 and DISABLED in response.content.decode()
    assert Device.objects.count() == 1


@pytest.mark.django_db
def test_no_code_path_saves_a_local_device_while_disabled(org, local_off):
    with pytest.raises(ValidationError) as refused:
        Device.objects.create(organization=org, name="sneaky", transport=Device.Transport.LOCAL)
    assert DISABLED in str(refused.value)
    assert not Device.objects.exists()
    ssh = Device.objects.create(organization=org, name="web-1", address="10.0.0.1", ssh_username="ops")
    ssh.transport = Device.Transport.LOCAL
    with pytest.raises(ValidationError):
        ssh.save()
    ssh.refresh_from_db()
    assert ssh.transport == "ssh"


@pytest.mark.django_db
def test_the_demo_works_without_the_local_device(org, local_off):
    assert load_demo_estate(org)
    manager = Device.objects.get(organization=org, name="ongrid-manager")
    assert manager.transport == "ssh" and not manager.online


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_async_db_connections")
async def test_host_tools_refuse_a_local_device_while_disabled(org, settings):
    await Device.objects.acreate(organization=org, name="ongrid-manager", transport="local")
    settings.CONFIG = dataclasses.replace(settings.CONFIG, allow_local_device=False)
    tools = load_builtin_tools()
    with pytest.raises(ToolError) as refused:
        await tools["host_du_summary"].handler(
            ToolContext(organization_id=org.id), device="ongrid-manager", path="/"
        )
    assert "the Ongrid host itself" in str(refused.value) and "ONGRID_ALLOW_LOCAL_DEVICE" in str(
        refused.value
    )
