"""The admin's index (issue 29, finding 13): Ongrid's branding, not Django's, and the tables
grouped by what an admin does; third-party tables (lock-outs, celery-beat's schedules) out of an
org admin's sight and folded into a last "Internals" group for superusers; the URLs unchanged."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import translation

pytestmark = pytest.mark.django_db

ORG_ADMIN_GROUPS = [
    "Agents", "Estate", "Integrations", "Alerts", "Chat apps", "Schedules", "Audit", "Access"
]  # fmt: skip
THIRD_PARTY = (
    "Access attempts",
    "Access logs",
    "Clocked",
    "Crontabs",
    "Intervals",
    "Periodic tasks",
    "Solar",
)


def headings(page: str) -> list[str]:
    """The index's group captions, in order (the content column, not the sidebar)."""
    main = page.split('id="content-main"', 1)[1]
    return re.findall(r'<caption>\s*<a href="[^"]*" class="section"[^>]*>([^<]+)</a>', main)


def rows(page: str, heading: str) -> list[str]:
    main = page.split('id="content-main"', 1)[1]
    table = main.split(f'class="section" title="Models in the {heading} application">{heading}</a>', 1)[1]
    table = table.split("</table>", 1)[0]
    return re.findall(r'<th scope="row"[^>]*>\s*<a href="[^"]*"[^>]*>([^<]+)</a>', table)


@pytest.fixture
def root(django_user_model):
    return django_user_model.objects.create_superuser("root", password="root-pass-123")


def test_the_index_is_grouped_by_what_an_admin_does(client, org_admin):
    client.force_login(org_admin)
    page = client.get("/admin/").content.decode()
    assert headings(page) == ORG_ADMIN_GROUPS
    assert rows(page, "Integrations")[:3] == ["Data sources", "LLM endpoints", "MCP servers"]
    assert rows(page, "Alerts")[:2] == ["Alertmanager receivers", "Alert sources"]
    assert rows(page, "Chat apps")[0] == "IM apps"
    assert rows(page, "Agents")[0] == "User agents"
    assert 'href="/admin/ops_app/datasource/"' in page  # the URLs stay Django's


def test_ongrid_branding_on_the_page_and_in_the_title(client, org_admin):
    client.force_login(org_admin)
    page = client.get("/admin/").content.decode()
    assert "Django administration" not in page and "Django site admin" not in page
    assert '<div id="site-name"><a href="/admin/">Ongrid administration</a></div>' in page
    assert re.search(r"<title>[^<]*Ongrid admin</title>", page)
    login = Client().get("/admin/login/").content.decode()
    assert "Ongrid administration" in login and "Django" not in login.split("</title>")[0]


def test_the_branding_is_translated(client, org_admin):
    client.force_login(org_admin)
    with translation.override("fr"):
        page = client.get("/admin/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "Administration d’Ongrid" in page
    assert "Intégrations" in headings(page)


def test_third_party_tables_are_hidden_from_an_org_admin_even_with_permission(client, org_admin):
    # Even an org admin given access to them does not see the libraries' tables in the index.
    wanted = Permission.objects.filter(content_type__app_label__in=["axes", "django_celery_beat"])
    org_admin.user_permissions.add(*wanted)
    client.force_login(org_admin)
    page = client.get("/admin/").content.decode()
    for name in THIRD_PARTY:
        assert name not in page, name
    assert "Internals" not in headings(page)


def test_a_superuser_finds_them_folded_into_internals_last(client, root, org):
    client.force_login(root)
    page = client.get("/admin/").content.decode()
    groups = headings(page)
    # Evaluations (the leaderboard of model runs) is platform staff's, never an org admin's.
    assert groups[-1] == "Internals" and groups[:-1] == [*ORG_ADMIN_GROUPS[:-1], "Evaluations", "Access"]
    internals = rows(page, "Internals")
    for name in ("Access attempts", "Periodic tasks", "Crontabs"):
        assert name in internals, internals
    assert "Schedules" in rows(page, "Schedules")  # Ongrid's own, the place to schedule
    assert client.get("/admin/django_celery_beat/periodictask/").status_code == 200  # still reachable
