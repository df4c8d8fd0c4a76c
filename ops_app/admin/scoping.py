"""Admin behaviour shared by every tenant-owned model: an org admin sees and edits only rows of
their organization, and new rows are stamped with it; platform staff see every tenant.

The same rule covers the tenancy models themselves (organizations, memberships, users): an org
admin's choices, autocompletes and raw-id pop-ups only ever list their own organization and its
users (never platform staff), see `visible_users` / `visible_organizations`."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied

from ops_app.models import Organization
from ops_app.models.tenancy import TenantModel
from ops_app.tenancy.scoping import organization_of, sees_all_tenants


def visible_organizations(user):
    if sees_all_tenants(user):
        return Organization.objects.all()
    organization = organization_of(user)
    return Organization.objects.filter(pk=organization.pk) if organization else Organization.objects.none()


def visible_users(user):
    """The users `user` may see in the admin: all for platform staff; otherwise the members of
    their own organization, platform staff excluded."""
    users = get_user_model().objects.all()
    if sees_all_tenants(user):
        return users
    organization = organization_of(user)
    if organization is None:
        return users.none()
    return users.filter(membership__organization=organization, is_superuser=False)


def scoped_choices(related, user):
    """The rows of `related` a form field may offer `user`, or None when no tenancy rule applies."""
    if not isinstance(related, type):
        return None
    if issubclass(related, TenantModel):
        return related.objects.for_user(user)
    if issubclass(related, Organization):
        return visible_organizations(user)
    if issubclass(related, get_user_model()):
        return visible_users(user)
    return None


class TenantScopedAdmin(admin.ModelAdmin):
    # The row's writer (`writer(obj)`), for rows whose save is more than `obj.save()`: it encrypts,
    # keeps one default per kind, tells the processes... (docs/architecture.md, one writer per record).
    writer: staticmethod | None = None

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.organization = organization_of(request.user)  # for the forms' duplicate-name checks
        return form

    def get_queryset(self, request):
        return super().get_queryset(request).for_user(request.user)

    def get_exclude(self, request, obj=None):
        excluded = list(super().get_exclude(request, obj) or [])
        if not sees_all_tenants(request.user):
            excluded.append("organization")
        return excluded

    def get_list_filter(self, request):
        filters = list(super().get_list_filter(request))
        if sees_all_tenants(request.user) and "organization" not in filters:
            filters.append("organization")
        return filters

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        choices = scoped_choices(db_field.related_model, request.user)
        if choices is not None:
            kwargs["queryset"] = choices
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        choices = scoped_choices(db_field.related_model, request.user)
        if choices is not None:
            kwargs["queryset"] = choices
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        if not sees_all_tenants(request.user):
            organization = organization_of(request.user)
            if organization is None:
                raise PermissionDenied("You belong to no organization.")
            obj.organization = organization
        if self.writer is not None:
            self.writer(obj)
        else:
            super().save_model(request, obj, form, change)


class ReadOnlyTenantAdmin(TenantScopedAdmin):
    """Rows that are evidence (audit calls, LLM calls, proposals, session rows): listed and
    inspected, never added, edited or deleted here, superusers included."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
