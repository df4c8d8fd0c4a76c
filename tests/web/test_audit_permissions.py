"""Who may audit what: the role and tenant matrix over every audit page and API endpoint."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support import audit_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(org, other_org, member, outsider):
    ours = audit_rows.session(org, member, title="ours: web-01 disk")
    ours_worker = audit_rows.session(
        org, member, parent=ours, agent_id="specialist-disk", title="ours worker"
    )
    ours_call = audit_rows.tool_call(ours_worker, "host_du_summary")
    theirs = audit_rows.session(other_org, outsider, title="theirs: payroll")
    theirs_call = audit_rows.tool_call(theirs, "query_devices")
    return {
        "ours": ours,
        "ours_worker": ours_worker,
        "ours_call": ours_call,
        "theirs": theirs,
        "theirs_call": theirs_call,
    }


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-123")


@pytest.fixture
def other_auditor(other_org):
    return create_user("ivan", "ivan-pass-12345", other_org, roles.AUDITOR)


def pages(world) -> list[str]:
    return [
        reverse("audit-sessions"),
        reverse("audit-session", args=[world["ours"].pk]),
        reverse("audit-session-print", args=[world["ours"].pk]),
        reverse("audit-call", args=[world["ours_call"].pk]),
    ]


def endpoints(world) -> list[str]:
    return [
        reverse("api-audit-sessions"),
        reverse("api-audit-tree", args=[world["ours"].pk]),
        reverse("api-audit-export", args=[world["ours"].pk]),
        reverse("api-audit-calls"),
        reverse("api-audit-call", args=[world["ours_call"].pk]),
    ]


def as_user(user) -> tuple[Client, APIClient]:
    client, api = Client(), APIClient()
    client.force_login(user)
    api.force_authenticate(user)
    return client, api


@pytest.mark.parametrize("who", ["auditor", "org_admin", "staff"])
def test_auditors_org_admins_and_staff_open_every_page_and_endpoint(request, world, who):
    client, api = as_user(request.getfixturevalue(who))
    for url in pages(world):
        assert client.get(url).status_code == 200, url
    for url in endpoints(world):
        assert api.get(url).status_code == 200, url


@pytest.mark.parametrize("who", ["member", "outsider"])
def test_members_are_refused(request, world, who):
    client, api = as_user(request.getfixturevalue(who))
    for url in pages(world):
        assert client.get(url).status_code == 403, url
    for url in endpoints(world):
        response = api.get(url)
        assert response.status_code == 403, url
        assert "auditors" in response.json()["detail"]


def test_anonymous_users_are_sent_to_login_and_the_api_refuses(world):
    for url in pages(world):
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    for url in endpoints(world):
        assert APIClient().get(url).status_code in {401, 403}, url


def test_another_tenants_objects_answer_404(world, other_auditor):
    client, api = as_user(other_auditor)
    for url in pages(world)[1:]:
        assert client.get(url).status_code == 404, url
    for url in endpoints(world):
        if url in {reverse("api-audit-sessions"), reverse("api-audit-calls")}:
            continue
        assert api.get(url).status_code == 404, url


def test_lists_hold_only_the_callers_organization(world, auditor, other_auditor, staff):
    def listed(user) -> tuple[set, set]:
        client, api = as_user(user)
        sessions = {row["id"] for row in api.get(reverse("api-audit-sessions")).json()["results"]}
        calls = {row["id"] for row in api.get(reverse("api-audit-calls")).json()["results"]}
        html = client.get(reverse("audit-sessions")).content.decode()
        assert ("theirs: payroll" in html) == (world["theirs"].pk in sessions)
        assert ("ours: web-01 disk" in html) == (world["ours"].pk in sessions)
        return sessions, calls

    assert listed(auditor) == (
        {world["ours"].pk, world["ours_worker"].pk},
        {world["ours_call"].pk},
    )
    assert listed(other_auditor) == ({world["theirs"].pk}, {world["theirs_call"].pk})
    everything = listed(staff)
    assert world["ours"].pk in everything[0] and world["theirs"].pk in everything[0]


def test_filters_cannot_reach_across_tenants(world, other_auditor):
    _, api = as_user(other_auditor)
    response = api.get(reverse("api-audit-calls"), {"session": world["ours_worker"].pk})
    assert response.json()["results"] == []
    response = api.get(reverse("api-audit-sessions"), {"user": "alice", "q": "web-01"})
    assert response.json()["results"] == []


def test_the_navigation_links_to_the_audit_pages_only_for_auditors(auditor, member):
    auditor_client, _ = as_user(auditor)
    member_client, _ = as_user(member)
    link = b'href="' + reverse("audit-sessions").encode() + b'"'
    assert link in auditor_client.get(reverse("home"), follow=True).content
    assert link not in member_client.get(reverse("home"), follow=True).content
