"""The audit trail: one row per tool call (docs/kernel.md) and one per LLM call.

Rows are written by the kernel's invoke chain only (`agents_app.tools.invoke`) and never edited.
They outlive the sessions they describe: deleting a chat session keeps its audit rows (the
session link is nulled, the only write allowed after creation).

Immutability is enforced here, in the model layer, so no feature can quietly rewrite evidence:
`save()` refuses an existing row, `delete()` and queryset `update()` / `delete()` /
`bulk_update()` raise `ImmutableAuditRow`. The one exception is the retention purge, which
deletes inside `audit_app.immutability.purging()`.
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from audit_app.immutability import AppendOnlyModel, AppendOnlyQuerySet
from ops_app.models.tenancy import TenantModel, TenantQuerySet

AuditManager = models.Manager.from_queryset(type("AuditQuerySet", (AppendOnlyQuerySet, TenantQuerySet), {}))


class ToolStatus(models.TextChoices):
    OK = "ok", "OK"
    ERROR = "error", _("Error")
    TIMEOUT = "timeout", _("Timeout")
    REDIRECT = "redirect", _("Redirect")
    REJECTED = "rejected", _("Rejected")
    DEDUPED = "deduped", _("Deduplicated")
    KILLED = "killed", _("Killed")


# A tool call's status in a reader's words (the chat's tiles, the incident timeline): lower-case
# and plainer than the admin's choice labels; one table so each surface says the same.
TOOL_STATUS_WORDS = {
    ToolStatus.OK: pgettext_lazy("tool call status", "ok"),
    ToolStatus.ERROR: pgettext_lazy("tool call status", "error"),
    ToolStatus.TIMEOUT: pgettext_lazy("tool call status", "timeout"),
    ToolStatus.REDIRECT: pgettext_lazy("tool call status", "redirect"),
    ToolStatus.REJECTED: pgettext_lazy("tool call status", "rejected"),
    ToolStatus.DEDUPED: pgettext_lazy("tool call status", "deduplicated"),
    ToolStatus.KILLED: pgettext_lazy("tool call status", "stopped"),
}


class AuditLog(AppendOnlyModel, TenantModel):
    session = models.ForeignKey(
        "chat_app.ChatSession",
        verbose_name=_("session"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="audit_logs",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    persona = models.CharField(verbose_name=_("persona"), max_length=100, blank=True)
    tool_call_id = models.CharField(verbose_name=_("tool call ID"), max_length=200, blank=True)
    tool = models.CharField(verbose_name=_("tool"), max_length=200)
    tool_class = models.CharField(
        verbose_name=_("tool class"), max_length=20, blank=True
    )  # blank: the LLM named no known tool
    arguments = models.TextField(
        verbose_name=_("arguments"), blank=True, help_text=_("As the LLM sent them (secrets redacted).")
    )
    result = models.TextField(
        verbose_name=_("result"), blank=True, help_text=_("Truncated; see result_size.")
    )
    result_size = models.PositiveIntegerField(
        verbose_name=_("result size"), default=0, help_text=_("Characters before truncation.")
    )
    status = models.CharField(verbose_name=_("status"), max_length=20, choices=ToolStatus.choices)
    error = models.TextField(verbose_name=_("error"), blank=True)
    started_at = models.DateTimeField(verbose_name=_("started at"))
    duration_ms = models.PositiveIntegerField(verbose_name=_("duration (ms)"), default=0)
    # The OpenTelemetry trace the call was made in ("" while tracing is off): docs/observability.md.
    trace_id = models.CharField(verbose_name=_("trace ID"), max_length=32, blank=True, default="")

    objects = AuditManager()

    class Meta:
        verbose_name = _("audit log")
        verbose_name_plural = _("audit logs")
        db_table = "audit_logs"
        ordering = ["-started_at", "-id"]
        indexes = [
            models.Index(fields=["session", "started_at"], name="audit_session_started_idx"),
            models.Index(fields=["organization", "-started_at"], name="audit_org_started_idx"),
            models.Index(fields=["organization", "tool", "-started_at"], name="audit_org_tool_idx"),
            models.Index(fields=["organization", "status", "-started_at"], name="audit_org_status_idx"),
            # Retention purges by age across organizations; proposals and reviewers join on the call id.
            models.Index(fields=["started_at"], name="audit_started_idx"),
            models.Index(fields=["tool_call_id"], name="audit_call_id_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.tool} [{self.status}] at {self.started_at:%Y-%m-%d %H:%M:%S}"

    @property
    def truncated(self) -> bool:
        return self.result_size > len(self.result)


class LLMCall(AppendOnlyModel, TenantModel):
    session = models.ForeignKey(
        "chat_app.ChatSession",
        verbose_name=_("session"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="llm_calls",
    )
    persona = models.CharField(verbose_name=_("persona"), max_length=100, blank=True)
    provider = models.CharField(verbose_name=_("provider"), max_length=40)
    # The organization's LLM endpoint by name ("" = the deployment's environment), kept as text:
    # evidence outlives a deleted endpoint.
    endpoint = models.CharField(verbose_name=_("endpoint"), max_length=60, blank=True, default="")
    model = models.CharField(verbose_name=_("model"), max_length=200)
    prompt_tokens = models.PositiveIntegerField(verbose_name=_("prompt tokens"), default=0)
    completion_tokens = models.PositiveIntegerField(verbose_name=_("completion tokens"), default=0)
    # Prompt tokens the provider served from its prompt cache (0 when it does not say).
    cached_tokens = models.PositiveIntegerField(verbose_name=_("cached tokens"), default=0)
    latency_ms = models.PositiveIntegerField(verbose_name=_("latency (ms)"), default=0)
    finish_reason = models.CharField(verbose_name=_("finish reason"), max_length=40, blank=True)
    error = models.TextField(verbose_name=_("error"), blank=True)
    started_at = models.DateTimeField(verbose_name=_("started at"))
    trace_id = models.CharField(verbose_name=_("trace ID"), max_length=32, blank=True, default="")

    objects = AuditManager()

    class Meta:
        verbose_name = _("LLM call")
        verbose_name_plural = _("LLM calls")
        db_table = "llm_calls"
        ordering = ["-started_at", "-id"]
        indexes = [
            models.Index(fields=["session", "started_at"], name="llmcall_session_started_idx"),
            models.Index(fields=["organization", "-started_at"], name="llmcall_org_started_idx"),
            models.Index(fields=["started_at"], name="llmcall_started_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.model} at {self.started_at:%Y-%m-%d %H:%M:%S}"
