from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from ops_app.estate import change_events
from ops_app.estate.change_events import acting_as, suppressed
from ops_app.models import AlertRule, ChangeEvent, Device, TopologyEdge, TopologyNode
from tests.support.tools import run_tool

pytestmark = pytest.mark.django_db

SECRET_KEY_TEXT = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret-key-material\n-----END OPENSSH PRIVATE KEY-----"
)


def _device_form(device: Device, **changes) -> dict:
    data = {
        "name": device.name,
        "address": device.address,
        "kind": device.kind,
        "labels": json.dumps(device.labels),
        "online": "on" if device.online else "",
        "transport": device.transport,
        "ssh_port": device.ssh_port,
        "ssh_username": device.ssh_username,
        "ssh_private_key": "",
        "ssh_password": "",
        "ssh_known_hosts": device.ssh_known_hosts,
        "ssh_host_key_policy": device.ssh_host_key_policy,
    }
    data.update(changes)
    return data


def test_admin_edit_is_recorded_with_the_actor_and_without_secrets(client, org, org_admin):
    device = Device.objects.create(
        organization=org,
        name="web-01",
        address="10.0.0.1",
        ssh_password="old-pass-1",
        ssh_private_key=SECRET_KEY_TEXT,
    )
    client.force_login(org_admin)
    url = reverse("admin:ops_app_device_change", args=[device.pk])
    page = client.get(url).content.decode()
    assert "secret-key-material" not in page and "old-pass-1" not in page  # secrets are write-only
    response = client.post(url, _device_form(device, address="10.0.0.99", ssh_password="new-pass-2"))
    assert response.status_code == 302, response.content.decode()[:2000]

    event = ChangeEvent.objects.get(resource_type="device", action="update")
    assert (event.actor, event.actor_name, event.organization) == (org_admin, "oscar", org)
    assert event.before == {"address": "10.0.0.1"}
    assert event.after == {"address": "10.0.0.99", "_secrets_changed": ["ssh_password"]}
    assert event.summary == "oscar changed device web-01: address, ssh_password"
    stored = json.dumps([event.before, event.after, event.summary])
    for secret in ("old-pass-1", "new-pass-2", "secret-key-material"):
        assert secret not in stored
    device.refresh_from_db()
    assert (device.ssh_password, device.ssh_private_key) == (
        "new-pass-2",
        SECRET_KEY_TEXT,
    )  # blank kept the key


def test_admin_create_and_delete_are_recorded(client, org, org_admin):
    client.force_login(org_admin)
    response = client.post(
        reverse("admin:ops_app_alertrule_add"),
        {
            "name": "HighLoad",
            "expression": "node_load1 > 4",
            "for_duration": "5m",
            "severity": "warning",
            "labels": "{}",
            "annotations": "{}",
            "source": "manual",
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    rule = AlertRule.objects.get(organization=org, name="HighLoad")
    created = ChangeEvent.objects.get(action="create", resource_type="alert_rule")
    assert created.after["expression"] == "node_load1 > 4" and created.actor == org_admin
    response = client.post(reverse("admin:ops_app_alertrule_delete", args=[rule.pk]), {"post": "yes"})
    assert response.status_code == 302
    deleted = ChangeEvent.objects.get(action="delete")
    assert (deleted.resource_id, deleted.before["name"], deleted.actor_name) == (
        str(rule.pk),
        "HighLoad",
        "oscar",
    )


def test_changes_outside_requests_name_the_given_or_system_actor(org, member):
    node = TopologyNode.objects.create(organization=org, name="api")
    assert ChangeEvent.objects.get().actor_name == "system"
    with acting_as(member):
        node.labels = {"version": "2"}
        node.save()
    update = ChangeEvent.objects.get(action="update")
    assert (update.actor, update.before, update.after) == (
        member,
        {"labels": {}},
        {"labels": {"version": "2"}},
    )
    with acting_as(name="terraform"):
        TopologyEdge.objects.create(
            organization=org, source=node, target=TopologyNode.objects.create(organization=org, name="db")
        )
    assert ChangeEvent.objects.filter(resource_type="topology_edge").get().actor_name == "terraform"


def test_saving_without_a_real_change_and_heartbeats_record_nothing(org):
    device = Device.objects.create(organization=org, name="web-01")
    device.save()
    device.online, device.last_seen_at = False, timezone.now()
    device.save()
    assert ChangeEvent.objects.filter(action="update").count() == 0


def test_a_rolled_back_edit_leaves_no_event_and_suppression_records_nothing(org):
    with pytest.raises(RuntimeError), transaction.atomic():
        Device.objects.create(organization=org, name="ghost")
        raise RuntimeError("boom")
    with suppressed():
        Device.objects.create(organization=org, name="bulk")
    assert ChangeEvent.objects.count() == 0


def test_tracked_models_connect_lazily():
    connected = change_events.connect()
    assert {"ops_app.Device", "ops_app.AlertRule", "ops_app.TopologyNode", "ops_app.TopologyEdge"} <= set(
        connected
    )
    from django.apps import apps

    has_user_agent = any(m._meta.label == "agents_app.UserAgent" for m in apps.get_models())
    assert ("agents_app.UserAgent" in connected) == has_user_agent


def test_query_change_events_filters_and_stays_in_its_tenant(org, other_org, member):
    with acting_as(member):
        web = Device.objects.create(organization=org, name="web-01")
        AlertRule.objects.create(organization=org, name="DiskFull", expression="x > 1")
    Device.objects.create(organization=other_org, name="their-db")
    ChangeEvent.objects.create(
        organization=org,
        occurred_at=timezone.now() - dt.timedelta(days=3),
        actor_name="old",
        action="update",
        resource_type="device",
        resource_id=str(web.pk),
        resource_name="web-01",
    )
    recent = run_tool("query_change_events", org)
    assert recent["total"] == 2 and {c["resource_name"] for c in recent["changes"]} == {"web-01", "DiskFull"}
    assert (
        run_tool("query_change_events", org, resource_type="alert_rule")["changes"][0]["resource_name"]
        == "DiskFull"
    )
    assert run_tool("query_change_events", org, actor="alice")["total"] == 2
    assert run_tool("query_change_events", org, actor="nobody")["total"] == 0
    week = run_tool("query_change_events", org, since="now-7d", resource="web")
    assert [c["actor"] for c in week["changes"]] == ["alice", "old"]  # newest first
    assert run_tool("query_change_events", other_org)["changes"][0]["resource_name"] == "their-db"
    assert run_tool("query_change_events", other_org)["total"] == 1


@pytest.mark.django_db(transaction=True)
async def test_actor_is_known_on_the_asgi_path_too(async_client, org):
    """Under daphne the middleware chain is async; the admin view runs in a thread and must still
    see the request's user."""
    from asgiref.sync import sync_to_async

    from ops_app.tenancy import roles
    from ops_app.tenancy.accounts import create_user

    admin = await sync_to_async(create_user)("olga", "olga-pass-123", org, roles.ORG_ADMIN)
    device = await Device.objects.acreate(organization=org, name="db-01", address="10.0.0.7")
    await async_client.aforce_login(admin)
    url = reverse("admin:ops_app_device_change", args=[device.pk])
    response = await async_client.post(url, _device_form(device, address="10.0.0.8"))
    assert response.status_code == 302
    event = await ChangeEvent.objects.aget(action="update")
    assert (event.actor_id, event.actor_name, event.after) == (admin.pk, "olga", {"address": "10.0.0.8"})
