"""Where an organization gets paged from, beside its Alertmanager receivers: PagerDuty, Opsgenie,
Grafana Alerting and any JSON sender (docs/alerts.md). Each source has its own unguessable URL
key and its own secrets (encrypted, write-only), and optionally an API key with which Ongrid
writes its findings back to the source."""

from __future__ import annotations

import secrets

from django.db import models
from django.utils.translation import gettext_lazy as _

from ops_app.core import outbound
from ops_app.core.encryption import EncryptedTextField
from ops_app.models.tenancy import TenantModel

# The public REST APIs a source writes back to when its API base URL is left blank.
DEFAULT_API_BASE = {
    ("pagerduty", ""): "https://api.pagerduty.com",
    ("opsgenie", "us"): "https://api.opsgenie.com",
    ("opsgenie", "eu"): "https://api.eu.opsgenie.com",
}
URL_KEY_BYTES = 18  # 24 URL-safe characters: the URL alone cannot be guessed


def new_url_key() -> str:
    return secrets.token_urlsafe(URL_KEY_BYTES)


class AlertSource(TenantModel):
    """One paging tool's webhook into Ongrid, and (optionally) Ongrid's way back into it."""

    class Kind(models.TextChoices):
        PAGERDUTY = "pagerduty", "PagerDuty"
        OPSGENIE = "opsgenie", "Opsgenie"
        GRAFANA = "grafana", "Grafana Alerting"
        GENERIC = "generic", _("Generic JSON webhook")

    class Writeback(models.TextChoices):
        OFF = "off", _("Off")
        SUMMARY = "summary", _("Summary, root cause and link")
        FULL = "full", _("The full report")

    class Region(models.TextChoices):
        US = "us", _("US (api.opsgenie.com)")
        EU = "eu", _("EU (api.eu.opsgenie.com)")

    name = models.SlugField(verbose_name=_("name"), max_length=60, help_text=_("e.g. pagerduty-payments."))
    kind = models.CharField(verbose_name=_("kind"), max_length=20, choices=Kind.choices)
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    url_key = models.CharField(
        verbose_name=_("URL key"), max_length=40, unique=True, editable=False, default=new_url_key
    )
    # --- receiving ------------------------------------------------------------------------------
    signing_secret = EncryptedTextField(
        verbose_name=_("signing secret"),
        blank=True,
        help_text=_(
            "HMAC-SHA256 key of the signature header: PagerDuty's webhook subscription secret "
            "(required), Grafana's HMAC secret or a generic sender's (optional). Write-only."
        ),
    )
    auth_username = models.CharField(
        verbose_name=_("auth user name"),
        max_length=200,
        blank=True,
        help_text=_("Set for HTTP basic auth (the password is the auth token below)."),
    )
    auth_token = EncryptedTextField(
        verbose_name=_("auth token"),
        blank=True,
        help_text=_(
            "The token the sender presents (a bearer token or a token header), or the basic-auth "
            "password when a user name is set. Write-only."
        ),
    )
    mapping = models.JSONField(
        verbose_name=_("mapping"),
        default=dict,
        blank=True,
        help_text=_("Generic webhooks only: where the title, severity, status, group key… are in the JSON."),
    )
    last_payload = models.JSONField(
        verbose_name=_("last delivery"),
        null=True,
        blank=True,
        editable=False,
        help_text=_("The last delivery's body (cut), for the mapping's preview."),
    )
    last_delivery_at = models.DateTimeField(verbose_name=_("last delivery at"), null=True, blank=True)
    # --- writing back ---------------------------------------------------------------------------
    writeback = models.CharField(
        verbose_name=_("write-back"),
        max_length=10,
        choices=Writeback.choices,
        default=Writeback.SUMMARY,
        help_text=_("What goes back to the source when an investigation ends (needs an API key)."),
    )
    mirror_state = models.BooleanField(
        verbose_name=_("mirror acknowledge / resolve"),
        default=False,
        help_text=_("Acknowledge and Resolve done in Ongrid are done in the source too."),
    )
    api_base_url = models.URLField(
        verbose_name=_("API base URL"),
        max_length=500,
        blank=True,
        help_text=_("Blank: the vendor's public API (Grafana: your Grafana's URL is required)."),
    )
    region = models.CharField(
        verbose_name=_("region"),
        max_length=2,
        choices=Region.choices,
        default=Region.US,
        help_text=_("Opsgenie only."),
    )
    api_key = EncryptedTextField(
        verbose_name=_("API key"),
        blank=True,
        help_text=_(
            "PagerDuty REST API key, Opsgenie API integration key, or a Grafana service account "
            "token. Write-only."
        ),
    )
    from_email = models.EmailField(
        verbose_name=_("From e-mail"),
        blank=True,
        help_text=_("PagerDuty only: a user's e-mail its REST API records as the author of notes."),
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("alert source")
        verbose_name_plural = _("alert sources")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="alert_source_org_name_uniq")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def path(self) -> str:
        """The source's receiver, relative to the site: /api/alerts/<kind>/<url key>/."""
        return f"/api/alerts/{self.kind}/{self.url_key}/"

    def api_base(self) -> str:
        """The REST API write-back calls go to, without a trailing slash ("" when none is known)."""
        region = self.region if self.kind == self.Kind.OPSGENIE else ""
        return (self.api_base_url or DEFAULT_API_BASE.get((self.kind, region), "")).rstrip("/")

    def clean(self) -> None:
        outbound.validate(api_base_url=self.api_base_url and outbound.refusal(self.api_base_url))


class AlertDelivery(TenantModel):
    """A source's event seen once: replays and retries carry the same event id and are answered
    without being stored again (at-least-once senders). Old rows are pruned."""

    source = models.ForeignKey(
        AlertSource, verbose_name=_("source"), on_delete=models.CASCADE, related_name="deliveries"
    )
    event_id = models.CharField(verbose_name=_("event ID"), max_length=200)
    incident = models.ForeignKey(
        "ops_app.Incident",
        verbose_name=_("incident"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    received_at = models.DateTimeField(verbose_name=_("received at"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("alert delivery")
        verbose_name_plural = _("alert deliveries")
        constraints = [models.UniqueConstraint(fields=["source", "event_id"], name="alert_delivery_once")]
