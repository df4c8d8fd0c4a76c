from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from chat_app.models import ChatSession
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import set_membership

pytestmark = pytest.mark.django_db


def test_data_migration_created_the_three_roles_with_permissions():
    groups = {g.name: g for g in Group.objects.filter(name__in=roles.ROLES)}
    assert set(groups) == {"member", "auditor", "org-admin"}
    auditor_perms = set(groups["auditor"].permissions.values_list("codename", flat=True))
    assert "view_chatsession" in auditor_perms
    assert not any(p.startswith(("add_", "change_", "delete_")) for p in auditor_perms)
    admin_perms = set(groups["org-admin"].permissions.values_list("codename", flat=True))
    assert "change_organization" not in admin_perms  # tenants are platform-staff business


def test_queryset_helper_never_returns_another_organizations_rows(org, other_org, member, outsider):
    mine = ChatSession.objects.create(organization=org, user=member, title="mine")
    theirs = ChatSession.objects.create(organization=other_org, user=outsider, title="theirs")
    assert list(ChatSession.objects.for_user(member)) == [mine]
    assert list(ChatSession.objects.for_user(outsider)) == [theirs]
    assert list(ChatSession.objects.for_organization(org)) == [mine]
    assert list(ChatSession.objects.for_organization(None)) == []


def test_user_without_membership_and_anonymous_see_nothing(org, django_user_model):
    from django.contrib.auth.models import AnonymousUser

    ChatSession.objects.create(organization=org, title="x")
    loner = django_user_model.objects.create_user("loner", password="pw-loner-123")
    assert ChatSession.objects.for_user(loner).count() == 0
    assert ChatSession.objects.for_user(AnonymousUser()).count() == 0


def test_platform_staff_see_every_tenant(org, other_org, django_user_model):
    ChatSession.objects.create(organization=org)
    ChatSession.objects.create(organization=other_org)
    root = django_user_model.objects.create_superuser("root", password="pw-root-123")
    assert ChatSession.objects.for_user(root).count() == 2


def test_membership_holds_exactly_one_role(member, other_org):
    assert member.membership.role == roles.MEMBER
    set_membership(member, other_org, roles.ORG_ADMIN)
    member.refresh_from_db()
    assert member.membership.organization == other_org
    assert member.membership.role == roles.ORG_ADMIN
    assert list(member.groups.values_list("name", flat=True)) == [roles.ORG_ADMIN]
    assert member.is_staff  # org admins use the admin site
    with pytest.raises(ValueError, match="unknown role"):
        set_membership(member, other_org, "wizard")
