from __future__ import annotations

import dataclasses
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.urls import reverse

from ops_app.estate.demo import load_demo_estate
from ops_app.models import (
    Alert,
    AlertmanagerReceiver,
    AlertRule,
    ChangeEvent,
    Device,
    Incident,
    Organization,
    TopologyEdge,
    TopologyNode,
)

pytestmark = pytest.mark.django_db

ESTATE_MODELS = [
    "device",
    "incident",
    "alert",
    "alertrule",
    "changeevent",
    "topologynode",
    "topologyedge",
    "alertmanagerreceiver",
]


def test_demo_estate_is_a_small_shop_with_one_firing_incident(org):
    assert load_demo_estate(org) is True
    devices = {d.name: d for d in Device.objects.for_organization(org)}
    assert devices["ongrid-manager"].transport == "local"
    assert {d.transport for n, d in devices.items() if n != "ongrid-manager"} == {"ssh"}
    assert {"web", "checkout", "payments", "postgres", "redis", "queue"} <= set(
        TopologyNode.objects.for_organization(org).values_list("name", flat=True)
    )
    assert TopologyEdge.objects.for_organization(org).count() == 9
    assert AlertRule.objects.for_organization(org).count() == 5
    incident = Incident.objects.for_organization(org).get(status="firing")
    assert incident.alerts.count() == 3 and incident.severity == "critical"
    # the curated history only: loading the demo itself records no "created" noise
    assert not ChangeEvent.objects.for_organization(org).filter(summary__startswith="system").exists()
    culprit = ChangeEvent.objects.for_organization(org).order_by("-occurred_at").first()
    assert (culprit.resource_name, culprit.before["labels"]["db_pool_size"]) == ("payments", "50")
    assert culprit.occurred_at < incident.started_at


def test_demo_estate_loads_only_into_an_empty_estate(org, other_org):
    Device.objects.create(organization=org, name="my-own-host")
    assert load_demo_estate(org) is False
    assert Device.objects.for_organization(org).count() == 1
    assert load_demo_estate(other_org) is True
    assert load_demo_estate(other_org) is False
    assert Incident.objects.for_organization(other_org).count() == 1


def test_bootstrap_command_loads_the_demo_estate_once(settings, tmp_path, monkeypatch):
    monkeypatch.setenv("ONGRID_ADMIN_PASSWORD", "bootstrap-pass-77")
    settings.CONFIG = dataclasses.replace(settings.CONFIG, data_dir=tmp_path)
    first, second = StringIO(), StringIO()
    call_command("ongrid_bootstrap", stdout=first)
    call_command("ongrid_bootstrap", stdout=second)
    assert "Loaded the demo estate" in first.getvalue()
    assert "Loaded the demo estate" not in second.getvalue()
    shop = Organization.objects.get(name="Demo Shop")
    assert Incident.objects.for_organization(shop).filter(status="firing").count() == 1


def test_edges_stay_inside_one_organization_and_never_loop(org, other_org):
    mine = TopologyNode.objects.create(organization=org, name="api")
    theirs = TopologyNode.objects.create(organization=other_org, name="db")
    with pytest.raises(ValidationError, match="same organization|edge's organization"):
        TopologyEdge(organization=org, source=mine, target=theirs).full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        TopologyEdge.objects.create(organization=org, source=mine, target=mine)


def test_alerts_are_unique_per_fingerprint_and_start(org):
    from django.utils import timezone

    now = timezone.now()
    Alert.objects.create(organization=org, name="A", fingerprint="abc", starts_at=now)
    with pytest.raises(IntegrityError), transaction.atomic():
        Alert.objects.create(organization=org, name="A", fingerprint="abc", starts_at=now)


@pytest.mark.parametrize("model", ESTATE_MODELS)
def test_admin_lists_search_and_filter_only_the_own_organization(client, org, other_org, org_admin, model):
    load_demo_estate(org)
    load_demo_estate(other_org)
    AlertmanagerReceiver.objects.create(organization=org, name="ours")
    AlertmanagerReceiver.objects.create(organization=other_org, name="theirs")
    client.force_login(org_admin)
    url = reverse(f"admin:ops_app_{model}_changelist")
    response = client.get(url)
    assert response.status_code == 200
    shown = response.context["cl"].queryset
    assert shown.exists()
    assert set(shown.values_list("organization_id", flat=True)) == {org.pk}
    assert client.get(url, {"q": "payments"}).status_code == 200
    assert response.context["cl"].has_filters


def test_admin_shows_a_receiver_token_once_and_can_issue_a_new_one(client, org, org_admin):
    client.force_login(org_admin)
    response = client.post(
        reverse("admin:ops_app_alertmanagerreceiver_add"), {"name": "prod", "enabled": "on"}
    )
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    receiver = AlertmanagerReceiver.objects.get(name="prod")
    token = response.context["token"]
    page = response.content.decode()
    assert token.startswith("oga_") and token in page and "credentials:" in page
    assert AlertmanagerReceiver.for_token(token) == receiver
    change_page = client.get(reverse("admin:ops_app_alertmanagerreceiver_change", args=[receiver.pk]))
    assert "/api/alertmanager/" in change_page.content.decode()
    assert token not in change_page.content.decode()  # never shown again

    response = client.post(
        reverse("admin:ops_app_alertmanagerreceiver_changelist"),
        {"action": "issue_new_token", "_selected_action": [receiver.pk]},
    )
    fresh = response.context["token"]
    assert fresh != token and fresh in response.content.decode()
    assert AlertmanagerReceiver.for_token(token) is None  # the old token stops working
    assert AlertmanagerReceiver.for_token(fresh) == receiver


def test_change_events_are_read_only_in_the_admin(client, org, org_admin):
    load_demo_estate(org)
    client.force_login(org_admin)
    event = ChangeEvent.objects.for_organization(org).first()
    assert client.get(reverse("admin:ops_app_changeevent_add")).status_code == 403
    response = client.post(
        reverse("admin:ops_app_changeevent_change", args=[event.pk]), {"summary": "forged"}
    )
    assert response.status_code == 403
    event.refresh_from_db()
    assert event.summary != "forged"
