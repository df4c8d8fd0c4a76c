"""Alert sources in the admin: adding one with write-only secrets, the receiver URL with its copy
button, the mapping checked on save, the live preview, and tenancy (docs/alerts.md)."""

from __future__ import annotations

import dataclasses
import re

import pytest
from django.urls import reverse

from ops_app.models import AlertSource
from tests.alerts.conftest import MAPPING, PD_SECRET
from tests.support.alert_senders import pagerduty_event, send_pagerduty

pytestmark = pytest.mark.django_db
PUBLIC = "https://ongrid.example.com"
LAST = {
    "id": "uptime-check-42",
    "state": "open",
    "level": "sev2",
    "alert": {"name": "checkout.example.com is down"},
    "tags": {"service": "checkout"},
}


@pytest.fixture
def admin_client(client, org_admin, settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, public_url=PUBLIC, public_url_set=True)
    client.force_login(org_admin)
    return client


def _add(admin_client, **fields):
    data = {
        "name": "pagerduty-payments",
        "kind": "pagerduty",
        "enabled": "on",
        "signing_secret": "",
        "auth_username": "",
        "auth_token": "",
        "mapping": "",
        "writeback": "summary",
        "api_base_url": "",
        "region": "us",
        "api_key": "",
        "from_email": "",
        **fields,
    }
    return admin_client.post(reverse("admin:ops_app_alertsource_add"), data)


def test_an_org_admin_adds_a_pagerduty_source_and_its_secret_is_never_shown_back(admin_client, org):
    response = _add(admin_client, signing_secret=PD_SECRET)
    assert response.status_code == 302, re.findall(r"errorlist.{0,300}", response.content.decode(), re.S)
    source = AlertSource.objects.get(organization=org)
    assert source.signing_secret == PD_SECRET
    page = admin_client.get(reverse("admin:ops_app_alertsource_change", args=[source.pk])).content.decode()
    assert PD_SECRET not in page
    assert f'value="{PUBLIC}/api/alerts/pagerduty/{source.url_key}/"' in page
    assert 'data-copy-from="alert-source-url"' in page
    assert "Write-back" in page and "Generic Webhooks (v3)" in page


def test_a_pagerduty_source_saved_before_its_secret_refuses_deliveries_until_it_is_pasted(admin_client, org):
    assert _add(admin_client).status_code == 302  # saved first, to copy its URL into PagerDuty
    source = AlertSource.objects.get(organization=org)
    refused = send_pagerduty(admin_client, source, pagerduty_event(), secret="anything")
    assert refused.status_code == 401 and "no signing secret yet" in refused.body["error"]
    change = reverse("admin:ops_app_alertsource_change", args=[source.pk])
    data = {
        "name": source.name,
        "enabled": "on",
        "signing_secret": PD_SECRET,
        "auth_username": "",
        "auth_token": "",
        "writeback": "summary",
        "api_base_url": "",
        "region": "us",
        "api_key": "",
        "from_email": "",
    }
    assert admin_client.post(change, data).status_code == 302
    assert send_pagerduty(admin_client, source, pagerduty_event(), secret=PD_SECRET).status_code == 200
    # Saving again with the secret box left blank keeps the stored secret.
    data.update(signing_secret="", name="pagerduty-renamed")
    assert admin_client.post(change, data).status_code == 302
    source.refresh_from_db()
    assert (source.name, source.signing_secret) == ("pagerduty-renamed", PD_SECRET)


def test_a_grafana_source_needs_a_token_or_a_signing_secret(admin_client, org):
    refused = _add(admin_client, name="grafana", kind="grafana")
    assert refused.status_code == 200
    assert "Set an auth token or a signing secret" in refused.content.decode()
    assert not AlertSource.objects.exists()
    assert _add(admin_client, name="grafana", kind="grafana", signing_secret="hmac-1").status_code == 302


def test_a_bad_generic_mapping_is_refused_naming_the_bad_key(admin_client, org):
    response = _add(
        admin_client, name="uptime", kind="generic", auth_token="tok", mapping='{"group_key": "id"}'
    )
    assert response.status_code == 200
    assert "&quot;title&quot; is required" in response.content.decode()
    assert not AlertSource.objects.exists()
    ok = _add(
        admin_client,
        name="uptime",
        kind="generic",
        auth_token="tok",
        mapping='{"title": "a", "group_key": "b"}',
    )
    assert ok.status_code == 302


def _generic(org, **fields) -> AlertSource:
    return AlertSource.objects.create(
        organization=org,
        name="uptime",
        kind="generic",
        auth_token="tok",
        mapping=MAPPING,
        last_payload=LAST,
        **fields,
    )


def test_the_preview_follows_the_mapping_being_edited(admin_client, org):
    source = _generic(org)
    page = admin_client.get(reverse("admin:ops_app_alertsource_change", args=[source.pk])).content.decode()
    assert "checkout.example.com is down" in page  # the stored mapping, applied to the last delivery
    assert 'hx-post="' + reverse("admin:ops_app_alertsource_preview", args=[source.pk]) in page
    url = reverse("admin:ops_app_alertsource_preview", args=[source.pk])
    edited = admin_client.post(
        url, {"mapping": '{"title": "tags.service", "group_key": "id", "labels": "nowhere"}'}
    )
    assert edited.status_code == 200
    html = edited.content.decode()
    assert "<code>checkout</code>" in html and "labels: nowhere" in html
    broken = admin_client.post(
        url, {"mapping": '{"title": "alert.missing", "group_key": "id"}'}
    ).content.decode()
    assert "title: nothing at &quot;alert.missing&quot;" in broken
    assert "not JSON" in admin_client.post(url, {"mapping": "{"}).content.decode()
    assert admin_client.get(url).status_code == 405


def test_an_admin_never_lists_or_previews_another_organizations_sources(admin_client, org, other_org):
    theirs = _generic(other_org, signing_secret="globex")
    _generic(org)
    listing = admin_client.get(reverse("admin:ops_app_alertsource_changelist")).content.decode()
    assert listing.count("uptime") >= 1
    assert reverse("admin:ops_app_alertsource_change", args=[theirs.pk]) not in listing
    assert admin_client.get(reverse("admin:ops_app_alertsource_change", args=[theirs.pk])).status_code == 302
    preview = admin_client.post(
        reverse("admin:ops_app_alertsource_preview", args=[theirs.pk]),
        {"mapping": '{"title": "alert.name", "group_key": "id"}'},
    )
    assert preview.status_code == 404
    assert "checkout.example.com" not in preview.content.decode()


def test_a_member_cannot_preview(client, org, member):
    source = _generic(org)
    client.force_login(member)
    response = client.post(reverse("admin:ops_app_alertsource_preview", args=[source.pk]), {"mapping": "{}"})
    assert response.status_code in (302, 403)
    assert "checkout.example.com" not in response.content.decode()
