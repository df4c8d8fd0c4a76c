"""Where an organization is told that an alert fired: its channels, its rules, and one delivery row
per message (the outbox the drainer works through, and what the admin lists)."""

from __future__ import annotations

import zoneinfo

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ops_app.core import outbound
from ops_app.core.encryption import EncryptedTextField
from ops_app.models import Incident, Severity
from ops_app.models.tenancy import TenantModel


class NotificationChannel(TenantModel):
    """One place a message goes: an IM app's channel, a list of e-mail recipients, or a webhook."""

    class Kind(models.TextChoices):
        IM = "im", _("A chat app's channel")
        EMAIL = "email", _("E-mail")
        WEBHOOK = "webhook", _("Signed webhook")

    name = models.CharField(verbose_name=_("name"), max_length=100, help_text=_("e.g. #payments-oncall."))
    kind = models.CharField(verbose_name=_("kind"), max_length=10, choices=Kind.choices)
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    im_app = models.ForeignKey(
        "im_app.IMApp",
        verbose_name=_("chat app"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text=_("Chat apps only: the Slack, Telegram or Feishu app that posts the card."),
    )
    im_channel = models.CharField(
        verbose_name=_("chat channel"),
        max_length=200,
        blank=True,
        help_text=_("Chat apps only: the channel or chat id, e.g. C0123456789 or -100123456."),
    )
    recipients = models.TextField(
        verbose_name=_("recipients"),
        blank=True,
        help_text=_("E-mail only: addresses separated by commas or new lines."),
    )
    webhook_url = models.URLField(verbose_name=_("webhook URL"), max_length=500, blank=True)
    webhook_secret = EncryptedTextField(
        verbose_name=_("webhook secret"),
        blank=True,
        help_text=_("HMAC-SHA256 key of the X-Ongrid-Signature header; encrypted, write-only."),
    )
    max_messages = models.PositiveIntegerField(
        verbose_name=_("max. messages per window"),
        default=10,
        help_text=_("More alerts than this within the window are collected into one digest."),
    )
    window_minutes = models.PositiveIntegerField(verbose_name=_("window (minutes)"), default=10)

    class Meta:
        verbose_name = _("notification channel")
        verbose_name_plural = _("notification channels")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def recipient_list(self) -> list[str]:
        return [a.strip() for a in self.recipients.replace("\n", ",").split(",") if a.strip()]

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.kind == self.Kind.IM:
            if self.im_app_id is None:
                errors["im_app"] = _("Choose the chat app that posts the card.")
            elif self.organization_id and self.im_app.organization_id != self.organization_id:
                errors["im_app"] = _("This chat app belongs to another organization.")
            if not self.im_channel.strip():
                errors["im_channel"] = _("Give the channel or chat id.")
        elif self.kind == self.Kind.EMAIL:
            addresses = self.recipient_list()
            try:
                for address in addresses:
                    validate_email(address)
            except ValidationError:
                errors["recipients"] = _("Give valid e-mail addresses, separated by commas.")
            if not addresses:
                errors["recipients"] = _("Give at least one address.")
        elif self.kind == self.Kind.WEBHOOK:
            if not self.webhook_url:
                errors["webhook_url"] = _("Give the URL to POST to.")
            elif problem := outbound.refusal(self.webhook_url):
                errors["webhook_url"] = problem
        if errors:
            raise ValidationError(errors)


class NotificationRule(TenantModel):
    """Which new incidents are announced where, and how often at most (docs/alerts.md)."""

    name = models.CharField(verbose_name=_("name"), max_length=100)
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    source_kinds = models.JSONField(
        verbose_name=_("source kinds"),
        default=list,
        blank=True,
        help_text=_(
            'Incidents from these kinds of source, e.g. ["alertmanager", "pagerduty"]; with the '
            "sources below, either matches; both empty: every source."
        ),
    )
    sources = models.ManyToManyField(
        "ops_app.AlertSource",
        verbose_name=_("alert sources"),
        blank=True,
        related_name="+",
        help_text=_("Incidents from these named sources."),
    )
    min_severity = models.CharField(
        verbose_name=_("min severity"),
        max_length=10,
        choices=Severity.choices,
        default=Severity.WARNING,
        help_text=_("Announce incidents of this severity or worse."),
    )
    services = models.JSONField(
        verbose_name=_("services"),
        default=list,
        blank=True,
        help_text=_("Only incidents affecting one of these services; [] matches all."),
    )
    quiet_start = models.TimeField(verbose_name=_("quiet hours start"), null=True, blank=True)
    quiet_end = models.TimeField(
        verbose_name=_("quiet hours end"),
        null=True,
        blank=True,
        help_text=_("Local time in the zone below; a start after the end spans midnight (22:00–07:00)."),
    )
    time_zone = models.CharField(verbose_name=_("time zone"), max_length=60, default="UTC")
    critical_breaks_quiet = models.BooleanField(
        verbose_name=_("critical breaks through"),
        default=True,
        help_text=_("Critical incidents are announced during quiet hours too."),
    )
    group_minutes = models.PositiveIntegerField(
        verbose_name=_("once per group every (minutes)"),
        default=30,
        help_text=_("An alert group that fires again within this time is not announced again; 0: always."),
    )
    channels = models.ManyToManyField(
        NotificationChannel, verbose_name=_("channels"), related_name="rules", blank=True
    )

    class Meta:
        verbose_name = _("notification rule")
        verbose_name_plural = _("notification rules")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str] = {}
        try:
            zoneinfo.ZoneInfo(self.time_zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            errors["time_zone"] = _("Unknown time zone, e.g. Europe/Madrid.")
        if (self.quiet_start is None) != (self.quiet_end is None):
            errors["quiet_end"] = _("Give both the start and the end of the quiet hours, or neither.")
        if not isinstance(self.source_kinds, list) or not all(isinstance(k, str) for k in self.source_kinds):
            errors["source_kinds"] = _('A list of kinds, e.g. ["alertmanager"].')
        if not isinstance(self.services, list) or not all(isinstance(s, str) for s in self.services):
            errors["services"] = _('A list of service names, e.g. ["checkout"].')
        if errors:
            raise ValidationError(errors)


class NotificationDelivery(TenantModel):
    """One message to one channel, kept until it is sent or given up: the drainer claims it by
    compare-and-set (`claimed_until`), so two drainers never send it twice."""

    class Kind(models.TextChoices):
        ALERT = "alert", _("Alert")
        DIGEST = "digest", _("Digest")
        UPDATE = "update", _("Update")

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        COLLECTED = "collected", _("Collected for the digest")
        DIGESTED = "digested", _("Sent in a digest")
        SENT = "sent", _("Sent")
        FAILED = "failed", _("Failed")

    rule = models.ForeignKey(
        NotificationRule, verbose_name=_("rule"), null=True, blank=True, on_delete=models.SET_NULL
    )
    channel = models.ForeignKey(
        NotificationChannel, verbose_name=_("channel"), on_delete=models.CASCADE, related_name="deliveries"
    )
    incident = models.ForeignKey(
        Incident,
        verbose_name=_("incident"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
    )
    kind = models.CharField(verbose_name=_("kind"), max_length=10, choices=Kind.choices)
    group = models.CharField(verbose_name=_("group"), max_length=100, blank=True)
    status = models.CharField(
        verbose_name=_("status"), max_length=10, choices=Status.choices, default=Status.PENDING
    )
    attempts = models.PositiveIntegerField(verbose_name=_("attempts"), default=0)
    next_attempt_at = models.DateTimeField(verbose_name=_("next attempt at"), null=True, blank=True)
    claimed_until = models.DateTimeField(verbose_name=_("claimed until"), null=True, blank=True)
    last_error = models.CharField(
        verbose_name=_("last error"),
        max_length=200,
        blank=True,
        help_text=_("An HTTP status or an error class, never what the remote answered."),
    )
    ref = models.JSONField(
        verbose_name=_("card reference"), null=True, blank=True, help_text=_("Where the IM card was posted.")
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), default=timezone.now)
    sent_at = models.DateTimeField(verbose_name=_("sent at"), null=True, blank=True)

    class Meta:
        verbose_name = _("notification delivery")
        verbose_name_plural = _("notification deliveries")
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="notif_delivery_due_idx"),
            models.Index(fields=["channel", "kind", "created_at"], name="notif_delivery_window_idx"),
            models.Index(fields=["incident", "kind"], name="notif_delivery_incident_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} to {self.channel_id} ({self.status})"
