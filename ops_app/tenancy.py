"""Tenant scoping. Every tenant-owned model inherits `TenantModel`, so its default manager offers
`for_organization()` / `for_user()` and no feature has to remember how tenancy is decided."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models
from django.utils.translation import gettext_lazy as _

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


class TenantQuerySet(models.QuerySet):
    def for_organization(self, organization: Organization | int | None) -> TenantQuerySet:
        if organization is None:
            return self.none()
        return self.filter(organization=organization)

    def for_user(self, user: AbstractBaseUser | AnonymousUser | None) -> TenantQuerySet:
        """Rows the user may see: all for platform staff, their organization's otherwise."""
        if sees_all_tenants(user):
            return self.all()
        return self.for_organization(organization_of(user))


TenantManager = models.Manager.from_queryset(TenantQuerySet)


class TenantModel(models.Model):
    organization = models.ForeignKey(
        "ops_app.Organization", verbose_name=_("organization"), on_delete=models.CASCADE, related_name="+"
    )

    objects = TenantManager()

    class Meta:
        abstract = True
