"""The tenancy models in the admin: organizations, memberships, users and API tokens.

Platform staff (superusers) see and edit everything, as Django's stock admin does. An org admin
sees only their own organization, its memberships and its users (never platform staff), in the
changelists, change pages, autocompletes and raw-id pop-ups alike. They manage their
organization's users with one `role` field: the user's membership is always their own
organization, staff status follows the role (org admins use the admin site), and superuser
status, groups and individual permissions are platform staff's business - absent from their
forms, and refused with a clear error if a crafted request sends them anyway.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from ops_app.admin.scoping import scoped_choices, visible_organizations, visible_users
from ops_app.admin.token_page import token_issued_response
from ops_app.models import ApiToken, Membership, Organization
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import set_membership
from ops_app.tenancy.scoping import organization_of, sees_all_tenants

User = get_user_model()

# Fields of a user (or membership) only platform staff may set.
PLATFORM_ONLY_FIELDS = ("is_superuser", "is_staff", "groups", "user_permissions", "organization")
ROLE_CHOICES = [
    (roles.MEMBER, _("Member: chats")),
    (roles.AUDITOR, _("Auditor: also reads the organization's sessions and audit trail")),
    (roles.ORG_ADMIN, _("Org admin: also edits the organization's agents, estate and users")),
]


def _is_org_admin_request(request) -> bool:
    return not sees_all_tenants(request.user)


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "timezone", "created_at")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}

    def get_queryset(self, request):
        return super().get_queryset(request) & visible_organizations(request.user)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "organization", "role", "created_at")
    list_filter = ("organization",)
    search_fields = ("user__username", "organization__name")
    list_select_related = ("user", "organization")

    def get_queryset(self, request):
        rows = super().get_queryset(request).prefetch_related("user__groups")
        if sees_all_tenants(request.user):
            return rows
        organization = organization_of(request.user)
        if organization is None:
            return rows.none()
        return rows.filter(organization=organization, user__is_superuser=False)

    def get_list_filter(self, request):
        # The organization filter would list every tenant's name.
        return self.list_filter if sees_all_tenants(request.user) else ()

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        choices = scoped_choices(db_field.related_model, request.user)
        if choices is not None:
            kwargs["queryset"] = choices
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class _PlatformFieldsRefused:
    """Refuses, by name, platform-only fields that a crafted POST sends to an org admin's form."""

    def _refuse_platform_fields(self) -> None:
        sent = [name for name in PLATFORM_ONLY_FIELDS if name in self.data]
        if sent:
            self.add_error(
                None,
                forms.ValidationError(
                    "Only platform staff may set %(fields)s; an org admin sets a user's role, and "
                    "the user always belongs to the org admin's own organization.",
                    code="platform_only",
                    params={"fields": ", ".join(sent)},
                ),
            )


class OrgUserChangeForm(_PlatformFieldsRefused, UserChangeForm):
    role = forms.ChoiceField(choices=ROLE_CHOICES)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        membership = getattr(self.instance, "membership", None) if self.instance.pk else None
        if membership is not None and membership.role:
            self.fields["role"].initial = membership.role

    def clean(self):
        cleaned = super().clean()
        self._refuse_platform_fields()
        return cleaned


class OrgUserCreationForm(_PlatformFieldsRefused, AdminUserCreationForm):
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial=roles.MEMBER)

    def clean(self):
        cleaned = super().clean()
        self._refuse_platform_fields()
        return cleaned


if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class OngridUserAdmin(UserAdmin):
    """Django's user admin for platform staff; scoped to one organization for org admins."""

    org_fieldsets = (
        (None, {"fields": ("username", "password")}),
        (_("Personal info"), {"fields": ("first_name", "last_name", "email")}),
        (_("Role in your organization"), {"fields": ("role", "is_active")}),
        (_("Important dates"), {"fields": ("last_login", "date_joined")}),
    )
    org_add_fieldsets = (
        (None, {"classes": ("wide",), "fields": ("username", "usable_password", "password1", "password2")}),
        (_("Role in your organization"), {"fields": ("role",)}),
    )

    def get_queryset(self, request):
        return super().get_queryset(request) & visible_users(request.user)

    def get_list_display(self, request):
        if sees_all_tenants(request.user):
            return super().get_list_display(request)
        return ("username", "email", "first_name", "last_name", "is_active")

    def get_list_filter(self, request):
        if sees_all_tenants(request.user):
            return super().get_list_filter(request)
        return ("is_active",)

    def get_fieldsets(self, request, obj=None):
        if sees_all_tenants(request.user):
            return super().get_fieldsets(request, obj)
        return self.org_add_fieldsets if obj is None else self.org_fieldsets

    def get_readonly_fields(self, request, obj=None):
        if sees_all_tenants(request.user):
            return super().get_readonly_fields(request, obj)
        return ("last_login", "date_joined")

    def get_form(self, request, obj=None, **kwargs):
        if _is_org_admin_request(request):
            kwargs["form"] = OrgUserCreationForm if obj is None else OrgUserChangeForm
        return super().get_form(request, obj, **kwargs)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        choices = scoped_choices(db_field.related_model, request.user)
        if choices is not None:
            kwargs["queryset"] = choices
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        if sees_all_tenants(request.user):
            super().save_model(request, obj, form, change)
            return
        organization = organization_of(request.user)
        if organization is None:
            raise PermissionDenied("You belong to no organization.")
        role = form.cleaned_data["role"]
        with transaction.atomic():
            obj.is_superuser = False
            obj.is_staff = role == roles.ORG_ADMIN  # the admin site is for org admins only
            super().save_model(request, obj, form, change)
            set_membership(obj, organization, role)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """API tokens: platform staff issue them for anyone, everyone else only for themselves."""

    list_display = ("hint_shown", "user", "name", "created_at", "last_used_at")
    search_fields = ("name", "user__username", "hint")
    list_select_related = ("user",)
    readonly_fields = ("hint_shown", "created_at", "last_used_at")

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        return queryset if request.user.is_superuser else queryset.filter(user=request.user)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["user", "name"] if request.user.is_superuser else ["name"]
        return ["user", "name", "hint_shown", "created_at", "last_used_at"]

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "user"] if obj is not None else self.readonly_fields

    @admin.display(description=pgettext_lazy("API token column", "token"))
    def hint_shown(self, obj: ApiToken) -> str:
        return f"{obj.hint}…" if obj.hint else ""

    def save_model(self, request, obj, form, change):
        if not change:
            if not request.user.is_superuser:
                obj.user = request.user
            obj.issue_token()
        super().save_model(request, obj, form, change)

    def response_add(self, request, obj, post_url_continue=None):
        usage = [
            gettext("It authenticates as %(user)s: send it as the header Authorization: Token <token>.")
            % {"user": obj.user}
        ]
        return token_issued_response(self, request, obj, obj.token, usage)
