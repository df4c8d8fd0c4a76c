from __future__ import annotations

from zoneinfo import available_timezones

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from ops_app import roles
from ops_app.encryption import EncryptedTextField, new_token, token_digest
from ops_app.tenancy import TenantModel


class Organization(models.Model):
    """A tenant. Every estate, session and audit row belongs to exactly one."""

    name = models.CharField(verbose_name=_("name"), max_length=200, unique=True)
    slug = models.SlugField(verbose_name=_("slug"), max_length=80, unique=True)
    timezone = models.CharField(
        verbose_name=_("timezone"),
        max_length=64,
        default="UTC",
        help_text=_(
            "IANA zone the organization works in (e.g. Europe/Madrid): new schedules run on its clock."
        ),
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("organization")
        verbose_name_plural = _("organizations")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.timezone not in available_timezones():
            raise ValidationError(
                {"timezone": _("Unknown time zone %(zone)s.") % {"zone": repr(self.timezone)}}
            )


class Membership(models.Model):
    """Ties a user to exactly one organization. The role is the user's group (see ops_app.roles)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="membership"
    )
    organization = models.ForeignKey(
        Organization, verbose_name=_("organization"), on_delete=models.CASCADE, related_name="memberships"
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    timezone = models.CharField(
        verbose_name=_("timezone"),
        max_length=64,
        blank=True,
        help_text=_("IANA zone the pages show times in (e.g. Europe/Madrid); blank: the browser's own zone."),
    )
    language = models.CharField(
        verbose_name=_("language"),
        max_length=16,
        blank=True,
        help_text=_(
            "Language of the pages and the agents' replies (en, es, fr, zh-hans); blank: the browser's"
        ),
    )

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        indexes = [models.Index(fields=["organization"], name="membership_org_idx")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organization}"

    @property
    def role(self) -> str | None:
        names = {group.name for group in self.user.groups.all()}  # prefetch-friendly
        for role in (roles.ORG_ADMIN, roles.AUDITOR, roles.MEMBER):
            if role in names:
                return role
        return None


class Device(TenantModel):
    """A host (or appliance) of the managed estate. Host tools reach it through `transport`."""

    class Kind(models.TextChoices):
        SERVER = "server", _("Server")
        VM = "vm", _("Virtual machine")
        CONTAINER = "container", _("Container")
        DATABASE = "database", _("Database")
        NETWORK = "network", _("Network device")
        OTHER = "other", _("Other")

    class Transport(models.TextChoices):
        LOCAL = "local", _("Local (the Ongrid host itself)")
        SSH = "ssh", "SSH"

    class KnownHosts(models.TextChoices):
        STRICT = "strict", _("Strict: the host key must be in the known-hosts text")
        ACCEPT_NEW = "accept-new", _("Trust on first use")
        IGNORE = "ignore", _("Do not check (lab use only)")

    name = models.CharField(verbose_name=_("name"), max_length=200)
    address = models.CharField(
        verbose_name=_("address"), max_length=255, blank=True, help_text=_("Host name or IP address.")
    )
    kind = models.CharField(verbose_name=_("kind"), max_length=20, choices=Kind.choices, default=Kind.SERVER)
    labels = models.JSONField(verbose_name=_("labels"), default=dict, blank=True)
    transport = models.CharField(
        verbose_name=_("transport"), max_length=10, choices=Transport.choices, default=Transport.SSH
    )
    ssh_port = models.PositiveIntegerField(verbose_name=_("SSH port"), default=22)
    ssh_username = models.CharField(verbose_name=_("SSH username"), max_length=100, blank=True)
    ssh_private_key = EncryptedTextField(
        verbose_name=_("SSH private key"),
        blank=True,
        help_text=_("PEM/OpenSSH private key; encrypted at rest, never logged."),
    )
    ssh_password = EncryptedTextField(
        verbose_name=_("SSH password"), blank=True, help_text=_("Used when no key is set; encrypted at rest.")
    )
    ssh_known_hosts = models.TextField(
        verbose_name=_("SSH known hosts"), blank=True, help_text=_("known_hosts lines for the strict policy.")
    )
    ssh_host_key_policy = models.CharField(
        verbose_name=_("SSH host-key policy"),
        max_length=20,
        choices=KnownHosts.choices,
        default=KnownHosts.STRICT,
    )
    online = models.BooleanField(verbose_name=_("online"), default=True)
    last_seen_at = models.DateTimeField(verbose_name=_("last seen at"), null=True, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("device")
        verbose_name_plural = _("devices")
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="device_org_name_uniq")]

    def __str__(self) -> str:
        return self.name


class Severity(models.TextChoices):
    """Shared by incidents, alerts and rules; ordered from worst to mildest."""

    CRITICAL = "critical", _("Critical")
    HIGH = "high", _("High")
    WARNING = "warning", _("Warning")
    INFO = "info", _("Info")


SEVERITY_RANK = {Severity.CRITICAL: 0, Severity.HIGH: 1, Severity.WARNING: 2, Severity.INFO: 3}


class AlertmanagerReceiver(TenantModel):
    """The secret that routes an Alertmanager webhook to one organization (the token, never the
    organization id, picks it, so a guessed id cannot inject alerts).

    Only the token's SHA-256 is stored. The token itself exists once, on the instance that issued
    it (`issue_token()`, called by the first save): show it then, it cannot be recovered later."""

    TOKEN_PREFIX = "oga_"

    name = models.CharField(verbose_name=_("name"), max_length=100, default="alertmanager")
    token_hash = models.CharField(verbose_name=_("token hash"), max_length=64, unique=True, editable=False)
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    last_delivery_at = models.DateTimeField(verbose_name=_("last delivery at"), null=True, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("Alertmanager receiver")
        verbose_name_plural = _("Alertmanager receivers")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def issue_token(self) -> str:
        """A new token (replacing any previous one once saved); kept on `self.token` until then."""
        self.token = new_token(self.TOKEN_PREFIX)
        self.token_hash = token_digest(self.token)
        return self.token

    def save(self, *args, **kwargs) -> None:
        if not self.token_hash:
            self.issue_token()
        super().save(*args, **kwargs)

    @classmethod
    def for_token(cls, token: str | None) -> AlertmanagerReceiver | None:
        """The enabled receiver of `token`, or None."""
        if not token:
            return None
        return cls.objects.filter(token_hash=token_digest(token), enabled=True).first()


class ApiToken(models.Model):
    """A token for the REST API (`Authorization: Token <token>`). It authenticates its user, so it
    acts within that user's organization and role. Only the SHA-256 is stored: the token is shown
    once, when issued (`ApiToken.issue`, the admin, `manage.py ongrid_token`)."""

    TOKEN_PREFIX = "ogt_"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(
        verbose_name=_("name"), max_length=100, blank=True, help_text=_("What the token is for.")
    )
    key_hash = models.CharField(verbose_name=_("key hash"), max_length=64, unique=True, editable=False)
    hint = models.CharField(
        verbose_name=_("hint"), max_length=12, editable=False, help_text=_("The token's first characters.")
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(verbose_name=_("last used at"), null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.hint}… ({self.name or self.user})"

    def issue_token(self) -> str:
        """Give this (unsaved) row a new token, kept on `self.token` until the instance is gone."""
        self.token = new_token(self.TOKEN_PREFIX)
        self.key_hash = token_digest(self.token)
        self.hint = self.token[:8]
        return self.token

    @classmethod
    def issue(cls, user, name: str = "") -> tuple[ApiToken, str]:
        """Create a token for `user`; returns the row and the token (the only time it exists)."""
        row = cls(user=user, name=name)
        token = row.issue_token()
        row.save()
        return row, token

    @classmethod
    def for_token(cls, token: str | None) -> ApiToken | None:
        if not token:
            return None
        return cls.objects.select_related("user").filter(key_hash=token_digest(token)).first()


class Incident(TenantModel):
    """Something wrong in the estate, usually one Alertmanager group of alerts."""

    class Status(models.TextChoices):
        FIRING = "firing", _("Firing")
        ACKNOWLEDGED = "acknowledged", _("Acknowledged")
        RESOLVED = "resolved", _("Resolved")

    class Source(models.TextChoices):
        ALERTMANAGER = "alertmanager", "Alertmanager"
        MANUAL = "manual", _("Manual")
        DEMO = "demo", _("Demo estate")

    title = models.CharField(verbose_name=_("title"), max_length=300)
    summary = models.TextField(verbose_name=_("summary"), blank=True)
    severity = models.CharField(
        verbose_name=_("severity"), max_length=10, choices=Severity.choices, default=Severity.WARNING
    )
    status = models.CharField(
        verbose_name=_("status"), max_length=15, choices=Status.choices, default=Status.FIRING
    )
    started_at = models.DateTimeField(verbose_name=_("started at"))
    acknowledged_at = models.DateTimeField(verbose_name=_("acknowledged at"), null=True, blank=True)
    resolved_at = models.DateTimeField(verbose_name=_("resolved at"), null=True, blank=True)
    affected_services = models.JSONField(verbose_name=_("affected services"), default=list, blank=True)
    device = models.ForeignKey(
        Device,
        verbose_name=_("device"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="incidents",
    )
    source = models.CharField(
        verbose_name=_("source"), max_length=20, choices=Source.choices, default=Source.MANUAL
    )
    fingerprint = models.CharField(
        verbose_name=_("fingerprint"),
        max_length=64,
        blank=True,
        help_text=_("Hash of the Alertmanager group key."),
    )
    group_key = models.TextField(verbose_name=_("group key"), blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("incident")
        verbose_name_plural = _("incidents")
        ordering = ["-started_at"]
        indexes = [
            models.Index(fields=["organization", "status", "-started_at"], name="incident_org_status_idx"),
            models.Index(fields=["organization", "-started_at"], name="incident_org_started_idx"),
            models.Index(fields=["organization", "fingerprint"], name="incident_org_fp_idx"),
        ]
        constraints = [
            # One open incident per Alertmanager group: concurrent deliveries cannot open twins.
            models.UniqueConstraint(
                fields=["organization", "fingerprint"],
                condition=models.Q(source="alertmanager") & ~models.Q(status="resolved"),
                name="incident_org_open_group_uniq",
                violation_error_message="This Alertmanager group already has an open incident.",
            ),
            # One open manual incident per fingerprint (a repeated inspection problem): two
            # concurrent reports of the same problem cannot open twins. Blank fingerprints
            # (incidents opened by hand, curated estates) are not constrained.
            models.UniqueConstraint(
                fields=["organization", "fingerprint"],
                condition=models.Q(source="manual")
                & ~models.Q(status="resolved")
                & ~models.Q(fingerprint=""),
                name="incident_org_open_manual_uniq",
                violation_error_message="This problem already has an open incident.",
            ),
        ]

    def __str__(self) -> str:
        return self.title


class Alert(TenantModel):
    """One Alertmanager alert instance: a label set (fingerprint) that started firing at `starts_at`."""

    class Status(models.TextChoices):
        FIRING = "firing", pgettext_lazy("alert status", "Firing")
        RESOLVED = "resolved", pgettext_lazy("alert status", "Resolved")

    incident = models.ForeignKey(
        Incident,
        verbose_name=_("incident"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="alerts",
    )
    name = models.CharField(verbose_name=_("name"), max_length=200, help_text=_("The alertname label."))
    fingerprint = models.CharField(verbose_name=_("fingerprint"), max_length=64)
    status = models.CharField(
        verbose_name=_("status"), max_length=10, choices=Status.choices, default=Status.FIRING
    )
    severity = models.CharField(
        verbose_name=_("severity"), max_length=10, choices=Severity.choices, default=Severity.WARNING
    )
    labels = models.JSONField(verbose_name=_("labels"), default=dict, blank=True)
    annotations = models.JSONField(verbose_name=_("annotations"), default=dict, blank=True)
    starts_at = models.DateTimeField(verbose_name=_("starts at"))
    ends_at = models.DateTimeField(verbose_name=_("ends at"), null=True, blank=True)
    generator_url = models.URLField(verbose_name=_("generator URL"), max_length=1000, blank=True)
    received_at = models.DateTimeField(verbose_name=_("received at"), auto_now=True)

    class Meta:
        verbose_name = _("alert")
        verbose_name_plural = _("alerts")
        ordering = ["-starts_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "fingerprint", "starts_at"], name="alert_org_fp_start_uniq"
            )
        ]
        indexes = [
            models.Index(fields=["organization", "-starts_at"], name="alert_org_starts_idx"),
            models.Index(fields=["organization", "status"], name="alert_org_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class AlertRule(TenantModel):
    """An alerting rule as the estate defines it (Prometheus's live rules are read by the tool)."""

    class Source(models.TextChoices):
        MANUAL = "manual", _("Manual")
        PROMETHEUS = "prometheus", "Prometheus"
        DEMO = "demo", _("Demo estate")

    name = models.CharField(verbose_name=_("name"), max_length=200)
    expression = models.TextField(verbose_name=_("expression"), help_text=_("PromQL expression."))
    for_duration = models.CharField(
        verbose_name=_("for"), max_length=20, blank=True, default="", help_text=_('e.g. "5m".')
    )
    severity = models.CharField(
        verbose_name=_("severity"), max_length=10, choices=Severity.choices, default=Severity.WARNING
    )
    labels = models.JSONField(verbose_name=_("labels"), default=dict, blank=True)
    annotations = models.JSONField(verbose_name=_("annotations"), default=dict, blank=True)
    source = models.CharField(
        verbose_name=_("source"), max_length=20, choices=Source.choices, default=Source.MANUAL
    )
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("alert rule")
        verbose_name_plural = _("alert rules")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="alertrule_org_name_uniq")
        ]

    def __str__(self) -> str:
        return self.name


