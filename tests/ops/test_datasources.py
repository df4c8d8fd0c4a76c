"""Data sources in the admin and at rest (docs/integrations.md): secrets encrypted and write-only,
kept out of change events and audit rows; one default per kind; the "Test connection" action and
button; custom headers typed one per line; one organization's data sources invisible to another's
admins; the demo organization's from the environment."""

from __future__ import annotations

import dataclasses
import json
import re
from io import StringIO

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.urls import reverse

from agents_app.tools.binding import organization_tools
from agents_app.tools.invoke import invoke_tool
from agents_app.toolsets.contract import ToolContext
from audit_app.models import AuditLog
from ops_app.core import encryption
from ops_app.integrations.datasources import endpoint, save_data_source
from ops_app.models import ChangeEvent, DataSource, Organization
from tests.support.alertmanager import running_alertmanager
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.fake_loki_tempo import fake_loki_tempo  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db
TOKEN = "glsa_bearer-token-value-8841"
HEADER_SECRET = "tenant-header-secret-5512"


def raw_text(table: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
        return json.dumps(cursor.fetchall(), default=str)


def form_data(**values) -> dict:
    data = {
        "name": "prod",
        "kind": "prometheus",
        "url": "http://127.0.0.1:9",
        "auth": "bearer",
        "username": "",
        "secret": "",
        "custom_headers": "",
        "verify_tls": "on",
        "ca_bundle": "",
        "timeout": "5",
    }
    data.update(values)
    return data


def test_secrets_are_encrypted_in_the_column_and_absent_from_change_events(org):
    source = save_data_source(
        DataSource(
            organization=org,
            kind="loki",
            name="logs",
            url="http://loki:3100",
            auth="headers",
            custom_headers=f"X-Scope-OrgID: acme\nX-Api-Key: {HEADER_SECRET}",
        )
    )
    source.auth, source.secret = "bearer", TOKEN
    source.save()

    stored = raw_text("ops_app_datasource")
    assert TOKEN not in stored and HEADER_SECRET not in stored and encryption.PREFIX in stored
    assert endpoint(org.pk, "loki").headers == {"Authorization": f"Bearer {TOKEN}"}
    events = raw_text("ops_app_changeevent")
    assert ChangeEvent.objects.filter(resource_type="data_source").count() == 2
    assert TOKEN not in events and HEADER_SECRET not in events
    update = ChangeEvent.objects.get(action="update")
    assert "secret" in update.summary and update.after["auth"] == "bearer"  # only the fact, by name


@pytest.mark.django_db(transaction=True)
async def test_a_tool_call_sends_the_secret_but_its_audit_row_never_holds_it(
    org,
    fake_loki_tempo,  # noqa: F811
    close_async_db_connections,  # noqa: F811
):
    await sync_to_async(save_data_source)(
        DataSource(
            organization=org, kind="loki", name="logs", url=fake_loki_tempo.url, auth="bearer", secret=TOKEN
        )
    )
    tool = (await organization_tools(org.pk))["query_logql"]
    outcome = await invoke_tool(
        tool, ToolContext(organization_id=org.pk), '{"query": "{service=\\"checkout\\"}"}'
    )
    assert outcome.status == "ok", outcome.content
    assert fake_loki_tempo.requests[-1]["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert await AuditLog.objects.filter(organization=org, tool="query_logql").acount() == 1
    assert TOKEN not in await sync_to_async(raw_text)(AuditLog._meta.db_table)


def test_only_one_default_per_kind_is_possible(org):
    save_data_source(DataSource(organization=org, kind="prometheus", name="a", url="http://a:9090"))
    second = save_data_source(DataSource(organization=org, kind="prometheus", name="b", url="http://b:9090"))
    assert not second.is_default  # the first of a kind is the default
    with pytest.raises(IntegrityError), transaction.atomic():
        DataSource.objects.filter(pk=second.pk).update(is_default=True)


def test_admin_secret_is_write_only_and_kept_when_left_blank(client, org_admin, org):
    client.force_login(org_admin)
    response = client.post(reverse("admin:ops_app_datasource_add"), form_data(secret=TOKEN))
    assert response.status_code == 302, response.content.decode()[:2000]
    source = DataSource.objects.get(organization=org, name="prod")
    assert source.secret == TOKEN and source.is_default

    page = client.get(reverse("admin:ops_app_datasource_change", args=[source.pk])).content.decode()
    assert TOKEN not in page
    client.post(reverse("admin:ops_app_datasource_change", args=[source.pk]), form_data(timeout="7"))
    source.refresh_from_db()
    assert (source.secret, source.timeout) == (TOKEN, 7.0)


def test_org_admins_never_see_another_organizations_data_sources(client, org_admin, other_org):
    theirs = save_data_source(
        DataSource(organization=other_org, kind="prometheus", name="globex-prom", url="http://g:9090")
    )
    client.force_login(org_admin)
    listing = client.get(reverse("admin:ops_app_datasource_changelist")).content.decode()
    assert "globex-prom" not in listing
    assert client.get(reverse("admin:ops_app_datasource_change", args=[theirs.pk])).status_code in (302, 404)
    # Same name in another organization is fine; it is a different data source.
    assert (
        client.post(reverse("admin:ops_app_datasource_add"), form_data(name="globex-prom")).status_code == 302
    )
    assert DataSource.objects.filter(name="globex-prom").count() == 2


@pytest.mark.services
def test_test_connection_action_says_whether_the_backend_answers_as_one(client, org_admin, org, tmp_path):
    with running_alertmanager("http://127.0.0.1:9/unused", tmp_path) as alertmanager:
        good = save_data_source(
            DataSource(organization=org, kind="alertmanager", name="am", url=alertmanager.url)
        )
        bad = save_data_source(
            DataSource(organization=org, kind="prometheus", name="gone", url="http://127.0.0.1:9")
        )
        client.force_login(org_admin)
        response = client.post(
            reverse("admin:ops_app_datasource_changelist"),
            {"action": "test_connection", "_selected_action": [good.pk, bad.pk]},
            follow=True,
        )
    shown = [str(m) for m in response.context["messages"]]
    # The status and whether it is that back end's API, never its answer (docs/security.md, "Egress").
    assert "am (Alertmanager) answers: GET /api/v2/status: HTTP 200, the Alertmanager API" in shown, shown
    assert "gone (Prometheus) FAILED: http://127.0.0.1:9: connection refused" in shown, shown


def test_bootstrap_creates_the_demo_organizations_data_sources_from_the_environment(settings, tmp_path):
    settings.CONFIG = dataclasses.replace(
        settings.CONFIG,
        data_dir=tmp_path,
        vault_dir=tmp_path / "vault",
        prometheus_url="http://prometheus.demo:9090",
        alertmanager_url="http://alertmanager.demo:9093",
        loki_url=None,
        tempo_url=None,
    )
    (tmp_path / "vault").mkdir()
    call_command("ongrid_bootstrap", "--organization", "Demo Shop", stdout=StringIO())
    call_command("ongrid_bootstrap", "--organization", "Demo Shop", stdout=StringIO())  # idempotent
    demo = Organization.objects.get(name="Demo Shop")
    sources = DataSource.objects.for_organization(demo)
    assert sorted(sources.values_list("kind", "url", "is_default")) == [
        ("alertmanager", "http://alertmanager.demo:9093", True),
        ("prometheus", "http://prometheus.demo:9090", True),
    ]


@pytest.mark.services
def test_the_test_button_on_the_form_checks_that_one_data_source(client, org_admin, org, tmp_path):
    with running_alertmanager("http://127.0.0.1:9/unused", tmp_path) as alertmanager:
        good = save_data_source(
            DataSource(organization=org, kind="alertmanager", name="am", url=alertmanager.url)
        )
        bad = save_data_source(
            DataSource(organization=org, kind="prometheus", name="gone", url="http://127.0.0.1:9")
        )
        client.force_login(org_admin)
        page = client.get(reverse("admin:ops_app_datasource_change", args=[good.pk])).content.decode()
        test_url = reverse("admin:ops_app_datasource_test", args=[good.pk])
        assert f'action="{test_url}"' in page and ">Test connection</button>" in page
        answered = client.post(test_url, follow=True)
        refused = client.post(reverse("admin:ops_app_datasource_test", args=[bad.pk]), follow=True)
    assert answered.redirect_chain[-1][0] == reverse("admin:ops_app_datasource_change", args=[good.pk])
    assert [str(m) for m in answered.context["messages"]] == [
        "am (Alertmanager) answers: GET /api/v2/status: HTTP 200, the Alertmanager API"
    ]
    assert [str(m) for m in refused.context["messages"]] == [
        "gone (Prometheus) FAILED: http://127.0.0.1:9: connection refused"
    ]
    assert client.get(test_url).status_code == 405  # only a POST calls the back end


def test_custom_headers_are_a_multi_line_box_that_is_still_write_only(client, org_admin, org):
    client.force_login(org_admin)
    headers = f"X-Scope-OrgID: acme\r\nX-Api-Key: {HEADER_SECRET}"
    response = client.post(
        reverse("admin:ops_app_datasource_add"),
        form_data(name="loki", kind="loki", auth="headers", custom_headers=headers),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    source = DataSource.objects.get(organization=org, name="loki")
    assert endpoint(org.pk, "loki").headers == {"X-Scope-OrgID": "acme", "X-Api-Key": HEADER_SECRET}

    page = client.get(reverse("admin:ops_app_datasource_change", args=[source.pk])).content.decode()
    box = re.search(r'<textarea name="custom_headers"[^>]*>(.*?)</textarea>', page, re.S)
    assert box is not None and box.group(1).strip() == ""  # several lines can be typed; none shown back
    assert HEADER_SECRET not in page and "X-Scope-OrgID: acme" not in page
    assert '<label class="secret-clear" for="id_custom_headers_1">' in page
