import json

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import Count
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.html import format_html
from django.utils.translation import gettext, pgettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from ops_app import (
    admin_tenancy,  # noqa: F401 - registers organizations, memberships, users
    datasources,
    devices,
    knowledge,
    llm_endpoints,
    mcp_servers,
)
from ops_app.admin_mixins import TenantScopedAdmin
from ops_app.models import (
    Alert,
    AlertmanagerReceiver,
    AlertRule,
    ApiToken,
    ChangeEvent,
    DataSource,
    Device,
    Incident,
    KnowledgeDocument,
    LLMEndpoint,
    McpServer,
    McpTool,
    TopologyEdge,
    TopologyNode,
)
from ops_app.tasks import index_knowledge_document
from ops_app.tenancy import organization_of, sees_all_tenants

# --- the managed estate -----------------------------------------------------------------------


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


def token_issued_response(model_admin, request, obj, token: str, usage: list[str], example: str = ""):
    """The one page that ever shows a token Ongrid issued (rendered, never stored in a message)."""
    opts = model_admin.model._meta
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": opts,
        "title": gettext("New token of %(owner)s") % {"owner": obj},
        "token": token,
        "usage": usage,
        "example": example,
        "back_url": reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk]),
    }
    response = TemplateResponse(request, "admin/ops_app/token_issued.html", context)
    add_never_cache_headers(response)
    return response


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