class ChangeEvent(TenantModel):
    """Who changed what, when: written automatically for tracked models (ops_app.change_events)."""

    class Action(models.TextChoices):
        CREATE = "create", _("Created")
        UPDATE = "update", _("Changed")
        DELETE = "delete", _("Deleted")

    occurred_at = models.DateTimeField(verbose_name=_("occurred at"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("actor"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    actor_name = models.CharField(
        verbose_name=_("actor name"),
        max_length=150,
        blank=True,
        help_text=_("Kept when the user is deleted."),
    )
    action = models.CharField(verbose_name=_("action"), max_length=10, choices=Action.choices)
    resource_type = models.CharField(verbose_name=_("resource type"), max_length=50)
    resource_id = models.CharField(verbose_name=_("resource ID"), max_length=64)
    resource_name = models.CharField(verbose_name=_("resource name"), max_length=300, blank=True)
    summary = models.CharField(verbose_name=_("summary"), max_length=500, blank=True)
    before = models.JSONField(verbose_name=_("before"), default=dict, blank=True)
    after = models.JSONField(verbose_name=_("after"), default=dict, blank=True)

    class Meta:
        verbose_name = _("change event")
        verbose_name_plural = _("change events")
        ordering = ["-occurred_at"]
        indexes = [
            models.Index(fields=["organization", "-occurred_at"], name="change_org_when_idx"),
            models.Index(fields=["organization", "resource_type", "resource_id"], name="change_org_res_idx"),
        ]

    def __str__(self) -> str:
        return self.summary or f"{self.action} {self.resource_type} {self.resource_name}"


class TopologyNode(TenantModel):
    """A vertex of the service graph: a service, host, database, queue..."""

    class Kind(models.TextChoices):
        SERVICE = "service", _("Service")
        HOST = "host", _("Host")
        DATABASE = "database", _("Database")
        CACHE = "cache", _("Cache")
        QUEUE = "queue", _("Queue")
        LOAD_BALANCER = "load_balancer", _("Load balancer")
        EXTERNAL = "external", _("External dependency")
        OTHER = "other", _("Other")

    name = models.CharField(verbose_name=_("name"), max_length=200)
    kind = models.CharField(verbose_name=_("kind"), max_length=20, choices=Kind.choices, default=Kind.SERVICE)
    labels = models.JSONField(verbose_name=_("labels"), default=dict, blank=True)
    description = models.TextField(verbose_name=_("description"), blank=True)
    device = models.ForeignKey(
        Device,
        verbose_name=_("device"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="topology_nodes",
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("topology node")
        verbose_name_plural = _("topology nodes")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="toponode_org_name_uniq")
        ]

    def __str__(self) -> str:
        return self.name


class TopologyEdge(TenantModel):
    """`source` calls / depends on `target`: traffic flows from source to target (downstream)."""

    source = models.ForeignKey(
        TopologyNode, verbose_name=_("source"), on_delete=models.CASCADE, related_name="outgoing"
    )
    target = models.ForeignKey(
        TopologyNode, verbose_name=_("target"), on_delete=models.CASCADE, related_name="incoming"
    )
    protocol = models.CharField(
        verbose_name=_("protocol"), max_length=30, blank=True, help_text=_("http, grpc, postgresql, amqp...")
    )
    description = models.CharField(verbose_name=_("description"), max_length=300, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("topology edge")
        verbose_name_plural = _("topology edges")
        ordering = ["source__name", "target__name"]
        constraints = [
            models.UniqueConstraint(fields=["source", "target", "protocol"], name="topoedge_uniq"),
            models.CheckConstraint(
                condition=~models.Q(source=models.F("target")), name="topoedge_no_self_loop"
            ),
        ]
        indexes = [models.Index(fields=["organization"], name="topoedge_org_idx")]

    def __str__(self) -> str:
        return f"{self.source} → {self.target}" + (f" ({self.protocol})" if self.protocol else "")

    def clean(self) -> None:
        for end in (self.source, self.target):
            if end is not None and self.organization_id and end.organization_id != self.organization_id:
                raise ValidationError(_("Both ends of an edge must belong to the edge's organization."))


class KnowledgeDocument(TenantModel):
    """A runbook or reference text the specialists retrieve from (`query_knowledge`).

    `content_hash` identifies what was saved, `indexed_hash` what the passages were built from:
    when they agree the document is searchable as is, and re-ingesting the same text is a no-op.
    """

    class Source(models.TextChoices):
        VAULT = "vault", _("Vault runbook")
        UPLOAD = "upload", _("Upload")

    title = models.CharField(verbose_name=_("title"), max_length=300)
    source_kind = models.CharField(
        verbose_name=_("source kind"), max_length=10, choices=Source.choices, default=Source.UPLOAD
    )
    source = models.CharField(
        verbose_name=_("source"),
        max_length=500,
        help_text=_("Path inside the vault, or the uploaded file's name."),
    )
    content = models.TextField(verbose_name=_("content"), help_text=_("Markdown or plain text."))
    content_hash = models.CharField(verbose_name=_("content hash"), max_length=64, editable=False)
    indexed_hash = models.CharField(verbose_name=_("indexed hash"), max_length=64, blank=True, editable=False)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("knowledge document")
        verbose_name_plural = _("knowledge documents")
        ordering = ["title"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "source_kind", "source"], name="knowledge_doc_source_uniq"
            )
        ]
        indexes = [
            models.Index(fields=["organization", "-updated_at"], name="knowledge_doc_org_updated_idx"),
            models.Index(fields=["organization", "title"], name="knowledge_doc_org_title_idx"),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_indexed(self) -> bool:
        return bool(self.indexed_hash) and self.indexed_hash == self.content_hash


class KnowledgePassage(TenantModel):
    """One retrievable chunk of a document (a Markdown section, or a few paragraphs).

    `search_text` (document title + heading + text) is what the full-text engines index: an FTS5
    table kept in sync by triggers on SQLite, a GIN expression index on PostgreSQL (migration 0004).
    """

    document = models.ForeignKey(KnowledgeDocument, on_delete=models.CASCADE, related_name="passages")
    position = models.PositiveIntegerField()
    heading = models.CharField(max_length=300, blank=True)
    text = models.TextField()
    search_text = models.TextField()

    class Meta:
        verbose_name = _("knowledge passage")
        verbose_name_plural = _("knowledge passages")
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="knowledge_passage_position_uniq")
        ]
        indexes = [models.Index(fields=["organization"], name="knowledge_passage_org_idx")]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.position} {self.heading}"


