"""Alert sources in the admin, beside the Alertmanager receivers: each kind's setup help, the
receiver URL to paste into the sender (absolute, with a copy button), write-only secrets, the
write-back settings, and for generic sources a live preview of the mapping applied to the last
delivery (docs/alerts.md)."""

from __future__ import annotations

import json

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ops_app.admin.integrations import NameUniqueInOrganization
from ops_app.admin.scoping import TenantScopedAdmin
from ops_app.alert_sources.generic import inbound as generic
from ops_app.core.encryption import KEEP
from ops_app.models import AlertSource
from ops_app.tenancy.scoping import organization_of, sees_all_tenants

Kind = AlertSource.Kind
PREVIEW_PAYLOAD_CHARS = 8000
KIND_HELP = {
    Kind.PAGERDUTY: _(
        "In PagerDuty: Integrations → Generic Webhooks (v3) → New Webhook. Paste the receiver URL "
        "as the Webhook URL, pick the incident events, save, and paste the subscription's signing "
        "secret here as the signing secret."
    ),
    Kind.OPSGENIE: _(
        "In Opsgenie: Settings → Integrations → Add integration → Webhook. Paste the receiver URL "
        "as the Webhook URL and add a custom header X-Ongrid-Token whose value is this source's "
        "auth token (or set a user name here and use basic auth)."
    ),
    Kind.GRAFANA: _(
        "In Grafana: Alerting → Contact points → Add contact point → Webhook. Paste the receiver "
        "URL; for the auth token use Authorization header credentials (Bearer) or basic auth; for "
        "the signing secret set HMAC Signature → Secret (timestamp header, optional: "
        "X-Grafana-Alerting-Signature-Timestamp)."
    ),
    Kind.GENERIC: _(
        "Any JSON sender: POST to the receiver URL with Authorization: Bearer <auth token>, "
        "and/or X-Ongrid-Signature: sha256=<hex HMAC-SHA256 of the body with the signing secret>. "
        "The mapping says where the title, group key, status, severity… are in its JSON."
    ),
}


class AlertSourceForm(NameUniqueInOrganization, forms.ModelForm):
    """Secrets are write-only (SecretFormField: blank keeps the stored value); the mapping of a
    generic source is checked on save, with an error naming its bad key."""

    mapping = forms.JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 12, "cols": 80, "class": "vLargeTextField"}),
        help_text=AlertSource._meta.get_field("mapping").help_text,
    )
    clash_message = _("Another alert source of this organization has this name.")

    class Meta:
        model = AlertSource
        fields = [
            "organization",
            "name",
            "kind",
            "enabled",
            "signing_secret",
            "auth_username",
            "auth_token",
            "mapping",
            "writeback",
            "mirror_state",
            "api_base_url",
            "region",
            "api_key",
            "from_email",
        ]

    def _has(self, data: dict, name: str) -> bool:
        value = data.get(name)
        return bool(getattr(self.instance, name)) if value is KEEP else bool(value)

    def clean(self) -> dict:
        data = super().clean()
        kind = data.get("kind") or self.instance.kind
        if kind == Kind.GENERIC:
            try:
                data["mapping"] = generic.validate_mapping(data.get("mapping") or {})
            except generic.MappingError as exc:
                self.add_error("mapping", str(exc))
            if not (self._has(data, "auth_token") or self._has(data, "signing_secret")):
                self.add_error(
                    "auth_token", gettext("A generic source needs an auth token or a signing secret.")
                )
        elif data.get("mapping") in (None, ""):
            data["mapping"] = {}
        if kind == Kind.GRAFANA and not (self._has(data, "auth_token") or self._has(data, "signing_secret")):
            self.add_error(
                "auth_token",
                gettext("Set an auth token or a signing secret, and the same in Grafana's contact point."),
            )
        if kind == Kind.OPSGENIE and not self._has(data, "auth_token"):
            self.add_error(
                "auth_token", gettext("Opsgenie signs nothing: set the token its custom header sends.")
            )
        if data.get("auth_username") and not self._has(data, "auth_token"):
            self.add_error("auth_token", gettext("Basic auth needs a password: set the auth token."))
        return data


def receiver_url(source: AlertSource) -> str:
    """The source's receiver under ONGRID_PUBLIC_URL (the address senders reach Ongrid at)."""
    return settings.CONFIG.public_url.rstrip("/") + source.path


def may_preview(request: HttpRequest, source: AlertSource) -> bool:
    """Only an org admin of the source's own organization sees its deliveries' content."""
    organization = organization_of(request.user)
    return organization is not None and organization.pk == source.organization_id


def render_preview(mapping: object, payload: object) -> str:
    """The preview's HTML: what the mapping yields from `payload`, or why it yields nothing."""
    if payload is None:
        return format_html("<p>{}</p>", gettext("No delivery yet: the preview uses the last one received."))
    shown = generic.preview(mapping, payload)
    parts = []
    if shown.error:
        parts.append(format_html('<p class="errornote">{}</p>', shown.error))
    if shown.values:
        rows = [
            (key, json.dumps(value) if isinstance(value, dict) else value)
            for key, value in shown.values.items()
        ]
        parts.append(
            format_html(
                "<table><tbody>{}</tbody></table>",
                format_html_join("", "<tr><th>{}</th><td><code>{}</code></td></tr>", rows),
            )
        )
    if shown.missing:
        parts.append(
            format_html(
                "<p>{}</p><ul>{}</ul>",
                gettext("These paths find nothing in the last delivery:"),
                format_html_join("", "<li><code>{}</code></li>", ((m,) for m in shown.missing)),
            )
        )
    body = json.dumps(payload, indent=2, default=str)
    parts.append(
        format_html(
            "<details><summary>{}</summary><pre>{}</pre></details>",
            gettext("The last delivery"),
            body[:PREVIEW_PAYLOAD_CHARS] + ("…" if len(body) > PREVIEW_PAYLOAD_CHARS else ""),
        )
    )
    return mark_safe("".join(parts))  # noqa: S308 - every part built by format_html


