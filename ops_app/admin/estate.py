"""The managed estate in the admin: devices (write-only SSH secrets), incidents and their alerts,
alert rules, the read-only change events, the topology and the Alertmanager receivers."""

from django import forms
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ops_app.admin.scoping import TenantScopedAdmin
from ops_app.admin.token_page import token_issued_response
from ops_app.estate import devices
from ops_app.models import (
    Alert,
    AlertmanagerReceiver,
    AlertRule,
    ChangeEvent,
    Device,
    Incident,
    TopologyEdge,
    TopologyNode,
)


class DeviceAdminForm(forms.ModelForm):
    """Secrets are write-only: never rendered back into the page, kept when left blank."""

    SECRETS = ("ssh_private_key", "ssh_password")

    ssh_private_key = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "autocomplete": "off"}),
        help_text=_("Leave blank to keep the stored key. Never shown again."),
    )
    ssh_password = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text=_("Leave blank to keep the stored password."),
    )
    clear_ssh_secrets = forms.BooleanField(required=False, help_text=_("Forget the stored key and password."))

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

    local_refusal: str | None = None  # set per request by DeviceAdmin.get_form

    def clean_transport(self):
        transport = self.cleaned_data.get("transport")
        touches_local = transport == Device.Transport.LOCAL or (
            self.instance.pk and self.instance.transport == Device.Transport.LOCAL
        )
        if touches_local and self.local_refusal:
            raise forms.ValidationError(self.local_refusal)
        return transport

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

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.local_refusal = devices.local_device_refusal(request.user)
        return form


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
    readonly_fields = ("webhook", "last_delivery_at", "created_at")
    actions = ["issue_new_token"]

    @admin.display(description=_("Webhook"))
    def webhook(self, obj: AlertmanagerReceiver) -> str:
        if not obj.pk:
            return gettext("A token is generated and shown once when you save.")
        return gettext(
            'POST %(url)s with the header "Authorization: Bearer <token>" (the token was shown once '
            'when it was issued; use the action "Issue a new token" to replace it).'
        ) % {"url": reverse("alertmanager-webhook-bearer")}

    def response_add(self, request, obj, post_url_continue=None):
        token = getattr(obj, "token", None)
        if token:
            return self._token_page(request, obj, token)
        return super().response_add(request, obj, post_url_continue)

    @admin.action(description=_("Issue a new token (the old one stops working)"), permissions=["change"])
    def issue_new_token(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, gettext("Select exactly one receiver."), messages.ERROR)
            return None
        receiver = queryset.get()
        token = receiver.issue_token()
        receiver.save()
        return self._token_page(request, receiver, token)

    def _token_page(self, request, obj, token):
        url = request.build_absolute_uri(reverse("alertmanager-webhook-bearer"))
        example = (
            "receivers:\n"
            "  - name: ongrid\n"
            "    webhook_configs:\n"
            f'      - url: "{url}"\n'
            "        send_resolved: true\n"
            "        http_config:\n"
            "          authorization:\n"
            f'            credentials: "{token}"'
        )
        usage = [
            gettext("Alertmanager posts to %(url)s with the header Authorization: Bearer <token>:")
            % {"url": url},
        ]
        return token_issued_response(self, request, obj, token, usage, example)
