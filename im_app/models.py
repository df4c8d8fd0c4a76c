"""IM apps (one bot of one platform for one organization), the identities that map a platform's
senders to Ongrid users, and the bounded store of deliveries already seen (docs/im.md)."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from ops_app.core import outbound
from ops_app.core.encryption import EncryptedTextField
from ops_app.models.tenancy import TenantModel


class Platform(models.TextChoices):
    SLACK = "slack", "Slack"
    TELEGRAM = "telegram", "Telegram"
    FEISHU = "feishu", "Feishu"


class ConnectionMode(models.TextChoices):
    WEBHOOK = "webhook", _("Webhook (the platform calls Ongrid)")
    POLLING = (
        "polling",
        _("Outbound only (Telegram long polling, Slack Socket Mode; run by manage.py ongrid_im)"),
    )


# Where each platform's HTTP API lives unless the app names another (a gateway, a fake).
DEFAULT_API_BASE = {
    Platform.SLACK: "https://slack.com/api",
    Platform.TELEGRAM: "https://api.telegram.org",
    Platform.FEISHU: "https://open.feishu.cn/open-apis",
}


def new_webhook_path() -> str:
    return secrets.token_urlsafe(18)


class IMApp(TenantModel):
    """One bot: its platform, credentials (encrypted at rest, write-only in the admin), who may
    talk to it, and where it posts summaries."""

    platform = models.CharField(verbose_name=_("platform"), max_length=20, choices=Platform.choices)
    name = models.CharField(
        verbose_name=_("name"), max_length=100, help_text=_("Display name, e.g. “Ops bot”.")
    )
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    connection_mode = models.CharField(
        verbose_name=_("connection mode"),
        max_length=20,
        choices=ConnectionMode.choices,
        default=ConnectionMode.WEBHOOK,
    )
    api_base_url = models.URLField(
        verbose_name=_("API base URL"),
        blank=True,
        help_text=_("The platform's API base URL; blank for the public one. Set it for a gateway."),
    )
    bot_token = EncryptedTextField(
        verbose_name=_("bot token"), blank=True, help_text=_("Slack xoxb- token, or Telegram bot token.")
    )
    signing_secret = EncryptedTextField(
        verbose_name=_("signing secret"), blank=True, help_text=_("Slack: the app's signing secret.")
    )
    app_token = EncryptedTextField(
        verbose_name=_("app-level token"),
        blank=True,
        help_text=_("Slack Socket Mode: the app-level token (xapp-…) with the connections:write scope."),
    )
    app_id = models.CharField(
        verbose_name=_("app ID"), max_length=200, blank=True, help_text=_("Feishu: the app id (cli_…).")
    )
    app_secret = EncryptedTextField(
        verbose_name=_("app secret"), blank=True, help_text=_("Feishu: the app secret.")
    )
    verification_token = EncryptedTextField(
        verbose_name=_("verification token"), blank=True, help_text=_("Feishu: the event verification token.")
    )
    encrypt_key = EncryptedTextField(
        verbose_name=_("encrypt key"), blank=True, help_text=_("Feishu: the event encrypt key.")
    )
    webhook_secret = EncryptedTextField(
        verbose_name=_("webhook secret"),
        blank=True,
        help_text=_("Telegram: the secret_token given to setWebhook (letters, digits, _ and -)."),
    )
    webhook_path = models.CharField(
        verbose_name=_("webhook path"),
        max_length=64,
        default=new_webhook_path,
        unique=True,
        help_text=_("Telegram: the unguessable last part of the webhook URL."),
    )
    allow_from = models.TextField(
        verbose_name=_("allow from"),
        blank=True,
        help_text=_(
            "Platform user ids or chat ids allowed to talk to the bot, one per line or comma "
            "separated. Empty: every linked user of the organization."
        ),
    )
    reply_language = models.CharField(
        verbose_name=_("reply language"),
        max_length=20,
        blank=True,
        help_text=_("e.g. en, es, fr; blank: as asked."),
    )
    summary_channel = models.CharField(
        verbose_name=_("summary channel"),
        max_length=200,
        blank=True,
        help_text=_("Chat / channel id where investigation summaries are posted."),
    )
    bot_identity = models.CharField(
        verbose_name=_("bot identity"), max_length=200, blank=True, editable=False
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("IM app")
        verbose_name_plural = _("IM apps")
        ordering = ["organization", "name"]

    def __str__(self) -> str:
        """The name, with the platform unless the name already says it ("Ops bot (Slack)")."""
        platform = str(self.get_platform_display())
        if not platform or platform.lower() in self.name.lower():
            return self.name
        return f"{self.name} ({platform})"

    def clean(self) -> None:
        outbound.validate(api_base_url=self.api_base_url and outbound.refusal(self.api_base_url, base=True))

    @property
    def api_base(self) -> str:
        return (self.api_base_url or DEFAULT_API_BASE[self.platform]).rstrip("/")

    def allowed(self) -> set[str]:
        return {item.strip() for item in self.allow_from.replace("\n", ",").split(",") if item.strip()}


class IMIdentity(TenantModel):
    """A platform sender linked to an Ongrid user. Pending (no user) until the user confirms the
    one-time code from the web, or an org admin confirms the suggested user; the code is stored
    as a hash."""

    app = models.ForeignKey(IMApp, verbose_name=_("app"), on_delete=models.CASCADE, related_name="identities")
    external_id = models.CharField(verbose_name=_("external ID"), max_length=200)
    display_name = models.CharField(verbose_name=_("display name"), max_length=200, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
    )
    # Who the platform says this is (Slack's profile e-mail): not a link until confirmed.
    suggested_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("suggested user"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_(
            "The user whose e-mail the platform gives for this sender. Not linked until that user "
            "confirms from the web, or an org admin confirms it here."
        ),
    )
    code_digest = models.CharField(verbose_name=_("code digest"), max_length=64, blank=True, db_index=True)
    code_expires_at = models.DateTimeField(verbose_name=_("code expires at"), null=True, blank=True)
    linked_at = models.DateTimeField(verbose_name=_("linked at"), null=True, blank=True)

    class Meta:
        verbose_name = _("IM identity")
        verbose_name_plural = _("IM identities")
        constraints = [
            models.UniqueConstraint(fields=["app", "external_id"], name="im_identity_app_external_uniq")
        ]

    def __str__(self) -> str:
        return f"{self.display_name or self.external_id} → {self.user or _('not linked')}"


class SeenDelivery(models.Model):
    """A platform event / update id already handled: retried deliveries are dropped. Shared by all
    processes through the unique constraint; rows older than a day are pruned."""

    app = models.ForeignKey(IMApp, on_delete=models.CASCADE, related_name="+")
    delivery_id = models.CharField(max_length=200)
    seen_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("seen delivery")
        verbose_name_plural = _("seen deliveries")
        constraints = [
            models.UniqueConstraint(fields=["app", "delivery_id"], name="im_seen_app_delivery_uniq")
        ]

    def __str__(self) -> str:
        return f"{self.app_id}:{self.delivery_id}"


class LateDelivery(models.TextChoices):
    PENDING = "pending", _("pending")
    DELIVERED = "delivered", _("delivered")
    FAILED = "failed", _("failed")


class OutboxMessage(TenantModel):
    """An answer (or approval card) a thread is owed because the platform could not be reached when
    it was ready. Kept in the database so it outlives the process; `im_app.redelivery` posts it
    when the platform answers again, or marks it failed after `redelivery.GIVE_UP_AFTER`.

    Holds where to post (ids only) and what (rendered text), never a credential: the app's token is
    read at delivery, so a rotated token is used and none is ever copied here."""

    class Kind(models.TextChoices):
        ANSWER = "answer", _("answer")
        CARD = "card", _("approval card")

    app = models.ForeignKey(IMApp, verbose_name=_("app"), on_delete=models.CASCADE, related_name="outbox")
    session = models.ForeignKey(
        "chat_app.ChatSession",
        verbose_name=_("session"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    kind = models.CharField(verbose_name=_("kind"), max_length=10, choices=Kind.choices, default=Kind.ANSWER)
    address = models.JSONField(verbose_name=_("address"), default=dict)  # the thread's ids on the platform
    messages = models.JSONField(verbose_name=_("messages"), default=list)  # [{"text", "buttons"}]
    sent = models.PositiveIntegerField(verbose_name=_("messages sent"), default=0)
    proposal_id = models.IntegerField(verbose_name=_("proposal"), null=True, blank=True)
    language = models.CharField(verbose_name=_("language"), max_length=20, blank=True)
    status = models.CharField(
        verbose_name=_("status"),
        max_length=10,
        choices=LateDelivery.choices,
        default=LateDelivery.PENDING,
        db_index=True,
    )
    attempts = models.PositiveIntegerField(verbose_name=_("attempts"), default=0)
    next_attempt_at = models.DateTimeField(verbose_name=_("next attempt at"), db_index=True)
    claimed_until = models.DateTimeField(verbose_name=_("claimed until"), null=True, blank=True)
    last_error = models.CharField(verbose_name=_("last error"), max_length=200, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    delivered_at = models.DateTimeField(verbose_name=_("delivered at"), null=True, blank=True)

    class Meta:
        verbose_name = _("IM outbox message")
        verbose_name_plural = _("IM outbox")
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.app_id}:{self.kind}:{self.pk} ({self.status})"
