"""Automatic incident investigations: the per-organization trigger policy and the investigations
themselves, each with its RCA report (docs/investigations.md). Every write goes through
`incidents_app/investigations.py` (the policy is edited in the admin)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from ops_app.core import outbound
from ops_app.core.encryption import EncryptedTextField
from ops_app.models import Incident, Severity
from ops_app.models.tenancy import TenantModel


class InvestigationPolicy(TenantModel):
    """When an organization's incidents are investigated on their own. Absent → the defaults below."""

    enabled = models.BooleanField(
        verbose_name=_("enabled"),
        default=True,
        help_text=_("Off: incidents are investigated only when someone presses Investigate."),
    )
    min_severity = models.CharField(
        verbose_name=_("min severity"),
        max_length=10,
        choices=Severity.choices,
        default=Severity.HIGH,
        help_text=_("Investigate incidents of this severity or worse."),
    )
    label_matchers = models.JSONField(
        verbose_name=_("label matchers"),
        default=dict,
        blank=True,
        help_text=_(
            'Alert labels every investigated incident must carry, e.g. {"team": "payments"}; '
            "empty matches all."
        ),
    )
    services = models.JSONField(
        verbose_name=_("services"),
        default=list,
        blank=True,
        help_text=_("Only incidents affecting one of these services; [] matches all."),
    )
    cooldown_minutes = models.PositiveIntegerField(
        verbose_name=_("cooldown (minutes)"),
        default=60,
        help_text=_("A re-firing or flapping group is not re-investigated within this time."),
    )
    rerun_on_escalation = models.BooleanField(
        verbose_name=_("rerun on escalation"),
        default=False,
        help_text=_("Investigate again when an incident's severity rises."),
    )
    max_concurrent = models.PositiveIntegerField(
        verbose_name=_("max. concurrent"), default=3, help_text=_("Investigations running at once.")
    )
    daily_max_investigations = models.PositiveIntegerField(
        verbose_name=_("max. investigations per day"), default=50
    )
    daily_max_tokens = models.PositiveIntegerField(verbose_name=_("max. tokens per day"), default=2_000_000)
    webhook_url = models.URLField(
        verbose_name=_("webhook URL"),
        max_length=500,
        blank=True,
        help_text=_("Receives a signed JSON summary when an investigation ends."),
    )
    webhook_secret = EncryptedTextField(
        verbose_name=_("webhook secret"),
        blank=True,
        help_text=_("HMAC-SHA256 key for the X-Ongrid-Signature header; encrypted at rest."),
    )
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("investigation policy")
        verbose_name_plural = _("investigation policies")
        constraints = [
            models.UniqueConstraint(fields=["organization"], name="investigation_policy_one_per_org")
        ]

    def __str__(self) -> str:
        return f"Investigation policy of organization {self.organization_id}"

    def clean(self) -> None:
        outbound.validate(webhook_url=self.webhook_url and outbound.refusal(self.webhook_url))


