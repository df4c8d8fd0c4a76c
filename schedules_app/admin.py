"""Schedules in the admin: org admins create, edit, enable, disable and "Run now" their
organization's schedules; runs and reports are evidence, listed read-only."""

from __future__ import annotations

from django.contrib import admin, messages
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ops_app.admin.scoping import ReadOnlyTenantAdmin, TenantScopedAdmin
from ops_app.tenancy.scoping import organization_of, sees_all_tenants
from schedules_app import dispatching, scheduler
from schedules_app.forms import ScheduleForm
from schedules_app.models import Report, Schedule, ScheduleRun


@admin.register(Schedule)
class ScheduleAdmin(TenantScopedAdmin):
    form = ScheduleForm
    list_display = ("name", "kind", "timetable", "enabled", "last_run_at", "last_status", "next_run_at")
    list_filter = ("kind", "enabled")
    search_fields = ("name", "prompt")
    readonly_fields = ("next_run_at", "last_run_at", "last_status", "created_at", "updated_at")
    actions = ("run_now", "enable", "disable")
    fieldsets = (
        (None, {"fields": ("name", "kind", "enabled")}),
        (_("What runs"), {"fields": ("persona", "prompt", "open_incidents", "period")}),
        (
            _("When"),
            {"fields": ("cron", "interval_minutes", "timezone", "next_run_at", "last_run_at", "last_status")},
        ),
        (
            _("Delivery (the web always has it)"),
            {"fields": ("email_to", "webhook_url", "webhook_secret", "deliver_to_im")},
        ),
    )

    def get_fieldsets(self, request, obj=None):
        """Platform staff belong to no organization: they choose the schedule's (a required field,
        so forgetting it is a form error, not a 500). An org admin's schedules are their own."""
        fieldsets = super().get_fieldsets(request, obj)
        if not sees_all_tenants(request.user):
            return fieldsets
        first_name, first = fieldsets[0]
        return ((first_name, {**first, "fields": ("organization", *first["fields"])}), *fieldsets[1:])

    @admin.display(description=_("When"))
    def timetable(self, obj: Schedule) -> str:
        if obj.cron:
            when = gettext("cron %(cron)s") % {"cron": obj.cron}
        else:
            when = gettext("every %(minutes)s min") % {"minutes": obj.interval_minutes}
        return f"{when} ({obj.timezone})"

    def get_changeform_initial_data(self, request):
        """A new schedule starts on its organization's clock; the admin may override the zone."""
        initial = super().get_changeform_initial_data(request)
        organization = organization_of(request.user)
        if organization is not None:
            initial.setdefault("timezone", organization.timezone)
            initial.setdefault("organization", organization.pk)  # platform staff's own, if any
        return initial

    def save_model(self, request, obj, form, change):
        if obj.kind == Schedule.Kind.REPORT:
            obj.persona = "reporter"
        super().save_model(request, obj, form, change)
        scheduler.reschedule(obj)

    @admin.action(description=_("Run now"))
    def run_now(self, request, queryset):
        for schedule in queryset:
            run = dispatching.run_now(schedule)
            self.message_user(
                request,
                format_html(
                    gettext('"{}" started: <a href="{}">run #{}</a>.'), schedule.name, run_url(run), run.pk
                ),
                messages.SUCCESS,
            )

    @admin.action(description=_("Enable"))
    def enable(self, request, queryset):
        now = timezone.now()
        for schedule in queryset:
            schedule.enabled = True
            schedule.save(update_fields=["enabled", "updated_at"])
            scheduler.reschedule(schedule, now)

    @admin.action(description=_("Disable"))
    def disable(self, request, queryset):
        queryset.update(enabled=False, next_run_at=None)


def run_url(run: ScheduleRun) -> str:
    return reverse("schedule-run", args=[run.pk])


@admin.register(ScheduleRun)
class ScheduleRunAdmin(ReadOnlyTenantAdmin):
    list_display = ("schedule", "due_at", "trigger", "state", "finding", "incident", "finished_at")
    list_filter = ("state", "finding", "trigger")
    search_fields = ("schedule__name", "summary")


@admin.register(Report)
class ReportAdmin(ReadOnlyTenantAdmin):
    list_display = ("__str__", "schedule", "period", "period_start", "period_end", "created_at")
    list_filter = ("period",)
