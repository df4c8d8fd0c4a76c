from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from chat_app.channels import Channel, channel_choices
from ops_app.models.tenancy import TenantModel


class SessionKind(models.TextChoices):
    USER = "user", _("User chat")
    WORK = "work", _("Worker task")
    INVESTIGATION = "investigation", _("Investigation")
    ACTION = "action", _("One-click change")  # the gate's session for a page's button; not listed as a chat


class SessionStatus(models.TextChoices):
    IDLE = "idle", _("Idle")  # a coordinator session between turns
    PENDING = "pending", _("Pending")
    RUNNING = "running", _("Running")
    COMPLETED = "completed", _("Completed")
    FAILED = "failed", _("Failed")
    KILLED = "killed", _("Killed")


TERMINAL_STATUSES = (SessionStatus.COMPLETED, SessionStatus.FAILED, SessionStatus.KILLED)

# The longest message a user may send, on every surface (API, websocket).
MAX_MESSAGE_CHARS = 20000


class ChatSession(TenantModel):
    """One row per coordinator or worker session (docs/runtime.md). Workers point at their coordinator."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="chat_sessions",
    )
    agent_id = models.CharField(verbose_name=_("agent ID"), max_length=100, default="default")
    parent_session = models.ForeignKey(
        "self",
        verbose_name=_("parent session"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="children",
    )
    root_session = models.ForeignKey(
        "self",
        verbose_name=_("root session"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="descendants",
    )
    kind = models.CharField(
        verbose_name=_("kind"), max_length=20, choices=SessionKind.choices, default=SessionKind.USER
    )
    channel = models.CharField(
        verbose_name=_("channel"), max_length=20, choices=channel_choices, default=Channel.WEB
    )
    status = models.CharField(
        verbose_name=_("status"), max_length=20, choices=SessionStatus.choices, default=SessionStatus.IDLE
    )
    title = models.CharField(verbose_name=_("title"), max_length=200, blank=True)
    description = models.TextField(verbose_name=_("description"), blank=True)
    result = models.TextField(verbose_name=_("result"), blank=True)
    error = models.TextField(verbose_name=_("error"), blank=True)
    usage = models.JSONField(verbose_name=_("usage"), default=dict, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)
    started_at = models.DateTimeField(verbose_name=_("started at"), null=True, blank=True)
    closed_at = models.DateTimeField(verbose_name=_("closed at"), null=True, blank=True)
    # Cross-process control. A stop request is a row flag every process can see; the process that
    # runs the session checks it before each LLM and tool call.
    stop_requested_at = models.DateTimeField(verbose_name=_("stop requested at"), null=True, blank=True)
    # Who stopped it, as the rows close with it: "stopped by alice".
    stop_reason = models.CharField(verbose_name=_("stop reason"), max_length=200, blank=True)
    # Which process runs this session right now ("host:pid"), and when it last proved it is alive;
    # the reaper closes running rows whose owner is gone.
    owner = models.CharField(verbose_name=_("owner"), max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(verbose_name=_("heartbeat at"), null=True, blank=True)
    # The tool call that created this worker (AgentTool, or a gated call for the reviewer), so
    # pages and audit trees can hang the worker under the call that spawned it.
    spawned_by_call = models.CharField(verbose_name=_("spawned by call"), max_length=200, blank=True)
    # One coordinator session per (user, chat thread): IM bridges key threads here.
    thread_key = models.CharField(verbose_name=_("thread key"), max_length=255, blank=True)
    # The language answers should be in when the surface that started the session has a default
    # (an IM app's reply language: "es", "fr", …); blank: as asked. Read by the prompt's reminder.
    reply_language = models.CharField(verbose_name=_("reply language"), max_length=20, blank=True)

    class Meta:
        verbose_name = _("chat session")
        verbose_name_plural = _("chat sessions")
        db_table = "chat_sessions"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="session_org_created_idx"),
            models.Index(fields=["user", "-created_at"], name="session_user_created_idx"),
            models.Index(fields=["user", "-updated_at"], name="session_user_updated_idx"),
            models.Index(fields=["status"], name="session_status_idx"),
            models.Index(fields=["parent_session", "created_at"], name="session_parent_idx"),
            models.Index(fields=["root_session", "created_at"], name="session_root_idx"),
            # The audit list: keyset pages over (created_at, id), filtered within one organization.
            models.Index(fields=["-created_at", "-id"], name="session_created_id_idx"),
            models.Index(fields=["organization", "agent_id", "-created_at"], name="session_org_agent_idx"),
            models.Index(fields=["organization", "status", "-created_at"], name="session_org_status_idx"),
            models.Index(fields=["organization", "kind", "-created_at"], name="session_org_kind_idx"),
            models.Index(fields=["organization", "channel", "-created_at"], name="session_org_channel_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} #{self.pk}: {self.title or self.description[:60]}"

    @property
    def is_worker(self) -> bool:
        return self.parent_session_id is not None


class MessageRole(models.TextChoices):
    USER = "user", _("User")
    ASSISTANT = "assistant", _("Assistant")
    TOOL = "tool", _("Tool")
    SYSTEM = "system", _("System")


class MessageKind(models.TextChoices):
    TEXT = "text", _("Conversation")  # part of the model's history
    NOTE = "note", _("Intermediate note")  # SendMessage: shown to the user, not replayed to the model
    ERROR = "error", _("Error")  # a failed turn, shown as an error bubble
    STOPPED = "stopped", _("Stopped")  # a stopped turn: who stopped it and what was cut off; replayed


class ChatMessage(models.Model):
    session = models.ForeignKey(
        ChatSession, verbose_name=_("session"), on_delete=models.CASCADE, related_name="messages"
    )
    seq = models.PositiveIntegerField(verbose_name=_("seq"))
    role = models.CharField(verbose_name=_("role"), max_length=20, choices=MessageRole.choices)
    kind = models.CharField(
        verbose_name=_("kind"), max_length=10, choices=MessageKind.choices, default=MessageKind.TEXT
    )
    content = models.TextField(verbose_name=_("content"), blank=True)
    tool_calls = models.JSONField(verbose_name=_("tool calls"), default=list, blank=True)
    tool_call_id = models.CharField(verbose_name=_("tool call ID"), max_length=200, blank=True)
    tokens = models.PositiveIntegerField(verbose_name=_("tokens"), default=0)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("chat message")
        verbose_name_plural = _("chat messages")
        db_table = "chat_messages"
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="message_session_seq_uniq")]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


class HistorySummary(models.Model):
    """The earlier turns of a long chat, condensed so its history fits the model's budget
    (ONGRID_HISTORY_TOKENS; docs/chat.md, "Long chats"). Each compaction adds a row, covering the
    messages up to `through_seq` (the previous summary included); the newest row is the one sent.
    Kept for the audit pages, which show what the model was told instead of those turns."""

    session = models.ForeignKey(
        ChatSession, verbose_name=_("session"), on_delete=models.CASCADE, related_name="history_summaries"
    )
    through_seq = models.PositiveIntegerField(verbose_name=_("through message"))
    text = models.TextField(verbose_name=_("summary"))
    messages = models.PositiveIntegerField(verbose_name=_("messages summarised"), default=0)
    # The model that wrote it, or "" for the summary made without one (offline, or the model failed).
    model = models.CharField(verbose_name=_("model"), max_length=200, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("history summary")
        verbose_name_plural = _("history summaries")
        db_table = "chat_history_summaries"
        indexes = [models.Index(fields=["session", "-through_seq"], name="summary_session_seq_idx")]

    def __str__(self) -> str:
        return f"summary of session {self.session_id} through #{self.through_seq}"