class KnowledgeDocumentForm(forms.ModelForm):
    """Paste Markdown/text, or upload a Markdown, text or PDF file (its text replaces the content)."""

    upload = forms.FileField(required=False, help_text=_("Markdown, text or PDF; up to 5 MB."))

    class Meta:
        model = KnowledgeDocument
        fields = ["title", "source", "content"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["content"].required = False
        self.fields["source"].required = False
        self.fields["title"].required = False

    def clean(self) -> dict:
        data = super().clean()
        upload = data.get("upload")
        if upload is not None:
            name = knowledge.safe_filename(upload.name)
            try:
                text = knowledge.extract_text(name, upload.read())
            except knowledge.KnowledgeInputError as exc:
                raise forms.ValidationError({"upload": str(exc)}) from None
            fallback = name.rsplit(".", 1)[0].replace("-", " ")
            title, body = knowledge.title_of(text, fallback) if name.endswith(".md") else (fallback, text)
            data["content"] = body
            data["source"] = data.get("source") or name
            data["title"] = data.get("title") or title
        if not (data.get("content") or "").strip():
            raise forms.ValidationError(gettext("Paste the document's text or upload a file."))
        if not data.get("title"):
            raise forms.ValidationError({"title": gettext("A title is required.")})
        data["source"] = data.get("source") or knowledge.safe_filename(data["title"]) + ".md"
        organization = data.get("organization") or getattr(self, "organization", None)
        clash = KnowledgeDocument.objects.filter(
            organization=organization, source_kind=self.instance.source_kind, source=data["source"]
        ).exclude(pk=self.instance.pk)
        if organization is not None and clash.exists():
            raise forms.ValidationError(
                {"source": gettext("Another document of this organization has this source name.")}
            )
        return data


@admin.register(KnowledgeDocument)
class KnowledgeDocumentAdmin(TenantScopedAdmin):
    form = KnowledgeDocumentForm
    list_display = ("title", "source_kind", "source", "passage_count", "indexed", "updated_at")
    list_filter = ("source_kind",)
    search_fields = ("title", "source")
    readonly_fields = ("source_kind", "content_hash", "indexed_hash", "created_at", "updated_at")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(passage_total=Count("passages"))

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.organization = organization_of(request.user)  # for the duplicate-source check
        return form

    @admin.display(description=_("passages"), ordering="passage_total")
    def passage_count(self, obj: KnowledgeDocument) -> int:
        return obj.passage_total

    @admin.display(boolean=True)
    def indexed(self, obj: KnowledgeDocument) -> bool:
        return obj.is_indexed

    def save_model(self, request, obj, form, change):
        for field in ("content", "source", "title"):
            setattr(obj, field, form.cleaned_data[field])
        obj.content_hash = knowledge.content_hash(obj.title, obj.content)
        super().save_model(request, obj, form, change)
        if not obj.is_indexed:
            document_id = obj.pk
            transaction.on_commit(lambda: index_knowledge_document.delay(document_id))


# --- integrations -----------------------------------------------------------------------------


class NameUniqueInOrganization:
    """A form mixin: the row's `name` must not clash with another row of its organization (the
    organization comes from the form, or is stamped by the tenant admin for org admins)."""

    clash_message = _("Another row of this organization has this name.")

    def clean(self) -> dict:
        data = super().clean()
        organization = data.get("organization") or getattr(self, "organization", None)
        name = data.get("name")
        model = self._meta.model
        clash = model.objects.filter(organization=organization, name=name).exclude(pk=self.instance.pk)
        if organization is not None and name and clash.exists():
            raise forms.ValidationError({"name": self.clash_message})
        return data


class DataSourceForm(NameUniqueInOrganization, forms.ModelForm):
    """Secrets (the token or password, the custom headers) are write-only `SecretFormField`s."""

    url = forms.URLField(
        max_length=500, assume_scheme="http", help_text=DataSource._meta.get_field("url").help_text
    )

    class Meta:
        model = DataSource
        fields = [
            "organization",
            "name",
            "kind",
            "url",
            "is_default",
            "auth",
            "username",
            "secret",
            "custom_headers",
            "verify_tls",
            "ca_bundle",
            "timeout",
        ]

    clash_message = _("Another data source of this organization has this name.")


@admin.register(DataSource)
class DataSourceAdmin(TenantScopedAdmin):
    form = DataSourceForm
    list_display = ("name", "kind", "url", "is_default", "auth", "verify_tls", "updated_at")
    list_filter = ("kind", "auth")
    search_fields = ("name", "url")
    actions = ["test_connection"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.organization = organization_of(request.user)  # for the duplicate-name check
        return form

    def save_model(self, request, obj, form, change):
        if not request.user.is_superuser:
            obj.organization = organization_of(request.user)
        datasources.save_data_source(obj)

    @admin.action(description=_("Test connection"), permissions=["view"])
    def test_connection(self, request, queryset):
        for source in queryset:
            answer = datasources.check_connection(source)
            level = messages.SUCCESS if answer.ok else messages.ERROR
            if answer.ok:
                message = gettext("%(source)s (%(kind)s) answers: %(summary)s")
            else:
                message = gettext("%(source)s (%(kind)s) FAILED: %(summary)s")
            values = {
                "source": source.name,
                "kind": source.get_kind_display(),
                "summary": " | ".join(answer.lines),
            }
            self.message_user(request, message % values, level)


class LLMEndpointForm(NameUniqueInOrganization, forms.ModelForm):
    base_url = forms.URLField(
        max_length=500,
        required=False,
        assume_scheme="http",
        help_text=LLMEndpoint._meta.get_field("base_url").help_text,
    )

    class Meta:
        model = LLMEndpoint
        fields = [
            "organization",
            "name",
            "base_url",
            "api_key",
            "default_model",
            "timeout",
            "max_retries",
            "is_default",
        ]

    clash_message = _("Another endpoint of this organization has this name.")


@admin.register(LLMEndpoint)
class LLMEndpointAdmin(TenantScopedAdmin):
    form = LLMEndpointForm
    list_display = ("name", "base_url", "default_model", "is_default", "timeout", "max_retries", "updated_at")
    search_fields = ("name", "base_url", "default_model")
    actions = ["test_endpoint"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.organization = organization_of(request.user)  # for the duplicate-name check
        return form

    def save_model(self, request, obj, form, change):
        if not request.user.is_superuser:
            obj.organization = organization_of(request.user)
        llm_endpoints.save_llm_endpoint(obj)

    @admin.action(description=_("Test (list the models it serves)"), permissions=["view"])
    def test_endpoint(self, request, queryset):
        for endpoint in queryset:
            listing = llm_endpoints.list_models(endpoint)
            if listing.ok:
                served = ", ".join(listing.models) or pgettext("no model served", "none")
                values = {"name": endpoint.name, "models": served, "default": repr(endpoint.default_model)}
                if endpoint.default_model in listing.models:
                    message = gettext("%(name)s serves: %(models)s")
                else:
                    message = gettext(
                        "%(name)s serves: %(models)s (the default model %(default)s is not among them)"
                    )
                self.message_user(request, message % values, messages.SUCCESS)
            else:
                message = gettext("%(name)s FAILED: %(error)s") % {
                    "name": endpoint.name,
                    "error": listing.error,
                }
                self.message_user(request, message, messages.ERROR)


class McpToolInline(admin.TabularInline):
    """Discovered tools: only their class is the admin's to set (write until marked read)."""

    model = McpTool
    extra = 0
    can_delete = False
    fields = ("name", "tool_class", "description", "schema")
    readonly_fields = ("name", "description", "schema")

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description=_("input schema"))
    def schema(self, obj: McpTool) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.input_schema, indent=2, ensure_ascii=False))


