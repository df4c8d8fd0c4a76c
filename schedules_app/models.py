"""Schedules, their runs and the reports they produce (docs/schedules.md).

A `Schedule` says what runs (an inspection by a read-only persona, or a report by `reporter`),
when (a cron expression or an interval, in the schedule's time zone) and where the output goes.
A `ScheduleRun` is one firing; the unique (schedule, due_at) pair is the database-level guard
that makes a due time fire once however many scheduler processes race for it.
"""

from __future__ import annotations

import zoneinfo

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import formats, timezone
from django.utils.translation import gettext_lazy as _

from ops_app.core import outbound
from ops_app.core.encryption import EncryptedTextField
from ops_app.models import Organization
from ops_app.models.tenancy import TenantModel
from schedules_app import timing


class Schedule(TenantModel):
    class Kind(models.TextChoices):
        INSPECTION = "inspection", _("Inspection")
        REPORT = "report", _("Report")

    class Period(models.TextChoices):
        DAILY = "daily", _("Daily")
        WEEKLY = "weekly", _("Weekly")
        MONTHLY = "monthly", _("Monthly")

    name = models.CharField(verbose_name=_("name"), max_length=200)
    kind = models.CharField(
        verbose_name=_("kind"), max_length=20, choices=Kind.choices, default=Kind.INSPECTION
    )
    persona = models.CharField(
        verbose_name=_("persona"),
        max_length=64,
        default="specialist-disk",
        help_text=_("Inspections: any read-only persona. Reports always use `reporter`."),
    )
    prompt = models.TextField(
        verbose_name=_("prompt"), blank=True, help_text=_("What the inspection checks, in plain words.")
    )
    period = models.CharField(
        verbose_name=_("period"),
        max_length=10,
        choices=Period.choices,
        default=Period.WEEKLY,
        help_text=_("Reports: the period covered."),
    )
    cron = models.CharField(
        verbose_name=_("cron"),
        max_length=100,
        blank=True,
        help_text=_('A cron expression, e.g. "0 7 * * 1" (Mondays 07:00).'),
    )
    interval_minutes = models.PositiveIntegerField(
        verbose_name=_("interval (minutes)"),
        null=True,
        blank=True,
        help_text=_("Or: every N minutes (leave the cron expression empty)."),
    )
    timezone = models.CharField(
        verbose_name=_("timezone"),
        max_length=64,
        blank=True,
        help_text=_(
            'e.g. "Europe/Madrid". Leave blank for the organization\'s time zone (filled in on save).'
        ),
    )
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    open_incidents = models.BooleanField(
        verbose_name=_("open incidents"),
        default=True,
        help_text=_("Inspections: a `problem` finding opens an incident (once per problem)."),
    )
    email_to = models.CharField(
        verbose_name=_("email to"), max_length=1000, blank=True, help_text=_("Comma-separated addresses.")
    )
    webhook_url = models.URLField(verbose_name=_("webhook URL"), max_length=1000, blank=True)
    webhook_secret = EncryptedTextField(
        verbose_name=_("webhook secret"), blank=True, help_text=_("Signs the webhook body (HMAC-SHA256).")
    )
    deliver_to_im = models.BooleanField(
        _("IM channel"),
        default=False,
        help_text=_(
            "Post a summary with a link to the summary channel of each enabled chat app "
            "(Slack, Telegram, Feishu) of the organization."
        ),
    )
    next_run_at = models.DateTimeField(verbose_name=_("next run at"), null=True, blank=True)
    last_run_at = models.DateTimeField(verbose_name=_("last run at"), null=True, blank=True)
    last_status = models.CharField(verbose_name=_("last status"), max_length=20, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("schedule")
        verbose_name_plural = _("schedules")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="schedule_org_name_uniq")
        ]
        indexes = [models.Index(fields=["enabled", "next_run_at"], name="schedule_due_idx")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors = {}
        if not self.cron.strip() and not self.interval_minutes:
            errors["cron"] = _("Give a cron expression or an interval.")
        elif self.cron.strip() and self.interval_minutes:
            errors["cron"] = _("Give either a cron expression or an interval, not both.")
        elif self.cron and not timing.valid_cron(self.cron):
            errors["cron"] = _("%(cron)s is not a valid cron expression.") % {"cron": repr(self.cron)}
        if self.timezone:
            try:
                zoneinfo.ZoneInfo(self.timezone)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                errors["timezone"] = _("Unknown time zone %(zone)s.") % {"zone": repr(self.timezone)}
        if self.kind == self.Kind.INSPECTION and not self.prompt.strip():
            errors["prompt"] = _("An inspection needs a prompt.")
        if self.webhook_url and (problem := outbound.refusal(self.webhook_url)):
            errors["webhook_url"] = problem
        if errors:
            raise ValidationError(errors)

    def save(self, *args, **kwargs) -> None:
        """A schedule without its own zone takes the organization's, once, when saved: the
        organization's zone is the default for new schedules, a schedule's own zone overrides it."""
        if not self.timezone:
            zone = Organization.objects.filter(pk=self.organization_id).values_list("timezone", flat=True)
            self.timezone = zone.first() or "UTC"
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "timezone"}
        super().save(*args, **kwargs)

    @property
    def recipients(self) -> list[str]:
        return [a.strip() for a in self.email_to.split(",") if a.strip()]


