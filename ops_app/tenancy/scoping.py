"""Tenant scoping: which organization a user works in, and who works across all of them. The one
place tenancy is decided; `TenantModel`'s manager (`for_user()`), the admin and the pages ask here."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    from ops_app.models import Organization


def organization_of(user: AbstractBaseUser | AnonymousUser | None) -> Organization | None:
    """The one organization a user belongs to, or None (anonymous, or no membership)."""
    if user is None or not user.is_authenticated:
        return None
    membership = getattr(user, "membership", None)
    return membership.organization if membership is not None else None


def sees_all_tenants(user: AbstractBaseUser | AnonymousUser | None) -> bool:
    """Platform staff (superusers) work across organizations; everyone else sees one."""
    return bool(user is not None and user.is_authenticated and user.is_superuser)