class Investigation(TenantModel):
    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        INCONCLUSIVE = "inconclusive", _("Inconclusive")
        FAILED = "failed", _("Failed")
        STOPPED = "stopped", _("Stopped")

    class Trigger(models.TextChoices):
        ALERTMANAGER = "alertmanager", _("An Alertmanager alert")
        PAGED = "paged", _("A paged alert (PagerDuty, Opsgenie, Grafana, a webhook)")
        ESCALATION = "escalation", _("The incident escalated")
        MANUAL = "manual", _("Started by a person")
        BACKFILL = "backfill", _("Found when Ongrid started")

    incident = models.ForeignKey(
        Incident, verbose_name=_("incident"), on_delete=models.CASCADE, related_name="investigations"
    )
    fingerprint = models.CharField(
        verbose_name=_("fingerprint"),
        max_length=64,
        blank=True,
        help_text=_("The incident's group fingerprint."),
    )
    severity = models.CharField(
        verbose_name=_("severity"), max_length=10, choices=Severity.choices, default=Severity.WARNING
    )
    session = models.OneToOneField(
        "chat_app.ChatSession",
        verbose_name=_("session"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="investigation",
    )
    trigger = models.CharField(verbose_name=_("trigger"), max_length=15, choices=Trigger.choices)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("requested by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    status = models.CharField(
        verbose_name=_("status"), max_length=15, choices=Status.choices, default=Status.QUEUED
    )
    report = models.JSONField(
        verbose_name=_("report"), default=dict, blank=True, help_text=_("The validated RCA report.")
    )
    partial_findings = models.TextField(verbose_name=_("partial findings"), blank=True)
    confidence = models.FloatField(verbose_name=_("confidence"), null=True, blank=True)
    error = models.TextField(verbose_name=_("error"), blank=True)
    stop_reason = models.CharField(verbose_name=_("stop reason"), max_length=300, blank=True)
    tokens = models.PositiveIntegerField(verbose_name=_("tokens"), default=0)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    started_at = models.DateTimeField(verbose_name=_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(verbose_name=_("finished at"), null=True, blank=True)

    class Meta:
        verbose_name = _("investigation")
        verbose_name_plural = _("investigations")
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(
                fields=["organization", "status", "created_at"], name="investigation_org_status_idx"
            ),
            models.Index(
                fields=["organization", "fingerprint", "-created_at"], name="investigation_org_fp_idx"
            ),
            models.Index(fields=["incident", "-created_at"], name="investigation_incident_idx"),
        ]

    def __str__(self) -> str:
        return f"Investigation #{self.pk} of incident {self.incident_id} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    @property
    def started_by(self) -> str:
        """Who or what started the run, in plain words: the person's name when a person did."""
        if self.trigger == self.Trigger.MANUAL and self.requested_by is not None:
            name = self.requested_by.get_full_name() or self.requested_by.get_username()
            return _("Started by %(name)s") % {"name": name}
        return str(self.get_trigger_display())

    @property
    def verdict(self) -> str:
        """report, inconclusive, failed, stopped, or the open run's state: the history's badge."""
        return "report" if self.status == self.Status.DONE and self.report else self.status


def newest_first(incident: Incident) -> models.QuerySet[Investigation]:
    """The incident's investigations, newest first: the first is the one its page, API and chat
    context show as its latest."""
    return incident.investigations.order_by("-created_at", "-pk")


def current_report(incident: Incident) -> Investigation | None:
    """The investigation whose report the page shows: the newest that ended with a valid report.
    A later run that ends inconclusive, failed or stopped does not erase it; it is shown as a
    notice above it (docs/incidents.md, "The report stays")."""
    done = newest_first(incident).filter(status=Investigation.Status.DONE)[:50]
    return next((investigation for investigation in done if investigation.report), None)


class IncidentAction(TenantModel):
    """A change a person pressed on the incident page (Acknowledge, Resolve, a report's proposed
    change): the page shows its progress through the review gate and the timeline credits the
    person, while the gate's own session (kind `action`) stays out of their chats
    (docs/incidents.md, "Actions")."""

    incident = models.ForeignKey(
        Incident, verbose_name=_("incident"), on_delete=models.CASCADE, related_name="actions"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("requested by"), on_delete=models.CASCADE, related_name="+"
    )
    verb = models.CharField(verbose_name=_("verb"), max_length=20)  # acknowledge | resolve | change
    label = models.CharField(verbose_name=_("label"), max_length=500)
    session = models.ForeignKey(
        "chat_app.ChatSession", verbose_name=_("session"), on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("incident action")
        verbose_name_plural = _("incident actions")
        ordering = ["created_at", "id"]


class SourceWriteback(TenantModel):
    """One write to the paging tool an incident came from (docs/alerts.md, "Writing findings
    back"): an investigation's findings as a note or annotation, or an Acknowledge / Resolve done
    in Ongrid mirrored there. Written once per investigation and kind (or per incident for the
    mirrored states), then delivered by `incidents_app.writeback_outbox` with retries; the row
    keeps the outcome the incident page and the audit show, never the key or what the vendor
    answered (an HTTP status or an error class only)."""

    class Kind(models.TextChoices):
        NOTE = "note", _("findings")
        ACKNOWLEDGE = "acknowledge", _("acknowledge")
        RESOLVE = "resolve", _("resolve")

    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        DONE = "done", _("written")
        FAILED = "failed", _("failed")
        REFUSED = "refused", _("refused by the egress policy")

    incident = models.ForeignKey(
        Incident, verbose_name=_("incident"), on_delete=models.CASCADE, related_name="writebacks"
    )
    investigation = models.ForeignKey(
        Investigation,
        verbose_name=_("investigation"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="writebacks",
    )
    source = models.ForeignKey(
        "ops_app.AlertSource", verbose_name=_("alert source"), on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(verbose_name=_("kind"), max_length=12, choices=Kind.choices)
    status = models.CharField(
        verbose_name=_("status"), max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    attempts = models.PositiveIntegerField(verbose_name=_("attempts"), default=0)
    next_attempt_at = models.DateTimeField(verbose_name=_("next attempt at"), db_index=True)
    claimed_until = models.DateTimeField(verbose_name=_("claimed until"), null=True, blank=True)
    last_error = models.CharField(verbose_name=_("last error"), max_length=120, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    done_at = models.DateTimeField(verbose_name=_("written at"), null=True, blank=True)

    class Meta:
        verbose_name = _("write-back to an alert source")
        verbose_name_plural = _("write-backs to alert sources")
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["investigation", "kind"],
                condition=models.Q(investigation__isnull=False),
                name="writeback_once_per_investigation",
            ),
            models.UniqueConstraint(
                fields=["incident", "kind"],
                condition=models.Q(kind__in=["acknowledge", "resolve"]),
                name="writeback_state_once_per_incident",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} of incident {self.incident_id} to {self.source_id} ({self.status})"


# The alert-time notifications' models live beside their code (incidents_app/alerting/).
from incidents_app.alerting.models import (  # noqa: E402
    NotificationChannel,
    NotificationDelivery,
    NotificationRule,
)

__all__ = [
    "IncidentAction",
    "Investigation",
    "InvestigationPolicy",
    "NotificationChannel",
    "NotificationDelivery",
    "NotificationRule",
    "SourceWriteback",
]