class ScheduleRun(TenantModel):
    class Trigger(models.TextChoices):
        SCHEDULE = "schedule", _("On schedule")
        MANUAL = "manual", _("Run now")

    class State(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        FINISHED = "finished", _("Finished")
        FAILED = "failed", _("Failed")

    class Finding(models.TextChoices):
        OK = "ok", "OK"
        WARNING = "warning", _("Warning")
        PROBLEM = "problem", _("Problem")

    schedule = models.ForeignKey(
        Schedule, verbose_name=_("schedule"), on_delete=models.CASCADE, related_name="runs"
    )
    due_at = models.DateTimeField(verbose_name=_("due at"))
    trigger = models.CharField(
        verbose_name=_("trigger"), max_length=10, choices=Trigger.choices, default=Trigger.SCHEDULE
    )
    state = models.CharField(
        verbose_name=_("state"), max_length=10, choices=State.choices, default=State.QUEUED
    )
    # The inspection's (or the reporter's) session: kind `work`, no user; the link to the schedule
    # lives here rather than on the session row (docs/schedules.md, "Sessions").
    session = models.ForeignKey(
        "chat_app.ChatSession",
        verbose_name=_("session"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    finding = models.CharField(verbose_name=_("finding"), max_length=10, choices=Finding.choices, blank=True)
    summary = models.TextField(verbose_name=_("summary"), blank=True)
    findings = models.JSONField(verbose_name=_("findings"), default=list, blank=True)
    incident = models.ForeignKey(
        "ops_app.Incident",
        verbose_name=_("incident"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    incident_opened = models.BooleanField(
        verbose_name=_("incident opened"),
        default=False,
        help_text=_("False: none, or an open one was reused."),
    )
    deliveries = models.JSONField(
        verbose_name=_("deliveries"), default=dict, blank=True, help_text=_("Outcome per destination.")
    )
    error = models.TextField(verbose_name=_("error"), blank=True)
    started_at = models.DateTimeField(verbose_name=_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(verbose_name=_("finished at"), null=True, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("schedule run")
        verbose_name_plural = _("schedule runs")
        ordering = ["-due_at"]
        constraints = [
            # The exactly-once guard: one run per schedule and due time, whoever claims it first.
            models.UniqueConstraint(fields=["schedule", "due_at"], name="schedulerun_once_uniq")
        ]
        indexes = [models.Index(fields=["organization", "-due_at"], name="schedulerun_org_due_idx")]

    def __str__(self) -> str:
        due = formats.date_format(timezone.localtime(self.due_at), "SHORT_DATETIME_FORMAT")
        return f"{self.schedule} @ {due}"


class Report(TenantModel):
    schedule = models.ForeignKey(
        Schedule,
        verbose_name=_("schedule"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reports",
    )
    run = models.OneToOneField(
        ScheduleRun,
        verbose_name=_("run"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="report",
    )
    period = models.CharField(verbose_name=_("period"), max_length=10, choices=Schedule.Period.choices)
    period_start = models.DateTimeField(verbose_name=_("period start"))
    period_end = models.DateTimeField(verbose_name=_("period end"))
    figures = models.JSONField(
        verbose_name=_("figures"), default=dict, help_text=_("Exact figures from database queries.")
    )
    narrative = models.TextField(
        verbose_name=_("narrative"),
        blank=True,
        help_text=_("Written by the reporter persona around the figures."),
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("report")
        verbose_name_plural = _("reports")
        ordering = ["-period_end", "-created_at"]
        indexes = [models.Index(fields=["organization", "-period_end"], name="report_org_end_idx")]

    def __str__(self) -> str:
        titles = {
            Schedule.Period.DAILY: _("Daily report %(start)s – %(end)s"),
            Schedule.Period.WEEKLY: _("Weekly report %(start)s – %(end)s"),
            Schedule.Period.MONTHLY: _("Monthly report %(start)s – %(end)s"),
        }
        dates = {"start": self._day(self.period_start), "end": self._day(self.period_end)}
        title = titles.get(self.period)
        return str(title) % dates if title else f"{self.period} report {dates['start']} – {dates['end']}"

    def _day(self, at) -> str:
        """The day the period starts or ends on in its schedule's zone (a Madrid daily report
        starts at 23:00 UTC the day before), written the active language's way."""
        name = (self.schedule.timezone if self.schedule_id and self.schedule else "") or "UTC"
        local = at.astimezone(zoneinfo.ZoneInfo(name))
        return formats.date_format(local.date(), "SHORT_DATE_FORMAT")
