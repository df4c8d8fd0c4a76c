from django import forms
from django.contrib import admin

from incidents_app.models import Investigation, InvestigationPolicy, SourceWriteback
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


@admin.register(SourceWriteback)
class SourceWritebackAdmin(ReadOnlyTenantAdmin):
    """The writes back to alert sources with their outcome (docs/alerts.md): listed to see what
    is pending or failed; the outbox is the only writer."""

    list_display = ("pk", "incident", "source", "kind", "status", "attempts", "last_error", "next_attempt_at")
    list_filter = ("status", "kind")
    readonly_fields = [f.name for f in SourceWriteback._meta.fields]
