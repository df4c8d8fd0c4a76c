"""Read-only admin views of the audit trail: rows are evidence, so nobody adds, edits or deletes
them here, superusers included. Session rows are shown read-only too (they are part of the
record); the chat UI and the retention purge are the only ways sessions go away."""

from django.contrib import admin

from audit_app.models import AuditLog, LLMCall
from chat_app.models import ChatSession
from ops_app.admin.scoping import ReadOnlyTenantAdmin


@admin.register(AuditLog)
class AuditLogAdmin(ReadOnlyTenantAdmin):
    list_display = ("started_at", "tool", "tool_class", "status", "persona", "session", "duration_ms")
    list_filter = ("status", "tool_class", "persona")
    search_fields = ("tool", "tool_call_id")
    date_hierarchy = "started_at"
    list_select_related = ("session",)
    raw_id_fields = ("session", "user")


@admin.register(LLMCall)
class LLMCallAdmin(ReadOnlyTenantAdmin):
    list_display = (
        "started_at",
        "model",
        "provider",
        "persona",
        "prompt_tokens",
        "completion_tokens",
        "latency_ms",
    )
    list_filter = ("provider", "model", "persona")
    date_hierarchy = "started_at"
    list_select_related = ("session",)
    raw_id_fields = ("session",)


@admin.register(ChatSession)
class ChatSessionAdmin(ReadOnlyTenantAdmin):
    list_display = ("id", "created_at", "agent_id", "kind", "channel", "status", "user", "title")
    list_filter = ("kind", "status", "channel")
    search_fields = ("title",)
    date_hierarchy = "created_at"
    list_select_related = ("user",)
    raw_id_fields = ("user", "parent_session", "root_session")
