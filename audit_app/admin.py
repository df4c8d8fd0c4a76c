"""Read-only admin views of the audit trail: rows are evidence, so nobody edits or adds them here."""

from django.contrib import admin

from audit_app.models import AuditLog, LLMCall
from ops_app.admin_mixins import TenantScopedAdmin


class ReadOnlyTenantAdmin(TenantScopedAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return request.user.is_superuser


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