@admin.register(AlertSource)
class AlertSourceAdmin(TenantScopedAdmin):
    form = AlertSourceForm
    list_display = ("name", "kind", "enabled", "writeback", "last_delivery_at", "created_at")
    list_filter = ("kind", "enabled", "writeback")
    search_fields = ("name",)

    class Media:
        js = ("vendor/htmx-2.0.11.min.js", "js/admin_htmx.js", "js/admin_copy.js")

    def get_readonly_fields(self, request, obj=None):
        fields = ["receiver", "setup", "mapping_preview", "last_delivery_at", "created_at"]
        if obj is not None and obj.pk:
            fields.insert(0, "kind")  # the URL and the secrets mean nothing to another kind
        return fields

    def get_fieldsets(self, request, obj=None):
        first = ["organization", "name", "kind", "enabled", "receiver", "setup"]
        if not sees_all_tenants(request.user):
            first.remove("organization")
        receiving = ["signing_secret", "auth_username", "auth_token", "last_delivery_at"]
        fieldsets = [
            (None, {"fields": first}),
            (_("Receiving (secrets are write-only)"), {"fields": receiving}),
        ]
        if obj is None or obj.kind == Kind.GENERIC:
            fieldsets.append(
                (_("Mapping (generic JSON senders)"), {"fields": ["mapping", "mapping_preview"]})
            )
        writeback = ["writeback", "mirror_state", "api_base_url", "region", "api_key", "from_email"]
        fieldsets.append((_("Write-back"), {"fields": writeback}))
        return fieldsets

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "api_base_url":
            kwargs["assume_scheme"] = "https"  # every vendor's API is https
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is not None and obj.pk and obj.kind == Kind.GENERIC and "mapping" in form.base_fields:
            form.base_fields["mapping"].widget.attrs.update(
                {
                    "hx-post": reverse("admin:ops_app_alertsource_preview", args=[obj.pk]),
                    "hx-trigger": "input changed delay:400ms",
                    "hx-target": "#mapping-preview",
                    "hx-include": "[name='csrfmiddlewaretoken']",
                }
            )
        return form

    @admin.display(description=_("Receiver URL"))
    def receiver(self, obj: AlertSource) -> str:
        if obj is None or not obj.pk:
            return gettext("Shown once the source is saved.")
        parts = [
            format_html(
                '<input type="text" id="alert-source-url" value="{}" readonly size="90">'
                ' <button type="button" class="button copy-button" data-copy-from="alert-source-url" '
                'data-copied="{}">{}</button>',
                receiver_url(obj),
                gettext("Copied"),
                gettext("Copy"),
            )
        ]
        if not settings.CONFIG.public_url_set:
            parts.append(
                format_html(
                    '<p class="help">{}</p>',
                    gettext(
                        "ONGRID_PUBLIC_URL is not set, so this address is the local default: set it "
                        "to the address the sender reaches Ongrid at and reload this page."
                    ),
                )
            )
        return mark_safe("".join(parts))  # noqa: S308 - every part built by format_html

    @admin.display(description=_("Setting it up"))
    def setup(self, obj: AlertSource) -> str:
        if obj is None or not obj.kind:
            return format_html_join(
                "", "<p><strong>{}</strong>: {}</p>", ((k.label, KIND_HELP[k]) for k in Kind)
            )
        return format_html("<p>{}</p>", KIND_HELP[Kind(obj.kind)])

    @admin.display(description=_("Preview"))
    def mapping_preview(self, obj: AlertSource) -> str:
        if obj is None or not obj.pk:
            return gettext("Shown once the source is saved and has received a delivery.")
        return format_html(
            '<div id="mapping-preview">{}</div>', render_preview(obj.mapping, obj.last_payload)
        )

    def get_urls(self):
        own = [
            path(
                "<path:object_id>/mapping-preview/",
                self.admin_site.admin_view(self.preview_view),
                name="ops_app_alertsource_preview",
            )
        ]
        return own + super().get_urls()

    def preview_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The htmx endpoint: the mapping being edited (POST `mapping`), applied to the last delivery."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        source = self.get_object(request, unquote(object_id))  # scoped to the admin's organization
        if source is None:
            raise Http404
        if not self.has_change_permission(request, source) or not may_preview(request, source):
            raise PermissionDenied
        try:
            mapping = json.loads(request.POST.get("mapping", "") or "{}")
        except ValueError as exc:
            return HttpResponse(
                format_html(
                    '<p class="errornote">{}</p>',
                    gettext("The mapping is not JSON: %(error)s") % {"error": exc},
                )
            )
        return HttpResponse(render_preview(mapping, source.last_payload))
