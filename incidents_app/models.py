"""Automatic incident investigations: the per-organization trigger policy and the investigations
themselves, each with its RCA report (docs/investigations.md). Every write goes through
`incidents_app/investigations.py` (the policy is edited in the admin)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from ops_app.encryption import EncryptedTextField
from ops_app.models import Incident, Severity
from ops_app.tenancy import TenantModel


class InvestigationPolicy(TenantModel):
    """When an organization's incidents are investigated on their own. Absent → the defaults below."""

    enabled = models.BooleanField(
        default=True, help_text=_("Off: incidents are investigated only when someone presses Investigate.")
    )
    min_severity = models.CharField(
        max_length=10,
        choices=Severity.choices,
        default=Severity.HIGH,
        help_text=_("Investigate incidents of this severity or worse."),
    )
    label_matchers = models.JSONField(
        default=dict,
        blank=True,
        help_text=_(
            'Alert labels every investigated incident must carry, e.g. {"team": "payments"}; '
            "empty matches all."
        ),
    )
    services = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Only incidents affecting one of these services; [] matches all."),
    )
    cooldown_minutes = models.PositiveIntegerField(
        default=60, help_text=_("A re-firing or flapping group is not re-investigated within this time.")
    )
    rerun_on_escalation = models.BooleanField(
        default=False, help_text=_("Investigate again when an incident's severity rises.")
    )
    max_concurrent = models.PositiveIntegerField(default=3, help_text=_("Investigations running at once."))
    daily_max_investigations = models.PositiveIntegerField(default=50)
    daily_max_tokens = models.PositiveIntegerField(default=2_000_000)
    webhook_url = models.URLField(
        max_length=500, blank=True, help_text=_("Receives a signed JSON summary when an investigation ends.")
    )
    webhook_secret = EncryptedTextField(
        blank=True, help_text=_("HMAC-SHA256 key for the X-Ongrid-Signature header; encrypted at rest.")
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "investigation policies"
        constraints = [
            models.UniqueConstraint(fields=["organization"], name="investigation_policy_one_per_org")
        ]

    def __str__(self) -> str:
        return f"Investigation policy of organization {self.organization_id}"


class Investigation(TenantModel):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        INCONCLUSIVE = "inconclusive", "Inconclusive"
        FAILED = "failed", "Failed"
        STOPPED = "stopped", "Stopped"

    class Trigger(models.TextChoices):
        ALERTMANAGER = "alertmanager", "Alertmanager"
        ESCALATION = "escalation", "Escalation"
        MANUAL = "manual", "A person"
        BACKFILL = "backfill", "Backfill at startup"

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="investigations")
    fingerprint = models.CharField(
        max_length=64, blank=True, help_text=_("The incident's group fingerprint.")
    )
    severity = models.CharField(max_length=10, choices=Severity.choices, default=Severity.WARNING)
    session = models.OneToOneField(
        "chat_app.ChatSession", null=True, blank=True, on_delete=models.SET_NULL, related_name="investigation"
    )
    trigger = models.CharField(max_length=15, choices=Trigger.choices)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=15, choices=Status.choices, default=Status.QUEUED)
    report = models.JSONField(default=dict, blank=True, help_text=_("The validated RCA report."))
    partial_findings = models.TextField(blank=True)
    confidence = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    stop_reason = models.CharField(max_length=300, blank=True)
    tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
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
