"""The managed estate: devices, incidents and their alerts, alert rules, change events, the
service topology and the Alertmanager receivers that feed incidents in."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from ops_app.core.encryption import EncryptedTextField, new_token, token_digest
from ops_app.models.tenancy import TenantModel


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
        PAGERDUTY = "pagerduty", "PagerDuty"
        OPSGENIE = "opsgenie", "Opsgenie"
        GRAFANA = "grafana", "Grafana Alerting"
        WEBHOOK = "webhook", _("Generic webhook")

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
        help_text=_("Hash of the alert group's key (Alertmanager's group key, a paging source's incident)."),
    )
    group_key = models.TextField(verbose_name=_("group key"), blank=True)
    alert_source = models.ForeignKey(
        "ops_app.AlertSource",
        verbose_name=_("alert source"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="incidents",
        help_text=_("The paging tool this incident came from (PagerDuty, Opsgenie, Grafana, a webhook)."),
    )
    external_id = models.CharField(
        verbose_name=_("external ID"),
        max_length=200,
        blank=True,
        help_text=_("The incident's or alert's id in its source, e.g. PagerDuty's Q1ABC2DEF."),
    )
    external_url = models.URLField(
        verbose_name=_("external URL"),
        max_length=1000,
        blank=True,
        help_text=_("The incident in its source."),
    )
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
            # One open incident per group of each paging source (PagerDuty incident, Opsgenie
            # alert, Grafana group, generic group key): concurrent deliveries cannot open twins.
            models.UniqueConstraint(
                fields=["organization", "alert_source", "fingerprint"],
                condition=models.Q(alert_source__isnull=False) & ~models.Q(status="resolved"),
                name="incident_org_open_source_group_uniq",
                violation_error_message="This alert group already has an open incident.",
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
    """Who changed what, when: written automatically for tracked models (ops_app.estate.change_events)."""

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
