from django import forms
from django.contrib import admin, messages
from django.utils.translation import gettext as _

from incidents_app.alerting import sending
from incidents_app.models import (
    Investigation,
    InvestigationPolicy,
    NotificationChannel,
    NotificationDelivery,
    NotificationRule,
    SourceWriteback,
)
from ops_app.admin.scoping import ReadOnlyTenantAdmin, TenantScopedAdmin


@admin.register(InvestigationPolicy)
class InvestigationPolicyAdmin(TenantScopedAdmin):
    list_display = ("organization", "enabled", "min_severity", "cooldown_minutes", "max_concurrent")

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        secret = form.base_fields.get("webhook_secret")
        if secret is not None:
            # Never rendered back: blank keeps the stored secret.
            secret.widget = forms.PasswordInput(render_value=False)
            secret.required = False
        return form

    def save_model(self, request, obj, form, change):
        if change and not form.cleaned_data.get("webhook_secret"):
            obj.webhook_secret = type(obj).objects.get(pk=obj.pk).webhook_secret
        super().save_model(request, obj, form, change)


@admin.register(Investigation)
class InvestigationAdmin(TenantScopedAdmin):
    list_display = ("pk", "incident", "status", "trigger", "confidence", "created_at")
    list_filter = ("status", "trigger")
    readonly_fields = [f.name for f in Investigation._meta.fields]

    def has_add_permission(self, request):
        return False


# --- alert-time notifications (docs/alerts.md) -------------------------------------------------------


@admin.register(NotificationChannel)
class NotificationChannelAdmin(TenantScopedAdmin):
    """The webhook secret is write-only (blank keeps the stored one); "Send a test" sends a sample
    message and says sent, or why not as a status or an error class, never the remote's words."""

    list_display = ("name", "kind", "enabled", "max_messages", "window_minutes")
    list_filter = ("kind", "enabled")
    actions = ["send_test"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        secret = form.base_fields.get("webhook_secret")
        if secret is not None:
            secret.widget = forms.PasswordInput(render_value=False)
            secret.required = False
        return form

    def save_model(self, request, obj, form, change):
        if change and not form.cleaned_data.get("webhook_secret"):
            obj.webhook_secret = type(obj).objects.get(pk=obj.pk).webhook_secret
        super().save_model(request, obj, form, change)

    @admin.action(description=_("Send a test"))
    def send_test(self, request, queryset) -> None:
        for channel in queryset:
            problem = sending.send_test(channel)
            if problem:
                verdict = _("%(channel)s: failed: %(error)s") % {"channel": channel.name, "error": problem}
                self.message_user(request, verdict, messages.ERROR)
            else:
                self.message_user(
                    request, _("%(channel)s: sent") % {"channel": channel.name}, messages.SUCCESS
                )


@admin.register(NotificationRule)
class NotificationRuleAdmin(TenantScopedAdmin):
    list_display = ("name", "enabled", "min_severity", "group_minutes", "quiet_start", "quiet_end")
    list_filter = ("enabled", "min_severity")
    filter_horizontal = ("channels", "sources")


@admin.register(NotificationDelivery)
class NotificationDeliveryAdmin(ReadOnlyTenantAdmin):
    list_display = (
        "created_at",
        "channel",
        "incident",
        "kind",
        "attempts",
        "status",
        "last_error",
        "sent_at",
    )
    list_filter = ("status", "kind")
    fields = (
        "channel",
        "rule",
        "incident",
        "kind",
        "status",
        "attempts",
        "next_attempt_at",
        "last_error",
        "created_at",
        "sent_at",
    )
    readonly_fields = fields


@admin.register(SourceWriteback)
class SourceWritebackAdmin(ReadOnlyTenantAdmin):
    """The writes back to alert sources with their outcome (docs/alerts.md): listed to see what
    is pending or failed; the outbox is the only writer."""

    list_display = ("pk", "incident", "source", "kind", "status", "attempts", "last_error", "next_attempt_at")
    list_filter = ("status", "kind")
    readonly_fields = [f.name for f in SourceWriteback._meta.fields]
