"""Read-only admin views of the audit trail: rows are evidence, so nobody adds, edits or deletes
them here, superusers included. Session rows are shown read-only too (they are part of the
record); the chat UI and the retention purge are the only ways sessions go away."""

from django.contrib import admin

from audit_app.models import AuditLog, LLMCall
from audit_app.tree import proposal_model
from chat_app.models import ChatSession
from ops_app.admin_mixins import TenantScopedAdmin
from ops_app.tenancy import sees_all_tenants


class ReadOnlyTenantAdmin(TenantScopedAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


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


class ProposalAdmin(ReadOnlyTenantAdmin):
    """The review gate's proposals (registered only when the gate's model exists)."""

    def get_queryset(self, request):
        rows = admin.ModelAdmin.get_queryset(self, request)
        if hasattr(rows, "for_user"):
            return rows.for_user(request.user)
        return rows if sees_all_tenants(request.user) else rows.none()


_proposals = proposal_model()
if _proposals is not None and not admin.site.is_registered(_proposals):
    admin.site.register(_proposals, ProposalAdmin)
