"""Issue 14: an org admin sees and manages only their own organization in the admin (organizations,
memberships, users, autocompletes, raw-id pop-ups) and cannot hand out platform powers."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from ops_app.models import Membership
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user, set_membership

User = get_user_model()
pytestmark = pytest.mark.django_db


@pytest.fixture
def platform(other_org):
    """A superuser who is also a member of another organization (like bin/start's admin)."""
    root = User.objects.create_superuser("root", "root@example.com", "root-pass-123")
    set_membership(root, other_org, roles.ORG_ADMIN)
    return root


@pytest.fixture
def people(org, other_org, org_admin, member, outsider, platform):
    return {"oscar": org_admin, "alice": member, "mallory": outsider, "root": platform}


@pytest.fixture
def admin_client(client, org_admin):
    client.force_login(org_admin)
    return client


def _text(response) -> str:
    return response.content.decode()


def test_org_admin_sees_only_their_organization(admin_client, people, org, other_org):
    page = admin_client.get(reverse("admin:ops_app_organization_changelist"))
    assert page.status_code == 200
    assert "Acme Corp" in _text(page) and "Globex" not in _text(page)
    other = admin_client.get(reverse("admin:ops_app_organization_change", args=[other_org.pk]))
    assert other.status_code == 302  # "does not exist", like a wrong id
    own = admin_client.get(reverse("admin:ops_app_organization_change", args=[org.pk]))
    assert own.status_code == 200


def test_org_admin_membership_list_shows_only_their_people(admin_client, people, other_org):
    page = admin_client.get(reverse("admin:ops_app_membership_changelist"))
    text = _text(page)
    assert page.status_code == 200
    assert "alice" in text and "oscar" in text
    assert "mallory" not in text and "root" not in text
    assert "Globex" not in text  # not even in the organization filter
    foreign = Membership.objects.get(user=people["mallory"])
    assert admin_client.get(reverse("admin:ops_app_membership_change", args=[foreign.pk])).status_code == 302


def test_org_admin_user_list_change_pages_and_password_pages_are_scoped(admin_client, people):
    page = admin_client.get(reverse("admin:auth_user_changelist"))
    text = _text(page)
    assert page.status_code == 200
    assert "alice" in text and "mallory" not in text and "root" not in text
    for name in ("mallory", "root"):
        pk = people[name].pk
        assert admin_client.get(reverse("admin:auth_user_change", args=[pk])).status_code == 302
        assert admin_client.get(reverse("admin:auth_user_password_change", args=[pk])).status_code == 404
    popup = admin_client.get(reverse("admin:auth_user_changelist") + "?_to_field=id&_popup=1")
    assert popup.status_code == 200
    assert "alice" in _text(popup) and "mallory" not in _text(popup) and "root" not in _text(popup)


def test_autocomplete_lists_only_the_org_admins_users(admin_client, people):
    response = admin_client.get(
        reverse("admin:autocomplete"),
        {"term": "", "app_label": "ops_app", "model_name": "membership", "field_name": "user"},
    )
    assert response.status_code == 200
    names = {row["text"] for row in response.json()["results"]}
    assert names == {"alice", "oscar"}


def test_org_admin_change_form_has_no_platform_fields(admin_client, people):
    page = admin_client.get(reverse("admin:auth_user_change", args=[people["alice"].pk]))
    text = _text(page)
    assert page.status_code == 200
    for field in ("is_superuser", "is_staff", "user_permissions", "groups"):
        assert f'name="{field}"' not in text
    assert 'name="role"' in text


def test_org_admin_creates_a_user_in_their_organization_with_a_role(admin_client, people, org):
    response = admin_client.post(
        reverse("admin:auth_user_add"),
        {
            "username": "nina",
            "usable_password": "true",
            "password1": "Nina-pass-12345",
            "password2": "Nina-pass-12345",
            "role": roles.AUDITOR,
        },
    )
    assert response.status_code == 302, _text(response)
    nina = User.objects.get(username="nina")
    assert nina.membership.organization == org and nina.membership.role == roles.AUDITOR
    assert not nina.is_staff and not nina.is_superuser


@pytest.mark.parametrize("forged", [{"is_superuser": "on"}, {"is_staff": "on"}, {"organization": "2"}])
def test_org_admin_cannot_grant_platform_powers(admin_client, people, forged):
    alice = people["alice"]
    response = admin_client.post(
        reverse("admin:auth_user_change", args=[alice.pk]),
        {"username": "alice", "role": roles.MEMBER, "is_active": "on", **forged},
    )
    assert response.status_code == 200
    assert "Only platform staff may set" in _text(response)
    alice.refresh_from_db()
    assert not alice.is_superuser and not alice.is_staff
    created = admin_client.post(
        reverse("admin:auth_user_add"),
        {
            "username": "eve",
            "usable_password": "true",
            "password1": "Eve-pass-123456",
            "password2": "Eve-pass-123456",
            "role": roles.MEMBER,
            **forged,
        },
    )
    assert created.status_code == 200 and "Only platform staff may set" in _text(created)
    assert not User.objects.filter(username="eve").exists()


def test_org_admin_sets_a_role_and_staff_follows_it(admin_client, people, org):
    alice = people["alice"]
    response = admin_client.post(
        reverse("admin:auth_user_change", args=[alice.pk]),
        {"username": "alice", "role": roles.ORG_ADMIN, "is_active": "on"},
    )
    assert response.status_code == 302, _text(response)
    alice.refresh_from_db()
    assert alice.is_staff and not alice.is_superuser
    assert alice.membership.organization == org and alice.membership.role == roles.ORG_ADMIN


def test_org_admin_cannot_edit_another_organizations_user(admin_client, people):
    mallory = people["mallory"]
    response = admin_client.post(
        reverse("admin:auth_user_change", args=[mallory.pk]),
        {"username": "mallory", "role": roles.ORG_ADMIN, "is_active": "on"},
    )
    assert response.status_code == 302  # redirected away as "does not exist"
    mallory.refresh_from_db()
    assert not mallory.is_staff and mallory.membership.role == roles.MEMBER


def test_org_admins_cannot_touch_groups_or_permissions(admin_client, people):
    assert admin_client.get(reverse("admin:auth_group_changelist")).status_code == 403


def test_platform_staff_still_see_every_tenant(client, people):
    client.force_login(people["root"])
    orgs = _text(client.get(reverse("admin:ops_app_organization_changelist")))
    assert "Acme Corp" in orgs and "Globex" in orgs
    users = _text(client.get(reverse("admin:auth_user_changelist")))
    assert all(name in users for name in ("alice", "mallory", "root"))
    memberships = _text(client.get(reverse("admin:ops_app_membership_changelist")))
    assert "alice" in memberships and "mallory" in memberships
    page = _text(client.get(reverse("admin:auth_user_change", args=[people["alice"].pk])))
    assert 'name="is_superuser"' in page


def test_member_without_admin_role_gets_no_user_admin(client, org):
    bob = create_user("bob", "bob-pass-12345", org, roles.MEMBER)
    bob.is_staff = True  # even with staff status, the member role grants no user management
    bob.save()
    client.force_login(bob)
    assert client.get(reverse("admin:auth_user_changelist")).status_code == 403
