from django.contrib import admin

from ops_app.models import Membership, Organization


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "created_at")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "organization", "role", "created_at")
    list_filter = ("organization",)
    search_fields = ("user__username", "organization__name")
    list_select_related = ("user", "organization")

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("user__groups")
