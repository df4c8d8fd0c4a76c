"""An organization's integration settings in the admin: data sources, LLM endpoints and MCP servers,
each with its "Test" or "Discover" action, in the list and as a button on the row's form."""

import json

from django import forms
from django.contrib import admin, messages
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ops_app import cluster_collector
from ops_app.admin.scoping import TenantScopedAdmin
from ops_app.admin.test_button import TestOnFormMixin
from ops_app.integrations import datasources, kubernetes, llm_endpoints, mcp_servers
from ops_app.knowledge import background
from ops_app.models import DataSource, LLMEndpoint, McpServer, McpTool
from ops_app.tenancy.scoping import sees_all_tenants


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
        max_length=500,
        required=False,
        assume_scheme="http",
        help_text=DataSource._meta.get_field("url").help_text,
    )
    # Several headers, one `Name: value` per line: a text area, still write-only.
    custom_headers = DataSource._meta.get_field("custom_headers").formfield(multiline=True)
    kubeconfig = DataSource._meta.get_field("kubeconfig").formfield(multiline=True)

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
            "kubeconfig",
            "kube_context",
            "namespaces",
            "timeout",
        ]

    clash_message = _("Another data source of this organization has this name.")


@admin.register(DataSource)
class DataSourceAdmin(TestOnFormMixin, TenantScopedAdmin):
    form = DataSourceForm
    list_display = ("name", "kind", "url", "is_default", "auth", "verify_tls", "updated_at")
    list_filter = ("kind", "auth")
    search_fields = ("name", "url")
    actions = ["test_connection", "collect_cluster_changes"]
    writer = staticmethod(datasources.save_data_source)
    test_label = _("Test connection")

    @admin.action(description=_("Test connection"), permissions=["view"])
    def test_connection(self, request, queryset):
        for source in queryset:
            self.test_one(request, source)

    @admin.action(description=_("Collect cluster changes now"), permissions=["change"])
    def collect_cluster_changes(self, request, queryset):
        """What the periodic collector would record, now, for the selected clusters (docs/kubernetes.md,
        "Change events from clusters"): after a rollout made while Ongrid was not looking."""
        clusters = queryset.filter(kind=DataSource.Kind.KUBERNETES)
        if not clusters.exists():
            self.message_user(
                request, gettext("None of the selected data sources is a cluster."), messages.WARNING
            )
        for source in clusters:
            recorded, reason = cluster_collector.collect_now(source)
            values = {"source": source.name, "count": recorded, "reason": reason}
            if reason:
                self.message_user(
                    request, gettext("%(source)s: not collected: %(reason)s") % values, messages.ERROR
                )
            else:
                message = gettext("%(source)s: %(count)s change event(s) recorded") % values
                self.message_user(request, message, messages.SUCCESS)

    def test_one(self, request, source: DataSource) -> None:
        if source.kind == DataSource.Kind.KUBERNETES:
            answer = kubernetes.check_connection(source)
        else:
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
            "model_aliases",
            "embedding_model",
        ]

    clash_message = _("Another endpoint of this organization has this name.")


@admin.register(LLMEndpoint)
class LLMEndpointAdmin(TestOnFormMixin, TenantScopedAdmin):
    form = LLMEndpointForm
    list_display = (
        "name", "base_url", "default_model", "is_default", "embedding_model", "timeout", "max_retries",
        "updated_at",
    )  # fmt: skip
    search_fields = ("name", "base_url", "default_model")
    actions = ["test_endpoint", "embed_knowledge_now"]
    readonly_fields = ("embedding_progress", "embedding_error")
    writer = staticmethod(llm_endpoints.save_llm_endpoint)
    test_label = _("Test (list the models it serves)")

    @admin.action(description=_("Test (list the models it serves)"), permissions=["view"])
    def test_endpoint(self, request, queryset):
        for endpoint in queryset:
            self.test_one(request, endpoint)

    @admin.display(description=_("knowledge embedded"))
    def embedding_progress(self, endpoint: LLMEndpoint) -> str:
        """ "N of M passages embedded" with the current embedding model (counts, no list)."""
        if endpoint.pk is None or not endpoint.embedding_model:
            return gettext("semantic search is off (no embedding model)")
        done, total = background.progress(endpoint.organization_id, endpoint.embedding_model)
        return gettext("%(done)s of %(total)s passages embedded") % {"done": done, "total": total}

    @admin.action(description=_("Embed the knowledge now"), permissions=["change"])
    def embed_knowledge_now(self, request, queryset):
        """Embed the passages whose vector is missing or stale, in the background (a Celery task
        with Redis, a thread of this server otherwise); progress shows on the endpoint's page."""
        for endpoint in queryset:
            if not (endpoint.is_default and endpoint.embedding_model):
                message = gettext("%(name)s: not the default endpoint with an embedding model") % {
                    "name": endpoint.name
                }
                self.message_user(request, message, messages.WARNING)
                continue
            background.schedule(endpoint.organization_id)
            message = gettext("%(name)s: embedding the knowledge in the background") % {"name": endpoint.name}
            self.message_user(request, message, messages.SUCCESS)

    def test_one(self, request, endpoint: LLMEndpoint) -> None:
        listing = llm_endpoints.list_models(endpoint)
        if not listing.ok:
            message = gettext("%(name)s FAILED: %(error)s") % {"name": endpoint.name, "error": listing.error}
            self.message_user(request, message, messages.ERROR)
            return
        # How many, and whether the default is one: the names are the endpoint's answer, which a
        # Test never shows back (docs/security.md, "Egress").
        values = {
            "name": endpoint.name,
            "count": len(listing.models),
            "default": repr(endpoint.default_model),
        }
        if endpoint.default_model in listing.models:
            message = gettext(
                "%(name)s answers: it serves the default model %(default)s (models served: %(count)s)"
            )
            level = messages.SUCCESS
        else:
            message = gettext(
                "%(name)s answers, but the default model %(default)s is not among the models "
                "it serves (models served: %(count)s)"
            )
            level = messages.WARNING
        self.message_user(request, message % values, level)


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
    headers = McpServer._meta.get_field("headers").formfield(multiline=True)  # one `Name: value` per line
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
class McpServerAdmin(TestOnFormMixin, TenantScopedAdmin):
    form = McpServerForm
    inlines = [McpToolInline]
    list_display = ("name", "transport", "url", "enabled", "tool_count", "discovered_at", "discovery_error")
    list_filter = ("transport", "enabled")
    search_fields = ("name", "url")
    readonly_fields = ("discovered_at", "discovery_error")
    actions = ["discover"]
    # Its test is discovery: it connects, lists the tools and records them (so it needs "change").
    test_label = _("Test (discover tools now)")
    test_permission = "change"

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
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
            self.test_one(request, server)

    def test_one(self, request, server: McpServer) -> None:
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