class McpServerForm(NameUniqueInOrganization, forms.ModelForm):
    url = forms.URLField(max_length=500, required=False, assume_scheme="http")
    platform_staff = False  # set per request by the admin

    class Meta:
        model = McpServer
        fields = ["organization", "name", "transport", "url", "command", "headers", "timeout", "enabled"]

    clash_message = "Another MCP server of this organization has this name."

    def clean(self) -> dict:
        data = super().clean()
        # A stdio server runs its command on the Ongrid host: only platform staff may choose that
        # transport or its command, even where ONGRID_MCP_ALLOW_STDIO is on. An org admin may still
        # enable, disable or classify the tools of a stdio server staff set up.
        stdio_edit = {"transport", "command"} & set(self.changed_data)
        if data.get("transport") == McpServer.Transport.STDIO and stdio_edit and not self.platform_staff:
            raise forms.ValidationError(
                {"transport": gettext("Only platform staff may configure an MCP server over stdio.")}
            )
        return data


@admin.register(McpServer)
class McpServerAdmin(TenantScopedAdmin):
    form = McpServerForm
    inlines = [McpToolInline]
    list_display = ("name", "transport", "url", "enabled", "tool_count", "discovered_at", "discovery_error")
    list_filter = ("transport", "enabled")
    search_fields = ("name", "url")
    readonly_fields = ("discovered_at", "discovery_error")
    actions = ["discover"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.organization = organization_of(request.user)  # for the duplicate-name check
        form.platform_staff = sees_all_tenants(request.user)  # stdio is theirs only
        return form

    @admin.display(description=_("tools"))
    def tool_count(self, obj: McpServer) -> int:
        return obj.tools.count()

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if form.instance.enabled:
            self._report(request, form.instance, mcp_servers.discover_tools(form.instance))

    @admin.action(description=_("Discover tools now"), permissions=["change"])
    def discover(self, request, queryset):
        for server in queryset:
            self._report(request, server, mcp_servers.discover_tools(server))

    def _report(self, request, server: McpServer, found: mcp_servers.Discovery) -> None:
        if not found.ok:
            message = gettext("%(name)s: discovery failed: %(error)s") % {
                "name": server.name,
                "error": found.error,
            }
            self.message_user(request, message, messages.ERROR)
            return
        parts = [gettext("%(name)s: %(count)s tools") % {"name": server.name, "count": found.total}]
        if found.added:
            parts.append(
                gettext("new (write until marked read): %(names)s") % {"names": ", ".join(found.added)}
            )
        if found.removed:
            parts.append(gettext("gone: %(names)s") % {"names": ", ".join(found.removed)})
        self.message_user(request, "; ".join(parts), messages.SUCCESS)
