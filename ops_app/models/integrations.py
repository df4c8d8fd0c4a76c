"""An organization's integration settings: telemetry data sources, LLM endpoints, MCP servers and
the tools discovered on them. Every credential is encrypted at rest."""

from __future__ import annotations

import os
import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ops_app.core import kubeconfig, outbound
from ops_app.core.encryption import EncryptedTextField
from ops_app.models.tenancy import TenantModel

# RFC 1123 labels, as Kubernetes names namespaces.
NAMESPACE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class DataSource(TenantModel):
    """One back end of an organization (docs/integrations.md): a Prometheus, Loki, Tempo,
    Alertmanager or Kubernetes cluster the agents' tools query. Several per kind are allowed; one
    per kind is the default the tools use when the model names none. Credentials are encrypted at rest."""

    class Kind(models.TextChoices):
        PROMETHEUS = "prometheus", "Prometheus"
        LOKI = "loki", "Loki"
        TEMPO = "tempo", "Tempo"
        ALERTMANAGER = "alertmanager", "Alertmanager"
        KUBERNETES = "kubernetes", "Kubernetes"

    class Auth(models.TextChoices):
        NONE = "none", _("None")
        BEARER = "bearer", _("Bearer token")
        BASIC = "basic", _("Basic (user name and password)")
        HEADERS = "headers", _("Custom headers")
        IN_CLUSTER = "in-cluster", _("In-cluster service account (Kubernetes, Ongrid's own pod)")

    name = models.SlugField(
        verbose_name=_("name"),
        max_length=60,
        help_text=_("How agents name it (the tools' `datasource` argument), e.g. prod-eu."),
    )
    kind = models.CharField(verbose_name=_("kind"), max_length=20, choices=Kind.choices)
    url = models.URLField(
        verbose_name=_("URL"),
        max_length=500,
        blank=True,
        help_text=_(
            "Base URL, e.g. http://prometheus:9090; for a cluster its API server, e.g. "
            "https://10.0.0.1:6443 (taken from the kubeconfig when one is pasted)."
        ),
    )
    auth = models.CharField(verbose_name=_("auth"), max_length=10, choices=Auth.choices, default=Auth.NONE)
    username = models.CharField(
        verbose_name=_("username"), max_length=200, blank=True, help_text=_("Basic authentication only.")
    )
    secret = EncryptedTextField(
        verbose_name=_("secret"), blank=True, help_text=_("The bearer token or the basic-auth password.")
    )
    custom_headers = EncryptedTextField(
        verbose_name=_("custom headers"),
        blank=True,
        help_text=_("Custom headers only: one `Name: value` per line (e.g. X-Scope-OrgID: team-a)."),
    )
    verify_tls = models.BooleanField(
        verbose_name=_("verify TLS"), default=True, help_text=_("Check the server's TLS certificate.")
    )
    ca_bundle = models.TextField(
        verbose_name=_("CA bundle"), blank=True, help_text=_("PEM certificates to trust (a private CA).")
    )
    kubeconfig = EncryptedTextField(
        verbose_name=_("kubeconfig"),
        blank=True,
        help_text=_(
            "Kubernetes only, instead of URL + bearer token + CA bundle: a pasted kubeconfig with "
            "inline credentials (token or client certificate data; no files, no exec plugins)."
        ),
    )
    kube_context = models.CharField(
        verbose_name=_("kubeconfig context"),
        max_length=200,
        blank=True,
        help_text=_("The kubeconfig's context to use (default: its current-context)."),
    )
    namespaces = models.CharField(
        verbose_name=_("namespaces"),
        max_length=1000,
        blank=True,
        help_text=_(
            "Kubernetes only: the namespaces the agents may read and change, comma-separated (empty: all)."
        ),
    )
    timeout = models.FloatField(
        verbose_name=_("timeout (seconds)"), default=10.0, help_text=_("Seconds per request.")
    )
    is_default = models.BooleanField(
        verbose_name=_("default"), default=False, help_text=_("The one the tools use when none is named.")
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("data source")
        verbose_name_plural = _("data sources")
        ordering = ["kind", "name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="datasource_org_name_unique"),
            models.UniqueConstraint(
                fields=["organization", "kind"],
                condition=models.Q(is_default=True),
                name="datasource_one_default_per_kind",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"

    def clean(self) -> None:
        if self.timeout is not None and not 0.5 <= self.timeout <= 300:
            raise ValidationError({"timeout": _("Between 0.5 and 300 seconds.")})
        if self.auth == self.Auth.BASIC and not self.username:
            raise ValidationError({"username": _("Basic authentication needs a user name.")})
        if self.kind == self.Kind.KUBERNETES:
            self._clean_cluster()
        elif not self.url:
            raise ValidationError({"url": _("This field is required.")})
        outbound.validate(
            url=outbound.refusal(self.url, base=True),
            custom_headers=outbound.header_refusal(self.custom_headers),
        )

    def namespace_list(self) -> list[str]:
        """The namespaces a cluster's tools are kept to (empty: all)."""
        return [n.strip() for n in self.namespaces.replace("\n", ",").split(",") if n.strip()]

    def _clean_cluster(self) -> None:
        """A cluster is reached with a pasted kubeconfig (its server becomes the URL, so the egress
        policy judges the address really dialled) or with URL + bearer token."""
        bad = [n for n in self.namespace_list() if not NAMESPACE_NAME.match(n)]
        if bad:
            raise ValidationError(
                {"namespaces": _("Not a namespace name: %(names)s") % {"names": ", ".join(bad)}}
            )
        if self.auth == self.Auth.IN_CLUSTER:
            self._clean_in_cluster()
            return
        if self.kubeconfig.strip():
            try:
                access = kubeconfig.parse(self.kubeconfig, self.kube_context)
            except kubeconfig.KubeconfigError as error:
                raise ValidationError({"kubeconfig": str(error)}) from None
            self.url = access.server
            return
        if not self.url:
            raise ValidationError({"url": _("Give the API server URL, or paste a kubeconfig.")})
        if self.auth != self.Auth.BEARER or not self.secret:
            raise ValidationError(
                {"secret": _("A cluster needs a bearer token (a service account token) or a kubeconfig.")}
            )

    def _clean_in_cluster(self) -> None:
        """Ongrid's own service account is platform staff's to lend, to one organization only."""
        allowed = settings.CONFIG.kubernetes_in_cluster
        if not allowed or self.organization_id is None or self.organization.slug != allowed:
            message = _(
                "In-cluster access is not enabled for this organization "
                "(platform staff name it in ONGRID_KUBERNETES_IN_CLUSTER)."
            )
            raise ValidationError({"auth": message})
        url = kubeconfig.in_cluster_url(os.environ)
        if not url:
            raise ValidationError(
                {"auth": _("Ongrid is not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST is unset).")}
            )
        self.url = url


class ClusterObjectState(TenantModel):
    """What the cluster change collector last saw of one object of a cluster (a deployment's
    highest revision, a ConfigMap's resourceVersion and content hashes), so the next poll records
    only what is new (docs/kubernetes.md). One row of kind `cluster` per data source holds
    the cluster's own state (its failure while unreachable) and is the lock two polls queue on."""

    data_source = models.ForeignKey(
        DataSource, verbose_name=_("data source"), on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(verbose_name=_("kind"), max_length=20)
    namespace = models.CharField(verbose_name=_("namespace"), max_length=63, blank=True)
    name = models.CharField(verbose_name=_("name"), max_length=253, blank=True)
    version = models.CharField(verbose_name=_("version"), max_length=64, blank=True)
    content = models.JSONField(verbose_name=_("content"), default=dict, blank=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("cluster object state")
        verbose_name_plural = _("cluster object states")
        constraints = [
            models.UniqueConstraint(
                fields=["data_source", "kind", "namespace", "name"], name="cluster_object_state_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.data_source_id}:{self.kind}/{self.namespace}/{self.name}@{self.version}"


def validate_model_aliases(value: object) -> None:
    """A persona's `model: sonnet` must reach the endpoint as a real model name: every alias maps
    to one model name (text), and never to another alias (no chains to follow at request time)."""
    if not isinstance(value, dict):
        raise ValidationError(_('Give a mapping of alias to model, like {"sonnet": "gpt-4o"}.'))
    for alias, model in value.items():
        if not alias.strip() or alias.strip() == "inherit":
            raise ValidationError(_("An alias must be a name other than 'inherit' (the caller's model)."))
        if not isinstance(model, str) or not model.strip():
            raise ValidationError(
                _("The alias %(alias)s must map to a model name (text).") % {"alias": repr(alias)}
            )
        if model in value or model == "inherit":
            raise ValidationError(
                _("The alias %(alias)s maps to another alias; give a model name.") % {"alias": repr(alias)}
            )


class LLMEndpoint(TenantModel):
    """An organization's own OpenAI-compatible model endpoint (OpenAI, Azure OpenAI, Ollama, vLLM, a
    LiteLLM proxy...). The default one serves every agent of the organization; a persona's `model`
    still overrides the model name. Without one, the deployment's environment is used."""

    name = models.SlugField(
        verbose_name=_("name"), max_length=60, help_text=_("Shown in the audit pages' usage per endpoint.")
    )
    base_url = models.URLField(
        verbose_name=_("base URL"),
        max_length=500,
        blank=True,
        help_text=_("e.g. http://ollama:11434/v1; blank for the OpenAI API."),
    )
    api_key = EncryptedTextField(
        verbose_name=_("API key"), blank=True, help_text=_("Encrypted at rest, never shown again.")
    )
    default_model = models.CharField(
        verbose_name=_("default model"),
        max_length=200,
        help_text=_("Used unless a persona names its own model."),
    )
    timeout = models.FloatField(
        verbose_name=_("timeout (seconds)"), default=60.0, help_text=_("Seconds per request.")
    )
    max_retries = models.PositiveSmallIntegerField(
        verbose_name=_("max. retries"), default=3, help_text=_("Retries of 429 / 5xx / broken connections.")
    )
    is_default = models.BooleanField(
        verbose_name=_("default"), default=True, help_text=_("The endpoint the organization's agents use.")
    )
    embedding_model = models.CharField(
        verbose_name=_("embedding model"),
        max_length=200,
        blank=True,
        help_text=_(
            "e.g. text-embedding-3-small or nomic-embed-text. When set (on the default endpoint), the "
            "knowledge vault is also searched by meaning; blank for full-text search only."
        ),
    )
    embedding_error = models.CharField(
        verbose_name=_("last embedding error"), max_length=300, blank=True, editable=False
    )
    model_aliases = models.JSONField(
        verbose_name=_("model aliases"),
        default=dict,
        blank=True,
        validators=[validate_model_aliases],
        help_text=_(
            'Which of this endpoint\'s models a persona\'s model alias means, e.g. {"sonnet": "gpt-4o", '
            '"opus": "o3", "haiku": "gpt-4o-mini"}. An alias missing here runs on the default model.'
        ),
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("LLM endpoint")
        verbose_name_plural = _("LLM endpoints")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="llmendpoint_org_name_unique"),
            models.UniqueConstraint(
                fields=["organization"], condition=models.Q(is_default=True), name="llmendpoint_one_default"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.model_aliases is None:  # the admin's emptied text area: no aliases
            self.model_aliases = {}
        if self.timeout is not None and not 1 <= self.timeout <= 600:
            raise ValidationError({"timeout": _("Between 1 and 600 seconds.")})
        if self.max_retries is not None and self.max_retries > 10:
            raise ValidationError({"max_retries": _("At most 10.")})
        outbound.validate(base_url=self.base_url and outbound.refusal(self.base_url))


MCP_NAME = RegexValidator(r"^[a-z0-9][a-z0-9-]{0,39}$", _("Lower-case letters, digits and dashes (max 40)."))


class McpServer(TenantModel):
    """An MCP tool server an organization plugs in (docs/integrations.md). Its tools are discovered
    on save and on demand, and reach the organization's agents as `mcp__<server>__<tool>`."""

    class Transport(models.TextChoices):
        STREAMABLE_HTTP = "streamable_http", _("Streamable HTTP")
        SSE = "sse", _("SSE (older servers)")
        STDIO = "stdio", _("stdio (a command on the Ongrid host; platform staff only)")

    name = models.CharField(
        verbose_name=_("name"),
        max_length=40,
        validators=[MCP_NAME],
        help_text=_("The `<server>` of the tool names."),
    )
    transport = models.CharField(
        verbose_name=_("transport"),
        max_length=20,
        choices=Transport.choices,
        default=Transport.STREAMABLE_HTTP,
    )
    url = models.URLField(
        verbose_name=_("URL"), max_length=500, blank=True, help_text=_("e.g. http://grafana-mcp:8000/mcp")
    )
    command = models.CharField(
        verbose_name=_("command"),
        max_length=500,
        blank=True,
        help_text=_("stdio only: the command line that starts the server."),
    )
    headers = EncryptedTextField(
        verbose_name=_("headers"),
        blank=True,
        help_text=_("HTTP headers, one `Name: value` per line (e.g. Authorization: Bearer ...)."),
    )
    timeout = models.FloatField(
        verbose_name=_("timeout (seconds)"), default=30.0, help_text=_("Seconds per tool call.")
    )
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    discovered_at = models.DateTimeField(
        verbose_name=_("discovered at"), null=True, blank=True, editable=False
    )
    discovery_error = models.TextField(verbose_name=_("discovery error"), blank=True, editable=False)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("MCP server")
        verbose_name_plural = _("MCP servers")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="mcpserver_org_name_unique")
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.transport == self.Transport.STDIO:
            if not settings.CONFIG.mcp_allow_stdio:
                raise ValidationError(
                    {"transport": _("stdio servers are disabled on this Ongrid (ONGRID_MCP_ALLOW_STDIO).")}
                )
            if not self.command.strip():
                raise ValidationError({"command": _("A stdio server needs its command.")})
        elif not self.url:
            raise ValidationError({"url": _("This transport needs the server's URL.")})
        if self.timeout is not None and not 1 <= self.timeout <= 600:
            raise ValidationError({"timeout": _("Between 1 and 600 seconds.")})
        outbound.validate(
            url=self.transport != self.Transport.STDIO and outbound.refusal(self.url),
            headers=outbound.header_refusal(self.headers),
        )


class McpTool(TenantModel):
    """One tool an MCP server offers, as last discovered. Its class is the admin's decision: every
    tool is a write (reviewed before it runs) until an admin marks it read."""

    class ToolClass(models.TextChoices):
        READ = "read", _("read")
        WRITE = "write", _("write (reviewed before it runs)")

    server = models.ForeignKey(
        McpServer, verbose_name=_("server"), on_delete=models.CASCADE, related_name="tools"
    )
    name = models.CharField(verbose_name=_("name"), max_length=200, editable=False)
    description = models.TextField(verbose_name=_("description"), blank=True, editable=False)
    input_schema = models.JSONField(verbose_name=_("input schema"), default=dict, blank=True, editable=False)
    tool_class = models.CharField(
        verbose_name=_("tool class"), max_length=10, choices=ToolClass.choices, default=ToolClass.WRITE
    )
    discovered_at = models.DateTimeField(
        verbose_name=_("discovered at"), default=timezone.now, editable=False
    )

    class Meta:
        verbose_name = _("MCP tool")
        verbose_name_plural = _("MCP tools")
        ordering = ["server", "name"]
        constraints = [models.UniqueConstraint(fields=["server", "name"], name="mcptool_server_name_unique")]

    def __str__(self) -> str:
        return f"{self.server.name}/{self.name}"
