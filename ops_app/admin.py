from django import forms
from django.contrib import admin
from django.urls import reverse

from ops_app.admin_mixins import TenantScopedAdmin
from ops_app.models import (
    Alert,
    AlertmanagerReceiver,
    AlertRule,
    ChangeEvent,
    Device,
    Incident,
    Membership,
    Organization,
    TopologyEdge,
    TopologyNode,
)


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "created_at")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "organization", "role", "created_at")
    list_filter = ("organization",)
    search_fields = ("user__username", "organization__name")
    list_select_related = ("user", "organization")

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("user__groups")


# --- the managed estate -----------------------------------------------------------------------


class DeviceAdminForm(forms.ModelForm):
    """Secrets are write-only: never rendered back into the page, kept when left blank."""

    SECRETS = ("ssh_private_key", "ssh_password")

    ssh_private_key = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "autocomplete": "off"}),
        help_text="Leave blank to keep the stored key. Never shown again.",
    )
    ssh_password = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Leave blank to keep the stored password.",
    )
    clear_ssh_secrets = forms.BooleanField(required=False, help_text="Forget the stored key and password.")

    class Meta:
        model = Device
        fields = [
            "organization",
            "name",
            "address",
            "kind",
            "labels",
            "online",
            "transport",
            "ssh_port",
            "ssh_username",
            "ssh_private_key",
            "ssh_password",
            "ssh_known_hosts",
            "ssh_host_key_policy",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in self.SECRETS:
            self.initial[name] = ""

    def clean(self):
        cleaned = super().clean()
        for name in self.SECRETS:
            if self.cleaned_data.get("clear_ssh_secrets"):
                cleaned[name] = ""
            elif not cleaned.get(name) and self.instance.pk:
                cleaned[name] = getattr(self.instance, name)
        return cleaned


@admin.register(Device)
class DeviceAdmin(TenantScopedAdmin):
    form = DeviceAdminForm
    list_display = ("name", "address", "kind", "transport", "online", "last_seen_at")
    list_filter = ("kind", "transport", "online")
    search_fields = ("name", "address")
    readonly_fields = ("last_seen_at", "created_at", "updated_at")


class AlertInline(admin.TabularInline):
    model = Alert
    fields = ("name", "status", "severity", "starts_at", "ends_at", "fingerprint")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Incident)
class IncidentAdmin(TenantScopedAdmin):
    list_display = ("title", "severity", "status", "started_at", "resolved_at", "device", "source")
    list_filter = ("status", "severity", "source", ("started_at", admin.DateFieldListFilter))
    search_fields = ("title", "summary", "fingerprint", "device__name")
    list_select_related = ("device",)
    date_hierarchy = "started_at"
    readonly_fields = ("fingerprint", "group_key", "created_at", "updated_at")
    inlines = [AlertInline]


@admin.register(Alert)
class AlertAdmin(TenantScopedAdmin):
    list_display = ("name", "status", "severity", "starts_at", "ends_at", "incident")
    list_filter = ("status", "severity", ("starts_at", admin.DateFieldListFilter))
    search_fields = ("name", "fingerprint", "incident__title")
    list_select_related = ("incident",)
    readonly_fields = ("received_at",)


@admin.register(AlertRule)
class AlertRuleAdmin(TenantScopedAdmin):
    list_display = ("name", "severity", "for_duration", "enabled", "source", "updated_at")
    list_filter = ("severity", "enabled", "source")
    search_fields = ("name", "expression")


@admin.register(ChangeEvent)
class ChangeEventAdmin(TenantScopedAdmin):
    """Change events are a record: readable, never edited by hand."""

    list_display = ("occurred_at", "actor_name", "action", "resource_type", "resource_name", "summary")
    list_filter = ("action", "resource_type", ("occurred_at", admin.DateFieldListFilter))
    search_fields = ("resource_name", "resource_id", "actor_name", "summary")
    date_hierarchy = "occurred_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(TopologyNode)
class TopologyNodeAdmin(TenantScopedAdmin):
    list_display = ("name", "kind", "device", "updated_at")
    list_filter = ("kind",)
    search_fields = ("name", "description", "device__name")
    list_select_related = ("device",)


@admin.register(TopologyEdge)
class TopologyEdgeAdmin(TenantScopedAdmin):
    list_display = ("source", "target", "protocol", "description")
    list_filter = ("protocol",)
    search_fields = ("source__name", "target__name", "protocol", "description")
    list_select_related = ("source", "target")


@admin.register(AlertmanagerReceiver)
class AlertmanagerReceiverAdmin(TenantScopedAdmin):
    list_display = ("name", "enabled", "last_delivery_at", "created_at")
    list_filter = ("enabled",)
    search_fields = ("name",)
    readonly_fields = ("webhook_path", "last_delivery_at", "created_at")

    @admin.display(description="Webhook URL path (put your Ongrid's address in front)")
    def webhook_path(self, obj: AlertmanagerReceiver) -> str:
        if not obj.pk:
            return "Generated when you save."
        return reverse("alertmanager-webhook", args=[obj.token])