class DataSource(TenantModel):
    """One telemetry back end of an organization (docs/integrations.md): a Prometheus, Loki, Tempo
    or Alertmanager the agents' tools query. Several per kind are allowed; one per kind is the
    default the tools use when the model names none. Credentials are encrypted at rest."""

    class Kind(models.TextChoices):
        PROMETHEUS = "prometheus", "Prometheus"
        LOKI = "loki", "Loki"
        TEMPO = "tempo", "Tempo"
        ALERTMANAGER = "alertmanager", "Alertmanager"

    class Auth(models.TextChoices):
        NONE = "none", _("None")
        BEARER = "bearer", _("Bearer token")
        BASIC = "basic", _("Basic (user name and password)")
        HEADERS = "headers", _("Custom headers")

    name = models.SlugField(
        verbose_name=_("name"),
        max_length=60,
        help_text=_("How agents name it (the tools' `datasource` argument), e.g. prod-eu."),
    )
    kind = models.CharField(verbose_name=_("kind"), max_length=20, choices=Kind.choices)
    url = models.URLField(
        verbose_name=_("URL"), max_length=500, help_text=_("Base URL, e.g. http://prometheus:9090")
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
        if self.timeout is not None and not 1 <= self.timeout <= 600:
            raise ValidationError({"timeout": _("Between 1 and 600 seconds.")})
        if self.max_retries is not None and self.max_retries > 10:
            raise ValidationError({"max_retries": _("At most 10.")})


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
