from django import forms
from django.contrib import admin, messages
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from im_app import identities
from im_app.connection import test_connection
from im_app.models import IMApp, IMIdentity, OutboxMessage
from im_app.platforms.registry import PLATFORMS
from ops_app.admin.scoping import TenantScopedAdmin
from ops_app.tenancy.scoping import sees_all_tenants


@admin.register(IMApp)
class IMAppAdmin(TenantScopedAdmin):
    """Credentials are encrypted columns, so their form fields are write-only (never rendered back)."""

    list_display = ("name", "platform", "connection_mode", "enabled", "bot_identity")
    list_filter = ("platform", "enabled")
    readonly_fields = ("bot_identity", "webhook_url")
    actions = ["check_connection"]
    fieldsets = (
        (
            None,
            {"fields": ("organization", "name", "platform", "enabled", "connection_mode", "api_base_url")},
        ),
        (
            _("Credentials (write-only)"),
            {
                "fields": (
                    "bot_token",
                    "signing_secret",
                    "app_token",
                    "app_id",
                    "app_secret",
                    "verification_token",
                    "encrypt_key",
                    "webhook_secret",
                )
            },
        ),
        (_("Who and where"), {"fields": ("allow_from", "reply_language", "summary_channel")}),
        (_("Connection"), {"fields": ("webhook_path", "webhook_url", "bot_identity")}),
    )

    def get_fieldsets(self, request, obj=None):
        """Only platform staff choose the organization; an org admin's apps are their own."""
        fieldsets = super().get_fieldsets(request, obj)
        if sees_all_tenants(request.user):
            return fieldsets
        first_name, first = fieldsets[0]
        kept = tuple(field for field in first["fields"] if field != "organization")
        return ((first_name, {**first, "fields": kept}), *fieldsets[1:])

    @admin.display(description=_("Webhook URL (path)"))
    def webhook_url(self, obj: IMApp) -> str:
        if obj.pk is None:
            return gettext("Saved first.")
        platform = PLATFORMS.get(obj.platform)
        return platform.webhook_address(obj) if platform is not None else ""

    @admin.action(description=_("Test connection (calls the platform's auth endpoint)"))
    def check_connection(self, request, queryset) -> None:
        for app in queryset:
            ok, answer = test_connection(app)
            level = messages.SUCCESS if ok else messages.ERROR
            if ok:
                verdict = gettext("%(app)s: connected as %(identity)s")
            else:
                verdict = gettext("%(app)s: failed: %(error)s")
            self.message_user(
                request, verdict % {"app": app.name, "identity": answer, "error": answer}, level
            )


class IMIdentityForm(forms.ModelForm):
    """A sender mapped by hand: only to a user it may act as (never platform staff)."""

    def clean(self):
        cleaned = super().clean()
        user, app = cleaned.get("user"), cleaned.get("app")
        if user is not None and app is not None and not identities.may_link(app, user):
            self.add_error(
                "user",
                gettext(
                    "A chat account can only be linked to an active user of the app's organization "
                    "who is not platform staff."
                ),
            )
        return cleaned


@admin.register(IMIdentity)
class IMIdentityAdmin(TenantScopedAdmin):
    """Linked senders: an org admin may unlink one (delete), map it to a user by hand, or confirm
    the user the platform suggested (Slack's profile e-mail)."""

    form = IMIdentityForm
    list_display = ("display_name", "external_id", "app", "user", "suggested_user", "linked_at")
    list_filter = ("app",)
    readonly_fields = ("suggested_user", "code_expires_at", "linked_at")
    exclude = ("code_digest",)
    actions = ["confirm_suggested_user"]

    @admin.action(description=_("Link to the suggested user"))
    def confirm_suggested_user(self, request, queryset) -> None:
        for identity in queryset.select_related("app", "suggested_user__membership"):
            name = identity.display_name or identity.external_id
            if identities.confirm_suggestion(identity):
                message = gettext("%(sender)s: linked to %(user)s.") % {"sender": name, "user": identity.user}
                self.message_user(request, message, messages.SUCCESS)
            else:
                message = gettext("%(sender)s: no suggested user who may be linked.") % {"sender": name}
                self.message_user(request, message, messages.WARNING)


@admin.register(OutboxMessage)
class OutboxMessageAdmin(TenantScopedAdmin):
    """Answers queued while a platform was down (docs/im.md): read-only, written by the relay and
    the drainer alone. `last error` is a short status or class name, never the platform's words."""

    list_display = (
        "created_at",
        "app",
        "kind",
        "status",
        "attempts",
        "last_error",
        "next_attempt_at",
        "delivered_at",
    )
    list_filter = ("status", "kind", "app")
    readonly_fields = (
        "app",
        "session",
        "kind",
        "status",
        "attempts",
        "sent",
        "last_error",
        "next_attempt_at",
        "created_at",
        "delivered_at",
    )
    fields = readonly_fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
