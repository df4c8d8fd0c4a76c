"""Admin behaviour shared by every tenant-owned model: an org admin sees and edits only rows of
their organization, and new rows are stamped with it; platform staff see every tenant."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied

from ops_app.tenancy import TenantModel, organization_of, sees_all_tenants


class TenantScopedAdmin(admin.ModelAdmin):
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
        related = db_field.related_model
        if isinstance(related, type) and issubclass(related, TenantModel):
            kwargs["queryset"] = related.objects.for_user(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        if not sees_all_tenants(request.user):
            organization = organization_of(request.user)
            if organization is None:
                raise PermissionDenied("You belong to no organization.")
            obj.organization = organization
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
