"""Writes to tenancy go through these functions so that a membership and its role never disagree."""

from __future__ import annotations

from zoneinfo import available_timezones

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser, Group
from django.db import transaction
from django.utils.text import slugify

from ops_app.models import Membership, Organization
from ops_app.tenancy import roles


def create_organization(name: str, slug: str | None = None) -> Organization:
    org, _ = Organization.objects.get_or_create(name=name, defaults={"slug": slug or slugify(name)[:80]})
    return org


@transaction.atomic
def set_membership(user: AbstractUser, organization: Organization, role: str) -> Membership:
    """Put `user` in `organization` with exactly one role. Org admins get admin-site access."""
    if role not in roles.ROLES:
        raise ValueError(f"unknown role {role!r}; expected one of {', '.join(roles.ROLES)}")
    membership, _ = Membership.objects.update_or_create(user=user, defaults={"organization": organization})
    user.groups.remove(*Group.objects.filter(name__in=roles.ROLES))
    user.groups.add(roles.role_group(role))
    if role == roles.ORG_ADMIN and not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    return membership


def create_user(
    username: str, password: str, organization: Organization, role: str = roles.MEMBER, **extra
) -> AbstractUser:
    user = get_user_model().objects.create_user(username=username, password=password, **extra)
    set_membership(user, organization, role)
    return user


def set_timezone(user: AbstractUser, zone: str) -> None:
    """The user's chosen display zone ("" to follow the browser); an unknown zone is refused."""
    if zone and zone not in available_timezones():
        raise ValueError(f"unknown time zone {zone!r}")
    Membership.objects.filter(user=user).update(timezone=zone)


def set_language(user: AbstractUser, language: str) -> None:
    """The user's chosen interface and reply language ("" to follow the browser); only the languages
    in settings.LANGUAGES are accepted, so a forged form cannot store something no page can show."""
    if language and language not in {code for code, _ in settings.LANGUAGES}:
        raise ValueError(f"unknown language {language!r}")
    Membership.objects.filter(user=user).update(language=language)
